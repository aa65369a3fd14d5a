"""Unit tests of the shared workflow, SCAFFOLD, LoRA-only aggregation and the client-drift theory (icml26.fedwave)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from icml26 import fedwave as fw
from icml26.fedwave import data as D
from icml26.fedwave import drift
from icml26.fedwave import experiments as ex
from icml26.fedwave.federated import Adapted, Client, local_train_all, run_method

from fedwave_common import CFG, base  # noqa: F401  (base is a fixture)


# ---------------------------------------------------------------- the shared workflow
def test_shared_maps_share_sigma_and_clash_on_the_stamp():
    z = (0, 1, 2, 9)
    assert D.sigma(z) == (3, 0, 7, 6)
    assert all(D.sigma((v,)) != (v,) for v in range(10))                       # no fixed point: copying gets none
    assert sorted(D.sigma(range(10))) == list(range(10))                        # a bijection
    outs = [fw.shared_stage_map(k, z) for k in range(4)]
    assert all(o[:-1] == (3, 0, 7) and o[-1] == k for k, o in enumerate(outs))  # shared prefix, clashing stamp
    with pytest.raises(ValueError, match="out of range"):
        fw.shared_stage_map(4, z)


def test_shared_clients_carry_the_instruction_and_the_chain():
    local = fw.shared_client_datasets(12, np.random.default_rng(0))
    for k, c in enumerate(local):
        assert set(c.stages) == {k}
        for z, y in zip(c.inputs, c.outputs):
            assert z[0] == D.INSTR + k and all(0 <= v < 10 for v in z[1:])
            assert fw.shared_stage_map(k, z[1:]) == y and D.SHARED_MIN_LEN <= len(z) - 1 <= D.SHARED_MAX_LEN
    ids, mask = D.encode(local[3].inputs, local[3].outputs)           # fits the sequence length
    with pytest.raises(ValueError, match="stage token"):
        D.check_no_stage_token(ids)                                   # the routed experiments' guard refuses them
    xs, ys = D.shared_chain_set(5, np.random.default_rng(1))
    assert all(D.shared_chain(x)[-1] == y for x, y in zip(xs, ys))
    with pytest.raises(ValueError, match="workflow"):
        D.workflow_data("other", 4, np.random.default_rng(0))


def test_pretraining_skips_the_instruction():
    p = D.pretrain_pairs(10, np.random.default_rng(0))
    for i, (x, y) in enumerate(zip(p.inputs, p.outputs)):
        assert (x == y) if i % 2 == 0 else (x[0] >= D.INSTR and x[1:] == y)


def test_decode_with_instructions_and_chain(base):
    model = Adapted(base, CFG, "strict_chain")
    x = [D.instruct(2, (1, 2, 3))]
    with pytest.raises(ValueError, match="stage token"):
        fw.decode(model, x, fw.one_hot([2]))
    assert isinstance(fw.decode(model, x, fw.one_hot([2]), instructions=True)[0], tuple)
    xs, ys = D.shared_chain_set(4, np.random.default_rng(0))
    init = model.get_params()
    em = fw.chain_em(model, {k: init for k in range(4)}, xs, ys, instructions=True)
    assert 0.0 <= em <= 1.0


# ---------------------------------------------------------------- SCAFFOLD and client drift on quadratics
def _quadratics(seed=0, n=4, d=3):
    rng = np.random.default_rng(seed)
    As, xs = [], []
    for _ in range(n):
        Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
        As.append(Q @ np.diag(rng.uniform(0.2, 2.0, d)) @ Q.T)
        xs.append(rng.normal(size=d) * 2)
    return As, xs


def test_scaffold_reaches_the_global_optimum_where_fedavg_is_biased():
    As, xs = _quadratics()
    xstar = drift.global_optimum(As, xs)
    for E in (4, 16):
        fa = drift.run_quadratic(As, xs, "fedavg", E, 0.1, 600)
        sc = drift.run_quadratic(As, xs, "scaffold", E, 0.1, 600)
        np.testing.assert_allclose(fa, drift.fedavg_fixed_point(As, xs, E, 0.1), atol=1e-8)   # (D1)
        assert np.linalg.norm(fa - xstar) > 1e-2                                           # biased
        np.testing.assert_allclose(sc, xstar, atol=1e-6)                                    # SCAFFOLD is not
    np.testing.assert_allclose(drift.run_quadratic(As, xs, "fedavg", 1, 0.1, 800), xstar, atol=1e-8)   # E = 1: none


def test_fedavg_bias_first_order_and_growth():
    a, x = [0.5, 1.0, 2.0], [1.0, -2.0, 3.0]
    As, xs = [np.array([[v]]) for v in a], [np.array([v]) for v in x]
    xstar = drift.global_optimum(As, xs)[0]
    biases = []
    for E in (2, 4, 8):
        b = drift.fedavg_fixed_point(As, xs, E, 1e-3)[0] - xstar
        assert b == pytest.approx(drift.first_order_bias(a, x, E, 1e-3), rel=2e-2)       # (D2) at small eta
        biases.append(abs(drift.fedavg_fixed_point(As, xs, E, 0.05)[0] - xstar))
    assert biases[0] < biases[1] < biases[2]
    with pytest.raises(ValueError, match="positive definite"):
        drift.global_optimum([np.array([[-1.0]])], [np.array([0.0])])
    with pytest.raises(ValueError, match="fedavg"):
        drift.run_quadratic(As, xs, "fedprox", 1, 0.1, 1)


def test_scaffold_strategy_controls_match_option_two():
    s = fw.Scaffold()
    x = {"w": torch.zeros(2)}
    s.initialize(x)
    assert torch.equal(s.correction(0)["w"], torch.zeros(2))
    ys = [{"w": torch.tensor([-0.2, 0.0])}, {"w": torch.tensor([0.4, 0.2])}]
    s.update_controls(x, ys, [0, 1], steps=2, lr=0.1)
    # c_i+ = (x - y_i) / (E eta), c = mean of them (c and c_i start at 0)
    torch.testing.assert_close(s.c_i[0]["w"], torch.tensor([1.0, 0.0]))
    torch.testing.assert_close(s.c_i[1]["w"], torch.tensor([-2.0, -1.0]))
    torch.testing.assert_close(s.c["w"], torch.tensor([-0.5, -0.5]))
    torch.testing.assert_close(s.correction(0)["w"], torch.tensor([-1.5, -0.5]))
    with pytest.raises(ValueError, match="SCAFFOLD"):
        s.update_controls(x, ys, [0, 1], steps=0, lr=0.1)


def test_scaffold_correction_in_local_training_equals_sgd_line_10(base):
    """With SGD, local_train_all's correction is y <- y - lr (g - c_i + c): compare against the uncorrected step."""
    model = Adapted(base, CFG, None)
    cl = [Client(k, d) for k, d in enumerate(fw.client_datasets(8, np.random.default_rng(0)))][:2]
    start = model.get_params()
    corr = [{k: torch.full_like(v, 0.5 * (i + 1)) for k, v in start.items()} for i in range(2)]
    plain = local_train_all(model, cl, [start] * 2, 1, 0.1, 4, torch.Generator().manual_seed(0), optimizer="sgd")
    corrected = local_train_all(model, cl, [start] * 2, 1, 0.1, 4, torch.Generator().manual_seed(0), optimizer="sgd",
                                corrections=corr)
    for i in range(2):
        for k in start:
            torch.testing.assert_close(corrected[i][k], plain[i][k] - 0.1 * corr[i][k])
    with pytest.raises(ValueError, match="optimizer"):
        local_train_all(model, cl, [start] * 2, 1, 0.1, 4, torch.Generator(), optimizer="lion")


# ---------------------------------------------------------------- LoRA-only aggregation and the shared runs
def test_lora_only_averaging_keeps_each_clients_vcl(base):
    cfg = dict(CFG, workflow="shared", n_per_client=8)
    res = run_method("VC-LoRA-avg", base, cfg, seed=1)
    lora = [k for k in res.states[0] if ".lora_" in k]
    vcl = [k for k in res.states[0] if k.startswith("vcl.")]
    assert lora and vcl
    for k in lora:
        assert all(torch.equal(res.states[0][k], res.states[c][k]) for c in range(4))
    assert any(not torch.equal(res.states[0][k], res.states[1][k]) for k in vcl)
    full = run_method("FedWave-VC", base, cfg, seed=1)
    assert all(torch.equal(full.states[0][k], full.states[1][k]) for k in vcl)
    sc = run_method("SCAFFOLD-single", base, cfg, seed=1)
    assert all(torch.isfinite(v).all() for v in sc.states[0].values())


def test_shared_cfg_and_sweep_choice(base, monkeypatch):
    c = ex.shared_cfg(dict(fw.PRESETS["smoke"]), E=1, lr=0.03)
    assert c["rounds"] * c["local_steps"] == fw.PRESETS["smoke"]["shared_steps"] and c["lr_min"] == pytest.approx(0.003)
    with pytest.raises(ValueError, match="divide"):
        ex.shared_cfg(dict(fw.PRESETS["smoke"]), E=4)
    cfg = dict(CFG, shared_steps=2, sweep_E=(1, 2), sweep_lr=(1e-2, 3e-2), shared_E=2, shared_n_val=2, sweep_seed=0,
               sweep_methods=("FedAvg-single", "FedWave-VC"), seeds=(1,), claim_seeds=(1, 3), central_val_seeds=(0, 2))
    # FedAvg-single is best at lr 1e-2, FedWave-VC at 3e-2, local-only at 1e-2; centralized-eq would be best at
    # 3e-2 on its own, but it is not swept: it takes local-only's choice (P1 changes the data and nothing else)
    best_lr = {"FedAvg-single": 1e-2, "FedWave-VC": 3e-2, "centralized": 3e-2, "centralized-eq": 3e-2,
               "local-only": 1e-2}
    monkeypatch.setattr(ex, "_score", lambda res, val, chains=None: (
        np.array([1.0 if res.tag[1] == best_lr[res.tag[0]] else 0.5]), 0.0))
    calls = []

    def fake(m, b, cf, s):                                   # no training: _score reads the tag
        calls.append((m, cf["local_steps"], cf["lr"], s))
        return SimpleNamespace(tag=(m, cf["lr"]))
    monkeypatch.setattr(ex, "run_method", fake)
    out = ex.drift_sweep(base, cfg)
    assert out["choice"]["FedAvg-single"] == (1, 1e-2)
    assert out["choice"]["FedWave-VC"] == (1, 3e-2)                 # tuned on its own, not tied to FedAvg's lr
    assert out["choice"]["centralized"] == (2, 3e-2) and out["choice"]["local-only"] == (2, 1e-2)
    assert out["choice"]["centralized-eq"] == out["choice"]["local-only"]
    # the rank-matched control takes the (E, lr) of the method it is compared with (C11p), not FedAvg-single's
    assert out["choice"]["FedAvg-rank-matched"] == out["choice"]["FedWave-VC"]
    # the full E x lr grid for the swept methods, lr at E = shared_E for local-only, and for centralized on both
    # validation seeds; no run twice, none on a test seed
    assert len(calls) == len(set(calls)) == 2 * 2 * 2 + 2 + 2 * 2
    assert sorted({s for m, _, _, s in calls if m == "centralized"}) == [0, 2]
    assert out["central"][(2, 3e-2)] == [ex.em_count(1.0, 8)] * 2
    assert not any(m == "centralized-eq" for m, _, _, _ in calls)
    assert ("FedWave-VC", 1, 1e-2, 0) in calls and ("FedWave-VC", 2, 1e-2, 0) in calls
    assert ex.lr_at_edge(out["grid"], out["choice"], cfg["sweep_lr"]) == sorted(
        m for m in out["choice"] if m not in ex.SHARED_TIED)
    with pytest.raises(ValueError, match="validation seed"):
        ex.drift_sweep(base, dict(cfg, seeds=(0,)))
    with pytest.raises(ValueError, match="validation seed"):
        ex.drift_sweep(base, dict(cfg, claim_seeds=(1, 2)))


def test_sweep_ties_are_ties_of_counts_not_of_float_means():
    # 66 items right of 160, summed as stage means in two orders: equal counts, floats that differ in the last bits
    a = np.mean([17 / 40, 16 / 40, 17 / 40, 16 / 40])
    b = np.mean([16 / 40, 17 / 40, 16 / 40, 17 / 40]) + 1e-16
    assert a != b and ex.em_count(a, 160) == ex.em_count(b, 160) == 66
    grid = {("FedAvg-single", 4, 0.03): max(a, b), ("FedAvg-single", 1, 0.03): min(a, b),
            ("FedAvg-single", 1, 0.01): 0.3}
    counts = {k: ex.em_count(v, 160) for k, v in grid.items()}
    assert ex.best_setting(counts, "FedAvg-single") == (1, 0.03)     # the tie rule: the smaller E
    assert sorted(grid, key=lambda k: (-grid[k], k[1], k[2]))[0][1] == 4   # what the float means picked before
    with pytest.raises(KeyError):
        ex.best_setting(counts, "FedWave-VC")


def test_best_over_seeds_is_best_setting_on_the_summed_counts():
    # centralized takes FedWave-VC's rule (the most items right; ties the smaller E, then lr), summed over its seeds
    per_seed = {(4, 0.01): [70, 80], (4, 0.03): [77, 78], (4, 0.1): [20, 30]}
    assert ex.best_over_seeds(per_seed, "centralized") == (4, 0.03)
    per_seed[(4, 0.01)] = [77, 78]                                    # a tie of counts: the smaller lr
    assert ex.best_over_seeds(per_seed, "centralized") == (4, 0.01)
    with pytest.raises(ValueError):
        ex.best_over_seeds({}, "centralized")


def test_planted_arms_keep_the_spread_and_set_the_mean():
    rng = np.random.default_rng(0)
    arms = {("FedAvg-single", "stage", k): (rng.random(14), rng.random(14)) for k in range(3)}
    planted = ex.planted_arms(arms, 0.1)
    for key, (a, b) in arms.items():
        d0, d1 = a - b, planted[key][0] - planted[key][1]
        assert np.isclose(d1.mean(), 0.1) and np.allclose(d1 - d1.mean(), d0 - d0.mean())
    # the control passes exactly when the spread lets the test resolve delta in every setting
    quiet = {"s": (np.full(14, 0.5) + 0.01 * rng.standard_normal(14), np.full(14, 0.5))}
    noisy = {"s": (rng.standard_normal(14), rng.standard_normal(14))}
    assert ex.iut_reading(ex.planted_arms(quiet, 0.1), 1e-9)[1].ci_low > 0
    assert ex.iut_reading(ex.planted_arms(noisy, 0.1), 1e-9)[1].ci_low < 0


def test_adam_first_step_is_sign_descent(base):
    r = ex.adam_first_step_ratio(base, dict(CFG, shared_steps=8), "FedAvg-single", 3e-2, seed=1)
    assert 0.99 <= r["q01"] <= r["median"] <= r["max"] <= 1.0 + 1e-6 and r["moved"] > 0


def test_disjoint_cfg_and_sweep_choice(base, monkeypatch):
    c = ex.disjoint_cfg(dict(CFG, rounds=3, local_steps=4), E=1, lr=0.03)
    assert (c["rounds"], c["local_steps"], c["lr_min"]) == (12, 1, pytest.approx(0.003))
    assert ex.disjoint_cfg(dict(CFG, rounds=3, local_steps=4))["rounds"] == 3
    with pytest.raises(ValueError, match="divide"):
        ex.disjoint_cfg(dict(CFG, rounds=3, local_steps=4), E=5)
    cfg = dict(CFG, rounds=1, local_steps=2, disjoint_sweep_methods=("FedAvg-single", "FedWave-VC"),
               disjoint_sweep_E=(1, 2), disjoint_sweep_lr=(1e-2, 3e-2), shared_n_val=2, sweep_seed=0, seeds=(1,))
    calls = []

    def fake(m, b, cf, s):                                   # no training: stage_em is faked too
        calls.append((m, cf["local_steps"], cf["lr"], s))
        return SimpleNamespace(model=None, states=None)
    monkeypatch.setattr(ex, "run_method", fake)
    # every setting scores the same: the tie rule picks the smallest E, then the smallest lr
    monkeypatch.setattr(ex, "stage_em", lambda model, states, tests, **kw: np.full(4, 0.5))
    out = ex.disjoint_sweep(base, cfg)
    assert len(calls) == len(set(calls)) == 2 * 2 * 2 and {s for *_, s in calls} == {0}
    assert out["choice"]["FedWave-VC"] == out["choice"]["FedAvg-single"] == (1, 1e-2)
    assert out["choice"]["SCAFFOLD-single"] == out["choice"]["FedAvg-single"]
    assert out["choice"]["VC+EMA"] == out["choice"]["FedWave-VC"] and "centralized" not in out["choice"]
    with pytest.raises(ValueError, match="validation seed"):
        ex.disjoint_sweep(base, dict(cfg, seeds=(0,)))


def test_t_power_matches_the_noncentral_t():
    # the review's table (book run at 3c0bea4): C1s at effect 0.161, SD 0.186; C2s at gap 0, SD 0.159, bound -0.10
    assert ex.t_power(0.161, 0.186, 3) == pytest.approx(0.15, abs=0.01)
    assert ex.t_power(0.0, 0.159, 20, bound=-0.10) == pytest.approx(0.76, abs=0.01)
    ps = [ex.t_power(0.161, 0.186, n) for n in (3, 5, 10, 20)]
    assert all(np.diff(ps) > 0) and np.isnan(ex.t_power(0.1, 0.1, 1))


def test_ceiling_features_flag_the_stage_inputs():
    rng = np.random.default_rng(0)
    sets = [D.stage_pairs(k, 20, rng) for k in range(4)]
    f = [fw.router.ceiling_features(t.inputs).numpy() for t in sets]
    assert np.all(f[1][:, 0] == 1) and np.all(f[2][:, 1] == 1) and np.all(f[3][:, 2] == 1)
    assert np.all(f[0][:, 4:].sum(1) == 1) and f[0].shape[1] == 4 + D.MAX_LEN - D.MIN_LEN + 1
    with pytest.raises(ValueError, match="length"):
        fw.router.ceiling_features([(1, 2)])


def test_train_shared_curves_and_wrong_rows(base):
    cfg = dict(CFG, shared_steps=4, shared_E=1, shared_methods=("FedWave-VC", "VC-LoRA-avg"), seeds=(1,),
               shared_n_test=2, shared_n_chain=2, shared_n_curve=2, shared_curve_points=2, shared_n_per_client=8)
    cfg = dict(cfg, shared_methods=("FedWave-VC", "FedAvg-single"), claim_methods=("FedAvg-single",), claim_seeds=(3,))
    out = ex.train_shared(base, cfg, {})
    steps, cv = out["curve"]["FedWave-VC"]
    assert list(steps) == [2, 4] and cv.shape == (1, 2)            # R = 4 rounds read every 2nd, x = local steps
    assert {ex.WRONG, ex.wrong_name("FedAvg-single")} <= set(out["stage"])
    # the claims' arms (and their wrong-stage readings) on claim_seeds, the rest on seeds
    assert out["seeds"]["FedAvg-single"] == out["seeds"][ex.wrong_name("FedAvg-single")] == (3,)
    assert out["seeds"]["FedWave-VC"] == (1,) and ex.common_seeds(out, "FedWave-VC", "FedAvg-single") == []
    assert ex.shared_rows(out, "FedAvg-single", "stage", 2, [3]).tolist() == [out["stage"]["FedAvg-single"][0, 2]]
    assert ex.shared_rows(out, "FedWave-VC", "chain").tolist() == out["chain"]["FedWave-VC"].tolist()
    with pytest.raises(KeyError, match="did not run"):
        ex.shared_rows(out, "FedWave-VC", "stage", None, [3])


def test_wrong_stage_reading_uses_the_next_stages_instruction_and_parameters(base, monkeypatch):
    model = Adapted(base, CFG, "strict_chain")
    tests = fw.shared_client_datasets(3, np.random.default_rng(0))
    seen = []
    real = fw.evaluate.decode

    def spy(m, inputs, gates, **kw):
        seen.append((inputs[0][0], int(np.argmax(gates[0]))))
        return real(m, inputs, gates, **kw)
    monkeypatch.setattr(fw.evaluate, "decode", spy)
    init = model.get_params()
    fw.stage_em(model, {k: init for k in range(4)}, tests, instructions=True, shift=1)
    assert seen == [(D.INSTR + (k + 1) % 4, (k + 1) % 4) for k in range(4)]


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_fedprox_and_scaffold_are_fedavg_at_one_local_step_and_differ_at_two(base, optimizer):
    """At E = 1 FedProx and SCAFFOLD are FedAvg by their definitions, whatever the local optimizer: the proximal
    gradient mu (theta - theta_g) is 0 at the one step's start theta = theta_g, and SCAFFOLD's corrections
    lr (c - c_i) average to 0 over the clients (c = mean_i c_i, every client sampled). At E = 2 both differ."""
    from icml26.fedwave.federated import FedAvg, FedProx, Scaffold
    cfg = dict(CFG, lora_r=2, lora_alpha=4.0)
    model = Adapted(base, cfg, None)
    clients = [Client(k, D.shared_stage_pairs(k, 8, np.random.default_rng(k))) for k in range(D.N_STAGES)]
    torch.manual_seed(0)
    g0 = {k: v + 0.01 * torch.randn_like(v) for k, v in model.get_params().items()}

    def fed(strategy, E, rounds=3, lr=0.05):
        strategy.initialize(g0)
        g = strategy.global_params
        for r in range(rounds):
            prox = (strategy.proximal_mu, g) if strategy.proximal_mu > 0 else None
            corr = [strategy.correction(c.cid) for c in clients] if isinstance(strategy, Scaffold) else None
            new = local_train_all(model, clients, [g] * len(clients), E, lr, 4, torch.Generator().manual_seed(r),
                                  prox=prox, corrections=corr, optimizer=optimizer)
            if isinstance(strategy, Scaffold):
                strategy.update_controls(g, new, [c.cid for c in clients], E, lr)
            g = strategy.aggregate_fit([(p, 8) for p in new])
        return g

    def gap(a, b):
        return max(float((a[k] - b[k]).abs().max()) for k in a)
    for E, same in ((1, True), (2, False)):
        avg, prox, scaf = fed(FedAvg(), E), fed(FedProx(mu=1.0), E), fed(Scaffold(), E)
        if same:
            assert gap(prox, avg) == 0.0
            assert gap(scaf, avg) < 1e-5
        else:
            assert gap(prox, avg) > 1e-6 and gap(scaf, avg) > 1e-6


def test_arms_without_communication_keep_one_adam(base, monkeypatch):
    """local-only, centralized and centralized-eq keep one Adam for all their rounds (no round to restart at), the
    federated methods build one per round (OpenFedLLM's new Trainer); a kept optimiser continues exactly where one
    longer run would be, and refuses parameters other than those it returned."""
    from icml26.fedwave import federated as F

    made = []

    class Counting(torch.optim.Adam):
        def __init__(self, *a, **kw):
            made.append(1)
            super().__init__(*a, **kw)
    monkeypatch.setattr(F.torch.optim, "Adam", Counting)
    cfg = dict(CFG, rounds=2, local_steps=1, batch=4, workflow="shared", n_per_client=4)
    for m, n in (("local-only", 1), ("centralized-eq", 1), ("FedAvg-single", 2)):     # centralized: centralized-eq's branch
        made.clear()
        run_method(m, base, cfg, seed=1)
        assert len(made) == n, m
    monkeypatch.undo()
    model = Adapted(base, CFG, None)
    clients = [Client(k, D.shared_stage_pairs(k, 6, np.random.default_rng(k))) for k in range(2)]
    start = [model.get_params()] * 2
    one = local_train_all(model, clients, start, 4, 0.01, 3, torch.Generator().manual_seed(0))
    keep: dict = {}
    g = torch.Generator().manual_seed(0)
    half = local_train_all(model, clients, start, 2, 0.01, 3, g, keep=keep)
    two = local_train_all(model, clients, half, 2, 0.01, 3, g, keep=keep)
    for c in range(2):
        assert all(torch.allclose(one[c][k], two[c][k], atol=1e-7) for k in one[c])
    with pytest.raises(ValueError, match="previous call"):
        local_train_all(model, clients, start, 1, 0.01, 3, g, keep=keep)


def test_strategy_fidelity_sees_a_broken_scaffold(monkeypatch):
    assert fw.federated.strategy_fidelity() < 1e-12
    monkeypatch.setattr(fw.Scaffold, "correction", lambda self, cid: dict(self.c))      # c, without - c_i
    assert fw.federated.strategy_fidelity() > 1e-3


def test_deal_is_the_one_iid_split():
    # client_datasets(mix_ratio) and the VC-IID arm both deal through D.deal: at mix_ratio 1 every client holds a
    # quarter of the pool, drawn from every stage, and nothing is lost or duplicated
    local = [D.stage_pairs(k, 40, np.random.default_rng(k)) for k in range(D.N_STAGES)]
    dealt = D.deal(local, 1.0, np.random.default_rng(0))
    assert [len(p) for p in dealt] == [40] * D.N_STAGES
    assert all(len(set(p.stages.tolist())) > 1 for p in dealt)
    pooled = sorted(zip(map(tuple, D.PairSet.concat(local).inputs), D.PairSet.concat(local).stages.tolist()))
    assert sorted(zip(map(tuple, D.PairSet.concat(dealt).inputs), D.PairSet.concat(dealt).stages.tolist())) == pooled
    assert [len(p) for p in D.deal(local, 0.0, np.random.default_rng(0))] == [40] * D.N_STAGES
    with pytest.raises(ValueError):
        D.deal(local, 1.5, np.random.default_rng(0))


def test_round_selector_keeps_the_earliest_best_round_as_a_copy():
    sel = ex.RoundSelector(n_items=10)
    p = {0: {"w": torch.zeros(2)}}
    for r, score in enumerate([0.3, 0.7, 0.5, 0.7]):           # 0.7 again at round 3: a tie of counts, the earlier kept
        p[0]["w"].fill_(float(r))                             # in-place training changes the live tensors
        sel.offer(r, score, p)
    assert sel.round == 1 and sel.count == 7
    assert sel.states[0]["w"].tolist() == [1.0, 1.0]          # a copy of round 1, not the live (round 3) tensor
    assert sel.curve == [0.3, 0.7, 0.5, 0.7] and sel.best_curve == [0.3, 0.7, 0.7, 0.7]
    with pytest.raises(ValueError, match="validation item"):
        ex.RoundSelector(0)


def test_train_shared_tests_every_method_at_its_best_validation_round(base, monkeypatch):
    """Early stopping, the same for every method: the test sets are read at the round with the best validation score,
    not at the last round (the state tested is the one read at that round)."""
    cfg = dict(CFG, shared_steps=4, shared_E=1, seeds=(1,), claim_seeds=(1,), c2_seeds=(1,),
               c2_methods=("centralized",), claim_methods=("FedAvg-single", "centralized"),
               shared_methods=("FedAvg-single", "centralized", "local-only"), shared_n_test=2, shared_n_chain=2,
               shared_n_curve=2, shared_curve_points=4, shared_n_per_client=8)
    seen: list = []
    scores = iter([0.25, 0.875, 0.5, 0.125] * 3)                  # validation: best at the second reading

    def fake_selection(model, states, val):
        seen.append({k: v.clone() for k, v in states[0].items()})
        return next(scores)

    def fake_score(res, tests, chains=None, shift=0):
        tested = res.states[0]
        reads = seen[-4:]                                          # this run's four readings
        hit = [i for i, st in enumerate(reads) if all(torch.equal(st[k], tested[k]) for k in st)]
        return np.array([float(hit[0]) if hit else -1.0] * 4), 0.0
    monkeypatch.setattr(ex, "selection_score", fake_selection)
    monkeypatch.setattr(ex, "_score", fake_score)
    out = ex.train_shared(base, cfg, {})
    for m in cfg["shared_methods"]:
        assert out["stage"][m][0].tolist() == [1.0] * 4           # the state of reading 1 (index), not the last (3)
        assert out["selected"][m].tolist() == [2]                  # local steps at the kept round
        assert out["best_curve"][m][1].tolist() == [[0.25, 0.875, 0.875, 0.875]]
        assert out["curve"][m][1].tolist() == [[0.25, 0.875, 0.5, 0.125]]
    # the validation pairs are not the test pairs, and the C2 arms run on c2_seeds
    vals = ex.shared_val_sets(cfg, 1, 3)
    tests, _ = ex.shared_test_sets(cfg, 1, 3, 1)
    assert all(v.inputs != t.inputs for v, t in zip(vals, tests))
    assert ex.shared_seeds(dict(cfg, claim_seeds=(1, 3), c2_seeds=(1,)), "centralized") == (1,)
    assert ex.shared_seeds(dict(cfg, claim_seeds=(1, 3), c2_seeds=(1,)), "FedAvg-single") == (1, 3)
