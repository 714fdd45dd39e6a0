"""Database engines: everything that differs between SQLite and PostgreSQL, and nothing else.

`Store` takes a location and asks `open_engine` for the engine that serves it:

- a file path, ":memory:" or a `sqlite:///…` URL → `SqliteEngine` (`sqlite.py`);
- a `postgresql://…` / `postgres://…` URL → `PostgresEngine` (`postgres.py`).

The rest of the store is written once, on `store.schema`'s models and peewee's
query builder, which renders each engine's dialect. An engine holds only what
the builder cannot say the same way on both: how to connect and what a
connection failure means, the write transaction (SQLite's `BEGIN IMMEDIATE`),
the full-text search queries (FTS5 against `tsvector`), size and integrity
checks. A newcomer looking for "the SQL for PostgreSQL" finds all of it here
(and the PostgreSQL baseline in `migrations`).
"""

from __future__ import annotations

import os

from ..urls import is_url, redact_url, url_scheme
from .base import DURABILITIES, Durability, Engine

__all__ = ["DURABILITIES", "Durability", "Engine", "open_engine", "POSTGRES_SCHEMES"]

POSTGRES_SCHEMES = ("postgresql", "postgres", "psycopg3")


def open_engine(
    location: str | os.PathLike[str],
    *,
    busy_timeout: float,
    durability: Durability = "final",
    read_only: bool = False,
) -> Engine:
    """The engine serving `location` (not yet connected); `read_only` opens a SQLite
    file for reading only (a server's grants decide that for PostgreSQL).

    Raises:
        DatabaseFileError: a URL of an engine chatui does not speak (password redacted).
    """
    from ..errors import DatabaseFileError

    if is_url(location):
        text = os.fspath(location)
        scheme = url_scheme(text).split("+", 1)[0]
        if scheme in POSTGRES_SCHEMES:
            if "://" not in text:  # a `Path` flattened it ("postgresql:/h/db"): unambiguous
                text = text.replace(":/", "://", 1)
            from .postgres import PostgresEngine

            return PostgresEngine(text, busy_timeout=busy_timeout, durability=durability)
        if scheme != "sqlite" or "://" not in text:  # "sqlite:/x" could mean /x or x
            raise DatabaseFileError(
                f"{redact_url(text)}: chatui opens SQLite files, sqlite:/// URLs and "
                "postgresql:// URLs only"
            )
    from .sqlite import SqliteEngine

    return SqliteEngine(
        location, busy_timeout=busy_timeout, durability=durability, read_only=read_only
    )
