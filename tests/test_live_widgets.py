"""The live path's driver (tests/live_kernel.py) and `live_figure`'s batch fallback. Every chapter is
driven in a live kernel by tests/test_chapter_runs.py."""
import nbformat

from live_kernel import run_live


def test_live_figure_in_batch_shows_the_figure_then_the_live_note(monkeypatch):
    """Batch runs: the static figure, then one line saying the controls are live in Jupyter/Binder;
    live runs: the panel, kept in the registry that tests/test_chapter_runs.py drives."""
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
