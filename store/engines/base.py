"""`Engine`: what an engine must provide to `Store` (see the package docstring)."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from peewee import Database

if TYPE_CHECKING:
    from ..search import Query

__all__ = ["BROAD", "DURABILITIES", "Durability", "Engine", "SEQ_BITS", "SEQ_MASK", "rank_by_hits"]

Durability = Literal["full", "final", "relaxed"]
"""When a commit waits for the database's disk (see `Store`)."""
DURABILITIES: tuple[Durability, ...] = ("full", "final", "relaxed")

# A message's index rowid is (its session's number << SEQ_BITS) + its seq (see
# `message_search`); the engines' search SQL takes the seq back with SEQ_MASK.
SEQ_BITS = 32
SEQ_MASK = (1 << SEQ_BITS) - 1


BROAD = 2_000
"""A query matching more messages than this is broad ("the", "th*"): its
newest matches come first, unranked. Ranking needs every match's statistics
(bm25() reads each term's whole doclist; ts_rank each match's row), which for
a word in half of 1M messages took over a second; the best of thousands of
equally plain matches is no better an answer than the newest. A search in one
chat ranks its newest BROAD matches."""

K1, B = 1.2, 0.75  # the usual BM25 constants, as FTS5's bm25() uses
_TOKEN = re.compile(r"\w+", re.UNICODE)


def rank_by_hits(
    marked: list[tuple[int, str]], mark: str, limit: int
) -> list[tuple[int, str, float]]:
    """Rows of one session ranked by the BM25 formula on their term hits (`mark`s in
    the marked text) and length, against the average length of these rows: no
    statistics of the whole index, so a one-chat search costs what the chat's own
    matches cost. Best first; among equals, the newest (highest rowid)."""
    if not marked:
        return []
    lengths = {rowid: len(_TOKEN.findall(text)) for rowid, text in marked}
    average = sum(lengths.values()) / len(lengths) or 1.0
    scored = []
    for rowid, text in marked:
        hits = text.count(mark)
        norm = K1 * (1 - B + B * lengths[rowid] / average)
        scored.append((-hits * (K1 + 1) / (hits + norm), -rowid, rowid, text))
    scored.sort()
    return [(rowid, text, score) for score, _, rowid, text in scored[:limit]]


class Engine(ABC):
    """One database engine behind a `Store`.

    Attributes:
        name: "sqlite" or "postgres" (what `chatui db info` prints).
        label: "SQLite" or "PostgreSQL" (for messages).
        db: the peewee database (connections per thread, `autoconnect=False`).
        path: what `Store.path` shows: the file, ":memory:", or the URL with
            its password redacted.
    """

    name: ClassVar[str]
    label: ClassVar[str]
    db: Database
    path: str

    @abstractmethod
    def connect(self) -> None:
        """Open this thread's connection; the first time, refuse a database chatui did not make.

        Raises:
            DatabaseFileError: not a chatui database, or not a database at all.
            DatabaseUnavailableError: the server does not answer.
        """

    def prepare_migrations(self) -> None:  # noqa: B027 - optional hook
        """Take whatever lock keeps two processes from migrating at once (in the open
        transaction); SQLite's write lock already does."""

    def execute(self, conn: Any, sql: str, params: Any) -> Any:
        """Run one raw statement on `conn` (this thread's connection); the cursor."""
        # psycopg reads "%" as a placeholder only when parameters are given.
        return conn.execute(sql, params) if params else conn.execute(sql)

    def rows(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        """Run one raw statement on this thread's connection (opened if needed); its rows."""
        if self.db.is_closed():
            self.connect()
        return list(self.execute(self.db.connection(), sql, params).fetchall())

    @abstractmethod
    def write(self, *, durable: bool = True) -> Any:
        """A write transaction (a savepoint when nested); `durable=False` for one a
        later write supersedes (see `Store.write`)."""

    def append_in_one(self, row: dict[str, Any], body: str, touched_at: str | None) -> int | None:
        """Insert a message `row` (its columns by name, `parent_id` None or an id), its
        search row (`body`) and, with `touched_at`, its session's `updated_at`, with
        nothing read first (one statement on PostgreSQL, one transaction on SQLite),
        outside any transaction; the new seq. None when it wrote nothing:
        the id is stored, the parent or the session's search number missing, the
        session deleted (with `touched_at`), or the engine has no such statement. The
        caller then takes the general path, which says which."""
        del row, body, touched_at
        return None

    @abstractmethod
    def snapshot(self) -> Any:
        """A read-only transaction that sees one state of the whole database (a
        savepoint of the open transaction when there is one)."""

    def refresh_statistics(self) -> None:  # noqa: B027 - optional hook
        """After a bulk write (a copy, a big import): let the query planner see the new
        rows now rather than when the server next gets round to it."""

    def failure_advice(self, exc: BaseException) -> str:
        """What to do when a write failed with `exc`: one sentence for a person, in
        this engine's terms (a file and its disk, or a server)."""
        del exc
        return "Free disk space and check the database file's permissions, then try again."

    def unreachable(self, exc: BaseException) -> bool:
        """`exc` says the database server cannot be reached now (down, restarting, the
        connection lost) and may answer later; never for a file."""
        del exc
        return False

    def answers(self) -> bool:
        """The database answers now: a new connection of its own, opened and closed,
        so any thread may ask (the caller's connection is left alone)."""
        return True

    @abstractmethod
    def size_bytes(self) -> int:
        """What the database takes on disk."""

    @abstractmethod
    def integrity_problems(self) -> list[str]:
        """Problems in the data and the search indexes ([] when healthy)."""

    # SQLite says `IS NOT`, PostgreSQL `IS DISTINCT FROM`: the one difference in the
    # index check below.
    _distinct: ClassVar[str] = "IS NOT"

    def index_problems(self) -> list[str]:
        """Messages missing from the message index, and index rows with no message."""
        missing = self.rows(
            "SELECT count(*) FROM messages m "
            "LEFT JOIN search_scopes s ON s.session_id = m.session_id "
            f"LEFT JOIN messages_fts f ON f.rowid = (s.n << {SEQ_BITS}) + m.seq "
            "WHERE f.rowid IS NULL"
        )[0][0]
        orphans = self.rows(
            "SELECT count(*) FROM messages_fts f "
            f"LEFT JOIN messages m ON m.seq = (f.rowid & {SEQ_MASK}) "
            "LEFT JOIN search_scopes s ON s.session_id = m.session_id "
            f"WHERE m.seq IS NULL OR s.n {self._distinct} (f.rowid >> {SEQ_BITS})"
        )[0][0]
        problems = []
        if missing:
            problems.append(f"{missing} messages are missing from the search index")
        if orphans:
            problems.append(f"{orphans} search rows have no message")
        return problems

    # -- full-text search (the one place the dialects truly differ) -------------

    @abstractmethod
    def search_messages(
        self, query: Query, limit: int, include_deleted: bool
    ) -> list[tuple[Any, ...]]:
        """Best first: (id, role, content, created_at, session_id, score (lower is
        better), deleted)."""

    @abstractmethod
    def search_session(
        self, query: Query, low: int, high: int, limit: int
    ) -> list[tuple[int, float]]:
        """The best `limit` rows with rowids in [low, high) (one session): (index rowid,
        score (lower is better)), best first."""

    @abstractmethod
    def match_rowids(self, query: Query) -> set[int]:
        """The index rowid of every message `query` matches, deleted chats' too (what
        the engines must agree on: the differential test compares these sets)."""

    @abstractmethod
    def search_entries(self, namespace: str, query: Query, limit: int) -> list[tuple[str, str]]:
        """(key, content) of the namespace's search entries, best first."""
