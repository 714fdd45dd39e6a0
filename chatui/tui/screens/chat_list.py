"""The chat list (ctrl+s): every chat, newest first — open, rename, delete, restore."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Label

from store import SessionInfo
from widgets import clean, one_line

from ...core.workspace import Workspace
from ..outage import SurvivesOutage
from .dialogs import TextPrompt
from .list_keys import LIST_BINDINGS, ListKeys

__all__ = ["ChatListScreen", "relative_time"]

log = logging.getLogger(__name__)


def relative_time(when: datetime, now: datetime | None = None) -> str:
    """ "just now", "5 min ago", "3 h ago", "yesterday", "Oct 03", "2024-10-03"."""
    now = now or datetime.now(UTC)
    seconds = (now - when).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    if seconds < 2 * 86400:
        return "yesterday"
    local = when.astimezone()
    return (
        local.strftime("%b %d")
        if local.year == now.astimezone().year
        else local.strftime("%Y-%m-%d")
    )


class ChatListScreen(SurvivesOutage, ListKeys, ModalScreen[str | None]):
    """Dismisses with the id of the chat to open, or None."""

    CSS_PATH = "chat_list.tcss"
    BINDINGS = [
        Binding("escape", "close", "Close", id="chats.close"),
        # Not a priority binding: one is answered as the key arrives, ahead of keys
        # still on their way through the table (down then enter opened the chat the
        # cursor had left on a loaded machine). The table's enter selects the row; the
        # filter's submits, and both open the chat under the cursor.
        Binding("enter", "open", "Open", id="chats.open"),
        Binding("r", "rename", "Rename", id="chats.rename"),
        Binding("d,delete", "delete", "Delete", id="chats.delete"),
        Binding("u", "undo", "Undo delete", id="chats.undo"),
        Binding("t", "toggle_trash", "Deleted chats", id="chats.trash"),
        Binding("slash", "filter", "Filter", id="chats.filter"),
        *LIST_BINDINGS,
    ]

    def __init__(self, workspace: Workspace, current: str | None = None) -> None:
        super().__init__()
        self.workspace = workspace
        self.current = current
        self.live = set(workspace.live_chats)
        """Chats writing a reply now (their status reads "writing…")."""
        self.show_deleted = False
        self.undo_stack: list[str] = []
        self.rows: list[SessionInfo | None] = []
        """One entry per table row: a chat, or None for a project heading."""
        self.filter_text = ""
        self._message_counts: dict[str, int] | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="chats"):
            yield Label("Chats", id="chats-title")
            yield Input(placeholder="/ to filter by name", id="chats-filter")
            table: DataTable[Text | str] = DataTable(
                id="chats-table", cursor_type="row", zebra_stripes=True
            )
            yield table
            yield Label("", id="chats-status")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        # When and how much come right after the name: at 80 columns the columns past
        # them scroll off to the right (the last activity showed one character).
        table.add_columns(
            "chat", "last activity", "msgs", "status", "model", "agent", "forked from"
        )
        self.reload()
        table.focus()

    # -- data -------------------------------------------------------------------

    def _counts(self) -> dict[str, int]:
        """Messages per chat, read once per visit (reloads come with every filter key)."""
        if self._message_counts is None:
            self._message_counts = self.workspace.message_counts()
        return self._message_counts

    def _groups(self, rows: list[SessionInfo]) -> list[tuple[str | None, list[SessionInfo]]]:
        """(project name, its chats) by project name, chats outside any project last;
        one unnamed group when there are no projects."""
        projects = {p.id: p.name for p in self.workspace.projects(include_archived=True)}
        if not any(r.project_id for r in rows):
            return [(None, rows)]
        grouped: dict[str | None, list[SessionInfo]] = {}
        for info in rows:
            grouped.setdefault(info.project_id if info.project_id in projects else None, []).append(
                info
            )
        ordered = sorted((k for k in grouped if k is not None), key=lambda k: projects[k].lower())
        groups: list[tuple[str | None, list[SessionInfo]]] = [
            (f"▾ {projects[k]}", grouped[k]) for k in ordered
        ]
        if None in grouped:
            groups.append(("▾ Chats outside any project", grouped[None]))
        return groups

    def changed_elsewhere(self) -> None:
        """Another process wrote: read the chats again, the cursor staying on its chat."""
        tables = self.query(DataTable)
        if not tables or not tables.first().columns:  # not mounted yet: on_mount reads them
            return
        self._message_counts = None
        selected = self.selected()
        self.reload(keep=selected.id if selected else None)

    def reload(self, keep: str | None = None) -> None:
        table = self.query_one(DataTable)
        try:  # every read before the table is touched: a failed one leaves it whole
            rows = self.workspace.list_chats(deleted=self.show_deleted)
            if self.filter_text:
                needle = self.filter_text.lower()
                rows = [r for r in rows if needle in r.name.lower()]
            names = self.workspace.chat_names()
            agents = self.workspace.agent_names()
            counts = self._counts()
            groups = self._groups(rows)
        except Exception as exc:
            if not self.workspace.store.unreachable(exc):
                raise
            log.warning("the chat list could not be read", exc_info=exc)
            self.query_one("#chats-status", Label).update(
                "The database does not answer: the list is as it was last read. "
                "Press escape, or wait and reopen it."
            )
            return
        self.rows = []
        table.clear()
        for header, infos in groups:
            if header is not None:
                table.add_row(Text(clean(header), "bold"), "", "", "", "", "", "")
                self.rows.append(None)
            for info in infos:
                table.add_row(*self._cells(info, names, agents, counts), key=info.id)
                self.rows.append(info)
        chats = "chat" if len(rows) == 1 else "chats"
        kind = f"deleted {chats} (enter restores)" if self.show_deleted else chats
        hint = "enter open · r rename · d delete · u undo · t deleted · / filter"
        self.query_one("#chats-status", Label).update(f"{len(rows)} {kind} · {hint}")
        target = keep or (self.current if not self.show_deleted else None)
        for index, row in enumerate(self.rows):
            if row is not None and (row.id == target or target is None):
                table.move_cursor(row=index)
                break

    def _cells(
        self,
        info: SessionInfo,
        names: dict[str, str],
        agents: dict[str, str],
        counts: dict[str, int],
    ) -> list[Text | str]:
        name = Text(one_line(info.name or "Untitled", self._name_width()))
        if info.id == self.current:
            name.stylize("bold")
            name.append(" ●", "bold")
        parent = info.parent_session_id
        lineage = Text("⑂ " + one_line(names.get(parent, parent), 24)) if parent else Text("")
        if info.id in self.live:
            status = "writing…"
        elif info.status == "awaiting_peer" and info.status_detail:
            status = info.status_detail
        else:
            status = info.status
        if info.id in self.live:
            name.append(" ✎", "italic")
        return [
            name,
            relative_time(info.updated_at),
            str(counts.get(info.id, 0)),
            clean(status),
            clean(info.model or ""),
            clean(agents.get(info.agent_id or "", "")),
            lineage,
        ]

    def _name_width(self) -> int:
        """Names are cut to leave the last activity, the count and the status in view
        (44 columns on a wide screen; fewer at 80)."""
        width = self.query_one(DataTable).size.width or self.app.size.width
        return max(min(44, width - 44), 12)

    def on_resize(self) -> None:
        if self.query_one(DataTable).columns:
            selected = self.selected()
            self.reload(keep=selected.id if selected else None)

    def _say(self, text: str, *, timeout: float = 3) -> None:
        """One notice at a time: stacked toasts covered the list's rows."""
        self.app.clear_notifications()
        self.notify(text, timeout=timeout)

    def selected(self) -> SessionInfo | None:
        table = self.query_one(DataTable)
        if not self.rows or table.cursor_row < 0 or table.cursor_row >= len(self.rows):
            return None
        return self.rows[table.cursor_row]

    # -- actions ----------------------------------------------------------------

    def action_close(self) -> None:
        if self.query_one("#chats-filter", Input).has_focus:
            self.query_one(DataTable).focus()
            return
        self.dismiss(None)

    def action_open(self) -> None:
        info = self.selected()
        if info is None:
            return
        if info.deleted_at is not None:
            self.workspace.restore_chat(info.id)
            self._say(f"Restored {info.name!r}")
        self.dismiss(info.id)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_rename(self) -> None:
        info = self.selected()
        if info is None:
            return

        def done(name: str | None) -> None:
            if name and name.strip():
                self.workspace.rename_chat(info.id, name)
                self.reload(keep=info.id)

        self.app.push_screen(TextPrompt("Rename chat", info.name), done)

    async def action_delete(self) -> None:
        info = self.selected()
        if info is None or info.deleted_at is not None:
            return
        await self.workspace.delete_chat(info.id)  # a reply it writes is stored first
        self.live.discard(info.id)
        self.undo_stack.append(info.id)
        self._say(
            f"Deleted {info.name!r} — press u to undo (or restore it from the "
            "deleted chats with t)",
            timeout=6,
        )
        self.reload()

    def action_undo(self) -> None:
        if not self.undo_stack:
            self._say("Nothing to undo")
            return
        session_id = self.undo_stack.pop()
        info = self.workspace.restore_chat(session_id)
        self._say(f"Restored {info.name!r}")
        self.reload(keep=session_id)

    def action_toggle_trash(self) -> None:
        self.show_deleted = not self.show_deleted
        self.query_one("#chats-title", Label).update(
            "Deleted chats" if self.show_deleted else "Chats"
        )
        self.reload()

    def action_filter(self) -> None:
        self.query_one("#chats-filter", Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self.reload()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_open()

    def action_list_move(self, step: int) -> None:
        """Up and down move the list's cursor from the filter too (typing stays there)."""
        if self.query_one("#chats-filter", Input).has_focus:
            table = self.query_one(DataTable)
            move = table.action_cursor_down if step > 0 else table.action_cursor_up
            move()
            return
        super().action_list_move(step)
