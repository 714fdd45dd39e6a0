"""The memory inspector (enter on a sidebar gauge): a block's whole content, and an editor.

Saving goes through `Session.replace_context_block` — the provider the
model's `set_context` writes through — so the next prompt carries the edit;
a read-only block refuses, and an edit over the block's budget is refused
with the store's message and nothing written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, Static, TextArea

from store import ContextLimitError, ReadOnlyBlockError, StoreError, estimate_string_tokens
from widgets import clean, format_tokens

from ...inspection import BlockDetails

__all__ = ["BlockScreen"]

Saver = Callable[[str, str], Awaitable[object]]
"""save(label, content): write the block; raises what `replace_context_block` raises."""


class BlockScreen(ModalScreen[bool]):
    """One context block; dismisses True when an edit was saved."""

    CSS_PATH = "memory.tcss"
    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="block.save"),
        Binding("escape", "dismiss", "Close", id="block.close"),
    ]

    def __init__(self, details: BlockDetails, save: Saver | None = None) -> None:
        super().__init__()
        self.details = details
        self._save = save

    def compose(self) -> ComposeResult:
        block = self.details.block
        budget = (
            f"{block.tokens:,}/{block.max_tokens:,} tokens"
            if block.max_tokens
            else f"{format_tokens(block.tokens)} tokens, no budget"
        )
        with Vertical(id="block"):
            yield Label(Text(f"{block.label} · {block.kind} · {budget}"), id="block-title")
            facts = [f"belongs to {self.details.owner}"]
            if block.description:
                facts.append(block.description)
            yield Static(Text(clean(" — ".join(facts))), id="block-facts")
            editor = TextArea(
                block.content,
                id="block-text",
                read_only=not self.details.editable,
                soft_wrap=True,
                show_line_numbers=False,
            )
            yield editor
            hint = (
                "ctrl+s saves (the next reply's prompt carries it) · escape closes"
                if self.details.editable
                else f"{self.details.note} · escape closes"
            )
            yield Static(Text(hint), id="block-status")

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        block = self.details.block
        if not self.details.editable or not block.max_tokens:
            return
        tokens = estimate_string_tokens(event.text_area.text)
        over = tokens > block.max_tokens
        self._status(
            f"{tokens:,}/{block.max_tokens:,} tokens"
            + (" — over the budget: saving is refused" if over else " · ctrl+s saves"),
            error=over,
        )

    def _status(self, text: str, *, error: bool = False) -> None:
        status = self.query_one("#block-status", Static)
        status.update(Text(text))
        status.set_class(error, "-error")

    async def action_save(self) -> None:
        if not self.details.editable or self._save is None:
            self._status(self.details.note or "This block cannot be edited here.", error=True)
            return
        content = self.query_one(TextArea).text
        try:
            await self._save(self.details.block.label, content)
        except (ContextLimitError, ReadOnlyBlockError) as exc:
            self._status(f"Not saved: {exc}. Your text is still here.", error=True)
            return
        except (StoreError, OSError) as exc:
            self._status(f"Not saved: {exc}. Your text is still here.", error=True)
            return
        self.dismiss(True)

    async def action_dismiss(self, result: bool | None = False) -> None:
        self.dismiss(bool(result))
