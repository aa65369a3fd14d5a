"""The rule against measured numbers typed into a chapter's prose (DESIGN.md: "no measured number is
typed into prose"; the prose about results is glued from the run, `Chapter.glue` / `Chapter.glue_full`).

`typed_numbers(notebook)` lists the decimal numbers (``0.73``, ``12.5 %``, ``1.2e-3``) in a notebook's
Markdown cells that could be typed measurements. A number is *not* flagged when it is

* inside math (``$...$``, ``$$...$$``, a ``{math}`` role), inline code or a code block, a glue role or
  directive, a figure, a link target, a citation or an HTML comment (an admonition's text is read);
* one of the paper's numbers: it appears in a ``paper=`` or ``words=`` argument of a ``.declare(`` call
  in the chapter's code (the paper card's paper-value column and quoted words);
* an arXiv identifier (``2605.12494``), or a reference or a version: after ``Sec.``, ``Eq.``, ``Table``,
  ``Fig.``, ``Appendix``, ``Thm``, ``Lemma``, ``Prop.``, ``Cor.``, ``Def.``, ``Alg.``, ``arXiv`` (and the
  second number of a range such as ``Sec. 2.4-2.6``), ``v``, ``==``, ``Python``, ``PyTorch``, ``CUDA``;
* on a line carrying the allow marker ``<!-- number-ok: why -->`` (a constant of the method, a
  hyper-parameter, a number from another paper), which says why.

Integers are not flagged (counts of seeds and steps read like prose), nor is math: a measured number
typed as an integer or inside ``$...$`` is not caught, a limit of the rule. It aims at measured
fractions and ratios, where a typed copy silently goes stale when the code changes.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ARXIV_ID = re.compile(r"^\d{4}\.\d{4,5}$")
ALLOW_MARKER = re.compile(r"<!--\s*number-ok:\s*\S[^>]*-->")
DECIMAL = re.compile(r"(?<![\w.])(\d+\.\d+(?:[eE][-+]?\d+)?)(?![\w.]*\d)")
REFERENCE = re.compile(r"(?:Sec|Section|§|Eq|Eqs|Equation|Table|Tab|Fig|Figure|Appendix|App|Thm|Theorem|Lemma|Prop|"
                       r"Proposition|Cor|Corollary|Def|Definition|Alg|Algorithm|arXiv|Step|Chapter|Remark)[.:]?\s*[(\[]?"
                       r"(?:\d+(?:\.\d+)*\s*[-–]\s*)?$|"  # the second number of "Sec. 2.4-2.6"
                       r"(?:\bv|==|\bversion\s|\bPython\s|\bPyTorch\s|\btorch\s|\bCUDA\s)$", re.I)
STRIP = [
    # fenced code and the directives whose body is not prose (glue, math, figures, code); an admonition's
    # fence lines go, its text stays and is read
    re.compile(r"^(`{3,}|:{3,})(?!\{(?:note|warning|tip|important|caution|attention|hint|seealso|admonition|dropdown)\})"
               r".*?^\1[ \t]*$", re.M | re.S),
    re.compile(r"^(`{3,}|:{3,})\{[a-z]+\}.*$", re.M),
    re.compile(r"^(`{3,}|:{3,})[ \t]*$", re.M),
    re.compile(r"<!--.*?-->", re.S),
    re.compile(r"\$\$.*?\$\$", re.S),
    re.compile(r"(?<!\\)\$[^$\n]+?(?<!\\)\$"),
    re.compile(r"\{[a-z:]+\}`[^`]*`"),  # MyST roles: {glue:text}`...`, {math}`...`, {cite}`...`
    re.compile(r"`[^`\n]*`"),
    re.compile(r"\]\([^)]*\)"),  # link targets
    re.compile(r"https?://\S+"),
]


@dataclass(frozen=True)
class TypedNumber:
    cell: int
    number: str
    line: str


def _string_parts(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    if isinstance(node, ast.BinOp):
        return _string_parts(node.left) + _string_parts(node.right)
    return []


def paper_numbers(code_cells: list[str]) -> set[str]:
    """The decimal numbers in the ``paper=`` and ``words=`` arguments of every ``.declare(`` call."""
    found: set[str] = set()
    for source in code_cells:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "declare":
                for kw in node.keywords:
                    if kw.arg in ("paper", "words"):
                        for text in _string_parts(kw.value):
                            found.update(DECIMAL.findall(text))
    return found


def _visible_text(markdown: str) -> str:
    """The Markdown without what the rule skips; each removed span keeps its line breaks, so line i of the
    result is line i of the source."""
    for pattern in STRIP:
        markdown = pattern.sub(lambda m: "\n" * m.group(0).count("\n"), markdown)
    return markdown


def typed_numbers(notebook: str | Path) -> list[TypedNumber]:
    """The decimal numbers typed into a notebook's Markdown that the rule flags (module docstring)."""
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    allowed = paper_numbers([c.source for c in nb.cells if c.cell_type == "code"])
    flagged = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        raw_lines = cell.source.splitlines()
        for number_of_line, line in enumerate(_visible_text(cell.source).splitlines()):
            if number_of_line < len(raw_lines) and ALLOW_MARKER.search(raw_lines[number_of_line]):
                continue
            for match in DECIMAL.finditer(line):
                number = match.group(1)
                if number in allowed or ARXIV_ID.match(number) or REFERENCE.search(line[: match.start()].rstrip()):
                    continue
                flagged.append(TypedNumber(index, number, line.strip()))
    return flagged
