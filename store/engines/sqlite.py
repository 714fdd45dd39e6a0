"""SQLite: a file (or ":memory:"), WAL, FTS5 search.

Design notes:
- WAL, a busy timeout and `synchronous=NORMAL` are set on every connection;
  readers never block the writer, and a second process waits instead of
  failing with "database is locked".
- Writes take the lock up front (`BEGIN IMMEDIATE`): two deferred
  transactions that both read and then both write deadlock (SQLITE_BUSY
  with no wait).
- A file is looked at before anything writes to it: another program's
  SQLite file, or not SQLite at all, is refused unchanged.
- Search is FTS5 over the terms `text_prep.tokens` decided (its `ascii`
  tokenizer only splits them at the spaces between); the queries are raw SQL because
  FTS5's MATCH, bm25(), highlight() and snippet() are functions of a virtual
  table that peewee's builder only wraps, not abstracts.
"""

from __future__ import annotations

import operator
import os
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from peewee import DatabaseError as PeeweeDatabaseError
from peewee import SqliteDatabase

from ..errors import DatabaseFileError
from ..search import fts5_expression, scope_token, scoped_expression
from ..text_prep import MARK_CLOSE, MARK_OPEN
from ..urls import is_url
from .base import BROAD, SEQ_BITS, SEQ_MASK, Durability, Engine, rank_by_hits

if TYPE_CHECKING:
    from ..search import Query

__all__ = ["SqliteEngine"]

_SQLITE_MAGIC = b"SQLite format 3\x00"
# An append with nothing read before it (see `SqliteEngine.append_in_one`), the
# conditions PostgreSQL's `APPEND_IN_ONE` checks. When touching, the chat's time
# first, only if the chat is live and the parent (if named) is there; its search
# number when not known yet; the row, returning its seq; then its search row.
# Without touching, the row checks the parent itself: an INSERT whose SELECT reads
# the table it writes goes through a temporary table, which the touch avoids.
# A stored id fails the row's UNIQUE constraint: `ON CONFLICT DO NOTHING` said so
# without an error, but made each insert ~10% slower (a seek of its own, before
# the insert's).
_PARENT_THERE = "(?3 IS NULL OR EXISTS (SELECT 1 FROM messages WHERE session_id = ?2 AND id = ?3))"
_APPEND_TOUCH = (
    f"UPDATE sessions SET updated_at = ?1 WHERE id = ?2 AND deleted_at IS NULL AND {_PARENT_THERE}"
)
_APPEND_SCOPE = "SELECT n FROM search_scopes WHERE session_id = ?"
_COLUMNS = """messages (id, session_id, parent_id, role, content, created_at,
                      from_user_id, from_agent_id, delivered_to_session_id, token_usage)"""
_APPEND_ROW = f"INSERT INTO {_COLUMNS} VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
_APPEND_ROW_CHECKED = f"""
INSERT INTO {_COLUMNS}
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 WHERE {_PARENT_THERE}
RETURNING seq
"""
_APPEND_VALUES = operator.itemgetter(  # a row's values in _APPEND_ROW's order
    "id",
    "session_id",
    "parent_id",
    "role",
    "content",
    "created_at",
    "from_user_id",
    "from_agent_id",
    "delivered_to_session_id",
    "token_usage",
)
_APPEND_INDEX = f"INSERT INTO messages_fts (rowid, body) VALUES ((? << {SEQ_BITS}) + ?, ?)"
_DELETED_SCOPES = (
    "SELECT sc.n FROM search_scopes sc JOIN sessions s ON s.id = sc.session_id "
    "WHERE s.deleted_at IS NOT NULL"
)


class SqliteEngine(Engine):
    """A SQLite file, ":memory:" (per thread), or a `sqlite:///…` URL."""

    name = "sqlite"
    label = "SQLite"

    def __init__(
        self,
        location: str | os.PathLike[str],
        *,
        busy_timeout: float,
        durability: Durability = "final",
        read_only: bool = False,
    ) -> None:
        path = os.fspath(location)
        if is_url(path):
            # Imported here: playhouse.db_url loads every backend it knows (psycopg among
            # them, ~0.2 s of the app's start-up) even to read a sqlite URL.
            from playhouse import db_url

            # playhouse.db_url's reading: "sqlite:///rel.db", "sqlite:////abs.db"; no path is ":memory:".
            path = str(db_url.parse(path).get("database") or ":memory:")
        self.path = path
        self._checked = False
        # Session id → its search number, which never changes once given
        # (`message_search`): an append reads it once per chat, not each time.
        self._scopes: dict[str, int] = {}
        self.read_only = read_only and path != ":memory:"
        pragmas: dict[str, Any] = {"journal_mode": "wal"}
        database = self.path
        if self.read_only:
            # Opened for reading only (a read-only mount, a file we may not write):
            # nothing is written, not even the WAL pragma. Where no -shm can be
            # created beside it either, SQLite reads it as immutable: nobody can be
            # writing a file on a read-only folder.
            pragmas = {}
            folder = Path(path).resolve().parent
            database = f"{Path(path).resolve().as_uri()}?mode=ro"
            if not os.access(folder, os.W_OK):
                database += "&immutable=1"
        self.db = SqliteDatabase(
            database,
            uri=self.read_only,
            pragmas={
                **pragmas,
                "foreign_keys": 1,
                # WAL with NORMAL: a killed process loses nothing, a power loss may
                # lose the last commits (never corrupts). FULL syncs every commit.
                "synchronous": "full" if durability == "full" else "normal",
                "busy_timeout": int(busy_timeout * 1000),
                # 4 MB. A connection drops its whole cache when another one has
                # written, sweeping every slot of a hash sized by the most pages it
                # ever held: at 16 MB, after a search, that sweep made each append
                # or touch 15% slower (`bench/engine_table.py`, search no faster).
                "cache_size": -4_000,
                "temp_store": "memory",
            },
            timeout=busy_timeout,
            autoconnect=False,
            check_same_thread=False,
        )

    def connect(self) -> None:
        if self.path != ":memory:" and not self._checked:  # once: other threads reconnect
            _check_file(Path(self.path), create=not self.read_only)
            self._checked = True
        try:
            self.db.connect(reuse_if_open=True)
        except (sqlite3.DatabaseError, PeeweeDatabaseError) as exc:
            raise DatabaseFileError(
                f"{self.path}: cannot open as a SQLite database: {exc}"
            ) from exc

    def write(self, *, durable: bool = True) -> Any:
        return self.db.atomic("IMMEDIATE")

    def append_in_one(self, row: dict[str, Any], body: str, touched_at: str | None) -> int | None:
        # One write transaction on the connection itself, the raw minimal work (the
        # row and its search row) and the chat's time: the general path read the
        # message and its parent first and went through peewee's transaction: 2.5x
        # raw sqlite3's time then (`bench/engine_table.py`).
        if self.db.is_closed():
            self.connect()
        if self.db.in_transaction():  # inside the caller's: a savepoint, the general path
            return None
        conn = self.db.connection()
        sid = row["session_id"]
        scope = self._scopes.get(sid)
        conn.execute("BEGIN IMMEDIATE")
        try:
            live = (
                touched_at is None
                or conn.execute(_APPEND_TOUCH, (touched_at, sid, row["parent_id"])).rowcount == 1
            )
            if live and scope is None:
                numbered = conn.execute(_APPEND_SCOPE, (sid,)).fetchone()
                if numbered is not None:
                    scope = numbered[0]
                    if self.path != ":memory:":  # there, each thread has a database of its own
                        self._scopes[sid] = scope
            seq = None
            if live and scope is not None:
                try:
                    if touched_at is None:
                        found = conn.execute(_APPEND_ROW_CHECKED, _APPEND_VALUES(row)).fetchone()
                        seq = found and found[0]
                    else:  # one row, always: its seq is the rowid (RETURNING costs ~5%)
                        seq = conn.execute(_APPEND_ROW, _APPEND_VALUES(row)).lastrowid
                except sqlite3.IntegrityError:  # the id is stored already (or a CHECK failed)
                    seq = None
            if seq is None or seq > SEQ_MASK:
                conn.execute("ROLLBACK")  # nothing written: the general path says why
                return None
            conn.execute(_APPEND_INDEX, (scope, seq, body))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return int(seq)

    def snapshot(self) -> Any:
        # A deferred transaction holds its WAL snapshot from its first read on.
        return self.db.atomic()

    def size_bytes(self) -> int:
        conn = self.db.connection()
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        size = int(pages * page_size)
        if self.path != ":memory:":  # the WAL holds recent writes not yet in the file
            wal = Path(self.path + "-wal")
            size = max(size, Path(self.path).stat().st_size) + (
                wal.stat().st_size if wal.exists() else 0
            )
        return size

    def integrity_problems(self) -> list[str]:
        problems = [row[0] for row in self.rows("PRAGMA integrity_check") if row[0] != "ok"]
        for table in ("messages_fts", "search_entries_fts"):
            try:
                self.rows(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
            except sqlite3.DatabaseError as exc:
                problems.append(f"{table}: {exc}")
        return problems + self.index_problems()

    # -- search ---------------------------------------------------------------

    def search_messages(
        self, query: Query, limit: int, include_deleted: bool
    ) -> list[tuple[Any, ...]]:
        # Ranked on the index alone; only the `limit` best join `messages` (and
        # their chat, for "deleted"); a deleted chat's rows are left out by its
        # scope number, which the index row carries. A broad query (more than
        # BROAD matches: "the", "th*") is not ranked: bm25() first counts every
        # match of every term (1.25 s for `th*` at 1M); its newest matches come
        # first instead, which FTS5 reads straight off the end of its doclists.
        match = scoped_expression("body", fts5_expression(query))
        deleted = "" if include_deleted else f"AND (rowid >> {SEQ_BITS}) NOT IN ({_DELETED_SCOPES})"
        found = self.rows(
            f"SELECT count(*) FROM (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? "
            f"{deleted} ORDER BY rowid DESC LIMIT ?)",
            (match, BROAD + 1),
        )[0][0]
        best, order = (
            (
                f"SELECT rowid, bm25(messages_fts) AS score FROM messages_fts "
                f"WHERE messages_fts MATCH ? {deleted} ORDER BY score LIMIT ?",
                "t.score, m.seq DESC",
            )
            if found <= BROAD
            else (
                f"SELECT rowid, 0.0 AS score FROM messages_fts "
                f"WHERE messages_fts MATCH ? {deleted} ORDER BY rowid DESC LIMIT ?",
                "t.rowid DESC",
            )
        )
        return self.rows(
            f"""
            SELECT m.id, m.role, m.content, m.created_at, m.session_id, t.score,
                   s.deleted_at IS NOT NULL
            FROM ({best}) t
            JOIN messages m ON m.seq = (t.rowid & {SEQ_MASK})
            LEFT JOIN sessions s ON s.id = m.session_id
            ORDER BY {order}
            """,
            (match, int(limit)),
        )

    def search_session(
        self, query: Query, low: int, high: int, limit: int
    ) -> list[tuple[int, float]]:
        # FTS5 seeks into the rowid range; bm25() would weigh terms over the whole
        # index (as slow as the biggest word's history), so the rows are ranked here
        # by their hits, which highlight() marks in the index row (its terms).
        match = scoped_expression("body", fts5_expression(query))
        rows = self.rows(
            f"SELECT rowid, highlight(messages_fts, 0, '{MARK_OPEN}', '{MARK_CLOSE}') "
            "FROM messages_fts WHERE messages_fts MATCH ? AND rowid >= ? AND rowid < ? "
            "ORDER BY rowid DESC LIMIT ?",
            (match, low, high, BROAD),
        )
        ranked = rank_by_hits([(int(r[0]), str(r[1])) for r in rows], MARK_OPEN, limit)
        return [(rowid, score) for rowid, _, score in ranked]

    def match_rowids(self, query: Query) -> set[int]:
        match = scoped_expression("body", fts5_expression(query))
        return {
            int(r[0])
            for r in self.rows(
                "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", (match,)
            )
        }

    def search_entries(self, namespace: str, query: Query, limit: int) -> list[tuple[str, str]]:
        match = scoped_expression(
            "content", fts5_expression(query), "scope", scope_token(namespace)
        )
        rows = self.rows(
            "SELECT e.key, e.content FROM search_entries_fts f "
            "JOIN search_entries e ON e.rowid = f.rowid "
            "WHERE search_entries_fts MATCH ? AND e.namespace = ? "
            "ORDER BY bm25(search_entries_fts, 1.0, 0.0) LIMIT ?",
            (match, namespace, limit),
        )
        return [(r[0], r[1]) for r in rows]


def _check_file(path: Path, *, create: bool = True) -> None:
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
    elif not create:
        raise DatabaseFileError(f"{path}: no database there")
    else:
        parent = path.parent
        if not parent.exists():
            try:
                parent.mkdir(parents=True, mode=0o700)
            except OSError as exc:
                raise DatabaseFileError(
                    f"{path}: cannot create its folder: {exc.strerror}"
                ) from exc
        # Private from its first byte: chats are personal, and SQLite gives the -wal
        # and -shm files it makes beside a database that database's mode.
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            pass  # made meanwhile by another process: SQLite opens it as it is
        except OSError as exc:
            raise DatabaseFileError(f"{path}: cannot create: {exc.strerror}") from exc


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
