"""Interactive figures that degrade to a static figure in the built book.

`live_figure(draw, knob=widget, ...)` draws the figure once at the widgets' initial values (that
static figure is what the HTML book and batch runs show), then, in a live kernel, shows the controls
and redraws on every change. In batch runs (papermill, nbval, the book build) the interactive object
is still built, so a broken control fails the run, but it is not displayed: a widget without a kernel
cannot redraw anything.
"""
from __future__ import annotations

from collections.abc import Callable

from .progress import in_batch


def live_figure(draw: Callable[..., object], **controls):
    """Show `draw(**values)` now, and a live control panel over `controls` when a kernel is attached.

    ``draw`` must create and show its own matplotlib figure (or return one).
    Returns the `ipywidgets.interactive` object.
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

    redraw(**{name: c.value for name, c in controls.items()})
    panel = widgets.interactive(redraw, {"manual": False}, **controls)
    if not in_batch():
        display(widgets.VBox([widgets.HTML("<b>Move the controls to redraw:</b>"), *panel.children[:-1], panel.children[-1]]))
    return panel
