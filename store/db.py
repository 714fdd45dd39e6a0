"""`Store`: one SQLite database file, opened explicitly and migrated.

Design notes:
- WAL, a busy timeout and `synchronous=NORMAL` are set on every connection;
  readers never block the writer, and a second process waits instead of
  failing with "database is locked". (`foreign_keys` is on, but the tables
  declare none: parent links are checked by the code that writes them.)
- peewee connections are per thread. `:memory:` is therefore per thread too;
  code that crosses threads must use a file.
- Every multi-row write runs inside one `Store.write()` (BEGIN IMMEDIATE).
- Message storage stays behind `SessionProvider`, so another backend can slot
  in without touching `Session`'s tree logic (loaded-skill bookkeeping still
  uses this store directly).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from peewee import DatabaseError as PeeweeDatabaseError
from peewee import SqliteDatabase
from playhouse import db_url

from .errors import DatabaseFileError
from .migrations import migrate
from .urls import is_url, redact_url, url_scheme

__all__ = ["Store", "DEFAULT_MAX_ROW_BYTES", "scope_token"]

DEFAULT_MAX_ROW_BYTES = 1_048_576
_SQLITE_MAGIC = b"SQLite format 3\x00"


def scope_token(value: str) -> str:
    """A single FTS token standing for a session or namespace id.

    Hex digits and letters only, so the unicode61 tokenizer keeps it whole and
    ids that tokenize alike ("chat-1", "chat_1") still get distinct tokens.
    """
    return "s" + hashlib.blake2b(value.encode(), digest_size=10).hexdigest()


class Store:
    """A SQLite database holding sessions, messages, context and search indexes.

    Args:
        path: a file path, or ":memory:" for a private in-memory database.
        max_row_bytes: messages whose JSON exceeds this have their largest tool
            outputs shortened (they are never rejected).
        busy_timeout: seconds a writer waits for another process's lock.

    Raises:
        DatabaseFileError: the file is not a SQLite database or cannot be opened.
        SchemaVersionError: the file was written by a newer version.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        max_row_bytes: int = DEFAULT_MAX_ROW_BYTES,
        busy_timeout: float = 10.0,
    ) -> None:
        self.path = str(path)
        if is_url(path):
            self.path = _sqlite_path_of(os.fspath(path))
        if max_row_bytes < 1024:
            raise ValueError("max_row_bytes must be at least 1024")
        self.max_row_bytes = max_row_bytes
        if self.path != ":memory:":
            _check_file(Path(self.path))
        self.db = SqliteDatabase(
            self.path,
            pragmas={
                "journal_mode": "wal",
                "foreign_keys": 1,
                "synchronous": "normal",
                "busy_timeout": int(busy_timeout * 1000),
                "cache_size": -16_000,
                "temp_store": "memory",
            },
            timeout=busy_timeout,
            autoconnect=False,
            check_same_thread=False,
        )
        try:
            self.db.connect(reuse_if_open=True)
            migrate(self.db, self.path)
        except (sqlite3.DatabaseError, PeeweeDatabaseError) as exc:  # peewee wraps them
            self.db.close()
            raise DatabaseFileError(
                f"{self.path}: cannot open as a SQLite database: {exc}"
            ) from exc
        except BaseException:
            self.db.close()
            raise

    # -- connection ---------------------------------------------------------

    def connection(self) -> sqlite3.Connection:
        """The calling thread's connection (opened on first use)."""
        if self.db.is_closed():
            self.db.connect(reuse_if_open=True)
        return self.db.connection()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run one statement on this thread's connection (inside `write()` for writes)."""
        return self.connection().execute(sql, params)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement and return all its rows."""
        return self.connection().execute(sql, params).fetchall()

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

    def write(self) -> Any:
        """A write transaction that takes the write lock up front.

        `BEGIN IMMEDIATE` avoids the deadlock two deferred transactions get into
        when both read and then both try to write (SQLITE_BUSY with no wait).
        Nested use becomes a savepoint of the outer transaction.
        """
        self.connection()
        return self.db.atomic("IMMEDIATE")

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
        """Problems found in the file and its search indexes ([] when healthy)."""
        problems = [row[0] for row in self.query("PRAGMA integrity_check") if row[0] != "ok"]
        for table in ("messages_fts", "search_entries_fts"):
            try:
                self.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
            except sqlite3.DatabaseError as exc:
                problems.append(f"{table}: {exc}")
        # Index rowids are (session number << 32) + seq (see message_search).
        missing = self.query(
            "SELECT count(*) FROM messages m "
            "LEFT JOIN search_scopes s ON s.session_id = m.session_id "
            "LEFT JOIN messages_fts f ON f.rowid = (s.n << 32) + m.seq WHERE f.rowid IS NULL"
        )[0][0]
        orphans = self.query(
            "SELECT count(*) FROM messages_fts f "
            "LEFT JOIN messages m ON m.seq = (f.rowid & 4294967295) "
            "LEFT JOIN search_scopes s ON s.session_id = m.session_id "
            "WHERE m.seq IS NULL OR s.n IS NOT (f.rowid >> 32)"
        )[0][0]
        if missing:
            problems.append(f"{missing} messages are missing from the search index")
        if orphans:
            problems.append(f"{orphans} search rows have no message")
        return problems


def _sqlite_path_of(url: str) -> str:
    """The file a `sqlite:///…` URL names; any other URL is refused (password redacted)."""
    shown = redact_url(url)
    if url_scheme(url) != "sqlite" or "://" not in url:
        raise DatabaseFileError(
            f"{shown}: this version of chatui opens SQLite files and sqlite:/// URLs only "
            "(PostgreSQL support is being built)"
        )
    # playhouse.db_url's reading: "sqlite:///rel.db", "sqlite:////abs.db"; no path is ":memory:".
    return str(db_url.parse(url).get("database") or ":memory:")


def _check_file(path: Path) -> None:
    if path.is_dir():
        raise DatabaseFileError(f"{path}: is a directory, not a database file")
    if path.exists():
        try:
            with path.open("rb") as fh:
                head = fh.read(16)
        except OSError as exc:
            raise DatabaseFileError(f"{path}: cannot read: {exc.strerror}") from exc
        if head and head != _SQLITE_MAGIC:
            raise DatabaseFileError(f"{path}: not a SQLite database (is this the right file?)")
        if head:
            _refuse_foreign(path)
    else:
        parent = path.parent
        if not parent.exists():
            try:
                parent.mkdir(parents=True, mode=0o700)
            except OSError as exc:
                raise DatabaseFileError(
                    f"{path}: cannot create its folder: {exc.strerror}"
                ) from exc


def _refuse_foreign(path: Path) -> None:
    """Refuse another program's SQLite file before the WAL pragma or a migration writes to it.

    Looked at through an immutable read-only connection: no lock, no -wal/-shm, nothing
    written. A chatui file records `schema_migrations` in the transaction before its
    first table, so a file with tables but without it was made by someone else.
    """
    uri = f"{path.resolve().as_uri()}?mode=ro&immutable=1"
    for attempt in range(3):  # unlocked reads can meet another process's checkpoint
        try:
            conn = sqlite3.connect(uri, uri=True)
            try:
                rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                tables = {row[0] for row in rows}
            finally:
                conn.close()
            break
        except sqlite3.DatabaseError as exc:
            if attempt == 2:
                raise DatabaseFileError(f"{path}: cannot open as a SQLite database: {exc}") from exc
            time.sleep(0.05)
    if tables and "schema_migrations" not in tables:
        shown = ", ".join(sorted(tables)[:3])
        raise DatabaseFileError(f"{path}: not a chatui database (it holds {shown}); left unchanged")
