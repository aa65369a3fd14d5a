"""Unit tests of icml26.basis_rotation: optimizer, pipeline emulator, toys, Hessian diagnostic, bad input."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from icml26 import basis_rotation as br
from icml26.scales import SCALES

torch.set_num_threads(1)


def test_presets_define_every_scale():
    assert set(br.PRESETS) == set(SCALES)
    for cfg in br.PRESETS.values():
        assert {"toy", "invariance", "traj", "mlp", "gpt", "hessian"} <= set(cfg)


def test_identity_basis_is_torch_adam():
    torch.manual_seed(0)
    w1 = torch.nn.Parameter(torch.randn(5, 3, dtype=torch.float64))
    w2 = torch.nn.Parameter(w1.detach().clone())
    ours = br.BasisRotationAdam([w1], lr=1e-2, weight_decay=0.0)
    ours.fix_basis(w1)
    ref = torch.optim.Adam([w2], lr=1e-2, eps=1e-8)
    g = torch.Generator().manual_seed(1)
    for _ in range(50):
        grad = torch.randn(5, 3, generator=g, dtype=torch.float64)
        w1.grad, w2.grad = grad.clone(), grad.clone()
        ours.step(); ref.step()
    # same algorithm; eps enters as eps vs eps * sqrt(1 - b2^t) (the official convention)
    assert torch.allclose(w1, w2, rtol=0, atol=1e-6)


def test_estimated_basis_is_orthogonal_and_diagonalises_the_factors():
    torch.manual_seed(0)
    A = torch.linalg.qr(torch.randn(6, 6))[0] @ torch.diag(torch.logspace(0, -2, 6)) @ torch.linalg.qr(torch.randn(6, 6))[0].T
    w = torch.nn.Parameter(torch.zeros(6, 4))
    opt = br.BasisRotationAdam([w], lr=1e-3, shampoo_beta=0.9, freq=5)
    g = torch.Generator().manual_seed(0)
    for _ in range(200):
        w.grad = A @ torch.randn(6, 4, generator=g)
        opt.step()
    U, V = opt.bases(w)
    assert torch.allclose(U.T @ U, torch.eye(6), atol=1e-4) and torch.allclose(V.T @ V, torch.eye(4), atol=1e-4)
    L = opt.state[w]["GGL"]
    D = U.T @ L @ U
    off = (D - torch.diag(torch.diagonal(D))).abs().sum() / D.abs().sum()
    assert off < 0.05


@pytest.mark.parametrize("variant", br.VARIANTS)
def test_every_variant_trains_a_small_mlp(variant):
    data = br.TeacherRegression(n_train=512, n_eval=128, seed=0)
    torch.manual_seed(0)
    model = br.DeepMLP(16, 16, 2, 4)
    run = br.train_pipeline(model, variant, 2, data.batches(32, 0), lambda m, b: F.mse_loss(m(b[0]), b[1]),
                            data.eval_loss, steps=60, lr=3e-3, eval_every=20, warmup=3, shampoo_beta=0.9)
    assert np.all(np.isfinite(run.eval_loss)) and run.eval_loss[-1] < 0.7 * run.eval_loss[0]


def test_uni_rotates_the_smaller_side_only():
    w_wide = torch.nn.Parameter(torch.zeros(3, 7)); w_tall = torch.nn.Parameter(torch.zeros(7, 3))
    opt = br.BasisRotationAdam([w_wide, w_tall], geometry="uni")
    w_wide.grad, w_tall.grad = torch.randn(3, 7), torch.randn(7, 3)
    opt.step()
    assert opt.bases(w_wide)[0].shape == (3, 3) and opt.bases(w_wide)[1] is None
    assert opt.bases(w_tall)[0] is None and opt.bases(w_tall)[1].shape == (3, 3)


def test_exact_invariance_to_round_off():
    assert br.exact_invariance(8, tau=5, steps=300) < 1e-10


def test_pipeline_P1_equals_plain_training():
    data = br.TeacherRegression(n_train=256, n_eval=64, seed=0)
    torch.manual_seed(0)
    m1 = br.DeepMLP(16, 8, 2, 4)
    m2 = br.DeepMLP(16, 8, 2, 4); m2.load_state_dict(m1.state_dict())
    loss = lambda m, b: F.mse_loss(m(b[0]), b[1])
    br.train_pipeline(m1, "AdamW", 1, data.batches(16, 0), loss, data.eval_loss, steps=20, lr=1e-2, eval_every=20,
                      clip=None, min_lr_ratio=1.0)
    opt = torch.optim.AdamW(m2.parameters(), lr=1e-2, weight_decay=0.01)
    it = data.batches(16, 0)
    for _ in range(20):
        opt.zero_grad(); loss(m2, next(it)).backward(); opt.step()
    for p, q in zip(m1.parameters(), m2.parameters()):
        assert torch.allclose(p, q, atol=1e-6)


def test_pipeline_uses_stashed_weights_with_stage_delays():
    """The forward of step u sees stage s at its version u - (P - 1 - s) (initial weights during warm-up)."""
    model = br.DeepMLP(1, 1, 3, 1)
    pipe = br.AsyncPipeline(model, br.split_stages(model, 3))
    assert pipe.delays == [2, 1, 0]
    firsts = [ps[0] for ps in pipe.stage_params]
    init = [float(p.detach().flatten()[0]) for p in firsts]
    owner = {id(p): (mod, name) for mod in model.modules() for name, p in mod.named_parameters(recurse=False)}
    seen = []

    def loss():   # what the forward sees: the tensors bound to the modules during the call (functional_call)
        seen.append([float(getattr(*owner[id(p)]).detach().flatten()[0]) for p in firsts])
        return model(torch.ones(1, 1)).sum()

    for u in range(5):
        pipe.forward_backward(loss)
        assert all(p.grad is not None for ps in pipe.stage_params for p in ps)
        with torch.no_grad():  # the "update": version u + 1 = init + (u + 1)
            for ps in pipe.stage_params:
                for p in ps:
                    p.add_(1.0)
        pipe.push()
    for u, row in enumerate(seen):
        for s, tau in enumerate(pipe.delays):
            assert row[s] == pytest.approx(init[s] + max(0, u - tau))
    assert [float(p.detach().flatten()[0]) for p in firsts] == pytest.approx([v + 5 for v in init])


def test_split_stages_and_stage_delays():
    model = br.TinyGPT(128, 16, 4, 2, 8)
    stages = br.split_stages(model, 4)
    assert len(stages) == 4 and stages[0][0] is model.embed and stages[-1][-1] is model.head
    assert br.stage_delays(4) == [3, 2, 1, 0]


def test_rotated_weights_follow_the_official_rule():
    model = br.TinyGPT(128, 16, 2, 2, 8)
    rot = br.rotated_weights(model)
    names = {n for n, p in model.named_parameters() if id(p) in rot}
    assert names == {f"blocks.{i}.{m}" for i in range(2) for m in
                     ("attn.c_q.weight", "attn.c_k.weight", "attn.c_v.weight", "attn.c_proj.weight",
                      "mlp.c_fc.weight", "mlp.c_proj.weight")}


def test_l11_ratio_and_rotation():
    lam = torch.tensor([3.0, 0.5], dtype=torch.float64)
    for theta in (0.0, math.pi / 8, math.pi / 4):
        Q = torch.tensor(br.rotation2d(theta))
        H = Q @ torch.diag(lam) @ Q.T
        expected = (3.5 + 2.5 * abs(math.sin(2 * theta))) / 3.5
        assert br.l11_ratio(H) == pytest.approx(expected)
        Ht = br.rotate_hessian(H, Q, None, (2, 1))
        assert br.l11_ratio(Ht) == pytest.approx(1.0)


def test_rotate_hessian_matches_autograd_in_rotated_coordinates():
    torch.manual_seed(0)
    X = torch.randn(10, 4, dtype=torch.float64); Y = torch.randn(10, 3, dtype=torch.float64)
    f = lambda W: ((X @ W - Y) ** 2).sum() + (W ** 4).sum()
    W0 = torch.randn(4, 3, dtype=torch.float64)
    U = torch.linalg.qr(torch.randn(4, 4, dtype=torch.float64))[0]; V = torch.linalg.qr(torch.randn(3, 3, dtype=torch.float64))[0]
    H = br.weight_hessian(f, W0)
    Wt0 = U.T @ W0 @ V
    Ht_direct = br.weight_hessian(lambda Wt: f(U @ Wt @ V.T), Wt0)
    assert torch.allclose(br.rotate_hessian(H, U, V, (4, 3)), Ht_direct, atol=1e-9)


def test_cauchy_sketch_estimates_l11():
    torch.manual_seed(0)
    A = torch.randn(30, 30, dtype=torch.float64); H = A @ A.T
    est = br.cauchy_l11_estimate(lambda z: H @ z, 30, 401, seed=0)
    assert est == pytest.approx(float(H.abs().sum()), rel=0.1)


def test_pipedream_lr_and_schedule():
    assert br.pipedream_lr_factor(0, 4, 100) == pytest.approx(0.25)
    assert br.pipedream_lr_factor(100, 4, 100) == 1.0 and br.pipedream_lr_factor(0, 1, 100) == 1.0
    assert br.warmup_cosine(0, 100, 10) == pytest.approx(0.1) and br.warmup_cosine(99, 100, 10) == pytest.approx(0.1, abs=1e-3)


# ---------------------------------------------------------------------- bad input
def test_bad_input_is_a_clear_error():
    w = torch.nn.Parameter(torch.zeros(3, 3))
    with pytest.raises(ValueError, match="freq"):
        br.BasisRotationAdam([w], freq=0)
    with pytest.raises(ValueError, match="2-D"):
        br.BasisRotationAdam([torch.nn.Parameter(torch.zeros(3))])
    with pytest.raises(ValueError, match="source"):
        br.BasisRotationAdam([w], source="3rd")
    with pytest.raises(ValueError, match="P"):
        br.stage_delays(0)
    model = br.DeepMLP(4, 4, 2, 1)
    with pytest.raises(ValueError, match="P"):
        br.split_stages(model, 0)
    with pytest.raises(ValueError, match="cannot split"):
        br.split_stages(model, 3)
    with pytest.raises(ValueError, match="does not cover"):
        br.AsyncPipeline(model, [[model.inp, model.blocks[0]], [model.blocks[1]]])  # head missing
    opt = br.BasisRotationAdam([w])
    w.grad = torch.full((3, 3), float("nan"))
    with pytest.raises(ValueError, match="NaN"):
        opt.step()
    with pytest.raises(ValueError, match="unknown method"):
        br.make_stage_optimizer("SGD", [w], set(), lr=1e-3)
    with pytest.raises(ValueError, match="positive trace"):
        br.l11_ratio(-torch.eye(2))
