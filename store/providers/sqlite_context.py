"""`StoreContextProvider`: a writable block kept in the store (the default)."""

from __future__ import annotations

from ..clock import iso, now
from ..db import Store

__all__ = ["StoreContextProvider"]


class StoreContextProvider:
    """Writable text under (namespace, label) in the `context_blocks` table.

    Sessions wire it as `StoreContextProvider(store, session_id, label)`, so
    each session's blocks are its own.
    """

    def __init__(self, store: Store, namespace: str, label: str = "") -> None:
        self.store = store
        self.namespace = namespace
        self.label = label

    async def get(self) -> str:
        """The stored content ("" before the first write)."""
        rows = self.store.query(
            "SELECT content FROM context_blocks WHERE namespace = ? AND label = ?",
            (self.namespace, self.label),
        )
        return rows[0][0] if rows else ""

    async def set(self, content: str) -> None:
        """Replace the content."""
        if not isinstance(content, str):
            raise TypeError("block content must be a string")
        with self.store.write():
            self.store.execute(
                "INSERT INTO context_blocks (namespace, label, content, updated_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (namespace, label) DO UPDATE SET "
                "content = excluded.content, updated_at = excluded.updated_at",
                (self.namespace, self.label, content, iso(now())),
            )

    def __repr__(self) -> str:
        return f"StoreContextProvider({self.namespace!r}, {self.label!r})"
