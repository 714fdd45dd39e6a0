"""The help screen (F1): every key, from `chatui.tui.keys.KEYS`."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from ..keys import KEYS

__all__ = ["HelpScreen"]


class HelpScreen(ModalScreen[None]):
    """A table of keys: what they do and where they work."""

    CSS_PATH = "help.tcss"
    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close", id="help.close")]

    def compose(self) -> ComposeResult:
        with Vertical(id="help"):
            yield Label("chatui keys", id="help-title")
            table: DataTable[Text | str] = DataTable(
                id="help-table", cursor_type="row", zebra_stripes=True
            )
            table.add_columns("key", "does", "where")
            for key in KEYS:
                table.add_row(Text(key.keys, style="bold"), key.action, key.where)
            yield table
            yield Label(
                "Commands without a key (compact now, rename, export, import, theme) "
                "are in the command palette: ctrl+p. escape closes this.",
                id="help-hint",
            )

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
