"""`HistorySearchProvider`: a search block over every past conversation.

`SessionManager.with_searchable_history()` gives each session one. Hits from
soft-deleted sessions are left out, as in `SessionManager.search`; the asking
session's own messages are not (an abandoned branch of this chat is worth
finding too).
"""

from __future__ import annotations

from ..db import Store
from ..message_search import search_messages
from ..messages import SearchResult

__all__ = ["HistorySearchProvider", "format_hits"]

TOP = 10


class HistorySearchProvider:
    """Read-only searchable block: `get()` says how much is searchable, `search` finds."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def get(self) -> str:
        """How many messages and conversations can be searched."""
        messages, sessions = self.store.query(
            "SELECT count(*), count(DISTINCT m.session_id) FROM messages m WHERE NOT EXISTS "
            "(SELECT 1 FROM sessions s WHERE s.id = m.session_id AND s.deleted_at IS NOT NULL)"
        )[0]
        return f"{messages} messages in {sessions} conversations are searchable."

    async def search(self, query: str) -> str:
        """The top hits across every live session, as text for the model."""
        hits = search_messages(self.store, query, TOP)
        return format_hits(self.store, hits) or f"No past messages match {query!r}."

    def __repr__(self) -> str:
        return "HistorySearchProvider()"


def format_hits(store: Store, hits: list[SearchResult]) -> str:
    """Search hits as text for a model: chat name, role, date, ids and snippet ("" for none)."""
    if not hits:
        return ""
    ids = sorted({h.session_id for h in hits})
    marks = ",".join("?" * len(ids))
    names = dict(store.query(f"SELECT id, name FROM sessions WHERE id IN ({marks})", ids))
    lines = []
    for hit in hits:
        when = hit.created_at.strftime("%Y-%m-%d") if hit.created_at else "?"
        name = names.get(hit.session_id, hit.session_id)
        lines.append(
            f"[{name} · {hit.role} · {when} · session {hit.session_id} · message "
            f"{hit.id}]\n{hit.snippet or hit.content[:300]}"
        )
    return "\n\n".join(lines)
