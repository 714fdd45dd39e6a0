"""The help screen (F1): every key in force — `chatui.tui.keys.KEYS` (what they do),
then every rebindable action (`[keys]` names it) with its keys as the config left them."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from ..keymap import catalogue
from ..keys import KEYS
from ..outage import SurvivesOutage
from .list_keys import LIST_BINDINGS, ListKeys

__all__ = ["HelpScreen"]


class HelpScreen(SurvivesOutage, ListKeys, ModalScreen[None]):
    """A table of keys: what they do and where they work."""

    CSS_PATH = "help.tcss"
    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close", id="help.close"), *LIST_BINDINGS]

    def __init__(self, keymap: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self.keymap = dict(keymap or {})
        """The keys `[keys]` rebinds (action id → keys); the rest are the defaults."""
        actions = catalogue()
        defaults = {a.id: a.keys for a in actions}
        self.rows: list[tuple[str, str, str, bool]] = [
            (k.keys_in_force(self.keymap, defaults), k.action, k.where, False) for k in KEYS
        ]
        """(keys, does, where, rebound) of each row drawn."""
        self.rows.append(("ACTIONS", "[keys] name · what it does", "", False))
        self.rows.extend(
            (
                self.keymap.get(a.id, a.keys).replace(",", ", "),
                f"{a.id} · {a.description}",
                a.where,
                a.id in self.keymap,
            )
            for a in actions
        )

    def compose(self) -> ComposeResult:
        with Vertical(id="help"):
            title = "chatui keys" + (" — your [keys] in force (marked)" if self.keymap else "")
            yield Label(Text(title), id="help-title")  # "[keys]" is no markup
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
        keys_width = min(max(len(r[0]) for r in self.rows), cap)
        where_width = min(max(len(r[2]) for r in self.rows), cap)
        # Each column is padded by one cell on both sides; two for the scrollbar.
        does_width = max(width - keys_width - where_width - 6 - 2, 16)
        row = table.cursor_row
        table.clear(columns=True)
        table.add_column("key", width=keys_width)
        table.add_column("does", width=does_width)
        table.add_column("where", width=where_width)
        for keys, does, where, rebound in self.rows:
            table.add_row(
                Text(keys, style="bold reverse" if rebound else "bold"),
                Text(does),
                Text(where, style="italic"),
                height=None,
            )
        if row:
            table.move_cursor(row=row)

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
