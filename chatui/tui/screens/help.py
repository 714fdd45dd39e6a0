"""The help screen (F1): every key, from `chatui.tui.keys.KEYS`."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from ..keys import KEYS

__all__ = ["HelpScreen"]


class HelpScreen(ModalScreen[None]):
    """A table of keys: what they do and where they work."""

    CSS_PATH = "help.tcss"
    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close", id="help.close")]

    def compose(self) -> ComposeResult:
        with Vertical(id="help"):
            yield Label("chatui keys", id="help-title")
            yield DataTable[Text](id="help-table", cursor_type="row", zebra_stripes=True)
            yield Static(
                "Commands without a key (compact now, rename, export, import, theme) "
                "are in the command palette: ctrl+p. escape closes this.",
                id="help-hint",
            )

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()

    def on_resize(self) -> None:
        self.call_after_refresh(self._fill)

    def _fill(self) -> None:
        """The table at the width it has: the keys and "where" columns as wide as their
        longest entry (up to a third each), the action wrapped between them at word
        boundaries (cut mid-word at 80 columns, rows told nothing about where they work)."""
        table: DataTable[Text] = self.query_one(DataTable)
        width = table.scrollable_content_region.width or table.size.width
        if width <= 0:
            return
        cap = max(width // 5, 8)
        keys_width = min(max(len(k.keys) for k in KEYS), cap)
        where_width = min(max(len(k.where) for k in KEYS), cap)
        # Each column is padded by one cell on both sides; two for the scrollbar.
        does_width = max(width - keys_width - where_width - 6 - 2, 16)
        row = table.cursor_row
        table.clear(columns=True)
        table.add_column("key", width=keys_width)
        table.add_column("does", width=does_width)
        table.add_column("where", width=where_width)
        for key in KEYS:
            table.add_row(
                Text(key.keys, style="bold"),
                Text(key.action),
                Text(key.where, style="italic"),
                height=None,
            )
        if row:
            table.move_cursor(row=row)

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
