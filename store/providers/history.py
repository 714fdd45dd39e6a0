"""`HistorySearchProvider`: a search block over every past conversation.

`SessionManager.with_searchable_history()` gives each session one. Hits from
soft-deleted sessions are left out, as in `SessionManager.search`; the asking
session's own messages are not (an abandoned branch of this chat is worth
finding too).
"""

from __future__ import annotations

from peewee import SQL, fn

from ..db import Store
from ..message_search import search_messages
from ..messages import SearchResult
from ..schema import MessageRow, SessionRow
from ..search import query_problem

__all__ = ["HistorySearchProvider", "format_hits"]

TOP = 10


class HistorySearchProvider:
    """Read-only searchable block: `get()` says how much is searchable, `search` finds."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def get(self) -> str:
        """How many messages and conversations can be searched."""
        M, S = MessageRow, SessionRow
        gone = S.select(SQL("1")).where(S.id == M.session_id, S.deleted_at.is_null(False))
        messages, sessions = self.store.rows(
            M.select(fn.COUNT(SQL("*")), fn.COUNT(M.session_id.distinct())).where(~fn.EXISTS(gone))
        )[0]
        return f"{messages} messages in {sessions} conversations are searchable."

    async def search(self, query: str) -> str:
        """The top hits across every live session, as text for the model."""
        hits = search_messages(self.store, query, TOP)
        found = format_hits(self.store, hits) or f"No past messages match {query!r}."
        note = query_problem(query)  # the model can write a better query next time
        return f"{note}\n\n{found}" if note else found

    def __repr__(self) -> str:
        return "HistorySearchProvider()"


def format_hits(store: Store, hits: list[SearchResult]) -> str:
    """Search hits as text for a model: chat name, role, date, ids and snippet ("" for none)."""
    if not hits:
        return ""
    ids = sorted({h.session_id for h in hits})
    S = SessionRow
    names = dict(store.rows(S.select(S.id, S.name).where(S.id.in_(ids))))
    lines = []
    for hit in hits:
        when = hit.created_at.strftime("%Y-%m-%d") if hit.created_at else "?"
        name = names.get(hit.session_id, hit.session_id)
        lines.append(
            f"[{name} · {hit.role} · {when} · session {hit.session_id} · message "
            f"{hit.id}]\n{hit.snippet or hit.content[:300]}"
        )
    return "\n\n".join(lines)
