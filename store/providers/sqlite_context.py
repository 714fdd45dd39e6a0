"""`StoreContextProvider`: a writable block kept in the store (the default)."""

from __future__ import annotations

from ..clock import iso, now
from ..db import Store
from ..schema import ContextBlock

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
        B = ContextBlock
        rows = self.store.rows(
            B.select(B.content).where(B.namespace == self.namespace, B.label == self.label)
        )
        return rows[0][0] if rows else ""

    async def set(self, content: str) -> None:
        """Replace the content."""
        if not isinstance(content, str):
            raise TypeError("block content must be a string")
        with self.store.write():
            B = ContextBlock
            self.store.run(
                B.insert(
                    namespace=self.namespace,
                    label=self.label,
                    content=content,
                    updated_at=iso(now()),
                ).on_conflict(
                    conflict_target=[B.namespace, B.label], preserve=[B.content, B.updated_at]
                )
            )

    def __repr__(self) -> str:
        return f"StoreContextProvider({self.namespace!r}, {self.label!r})"
