"""A one-chapter toy book for the book-build tests: a tiny chapter with a figure, math, glue, a live
figure, a training curve and a contract-v3 paper claim with its words, bounds, positive and negative
controls and fidelity check, and a book root that holds it (alone, or beside the written chapters)."""
import shutil
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
TOY_PART = {"caption": "Toy", "chapters": [{"file": "notebooks/toy"}]}
TOY_MATH = r"$\beta = \mathcal{H}\{\sigma\}$"


def toy_notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell("scale = None")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [
        nbformat.v4.new_markdown_cell(f"# A toy chapter\n\nInline math {TOY_MATH} and a display:\n\n$$\\E[x] = 0$$"),
        params,
        nbformat.v4.new_code_cell(
            "import numpy as np, torch, icml26, ipywidgets\n"
            "import matplotlib.pyplot as plt\n"
            "from icml26.widgets import live_figure\n"
            "ch = icml26.Chapter('toy', scale=scale, title='Toy', presets={s: {} for s in icml26.SCALES})\n"
            "ch.glue('np_value', np.float64(0.125))\nch.glue('torch_value', torch.tensor(2.5))\n"
            "ch.glue('text_value', 1 / 3, fmt='{:.2f}')\n"
            "plt.plot([1, 2], [3, 4]); plt.xlabel('x'); plt.show()"),
        nbformat.v4.new_markdown_cell("Values {glue:text}`np_value:.3f`, {glue:text}`torch_value:.1f` and {glue:md}`text_value`."),
        nbformat.v4.new_code_cell(
            "ch.declare('C1', 'an eighth', kind='paper', paper='1/8', source='toy', words='the answer is one eighth', "
            "check=icml26.close_to(0.125, atol=0.01), bounds=(0, 1), holds_at=icml26.SCALES, positive_control='P1', "
            "negative_control='N1', fidelity='F1', curves='toy-fit')\n"
            "ch.declare('P1', 'positive control: a planted eighth', kind='check', paper='-', source='ours', "
            "check=icml26.close_to(0.125, atol=0.01), holds_at=icml26.SCALES)\n"
            "ch.declare('N1', 'negative control: a quarter is not an eighth', kind='check', paper='-', source='ours', "
            "check=icml26.at_least(0.02), holds_at=icml26.SCALES)\n"
            "ch.declare('F1', 'fidelity: 1/8 as the paper computes it', kind='check', paper='1/8', source='toy', "
            "check=icml26.equals(0.125), holds_at=icml26.SCALES)\n"
            "ch.paper_card()"),
        nbformat.v4.new_code_cell(
            "fit = ch.curve('toy-fit', steps=np.arange(1, 41), values=0.125 + np.exp(-np.arange(1, 41) / 4), label='loss')\n"
            "fit.plot(); plt.show()\n"
            "ch.glue_full()"),
        nbformat.v4.new_markdown_cell("Training curve converged: {glue:text}`toy_converged`. At `full`: {glue:md}`full_summary`."),
        nbformat.v4.new_code_cell(
            "def draw(slope=1.0):\n"
            "    fig, ax = plt.subplots(figsize=(4, 3))\n"
            "    ax.plot([0, 1], [0, slope]); ax.set(xlabel='x', ylabel='y', ylim=(0, 2))\n"
            "    return fig\n\n"
            "live_figure(draw, slope=ipywidgets.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.25, description='slope'))"),
        nbformat.v4.new_code_cell(
            "ch.glue('toy_converged', str(fit.converged))\n"
            "ch.measure('P1', icml26.over_seeds([0.124, 0.125, 0.126]))\n"
            "ch.measure('N1', abs(0.25 - 0.125))\n"
            "ch.measure('F1', 1 / 8)\n"
            "ch.measure('C1', np.float64(0.125))\nch.finish()"),
    ]
    return nb


def make_toy_root(root: Path, with_chapters: bool = False) -> Path:
    """A book root at `root`: the checkout's `book/` and `_config.yml`, and the toy chapter; with
    ``with_chapters`` also every written chapter and the checkout's table of contents."""
    shutil.copytree(ROOT / "book", root / "book")
    shutil.copy2(ROOT / "_config.yml", root / "_config.yml")
    if with_chapters:
        shutil.copytree(ROOT / "notebooks", root / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
        toc["parts"].insert(len(toc["parts"]) - 1, TOY_PART)  # before the back matter
    else:
        (root / "notebooks").mkdir()
        toc = {"format": "jb-book", "root": "book/intro", "parts": [
            {"caption": "Using this book", "chapters": [{"file": "book/running"}, {"file": "book/methodology"},
                                                         {"file": "book/scorecard"}, {"file": "book/performance"}]},
            TOY_PART,
            {"caption": "Back matter", "chapters": [{"file": "book/references"}]}]}
    (root / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    nbformat.write(toy_notebook(), root / "notebooks" / "toy.ipynb")
    return root
