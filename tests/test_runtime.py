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
from icml26.ledger import FAILED, NOT_REACHED, NOT_REPRODUCED, REPRODUCED, ClaimFailed
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


def test_claim_statuses_depend_on_declared_scales():
    ch = _chapter("smoke")
    kw = dict(paper="-1/4", source="Thm 1", check=checks.at_most(-0.2))
    assert ch.claim("a", "passes", measured=-0.3, holds_at=("smoke",), **kw).status == REPRODUCED
    assert ch.claim("b", "fails undeclared", measured=-0.1, holds_at=("book", "full"), **kw).status == NOT_REPRODUCED
    assert ch.claim("c", "nothing measured", measured=None, holds_at=("full",), **kw).status == NOT_REACHED
    assert ch.claim("d", "fails declared", measured=-0.1, holds_at=("smoke", "book"), **kw).status == FAILED
    assert ch.claim("e", "nan declared", measured=float("nan"), holds_at="smoke", **kw).status == FAILED
    assert ch.claim("f", "wrong type", measured="oops", holds_at=(), **kw).status == NOT_REPRODUCED
    with pytest.raises(ValueError, match="twice"):
        ch.claim("a", "again", measured=-0.3, holds_at=("smoke",), **kw)
    with pytest.raises(ValueError, match="unknown scale"):
        ch.claim("g", "bad scale", measured=-0.3, holds_at=("medium",), **kw)


def test_finish_writes_results_and_raises_on_failed_declared_claim(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_RESULTS_DIR", str(tmp_path))
    ch = _chapter("smoke")
    with ch.timed("theory"):
        ch.claim("C1", "exponent", paper="3/4", source="Thm 1", measured=sympy.Rational(3, 4),
                 check=checks.equals(sympy.Rational(3, 4)), holds_at=("smoke", "book", "full"))
    ch.claim("C2", "slope", paper="-1/4", source="Thm 1", measured=np.float64(-0.1),
             check=checks.at_most(-0.2), holds_at=("smoke",))
    with pytest.raises(ClaimFailed, match="C2"):
        ch.finish(show=False)
    record = json.loads((tmp_path / "smoke" / "test-chapter.json").read_text())
    assert record["status"] == "failed" and record["seed"] == 3 and record["preset"] == {"steps": 1}
    assert [c["status"] for c in record["claims"]] == [REPRODUCED, FAILED]
    assert record["claims"][0]["measured"] == "3/4"
    assert {"theory", "total"} <= set(record["timings"])
    assert {"python", "torch", "numpy"} <= set(record["versions"])
    assert "commit" in record["git"]


def test_finish_without_claims_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_RESULTS_DIR", str(tmp_path))
    with pytest.raises(ClaimFailed, match="no claims"):
        _chapter().finish(show=False)


def test_a_passing_run_returns_the_claims_table(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_RESULTS_DIR", str(tmp_path))
    ch = _chapter("book")
    ch.claim("C1", "ok", paper="1", source="Eq. 1", measured=1.0, check=checks.close_to(1.0, atol=1e-9), holds_at=("book",))
    table = ch.finish(show=False)
    assert list(table.index) == ["C1"] and table.loc["C1", "status"] == REPRODUCED


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
    assert calls == ["f", "s"] * 3  # interleaved, in turn
    assert best["slow"] >= 0.01 > best["fast"] >= 0
    with pytest.raises(ValueError):
        interleaved_best({"x": lambda: None}, rounds=0)
