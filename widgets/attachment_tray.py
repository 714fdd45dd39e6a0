"""`AttachmentTray`: what is attached to the next message, on one line above the input.

Each item shows its label (name, size, a text file's tokens) and a `×` that
removes it when clicked (the app also removes the last one on backspace in an
empty input). The tray hides itself when empty. It draws labels it is given
and knows nothing of files or stores.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content
from textual.markup import escape
from textual.message import Message as TextualMessage
from textual.widgets import Static

from .sanitize import clean

__all__ = ["AttachmentTray"]


class AttachmentTray(Static):
    """The labels of the attachments of the next message (hidden when there are none)."""

    DEFAULT_CSS = """
    AttachmentTray {
        height: auto;
        margin: 0 2;
        color: $text-muted;
        display: none;
    }
    AttachmentTray.-shown { display: block; }
    """

    class Removed(TextualMessage):
        """The person clicked an item's `×`: remove attachment `index`."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.labels: tuple[str, ...] = ()

    def show(self, labels: Sequence[str]) -> None:
        """Show these labels (none: hide the tray)."""
        if tuple(labels) == self.labels and self.is_mounted:
            return  # every send asks: an empty tray stays as it is, no layout
        self.labels = tuple(labels)
        self.set_class(bool(self.labels), "-shown")
        markup = "[b]attached:[/b] " + "   ".join(
            f"{escape(clean(label))} [b @click=remove({index})]×[/]"
            for index, label in enumerate(self.labels)
        )
        if self.labels:
            markup += "   [i](click × or backspace in an empty input to remove)[/i]"
        self.update(Content.from_markup(markup) if self.labels else "")

    def action_remove(self, index: int) -> None:
        if 0 <= index < len(self.labels):
            self.post_message(self.Removed(index))
