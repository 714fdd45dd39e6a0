"""`StoreSearchProvider`: keyed entries with an FTS5 index, searched by the model."""

from __future__ import annotations

from ..clock import iso, now
from ..db import Store, scope_token
from ..search import match_expression, scoped_expression
from ..text_prep import prepare

__all__ = ["StoreSearchProvider"]

TOP = 10


class StoreSearchProvider:
    """Entries under a namespace; `search` returns the top 10 by FTS5 rank."""

    def __init__(self, store: Store, namespace: str) -> None:
        self.store = store
        self.namespace = namespace
        self.scope = scope_token(namespace)

    def count(self) -> int:
        """How many entries the namespace holds."""
        return self.store.query(
            "SELECT count(*) FROM search_entries WHERE namespace = ?", (self.namespace,)
        )[0][0]

    async def get(self) -> str:
        """The summary the prompt shows: how many entries are indexed."""
        n = self.count()
        if n == 0:
            return "No entries indexed yet."
        return f"{n} {'entry' if n == 1 else 'entries'} indexed."

    def find(self, query: str, limit: int = TOP) -> list[tuple[str, str]]:
        """(key, content) pairs, best first; never raises for any query string."""
        expression = match_expression(query)
        if expression is None:
            return []
        match = scoped_expression("content", expression, "scope", self.scope)
        return [
            (r[0], r[1])
            for r in self.store.query(
                "SELECT e.key, e.content FROM search_entries_fts f "
                "JOIN search_entries e ON e.rowid = f.rowid "
                "WHERE search_entries_fts MATCH ? AND e.namespace = ? "
                "ORDER BY bm25(search_entries_fts, 1.0, 0.0) LIMIT ?",
                (match, self.namespace, limit),
            )
        ]

    async def search(self, query: str) -> str:
        """The top 10 entries as `[key]` + content blocks, for the model."""
        hits = self.find(query)
        if not hits:
            return f"No results for {query!r}."
        return "\n\n".join(f"[{key}]\n{content}" for key, content in hits)

    async def set(self, key: str, content: str) -> None:
        """Add or replace the entry under `key` (and its index row, in one transaction)."""
        if not isinstance(key, str) or not key.strip():
            raise ValueError("an entry key must be a non-empty string")
        if not isinstance(content, str):
            raise TypeError("entry content must be a string")
        stamp = iso(now())
        with self.store.write():
            rows = self.store.query(
                "SELECT rowid FROM search_entries WHERE namespace = ? AND key = ?",
                (self.namespace, key),
            )
            if rows:
                rowid = rows[0][0]
                self.store.execute(
                    "UPDATE search_entries SET content = ?, updated_at = ? WHERE rowid = ?",
                    (content, stamp, rowid),
                )
                self.store.execute(
                    "UPDATE search_entries_fts SET content = ? WHERE rowid = ?",
                    (prepare(content), rowid),
                )
            else:
                cursor = self.store.execute(
                    "INSERT INTO search_entries (namespace, key, content, updated_at) "
                    "VALUES (?, ?, ?, ?)",
                    (self.namespace, key, content, stamp),
                )
                self.store.execute(
                    "INSERT INTO search_entries_fts (rowid, content, scope) VALUES (?, ?, ?)",
                    (cursor.lastrowid, prepare(content), self.scope),
                )

    async def delete(self, key: str) -> bool:
        """Remove an entry; False when there was none."""
        with self.store.write():
            rows = self.store.query(
                "SELECT rowid FROM search_entries WHERE namespace = ? AND key = ?",
                (self.namespace, key),
            )
            if not rows:
                return False
            self.store.execute("DELETE FROM search_entries_fts WHERE rowid = ?", (rows[0][0],))
            self.store.execute("DELETE FROM search_entries WHERE rowid = ?", (rows[0][0],))
        return True

    def entries(self) -> list[tuple[str, str]]:
        """Every (key, content), by key."""
        return [
            (r[0], r[1])
            for r in self.store.query(
                "SELECT key, content FROM search_entries WHERE namespace = ? ORDER BY key",
                (self.namespace,),
            )
        ]
