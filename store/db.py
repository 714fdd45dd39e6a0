"""`Store`: one database — a SQLite file or a PostgreSQL server — opened explicitly and migrated.

Design notes:
- What differs between the engines lives in `store.engines` (connection,
  write transaction, full-text search, size); everything else is written
  once on `store.schema`'s models and run with `run` / `rows`, which bind a
  query to this store's database so peewee renders its dialect.
- peewee connections are per thread. `:memory:` is therefore per thread too;
  code that crosses threads must use a file (or a server).
- Every multi-row write runs inside one `Store.write()` (SQLite: BEGIN
  IMMEDIATE; PostgreSQL: BEGIN).
- Message storage stays behind `SessionProvider`, so another backend can slot
  in without touching `Session`'s tree logic (loaded-skill bookkeeping still
  uses this store directly).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from typing import Any

from peewee import DatabaseError as PeeweeDatabaseError

from .engines import DURABILITIES, Durability, Engine, open_engine
from .errors import DatabaseFileError
from .migrations import migrate
from .search import scope_token

__all__ = ["Store", "DEFAULT_MAX_ROW_BYTES", "Durability", "scope_token"]

DEFAULT_MAX_ROW_BYTES = 1_048_576


class Store:
    """A database holding sessions, messages, context and search indexes.

    Args:
        path: a file path, ":memory:" for a private in-memory database, a
            `sqlite:///…` URL, or a `postgresql://user:password@host:5432/db` URL.
        max_row_bytes: messages whose JSON exceeds this have their largest tool
            outputs shortened (they are never rejected).
        busy_timeout: seconds a writer waits for another process's lock (and,
            on PostgreSQL, the connection timeout).
        durability: when a commit waits until the write is on the database's
            disk. "full": every commit (SQLite `synchronous=FULL`). "final" (the
            default): every commit but those of writes a later one supersedes
            (`write(durable=False)`: a streaming reply's flushes), which on
            PostgreSQL skip the wait for the WAL flush. "relaxed": no commit
            waits (PostgreSQL `synchronous_commit = off`). A skipped wait loses
            nothing when the app or its terminal is killed; a crash of the
            PostgreSQL server or its OS can lose the commits of its last ~0.6 s,
            and nothing is ever corrupted. SQLite (WAL, `synchronous=NORMAL`)
            always behaves so on a power loss, except under "full".
        read_only: open a SQLite file for reading only (a read-only mount, a file
            this user may not write): nothing is written to it or beside it; a
            write raises. A file that needs migrating cannot be opened so.

    Raises:
        DatabaseFileError: not a chatui database, or the file cannot be opened.
        DatabaseUnavailableError: the PostgreSQL server does not answer.
        SchemaVersionError: the database was written by a newer version.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        max_row_bytes: int = DEFAULT_MAX_ROW_BYTES,
        busy_timeout: float = 10.0,
        durability: Durability = "final",
        read_only: bool = False,
    ) -> None:
        if max_row_bytes < 1024:
            raise ValueError("max_row_bytes must be at least 1024")
        if durability not in DURABILITIES:
            raise ValueError(f"durability must be one of {', '.join(DURABILITIES)}")
        self.durability: Durability = durability
        self.max_row_bytes = max_row_bytes
        self.engine: Engine = open_engine(
            path, busy_timeout=busy_timeout, durability=durability, read_only=read_only
        )
        self.path = self.engine.path
        """The file, ":memory:", or the server URL with its password redacted."""
        self.db = self.engine.db
        try:
            self.engine.connect()
            migrate(self.db, self.path, before=self.engine.prepare_migrations)
        except (sqlite3.DatabaseError, PeeweeDatabaseError) as exc:  # peewee wraps some
            self.db.close()
            raise DatabaseFileError(
                f"{self.path}: cannot open as a {self.engine.label} database: {exc}"
            ) from exc
        except BaseException:
            self.db.close()
            raise

    @property
    def engine_name(self) -> str:
        """ "sqlite" or "postgres"."""
        return self.engine.name

    # -- connection ---------------------------------------------------------

    def connection(self) -> Any:
        """The calling thread's DB-API connection (opened on first use)."""
        if self.db.is_closed():
            self.engine.connect()
        return self.db.connection()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement, in this engine's dialect and parameter style, on this
        thread's connection (inside `write()` for writes); the driver's cursor."""
        return self.engine.execute(self.connection(), sql, params)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement (this engine's dialect) and return all its rows."""
        return self.execute(sql, params).fetchall()

    def run(self, query: Any) -> Any:
        """Run one query built on `store.schema`'s models on this store.

        The models are unbound (several stores may be open at once); this binds
        the query to this store for this call only. Returns what peewee returns:
        the new row's id for an insert, the row count for an update or delete.
        """
        self.connection()
        return query.execute(self.db)

    def rows(self, query: Any) -> list[tuple[Any, ...]]:
        """Run a select built on `store.schema`'s models; its rows as plain tuples."""
        self.connection()
        return list(query.tuples().execute(self.db))

    def atomic(self) -> Any:
        """A transaction (or savepoint when nested) for multi-row writes."""
        self.connection()
        return self.db.atomic()

    def snapshot(self) -> Any:
        """A read-only transaction that sees one state of the whole database, for
        reads that must agree with each other (an export, `db info`, a copy's
        source). SQLite: a deferred transaction (its WAL snapshot); PostgreSQL:
        REPEATABLE READ, READ ONLY. Inside another transaction it is a savepoint
        of it, seeing what that one sees.
        """
        self.connection()
        return self.engine.snapshot()

    def write(self, *, durable: bool = True) -> Any:
        """A write transaction; nested use becomes a savepoint of the outer one.

        On SQLite it takes the write lock up front (`BEGIN IMMEDIATE`), which avoids
        the deadlock of two deferred transactions that both read, then both write.

        Args:
            durable: False for a write that a later one supersedes (a streaming
                reply's flush): under `durability="final"` its commit does not
                wait for the disk. Nested, it follows the outer transaction.
        """
        self.connection()
        return self.engine.write(durable=durable)

    def refresh_statistics(self) -> None:
        """After a bulk write: PostgreSQL's planner statistics are brought up to date
        (ANALYZE of chatui's tables); nothing on SQLite."""
        self.connection()
        self.engine.refresh_statistics()

    def failure_advice(self, exc: BaseException) -> str:
        """What a person can do after a write failed with `exc`, in this engine's
        terms: free disk space and check a SQLite file's permissions; for PostgreSQL
        a lost connection, the server's full disk, a read-only server, missing
        grants… (the URL shown with its password redacted). One sentence, ending
        "try again" where trying again may help."""
        return self.engine.failure_advice(exc)

    def unreachable(self, exc: BaseException) -> bool:
        """`exc` (from a read or a write) says the database server cannot be reached
        now — stopped, restarting, the network or the connection lost — so the same
        call may succeed later: keep what was to be written and try again. Always
        False on SQLite (a file is there or not; its errors need a person)."""
        return self.engine.unreachable(exc)

    def answers(self) -> bool:
        """The database answers now (PostgreSQL: a connection of its own is opened and
        closed, at most `busy_timeout` seconds; SQLite: always). Safe on any thread:
        run it off the event loop while the server is away."""
        return self.engine.answers()

    def close(self) -> None:
        """Close this thread's connection (safe to call twice)."""
        if not self.db.is_closed():
            self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.path!r})"

    # -- maintenance --------------------------------------------------------

    def integrity_check(self) -> list[str]:
        """Problems found in the database and its search indexes ([] when healthy)."""
        self.connection()
        return self.engine.integrity_problems()
