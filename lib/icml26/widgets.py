"""Interactive figures that degrade to a static figure in the built book.

`live_figure(draw, knob=widget, ...)` shows the controls and redraws on every change in a live
kernel. In batch runs (papermill, nbval, the book build) it draws the figure once at the controls'
initial values instead: a widget without a kernel cannot redraw anything, so the HTML book shows
that static figure.
"""
from __future__ import annotations

from collections.abc import Callable

from .progress import in_batch


def live_figure(draw: Callable[..., object], **controls):
    """Show `draw(**values)` now, and a live control panel over `controls` when a kernel is attached.

    ``draw`` must create and show its own matplotlib figure (or return one).
    Returns the `ipywidgets.interactive` object (None in batch runs).
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt
    from IPython.display import display

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
        return None
    panel = widgets.interactive(redraw, {"manual": False}, **controls)  # draws once, then on every change
    display(panel)
    return panel
