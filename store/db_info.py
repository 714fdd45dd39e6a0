"""What `chatui db info` shows: engine, schema version, row counts and size."""

from __future__ import annotations

from dataclasses import dataclass, field

from peewee import SQL, fn

from .db import Store
from .migrations import MIGRATIONS, applied_migrations
from .schema import MODELS
from .urls import redact_url

__all__ = ["DatabaseInfo", "database_info"]


@dataclass(frozen=True)
class DatabaseInfo:
    """A summary of one database (`location` never shows a password)."""

    engine: str
    location: str
    schema_version: int
    """How many migrations the database records (the code knows `latest_version`)."""
    latest_version: int
    last_migration: str
    counts: dict[str, int] = field(default_factory=dict)
    """Rows per table, by table name."""
    size_bytes: int = 0


def database_info(store: Store) -> DatabaseInfo:
    """Engine, schema version, row counts of every table and size of `store`."""
    with store.snapshot():  # every count at one moment
        applied = applied_migrations(store.db, create=False)  # opening the store made it
        counts = {
            model._meta.table_name: int(store.rows(model.select(fn.COUNT(SQL("*"))))[0][0])
            for model in MODELS
        }
        size = store.engine.size_bytes()
    return DatabaseInfo(
        engine=store.engine_name,
        location=redact_url(store.path),
        schema_version=len(applied),
        latest_version=len(MIGRATIONS),
        last_migration=applied[-1] if applied else "",
        counts=counts,
        size_bytes=size,
    )
