"""Contract v3 of the claims ledger (DESIGN.md; issue "Claims contract v3"): each rule has a test here
that fails without it. Verdicts read from intervals, Student-t intervals, power before a negative
verdict, declarations that carry the paper's words and their links, convergence, full results glued
into the prose, declaration changes, the v3 scorecard and results JSON, timing claims, the reader's page."""
import json
import math

import nbformat
import numpy as np
import pytest
from scipy import stats as scipy_stats

import icml26
from icml26 import checks
from icml26.chapter import Chapter
from icml26.convergence import TrainingCurve, tail_improvement
from icml26.ledger import (INCONCLUSIVE, NOT_REACHED, NOT_REPRODUCED, REPRODUCED, declaration_changes, normalize_claim,
                           tally)
from icml26.timing import BestTimes, interleaved_best, speed_ratio

PRESETS = {"smoke": {"n": 1}, "book": {"n": 2}, "full": {"n": 3}}


def _chapter(scale="book", slug="test-v3"):
    return Chapter(slug, scale=scale, seed=0, presets=PRESETS, title="Contract v3")


def _paper(ch, id, check=None, holds_at=(), **links):
    return ch.declare(id, f"claim {id}", kind="paper", paper="> 0", source="abstract", words="A outperforms B",
                      check=check or checks.at_least(0.0), holds_at=holds_at, **links)


def _check(ch, id, check=None, holds_at=()):
    return ch.declare(id, f"check {id}", kind="check", paper="-", source="ours", check=check or checks.at_least(0.0),
                      holds_at=holds_at)


# -- 1. verdicts from the interval ------------------------------------------------------------------------
@pytest.mark.parametrize("check, interval, position", [
    (checks.at_least(0.0), (0.1, 0.3), "inside"), (checks.at_least(0.0), (-0.1, 0.3), "straddles"),
    (checks.at_least(0.0), (-0.3, -0.1), "outside"), (checks.at_most(1.0), (0.2, 1.0), "inside"),
    (checks.between(0, 1), (-0.5, 0.5), "straddles"), (checks.between(0, 1), (1.5, 2.0), "outside"),
    (checks.close_to(1.0, atol=0.1), (0.95, 1.05), "inside"), (checks.at_least(0.0), (float("nan"), 1.0), "undefined"),
])
def test_a_region_places_an_interval(check, interval, position):
    assert check.position(*interval) == position


def test_the_verdict_is_read_from_the_whole_interval_not_the_mean():
    ch = _chapter()
    for id in ("inside", "straddles", "outside"):
        _paper(ch, id)
    # the mean of each is > 0, so v2 (a test on the mean) called all three reproduced
    assert ch.measure("inside", icml26.over_seeds([0.30, 0.35, 0.40])).status == REPRODUCED
    straddles = ch.measure("straddles", icml26.over_seeds([0.5, -0.3, 0.1]))
    assert straddles.status == INCONCLUSIVE and "straddles" in straddles.reason
    outside = ch.measure("outside", icml26.over_seeds([-0.5, -0.4, -0.45]))
    assert outside.status == INCONCLUSIVE and "no positive control" in outside.reason


# -- 2. honest intervals --------------------------------------------------------------------------------
@pytest.mark.parametrize("n, t975", [(2, 12.706205), (3, 4.302653), (5, 2.776445), (9, 2.306004)])
def test_fewer_than_ten_values_get_a_student_t_interval(n, t975):
    values = np.linspace(0.0, 1.0, n)
    s = icml26.over_seeds(values)
    sem = values.std(ddof=1) / math.sqrt(n)
    assert s.method == "t" and s.sem == pytest.approx(sem)
    assert s.ci_high - s.mean == pytest.approx(t975 * sem, rel=1e-5) and s.mean - s.ci_low == pytest.approx(t975 * sem, rel=1e-5)
    assert scipy_stats.t.ppf(0.975, n - 1) == pytest.approx(t975, rel=1e-6)
    if n == 3:  # a percentile bootstrap of 3 values never leaves their min-max; the t interval does
        assert s.ci_low < values.min() and s.ci_high > values.max()


def test_the_interval_is_student_t_at_every_n_and_the_table_shows_n_and_method():
    s = icml26.over_seeds(np.arange(12.0))
    half = scipy_stats.t.ppf(0.975, 11) * s.sem
    assert s.method == "t" and (s.ci_low, s.ci_high) == pytest.approx((s.mean - half, s.mean + half))
    assert "(n=12, t)" in s.text() and s.to_json()["interval"] == "t"
    from icml26.stats import bootstrap_interval

    boot = bootstrap_interval(np.arange(12.0))  # named, for many seeds of a skewed metric; narrower than t
    assert boot.method == "bootstrap" and boot.ci_high - boot.ci_low < s.ci_high - s.ci_low
    with pytest.raises(ValueError, match=">= 10"):
        bootstrap_interval([1.0, 2.0, 3.0])

def test_a_claim_over_several_settings_is_read_by_intersection_union():
    """"In every setting": the returned interval is inside the region iff every setting's is, and wholly outside
    iff some setting's is; a tight setting wholly below beats a wide straddling one with a lower lower end."""
    from icml26.stats import intersection_union

    s = {"inside": icml26.over_seeds([0.50, 0.52, 0.51]), "wide": icml26.over_seeds([-0.9, 0.4, 0.8]),
         "below": icml26.over_seeds([-0.10, -0.11, -0.12])}
    assert s["wide"].ci_low < s["below"].ci_low < s["below"].ci_high < 0.0 < s["wide"].ci_high
    assert intersection_union(s, 0.0)[0] == "below"                               # some setting wholly outside decides
    assert intersection_union(s)[0] == "wide"                                      # no bound: the lowest lower end
    assert intersection_union({k: s[k] for k in ("inside", "wide")}, 0.0)[0] == "wide"  # a straddle: inconclusive
    key, summary = intersection_union({"inside": s["inside"]}, 0.0)
    assert key == "inside" and summary.ci_low > 0.0                                # every interval inside
    assert intersection_union(s, 0.3, upper=True)[0] == "inside"                   # at most 0.3: wholly above decides
    assert intersection_union({k: s[k] for k in ("wide", "below")}, upper=True)[0] == "wide"
    nan = icml26.over_seeds([0.5, float("nan"), 0.5])
    assert intersection_union({**s, "nan": nan}, 0.0)[0] == "nan"                  # an undefined setting first
    with pytest.raises(ValueError, match="at least one"):
        intersection_union({})



# -- 3. declarations carry the words, the region, the links; power before a negative verdict ------------
def test_not_reproduced_needs_a_reproduced_positive_control_and_fidelity_checks():
    ch = _chapter()
    _paper(ch, "C1", positive_control="P", fidelity=("F",))
    _paper(ch, "C2", positive_control="Pbad", fidelity=("F",))
    _paper(ch, "C3", positive_control="P", fidelity=("Fbad",))
    _paper(ch, "C4", positive_control="P")
    _check(ch, "P"), _check(ch, "Pbad"), _check(ch, "F"), _check(ch, "Fbad")
    ch.measure("P", icml26.over_seeds([0.4, 0.5, 0.6]))     # the planted effect is found
    ch.measure("Pbad", icml26.over_seeds([-0.1, 0.2, 0.0]))  # the pipeline could not find a planted effect
    ch.measure("F", 1.0)
    ch.measure("Fbad", -1.0)
    below = [-0.5, -0.4, -0.45]
    assert ch.measure("C1", icml26.over_seeds(below)).status == NOT_REPRODUCED
    c2 = ch.measure("C2", icml26.over_seeds(below))
    assert c2.status == INCONCLUSIVE and "positive control Pbad is inconclusive" in c2.reason
    c3 = ch.measure("C3", icml26.over_seeds(below))
    assert c3.status == INCONCLUSIVE and "fidelity check Fbad is not reproduced" in c3.reason
    c4 = ch.measure("C4", icml26.over_seeds(below))
    assert c4.status == INCONCLUSIVE and "no fidelity check linked" in c4.reason


def test_a_positive_control_shows_power_only_at_as_many_values_as_the_claim_or_fewer():
    """Power grows with n: a control measured on more values than the claim says nothing of the claim's power;
    one on fewer or as many does (a sign test's claim n, its untied pairs, may differ from its control's)."""
    ch = _chapter()
    for id in ("more", "same", "fewer"):
        _paper(ch, f"C{id}", positive_control=f"P{id}", fidelity="F")
        _check(ch, f"P{id}")
    _check(ch, "F")
    ch.measure("F", 1.0)
    ch.measure("Pmore", icml26.over_seeds([0.4, 0.5, 0.6, 0.5, 0.45]))
    ch.measure("Psame", icml26.over_seeds([0.4, 0.5, 0.6]))
    ch.measure("Pfewer", icml26.over_seeds([0.45, 0.5]))
    below = [-0.5, -0.4, -0.45]
    more = ch.measure("Cmore", icml26.over_seeds(below))
    assert more.status == INCONCLUSIVE and "ran on 5 values, the claim on 3" in more.reason
    assert ch.measure("Csame", icml26.over_seeds(below)).status == NOT_REPRODUCED
    assert ch.measure("Cfewer", icml26.over_seeds(below)).status == NOT_REPRODUCED


def test_a_negative_verdict_waits_for_its_controls_measured_later():
    ch = _chapter()
    _paper(ch, "C1", positive_control="P", fidelity="F")
    _check(ch, "P"), _check(ch, "F")
    assert ch.measure("C1", -1.0).status == INCONCLUSIVE  # its controls are not measured yet
    ch.measure("P", 1.0)
    ch.measure("F", 1.0)
    assert ch.ledger.claims[0].status == NOT_REPRODUCED


def test_a_negative_control_is_the_claims_test_failing_on_a_null():
    """`fails(check)`: the claim's own test does not pass on the control. A true null over seeds straddles
    the claim's boundary, so it comes out reproduced (the test discriminates); a control on which the test
    passes makes the claim inconclusive."""
    ch = _chapter()
    _paper(ch, "C1", negative_control="N1")
    _paper(ch, "C2", negative_control="N2")
    ch.declare("N1", "shuffled labels: the test must fail", kind="check", paper="-", source="ours",
               check=checks.fails(checks.at_least(0.0)), holds_at=("book",))
    ch.declare("N2", "a control the test passes on", kind="check", paper="-", source="ours",
               check=checks.fails(checks.at_least(0.0)), holds_at=())
    c1 = ch.measure("C1", icml26.over_seeds([0.03, 0.02, 0.025]))
    assert c1.status == INCONCLUSIVE and "N1 is not measured" in c1.reason  # waits for its control
    null = ch.measure("N1", icml26.over_seeds([0.004, 0.008, 0.003]))  # [-0.002, 0.012]: straddles 0
    assert null.status == REPRODUCED and not null.failed_here and c1.status == REPRODUCED
    ch.measure("C2", 0.3)
    assert ch.measure("N2", 0.25).status == NOT_REPRODUCED
    c2 = ch.ledger.claims[1]
    assert c2.status == INCONCLUSIVE and "passed on its negative control N2" in c2.reason
    assert checks.fails(checks.at_least(0.0)).describe() == "the test (>= 0) fails"


def test_links_are_judged_by_their_verdicts_without_cycles_or_order_dependence():
    ch = _chapter()
    ch.declare("T", "3x faster", kind="paper", paper=">= 3x", source="-", check=checks.at_least(3.0), holds_at=(),
               timing=True)
    _paper(ch, "C1", positive_control="T", fidelity="F")
    _paper(ch, "C2", negative_control="N", positive_control="P", fidelity="F")
    _check(ch, "F"), _check(ch, "P")
    ch.declare("N", "null", kind="check", paper="-", source="ours", check=checks.fails(checks.at_least(0.0)), holds_at=())
    ch.measure("F", 1.0), ch.measure("P", 1.0)
    # a positive control inside its region on the rounds but whose rounds straddle is inconclusive: no power
    straddling = speed_ratio(_times([{"a": 1.0, "b": 4.0}, {"a": 1.0, "b": 2.0}, {"a": 1.0, "b": 4.0}]), "b", "a")
    assert ch.measure("T", straddling).status == INCONCLUSIVE
    c1 = ch.measure("C1", -1.0)
    assert c1.status == INCONCLUSIVE and "positive control T is inconclusive" in c1.reason
    c2 = ch.measure("C2", 1.0)
    ch.not_reached("N", "no shuffled run at this scale")  # after the claim: the claim is judged again
    assert c2.status == INCONCLUSIVE and "negative control N is not reached" in c2.reason
    cyc = _chapter()
    _paper(cyc, "A", positive_control="B")
    _paper(cyc, "B", positive_control="A")
    with pytest.raises(ValueError, match="cycle: A -> B -> A"):
        cyc.measure("A", 1.0)


def test_no_negative_verdict_from_one_seed_an_infinity_or_a_type_error():
    ch = _chapter("smoke")
    _paper(ch, "one", positive_control="P", fidelity="F")
    _check(ch, "P"), _check(ch, "F")
    ch.measure("P", 1.0), ch.measure("F", 1.0)
    one = ch.measure("one", icml26.over_seeds([-0.3]))
    assert one.status == INCONCLUSIVE and "one seed" in one.reason
    _ = _chapter("smoke")
    _paper(_, "inf", check=checks.at_least(3.0))
    _paper(_, "s", check=checks.at_least(1.0))
    _check(_, "b", checks.is_true())
    assert _.measure("inf", float("inf")).status == INCONCLUSIVE  # v2 never passed an infinity; v3 neither
    with pytest.raises(TypeError, match="cannot judge '2.0'"):
        _.measure("s", "2.0")
    with pytest.raises(TypeError, match="cannot judge 1"):
        _.measure("b", 1)


def test_a_measurement_marked_untestable_is_recorded_and_inconclusive_on_either_side_of_the_region():
    """A gate that says the stand-in cannot express the claim (a bound that binds nowhere in the range run)
    is an inconclusive verdict with the measured value, never 'not reached' (which says nothing was measured)
    and never a pass or a fail; the same values measured without it are judged."""
    ch = _chapter()
    _check(ch, "P"), _check(ch, "F"), _paper(ch, "typed")
    for gated in (True, False):
        _paper(ch, f"inside{gated}"), _paper(ch, f"outside{gated}", positive_control="P", fidelity="F")
    ch.measure("P", 1.0), ch.measure("F", 1.0)
    for id, values, judged in (("inside", [0.3, 0.35, 0.4], REPRODUCED), ("outside", [-0.5, -0.4, -0.45], NOT_REPRODUCED)):
        claim = ch.measure(f"{id}True", icml26.over_seeds(values), untestable="the bound's floor exceeds its T-term")
        assert claim.status == INCONCLUSIVE and claim.reason == "untestable here: the bound's floor exceeds its T-term"
        assert claim.measured_text != "n/a" and claim.interval is not None
        assert claim.to_json()["reason"].startswith("untestable here")
        assert ch.measure(f"{id}False", icml26.over_seeds(values)).status == judged
    with pytest.raises(TypeError, match="untestable is a reason"):
        ch.measure("typed", 1.0, untestable=True)


def test_declarations_are_checked_for_links_bounds_and_words():
    ch = _chapter()
    with pytest.raises(ValueError, match="cannot be reached"):
        _paper(ch, "R", check=checks.at_least(1.2), bounds=(0, 1))
    with pytest.raises(ValueError, match="cannot fail"):
        _paper(ch, "U", check=checks.at_least(0.0), bounds=(0, 1))
    with pytest.raises(ValueError, match="own control"):
        _paper(ch, "S", positive_control="S")
    with pytest.raises(TypeError, match="words"):
        ch.declare("W", "w", kind="paper", paper="1", source="-", check=checks.at_least(0), holds_at=(), words=3)
    _paper(ch, "C1", positive_control="missing")
    with pytest.raises(KeyError, match="positive control 'missing' was never declared"):
        ch.measure("C1", 1.0)


def test_the_paper_card_shows_words_region_controls_and_scales():
    ch = _chapter()
    _paper(ch, "C1", positive_control="P", negative_control="N", fidelity="F", curves="fit", holds_at=("book",))
    _check(ch, "P"), _check(ch, "N"), _check(ch, "F")
    card = ch.paper_card(show_changes=False)
    assert card.loc["C1", "paper's words"] == "“A outperforms B”" and card.loc["C1", "region"] == ">= 0"
    assert card.loc["C1", "controls"] == "+ P; - N; fidelity F; curves fit" and card.loc["C1", "must hold at"] == "book"


# -- 4. convergence --------------------------------------------------------------------------------------
def test_the_convergence_rule():
    steps = np.arange(1, 101)
    assert tail_improvement(steps, 1 + np.exp(-steps / 10)).converged  # flat over the last fifth
    assert not tail_improvement(steps, 10 - 0.05 * steps).converged  # still falling 1 per fifth
    assert not tail_improvement(steps, 0.05 * steps, minimize=False).converged  # a metric still rising
    rising = tail_improvement(steps, 1 + 0.02 * steps)  # a loss going up at the end: not converged either
    assert rising.worsening and not rising.converged
    rng = np.random.default_rng(0)
    flat = [tail_improvement(steps, 1 + 0.02 * rng.standard_normal(100)).converged for _ in range(200)]
    assert np.mean(flat) > 0.95  # noise is not improvement (two standard errors)
    near_zero = 1e-4 * np.exp(-steps / 40)
    assert not tail_improvement(steps, near_zero).converged  # 1 % of a level near zero is nothing ...
    assert tail_improvement(steps, near_zero, atol=1e-5).converged  # ... atol, in the metric's units
    assert not tail_improvement(steps, np.r_[np.ones(99), np.nan]).converged
    with pytest.raises(ValueError, match="at least 6 points"):
        tail_improvement([1, 2, 3], [1, 1, 1])
    with pytest.raises(ValueError, match="increase"):
        tail_improvement([1, 2, 2, 3, 4, 5], [1] * 6)


def test_an_unconverged_model_caps_its_claims_at_inconclusive(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_RESULTS_DIR", str(tmp_path))
    ch = _chapter()
    _paper(ch, "C1", curves="fit", holds_at=("book",))
    _paper(ch, "C2", curves="never-recorded")
    steps = np.arange(1, 51)
    curve = ch.curve("fit", steps, [10 - 0.1 * steps, 5 - 0.0 * steps], label="validation loss")
    assert not curve.converged and "1 of 2 single seeds pass" in curve.describe()  # the seed mean is judged
    c1 = ch.measure("C1", 0.5)  # inside its region, yet not trustworthy
    assert c1.status == INCONCLUSIVE and "not converged" in c1.reason and c1.failed_here
    c2 = ch.measure("C2", 0.5)
    assert c2.status == INCONCLUSIVE and "curve never-recorded not recorded" in c2.reason
    ax = curve.plot()
    assert ax.get_xlabel() == "training step" and ax.get_ylabel() == "validation loss" and "NOT converged" in ax.get_title()
    with pytest.raises(icml26.ClaimsIncomplete, match="never-recorded"):  # a linked curve must be recorded
        ch.finish(show=False)
    record = json.loads((tmp_path / "book" / "test-v3.json").read_text())
    assert record["curves"][0]["name"] == "fit" and record["curves"][0]["converged"] is False
    with pytest.raises(ValueError, match="one value per step"):
        TrainingCurve.build("bad", [1, 2, 3], [[1, 2]])


# -- 5. the published full results in the prose ----------------------------------------------------------
def _publish(root, slug, record):
    (root / "results" / "full").mkdir(parents=True, exist_ok=True)
    (root / "results" / "full" / f"{slug}.json").write_text(json.dumps(record))


def _root(tmp_path, monkeypatch, slug="test-v3"):
    import icml26.paths

    root = tmp_path / "repo"
    (root / "notebooks").mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1")]
    nbformat.write(nb, root / "notebooks" / f"{slug}.ipynb")
    monkeypatch.setattr(icml26.paths, "repo_root", lambda: root)
    monkeypatch.setattr("icml26.chapter.notebooks_dir", lambda: root / "notebooks")
    return root


def _full_record(key, claims, glued=None):
    return {"contract": 3, "scale": "full", "preset_scale": "full", "cache_key": key, "counts": {}, "claims": claims,
            "glued": glued or {}, "git": {"commit": "0123456789abc"}, "timings": {"total": 1234.0}}


def _claim_json(id, status, measured_text, kind="paper", reason=""):
    return {"id": id, "kind": kind, "status": status, "measured_text": measured_text, "reason": reason,
            "statement": id, "comparison": ">= 0", "holds_at": ["book", "full"], "paper_value": "p", "paper_source": "s"}


def test_glue_full_glues_the_current_published_run_and_says_when_there_is_none(tmp_path, monkeypatch):
    from icml26.cachekey import chapter_key

    root = _root(tmp_path, monkeypatch)
    ch = _chapter()
    _paper(ch, "C1")
    assert ch.glue_full() is None and ch.glued["full_C1_measured"] == "*(no `full` run published)*"
    key = chapter_key(root / "notebooks" / "test-v3.ipynb", "full")
    _publish(root, "test-v3", _full_record("an-old-key", [_claim_json("C1", "reproduced", "0.5")]))
    ch2 = _chapter()
    _paper(ch2, "C1")
    assert ch2.glue_full() is None and "stale" in ch2.glued["full_C1_verdict"]  # a stale number is never shown
    _publish(root, "test-v3", _full_record(key, [_claim_json("C1", "not reproduced", "-0.2 ± 0.01 [-0.25, -0.15] (n=5, t)")],
                                           glued={"gap": 0.123}))
    ch3 = _chapter()
    _paper(ch3, "C1")
    record = ch3.glue_full()
    assert record is not None and record["state"] == "current"
    assert ch3.glued["full_C1_verdict"] == "not reproduced" and ch3.glued["full_C1_measured"].startswith("-0.2")
    assert ch3.glued["full_gap"] == 0.123
    assert "reproduced 0 of 1 paper claims (1 not reproduced" in ch3.glued["full_summary"] and "0123456789" in ch3.glued["full_summary"]


def test_the_typed_number_rule(tmp_path):
    from icml26.prose import typed_numbers

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("ch.declare('C1', 's', kind='paper', paper='SROCC 0.954', words='from 0.30 to 0.60', "
                                  "source='abstract', check=icml26.at_least(0), holds_at=())"),
        nbformat.v4.new_markdown_cell(
            "The paper reports 0.954 and 0.30 (allowed: the paper card). We measured 0.731 at full.\n"
            "Glued: {glue:text}`gap:.3f`, math $x = 0.5$, code `lr=0.25`, Sec. 4.2, Table 3.1, arXiv 2605.12494.\n"
            "A constant of the method, 0.999 <!-- number-ok: Adam's beta2 -->\n"
            "```\n1.5 in a code block\n```\n"),
    ]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    assert [t.number for t in typed_numbers(path)] == ["0.731"]


# -- 6. declaration changes since the published full run -------------------------------------------------
def test_declaration_changes_show_what_changed_and_mark_narrowing():
    ch = _chapter()
    _paper(ch, "C1", check=checks.at_least(-0.1), holds_at=("full",))  # was >= 0 at book and full: narrowed twice
    _paper(ch, "C2", check=checks.at_least(0.1), holds_at=("book", "full"))  # stricter: changed, not narrowed
    _paper(ch, "C4")  # new
    published = {"claims": [
        {"id": "C1", "kind": "paper", "statement": "C1", "comparison": ">= 0", "holds_at": ["book", "full"]},  # a v2 file
        {"id": "C2", "kind": "paper", "statement": "C2", "declared": {"kind": "paper", "test": ">= 0",
                                                                        "region": {"check": "at_least", "bound": 0.0},
                                                                        "holds_at": ["book", "full"]}},
        {"id": "C3", "kind": "paper", "statement": "C3", "comparison": ">= 0", "holds_at": ["full"]},  # removed
    ]}
    changes = {(c.id, c.what): c for c in declaration_changes(ch.ledger.claims, published)}
    assert changes[("C1", "region")].narrowed and changes[("C1", "region")].old == ">= 0"
    assert changes[("C1", "holds at")].narrowed and changes[("C1", "holds at")].new == "full"
    assert not changes[("C2", "region")].narrowed and ("C2", "holds at") not in changes
    assert changes[("C3", "claim")].narrowed and changes[("C3", "claim")].new == "(removed)"
    assert not changes[("C4", "claim")].narrowed


def test_changes_of_links_seeds_and_timing_are_shown_and_weakening_is_narrowing():
    ch = _chapter()
    ch.declare("C1", "c", kind="paper", paper="-", source="-", check=checks.at_least(0.1000001), holds_at=("book",),
               fidelity=("F1",), min_seeds=3, timing=True, timing_tolerance=0.5)
    _check(ch, "F1")
    old = {"kind": "paper", "test": ">= 0.1", "region": {"check": "at_least", "bound": 0.1}, "holds_at": ["book"],
           "positive_control": "P", "negative_control": None, "fidelity": ["F1", "F2"], "curves": [], "min_seeds": 5,
           "timing": True, "timing_tolerance": 0.25, "words": "", "bounds": None}
    published = {"claims": [{"id": "C1", "kind": "paper", "declared": old}, {"id": "F1", "kind": "check", "comparison": ">= 0",
                                                                            "holds_at": []}]}
    changes = {c.what: c for c in declaration_changes(ch.ledger.claims, published) if c.id == "C1"}
    assert "0.1000001" in changes["region"].new and not changes["region"].narrowed  # seen though ':g' prints both alike
    assert changes["positive control"].narrowed and changes["fidelity"].narrowed and changes["fidelity"].new == "F1"
    assert changes["min seeds"].narrowed and changes["timing tolerance"].narrowed
    assert "negative control" not in changes and "curves" not in changes


def test_the_paper_card_shows_the_changes_table(tmp_path, monkeypatch, capsys):
    root = _root(tmp_path, monkeypatch)
    _publish(root, "test-v3", _full_record("k", [_claim_json("C1", "reproduced", "0.5")]))
    ch = _chapter()
    _paper(ch, "C1", check=checks.at_least(-1.0), holds_at=("book", "full"))
    changes = ch.declaration_changes()
    assert list(changes["what"]) == ["region"] and bool(changes["narrowed"].iloc[0])


# -- 7. legacy results, the scorecard and the CLI headline -----------------------------------------------
def test_results_from_before_v3_read_as_inconclusive_never_silently_not_reproduced():
    assert normalize_claim({"kind": "paper", "status": "FAILED", "measured": 0.2}, None)["status"] == INCONCLUSIVE
    assert normalize_claim({"kind": "derived", "status": "not reproduced", "measured": 0.2}, 2)["status"] == INCONCLUSIVE
    assert normalize_claim({"kind": "check", "status": "FAILED", "measured": 0.2}, 2)["status"] == NOT_REPRODUCED
    reached = normalize_claim({"kind": "paper", "status": "FAILED", "measured_text": "n/a", "note": "needs a GPU"}, 2)
    assert reached["status"] == NOT_REACHED and reached["failed_here"]
    assert normalize_claim({"kind": "paper", "status": "not reproduced"}, 3)["status"] == NOT_REPRODUCED  # v3 as written
    # a v2 "reproduced" was a test on the mean: judged again from the Student-t interval of its seeds
    straddling = {"kind": "paper", "status": "reproduced", "comparison": ">= 0.9",
                  "spread": {"values": [0.95, 0.93, 0.91]}}
    again = normalize_claim(straddling, 2)
    assert again["status"] == INCONCLUSIVE and "Student-t interval" in again["reason"] and again["legacy"]
    solid = {**straddling, "spread": {"values": [0.95, 0.951, 0.952]}}
    assert normalize_claim(solid, 2)["status"] == REPRODUCED


def test_the_scorecard_headline_counts_four_verdicts_at_current_full_runs(tmp_path):
    import shutil

    from icml26.cachekey import chapter_key
    from icml26.scorecard import headline, render_markdown, summary_rows

    from toy_chapter import ROOT

    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for slug in ("lion", "mbr"):
        shutil.copy2(ROOT / "notebooks" / "lion.ipynb", notebooks / f"{slug}.ipynb")
    claims = [_claim_json("A", "reproduced", "1", reason=""), _claim_json("B", "not reproduced", "-1"),
              _claim_json("C", "inconclusive", "0", reason="the interval straddles"), _claim_json("D", "not reached", "n/a"),
              {**_claim_json("E", "reproduced", "1"), "positive_control": "P"}, _claim_json("P", "reproduced", "1", kind="check")]
    full = {"lion": _full_record(chapter_key(notebooks / "lion.ipynb", "full"), claims),
            "mbr": _full_record("stale-key", claims)}
    book = {"lion": {"contract": 3, "status": "ok", "claims": claims}}
    rows = summary_rows(book, {"lion", "mbr"}, full_records=full, notebooks_dir=notebooks)
    text = headline(rows, "book")
    assert "2 / 1 / 1 / 1 of 5 over 1 current `full` runs (1 stale, not counted)" in text
    assert "at `book`: 2 / 1 / 1 / 1 of 5" in text and "our own checks: 1 of 1 passed" in text
    lion = next(r for r in rows if r["slug"] == "lion")
    assert lion["paper"]["with_positive_control"] == 1 and lion["full"]["state"] == "current"
    page = render_markdown(book, "book", {"lion", "mbr"}, full_records=full, notebooks_dir=notebooks)
    assert "(**stale**)" in page and "**inconclusive**: the interval straddles" in page


def test_make_book_uses_every_core_by_default():
    from icml26.cli import build_parser, default_jobs

    assert default_jobs() == min(8, max(1, len(__import__("os").sched_getaffinity(0))))
    from toy_chapter import ROOT

    makefile = (ROOT / "Makefile").read_text()
    assert "JOBS ?=\n" in makefile and "--jobs 1" not in makefile
    assert build_parser().parse_args(["book"]).jobs is None  # main() fills in default_jobs()


# -- 9. the results JSON speaks v3 -----------------------------------------------------------------------
def test_the_results_json_speaks_v3(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_RESULTS_DIR", str(tmp_path))
    ch = _chapter()
    _paper(ch, "C1", positive_control="P", negative_control="N", fidelity="F", holds_at=("book",))
    _check(ch, "P"), _check(ch, "N", checks.at_most(0.0)), _check(ch, "F")
    for id, v in (("P", 1.0), ("N", 0.0), ("F", 1.0)):
        ch.measure(id, v)
    ch.measure("C1", icml26.over_seeds([0.2, 0.3, 0.25]))
    ch.finish(show=False)
    record = json.loads((tmp_path / "book" / "test-v3.json").read_text())
    c1 = record["claims"][0]
    assert record["contract"] == 3 and c1["status"] == "reproduced" and c1["reason"] == ""
    assert (c1["words"], c1["positive_control"], c1["negative_control"], c1["fidelity"]) == ("A outperforms B", "P", "N", ["F"])
    assert c1["declared"]["region"] == {"check": "at_least", "bound": 0.0} and c1["declared"]["holds_at"] == ["book"]
    assert {"n", "mean", "sem", "ci_low", "ci_high", "values"} <= set(c1["spread"])
    assert c1["interval"] == pytest.approx([c1["spread"]["ci_low"], c1["spread"]["ci_high"]])
    assert tally(record["claims"])["reproduced"] == 4


# -- 10. timing claims ------------------------------------------------------------------------------------
def _times(rounds):
    best = BestTimes({k: min(r[k] for r in rounds) for k in rounds[0]})
    best.rounds = rounds
    return best


def test_a_timing_claim_with_disagreeing_rounds_is_inconclusive_and_never_breaks_a_build(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_RESULTS_DIR", str(tmp_path))
    ch = _chapter()
    for id in ("steady", "holds", "loaded", "slow", "two", "float"):
        ch.declare(id, "ours >= 3x faster", kind="paper", paper=">= 3x", source="abstract", check=checks.at_least(3.0),
                   holds_at=("book",), timing=True, timing_tolerance=0.5, positive_control="P", fidelity="F")
    _paper(ch, "plain")
    _check(ch, "P"), _check(ch, "F")
    ch.measure("P", 1.0), ch.measure("F", 1.0)
    steady = _times([{"ours": 1.0, "peer": 4.0}, {"ours": 1.1, "peer": 4.2}, {"ours": 1.0, "peer": 4.1}])
    ratio = speed_ratio(steady, "peer", "ours")
    assert ratio.value == pytest.approx(4.0) and len(ratio.per_round) == 3
    assert ch.measure("steady", ratio).status == REPRODUCED
    # every round above 3x, though the rounds disagree: the claim holds in each of them
    holds = _times([{"ours": 1.0, "peer": 4.0}, {"ours": 1.0, "peer": 9.0}, {"ours": 1.0, "peer": 3.5}, {"ours": 1.0, "peer": 8.0}])
    assert ch.measure("holds", speed_ratio(holds, "peer", "ours")).status == REPRODUCED
    loaded = _times([{"ours": 1.0, "peer": 1.2}, {"ours": 1.0, "peer": 2.5}, {"ours": 1.0, "peer": 1.3}, {"ours": 1.0, "peer": 2.9}])
    claim = ch.measure("loaded", speed_ratio(loaded, "peer", "ours"))
    assert claim.status == INCONCLUSIVE and "rounds disagree" in claim.reason and not claim.failed_here
    slow = _times([{"ours": 1.0, "peer": 1.2}, {"ours": 1.0, "peer": 1.25}, {"ours": 1.0, "peer": 1.22}])
    claim = ch.measure("slow", speed_ratio(slow, "peer", "ours"))
    assert claim.status == NOT_REPRODUCED and not claim.failed_here  # a verdict, but never a broken build
    two = ch.measure("two", speed_ratio(_times([{"ours": 1.0, "peer": 4.0}] * 2), "peer", "ours"))
    assert two.status == INCONCLUSIVE and "at least 3" in two.reason
    assert ch.measure("float", 4.0).status == INCONCLUSIVE  # a timing without its rounds decides nothing
    with pytest.raises(ValueError, match="timing=True"):
        ch.measure("plain", ratio)
    ch.not_reached("plain", "-")
    ch.finish(show=False)  # no ClaimFailed


def test_interleaved_best_keeps_every_round_after_a_warm_up():
    calls = []
    best = interleaved_best({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, rounds=4)
    assert len(best.rounds) == 4 and best["a"] == min(r["a"] for r in best.rounds)
    assert calls == ["a", "b"] * 5  # one untimed warm-up round, then four timed ones
    with pytest.raises(ValueError, match="per-round"):
        speed_ratio({"a": 1.0, "b": 2.0}, "a", "b")


# -- 11. the reader's page -------------------------------------------------------------------------------
def test_a_complete_run_with_flagged_claims_is_staged_without_exception_banners(tmp_path):
    from icml26.bookbuild import PAPERMILL_ERROR_TAG, stage_notebook

    nb = nbformat.v4.new_notebook()
    banner = nbformat.v4.new_markdown_cell('<span style="color:red">An Exception was encountered at In [19]</span>')
    banner.metadata["tags"] = [PAPERMILL_ERROR_TAG]
    declare = nbformat.v4.new_code_cell("ch.declare('C1', 'x', kind='paper', paper='1', source='-', check=c, holds_at=())\n"
                                        "ch.paper_card()")
    finish = nbformat.v4.new_code_cell("ch.finish()")
    finish.outputs = [nbformat.v4.new_output("display_data", data={"text/plain": "the claims table"}),
                      nbformat.v4.new_output("error", ename="ClaimFailed", traceback=["..."],
                                             evalue="1 claim(s) not reproduced at scale 'book':\n  C1: x -- inconclusive")]
    nb.cells = [banner, nbformat.v4.new_markdown_cell("# Title"), declare, finish]
    source, target = tmp_path / "in.ipynb", tmp_path / "out.ipynb"
    nbformat.write(nb, source)
    stage_notebook(source, target, failure="ClaimFailed: ...", claims_failed=True)
    staged = nbformat.read(target, as_version=4)
    text = json.dumps(staged)
    assert "An Exception was encountered" not in text and '"ename": "ClaimFailed"' not in text
    assert "the claims table" in text and "flagged: C1" in staged.cells[1].source
    assert "hide-input" in staged.cells[2].metadata["tags"]  # the paper card's code is collapsed


def test_the_scorecard_tells_a_crash_from_flagged_claims():
    from icml26.scorecard import chapter_status

    flagged = {"status": "failed", "contract": 3, "claims": [{"kind": "paper", "status": "inconclusive", "failed_here": True}]}
    assert chapter_status("a", {"a": flagged}, {"a"}, {"a": "failed"}, claims_flagged={"a"}) == "claims flagged"
    assert chapter_status("a", {"a": flagged}, {"a"}, {"a": "failed"}) == "run failed"


def test_glue_full_never_nests_its_own_keys_and_a_full_run_points_at_itself(tmp_path, monkeypatch):
    from icml26.cachekey import chapter_key

    root = _root(tmp_path, monkeypatch)
    key = chapter_key(root / "notebooks" / "test-v3.ipynb", "full")
    _publish(root, "test-v3", _full_record(key, [_claim_json("C1", "reproduced", "0.5")],
                                           glued={"gap": 0.5, "full_C1_measured": "from an older run"}))
    ch = _chapter()
    _paper(ch, "C1")
    ch.glue_full()
    assert ch.glued["full_gap"] == 0.5 and ch.glued["full_C1_measured"] == "0.5"
    assert not any(name.startswith("full_full_") for name in ch.glued)
    at_full = _chapter("full")
    _paper(at_full, "C1")
    assert at_full.glue_full() is None and "this page is the `full` run" in at_full.glued["full_summary"]


def test_the_book_key_covers_the_published_full_run_and_the_full_key_does_not(tmp_path, monkeypatch):
    import icml26.cachekey as cachekey

    root = _root(tmp_path, monkeypatch)
    monkeypatch.setattr(cachekey, "repo_root", lambda: root)
    notebook = root / "notebooks" / "test-v3.ipynb"
    book, full = cachekey.chapter_key(notebook, "book"), cachekey.chapter_key(notebook, "full")
    _publish(root, "test-v3", _full_record(full, []))
    assert cachekey.chapter_key(notebook, "book") != book  # a new full run re-executes the book page (glue_full)
    assert cachekey.chapter_key(notebook, "full") == full  # a full run never makes itself stale
