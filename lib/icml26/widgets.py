"""Interactive figures that degrade to a static figure in the built book.

`live_figure(draw, knob=widget, ...)` shows the controls and redraws on every change in a live
kernel. In batch runs (papermill, nbval, the book build) it draws the figure once at the controls'
initial values instead, followed by one line saying that the controls are live in Jupyter/Binder: a
widget without a kernel cannot redraw anything, so the HTML book shows that static figure.

Every live panel made in a kernel is kept in a registry (`live_panels()`), so a test driving the
notebook in a real kernel can find the panels and move their controls through ipywidgets' API
(tests/test_live_widgets.py).
"""
from __future__ import annotations

from collections.abc import Callable

from .progress import in_batch

LIVE_NOTE = ("*Interactive figure: this page shows it at the initial values; in Jupyter or on Binder (launch button "
             "at the top of the page) the {controls} {verb} it live.*")
"""The one line under the static figure of the built book (batch runs)."""

_PANELS: list = []


def live_panels() -> list:
    """The `ipywidgets.interactive` panels that `live_figure` made in this process, oldest first."""
    return list(_PANELS)


def live_note(controls: dict) -> str:
    """The Markdown line shown under the static figure: which controls are live where."""
    names = [f"`{getattr(c, 'description', '') or name}`" for name, c in controls.items()]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return LIVE_NOTE.format(controls=("control " if len(names) == 1 else "controls ") + listed,
                            verb="redraws" if len(names) == 1 else "redraw")


def live_figure(draw: Callable[..., object], **controls):
    """Show `draw(**values)` now, and a live control panel over `controls` when a kernel is attached.

    ``draw`` must create and show its own matplotlib figure (or return one).
    Returns the `ipywidgets.interactive` object (None in batch runs, which show the static figure and
    the line `live_note` instead).
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt
    from IPython.display import Markdown, display

    if not controls:
        raise ValueError("live_figure needs at least one control (e.g. lr=FloatLogSlider(...))")
    for name, control in controls.items():
        if not isinstance(control, widgets.ValueWidget):
            raise TypeError(f"control {name!r} must be an ipywidgets value widget, got {type(control).__name__}")

    def redraw(**values):
        figure = draw(**values)
        if isinstance(figure, plt.Figure):
            display(figure)
            plt.close(figure)
        else:
            plt.show()

    if in_batch():  # no kernel will be there to redraw: the figure at the initial values is the output
        redraw(**{name: c.value for name, c in controls.items()})
        display(Markdown(live_note(controls)))
        return None
    panel = widgets.interactive(redraw, {"manual": False}, **controls)  # draws once, then on every change
    _PANELS.append(panel)
    display(panel)
    return panel
