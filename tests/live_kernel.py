"""Running a chapter in a live kernel, as a reader in Jupyter or on Binder does, and driving its panels.

Batch runs (papermill, nbval, the book build) never make a live panel: `live_figure` draws a static
figure there. This test runs each chapter at `smoke` in a real kernel *outside* batch mode (so
`live_figure` builds its `ipywidgets.interactive` panel, as in Jupyter or on Binder), then, in that
same kernel, finds the panels through `icml26.widgets.live_panels()` and moves every control to a
second value (one step of the control) through ipywidgets' Python API, exactly what a slider drag
sends. Each move must redraw without raising and produce a figure whose pixels differ from the one
before. nbval's run of every chapter is such a live run: after its last cell, conftest.py runs `DRIVER`
in nbval's kernel. `run_live` does the same in a kernel of its own (tests/test_live_widgets.py checks
the driver with it).
"""
import json
import os
from pathlib import Path

import nbformat

from icml26.runner import CELL_TIMEOUT, KERNEL_ARGUMENTS

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


def run_live(notebook: Path, results_dir: Path, threads: int = 1) -> tuple[list[dict], str]:
    """Execute `notebook` at smoke in a live (not batch) kernel with `threads` OpenMP/MKL threads, then
    drive its panels in that kernel. Its claims land in `results_dir/smoke/` like a batch run's.

    Returns the driver's report and the error of the first cell that raised ('' when none did): the
    cells after it are not run, the panels made before it are still driven."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(notebook, as_version=4)
    env = {k: v for k, v in os.environ.items() if k != "ICML26_BATCH"}
    env.update({"ICML26_SCALE": "smoke", "ICML26_RESULTS_DIR": str(results_dir), **live_kernel_env(threads)})
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
    return parse_report(text, driver.outputs), error


def parse_report(text: str, outputs=None) -> list[dict]:
    """The driver's report from the text it printed."""
    lines = [line for line in text.splitlines() if line.startswith(MARKER)]
    assert lines, f"the driver printed no report: {outputs if outputs is not None else text}"
    return json.loads(lines[-1][len(MARKER):])


def live_kernel_env(threads: int = 1) -> dict[str, str]:
    """What a kernel needs to run a chapter as in Jupyter (not batch mode) on `threads` threads; the
    caller removes ``ICML26_BATCH`` from the environment."""
    return {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
            "MPLBACKEND": "module://matplotlib_inline.backend_inline", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}


def live_problems(report: list[dict], error: str) -> list[str]:
    """What a reader would hit: a chapter that does not run live, no panel, a redraw that raises, draws
    nothing, or leaves the figure unchanged."""
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
    return problems


def describe(slug: str, report: list[dict]) -> str:
    return "\n".join(f"{slug} panel {panel['panel']}: " + "; ".join(
        f"{m['control']} {m['old']} -> {m.get('new')}: {'changed' if m.get('changed') else 'UNCHANGED'}" for m in panel["moves"])
        for panel in report)
