"""Copy a whole database into another one (`chatui db copy`), engine to engine.

Design notes and invariants:
- The copy goes model by model (`schema.MODELS`, parents before children)
  with every column as stored: ids, append numbers (`seq`), session search
  numbers, timestamps. The copy is the same history, not a re-import, so an
  export of it is identical to an export of the source.
- The destination is written in one transaction: a failure (a full disk, a
  dropped server, a bad row) leaves it as it was. The source is read in one
  transaction too, so a chat written meanwhile is copied whole or not at all.
- Search indexes are not copied row for row: each engine keeps its own
  (FTS5 on SQLite, `tsvector` on PostgreSQL), so the destination's index is
  rebuilt from the copied rows, in the same transaction, by the code that
  keeps it in step on every write (`message_search.index_body`).
- A destination that holds anything is refused; `replace=True` clears it
  first, inside the same transaction (so a failed copy still leaves it whole).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from peewee import SQL, AutoField, CompositeKey, Model, fn

from .db import Store, scope_token
from .errors import StoreError
from .message_search import index_body, index_rowid, scope_number
from .messages import Message
from .schema import (
    MODELS,
    EntryIndexRow,
    MessageIndexRow,
    MessageRow,
    SearchEntryRow,
    SearchScopeRow,
)
from .text_prep import index_tokens
from .urls import is_url, redact_url

__all__ = ["CopyError", "CopyReport", "copy_database", "same_database"]

BATCH = 500
"""Rows a batch insert carries (14 columns × 500 stays under SQLite's variable limit)."""
PAGE = 5_000
"""Rows read at a time."""


class CopyError(StoreError):
    """The copy cannot start (a non-empty destination, one database twice); nothing written."""


@dataclass(frozen=True)
class CopyReport:
    """What `copy_database` copied."""

    counts: dict[str, int] = field(default_factory=dict)
    """Rows copied per table, by table name."""
    replaced: dict[str, int] = field(default_factory=dict)
    """Rows the destination held before (`replace=True`), by table name."""


def row_counts(store: Store) -> dict[str, int]:
    """Rows per table of every model (one snapshot when called inside a transaction)."""
    return {
        model._meta.table_name: int(store.rows(model.select(fn.COUNT(SQL("*"))))[0][0])
        for model in MODELS
    }


def same_database(a: Store, b: Store) -> bool:
    """True when `a` and `b` are one database (one file, or one server database)."""
    return _identity(a) == _identity(b)


def _identity(store: Store) -> str:
    location = store.path  # a server URL here has its password redacted already
    if location == ":memory:":
        return f":memory:{id(store)}"
    if is_url(location):
        return location
    return os.path.realpath(location)


def copy_database(src: Store, dst: Store, *, replace: bool = False) -> CopyReport:
    """Copy every row of every table of `src` into `dst`, all or nothing.

    Args:
        replace: clear a destination that holds rows (in the copy's transaction)
            instead of refusing it.

    Returns:
        The rows copied (and, with `replace`, the rows the destination had).

    Raises:
        CopyError: `dst` holds rows (without `replace`), or is `src` itself.
        StoreError, peewee.DatabaseError: reading or writing failed; `dst` is unchanged.
    """
    if same_database(src, dst):
        raise CopyError("the source and the destination are the same database")
    with dst.write():
        before = row_counts(dst)
        held = {table: n for table, n in before.items() if n}
        if held and not replace:
            shown = ", ".join(f"{n} {table}" for table, n in sorted(held.items())[:4])
            raise CopyError(
                f"{redact_url(dst.path)} is not empty ({shown}); "
                "copy into a new or empty database, or pass --replace"
            )
        if held:
            for model in reversed(MODELS):
                dst.run(model.delete())
        counts: dict[str, int] = {}
        with src.snapshot():
            for model in MODELS:
                counts[model._meta.table_name] = _copy_model(src, dst, model)
        _rebuild_search_indexes(dst)
        _advance_sequences(dst)
        dst.refresh_statistics()  # a copy is the biggest write there is
    return CopyReport(counts=counts, replaced=held)


def _copy_model(src: Store, dst: Store, model: type[Model]) -> int:
    fields = model._meta.sorted_fields
    copied = 0
    for page in _pages(src, model.select(*fields), _key_order(model)):
        for batch in _batches(page, BATCH):
            dst.run(model.insert_many(batch, fields=fields))
            copied += len(batch)
    return copied


def _pages(store: Store, query: Any, order: list[Any]) -> Iterator[list[tuple[Any, ...]]]:
    """The query's rows a page at a time, in key order (memory stays flat at 1M rows).

    A single-column key pages by "key > last seen" (an index seek per page); a
    composite key's tables are small (blocks, skills, peer links) and come whole.
    The key must be the query's first column.
    """
    if len(order) != 1:
        yield store.rows(query.order_by(*order))
        return
    key = order[0]
    last: Any = None
    while True:
        page_query = query.order_by(key).limit(PAGE)
        if last is not None:
            page_query = page_query.where(key > last)
        rows = store.rows(page_query)
        if not rows:
            return
        yield rows
        last = rows[-1][0]


def _key_order(model: type[Model]) -> list[Any]:
    """The model's primary key columns, to read its rows in a stable order."""
    key: Any = model._meta.primary_key
    if isinstance(key, CompositeKey):
        return [model._meta.fields[name] for name in key.field_names]
    return [key]


def _batches(rows: Iterable[tuple[Any, ...]], size: int) -> Iterator[list[tuple[Any, ...]]]:
    iterator = iter(rows)
    while batch := list(islice(iterator, size)):
        yield batch


def _rebuild_search_indexes(store: Store) -> None:
    """Index every copied message and search entry, as their writes do one by one."""
    store.run(MessageIndexRow.delete())
    store.run(EntryIndexRow.delete())
    scopes = dict(store.rows(SearchScopeRow.select(SearchScopeRow.session_id, SearchScopeRow.n)))
    m = MessageRow
    query = m.select(m.seq, m.session_id, m.content, m.created_at)
    for batch in (b for page in _pages(store, query, [m.seq]) for b in _batches(page, BATCH)):
        rows = []
        for seq, session_id, content, created_at in batch:
            scope = scopes.get(session_id)
            if scope is None:  # a chat the source never gave a search number
                scope = scope_number(store, session_id, create=True)
                scopes[session_id] = scope
            message = Message.from_stored(json.loads(content), None, created_at)
            rows.append((index_rowid(int(scope or 0), seq), index_body(message)))
        store.run(
            MessageIndexRow.insert_many(rows, fields=[MessageIndexRow.rowid, MessageIndexRow.body])
        )
    e = SearchEntryRow
    entries = e.select(e.rowid, e.namespace, e.content)
    for batch in (b for page in _pages(store, entries, [e.rowid]) for b in _batches(page, BATCH)):
        store.run(
            EntryIndexRow.insert_many(
                [(rowid, index_tokens(content), scope_token(ns)) for rowid, ns, content in batch],
                fields=[EntryIndexRow.rowid, EntryIndexRow.content, EntryIndexRow.scope],
            )
        )


def _advance_sequences(store: Store) -> None:
    """After explicit ids, the next automatic id must follow the largest copied one.

    SQLite's AUTOINCREMENT counter follows explicit inserts by itself; a
    PostgreSQL sequence does not.
    """
    if store.engine_name != "postgres":
        return
    for model in MODELS:
        key = model._meta.primary_key
        if isinstance(key, AutoField):
            table, column = model._meta.table_name, key.column_name
            store.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                f"COALESCE((SELECT MAX({column}) FROM {table}), 0) + 1, false)"
            )
