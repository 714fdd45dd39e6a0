"""PostgreSQL: a server named by a `postgresql://` URL, `tsvector` search.

Design notes:
- Opened with peewee's `playhouse.postgres_ext.Psycopg3Database` (psycopg 3)
  from the URL's parts as `playhouse.db_url` reads them; query parameters
  pass through to psycopg (`?options=-csearch_path%3Dmine`, `sslmode=…`).
  Connections are per thread and in autocommit outside `Store.write()`.
- The password never leaves this module: every message names
  `redact_url(url)`, and the driver's own error text is scrubbed too.
- A server that does not answer raises `DatabaseUnavailableError` (the CLI
  maps it to its own exit code); a schema holding tables but no
  `schema_migrations` is another program's and is refused unchanged.
- Search: `messages_fts` / `search_entries_fts` are plain tables holding
  the terms `text_prep.tokens` decided (the same row FTS5 holds), whose
  `tsv` column is generated from them by `chatui_tsvector` (each term at
  its position, nothing stemmed or dropped again; m011), under a GIN index.
  Queries are `tsquery` literals (`search.tsquery_expression`) from the same
  parsed query FTS5 gets, so both engines find the same messages. Ranking
  is `ts_rank`; snippets are cut in Python from the rows returned.
- Durability (`Store(durability=…)`): "full" leaves the server's
  `synchronous_commit` alone (on by default: a commit waits for its WAL
  flush); "final" (the default) turns it off for the commits of writes a
  later one supersedes (a streaming reply's flushes, `SET LOCAL`); "relaxed"
  turns it off for the connection. Off loses nothing when chatui or its
  terminal is killed, only when the server or its OS crashes within ~0.6 s
  (3 × `wal_writer_delay`) of the commit, and never corrupts. The figures
  are in the README (an append is 5 round trips and a WAL flush).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from peewee import DatabaseError as PeeweeDatabaseError
from peewee import InterfaceError, OperationalError
from playhouse import db_url
from playhouse.postgres_ext import Psycopg3Database

from ..driver import load_psycopg
from ..errors import DatabaseFileError, DatabaseUnavailableError
from ..schema import MODELS
from ..search import tsquery_expression
from ..urls import redact_url, redact_urls_in
from . import pg_text
from .base import BROAD, SEQ_BITS, SEQ_MASK, Durability, Engine

if TYPE_CHECKING:
    from ..search import Query

__all__ = ["PostgresEngine"]

log = logging.getLogger(__name__)

# Any number, so that two chatui processes opening one new database migrate one at a time.
_MIGRATION_LOCK = 0x63686174


# What psycopg 3 says when the server has ended a connection (peewee wraps it).
_GONE = (
    "terminating connection",
    "server closed the connection",
    "consuming input failed",
    "the connection is closed",
    "the connection is lost",
    "connection already closed",
)


# An append as one statement (see `PostgresEngine.append_in_one`). Every CTE runs
# once, on the statement's snapshot; `ins` writes only when the message is new,
# its parent (if named) is there, the session has its search number and, when
# touching, is not deleted. ON CONFLICT: another writer stored the id meanwhile.
APPEND_IN_ONE = f"""
WITH found AS (
    SELECT id FROM messages WHERE session_id = %(session_id)s AND id IN (%(id)s, %(parent_id)s)
), scope AS (
    SELECT n FROM search_scopes WHERE session_id = %(session_id)s
), ins AS (
    INSERT INTO messages (id, session_id, parent_id, role, content, created_at,
                          from_user_id, from_agent_id, delivered_to_session_id, token_usage)
    SELECT %(id)s, %(session_id)s, %(parent_id)s, %(role)s, %(content)s, %(created_at)s,
           %(from_user_id)s, %(from_agent_id)s, %(delivered_to_session_id)s, %(token_usage)s
    WHERE NOT EXISTS (SELECT 1 FROM found WHERE id = %(id)s)
      AND (%(parent_id)s::text IS NULL OR EXISTS (SELECT 1 FROM found WHERE id = %(parent_id)s))
      AND EXISTS (SELECT 1 FROM scope)
      AND (%(touched_at)s::text IS NULL OR EXISTS (
          SELECT 1 FROM sessions WHERE id = %(session_id)s AND deleted_at IS NULL))
    ON CONFLICT (session_id, id) DO NOTHING
    RETURNING seq
), idx AS (
    INSERT INTO messages_fts (rowid, body)
    SELECT ((SELECT n FROM scope) << {SEQ_BITS}) + ins.seq, %(body)s FROM ins
), touched AS (
    UPDATE sessions SET updated_at = %(touched_at)s
    WHERE %(touched_at)s::text IS NOT NULL AND id = %(session_id)s AND EXISTS (SELECT 1 FROM ins)
)
SELECT seq FROM ins
"""


# SQLSTATE → what a person can do about a failed write (classes 08 and 57P0x are
# a lost connection; see `PostgresEngine.failure_advice`).
_ADVICE = {
    "53100": "The PostgreSQL server's disk is full ({where}): its administrator must "
    "free space; then try again.",
    "53200": "The PostgreSQL server ({where}) is out of memory: try again in a moment.",
    "53300": "The PostgreSQL server ({where}) takes no more connections: close other "
    "clients or ask its administrator to raise max_connections, then try again.",
    "25006": "The PostgreSQL server ({where}) accepts no writes (a read-only replica or "
    "database): point chatui at the primary server.",
    "42501": "The PostgreSQL user may not write chatui's tables ({where}): ask the "
    "server's administrator for the grants.",
    "57014": "The PostgreSQL server ({where}) cancelled the write (a statement timeout "
    "or an administrator): try again.",
    "55P03": "Another session holds a lock the write needed ({where}): try again.",
    "40001": "The write met a concurrent one ({where}): try again.",
    "40P01": "The write met a concurrent one ({where}): try again.",
}
_LOST = (
    "The connection to the PostgreSQL server ({where}) was lost: it restarted, the "
    "network dropped, or an administrator ended it. chatui reconnects by itself; try "
    "again when the server answers."
)


def _driver_error(exc: BaseException) -> BaseException:
    """psycopg's own exception (it carries the SQLSTATE) behind peewee's wrapper."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        if getattr(current, "sqlstate", None):
            return current
        seen.append(current)
        wrapped = current.args[0] if current.args else None
        current = (
            (wrapped if isinstance(wrapped, BaseException) else None)
            or current.__cause__
            or current.__context__
        )
    return exc


class ReconnectingPostgres(Psycopg3Database):
    """A connection the server ended (a restart, a failover, an admin) is replaced.

    Outside a transaction a statement that meets a dead connection runs again
    on a new one (as peewee's `ReconnectMixin` does, for psycopg 3's messages and
    its `named_cursor` argument), and `connection()` hands out a new connection
    in place of one known to be broken. Inside a transaction nothing is
    retried: the error reaches the caller (the server has rolled it back
    anyway) and the next transaction starts on a new connection.
    """

    relaxed = False
    """Every commit of this database's connections skips the wait for its WAL flush."""

    def _initialize_connection(self, conn: Any) -> None:
        pg_text.install(conn)  # NUL in any string (see `pg_text`)
        if self.relaxed:
            conn.execute("SET synchronous_commit = off")

    def _gone(self, exc: Exception) -> bool:
        return (
            isinstance(exc, OperationalError | InterfaceError)
            and not self.in_transaction()
            and any(text in str(exc).lower() for text in _GONE)
        )

    def _reopen(self) -> None:
        log.warning("the PostgreSQL server ended the connection; reconnecting")
        self.close()
        self.connect()

    def connection(self) -> Any:
        conn = super().connection()
        if (conn.closed or conn.broken) and not self.in_transaction():
            self._reopen()
            conn = super().connection()
        return conn

    def execute_sql(self, sql: str, params: Any = None, named_cursor: Any = None) -> Any:
        try:
            return super().execute_sql(sql, params, named_cursor=named_cursor)
        except Exception as exc:
            if not self._gone(exc):
                raise
        self._reopen()
        return super().execute_sql(sql, params, named_cursor=named_cursor)

    def begin(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().begin(*args, **kwargs)
            return
        except Exception as exc:
            if not self._gone(exc):
                raise
        self._reopen()
        super().begin(*args, **kwargs)

    def _close(self, conn: Any) -> None:
        try:
            super()._close(conn)
        except Exception:  # closing a connection the server already ended
            log.debug("closing a dead connection failed", exc_info=True)


class PostgresEngine(Engine):
    """A PostgreSQL database (tables in the connection's current schema)."""

    name = "postgres"
    label = "PostgreSQL"
    _distinct = "IS DISTINCT FROM"

    def __init__(self, url: str, *, busy_timeout: float, durability: Durability = "final") -> None:
        self.url = url
        """The URL as given, password included: for connecting, never for showing (`path` is)."""
        self.path = redact_url(url)
        try:
            params = db_url.parse(url, unquote_password=True, unquote_user=True)
        except ValueError as exc:  # a port like 99999 or "abc": urllib refuses it
            raise DatabaseFileError(f"{self.path}: not a valid PostgreSQL URL ({exc})") from None
        database = params.pop("database", "") or ""
        if not database:
            raise DatabaseFileError(f"{self.path}: the URL names no database (…/dbname)")
        self._password = str(params.get("password") or "")
        self._checked = False
        params.setdefault("connect_timeout", max(1, int(busy_timeout)))
        params.setdefault("application_name", "chatui")
        load_psycopg()
        self.durability = durability
        self.db = ReconnectingPostgres(database, autoconnect=False, **params)
        self.db.relaxed = durability == "relaxed"

    def _scrub(self, text: str) -> str:
        text = redact_urls_in(text)
        if self._password:
            text = text.replace(self._password, "***")
        return " ".join(text.split())

    def connect(self) -> None:
        try:
            self.db.connect(reuse_if_open=True)
        except (OperationalError, InterfaceError, PeeweeDatabaseError) as exc:
            raise DatabaseUnavailableError(
                f"{self.path}: cannot connect to the PostgreSQL server: {self._scrub(str(exc))}"
            ) from None  # the driver's exception may hold the connection string
        if self._checked:  # once: other threads' connections open the same schema
            return
        tables = {
            r[0]
            for r in self.db.execute_sql(
                "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema()"
            ).fetchall()
        }
        if tables and "schema_migrations" not in tables:
            shown = ", ".join(sorted(tables)[:3])
            self.db.close()
            raise DatabaseFileError(
                f"{self.path}: not a chatui database (it holds {shown}); left unchanged"
            )
        self._checked = True

    def execute(self, conn: Any, sql: str, params: Any) -> Any:
        # Through peewee's `execute_sql`: psycopg's errors become peewee's, as the
        # builder's own queries raise them (callers catch one family; SQLite keeps
        # sqlite3's), and a connection the server ended is replaced (see
        # `ReconnectingPostgres`). `conn` is that same connection.
        del conn
        return self.db.execute_sql(sql, params or None)

    def append_in_one(self, row: dict[str, Any], body: str, touched_at: str | None) -> int | None:
        # An append in a write transaction was 5 round trips (BEGIN, read, insert,
        # search row, COMMIT: 0.10-0.15 ms each on loopback, more when the machine
        # is busy); as one statement in autocommit it is 1, atomic by itself.
        if self.db.in_transaction():  # a failure would abort the caller's transaction
            return None
        rows = self.rows(APPEND_IN_ONE, {**row, "body": body, "touched_at": touched_at})
        return int(rows[0][0]) if rows else None

    def prepare_migrations(self) -> None:
        self.db.execute_sql("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))

    def write(self, *, durable: bool = True) -> Any:
        if durable or self.durability != "final" or self.db.in_transaction():
            return self.db.atomic()
        return self._superseded_write()

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Any]:
        # READ COMMITTED (the default) gives each statement a snapshot of its own:
        # `db info` would count messages and their search rows at two moments.
        if self.db.in_transaction():
            with self.db.atomic() as savepoint:
                yield savepoint
            return
        with self.db.atomic(isolation_level="REPEATABLE READ") as transaction:
            self.db.execute_sql("SET TRANSACTION READ ONLY")
            yield transaction

    @contextlib.contextmanager
    def _superseded_write(self) -> Iterator[Any]:
        with self.db.atomic() as transaction:
            # One more round trip (~0.1 ms) saves the wait for the WAL flush (~0.4 ms).
            self.db.execute_sql("SET LOCAL synchronous_commit = off")
            yield transaction

    def size_bytes(self) -> int:
        row = self.db.execute_sql(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm')"
        ).fetchone()
        return int(row[0])

    def integrity_problems(self) -> list[str]:
        return self.index_problems()

    def refresh_statistics(self) -> None:
        # Autovacuum analyzes a grown table within a minute or so; until then the
        # planner guesses from an empty table's statistics (the bench's 1M copy ran
        # history through a hash join of a whole chat at every step before the
        # LATERAL rewrite). ANALYZE samples ~30,000 rows a table: ~1 s at 1M.
        # Named tables only: a bare ANALYZE would visit every schema's.
        tables = [model._meta.table_name for model in MODELS]
        self.db.execute_sql(f"ANALYZE {', '.join([*tables, 'messages_fts', 'search_entries_fts'])}")

    def unreachable(self, exc: BaseException) -> bool:
        if isinstance(exc, DatabaseUnavailableError):
            return True
        cause = _driver_error(exc)
        state = str(getattr(cause, "sqlstate", None) or "")
        if state in _ADVICE:  # the server answered: a full disk, a lock, a grant…
            return False
        if state.startswith("08") or state in ("57P01", "57P02", "57P03"):
            return True  # a connection failure; an admin's, a crash's or a start's end
        try:
            text = str(cause).lower()
        except Exception:  # an exception that cannot say itself
            text = ""
        if "no space left on device" in text or "could not extend file" in text:
            return False
        return any(gone in text for gone in _GONE) or (
            not state and isinstance(exc, OperationalError | InterfaceError)
        )

    def answers(self) -> bool:
        import psycopg  # loaded by `load_psycopg` already

        params = {k: v for k, v in self.db.connect_params.items() if v is not None}
        try:
            psycopg.connect(dbname=self.db.database, **params).close()
        except Exception:  # any reason: it does not answer now
            return False
        return True

    def failure_advice(self, exc: BaseException) -> str:
        where = self.path
        if self.unreachable(exc):
            return _LOST.format(where=where)
        cause = _driver_error(exc)
        state = str(getattr(cause, "sqlstate", None) or "")
        try:
            text = str(cause).lower()
        except Exception:  # advice must never fail: an exception that cannot say itself
            text = ""
        if state in _ADVICE:
            return _ADVICE[state].format(where=where)
        if "no space left on device" in text or "could not extend file" in text:
            return _ADVICE["53100"].format(where=where)
        return (
            f"Check that the PostgreSQL server ({where}) is running and has free disk "
            "space, then try again."
        )

    # -- search ---------------------------------------------------------------

    def search_messages(
        self, query: Query, limit: int, include_deleted: bool
    ) -> list[tuple[Any, ...]]:
        # Ranked on the index table alone; only the 20 best join `messages`. Joining
        # every match to `messages` (and each to its chat, for "deleted") before
        # ranking cost a 337-match word 7.3 of its 12 ms at 1M; the chats deleted
        # are a few, so they are left out by their scope numbers. Over the bench's
        # 100 words at 1M: p50 17.4 → 6.3 ms.
        deleted = (
            ""
            if include_deleted
            else f"""AND (f.rowid >> {SEQ_BITS}) NOT IN (
                SELECT sc.n FROM search_scopes sc JOIN sessions s ON s.id = sc.session_id
                WHERE s.deleted_at IS NOT NULL)"""
        )
        # Without `include_deleted` every chat left is live: "deleted" is FALSE, not a
        # lookup per result.
        gone = (
            "EXISTS (SELECT 1 FROM sessions s WHERE s.id = m.session_id AND s.deleted_at IS NOT NULL)"
            if include_deleted
            else "FALSE"
        )
        # The tsquery is written where the planner sees it (not only through a CTE):
        # from its statistics it reads a common word's rows in order and stops at
        # BROAD + 1 (1.5 ms at 100k), where through a CTE it read the GIN index's
        # whole posting list (38 ms).
        # A broad query is not ranked (see `BROAD`). One statement takes up to
        # BROAD + 1 matches (the GIN index for a rare word; for a common one the
        # planner may read rows until enough match), counts them in a window and
        # ranks them when that is all of them; only the `limit` best read their
        # message, and none does for a broad query (LIMIT 1 keeps the LATERAL a
        # subquery, whose condition on `n` the planner checks before the index).
        # A broad query then asks for its newest matches, which the planner reads
        # off the rowid index backwards, checking each row. The count in a window, not a MATERIALIZED
        # CTE counted and ranked apart, and no per-result "deleted" lookup: at 1M,
        # rare words (warm, 101 queries) 1.79 → 1.25 ms p50 for the statement.
        q = tsquery_expression(query)
        rows = self.rows(
            f"""
            SELECT t.n, m.id, m.role, m.content, m.created_at, m.session_id, t.score, m.gone
            FROM (
                SELECT h.rowid, h.n,
                       CASE WHEN h.n <= {BROAD} THEN -ts_rank(h.tsv, %(q)s::tsquery) END AS score
                FROM (
                    SELECT f.rowid, f.tsv, count(*) OVER () AS n FROM (
                        SELECT f.rowid, f.tsv FROM messages_fts f
                        WHERE f.tsv @@ %(q)s::tsquery {deleted} LIMIT {BROAD + 1}
                    ) f
                ) h
                ORDER BY score, (h.rowid & {SEQ_MASK}) DESC LIMIT %(limit)s
            ) t
            LEFT JOIN LATERAL (
                SELECT m.seq, m.id, m.role, m.content, m.created_at, m.session_id, {gone} AS gone
                FROM messages m WHERE t.n <= {BROAD} AND m.seq = (t.rowid & {SEQ_MASK})
                LIMIT 1
            ) m ON TRUE
            ORDER BY t.score, m.seq DESC
            """,
            {"q": q, "limit": int(limit)},
        )
        if rows and rows[0][0] > BROAD:
            rows = self.rows(
                f"""
                SELECT 0, m.id, m.role, m.content, m.created_at, m.session_id, 0.0, {gone}
                FROM (SELECT f.rowid FROM messages_fts f WHERE f.tsv @@ %s::tsquery {deleted}
                      ORDER BY f.rowid DESC LIMIT %s) t
                JOIN messages m ON m.seq = (t.rowid & {SEQ_MASK})
                ORDER BY t.rowid DESC
                """,
                (q, int(limit)),
            )
        return [(*r[1:6], float(r[6]), bool(r[7])) for r in rows if r[1] is not None]

    def search_session(
        self, query: Query, low: int, high: int, limit: int
    ) -> list[tuple[int, float]]:
        # Ranked by ts_rank (normalization 1: divided by 1 + log of the message's
        # length), which reads the row's own tsvector only, as the BM25 formula on
        # SQLite reads the row's own hits.
        rows = self.rows(
            "SELECT f.rowid, -ts_rank(f.tsv, q.q, 1) AS score"
            " FROM (SELECT %s::tsquery AS q) q"
            " JOIN messages_fts f ON f.tsv @@ q.q WHERE f.rowid >= %s AND f.rowid < %s"
            " ORDER BY score, f.rowid DESC LIMIT %s",
            (tsquery_expression(query), low, high, int(limit)),
        )
        return [(int(r[0]), float(r[1])) for r in rows]

    def match_rowids(self, query: Query) -> set[int]:
        rows = self.rows(
            "SELECT rowid FROM messages_fts WHERE tsv @@ %s::tsquery", (tsquery_expression(query),)
        )
        return {int(r[0]) for r in rows}

    def search_entries(self, namespace: str, query: Query, limit: int) -> list[tuple[str, str]]:
        rows = self.rows(
            "SELECT e.key, e.content "
            "FROM (SELECT %s::tsquery AS q) q "
            "JOIN search_entries_fts f ON f.tsv @@ q.q "
            "JOIN search_entries e ON e.rowid = f.rowid WHERE e.namespace = %s "
            "ORDER BY ts_rank(f.tsv, q.q) DESC, e.rowid LIMIT %s",
            (tsquery_expression(query), namespace, int(limit)),
        )
        return [(r[0], r[1]) for r in rows]
