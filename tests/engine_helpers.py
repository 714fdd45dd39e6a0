"""Small helpers for tests that run on both engines (see `conftest.BOTH_ENGINES`)."""

from __future__ import annotations

import sqlite3
from typing import Any

from store import Store


def is_postgres(store: Store) -> bool:
    return store.engine_name == "postgres"


def sql(store: Store, text: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
    """Run raw SQL written with `?` placeholders on either engine; its rows ([] for none)."""
    if is_postgres(store):
        text = text.replace("?", "%s")
    cursor = store.execute(text, params)
    return cursor.fetchall() if cursor.description else []


def integrity_error(store: Store) -> type[Exception]:
    """The IntegrityError a constraint the database enforces raises through the store
    (sqlite3's on SQLite; on PostgreSQL peewee's, which the store raises for psycopg's)."""
    if is_postgres(store):
        import peewee

        return peewee.IntegrityError
    return sqlite3.IntegrityError
