"""The live path that interactive readers use: every chapter's `live_figure` panel redraws when its
controls move.

Batch runs (papermill, nbval, the book build) never make a live panel: `live_figure` draws a static
figure there. This test runs each chapter at `smoke` in a real kernel *outside* batch mode (so
`live_figure` builds its `ipywidgets.interactive` panel, as in Jupyter or on Binder), then, in that
same kernel, finds the panels through `icml26.widgets.live_panels()` and moves every control to a
second value (one step of the control) through ipywidgets' Python API, exactly what a slider drag
sends. Each move must redraw without raising and produce a figure whose pixels differ from the one
before. A chapter without a live panel fails.
"""
import json
import os
from pathlib import Path

import nbformat
import pytest

from icml26.runner import CELL_TIMEOUT, KERNEL_ARGUMENTS

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MARKER = "ICML26-LIVE-REPORT "

# Runs in the chapter's kernel after its last cell: move every control of every live panel.
DRIVER = r'''
import hashlib as _hashlib, json as _json, math as _math, traceback as _traceback
import ipywidgets as _widgets
from IPython import get_ipython as _get_ipython
from icml26.widgets import live_panels as _live_panels


def _second_value(control):
    """One step away from the current value (down when at the top): (attribute, value), or None."""
    if hasattr(control, "index") and hasattr(control, "options"):  # Dropdown, RadioButtons, ToggleButtons, ...
        n = len(control.options)
        if n < 2 or control.index is None:
            return None
        return "index", control.index + 1 if control.index + 1 < n else control.index - 1
    if isinstance(control.value, bool):
        return "value", not control.value
    if isinstance(control, _widgets.FloatLogSlider):
        exponent = _math.log(control.value, control.base)
        up = exponent + control.step
        target = up if up <= control.max + 1e-12 else exponent - control.step
        return ("value", control.base ** target) if control.min - 1e-12 <= target else None
    if all(hasattr(control, a) for a in ("min", "max", "step")) and isinstance(control.value, (int, float)):
        step = control.step or (1 if isinstance(control.value, int) else (control.max - control.min) / 10)
        up = control.value + step
        target = up if up <= control.max else control.value - step
        return ("value", target) if control.min <= target <= control.max and target != control.value else None
    return None


def _redraw(action):
    """Run `action` (which makes the panel redraw), recording what it displays and any traceback it shows.

    The kernel's display publisher is wrapped (IPython's capture_output cannot be used: ipywidgets'
    Output context re-parents the publisher, which a capturing publisher does not support)."""
    shell = _get_ipython()
    publisher = shell.display_pub
    shown, published, errors = shell.showtraceback, [], []
    shell.showtraceback = lambda *a, **k: errors.append(_traceback.format_exc())
    publisher.publish = lambda data, *a, **k: published.append(data)
    try:
        action()
    finally:
        shell.showtraceback = shown
        del publisher.publish  # back to the class's method
    pngs = [d["image/png"] for d in published if "image/png" in d]
    digest = _hashlib.sha256(pngs[-1].encode() if isinstance(pngs[-1], str) else pngs[-1]).hexdigest() if pngs else None
    return {"images": len(pngs), "digest": digest, "error": errors[-1] if errors else ""}


_report = []
for _p, _panel in enumerate(_live_panels()):
    _first = _before = _redraw(_panel.update)  # the figure at the current values
    _moves = []
    for _control in _panel.kwargs_widgets:
        _name = _control._kwarg
        _old = repr(_control.value)
        _target = _second_value(_control)
        if _target is None:
            _moves.append({"control": _name, "old": _old, "error": f"cannot pick a second value for {type(_control).__name__}"})
            continue
        _after = _redraw(lambda: setattr(_control, *_target))
        _moves.append({"control": _name, "type": type(_control).__name__, "old": _old, "new": repr(_control.value),
                       "images": _after["images"], "changed": _after["digest"] is not None and _after["digest"] != _before["digest"],
                       "error": _after["error"]})
        if _after["digest"] is not None:
            _before = _after
    _report.append({"panel": _p, "initial_error": _first["error"], "initial_images": _first["images"], "moves": _moves})
print("ICML26-LIVE-REPORT " + _json.dumps(_report))
'''


def run_live(notebook: Path, results_dir: Path) -> tuple[list[dict], str]:
    """Execute `notebook` at smoke in a live (not batch) kernel, then drive its panels in that kernel.

    Returns the driver's report and the error of the first cell that raised ('' when none did): the
    cells after it are not run, the panels made before it are still driven."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(notebook, as_version=4)
    env = {k: v for k, v in os.environ.items() if k != "ICML26_BATCH"}
    env.update({"ICML26_SCALE": "smoke", "ICML26_RESULTS_DIR": str(results_dir),
                "MPLBACKEND": "module://matplotlib_inline.backend_inline", "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
    client = NotebookClient(nb, timeout=CELL_TIMEOUT["smoke"], kernel_name="python3", extra_arguments=KERNEL_ARGUMENTS,
                            resources={"metadata": {"path": str(notebook.parent)}})
    error = ""
    with client.setup_kernel(env=env):
        for index, cell in enumerate(nb.cells):
            try:
                client.execute_cell(cell, index)
            except CellExecutionError as exc:
                error = f"cell {index} raised {exc.ename}: {exc.evalue}"
                break
        driver = nbformat.v4.new_code_cell(DRIVER)
        nb.cells.append(driver)
        client.execute_cell(driver, len(nb.cells) - 1)
    text = "".join(o.get("text", "") for o in driver.outputs if o.get("output_type") == "stream")
    lines = [line for line in text.splitlines() if line.startswith(MARKER)]
    assert lines, f"the driver printed no report: {driver.outputs}"
    return json.loads(lines[-1][len(MARKER):]), error


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_live_figure_redraws_when_each_control_moves(notebook, tmp_path):
    report, error = run_live(notebook, tmp_path / "results")
    problems = [f"the chapter does not run in a live kernel: {error}"] if error else []
    if not report:
        problems.append("no live_figure panel (every chapter has one, in its ## Interactive section)")
    for panel in report:
        if panel["initial_error"]:
            problems.append(f"panel {panel['panel']}: the draw at the initial values raised:\n{panel['initial_error']}")
        elif not panel["initial_images"]:
            problems.append(f"panel {panel['panel']}: the draw at the initial values shows no figure")
        for move in panel["moves"]:
            where = f"panel {panel['panel']}, control {move['control']!r} {move['old']} -> {move.get('new')}"
            if move["error"]:
                problems.append(f"{where}: the redraw raised:\n{move['error']}")
            elif not move["images"]:
                problems.append(f"{where}: the panel drew no figure")
            elif not move["changed"]:
                problems.append(f"{where}: the figure did not change")
    for panel in report:
        print(f"{notebook.stem} panel {panel['panel']}: " + "; ".join(
            f"{m['control']} {m['old']} -> {m.get('new')}: {'changed' if m.get('changed') else 'UNCHANGED'}" for m in panel["moves"]))
    assert not problems, f"{notebook.stem}:\n" + "\n".join(problems)


def test_live_figure_in_batch_shows_the_figure_then_the_live_note(monkeypatch):
    """Batch runs: the static figure, then one line saying the controls are live in Jupyter/Binder;
    live runs: the panel, kept in the registry that the test above drives."""
    import ipywidgets as widgets
    import IPython.display
    import matplotlib.pyplot as plt

    from icml26 import widgets as live

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objects, **kw: shown.extend(objects))

    def draw(a, b):
        fig, ax = plt.subplots()
        ax.plot([0, 1], [a, b])
        return fig

    monkeypatch.setenv("ICML26_BATCH", "1")
    assert live.live_figure(draw, a=widgets.FloatSlider(value=0.5, description="slope"), b=widgets.IntSlider(value=1)) is None
    assert isinstance(shown[0], plt.Figure) and isinstance(shown[1], IPython.display.Markdown)
    assert shown[1].data == ("*Interactive figure: this page shows it at the initial values; in Jupyter or on Binder "
                             "(launch button at the top of the page) the controls `slope` and `b` redraw it live.*")
    assert "the control `k` redraws it live" in live.live_note({"k": widgets.IntSlider()})
    monkeypatch.setenv("ICML26_BATCH", "0")
    shown.clear()
    panel = live.live_figure(draw, a=widgets.FloatSlider(value=0.5), b=widgets.IntSlider(value=1))
    assert isinstance(panel, widgets.interactive) and live.live_panels()[-1] is panel and shown[-1] is panel


def test_the_driver_fails_a_control_that_raises_or_changes_nothing(tmp_path):
    """The live test's negative control: a panel whose figure ignores a control, and one whose redraw raises."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(
        "import ipywidgets, matplotlib.pyplot as plt\nfrom icml26.widgets import live_figure\n\n"
        "def ignores(k, c):\n    fig, ax = plt.subplots(); ax.plot([0, 1], [0, k]); return fig\n\n"
        "def raises(k):\n    if k > 1:\n        raise ValueError('no such k')\n    fig, ax = plt.subplots(); ax.plot([0, 1], [0, k]); return fig\n\n"
        "live_figure(ignores, k=ipywidgets.IntSlider(value=1, max=3), c=ipywidgets.Dropdown(options=['red', 'blue']))\n"
        "live_figure(raises, k=ipywidgets.IntSlider(value=1, max=3))")]
    nbformat.write(nb, tmp_path / "bad.ipynb")
    report, error = run_live(tmp_path / "bad.ipynb", tmp_path / "results")
    assert error == ""
    ignores, raises = report
    assert [(m["control"], m["changed"], m["error"]) for m in ignores["moves"]] == [("k", True, ""), ("c", False, "")]
    assert ignores["moves"][1]["old"] == "'red'" and ignores["moves"][1]["new"] == "'blue'"
    assert raises["moves"][0]["images"] == 0 and "ValueError: no such k" in raises["moves"][0]["error"]
