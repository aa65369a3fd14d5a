"""The chapter runtime: scales, presets, seeding, checks, the claims ledger and its results file."""
import json
import math

import numpy as np
import pytest
import sympy
import torch

import icml26
from icml26 import checks
from icml26.chapter import Chapter
from icml26.ledger import INCONCLUSIVE, NOT_REACHED, NOT_REPRODUCED, REPRODUCED, ClaimFailed
from icml26.scales import ScaleError, resolve_scale, select_preset

PRESETS = {"smoke": {"steps": 1}, "book": {"steps": 10}, "full": {"steps": 100}}


def test_scale_resolution_order(monkeypatch):
    monkeypatch.delenv("ICML26_SCALE", raising=False)
    assert resolve_scale(None) == "book"
    monkeypatch.setenv("ICML26_SCALE", "full")
    assert resolve_scale(None) == "full"
    assert resolve_scale("smoke") == "smoke"  # the papermill parameter wins


@pytest.mark.parametrize("bad", ["huge", "Smoke", "fast"])
def test_unknown_scale_lists_the_valid_ones(bad, monkeypatch):
    with pytest.raises(ScaleError, match="smoke, book, full"):
        resolve_scale(bad)
    monkeypatch.setenv("ICML26_SCALE", bad)
    with pytest.raises(ScaleError):
        resolve_scale(None)


def test_preset_table_must_define_every_scale():
    assert select_preset(PRESETS, "book")["steps"] == 10
    with pytest.raises(ScaleError, match="lacks"):
        select_preset({"smoke": {}, "book": {}}, "smoke")
    with pytest.raises(ScaleError, match="unknown"):
        select_preset({**PRESETS, "huge": {}}, "smoke")
    with pytest.raises(TypeError):
        select_preset(PRESETS, "book")["steps"] = 3  # read-only


def test_a_gpu_variant_applies_only_on_gpu():
    table = {"smoke": {"steps": 1}, "book": {"steps": 10}, "full": {"steps": 100, "gpu": {"steps": 1000}}}
    assert dict(select_preset(table, "full")) == {"steps": 100}
    assert dict(select_preset(table, "full", on_gpu=True)) == {"steps": 1000}
    with pytest.raises(ScaleError, match="unknown key"):
        select_preset({**table, "full": {"steps": 1, "gpu": {"stpes": 2}}}, "full", on_gpu=True)


def test_seed_everything_makes_numpy_torch_python_repeat():
    import random

    def draw():
        rng = icml26.seed_everything(7)
        return random.random(), np.random.rand(), torch.rand(1).item(), rng.normal()

    assert draw() == draw()
    with pytest.raises(ValueError):
        icml26.seed_everything(-1)


def test_device_is_cpu_here_and_can_be_forced(monkeypatch):
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert icml26.device().type == expected
    monkeypatch.setenv("ICML26_DEVICE", "cpu")
    assert icml26.device().type == "cpu"


@pytest.mark.parametrize(
    "check, good, bad",
    [
        (checks.at_most(-0.2), -0.25, -0.1),
        (checks.at_least(2.0), 2.0, 1.99),
        (checks.between(-0.75, -0.3), -0.5, -0.8),
        (checks.close_to(1.0, atol=1e-8), 1.0 + 1e-9, 1.0 + 1e-6),
        (checks.close_to(100.0, rtol=0.01), 100.9, 102.0),
        (checks.equals(sympy.Rational(3, 4)), sympy.Rational(6, 8), sympy.Rational(2, 3)),
        (checks.is_true(), True, False),
    ],
)
def test_checks_decide(check, good, bad):
    assert check.holds(good)
    assert not check.holds(bad)
    assert check.describe()


@pytest.mark.parametrize("check", [checks.at_most(1.0), checks.at_least(-1.0), checks.between(-1, 1), checks.close_to(0.0, atol=1.0)])
def test_nan_and_inf_never_pass(check):
    assert not check.holds(math.nan)
    assert not check.holds(np.float64("nan"))
    assert not check.holds(torch.tensor(float("nan")))
    assert not check.holds(math.inf) or not check.holds(-math.inf)


def test_check_construction_errors():
    with pytest.raises(ValueError):
        checks.between(1, 0)
    with pytest.raises(ValueError):
        checks.close_to(1.0)
    with pytest.raises(TypeError):
        checks.is_true().holds(1.0)


def _chapter(scale="smoke"):
    return Chapter("test-chapter", scale=scale, seed=3, presets=PRESETS, title="A test chapter")


def _declare(ch, id, holds_at, kind="paper", check=None, **kw):
    return ch.declare(id, f"claim {id}", kind=kind, paper="-1/4", source="Thm 1",
                      check=check or checks.at_most(-0.2), holds_at=holds_at, **kw)


def test_verdicts_are_the_same_test_at_every_scale_and_flags_depend_on_declared_scales():
    """v3: the verdict does not depend on the declared scales; a claim declared to hold at this scale that
    is not reproduced is flagged (the run fails on it). Without a positive control, a paper claim outside
    its region is inconclusive, never not reproduced; a check needs no power."""
    ch = _chapter("smoke")
    for id, holds in [("a", ("smoke",)), ("b", ("book", "full")), ("c", ("full",)), ("d", ("smoke", "book")),
                      ("e", "smoke"), ("f", ()), ("g", ("smoke",))]:
        _declare(ch, id, holds)
    _declare(ch, "h", (), kind="check")
    a = ch.measure("a", -0.3)
    assert (a.status, a.failed_here) == (REPRODUCED, False)
    b = ch.measure("b", -0.1)
    assert (b.status, b.failed_here) == (INCONCLUSIVE, False) and "no positive control" in b.reason
    c = ch.not_reached("c", "too small")
    assert (c.status, c.failed_here) == (NOT_REACHED, False)
    d = ch.measure("d", -0.1)
    assert (d.status, d.failed_here) == (INCONCLUSIVE, True)
    e = ch.measure("e", float("nan"))
    assert (e.status, e.failed_here) == (INCONCLUSIVE, True) and "not a finite number" in e.reason
    with pytest.raises(TypeError, match="cannot judge 'oops'"):  # a bug in the chapter, never a verdict
        ch.measure("f", "oops")
    assert not ch.ledger.claims[5].measured_yet
    g = ch.not_reached("g", "declared at smoke, so not reaching it is flagged")
    assert (g.status, g.failed_here) == (NOT_REACHED, True)
    assert ch.measure("h", -0.1).status == NOT_REPRODUCED
    assert [x.id for x in ch.ledger.failed] == ["d", "e", "g"]
    with pytest.raises(ValueError, match="twice"):
        ch.measure("a", -0.3)


def test_declarations_are_validated():
    ch = _chapter("smoke")
    _declare(ch, "a", ("smoke",))
    with pytest.raises(ValueError, match="twice"):
        _declare(ch, "a", ("smoke",))
    with pytest.raises(ValueError, match="unknown scale"):
        _declare(ch, "g", ("medium",))
    with pytest.raises(ValueError, match="kind must be one of paper, derived, check"):
        _declare(ch, "h", ("smoke",), kind="theorem")
    with pytest.raises(TypeError, match="kind"):
        ch.declare("i", "no kind", paper="1", source="-", check=checks.is_true(), holds_at=())
    with pytest.raises(TypeError, match="icml26 check"):
        _declare(ch, "j", ("smoke",), check=lambda x: True)
    with pytest.raises(ValueError, match="min_seeds"):
        _declare(ch, "k", ("smoke",), min_seeds=0)


def test_measure_needs_a_declaration_and_declarations_come_first():
    ch = _chapter("smoke")
    _declare(ch, "a", ("smoke",))
    with pytest.raises(KeyError, match="never declared"):
        ch.measure("zzz", 1.0)
    with pytest.raises(ValueError, match="not_reached"):
        ch.measure("a", None)
    ch.measure("a", -1.0)
    with pytest.raises(RuntimeError, match="declared after measurements began"):
        _declare(ch, "late", ("smoke",))
    with pytest.raises(ValueError, match="reason"):
        ch.not_reached("a", " ")


def test_finish_fails_when_a_declared_claim_was_never_measured(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_RESULTS_DIR", str(tmp_path))
    ch = _chapter("smoke")
    _declare(ch, "measured", ())
    _declare(ch, "forgotten", ())  # not declared to hold anywhere: still must be measured
    ch.measure("measured", -1.0)
    with pytest.raises(icml26.ClaimsIncomplete, match="forgotten"):
        ch.finish(show=False)
    record = json.loads((tmp_path / "smoke" / "test-chapter.json").read_text())
    assert record["status"] == "failed"  # nothing lost: the file is written, marked failed


def test_comparisons_need_seeds_at_book_and_report_the_spread(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_RESULTS_DIR", str(tmp_path))
    ch = _chapter("book")
    _declare(ch, "beats", ("book",), check=checks.at_least(0.0), min_seeds=3)
    with pytest.raises(ValueError, match=">= 3 seeds"):
        ch.measure("beats", 0.4)
    with pytest.raises(ValueError, match=">= 3 seeds"):
        ch.measure("beats", icml26.over_seeds([0.1, 0.2]))
    claim = ch.measure("beats", icml26.paired_difference([0.9, 0.8, 0.95, 0.7], [0.5, 0.6, 0.5, 0.6]))
    assert claim.status == REPRODUCED and claim.measured == pytest.approx(0.2875)
    assert "± " in claim.measured_text and "(n=4, t)" in claim.measured_text
    ch.finish(show=False)
    spread = json.loads((tmp_path / "book" / "test-chapter.json").read_text())["claims"][0]["spread"]
    assert spread["n"] == 4 and spread["ci_low"] <= spread["mean"] <= spread["ci_high"]
    assert spread["values"] == pytest.approx([0.4, 0.2, 0.45, 0.1])


def test_seed_comparisons_may_use_fewer_seeds_at_smoke():
    ch = _chapter("smoke")
    _declare(ch, "beats", (), check=checks.at_least(0.0), min_seeds=3)
    assert ch.measure("beats", 0.4).status == REPRODUCED


def test_over_seeds_statistics():
    s = icml26.over_seeds([1.0, 2.0, 3.0, 4.0, 5.0])
    assert s.mean == 3.0 and s.sem == pytest.approx(np.std([1, 2, 3, 4, 5], ddof=1) / math.sqrt(5))
    assert s.method == "t" and (s.ci_low, s.ci_high) == pytest.approx((3 - 2.776445 * s.sem, 3 + 2.776445 * s.sem))
    assert icml26.over_seeds([1.0, 2.0, 3.0, 4.0, 5.0]) == s  # deterministic
    flat = icml26.over_seeds([2.0, 2.0, 2.0])
    assert (flat.ci_low, flat.ci_high, flat.sem, flat.method) == (2.0, 2.0, 0.0, "point")
    diverged = icml26.over_seeds([1.0, float("nan"), 2.0])
    assert math.isnan(diverged.mean) and math.isnan(diverged.ci_low) and diverged.method == "undefined"
    assert not checks.at_least(0.0).holds(diverged.mean)
    with pytest.raises(ValueError, match="at least one"):
        icml26.over_seeds([])
    with pytest.raises(ValueError, match="pair them"):
        icml26.paired_difference([1.0, 2.0], [1.0])
    with pytest.raises(TypeError, match="numbers"):
        icml26.over_seeds(["a", "b"])


def test_finish_writes_results_and_raises_on_failed_declared_claim(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_RESULTS_DIR", str(tmp_path))
    ch = _chapter("smoke")
    ch.declare("C1", "exponent", kind="check", paper="3/4", source="Thm 1", check=checks.equals(sympy.Rational(3, 4)),
               holds_at=("smoke", "book", "full"))
    ch.declare("C2", "slope", kind="paper", paper="-1/4", source="Thm 1", check=checks.at_most(-0.2), holds_at=("smoke",))
    with ch.timed("theory"):
        ch.measure("C1", sympy.Rational(3, 4))
    ch.measure("C2", np.float64(-0.1))
    with pytest.raises(ClaimFailed, match="C2"):
        ch.finish(show=False)
    record = json.loads((tmp_path / "smoke" / "test-chapter.json").read_text())
    assert record["status"] == "failed" and record["seed"] == 3 and record["preset"] == {"steps": 1}
    assert [c["status"] for c in record["claims"]] == [REPRODUCED, INCONCLUSIVE]
    assert [c["failed_here"] for c in record["claims"]] == [False, True]
    assert [c["kind"] for c in record["claims"]] == ["check", "paper"]
    assert record["counts"]["paper"]["inconclusive"] == 1 and record["counts"]["paper"]["failed_here"] == 1
    assert record["counts"]["check"]["reproduced"] == 1 and record["contract"] == 3
    assert record["claims"][0]["measured"] == "3/4"
    assert {"theory", "total"} <= set(record["timings"])
    assert {"python", "torch", "numpy"} <= set(record["versions"])
    assert "commit" in record["git"] and record["threads"] == 1 and record["preset_scale"] == "smoke"


def test_finish_without_claims_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_RESULTS_DIR", str(tmp_path))
    with pytest.raises(ClaimFailed, match="no claims"):
        _chapter().finish(show=False)


def test_a_passing_run_returns_the_claims_table(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_RESULTS_DIR", str(tmp_path))
    ch = _chapter("book")
    ch.declare("C1", "ok", kind="derived", paper="1", source="Eq. 1", check=checks.close_to(1.0, atol=1e-9), holds_at=("book",))
    card = ch.paper_card()
    assert list(card.index) == ["C1"] and card.loc["C1", "kind"] == "derived" and "status" not in card.columns
    ch.measure("C1", 1.0)
    table = ch.finish(show=False)
    assert list(table.index) == ["C1"] and table.loc["C1", "verdict"] == REPRODUCED


def test_structure_runs_take_another_scales_sizes_and_never_fail_on_values(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_RESULTS_DIR", str(tmp_path))
    monkeypatch.setenv("ICML26_PRESET_SCALE", "smoke")
    ch = _chapter("full")
    assert ch.preset["steps"] == 1 and ch.structure_run
    _declare(ch, "C1", ("full",))
    _declare(ch, "C2", ("full",), check=checks.at_least(0.0), min_seeds=3)
    ch.measure("C1", 5.0)  # fails where declared: a structure run reports it but does not raise
    ch.measure("C2", icml26.over_seeds([0.1]))  # smoke's one seed at full: no seed error in a structure run
    ch.finish(show=False)
    record = json.loads((tmp_path / "full" / "test-chapter.json").read_text())
    assert record["preset_scale"] == "smoke" and record["claims"][0]["failed_here"]


def test_a_chapter_pins_its_compute_threads():
    from threadpoolctl import threadpool_info

    torch.set_num_threads(2)
    _chapter()
    assert torch.get_num_threads() == 1
    assert all(pool["num_threads"] == 1 for pool in threadpool_info())


def test_glue_records_values():
    ch = _chapter()
    ch.glue("slope", -0.31234, fmt="{:.2f}")
    ch.glue("raw", 2.5)
    assert ch.glued == {"slope": "-0.31", "raw": 2.5}


def test_glue_turns_array_scalars_into_python_numbers(monkeypatch):
    import myst_nb

    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: glued.update({name: value}))
    ch = _chapter()
    ch.glue("np", np.float64(0.25))
    ch.glue("torch", torch.tensor(1.5, dtype=torch.float64))
    ch.glue("int", np.int64(3))
    assert glued == {"np": 0.25, "torch": 1.5, "int": 3}
    assert all(type(v) in (float, int) for v in glued.values())
    assert repr(glued["np"]) == "0.25"  # what myst-nb formats with {glue:text}`np:.2f`


def test_unknown_registered_slug_is_a_clear_error():
    with pytest.raises(KeyError, match="known chapters"):
        Chapter("no-such-paper", scale="smoke", presets=PRESETS)


def test_progress_is_plain_text_in_batch(monkeypatch):
    monkeypatch.setenv("ICML26_BATCH", "1")
    from tqdm.std import tqdm

    bar = icml26.progress(range(3), desc="x")
    assert type(bar) is tqdm and list(bar) == [0, 1, 2]


def test_live_figure_builds_controls_and_draws_once(monkeypatch):
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from icml26.widgets import live_figure

    monkeypatch.setenv("ICML26_BATCH", "1")
    calls = []

    def draw(lr):
        calls.append(lr)
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, lr])
        return fig

    assert live_figure(draw, lr=widgets.FloatSlider(value=0.5, min=0, max=1)) is None
    assert calls == [0.5]
    monkeypatch.setenv("ICML26_BATCH", "0")
    slider = widgets.FloatSlider(value=0.25, min=0, max=1)
    panel = live_figure(draw, lr=slider)
    assert isinstance(panel, widgets.interactive) and calls == [0.5, 0.25]
    slider.value = 0.75
    assert calls[-1] == 0.75
    with pytest.raises(TypeError):
        live_figure(draw, lr=0.5)


def test_interleaved_best_takes_the_minimum_of_each():
    import time

    from icml26.timing import interleaved_best

    calls = []
    best = interleaved_best({"fast": lambda: calls.append("f"), "slow": lambda: (calls.append("s"), time.sleep(0.01))}, rounds=3)
    assert calls == ["f", "s"] * 4  # a warm-up round, then three timed ones, interleaved, in turn
    assert best["slow"] >= 0.01 > best["fast"] >= 0
    with pytest.raises(ValueError):
        interleaved_best({"x": lambda: None}, rounds=0)
