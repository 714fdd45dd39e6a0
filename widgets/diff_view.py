"""`DiffView`: one side of a word-level comparison, the words the other side lacks marked."""

from __future__ import annotations

import difflib
import re
from typing import ClassVar

from rich.text import Text
from textual.widgets import Static

from .sanitize import clean

__all__ = ["DiffView", "word_diff"]

# Words and the whitespace after them stay together, so joining the pieces
# gives the text back exactly and a changed word is marked without its gap.
_PIECES = re.compile(r"\S+\s*|\s+")


def _pieces(text: str) -> list[str]:
    return _PIECES.findall(text)


def word_diff(left: str, right: str) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """Each side as (piece, changed) runs: `changed` marks words the other side lacks.

    Words compare without their trailing whitespace, so a reflowed line is not a change.
    """
    a, b = _pieces(left), _pieces(right)
    matcher = difflib.SequenceMatcher(
        None, [p.strip() for p in a], [p.strip() for p in b], autojunk=False
    )
    ours: list[tuple[str, bool]] = []
    theirs: list[tuple[str, bool]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        same = tag == "equal"
        if i2 > i1:
            ours.append(("".join(a[i1:i2]), not same))
        if j2 > j1:
            theirs.append(("".join(b[j1:j2]), not same))
    return ours, theirs


class DiffView(Static):
    """Text whose changed runs carry the `diff-view--changed` style (theme colours)."""

    DEFAULT_CSS = """
    DiffView { height: auto; }
    DiffView > .diff-view--changed { background: $warning 25%; text-style: bold; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"diff-view--changed"}

    def __init__(
        self,
        runs: list[tuple[str, bool]] | None = None,
        *,
        name: str | None = None,
        id: str | None = None,  # noqa: A002  (Textual's keyword)
        classes: str | None = None,
    ) -> None:
        super().__init__("", name=name, id=id, classes=classes)
        self.runs = runs or []

    def on_mount(self) -> None:
        self.show(self.runs)

    def show(self, runs: list[tuple[str, bool]]) -> None:
        """Draw `runs` (from `word_diff`)."""
        self.runs = runs
        changed = self.get_component_rich_style("diff-view--changed", partial=True)
        text = Text()
        for piece, is_changed in runs:
            text.append(clean(piece), changed if is_changed else "")
        self.update(text)

    @property
    def changed_words(self) -> list[str]:
        """The marked words, in order (what a test or a screen reader reads)."""
        return [w for piece, changed in self.runs if changed for w in piece.split()]
