"""One figure style for the whole book (seaborn), so that every chapter looks like one book."""
from __future__ import annotations

PALETTE = "colorblind"


def use_book_style() -> None:
    """Apply the book's matplotlib/seaborn style: readable fonts, light grid, colour-blind palette."""
    import matplotlib as mpl
    import seaborn as sns

    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE)
    mpl.rcParams.update(
        {
            "figure.figsize": (7.0, 4.2),
            "figure.dpi": 100,
            "savefig.dpi": 150,
            "savefig.bbox": "tight",
            "axes.titlesize": 12,
            "axes.labelsize": 11,
            "legend.fontsize": 9,
            "legend.frameon": False,
            "lines.linewidth": 1.8,
            "figure.constrained_layout.use": True,
        }
    )


def method_colors(names) -> dict:
    """Stable colours for method names, so a method keeps its colour across a chapter's figures."""
    import seaborn as sns

    names = list(names)
    return dict(zip(names, sns.color_palette(PALETTE, len(names))))
