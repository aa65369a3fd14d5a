"""Unit tests of icml26.ambisur: renderer exactness, GPT/RCC gradients, peers (gsplat, kornia, pcu), bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icml26.ambisur import (PRESETS, CameraT, composite_weights, GaussianModel, RayColorConsistency, alr_loss, chamfer, eval_sh,
                            mono_depth_loss,
                            experiments, init_model, make_scene, photometric, prior_depth_loss, project,
                            quat_to_rotmat, rcc_lambda_per_pixel, rcc_surrogate, render, sh_ambiguity, train_run)
from icml26.ambisur.scene import Camera, look_at


@pytest.fixture(scope="module")
def scene():
    return make_scene(16, 4, 1, seed=0, texels=4, gt_spacing=0.05)


@pytest.fixture(scope="module")
def model(scene):
    torch.manual_seed(0)
    m = init_model(scene, 150, 3, seed=0)
    with torch.no_grad():
        m.sh_rest += 0.1 * torch.randn_like(m.sh_rest)
    return m


def _cam(scene, k=0):
    return CameraT.of(scene.train[k].cam)


# ----------------------------------------------------------------------------------------- renderer

@pytest.mark.parametrize("trunc", [2.0, None])
def test_culled_equals_dense(scene, model, trunc):
    amb = sh_ambiguity(model.sh)[0]
    with torch.no_grad():
        a = render(model, _cam(scene), trunc, amb_mask=amb, tile=None)
        b = render(model, _cam(scene), trunc, amb_mask=amb, tile=4)
    for key in ("color", "normal", "dist", "alpha", "depth", "ambiguity", "ray_var"):
        assert float((getattr(a, key) - getattr(b, key)).abs().max()) <= 1e-6, key
    assert float((a.tail_mass - b.tail_mass).abs()) <= 1e-6
    with torch.no_grad():
        c = render(model, _cam(scene), trunc, tile=4, cull_scale=0.5)   # the control: not exact any more
    assert float((a.color - c.color).abs().max()) > 1e-3


def test_weights_and_background_sum_to_one(scene, model):
    with torch.no_grad():
        r = render(model, _cam(scene), 2.0, bg=torch.ones(3))
        r0 = render(model, _cam(scene), 2.0)
    assert torch.allclose(r.color - r0.color, (1 - r0.alpha)[..., None].expand(-1, -1, 3), atol=1e-6)
    assert float(r0.alpha.max()) <= 1.0 + 1e-6


def test_gpt_zero_mass_and_no_gradient_beyond_gamma():
    def run(trunc):
        g = GaussianModel([[0.0, 0.0, 0.0]], [[-2.5] * 3], [[1.0, 0, 0, 0]], [2.0], torch.zeros(1, 1, 3))
        cam = CameraT.of(look_at([0, 0, -2.0], [0, 0, 0], 16, 16, 40.0))
        _, m2, cov2, _ = project(g.means, g.covariances(), cam)
        r = render(g, cam, trunc, tile=None)
        uv = torch.stack(torch.meshgrid(torch.arange(16) + 0.5, torch.arange(16) + 0.5, indexing="xy"), -1)
        d2 = ((uv - m2.detach()[0]) ** 2).sum(-1) / float(cov2.detach()[0, 0, 0])
        (r.color.sum(-1) * (d2 > 4.0004)).sum().backward()
        return r, sum(float(p.grad.abs().sum()) for p in g.parameters() if p.grad is not None)
    r, grad = run(2.0)
    assert grad == 0.0 and float(r.tail_mass) == 0.0
    r, grad = run(None)
    assert grad > 0 and float(r.tail_mass) > 0.01


def test_rcc_function_gradient_equals_surrogate(scene, model):
    cam = _cam(scene)
    W = composite_weights(model, cam, 2.0)
    lam = rcc_lambda_per_pixel(15.0, cam.H, cam.W)
    W = W.double()   # both sides in float64: the identity is exact, float32 summation order is not
    c1 = model.colors(cam.center).detach().double().requires_grad_(True)
    rcc_surrogate(W, c1, lam).backward()
    c2 = c1.detach().clone().requires_grad_(True)
    out = RayColorConsistency.apply(c2, W.sum(0), W.T @ (W @ c2.detach()), lam)
    assert torch.equal(out, c2)
    (out * 0).sum().backward()
    assert float(c1.grad.abs().max()) > 0
    assert torch.allclose(c1.grad, c2.grad, rtol=1e-10, atol=1e-15)


def test_rcc_in_renderer_changes_only_colour_gradients(scene, model):
    cam = _cam(scene)
    grads = []
    for lam in (0.0, 1e-2):
        model.zero_grad()
        r = render(model, cam, 2.0, rcc_lambda=lam)
        r.color.sum().backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    assert torch.equal(grads[0]["opacity_logits"], grads[1]["opacity_logits"])
    assert not torch.equal(grads[0]["sh_dc"], grads[1]["sh_dc"])
    model.zero_grad()


def test_rcc_through_the_tiled_renderer_equals_the_surrogate(scene, model):
    """The per-Gaussian W_i, S_i the tiled renderer assembles (index_add over tiles) inject the surrogate's
    colour gradient: compared on the SH parameters through a zero loss (review 2: the tiled path was untested)."""
    cam = _cam(scene)
    lam = rcc_lambda_per_pixel(15.0, cam.H, cam.W)

    def sh_grad():
        return torch.cat([model.sh_dc.grad, model.sh_rest.grad], 1).clone()

    model.zero_grad(set_to_none=True)
    rcc_surrogate(composite_weights(model, cam, 2.0), model.colors(cam.center), lam).backward()
    g_sur = sh_grad()
    for tile in (4, 8, None):
        model.zero_grad(set_to_none=True)
        (render(model, cam, 2.0, rcc_lambda=lam, tile=tile).color * 0).sum().backward()
        assert float(g_sur.abs().max()) > 0
        assert float((sh_grad() - g_sur).abs().max() / g_sur.abs().max()) < 1e-5, tile
    model.zero_grad(set_to_none=True)
    (render(model, cam, 2.0, rcc_lambda=2 * lam, tile=4).color * 0).sum().backward()   # control: lambda matters
    assert float((sh_grad() - g_sur).abs().max() / g_sur.abs().max()) > 0.5
    model.zero_grad(set_to_none=True)


def test_plane_depth_is_exact_for_a_flat_gaussian():
    cam = look_at([0.3, -0.2, 2.0], [0, 0, 0], 16, 16, 40.0)
    # a large flat Gaussian in the plane z = 0 (smallest scale along z)
    g = GaussianModel([[0.0, 0.0, 0.0]], [[0.0, 0.0, -6.0]], [[1.0, 0, 0, 0]], [4.0], torch.zeros(1, 1, 3))
    with torch.no_grad():
        r = render(g, cam, None, tile=None)
    d, _ = cam.pixel_rays(1)
    d = d.reshape(-1, 3)
    t = -cam.center[2] / d[:, 2]                      # the ray meets the plane z = 0
    z = ((cam.center + t[:, None] * d - cam.center) @ cam.R.T)[:, 2].reshape(16, 16)
    hit = (t > 0).reshape(16, 16)
    m = (r.alpha.numpy() > 0.5) & hit
    assert m.sum() > 50
    assert np.abs(r.depth.numpy() - z)[m].max() < 1e-4


# ----------------------------------------------------------------------------------------- peers

def test_projection_and_sh_match_gsplat_torch_reference(scene, model):
    ti = pytest.importorskip("gsplat.cuda._torch_impl")
    cam = _cam(scene)
    vm = torch.as_tensor(scene.train[0].cam.viewmat, dtype=torch.float32)[None]
    with torch.no_grad():
        _, m2, cov2, conic = project(model.means, model.covariances(), cam)
        _, m2g, _, conic_g, _ = ti._fully_fused_projection(model.means, model.covariances(), vm, cam.K[None], cam.W,
                                                           cam.H, eps2d=0.3)
        assert torch.allclose(m2, m2g[0], rtol=1e-5, atol=1e-5)
        assert torch.allclose(conic, conic_g[0], rtol=1e-5, atol=1e-5 * float(conic.abs().max()))
        for L in range(4):
            sh = model.sh[:, : (L + 1) ** 2]
            dirs = torch.nn.functional.normalize(model.means - cam.center, dim=-1)
            assert torch.allclose(eval_sh(dirs, sh), ti._spherical_harmonics(L, dirs, sh), atol=1e-5)


def test_quaternions_match_kornia():
    kornia = pytest.importorskip("kornia")
    q = torch.randn(20, 4, generator=torch.Generator().manual_seed(0))
    qn = torch.nn.functional.normalize(q, dim=-1)
    ref = kornia.geometry.conversions.quaternion_to_rotation_matrix(qn)   # (w, x, y, z)
    assert torch.allclose(quat_to_rotmat(q), ref, atol=1e-6)


def test_chamfer_matches_point_cloud_utils():
    pcu = pytest.importorskip("point_cloud_utils")
    rng = np.random.default_rng(0)
    a, b = rng.random((400, 3)), rng.random((300, 3))
    assert chamfer(a, b, cap=1e9, tau=0.05)["cd"] == pytest.approx(float(pcu.chamfer_distance(a, b)) / 2, abs=1e-9)
    res = chamfer(a, a, cap=0.1, tau=1e-6)
    assert res["cd"] == 0.0 and res["f1"] == 1.0


def test_sh_quadrature_is_parseval(model):
    u = sh_ambiguity(model.sh)[1].numpy()
    uq = experiments.sh_quadrature_u(model.sh[:20], 12)
    assert np.allclose(uq, u[:20], atol=1e-6)


# ----------------------------------------------------------------------------------------- scene

def test_scene_ground_truth(scene):
    v = scene.train[0]
    assert v.rgb.shape == (16, 16, 3) and np.all((v.rgb >= 0) & (v.rgb <= 1))
    m = v.label > 0
    assert np.all(v.depth[m] > 0) and np.all(v.depth[~m] == 0)
    assert np.allclose(np.linalg.norm(v.normal[m], axis=-1), 1, atol=1e-6)
    assert np.all(v.prior[v.prior > 0] > 0) and set(np.unique(scene.point_labels)) <= set(range(1, 7))
    r, e, s = experiments.prior_error_ratio(make_scene(32, 4, 1, texels=6, gt_spacing=0.05))
    assert r > 3 * s


def test_presets_have_the_same_keys():
    keys = [set(p) - {"gpu"} for p in PRESETS.values()]
    assert keys[0] == keys[1] == keys[2]


LADDER_CFG = dict(PRESETS["smoke"], iters=12, log_every=4, n_gauss=60, size=16, geo_points=(4, 3),
                  runs=("D", "M", "DS", "O", "DO", "Cr"), seeds=(0,))


@pytest.fixture(scope="module")
def ladder(scene):
    """The ladder's runs on a tiny schedule through `run_ladder`'s process pool (two spawned workers, one thread
    each): the control runs' code paths and the pool's determinism share one pool."""
    return experiments.run_ladder({0: scene}, LADDER_CFG, workers=2)


def test_training_is_deterministic_in_a_pool_and_its_curves_read_the_claims_metrics(scene, ladder):
    """The same run in-process and in `run_ladder`'s process pool gives the same numbers; the last checkpoint of the
    recorded curves is exactly the final evaluation the claims read (review 3: convergence is judged on it); and
    the convergence rule can fail: an under-trained run's Chamfer curve is judged not converged."""
    from icml26.convergence import TrainingCurve

    a, b = train_run(scene, "D", LADDER_CFG, seed=0), ladder[("D", 0)]
    assert list(ladder) == [(n, 0) for n in LADDER_CFG["runs"]]
    assert a.metrics["cd"] == b.metrics["cd"] and a.metrics["psnr"] == b.metrics["psnr"] and math.isfinite(a.metrics["cd"])
    assert a.log["cd"] == b.log["cd"] and a.log["photo"] == b.log["photo"]
    for key in ("cd", "cd_ambiguous", "f1"):
        assert a.log[key][-1] == a.metrics[key], key
    pg = a.per_gaussian
    assert a.log["mask_auroc"][-1] == pytest.approx(experiments.membership_auroc(pg["mask"], pg["region"], pg["opacity"]), abs=1e-12)
    assert a.log["geo_it"] == [2, 5, 7, 10, 11, 12]

    # under-trained: the first 40 iterations of a 300-iteration schedule
    cfg = dict(PRESETS["smoke"], n_gauss=60, iters=300, stop_at=40, log_every=10, geo_points=(4, 3))
    u = train_run(scene, "D", cfg, seed=1)
    assert u.log["geo_it"][-1] == 40 and len(u.log["geo_it"]) >= 6
    curve = TrainingCurve.build("D: CD", u.log["geo_it"], u.log["cd"])
    assert not curve.converged and curve.verdict().improving, curve.describe()
    with pytest.raises(ValueError, match="unknown run"):
        train_run(scene, "Z", cfg, seed=0)
    with pytest.raises(ValueError, match="stop_at"):
        train_run(scene, "D", dict(cfg, stop_at=301), seed=0)


def test_geo_steps_are_dense_in_the_judged_tail():
    from icml26.ambisur.train import geo_steps
    from icml26.convergence import MIN_TAIL_POINTS, TAIL_FRACTION

    for T, (early, tail) in [(40, (4, 3)), (120, (4, 3)), (500, (6, 5)), (1300, (6, 5)), (6000, (6, 5))]:
        st = geo_steps(T, early, tail)
        assert st[-1] == T and all(b > a for a, b in zip(st, st[1:])) and len(st) >= 2 * MIN_TAIL_POINTS
        judged = [x for x in st if x >= st[-1] - TAIL_FRACTION * (st[-1] - st[0])]
        assert len(judged) >= tail, (T, st)
    with pytest.raises(ValueError, match="n_tail"):
        geo_steps(100, 4, 0)


# ----------------------------------------------------------------------------------------- bad input

def _g(**over):
    kw = dict(means=[[0.0, 0, 0]], log_scales=[[-2.0] * 3], quats=[[1.0, 0, 0, 0]], opacity_logits=[0.0],
              sh=torch.zeros(1, 4, 3))
    kw.update(over)
    return GaussianModel(**kw)


@pytest.mark.parametrize("over, match", [
    (dict(quats=[[0.0, 0, 0, 0]]), "quats"),
    (dict(means=[[float("nan"), 0, 0]]), "means"),
    (dict(log_scales=[[float("inf"), 0, 0]]), "log_scales"),
    (dict(sh=torch.zeros(1, 5, 3)), "coefficient count"),
    (dict(sh=torch.zeros(1, 25, 3)), "coefficient count"),
])
def test_model_rejects_bad_parameters(over, match):
    with pytest.raises(ValueError, match=match):
        _g(**over)


def test_render_rejects_bad_arguments(scene):
    g = _g()
    cam = _cam(scene)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="trunc_sigma"):
            render(g, cam, bad)
    with pytest.warns(UserWarning, match="hard cut"):
        render(g, cam, 0.3)
    with pytest.raises(ValueError, match="rcc_lambda"):
        render(g, cam, 2.0, rcc_lambda=-1e-5)
    with pytest.warns(UserWarning, match="non-black background"):
        render(g, cam, 2.0, rcc_lambda=1e-5, bg=torch.ones(3))
    with pytest.raises(ValueError, match="amb_mask"):
        render(g, cam, 2.0, amb_mask=torch.ones(3))
    with torch.no_grad():
        g.quats.zero_()
    with pytest.raises(ValueError, match="quats"):
        render(g, cam, 2.0)


def test_other_bad_inputs():
    sh = torch.randn(50, 16, 3)
    for kw in (dict(upper=1.0), dict(lower=0.0), dict(upper=0.5, lower=0.6), dict(upper=0.5, lower=0.5)):
        with pytest.raises(ValueError):
            sh_ambiguity(sh, **kw)
    with pytest.raises(ValueError, match="lambda"):
        rcc_lambda_per_pixel(-1.0, 8, 8)
    with pytest.raises(ValueError, match="lambda_rc"):
        rcc_surrogate(torch.ones(2, 3), torch.ones(3, 3), -1.0)
    with pytest.raises(ValueError, match="focal"):
        Camera(np.diag([0.0, 10.0, 1.0]), np.eye(3), np.zeros(3), 8, 8)
    with pytest.raises(ValueError, match="image shapes differ"):
        photometric(torch.zeros(8, 8, 3), torch.zeros(8, 9, 3))
    with pytest.raises(ValueError, match="differ"):
        prior_depth_loss(torch.ones(8, 8), torch.ones(8, 9), 1.0)
    with pytest.raises(ValueError, match=">= 0"):
        prior_depth_loss(torch.ones(8, 8), -torch.ones(8, 8), 1.0)
    with pytest.raises(ValueError, match="no pixel"):
        prior_depth_loss(torch.ones(8, 8), torch.zeros(8, 8), 1.0)
    with pytest.raises(ValueError, match="empty"):
        chamfer(np.zeros((0, 3)), np.zeros((4, 3)), cap=1.0, tau=0.1)
    with pytest.raises(ValueError, match="shapes differ"):
        alr_loss(torch.zeros(4, 4, 3), torch.zeros(4, 5, 3), torch.zeros(4, 4), torch.zeros(4, 4))
    with pytest.raises(ValueError, match="alpha"):
        alr_loss(torch.zeros(4, 4, 3), torch.zeros(4, 4, 3), torch.zeros(4, 4), torch.zeros(4, 5))
    with pytest.raises(ValueError, match="weight"):
        alr_loss(torch.zeros(4, 4, 3), torch.zeros(4, 4, 3), torch.zeros(4, 4), torch.zeros(4, 4), weight=-1.0)
    with pytest.raises(ValueError, match="lower_max"):
        sh_ambiguity(sh, lower_max=-0.1)
    from icml26.ambisur.metrics import region_cd
    res = chamfer(np.zeros((3, 3)), np.eye(3), cap=1.0, tau=0.1, gt_labels=np.array([1, 1, 2]))
    with pytest.raises(ValueError, match="no GT point"):
        region_cd(res, np.array([1, 1, 2]), (5,))
    assert np.isfinite(region_cd(res, np.array([1, 1, 2]), (2,)))


# ----------------------------------------------------------------------------------------- revision (issue 52)

def test_alr_loss_is_zero_without_flags_and_only_moves_the_depth_normals():
    torch.manual_seed(0)
    nd = torch.nn.functional.normalize(torch.randn(4, 4, 3), dim=-1).requires_grad_(True)
    npri = torch.nn.functional.normalize(torch.randn(4, 4, 3), dim=-1)
    U = torch.rand(4, 4, requires_grad=True)
    A = torch.rand(4, 4, requires_grad=True)
    assert float(alr_loss(nd, npri, torch.zeros(4, 4), A).detach()) == 0.0
    alr_loss(nd, npri, U, A).backward()
    assert float(nd.grad.abs().max()) > 0 and U.grad is None and A.grad is None   # sg(U), sg(A)
    with pytest.raises(ValueError, match="shapes differ"):
        alr_loss(nd, npri, torch.zeros(3, 3), A)


def test_sh_ambiguity_dual_end_and_lower_cap():
    sh = torch.zeros(100, 16, 3)
    u = torch.linspace(0.01, 1.0, 100)
    sh[:, 1, 0] = u
    mask, uu, hi, lo = sh_ambiguity(sh, 0.95, 0.10, lower_max=1.0)     # cap not binding: Q.10 decides
    assert torch.allclose(uu, u)
    assert int(hi.sum()) == 5 and bool(hi[-5:].all())
    assert int(lo.sum()) == 10 and bool(lo[:10].all())
    _, _, _, lo2 = sh_ambiguity(sh, 0.95, 0.10, lower_max=0.05)        # cap binding: u < 0.05 only
    assert int(lo2.sum()) == int((u < 0.05).sum()) < 10


def test_prior_normals_are_good_on_smooth_regions_and_the_ridge_is_missing():
    from icml26.ambisur import experiments as ex

    s = make_scene(32, 4, 1, seed=0, texels=6, gt_spacing=0.05, prior_blur_px=1.0)
    pn = ex.prior_normal_error(s)
    assert pn["prior"]["ambiguous"] < 10.0            # the first version's i.i.d. noise gave 9-24 deg here
    assert pn["gt"]["ambiguous"] <= pn["prior"]["ambiguous"]
    ridge, edge, smooth = ex.prior_error_ratio(s)
    assert ridge / smooth >= 3.0


def test_scene_variants_move_the_objects_and_keep_the_regions():
    from icml26.ambisur.scene import layout

    a, b = layout(0), layout(1)
    assert not np.allclose(a.sphere_c, b.sphere_c) and not np.allclose(a.box_lo, b.box_lo)
    s = make_scene(16, 4, 1, seed=1, texels=4, gt_spacing=0.05, variant=1)
    assert set(np.unique(s.point_labels)) >= {1, 2, 3, 4}
    assert s.point_specular.shape == (len(s.points),) and float(s.point_specular.max()) > 0.05
    assert float(s.point_specular[s.point_labels != 3].max()) == 0.0     # highlights only on the sphere
    with pytest.raises(ValueError):
        layout(-1)


def test_mono_loss_is_affine_invariant_and_sees_shape():
    torch.manual_seed(0)
    z = 2 + torch.rand(16, 16)
    A = torch.ones(16, 16)
    same = mono_depth_loss(z, -(3.0 * z + 0.7), A, patch=8)            # -disparity = an affine map of depth
    other = mono_depth_loss(z, -(2 + torch.rand(16, 16)), A, patch=8)
    assert float(same) < 1e-6 < float(other)
    with pytest.raises(ValueError):
        mono_depth_loss(z, z, A, patch=40)


def test_membership_auroc_and_planted_mask():
    from icml26.ambisur import experiments as ex

    region = np.array([2] * 50 + [1] * 150)
    assert ex.membership_auroc(np.isin(region, (2,)), region) == 1.0
    rnd = [ex.membership_auroc(ex.random_mask(np.arange(200) < 30, s), region) for s in range(40)]
    assert abs(np.mean(rnd) - 0.5) < 0.03
    planted = [ex.membership_auroc(ex.planted_mask(region == 2, 30, s, odds=2.0), region) for s in range(40)]
    assert np.mean(planted) > np.mean(rnd) + 0.03
    with pytest.raises(ValueError):
        ex.membership_auroc(np.ones(5, bool), np.full(5, 2))


def test_sh_schedule_and_sfm_start(scene):
    from icml26.ambisur import sfm_points
    from icml26.ambisur.train import active_degree

    T = 300
    degs = [active_degree(it, T, 3, 1000 / 30000) for it in range(1, T + 1)]
    assert degs[0] == 0 and degs[-1] == 3 and degs.index(3) == 30
    pts, cols = sfm_points(scene, 200, np.random.default_rng(0))
    from scipy.spatial import cKDTree

    d, _ = cKDTree(scene.points).query(pts)
    assert np.median(d) < 2 * scene.footprint             # on the surface, up to the injected noise
    assert np.allclose(pts, sfm_points(scene, 200, np.random.default_rng(0))[0])   # seeded


def test_render_follows_the_model_device(scene, model):
    with torch.no_grad():
        r = render(model, scene.train[0].cam, 2.0)
    assert r.color.device == model.means.device


def test_sfm_start_is_sparse_on_textureless_ground():
    from scipy.spatial import cKDTree

    from icml26.ambisur import sfm_points

    s = make_scene(32, 6, 1, seed=0, texels=6, gt_spacing=0.03)
    pts, _ = sfm_points(s, 300, np.random.default_rng(0))
    lab = s.point_labels[cKDTree(s.points).query(pts)[1]]
    share = lambda r: float(np.mean(lab == r)) / float(np.mean(s.point_labels == r))
    assert share(2) < 0.6 < 1.0 < share(1)   # textureless ground under-sampled, textured over-sampled vs area


def test_prior_is_not_an_oracle_but_keeps_its_normals():
    """Review 2: the prior alone, scored like a trained model, is far above the GT-depth floor (a per-view scale
    error), and a per-view scale leaves its normals unchanged."""
    from icml26.ambisur import experiments as ex
    from icml26.ambisur.scene import prior_depth

    s = make_scene(32, 6, 1, seed=0, texels=6, gt_spacing=0.03)
    cfg = PRESETS["smoke"]
    prior, gt = ex.depth_cloud_metrics(s, cfg, "prior"), ex.depth_cloud_metrics(s, cfg, "gt")
    assert prior["cd"] > 2 * gt["cd"]
    v = s.train[0]
    z0 = prior_depth(v.cam, v.depth, np.random.default_rng(1), 1.0, scale_sd=0.0, shift_sd=0.0, lay=s.layout)
    z1 = prior_depth(v.cam, v.depth, np.random.default_rng(1), 1.0, scale_sd=0.0, shift_sd=0.0, noise=0.0, bias=0.0,
                     lay=s.layout)
    assert np.abs(z0 - z1).max() > 0                                   # the smooth noise acts
    from icml26.ambisur import depth_to_normal
    n1 = depth_to_normal(torch.as_tensor(z1), _cam(s))
    n2 = depth_to_normal(torch.as_tensor(1.07 * z1), _cam(s))        # a per-view scale: the same normals
    inner = torch.as_tensor(z1 > 0)
    assert float((n1 - n2).abs()[inner].median()) < 1e-4
    with pytest.raises(ValueError, match="scale_sd"):
        prior_depth(v.cam, v.depth, np.random.default_rng(1), 1.0, scale_sd=-1.0)
    with pytest.raises(ValueError, match="depth must be"):
        ex.backproject(np.ones((3, 3)), v.cam)


@pytest.mark.parametrize("name", ["M", "DS", "O", "DO", "Cr"])
def test_control_runs_train(ladder, name):
    r = ladder[(name, 0)]
    assert np.isfinite(r.metrics["cd"]) and r.metrics["psnr"] > 0 and len(r.log["photo"]) == 3
    assert len(r.log["cd"]) == 6 and np.all(np.isfinite(r.log["cd"]))
