"""Unit tests of the chapter's readings (icml26.mbr.analysis): z-gains and their random-configuration null, the
dev-tuned point gains, the two-sided intersection-union reading and the sign test of the channel advice, whose
MAP picks and ties are left out (a fresh review found MAP's placeholder lambda = 0 counted as "lower gamma")."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from icml26.mbr import (MAP_CONFIG, MBR_CONFIG, PLANTED, PRESETS, R1_MBR_CONFIG, advice_outcome, advice_share,
                        channel_subset, config_index, dev_best, grid_configs, intersection_union_between, map_config,
                        mbr_dev_margin, paper_grid, point_gains, r1_configs, r1_model_subset, random_z_gain, run_study,
                        seed_means, tuned_in, z_gain, z_gains, zscores)
from icml26.stats import over_seeds


@pytest.fixture(scope="module")
def study():
    p = dict(PRESETS["smoke"], n_seeds=2, n_sources=6, n_dev_sources=8, n_samples=4, n_oracle=3, tasks=("A",),
             utilities=("chrf", "softf1"), n_planted_refs=0)
    return run_study(p, show_progress=False)


def test_random_z_gain_is_minus_z_mbr_on_the_unit_and_exact_elsewhere():
    scores = np.array([1.0, 3.0, 2.0, 10.0])
    unit = [0, 1, 2]
    z = zscores(scores, unit)
    assert random_z_gain(scores, unit, 0, unit) == pytest.approx(-z[0])
    assert random_z_gain(scores, [0, 1, 2, 3], 0, unit) == pytest.approx(z.mean() - z[0])
    # MBR alone at the bottom of a three-point grid (sqrt 2 spreads below the mean): a random pick gains more than +1 z
    assert random_z_gain(np.array([0.0, 1.0, 1.0]), [0, 1, 2], 0) > 1.0
    with pytest.raises(ValueError):
        random_z_gain(scores, [], 0)


def test_z_gains_readings_agree_with_their_definitions(study):
    settings = [("A", "chrf"), ("A", "softf1")]
    tuned, rnd, ins = (z_gains(study, settings, h) for h in ("tuned", "random", "in-sample"))
    unit = paper_grid(study.configs)
    for (s, t, u), v in tuned.items():
        sc = study.test[(s, t, u)]
        assert v == pytest.approx(z_gain(sc, study.tuned(s, t, u, "paper"), study.mbr, unit))
        assert rnd[(s, t, u)] == pytest.approx(-zscores(sc, unit)[study.mbr])
        assert ins[(s, t, u)] >= v - 1e-12                      # the in-sample optimum bounds any choice
    whole = z_gains(study, settings, "random", whole=True)
    assert all(v == pytest.approx(-zscores(study.test[k])[study.mbr]) for k, v in whole.items())
    pts = point_gains(study, settings)
    assert all(np.sign(pts[k]) == np.sign(tuned[k]) or abs(pts[k]) < 1e-12 for k in pts)
    assert len(seed_means(tuned, ["A"], ["chrf", "softf1"])) == 2
    with pytest.raises(ValueError, match="unknown reading"):
        z_gains(study, settings, "best")


def test_two_sided_intersection_union():
    a, b = over_seeds([1.4, 1.5, 1.6]), over_seeds([1.2, 1.3, 1.25])
    hi, lo = over_seeds([2.5, 2.6, 2.7]), over_seeds([0.5, 1.5, 2.5])
    assert intersection_union_between({"a": a, "b": b}, 1, 2)[0] in "ab"
    k, v = intersection_union_between({"a": a, "b": b}, 1, 2)
    assert 1 <= v.ci_low and v.ci_high <= 2
    assert intersection_union_between({"a": a, "hi": hi, "lo": lo}, 1, 2)[0] == "hi"     # wholly outside decides
    assert intersection_union_between({"a": a, "lo": lo}, 1, 2)[0] == "lo"               # else a straddler
    with pytest.raises(ValueError):
        intersection_union_between({}, 1, 2)


def test_advice_share_leaves_out_map_and_ties(study):
    """A dev optimum at MAP is no "lower gamma" (its lambda = 0 is a placeholder): left out and counted; a tie with
    MBR is left out; a preference elsewhere is tested."""
    settings = [("A", "chrf")]
    map_i = config_index(study.configs, MAP_CONFIG)
    # every seed's dev signal prefers MAP: without the MAP rule all would count as lambda <= 0.25 hits
    dev = {k: np.where(np.arange(len(v)) == map_i, 1.0, 0.0) for k, v in study.dev.items()}
    st = dataclasses.replace(study, dev=dev)
    r, ties, skipped, pairs = advice_share(st, settings, lambda c: c[0], lambda v: v <= 0.25, inapplicable=map_config)
    assert (r.n, ties, skipped, pairs) == (0, 0, 2, 2)
    r2, _, skipped2, _ = advice_share(st, settings, lambda c: c[0], lambda v: v <= 0.25)
    assert r2.n == 2 and r2.mean == 1.0 and skipped2 == 0            # the review's miscoding, reproduced
    # b > 0 (GC2): MAP is b = inf, a real hit
    r3, *_ = advice_share(st, settings, lambda c: c[2], lambda v: v > 0)
    assert r3.mean == 1.0
    # a flat dev signal ties with MBR everywhere
    flat = dataclasses.replace(study, dev={k: np.zeros_like(v) for k, v in study.dev.items()})
    r4, ties4, _, _ = advice_share(flat, settings, lambda c: c[0], lambda v: v <= 0.25, inapplicable=map_config)
    assert r4.n == 0 and ties4 == 2
    # a preferred lambda = 1 configuration: a miss
    lam1 = config_index(study.configs, (1.0, 0.0, 0.0))
    st5 = dataclasses.replace(study, dev={k: np.where(np.arange(len(v)) == lam1, 1.0, 0.0) for k, v in study.dev.items()})
    r5, *_ = advice_share(st5, settings, lambda c: c[0], lambda v: v <= 0.25, inapplicable=map_config)
    assert r5.n == 2 and r5.mean == 0.0
    assert map_config(MAP_CONFIG) and not map_config(MBR_CONFIG) and not map_config(R1_MBR_CONFIG)


def test_r1_model_subset_and_tuned_in(study):
    r1 = study.r1(r1_configs((0.0, 0.5, 1.0), (1.0,), (0.0,)))
    sub = r1_model_subset(r1.configs, r1.mbr_config)
    assert sub[0] == r1.mbr and all(r1.configs[i][0] == "m" for i in sub[1:]) and len(sub) == 4
    s = r1.seeds[0]
    best, _ = tuned_in(r1, s, "A", "softf1", sub)
    dev = np.asarray(r1.dev[(s, "A", "softf1")])
    assert dev[best] == pytest.approx(dev[sub].max())
    # a strict MBR optimum is no tie; MBR's score duplicated by a configuration that decodes otherwise on dev is one
    sel = r1.selections[(s, "A", "dev", "softf1")]
    other = next(i for i in sub[1:] if not np.array_equal(sel[i], sel[r1.mbr]))
    strict = np.zeros(len(r1.configs)); strict[r1.mbr] = 0.3
    assert tuned_in(dataclasses.replace(r1, dev={k: strict for k in r1.dev}), s, "A", "softf1", sub) == (r1.mbr, False)
    dup = strict.copy(); dup[other] = 0.3
    assert tuned_in(dataclasses.replace(r1, dev={k: dup for k in r1.dev}), s, "A", "softf1", sub) == (r1.mbr, True)
    with pytest.raises(ValueError, match="start with MBR"):
        tuned_in(r1, s, "A", "softf1", sub[1:])
    with pytest.raises(ValueError, match="no R1-m"):
        r1_model_subset(r1_configs((0.0,), (1.0,), (0.0,), priors=("u",)), R1_MBR_CONFIG)
    # GC4's reading on R1-m: alpha - gamma, alpha = gamma left out (no direction)
    r, ties, skipped, pairs = advice_share(r1, [("A", "softf1")], lambda c: None if c[1] == c[3] else c[1] - c[3],
                                           lambda v: v > 0, subset=sub)
    assert r.n + ties + skipped == pairs == len(r1.seeds)


def test_sign_within_a_subgrid_without_mbr(study):
    """GC4m's reading: the dev-best configurations of a sub-grid give the sign; when they disagree the pair is a tie,
    when none has a value (alpha = gamma) it is left out."""
    from icml26.mbr import sign_within

    r1 = study.r1(r1_configs((0.0, 0.5, 1.0), (1.0,), (0.0,)))
    sub = r1_model_subset(r1.configs, r1.mbr_config)[1:]
    value = lambda c: None if c[1] == c[3] else c[1] - c[3]
    alpha_up = next(i for i in sub if r1.configs[i][1] > r1.configs[i][3])
    gamma_up = next(i for i in sub if r1.configs[i][1] < r1.configs[i][3])
    equal = next(i for i in sub if r1.configs[i][1] == r1.configs[i][3])
    one_hot = lambda *idx: {k: np.isin(np.arange(len(v)), idx).astype(float) for k, v in r1.dev.items()}
    r, ties, skipped, pairs = sign_within(dataclasses.replace(r1, dev=one_hot(alpha_up)), [("A", "softf1")], sub, value, lambda v: v > 0)
    assert (r.n, r.mean, ties, skipped, pairs) == (2, 1.0, 0, 0, 2)
    r, ties, *_ = sign_within(dataclasses.replace(r1, dev=one_hot(gamma_up)), [("A", "softf1")], sub, value, lambda v: v > 0)
    assert r.mean == 0.0 and ties == 0
    r, ties, *_ = sign_within(dataclasses.replace(r1, dev=one_hot(alpha_up, gamma_up)), [("A", "softf1")], sub, value, lambda v: v > 0)
    assert r.n == 0 and ties == 2
    r, ties, skipped, _ = sign_within(dataclasses.replace(r1, dev=one_hot(equal)), [("A", "softf1")], sub, value, lambda v: v > 0)
    assert r.n == 0 and skipped == 2
    with pytest.raises(ValueError):
        sign_within(r1, [("A", "softf1")], [], value, lambda v: v > 0)


def test_a_strict_mbr_optimum_counts_by_mbrs_weights_and_a_tie_is_a_disagreement(study):
    """The fresh review of 04544d5: the sign test left out every pair whose dev optimum was MBR as a "tie", a strict
    preference included. MBR strictly best by 0.3 is a preference: it counts by MBR's lambda = delta = b = 0 (a hit of
    "lambda <= 0.25", a miss of "b > 0" and "delta >= 0.5"). A tie is a set of dev-best configurations that disagree on
    the side, MBR among them or not; dev-best configurations that agree count once, on their side."""
    settings = [("A", "chrf")]
    n = len(study.configs)
    lam = lambda c: c[0]
    low = lambda v: v <= 0.25

    def at(values):
        return dataclasses.replace(study, dev={k: np.asarray(values, float) for k in study.dev})

    strict = np.zeros(n); strict[study.mbr] = 0.3
    r, ties, skipped, pairs = advice_share(at(strict), settings, lam, low, inapplicable=map_config)
    assert (r.n, r.mean, ties, skipped, pairs) == (2, 1.0, 0, 0, 2)          # the old rule: (0, nan, 2, 0, 2)
    r, ties, *_ = advice_share(at(strict), settings, lambda c: c[2], lambda v: v > 0)
    assert (r.n, r.mean, ties) == (2, 0.0, 0)
    r, ties, *_ = advice_share(at(strict), settings, lambda c: c[1], lambda v: v >= 0.5, inapplicable=map_config)
    assert (r.n, r.mean, ties) == (2, 0.0, 0)
    s = study.seeds[0]
    sub = channel_subset(study.configs, "all")
    assert advice_outcome(at(strict), s, "A", "chrf", sub, lam, low, map_config) == ("hit", study.mbr)
    # an exact duplicate of MBR's dev score on the other side of the advice: a tie
    lam1, lam_q = config_index(study.configs, (1.0, 0.0, 0.0)), config_index(study.configs, (0.25, 0.0, 0.0))
    dup = strict.copy(); dup[lam1] = 0.3
    r, ties, *_ = advice_share(at(dup), settings, lam, low, inapplicable=map_config)
    assert r.n == 0 and ties == 2
    assert dev_best(at(dup), s, "A", "chrf", sub) == [study.mbr, lam1]
    # ... on the same side: no tie, a hit
    same = strict.copy(); same[lam_q] = 0.3
    assert advice_outcome(at(same), s, "A", "chrf", sub, lam, low, map_config)[0] == "hit"
    # two non-MBR configurations tied on opposite sides: a tie (the grid order, lambda = 0 first, is no preference)
    lam0b = config_index(study.configs, (0.0, 0.0, 0.5))
    two = np.zeros(n); two[lam0b] = two[lam1] = 0.3
    assert advice_outcome(at(two), s, "A", "chrf", sub, lam, low, map_config)[0] == "tie"
    # MBR tied with MAP: MAP has no lambda to read, MBR's decides
    map_i = config_index(study.configs, MAP_CONFIG)
    with_map = strict.copy(); with_map[map_i] = 0.3
    assert advice_outcome(at(with_map), s, "A", "chrf", sub, lam, low, map_config) == ("hit", study.mbr)
    only_map = np.zeros(n); only_map[map_i] = 0.3
    assert advice_outcome(at(only_map), s, "A", "chrf", sub, lam, low, map_config) == ("inapplicable", map_i)


def test_mbr_dev_margin_says_preference_tie_or_other(study):
    s, n = study.seeds[0], len(study.configs)
    sel = study.selections[(s, "A", "dev", "chrf")]
    other = next(i for i in range(n) if i != study.mbr and not np.array_equal(sel[i], sel[study.mbr]))
    dev = np.zeros(n); dev[study.mbr] = 0.3
    at = lambda v: dataclasses.replace(study, dev={k: v for k in study.dev})
    assert mbr_dev_margin(at(dev), s, "A", "chrf") == pytest.approx(0.3)
    dev2 = dev.copy(); dev2[other] = 0.5
    assert mbr_dev_margin(at(dev2), s, "A", "chrf") == pytest.approx(-0.2)
    # a configuration that decodes as MBR does on dev does not count against it
    same = [i for i in range(n) if i != study.mbr and np.array_equal(sel[i], sel[study.mbr])]
    if same:
        dev3 = dev.copy(); dev3[same[0]] = 0.9
        assert mbr_dev_margin(at(dev3), s, "A", "chrf") == pytest.approx(0.3)


def test_r1_planted_control_runs_r1s_pipeline(monkeypatch):
    """PCr/PCgr/PCzr: the planted configuration added to R1's grid reuses the split's cached picks (no new draw of p*)
    and is tuned, as a candidate of R1's paper-like sub-grid but not part of its unit, by R1's own pipeline."""
    p = dict(PRESETS["smoke"], n_seeds=1, n_sources=6, n_dev_sources=8, n_samples=4, n_oracle=3, tasks=("A",),
             utilities=("chrf",), n_planted_refs=4)
    st = run_study(p, show_progress=False)
    r1 = st.r1(r1_configs((0.0, 1.0), (1.0,), (0.0,)))
    d = st.splits[(st.seeds[0], "A", "dev")]
    assert d.n_planted == 4 and "chrf" in d.planted
    import icml26.mbr.experiments as ex

    def no_new_draw(*a, **k):
        raise AssertionError("with_planted drew p* again instead of the split's cached picks")
    monkeypatch.setattr(ex, "bayes_selection", no_new_draw)
    rp = r1.with_planted(4)
    s = st.seeds[0]
    assert rp.configs[-1] == PLANTED and rp.mbr_config == R1_MBR_CONFIG and rp.mbr == r1.mbr
    assert np.array_equal(rp.selections[(s, "A", "test", "chrf")][-1], st.splits[(s, "A", "test")].planted["chrf"])
    assert np.array_equal(rp.selections[(s, "A", "test", "chrf")][:-1], r1.selections[(s, "A", "test", "chrf")])
    paper = channel_subset(rp.configs, "paper", rp.mbr_config)
    assert len(rp.configs) - 1 in paper and len(rp.configs) - 1 not in paper_grid(rp.configs)
    # a dev signal that prefers the plant: R1's tuning picks it, and its z-gain is read in R1's own unit
    dev = {k: np.where(np.arange(len(v)) == len(v) - 1, 1.0, 0.0) for k, v in rp.dev.items()}
    rp2 = dataclasses.replace(rp, dev=dev)
    assert rp2.tuned(s, "A", "chrf") == len(rp.configs) - 1 and rp2.tuned(s, "A", "chrf", "paper") == len(rp.configs) - 1
    z = z_gains(rp2, [("A", "chrf")], "tuned")[(s, "A", "chrf")]
    assert z == pytest.approx(z_gain(rp.test[(s, "A", "chrf")], len(rp.configs) - 1, rp.mbr, paper_grid(r1.configs)))
