"""The memory inspector (enter on a sidebar gauge): a block's whole content, and an editor.

Saving goes through `Session.replace_context_block` — the provider the
model's `set_context` writes through — so the next prompt carries the edit;
a read-only block refuses, and an edit over the block's budget is refused
with the store's message and nothing written.

Below the text, the block's writes (newest first): who made each, on which
chat and branch; ctrl+r reverts the highlighted one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeAlias

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from store import ContextLimitError, ReadOnlyBlockError, StoreError, estimate_string_tokens
from widgets import clean, format_tokens

from ..outage import SurvivesOutage
from .dialogs import Confirm

if TYPE_CHECKING:
    from ...core.workspace import BlockDetails, WriteLine

__all__ = ["BlockScreen"]

Saver: TypeAlias = "Callable[[str, str], Awaitable[object]]"
"""save(label, content): write the block; raises what `replace_context_block` raises."""
Reverter: TypeAlias = "Callable[[int], Awaitable[tuple[str, list[WriteLine]]]]"
"""revert(seq): undo that write; the block's content on this branch and its writes after."""


class BlockScreen(SurvivesOutage, ModalScreen[bool]):
    """One context block; dismisses True when an edit was saved."""

    CSS_PATH = "memory.tcss"
    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="block.save"),
        Binding("ctrl+r", "revert", "Revert write", id="block.revert"),
        Binding("escape", "close", "Close", id="block.close"),
        # TextArea has no keys for the text's ends (home/end are the line's).
        Binding("ctrl+end", "text_end", "End of text", show=False),
        Binding("ctrl+home", "text_start", "Start of text", show=False),
    ]

    def __init__(
        self,
        details: BlockDetails,
        save: Saver | None = None,
        *,
        writes: list[WriteLine] | None = None,
        revert: Reverter | None = None,
    ) -> None:
        super().__init__()
        self.details = details
        self._save = save
        self.writes = writes or []
        self._revert = revert
        self._changed = False
        self._stored = details.block.content
        """The block's content as stored (opened, or after a revert): escape asks
        before leaving edits that differ from it."""

    def compose(self) -> ComposeResult:
        block = self.details.block
        with Vertical(id="block"):
            yield Label(self._title(block.content), id="block-title")
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
            if self.writes:
                yield OptionList(*self._options(), id="block-writes")
            hint = (
                "ctrl+s saves (the next reply's prompt carries it) · escape closes"
                if self.details.editable
                else f"{self.details.note} · escape closes"
            )
            if self.writes and self._revert is not None:
                hint += " · tab to a write, ctrl+r reverts it"
            yield Static(Text(hint), id="block-status")

    def _title(self, content: str) -> Text:
        """The title with the stored content's size (counted again after a revert)."""
        block = self.details.block
        tokens = estimate_string_tokens(content) if content != block.content else block.tokens
        budget = (
            f"{tokens:,}/{block.max_tokens:,} tokens"
            if block.max_tokens
            else f"{format_tokens(tokens)} tokens, no budget"
        )
        return Text(f"{block.label} · {block.kind} · {budget}")

    def _options(self) -> list[Option]:
        return [
            Option(Text(clean(w.text), style="dim strike" if w.reverted else ""), id=str(w.seq))
            for w in self.writes
        ]

    def on_mount(self) -> None:
        editor = self.query_one(TextArea)
        editor.focus()
        self.action_text_end()  # one adds to a block more often than rewrites its start

    def action_text_end(self) -> None:
        editor = self.query_one(TextArea)
        editor.move_cursor(editor.document.end)

    def action_text_start(self) -> None:
        self.query_one(TextArea).move_cursor((0, 0))

    async def action_revert(self) -> None:
        """Undo the write highlighted in the list (tab to it first)."""
        if not self.writes or self._revert is None:
            self._status("This block keeps no writes to revert.", error=True)
            return
        listing = self.query_one("#block-writes", OptionList)
        index = listing.highlighted if listing.highlighted is not None else 0
        write = self.writes[index]
        if write.reverted:
            self._status(f"Write #{write.seq} is reverted already.", error=True)
            return
        try:
            content, self.writes = await self._revert(write.seq)
        except (StoreError, ValueError, OSError) as exc:
            self._status(f"Not reverted: {exc}", error=True)
            return
        self._changed = True
        self._stored = content
        self.query_one(TextArea).text = content
        self.query_one("#block-title", Label).update(self._title(content))
        listing.clear_options()
        listing.add_options(self._options())
        listing.highlighted = index
        self._status(f"Reverted write #{write.seq}: it counts on no branch now.")

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
        self.dismiss(bool(result) or self._changed)

    def action_close(self) -> None:
        """Escape: close, asking first when the text has edits not saved."""
        if self.app.screen is not self:
            return  # a second escape while the question is up
        if self.query_one(TextArea).text == self._stored:
            self.dismiss(self._changed)
            return

        def answered(discard: bool | None) -> None:
            if discard:
                self.dismiss(self._changed)

        self.app.push_screen(
            Confirm("Discard your edits to this block?", "Discard", "Keep editing"), answered
        )
