"""`StoreSearchProvider`: keyed entries with a full-text index, searched by the model.

(The module keeps its historical name; the entries live in whichever engine
the store runs on: FTS5 on SQLite, tsvector on PostgreSQL.)
"""

from __future__ import annotations

from peewee import SQL, fn

from ..clock import iso, now
from ..db import Store, scope_token
from ..namespaces import index_entry
from ..schema import EntryIndexRow, SearchEntryRow
from ..search import parse_query, query_problem
from ..text_prep import index_tokens

__all__ = ["StoreSearchProvider"]

TOP = 10
E, X = SearchEntryRow, EntryIndexRow


class StoreSearchProvider:
    """Entries under a namespace; `search` returns the top 10 by full-text rank."""

    def __init__(self, store: Store, namespace: str) -> None:
        self.store = store
        self.namespace = namespace
        self.scope = scope_token(namespace)

    def count(self) -> int:
        """How many entries the namespace holds."""
        rows = self.store.rows(E.select(fn.COUNT(SQL("*"))).where(E.namespace == self.namespace))
        return int(rows[0][0])

    async def get(self) -> str:
        """The summary the prompt shows: how many entries are indexed."""
        n = self.count()
        if n == 0:
            return "No entries indexed yet."
        return f"{n} {'entry' if n == 1 else 'entries'} indexed."

    def find(self, query: str, limit: int = TOP) -> list[tuple[str, str]]:
        """(key, content) pairs, best first; never raises for any query string (one
        that is not a query is searched as its plain words: `search.query_problem`)."""
        parsed = parse_query(query)
        if parsed is None or limit <= 0:
            return []
        return self.store.engine.search_entries(self.namespace, parsed, int(limit))

    async def search(self, query: str) -> str:
        """The top 10 entries as `[key]` + content blocks, for the model (a query
        that is not one gets the reason, which the model can act on)."""
        hits = self.find(query)
        found = (
            "\n\n".join(f"[{key}]\n{content}" for key, content in hits)
            if hits
            else f"No results for {query!r}."
        )
        note = query_problem(query)  # the model can write a better query next time
        return f"{note}\n\n{found}" if note else found

    def _rowid(self, key: str) -> int | None:
        rows = self.store.rows(E.select(E.rowid).where(E.namespace == self.namespace, E.key == key))
        return int(rows[0][0]) if rows else None

    async def set(self, key: str, content: str) -> None:
        """Add or replace the entry under `key` (and its index row, in one transaction)."""
        if not isinstance(key, str) or not key.strip():
            raise ValueError("an entry key must be a non-empty string")
        if not isinstance(content, str):
            raise TypeError("entry content must be a string")
        stamp = iso(now())
        with self.store.write():
            rowid = self._rowid(key)
            if rowid is not None:
                self.store.run(E.update(content=content, updated_at=stamp).where(E.rowid == rowid))
                self.store.run(X.update(content=index_tokens(content)).where(X.rowid == rowid))
            else:
                rowid = self.store.run(
                    E.insert(namespace=self.namespace, key=key, content=content, updated_at=stamp)
                )
                index_entry(self.store, int(rowid), self.namespace, content)

    async def delete(self, key: str) -> bool:
        """Remove an entry; False when there was none."""
        with self.store.write():
            rowid = self._rowid(key)
            if rowid is None:
                return False
            self.store.run(X.delete().where(X.rowid == rowid))
            self.store.run(E.delete().where(E.rowid == rowid))
        return True

    def entries(self) -> list[tuple[str, str]]:
        """Every (key, content), by key."""
        rows = self.store.rows(
            E.select(E.key, E.content).where(E.namespace == self.namespace).order_by(E.key)
        )
        return [(r[0], r[1]) for r in rows]
