"""Unit tests of icml26.fedwave (fast: tiny widths, a few steps)."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from icml26 import fedwave as fw
from icml26.fedwave import data as D
from icml26.fedwave.federated import Adapted, Client, local_train
from icml26.fedwave.router import Router

from fedwave_common import CFG, base  # noqa: F401  (base is a fixture)


# ---------------------------------------------------------------- data
def test_stage_maps_and_chain():
    assert fw.stage_map(0, (3, 1, 2, 1)) == (1, 1, 2, 3)
    assert fw.stage_map(1, (7, 8, 9, 0)) == (0, 1, 2, 3)
    assert fw.stage_map(2, (1, 2, 3, 4)) == (4, 3, 2, 1)
    assert fw.stage_map(3, (5, 5, 1, 2)) == (5, 1, 2, 3)   # checksum 13 -> 3 appended, repeated 5 dropped
    assert fw.chain((3, 1, 2, 1))[-1] == fw.stage_map(3, (6, 5, 4, 4))
    with pytest.raises(ValueError, match="stage id 4"):
        fw.stage_map(4, (1, 2))


def test_ceiling_equals_brute_force_enumeration():
    assert D.router_ceiling((4,))["ceiling"] == pytest.approx(D.brute_force_ceiling(4), abs=1e-12)
    c = D.router_ceiling()["ceiling"]
    assert 0.25 < c < 1.0


def test_clients_are_stage_local_and_iid_mixes():
    rng = np.random.default_rng(0)
    local = fw.client_datasets(20, rng)
    assert [set(c.stages) for c in local] == [{0}, {1}, {2}, {3}]
    for k, c in enumerate(local):
        assert all(fw.stage_map(k, z) == y for z, y in zip(c.inputs, c.outputs))
    mixed = fw.client_datasets(20, np.random.default_rng(0), mix_ratio=1.0)
    assert all(len(set(c.stages)) > 1 for c in mixed)
    with pytest.raises(ValueError, match="no data"):
        D.stage_pairs(0, 0, rng)
    with pytest.raises(ValueError, match="mix_ratio"):
        fw.client_datasets(5, rng, mix_ratio=1.5)
    with pytest.raises(ValueError, match="out of range"):
        D.stage_pairs(4, 3, rng)


def test_encode_masks_response_tokens_and_leakage_guard():
    ids, mask = D.encode([(1, 2, 3, 4)], [(4, 3, 2, 1)])
    assert ids[0, :11].tolist() == [D.BOS, 1, 2, 3, 4, D.SEP, 4, 3, 2, 1, D.EOS]
    assert ids[0, 1:][mask[0]].tolist() == [4, 3, 2, 1, D.EOS]
    D.check_no_stage_token(ids)
    with pytest.raises(ValueError, match="stage token"):
        D.check_no_stage_token(torch.tensor([[D.BOS, 1, D.VOCAB + 2]]))


# ---------------------------------------------------------------- LoRA vs peft
def test_lora_matches_peft_outputs_and_gradients(base):
    peft = pytest.importorskip("peft")
    ours = copy.deepcopy(base)
    fw.add_lora(ours, 4, 8.0, seed=0)
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for m in ours.modules():
            if isinstance(m, fw.LoRALinear):
                m.lora_B.weight.copy_(0.1 * torch.randn(m.lora_B.weight.shape, generator=g))
    theirs = peft.get_peft_model(copy.deepcopy(base), peft.LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0,
                                                                     target_modules=list(fw.model.LORA_TARGETS)))
    res = peft.set_peft_model_state_dict(theirs, fw.to_peft_state_dict(fw.lora_state(ours)))
    assert not [k for k in res.unexpected_keys if "lora" in k]
    ids, mask = D.encode([(1, 2, 3, 4), (5, 6, 7, 8, 9)], [(4, 3, 2, 1), (9, 8, 7, 6, 5)])
    lo, lt = ours(ids), theirs(ids)
    assert torch.allclose(lo, lt, atol=1e-6)
    fw.model.lm_loss(lo, ids, mask).backward()
    fw.model.lm_loss(lt, ids, mask).backward()
    go = {k: p.grad for k, p in ours.named_parameters() if p.requires_grad}
    gt = {k.replace("base_model.model.", "").replace(".default", "").replace(".base_layer", ".base"): p.grad
          for k, p in theirs.named_parameters() if p.requires_grad}
    assert set(go) == set(gt) and len(go) == 2 * len(fw.model.LORA_TARGETS) * len(base.blocks)
    for k, v in go.items():
        assert torch.allclose(v, gt[k], atol=1e-6), k


def test_lora_init_and_bad_input():
    lin = torch.nn.Linear(8, 6)
    a, b = fw.LoRALinear(copy.deepcopy(lin), 2, 4.0, seed=1), fw.LoRALinear(copy.deepcopy(lin), 2, 4.0, seed=1)
    assert torch.equal(a.lora_A.weight, b.lora_A.weight) and a.lora_B.weight.abs().sum() == 0
    x = torch.randn(3, 8)
    assert torch.allclose(a(x), lin(x))
    with pytest.raises(ValueError, match="rank"):
        fw.LoRALinear(lin, 0, 4.0)
    with pytest.raises(ValueError, match="alpha"):
        fw.LoRALinear(lin, 2, 0.0)


# ---------------------------------------------------------------- aggregation
def _params(seed, shapes={"a": (2, 3), "b": (4,)}):
    g = torch.Generator().manual_seed(seed)
    return {k: torch.randn(s, generator=g) for k, s in shapes.items()}


def test_fedavg_is_the_nk_weighted_mean_and_ema_prox_bounds():
    results = [(_params(i), n) for i, n in enumerate((3, 1, 6))]
    agg = fw.FedAvg().aggregate_fit(results)
    for k in ("a", "b"):
        ref = np.average(np.stack([p[k].numpy() for p, _ in results]), axis=0, weights=[3, 1, 6])
        np.testing.assert_allclose(agg[k].numpy(), ref, rtol=1e-6)
    ema = fw.FedAvgEMA(0.9)
    ema.initialize(_params(9))
    out = ema.aggregate_fit(results)
    torch.testing.assert_close(out["a"], 0.9 * _params(9)["a"] + 0.1 * agg["a"])
    with pytest.raises(ValueError, match="beta"):
        fw.FedAvgEMA(1.0)
    with pytest.raises(ValueError, match="mu"):
        fw.FedProx(-0.1)
    with pytest.raises(ValueError, match="keys"):
        fw.FedAvg().aggregate_fit([(_params(0), 1), ({"a": torch.zeros(2, 3)}, 1)])
    with pytest.raises(ValueError, match="shape"):
        fw.FedAvg().aggregate_fit([(_params(0), 1), ({"a": torch.zeros(3, 2), "b": torch.zeros(4)}, 1)])
    with pytest.raises(ValueError, match="without data"):
        fw.FedAvg().aggregate_fit([(_params(0), 0)])
    w = fw.position_weights(4, 0.0)
    assert w.sum() == pytest.approx(1) and np.all(np.diff(w) < 0)


def test_lora_mismatch_identity():
    g = torch.Generator().manual_seed(0)
    res = [({"m.lora_A.weight": torch.randn(2, 5, generator=g), "m.lora_B.weight": torch.randn(4, 2, generator=g)}, 1)
           for _ in range(4)]
    assert fw.lora_product_mismatch(res) > 0
    same = [(res[0][0], 1)] * 4
    assert fw.lora_product_mismatch(same) == pytest.approx(0.0, abs=1e-7)


def test_nan_loss_names_client_and_round(base):
    model = Adapted(base, CFG, "strict_chain")
    client = Client(2, D.stage_pairs(2, 8, np.random.default_rng(0)))
    with torch.no_grad():
        model.vcl.W_O.bias.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match="client 2, round 5"):
        local_train(model, client, 1, 1e-3, 4, torch.Generator().manual_seed(0), round_id=5)


def test_run_method_smoke(base):
    res = fw.run_method("FedWave-VC", base, CFG, seed=1)
    assert len(res.mismatch) == CFG["rounds"] and set(res.states) == {0, 1, 2, 3}
    with pytest.raises(ValueError, match="unknown method"):
        fw.run_method("FedNope", base, CFG, seed=1)


# ---------------------------------------------------------------- VCL
def test_vcl_masks_and_bad_stage():
    m = fw.ChainVCL.stage_masks(4, "strict_chain")
    assert m.tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    assert fw.ChainVCL.stage_masks(4, "relaxed_chain").tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]
    v = fw.ChainVCL(16, 4)
    h = torch.randn(2, 5, 16)
    assert torch.allclose(v(h, torch.tensor([0, 3])), h + v.stage_emb[[0, 3]][:, None])   # W^O = 0 at init
    with pytest.raises(ValueError, match="out of range"):
        v(h, torch.tensor([0, 4]))
    with pytest.raises(ValueError, match="K >= 2"):
        fw.ChainVCL(16, 1)
    regs = v.regularisers(h, torch.tensor([1, 2]))
    assert set(regs) == {"position", "continuity", "consistency"} and all(torch.isfinite(r) for r in regs.values())


def test_affine_vcl_is_a_constant_logit_shift(base):
    v = fw.AffineVCL(base.d, 4)
    with torch.no_grad():
        v.W_O.weight.add_(0.3 * torch.randn(base.d, base.d))
        v.stage_emb.normal_()
    ids, _ = D.encode([(1, 2, 3, 4), (9, 9, 1, 0, 2)], [(1,), (2,)])
    shift = fw.stage_logit_shift(base, v, ids, 0, 3)
    assert (shift - shift[:1, :1]).abs().max() < 1e-5 and shift.abs().max() > 1e-2


# ---------------------------------------------------------------- router
def test_top_k_gates_renormalise_and_validate():
    g = np.array([[0.1, 0.5, 0.3, 0.1]])
    np.testing.assert_allclose(fw.top_k_gates(g, 2), [[0, 0.625, 0.375, 0]])
    np.testing.assert_allclose(fw.top_k_gates(g, 1), [[0, 1, 0, 0]])
    for k in (0, 5):
        with pytest.raises(ValueError, match="top_k"):
            fw.top_k_gates(g, k)
    with pytest.raises(ValueError, match="NaN"):
        fw.top_k_gates(np.array([[np.nan, 1, 0, 0]]), 1)
    with pytest.raises(ValueError, match="K >= 2"):
        Router(4, n_experts=1)


def test_code_router_loss_pushes_own_gate_down():
    torch.manual_seed(0)
    r = Router(6)
    f = torch.randn(32, 6)
    g = r(f)
    g.retain_grad()
    fw.code_router_loss(g, torch.full((32,), 2.0), k=1).backward()
    assert (g.grad[:, 1] > 0).all()       # descent lowers g_1: d(l g_k)/d g_k = l > 0 dominates
    H = fw.double_softmax_entropy(np.random.default_rng(0).dirichlet(np.ones(4), 1000))
    assert H.min() >= math.log(math.e + 3) - math.e / (math.e + 3) - 1e-12 and H.max() <= math.log(4) + 1e-12


# ---------------------------------------------------------------- DPO
def test_dpo_loss_closed_form_and_finite_differences():
    pw, pl, rw, rl = (torch.tensor([v], dtype=torch.float64) for v in (-1.0, -2.5, -1.4, -2.0))
    beta = 0.1
    d = float((pw - rw) - (pl - rl))
    assert float(fw.dpo_loss(pw, pl, rw, rl, beta)) == pytest.approx(math.log1p(math.exp(-beta * d)), rel=1e-12)
    x = pw.clone().requires_grad_(True)
    fw.dpo_loss(x, pl, rw, rl, beta).backward()
    eps = 1e-6
    fd = (float(fw.dpo_loss(pw + eps, pl, rw, rl, beta)) - float(fw.dpo_loss(pw - eps, pl, rw, rl, beta))) / (2 * eps)
    assert float(x.grad) == pytest.approx(fd, rel=1e-6)
    assert float(x.grad) == pytest.approx(-beta / (1 + math.exp(beta * d)), rel=1e-9)
    with pytest.raises(ValueError, match="beta"):
        fw.dpo_loss(pw, pl, rw, rl, 0.0)
    with pytest.raises(ValueError, match="NaN"):
        fw.dpo_loss(pw * float("nan"), pl, rw, rl, 0.1)


def test_flip_labels_and_pairs(base):
    model = Adapted(base, CFG, "strict_chain")
    xs = [z for z in D.stage_pairs(0, 12, np.random.default_rng(0)).inputs]
    gates = fw.top_k_gates(np.random.default_rng(1).dirichlet(np.ones(4), len(xs)), 2)
    pairs = fw.make_pairs(model, xs, gates, seed=0)
    assert all(w != l for w, l in zip(pairs.chosen, pairs.rejected))
    flipped = fw.flip_labels(pairs, 0.0, 0)
    assert flipped.chosen == pairs.rejected
    assert fw.flip_labels(pairs, 1.0, 0).chosen == pairs.chosen
    with pytest.raises(ValueError, match="q must be"):
        fw.flip_labels(pairs, 1.2, 0)
    if len(pairs):
        pol, margins = fw.train_dpo(model, pairs, CFG, 0, steps=2)
        assert len(margins) == 2 and all(math.isfinite(m) for m in margins)


def test_decode_validates_gates(base):
    model = Adapted(base, CFG, "strict_chain")
    with pytest.raises(ValueError, match="sum to 1"):
        fw.decode(model, [(1, 2, 3, 4)], np.array([[0.5, 0.2, 0, 0]]))
    with pytest.raises(ValueError, match="shape"):
        fw.decode(model, [(1, 2, 3, 4)], np.ones((2, 4)) / 4)
    out = fw.decode(model, [(1, 2, 3, 4), (5, 6, 7, 8, 9)], fw.one_hot([0, 1]))
    assert len(out) == 2


def test_presets_have_the_same_keys():
    keys = {s: set(p) for s, p in fw.PRESETS.items()}
    assert keys["smoke"] == keys["book"] == keys["full"]


def test_batched_clients_equal_sequential_clients(base):
    """`local_train_all`'s client-stacked forward equals each client's own forward (LoRA, affine and chain VCL)."""
    from icml26.fedwave.federated import batched_loss
    from icml26.fedwave.model import lm_loss
    from icml26.fedwave.vcl import regulariser_loss

    for vcl in (None, "affine", "strict_chain"):
        m = Adapted(base, CFG, vcl)
        g = torch.Generator().manual_seed(0)
        starts = [{k: v + 0.05 * torch.randn(v.shape, generator=g) for k, v in m.get_params().items()} for _ in range(4)]
        cl = [Client(k, D.stage_pairs(k, 8, np.random.default_rng(k))) for k in range(4)]
        P = {k: torch.stack([s[k] for s in starts]) for k in starts[0]}
        ids, mask, st = (torch.stack([getattr(c, a)[:6] for c in cl]) for a in ("ids", "mask", "stages"))
        got = batched_loss(m, P, ids, mask, st, reg=vcl == "strict_chain")
        for c in range(4):
            m.set_params(starts[c])
            h = m.hidden(ids[c])
            ref = lm_loss(m.head(h, st[c]), ids[c], mask[c])
            if vcl == "strict_chain":
                ref = ref + regulariser_loss(m.vcl, h, st[c])
            assert got[c].detach().item() == pytest.approx(ref.detach().item(), abs=1e-5), (vcl, c)


def test_one_client_fedavg_is_local_training(base):
    """Aggregation control: with a single client, R rounds of FedAvg (client trains from the global, server
    averages) follow exactly the trajectory of that client training alone with the same Adam restarts, batches
    and lr schedule, so the federated runs' gap to training alone comes from averaging several clients, not from
    the server plumbing (the chapter's local-only arm keeps one Adam across rounds instead: it has no round to
    restart at)."""
    from icml26.fedwave.federated import local_train_all, round_lr

    model = Adapted(base, CFG, "strict_chain", seed=1)
    client = Client(0, D.stage_pairs(0, 24, np.random.default_rng(3)))
    init = model.get_params()
    fed, loc = fw.FedAvg(), init
    fed.initialize(init)
    g_fed, g_loc = torch.Generator().manual_seed(11), torch.Generator().manual_seed(11)
    for r in range(3):
        lr = round_lr(dict(CFG, rounds=3), r)
        (p_fed,) = local_train_all(model, [client], [fed.global_params], 3, lr, 4, g_fed, reg=True, round_id=r)
        fed.aggregate_fit([(p_fed, len(client.data))], server_round=r + 1, num_rounds=3)
        (loc,) = local_train_all(model, [client], [loc], 3, lr, 4, g_loc, reg=True, round_id=r)
    assert any(not torch.equal(loc[k], init[k]) for k in init)          # training moved the adapters
    for k in init:
        assert torch.equal(fed.global_params[k], loc[k]), k


# ---------------------------------------------------------------- decoding = the trained (teacher-forced) function
def _trained_like(base, vcl, seed=0):
    """An `Adapted` with non-zero LoRA B, VCL output projection and stage embeddings (as after training): at init
    W^O = 0 makes the chain VCL ignore the prefix, which would hide a decoding that truncates it."""
    m = Adapted(base, CFG, vcl, seed=seed)
    g = torch.Generator().manual_seed(100 + seed)
    m.set_params({k: v + (0.3 if ".vcl." in f".{k}" else 0.1) * torch.randn(v.shape, generator=g)
                  for k, v in m.get_params().items()})
    return m


def _teacher_forced_ids(inputs, outs, n_steps):
    """BOS z SEP y EOS EOS ...: exactly the ids greedy decoding ends with (done rows are fed EOS) after n_steps."""
    rows = []
    for z, y in zip(inputs, outs):
        gen = [*y, D.EOS][:n_steps]
        rows.append([D.BOS, *z, D.SEP, *gen, *[D.EOS] * (n_steps - len(gen))])
    return torch.tensor(rows, dtype=torch.long)


@pytest.mark.parametrize("vcl", ["strict_chain", "relaxed_chain", "affine", None])
def test_greedy_step_logits_equal_teacher_forced_logits(base, vcl, monkeypatch):
    """At every greedy step, the logits `decode` reads for expert k equal model(ids, k) (the forward that
    `local_train` fits) at the same position of the final decoded sequence, to 1e-5, for every stage k."""
    model = _trained_like(base, vcl)
    # one input length, so decode runs one group and calls the head once per step
    inputs = [tuple(int(v) for v in np.random.default_rng(i).integers(0, 10, 7)) for i in range(5)]
    P = len(inputs[0]) + 2
    if vcl in ("strict_chain", "relaxed_chain"):          # the check is sensitive: the chain VCL reads the prefix,
        with torch.no_grad():                             # so the last hidden state alone gives other logits
            h = model.hidden(_teacher_forced_ids(inputs, [()] * 5, 4))
            last_only = model.head(h[:, -1:], torch.full((5,), 2))[:, -1]
            assert (last_only - model.head(h, torch.full((5,), 2))[:, -1]).abs().max() > 1e-2
    real_head = model.head
    for k in range(D.N_STAGES):
        seen = []                                         # one expert active: one head call per step
        def spy(h, stage, seen=seen):
            out = real_head(h, stage)
            seen.append(out[:, -1].detach().clone())
            return out
        monkeypatch.setattr(model, "head", spy)
        outs = fw.decode(model, inputs, fw.one_hot([k] * 5))
        monkeypatch.setattr(model, "head", real_head)
        n_steps = len(seen)
        assert 1 <= n_steps <= D.MAX_OUT + 1
        ids = _teacher_forced_ids(inputs, outs, n_steps)
        with torch.no_grad():
            tf = model(ids, torch.full((5,), k))
        for t in range(n_steps):
            torch.testing.assert_close(seen[t], tf[:, P - 1 + t], atol=1e-5, rtol=0,
                                       msg=lambda m, t=t: f"vcl={vcl}, stage {k}, step {t}: {m}")


@pytest.mark.parametrize("vcl", ["strict_chain", "relaxed_chain", "affine", None])
def test_greedy_tokens_are_the_teacher_forced_argmax(base, vcl):
    """Every token that greedy `decode` emits (oracle stage and top-2 fusion, several input lengths) is the argmax
    of the teacher-forced next-token mixture sum_k g_k softmax(model(ids, k)) on the decoded sequence."""
    model = _trained_like(base, vcl, seed=1)
    rng = np.random.default_rng(7)
    inputs = [tuple(int(v) for v in rng.integers(0, 10, int(L))) for L in rng.integers(D.MIN_LEN, D.MAX_LEN + 1, 24)]
    oracle = fw.one_hot(rng.integers(0, D.N_STAGES, len(inputs)))
    fused = fw.top_k_gates(rng.dirichlet(np.ones(D.N_STAGES), len(inputs)), 2)
    for gates in (oracle, fused):
        outs = fw.decode(model, inputs, gates)
        for i, (z, y) in enumerate(zip(inputs, outs)):
            ids = torch.tensor([[D.BOS, *z, D.SEP, *y, D.EOS][:len(z) + 2 + D.MAX_OUT + 1]])
            with torch.no_grad():
                mix = sum(float(gates[i, k]) * torch.softmax(model(ids, torch.tensor([k])), -1)
                          for k in range(D.N_STAGES) if gates[i, k] > 0)
            P = len(z) + 2
            want = ids[0, P:].tolist()                     # y, then EOS (unless the output ran to the step limit)
            assert mix[0, P - 1:P - 1 + len(want)].argmax(-1).tolist() == want, (vcl, i)


# ---------------------------------------------------------------- released-code fidelity and audits
def test_vcl_masks_heads_before_mixing():
    """As the released layer (value_chain_model.py:143-149): inactive heads are zeroed, then mixed; stage 0 (strict:
    head 0 only) does not read head 2's parameters even with cross-head mixing (mix-then-mask read every head)."""
    torch.manual_seed(0)
    v = fw.ChainVCL(16, 4, mode="strict_chain", cross_head=True)
    with torch.no_grad():
        v.W_O.weight.normal_()
        v.C.normal_()
    h = torch.randn(2, 5, 16)
    before = [v(h, torch.full((2,), s)).detach() for s in (0, 3)]
    with torch.no_grad():
        v.W_Q[2].add_(torch.randn_like(v.W_Q[2]))
    after = [v(h, torch.full((2,), s)).detach() for s in (0, 3)]
    assert torch.equal(before[0], after[0])                # stage 0: heads {0}
    assert (before[1] - after[1]).abs().max() > 1e-4       # stage 3: heads {2, 3}


def test_audit_router_and_preference_bypass(base):
    from icml26.fedwave import audit

    model = Adapted(base, CFG, "strict_chain")
    with torch.no_grad():
        model.vcl.W_O.weight.normal_()
        model.vcl.stage_emb.normal_()
    t = D.stage_pairs(0, 40, np.random.default_rng(0))
    r = audit.router_logit_effect(model, t.inputs)
    assert r["released"] == 0.0 and r["fusion_control"] > 1e-3
    gates = fw.top_k_gates(np.random.default_rng(1).dirichlet(np.ones(4), len(t)), 2)
    p = audit.preference_bypass(model, t.inputs, t.outputs, gates)
    assert p["released_tv"] == 0.0 and p["chapter_tv"] > 1e-3


def test_default_run_audit_trains_no_layer():
    pytest.importorskip("peft")
    pytest.importorskip("transformers")
    from icml26.fedwave import audit

    a = audit.default_run_audit(seed=0)
    assert a["vcl_in_optimizer"] == 0 and a["router_in_optimizer"] == 0 and a["lora_in_optimizer"] > 0
    assert a["vcl_in_optimizer_control"] == a["vcl_params"] > 0
    assert a["owner"] == "LlamaModel" and a["owner_has_lm_head"] == 0.0
    assert a["vcl_logit_effect"] == 0.0 and a["vcl_logit_effect_control"] > 1e-3 and a["vcl_grad"] == 0.0


def test_pair_margin_and_split(base):
    model = Adapted(base, CFG, "strict_chain")
    xs = D.stage_pairs(0, 16, np.random.default_rng(0)).inputs
    gates = fw.top_k_gates(np.random.default_rng(1).dirichlet(np.ones(4), len(xs)), 2)
    pairs = fw.make_pairs(model, xs, gates, seed=0)
    if len(pairs) < 2:
        pytest.skip("too few distinct pairs at this size")
    tr, ho = fw.split_pairs(pairs, 0.5, seed=0)
    assert len(tr) + len(ho) == len(pairs) and set(tr.inputs).isdisjoint(set(ho.inputs)) or len(set(pairs.inputs)) < len(pairs)
    assert fw.pair_margin(model, model, ho) == 0.0
    seen = []
    fw.train_dpo(model, tr, CFG, 0, steps=2, on_step=lambda pol: seen.append(fw.pair_margin(pol, model, ho)))
    assert len(seen) == 2 and all(math.isfinite(m) for m in seen)
    with pytest.raises(ValueError, match="held-out"):
        fw.split_pairs(pairs, 1.0)


# ---------------------------------------------------------------- capacity controls, equal updates, the IUT reading
def test_stage_blind_vcl_ignores_the_stage_with_the_same_parameters():
    from icml26.fedwave.vcl import ChainVCL, make_vcl

    blind, chain = make_vcl("blind_chain", 16, seed=3), make_vcl("relaxed_chain", 16, seed=3)
    assert [(k, v.shape) for k, v in blind.named_parameters()] == [(k, v.shape) for k, v in chain.named_parameters()]
    with torch.no_grad():
        for vcl in (blind, chain):
            vcl.W_O.weight.normal_(0, 0.5, generator=torch.Generator().manual_seed(0))
    h = torch.randn(3, 5, 16, generator=torch.Generator().manual_seed(1))
    outs_b = [blind(h, torch.full((3,), s)) for s in range(4)]
    outs_c = [chain(h, torch.full((3,), s)) for s in range(4)]
    assert all(torch.allclose(o, outs_b[0]) for o in outs_b)                   # every stage reads the same function
    assert torch.allclose(outs_b[0], outs_c[3])                                  # ... the last stage's (all heads)
    assert not torch.allclose(outs_c[0], outs_c[3])                              # where the stage signal differs
    with pytest.raises(ValueError, match="out of range"):
        ChainVCL(16, fixed_stage=4)


def test_stage_blind_run_and_rank_matched_counts(base):
    from icml26.fedwave.federated import lora_count, matched_lora_rank, method_cfg, vcl_count

    book = fw.PRESETS["book"]
    assert (lora_count(book), vcl_count(book)) == (6912, 9472)
    probe = Adapted(fw.TinyDecoder(book["d"], book["n_layers"], book["n_heads"]), book, "relaxed_chain")
    assert sum(p.numel() for k, p in probe.trainable().items() if k.startswith("vcl.")) == vcl_count(book)
    assert sum(p.numel() for k, p in probe.trainable().items() if ".lora_" in k) == lora_count(book)
    r = matched_lora_rank(book)
    target = lora_count(book) + vcl_count(book)
    assert all(abs(lora_count(book, r) - target) <= abs(lora_count(book, q) - target) for q in range(1, 20))
    mc = method_cfg("FedAvg-rank-matched", book)
    assert mc["lora_r"] == r and mc["lora_alpha"] / r == book["lora_alpha"] / book["lora_r"]
    res = fw.run_method("FedAvg-rank-matched", base, CFG, seed=1)
    assert res.model.base.blocks[0].q.lora_A.weight.shape[0] == matched_lora_rank(CFG)
    blind = fw.run_method("VC-stage-blind", base, CFG, seed=1)
    assert blind.model.vcl.fixed_stage == 3


def test_centralized_eq_takes_as_many_updates_as_one_client(base, monkeypatch):
    from icml26.fedwave import federated as F

    seen = []
    real = F.local_train
    monkeypatch.setattr(F, "local_train", lambda m, c, steps, lr, batch, gen, **kw: (seen.append((steps, batch)),
                                                                                     real(m, c, steps, lr, batch, gen, **kw))[1])
    cfg = dict(CFG, rounds=1, local_steps=2, batch=4)
    F.run_method("centralized-eq", base, cfg, seed=1)
    F.run_method("centralized", base, cfg, seed=1)
    assert seen == [(2, 16), (8, 4)]


def test_iut_reading_every_interval_and_saturation():
    from icml26.fedwave import experiments as ex

    up = ([0.5, 0.6, 0.55], [0.1, 0.1, 0.1])                # interval wholly above 0
    wide = ([0.9, -0.9, 0.2], [0.0, 0.0, 0.0])              # straddles, lowest lower end
    below = ([0.0, 0.01, 0.0], [0.2, 0.2, 0.21])            # wholly below 0, higher lower end than `wide`
    sat = ([1, 1, 1], [1, 1, 1])
    k, s, why = ex.iut_reading({"up": up, "wide": wide, "below": below}, 1e-9)
    assert k == "below" and s.ci_high < 0 and not why       # one interval wholly below decides
    k, s, why = ex.iut_reading({"up": up, "wide": wide}, 1e-9)
    assert k == "wide" and s.ci_low < 0 < s.ci_high and not why
    k, s, why = ex.iut_reading({"up": up, "wide": wide, "sat": sat}, 1e-9)
    assert k == "sat" and "saturate" in why and "(sat)" in why  # uninformative, not "not reproduced" on [0, 0]
    _, _, why = ex.iut_reading({("b", "chain", None): sat}, 1e-9)
    assert "(b, chain)" in why
    k, s, why = ex.iut_reading({"up": up, "up2": ([0.3, 0.32, 0.31], [0.0, 0.0, 0.0])}, 1e-9)
    assert k == "up2" and s.ci_low > 0 and not why
    # the smallest mean is not the reading: `wide` has the larger mean here but the lower interval end
    k, _, _ = ex.iut_reading({"low_mean": ([0.11, 0.12, 0.115], [0.0, 0.0, 0.0]), "wide": wide}, 1e-9)
    assert k == "wide"
    assert ex.saturated([0, 0], [0, 0]) and not ex.saturated([0, 1], [0, 0]) and not ex.saturated([1, 1], [0, 0])


def test_router_init_leaves_the_global_rng_alone():
    torch.manual_seed(5)
    a = torch.rand(3)
    torch.manual_seed(5)
    r1, r2 = Router(8, 4, seed=2), Router(8, 4, seed=2)
    assert torch.equal(torch.rand(3), a)
    assert all(torch.equal(p, q) for p, q in zip(r1.parameters(), r2.parameters()))
