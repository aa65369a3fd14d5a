"""Unit tests of icml26.ambisur: renderer exactness, GPT/RCC gradients, peers (gsplat, kornia, pcu), bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icml26.ambisur import (PRESETS, CameraT, GaussianModel, RayColorConsistency, alr_loss, chamfer, eval_sh,
                            experiments, init_model, make_scene, photometric, prior_depth_loss, project,
                            quat_to_rotmat, rcc_lambda_per_pixel, rcc_surrogate, render, sh_ambiguity, train_run)
from icml26.ambisur.render import _composite
from icml26.ambisur.scene import Camera, look_at


@pytest.fixture(scope="module")
def scene():
    return make_scene(16, 4, 1, seed=0, texels=4, gt_spacing=0.05)


@pytest.fixture(scope="module")
def model(scene):
    torch.manual_seed(0)
    m = init_model(scene, 150, 3, seed=0)
    with torch.no_grad():
        m.sh[:, 1:] += 0.1 * torch.randn_like(m.sh[:, 1:])
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
    with torch.no_grad():
        _, m2d, _, conic = project(model.means, model.covariances(), cam)
        order = torch.argsort((model.means @ cam.R.T + cam.t)[:, 2])
        uv = torch.stack(torch.meshgrid(torch.arange(cam.W) + 0.5, torch.arange(cam.H) + 0.5, indexing="xy"), -1)
        w, _ = _composite(uv.reshape(1, -1, 2), m2d[order][None], conic[order][None], model.opacities[order][None],
                          torch.ones(1, len(model), dtype=torch.bool), 2.0, 2.0)
        W = torch.zeros(cam.H * cam.W, len(model))
        W[:, order] = w[0]
    lam = rcc_lambda_per_pixel(15.0, cam.H, cam.W)
    c1 = model.colors(cam.center).detach().requires_grad_(True)
    rcc_surrogate(W, c1, lam).backward()
    c2 = c1.detach().clone().requires_grad_(True)
    out = RayColorConsistency.apply(c2, W.sum(0), W.T @ (W @ c2.detach()), lam)
    assert torch.equal(out, c2)
    (out * 0).sum().backward()
    assert float(c1.grad.abs().max()) > 0
    assert torch.allclose(c1.grad, c2.grad, rtol=1e-5, atol=1e-9)


def test_rcc_in_renderer_changes_only_colour_gradients(scene, model):
    cam = _cam(scene)
    grads = []
    for lam in (0.0, 1e-2):
        model.zero_grad()
        r = render(model, cam, 2.0, rcc_lambda=lam)
        r.color.sum().backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    assert torch.equal(grads[0]["opacity_logits"], grads[1]["opacity_logits"])
    assert not torch.equal(grads[0]["sh"], grads[1]["sh"])
    model.zero_grad()


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


def test_training_is_deterministic(scene):
    cfg = dict(PRESETS["smoke"], n_gauss=60, iters=12, log_every=6)
    a = train_run(scene, "D", cfg, seed=1).metrics
    b = train_run(scene, "D", cfg, seed=1).metrics
    assert a["cd"] == b["cd"] and a["psnr"] == b["psnr"] and math.isfinite(a["cd"])
    with pytest.raises(ValueError, match="unknown run"):
        train_run(scene, "Z", cfg, seed=0)


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
