"""The Makefile's `make install` recipe, for the tests that hold Binder and constraints.txt to it."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSTALL_TARGET = "$(STAMP)"
"""The rule `make install` runs (`install: $(STAMP)`); other targets' installs (`make bench`'s mbrs) are not part of it."""


def install_recipe() -> str:
    """The lines of the Makefile rule `$(STAMP)`: its header and its recipe, up to the next rule."""
    recipe, rule = [], None
    for line in (ROOT / "Makefile").read_text().splitlines():
        if line and not line[0].isspace() and ":" in line and not line.startswith("#"):
            rule = line.split(":", 1)[0].strip()  # the target whose recipe follows
        if rule == INSTALL_TARGET:
            recipe.append(line)
    assert recipe, f"the Makefile has no rule {INSTALL_TARGET}"
    return "\n".join(recipe)
