"""Message-tree storage: the `SessionProvider` protocol and its `Store` implementation.

Design notes and invariants:
- A session's messages form a forest linked by `parent_id`; `seq` (an
  autoincrementing key on both engines) is the append order, which is what "latest" means.
- A message id is unique within its session. Appending an id that exists is
  a no-op that returns the stored message.
- The FTS row of a message is written in the same transaction as the
  message, so search never drifts (see `message_search` for its rowid).
- Providers return raw paths; `Session` applies compaction overlays.
- Deleting a message re-attaches its children to its parent, so deleting
  never makes other messages unreachable.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from peewee import JOIN, SQL, Select, Value, fn

from .clock import iso, now
from .db import Store
from .errors import UnknownMessageError, UnknownParentError, UnknownSessionError
from .message_search import (
    index_body,
    index_rowid,
    scope_number,
    scope_range,
    search_messages,
)
from .messages import LATEST, Latest, Message, MessageLike, SearchResult, StoredCompaction
from .micro import shrink_to_row_limit
from .prepared import Prepared
from .schema import (
    BlockWriteRow,
    CompactionRow,
    LoadedSkillRow,
    MessageIndexRow,
    MessageRow,
    SearchScopeRow,
    SessionRow,
)

__all__ = ["PathWalk", "SessionProvider", "StoreSessionProvider", "insert_messages", "walk_path"]

ParentRef = str | None | Latest
_PARENT_TYPES = (str, Latest)  # a tuple: `Latest | str` is built anew at each call

M = MessageRow
_COLUMNS = (M.seq, M.id, M.parent_id, M.role, M.content, M.created_at)


def ancestors(sid: Any, leaf: Any, steps: Any, *columns: Any, engine: str) -> Any:
    """A message and up to `steps` of its ancestors: the recursive CTE `path` of those
    `columns` of `MessageRow` (`parent_id` among them) and `depth`, 0 at `leaf`.

    Each step must be one lookup on the (session_id, id) index. SQLite plans the
    plain join that way. PostgreSQL's planner, guessing a few rows in the work
    table, hash-joins the chat's every message at every step instead: 130 steps
    over a 144-message chat read 18,834 buffers, 13.0 ms (EXPLAIN ANALYZE, 100k
    corpus). The step as a LATERAL subquery with LIMIT 1 can only be planned as
    the index lookup: 516 buffers, 1.8 ms; 0.7-0.9 ms a history through psycopg.
    SQLite has no LATERAL, so the step is shaped per engine; the rest is shared.
    """
    M = MessageRow
    names = [c.column_name for c in columns]
    path = (
        M.select(*columns, Value(0).alias("depth"))
        .where(M.session_id == sid, M.id == leaf)
        .cte("path", recursive=True, columns=(*names, "depth"))
    )
    up = M.alias("up")
    if engine == "postgres":
        parent = (
            up.select(*(getattr(up, n) for n in names))
            .where(up.session_id == sid, up.id == path.c.parent_id)
            .limit(SQL("1"))  # a literal: a prepared statement's generic plan sees it too
            .alias("parent")
        )
        step = (
            Select((path,), (*(getattr(parent.c, n) for n in names), path.c.depth + 1))
            .join(parent, JOIN.LATERAL, on=SQL("true"))
            .where(path.c.depth < steps)
        )
    else:
        step = (
            up.select(*(getattr(up, n) for n in names), path.c.depth + 1)
            .join(path, on=(up.session_id == sid) & (up.id == path.c.parent_id))
            .where(path.c.depth < steps)
        )
    return path.union_all(step)


def _climb(sid: Any, leaf: Any, steps: Any, *, columns: tuple[Any, ...], engine: str) -> Any:
    """A message and up to `steps` of its ancestors' `columns`, leaf first, in one
    statement (see `ancestors`): what `walk_path` falls back to."""
    if engine == "postgres":
        # The rows ride along the walk: 130 lookups by seq fewer, 1.29 → 1.07 ms
        # (raw psycopg, interleaved runs, 100k corpus).
        cte = ancestors(sid, leaf, steps, *columns, engine=engine)
        return (
            cte.select_from(*(getattr(cte.c, c.column_name) for c in columns))
            .order_by(cte.c.depth)
            .with_cte(cte)
        )
    # SQLite walks seqs and joins the rows at the end: carrying them was 0.31
    # against 0.28 ms.
    cte = ancestors(sid, leaf, steps, M.seq, M.parent_id, engine=engine)
    return (
        M.select(*columns)
        .from_(cte)
        .join(M, on=(M.seq == cte.c.seq))
        .order_by(cte.c.depth)
        .with_cte(cte)
    )


def _window(sid: Any, top: Any, *, columns: tuple[Any, ...], size: int) -> Any:
    """The session's `size` newest rows up to message `top` (itself included), newest
    first: one backward range scan of the (session_id, seq) index."""
    at = M.alias("at")
    seq = at.select(at.seq).where(at.session_id == sid, at.id == top)
    return (
        M.select(*columns)
        .where(M.session_id == sid, M.seq <= seq)
        .order_by(M.seq.desc())
        .limit(SQL(str(size)))  # a literal, as in `ancestors`
    )


_SLIM = (M.seq, M.id, M.parent_id)  # what a walk needs, when the rest is not wanted
_FIRST_WINDOW = 256  # rows: a chat's usual path, and its regenerated replies, in one read
_MAX_WINDOW = 8192
_SCATTERED = 4  # fewer than one row in this many on the path: climb the rest instead
_CLIMB_STEPS = 1024  # a statement's most: a corrupt parent cycle costs no more than this


@functools.cache
def _windows(size: int, full: bool) -> Prepared:
    return Prepared(functools.partial(_window, columns=_COLUMNS if full else _SLIM, size=size))


_CLIMB = {
    full: Prepared(functools.partial(_climb, columns=_COLUMNS if full else _SLIM))
    for full in (True, False)
}


def walk_path(
    store: Store, session_id: str, leaf_id: str, *, full: bool = True
) -> list[tuple[Any, ...]]:
    """The rows of message `leaf_id` and its ancestors, root first ([] when there is
    no such message): (seq, id, parent_id, role, content, created_at), or only
    (seq, id, parent_id) when not `full`.

    A parent is appended before its children, so its seq is lower: the path lies
    in the rows below the leaf's seq, mostly the newest of them. So the walk reads
    the chat's rows in windows of seqs ending at the message it has yet to find
    (one index range scan each, the first `_FIRST_WINDOW` rows) and follows
    `parent_id` in memory: one or two statements where the recursive walk
    (`ancestors`) is one index lookup per message. A 130-message path on
    PostgreSQL, 1M corpus, through the store: 0.27 ms its window, 0.62 ms the
    recursive walk; a 900-message one read whole (SQLite or PostgreSQL) took
    0.6× the time of the recursive walk (interleaved runs, rows decoded).
    Nothing depends on the seq order being kept, only the speed: a
    parent above its child is simply the next window's top. A path scattered
    among many other branches (fewer than one row in `_SCATTERED` of a window
    on it) is climbed the rest of the way by the recursive walk, so it costs at
    most one window more than it used to. A cycle ends the path before its
    first repeat. What the one read costs: a short path above many older rows
    (the first prompt of a long chat edited) reads rows it does not need, up to
    `_FIRST_WINDOW` of them: 2 messages above 250 of 2 KB took 1.17 ms on
    PostgreSQL and 0.35 on SQLite, against 0.28 and 0.03 for the recursive
    walk; a first window of 64 rows cut that to about a third but cost the
    130-message path a second statement, 1.33 → 1.55 ms on PostgreSQL.
    """
    path: list[tuple[Any, ...]] = []  # leaf first
    try:
        for rows in _walk_up(store, session_id, leaf_id, full):
            path += rows
    except _TreeChanged:
        return _climbed(store, session_id, leaf_id, full, [], set())[::-1]
    return path[::-1]


class _TreeChanged(Exception):
    """A parent read a statement ago is gone: a delete re-parented its children in
    between. One statement (`_climbed`) sees one state of the tree."""


def _walk_up(
    store: Store, session_id: str, leaf_id: str, full: bool, first: int | None = None
) -> Iterator[list[tuple[Any, ...]]]:
    """`walk_path`'s rows, leaf first, a statement's worth at a time (see there); the
    first window holds `first` rows (`_FIRST_WINDOW` by default).

    Raises:
        _TreeChanged: the tree changed between two statements.
    """
    seen: set[str] = set()
    known: dict[str, tuple[Any, ...]] = {}
    pending: str | None = leaf_id
    size = first or _FIRST_WINDOW
    found = False
    while True:
        rows = _windows(size, full).rows(store, session_id, pending)
        if not rows:
            if found:
                raise _TreeChanged
            return
        known.update((row[1], row) for row in rows)
        batch = []
        while pending in known and pending not in seen:
            row = known[pending]
            batch.append(row)
            seen.add(pending)
            pending = row[2]
        found = found or bool(batch)
        if batch:
            yield batch
        if pending is None or pending in seen:
            return
        if len(batch) * _SCATTERED < len(rows):
            yield _climbed(store, session_id, pending, full, [], seen)
            return
        size = min(size * 2, _MAX_WINDOW)


class PathWalk:
    """The path root → a message, read upward from the message only as far as a
    question about it needs (`has`), a window of rows at a time (`walk_path`).

    It relies on the store's order: a parent is stored before its children
    (`append_message` refuses an unknown parent; imports and `db copy` write
    parents first), so every ancestor of a message has a lower seq. Once the
    walk has read up to an ancestor with seq s, a message with a seq above s
    that it has not met is not on the path. Where the rows read so far break
    the order (a parent linked by hand), the walk reads the whole path before
    answering; a link against the order further up than it has read can make
    it miss a message there.

    Its first window is small (`first`, growing as `walk_path`'s do): the
    question is usually about a message a few steps up.
    """

    def __init__(self, store: Store, session_id: str, leaf_id: str, *, first: int = 16) -> None:
        self._store, self._session_id, self._leaf_id = store, session_id, leaf_id
        self._batches = _walk_up(store, session_id, leaf_id, False, first)
        self.ids: set[str] = set()
        """The ids read so far (all of the path once `done`)."""
        self.done = False
        self._lowest: int | None = None  # the seq of the highest ancestor read so far
        self._ordered = True

    def has(self, message_id: str, seq: int) -> bool:
        """Whether message `message_id`, whose seq is `seq`, is on the path."""
        while message_id not in self.ids and not self.done and not self._read_past(seq):
            self._read_more()
        return message_id in self.ids

    def all_ids(self) -> set[str]:
        """Every id on the path (empty for an unknown message)."""
        while not self.done:
            self._read_more()
        return self.ids

    def _read_past(self, seq: int) -> bool:
        return self._ordered and self._lowest is not None and self._lowest <= seq

    def _read_more(self) -> None:
        try:
            rows = next(self._batches)
        except StopIteration:
            self.done = True
            return
        except _TreeChanged:
            rows = _climbed(self._store, self._session_id, self._leaf_id, False, [], set())
            self.ids = set()
            self.done = True
        for seq, message_id, _ in rows:
            if self._lowest is not None and seq >= self._lowest:
                self._ordered = False
            self._lowest = seq if self._lowest is None else min(self._lowest, seq)
            self.ids.add(message_id)


def _climbed(
    store: Store,
    session_id: str,
    start: str,
    full: bool,
    path: list[tuple[Any, ...]],
    seen: set[str],
) -> list[tuple[Any, ...]]:
    """`path` (leaf first) continued from `start` by the recursive walk, up to a root,
    a missing parent or the first message already on it (a cycle)."""
    pending: str | None = start
    while pending is not None and pending not in seen:
        rows = _CLIMB[full].rows(store, session_id, pending, _CLIMB_STEPS)
        for row in rows:
            if row[1] in seen:
                return path
            path.append(row)
            seen.add(row[1])
        pending = rows[-1][2] if len(rows) > _CLIMB_STEPS else None
    return path


def _latest_leaf(sid: Any) -> Any:
    """The newest message of the session without children."""
    child = M.alias("child")
    has_child = child.select(SQL("1")).where(child.session_id == sid, child.parent_id == M.id)
    return (
        M.select(M.id)
        .where(M.session_id == sid, ~fn.EXISTS(has_child))
        .order_by(M.seq.desc())
        .limit(1)
    )


# The hot paths (see `prepared` for why they are compiled once).
_LATEST_LEAF = Prepared(_latest_leaf)
_MESSAGE = Prepared(lambda sid, mid: M.select(*_COLUMNS).where(M.session_id == sid, M.id == mid))
_CHILDREN = Prepared(
    lambda sid, mid: (
        M.select(*_COLUMNS).where(M.session_id == sid, M.parent_id == mid).order_by(M.seq)
    )
)
_ROOTS = Prepared(
    lambda sid: (
        M.select(*_COLUMNS).where(M.session_id == sid, M.parent_id.is_null()).order_by(M.seq)
    )
)
_ALL = Prepared(lambda sid: M.select(*_COLUMNS).where(M.session_id == sid).order_by(M.seq))
# Every history read asks for the overlays too, so this one is prepared as well.
_COMPACTIONS = Prepared(
    lambda sid: (
        CompactionRow.select(
            CompactionRow.id,
            CompactionRow.session_id,
            CompactionRow.summary,
            CompactionRow.from_message_id,
            CompactionRow.to_message_id,
            CompactionRow.created_at,
        )
        .where(CompactionRow.session_id == sid)
        # SQLite's implicit rowid breaks created_at ties in insertion order.
        .order_by(CompactionRow.created_at, SQL("rowid"))
    )
)
# A streaming reply rewrites its row on every flush.
_UPDATE = Prepared(
    lambda role, content, from_user, from_agent, delivered, usage, seq: M.update(
        role=role,
        content=content,
        from_user_id=from_user,
        from_agent_id=from_agent,
        delivered_to_session_id=delivered,
        token_usage=usage,
    ).where(M.seq == seq)
)
_PLACE = Prepared(
    lambda sid, mid: M.select(M.seq, M.created_at).where(M.session_id == sid, M.id == mid)
)
_MESSAGE_OR = Prepared(
    lambda sid, mid, other: M.select(*_COLUMNS).where(M.session_id == sid, M.id.in_([mid, other]))
)
_COUNT = Prepared(lambda sid: M.select(fn.COUNT(SQL("*"))).where(M.session_id == sid))
_TOUCH = Prepared(
    lambda when, sid: SessionRow.update(updated_at=when).where(
        SessionRow.id == sid, SessionRow.deleted_at.is_null()
    )
)
_INSERT_COLUMNS = (
    M.id,
    M.session_id,
    M.parent_id,
    M.role,
    M.content,
    M.created_at,
    M.from_user_id,
    M.from_agent_id,
    M.delivered_to_session_id,
    M.token_usage,
)


def _insert(*values: Any) -> Any:
    """The message row, returning its seq and its session's search number.

    RETURNING (SQLite 3.35+, PostgreSQL): psycopg has no `lastrowid`. The search
    number comes back with it rather than from a query of its own: an append on
    PostgreSQL was 7 round trips (BEGIN, message?, parent?, insert, number?,
    index, COMMIT); with the message and its parent read together it is 5, and
    on loopback on the shared 2-core machine each one costs 0.1-0.15 ms.
    """
    session_id = values[1]
    scope = SearchScopeRow.select(SearchScopeRow.n).where(SearchScopeRow.session_id == session_id)
    return M.insert(dict(zip(_INSERT_COLUMNS, values, strict=True))).returning(M.seq, scope)


_INSERT = Prepared(_insert, arity=len(_INSERT_COLUMNS))
# The message's search row, written in the message's transaction (see `message_search`).
X = MessageIndexRow
_INDEX = Prepared(lambda rowid, body: X.insert(rowid=rowid, body=body))
_REINDEX = Prepared(lambda body, rowid: X.update(body=body).where(X.rowid == rowid))
_UNINDEX = Prepared(lambda rowid: X.delete().where(X.rowid == rowid))
_UNINDEX_RANGE = Prepared(lambda low, high: X.delete().where(X.rowid >= low, X.rowid < high))


@runtime_checkable
class SessionProvider(Protocol):
    """What `Session` needs from message storage (implement it to bring your own).

    One provider holds one session's messages. Paths are returned raw;
    `Session` applies compaction overlays on top.
    """

    def get_message(self, message_id: str) -> Message | None:
        """The message with that id, or None."""

    def get_history(self, leaf_id: str | None = None) -> list[Message]:
        """The path root → `leaf_id` (the latest leaf when None; [] when empty).

        Raises `UnknownMessageError` for an unknown leaf."""

    def get_latest_leaf(self) -> Message | None:
        """The most recently appended message without children, or None."""

    def get_branches(self, message_id: str) -> list[Message]:
        """The children of a message, oldest first."""

    def get_path_length(self, leaf_id: str | None = None) -> int:
        """`len(get_history(leaf_id))`, possibly cheaper."""

    def append_message(self, message: Message, parent_id: ParentRef = LATEST) -> Message:
        """Store a message under `parent_id` (`LATEST`, None for a root, or an id).

        An id that exists is a no-op returning the stored message; an unknown
        parent raises `UnknownParentError`. Returns the message as stored."""

    def update_message(self, message: Message) -> None:
        """Replace the content of the message with that id (`UnknownMessageError` if none)."""

    def delete_messages(self, message_ids: list[str]) -> None:
        """Delete those messages; unknown ids are ignored."""

    def clear_messages(self) -> None:
        """Delete every message and compaction of the session."""

    def add_compaction(self, summary: str, from_id: str, to_id: str) -> StoredCompaction:
        """Record an overlay hiding the path `from_id … to_id` behind `summary`."""

    def get_compactions(self) -> list[StoredCompaction]:
        """Every overlay of the session, oldest first."""

    def search_messages(self, query: str, limit: int = 20) -> list[SearchResult]:
        """Best matches first; never raises for any query text."""


def row_to_message(row: tuple[Any, ...]) -> Message:
    """(seq, id, parent_id, role, content, created_at) → Message.

    The parent comes from the column, never from the JSON: deleting a message
    re-parents its children in the column only.
    """
    return Message.from_stored(json.loads(row[4]), row[2], row[5])


class StoreSessionProvider:
    """`SessionProvider` over a `Store`, for one session id.

    The protocol methods behave as `SessionProvider` documents; `get_tree`,
    `get_roots`, `latest_leaf_under` and `count` are extras `Session` uses
    when a provider has them.

    Args:
        touch_session: also bump `sessions.updated_at` in each write's
            transaction, and refuse (`UnknownSessionError`, nothing written)
            when the session row is missing or soft-deleted. The
            `SessionManager` turns this on.
    """

    def __init__(
        self,
        store: Store,
        session_id: str,
        *,
        touch_session: bool = False,
        keep_whole: bool = False,
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("session_id must be a non-empty string")
        self.store = store
        self.session_id = session_id
        self.touch_session = touch_session
        self.keep_whole = keep_whole
        """Store every message whole, however large (an import: words someone wrote
        elsewhere are never cut); otherwise `max_row_bytes` shortens tool outputs."""

    # -- reads ----------------------------------------------------------------

    def get_message(self, message_id: str) -> Message | None:
        rows = _MESSAGE.rows(self.store, self.session_id, message_id)
        return row_to_message(rows[0]) if rows else None

    def _path_rows(self, leaf_id: str | None, *, full: bool = True) -> list[tuple[Any, ...]]:
        if leaf_id is None:
            leaf = self._latest_leaf_id()
            if leaf is None:
                return []
            leaf_id = leaf
        rows = walk_path(self.store, self.session_id, leaf_id, full=full)
        if not rows:
            raise UnknownMessageError(f"no message {leaf_id!r} in session {self.session_id!r}")
        return rows

    def get_history(self, leaf_id: str | None = None) -> list[Message]:
        return [row_to_message(r) for r in self._path_rows(leaf_id)]

    def get_path_length(self, leaf_id: str | None = None) -> int:
        return len(self._path_rows(leaf_id, full=False))

    def _latest_leaf_id(self) -> str | None:
        rows = _LATEST_LEAF.rows(self.store, self.session_id)
        return rows[0][0] if rows else None

    def get_latest_leaf(self) -> Message | None:
        leaf = self._latest_leaf_id()
        return self.get_message(leaf) if leaf is not None else None

    def latest_leaf_under(self, message_id: str) -> str:
        """The newest leaf in the subtree rooted at `message_id` (itself if a leaf)."""
        # Walk down from `message_id` (one recursive CTE), keep the leaves.
        sub = (
            M.select(M.seq, M.id)
            .where(M.session_id == self.session_id, M.id == message_id)
            .cte("sub", recursive=True, columns=("seq", "id"))
        )
        down = M.alias("down")
        step = down.select(down.seq, down.id).join(
            sub, on=(down.session_id == self.session_id) & (down.parent_id == sub.c.id)
        )
        cte = sub.union_all(step)
        child = M.alias("child")
        has_child = child.select(SQL("1")).where(
            child.session_id == self.session_id, child.parent_id == cte.c.id
        )
        rows = self.store.rows(
            cte.select_from(cte.c.id)
            .where(~fn.EXISTS(has_child))
            .order_by(cte.c.seq.desc())
            .limit(1)
        )
        if not rows:
            raise UnknownMessageError(f"no message {message_id!r} in session {self.session_id!r}")
        return rows[0][0]

    def get_branches(self, message_id: str) -> list[Message]:
        rows = _CHILDREN.rows(self.store, self.session_id, message_id)
        return [row_to_message(r) for r in rows]

    def get_roots(self) -> list[Message]:
        """The messages without a parent, oldest first (siblings at the top)."""
        rows = _ROOTS.rows(self.store, self.session_id)
        return [row_to_message(r) for r in rows]

    def get_tree(self) -> list[Message]:
        """Every message of the session, all branches, in append order (one query)."""
        rows = _ALL.rows(self.store, self.session_id)
        return [row_to_message(r) for r in rows]

    def count(self) -> int:
        """Messages stored in the session, every branch counted."""
        return int(_COUNT.rows(self.store, self.session_id)[0][0])

    # -- writes ---------------------------------------------------------------

    def _index_rowid(self, seq: int) -> int:
        scope = scope_number(self.store, self.session_id)
        assert scope is not None, "a stored message always has a search scope"
        return index_rowid(scope, seq)

    def _touch(self, when: str) -> None:
        # Runs inside the write's transaction, so raising here undoes the write.
        if self.touch_session:
            if _TOUCH.run(self.store, when, self.session_id).rowcount == 0:
                raise UnknownSessionError(
                    f"session {self.session_id!r} is deleted or unknown; nothing was written"
                )

    def _storable(self, message: Message, created_at: datetime) -> tuple[Message, str]:
        """`message` as a row holds it, and its JSON: with a creation time, without
        a parent (the column has it), shrunk to the row limit. The caller's
        object is never changed."""
        if message.created_at is None or message.parent_id is not None:
            message = _shallow_copy(
                message, created_at=message.created_at or created_at, parent_id=None
            )
        content = message.to_json()  # ValueError for parts JSON cannot hold
        limit = self.store.max_row_bytes
        # A character is at most 4 bytes in UTF-8: most rows need no encoding to tell.
        if not self.keep_whole and len(content) * 4 > limit and len(content.encode()) > limit:
            message = shrink_to_row_limit(message, limit)
            content = message.to_json()
        return message, content

    def append_message(self, message: MessageLike, parent_id: ParentRef = LATEST) -> Message:
        if not (parent_id is None or isinstance(parent_id, _PARENT_TYPES)):
            raise TypeError("parent_id must be a message id, None or LATEST")
        stamp = now()
        message, content = self._storable(Message.coerce(message), stamp)
        assert message.created_at is not None
        created = iso(message.created_at)
        body = index_body(message)
        if not isinstance(parent_id, Latest):
            # Nothing read first: the engine writes only a new id under a parent that
            # is there (in a live chat when touching), else the path below says why.
            # A message without a time of its own was given `stamp`: one text for both.
            touched = created if message.created_at is stamp else iso(stamp)
            seq = self.store.engine.append_in_one(
                _row(self.session_id, parent_id, message, content, created),
                body,
                touched if self.touch_session else None,
            )
            if seq is not None:
                return _as_stored(message, content, parent_id)
        with self.store.write():
            # The message (if stored already) and the named parent in one read: each
            # statement is a round trip to a server (see `_insert` for the figures).
            named = parent_id if isinstance(parent_id, str) else None
            found = {
                r[1]: r for r in _MESSAGE_OR.rows(self.store, self.session_id, message.id, named)
            }
            if message.id in found:
                return row_to_message(found[message.id])
            if isinstance(parent_id, Latest):
                parent = self._latest_leaf_id()
            elif parent_id is None:
                parent = None
            elif parent_id in found:
                parent = parent_id
            else:
                raise UnknownParentError(
                    f"parent {parent_id!r} is not a message of session {self.session_id!r}"
                )
            seq, scope = _insert_row(self.store, self.session_id, parent, message, content)
            if scope is None:  # the session's first message
                scope = scope_number(self.store, self.session_id, create=True)
            assert scope is not None
            _INDEX.run(self.store, index_rowid(scope, seq), body)
            self._touch(iso(stamp))
        return _as_stored(message, content, parent)

    def update_message(self, message: MessageLike, *, final: bool = True) -> None:
        """As `SessionProvider.update_message`; `final=False` for a rewrite a later
        one supersedes (a streaming reply's flush: see `Store.write(durable=…)`)."""
        message = Message.coerce(message)
        message.to_json()  # fail before opening a transaction
        with self.store.write(durable=final):
            rows = _PLACE.rows(self.store, self.session_id, message.id)
            if not rows:
                raise UnknownMessageError(
                    f"no message {message.id!r} in session {self.session_id!r}"
                )
            seq, created = rows[0]
            message, content = self._storable(message, datetime.fromisoformat(created))
            _UPDATE.run(
                self.store,
                message.role,
                content,
                message.from_user_id,
                message.from_agent_id,
                message.delivered_to_session_id,
                _usage_json(message),
                seq,
            )
            _REINDEX.run(self.store, index_body(message), self._index_rowid(seq))
            self._touch(iso(now()))

    def delete_messages(self, message_ids: list[str]) -> None:
        if isinstance(message_ids, str):
            message_ids = [message_ids]
        with self.store.write():
            scope = scope_number(self.store, self.session_id)
            for message_id in message_ids:
                rows = self.store.rows(
                    M.select(M.seq, M.parent_id).where(
                        M.session_id == self.session_id, M.id == message_id
                    )
                )
                if not rows:
                    continue
                seq, parent = rows[0]
                self.store.run(
                    M.update(parent_id=parent).where(
                        M.session_id == self.session_id, M.parent_id == message_id
                    )
                )
                # A block write made at the message now belongs to its parent, so
                # the branch keeps the memory it had.
                self.store.run(
                    BlockWriteRow.update(message_id=parent).where(
                        BlockWriteRow.session_id == self.session_id,
                        BlockWriteRow.message_id == message_id,
                    )
                )
                if scope is not None:
                    _UNINDEX.run(self.store, index_rowid(scope, seq))
                self.store.run(M.delete().where(M.seq == seq))
            self._touch(iso(now()))

    def clear_messages(self) -> None:
        with self.store.write():
            scope = scope_number(self.store, self.session_id)
            if scope is not None:
                _UNINDEX_RANGE.run(self.store, *scope_range(scope))
            self.store.run(M.delete().where(M.session_id == self.session_id))
            self.store.run(
                CompactionRow.delete().where(CompactionRow.session_id == self.session_id)
            )
            self.store.run(
                LoadedSkillRow.delete().where(LoadedSkillRow.namespace == self.session_id)
            )
            self._touch(iso(now()))

    # -- compactions ------------------------------------------------------------

    def add_compaction(self, summary: str, from_id: str, to_id: str) -> StoredCompaction:
        created = now()
        compaction = StoredCompaction(
            id=uuid.uuid4().hex,
            session_id=self.session_id,
            summary=summary,
            from_message_id=from_id,
            to_message_id=to_id,
            created_at=created,
        )
        with self.store.write():
            self.store.run(
                CompactionRow.insert(
                    id=compaction.id,
                    session_id=self.session_id,
                    summary=summary,
                    from_message_id=from_id,
                    to_message_id=to_id,
                    created_at=iso(created),
                )
            )
            self._touch(iso(created))  # like every write: refused for a deleted session
        return compaction

    def get_compactions(self) -> list[StoredCompaction]:
        rows = _COMPACTIONS.rows(self.store, self.session_id)
        return [
            StoredCompaction(r[0], r[1], r[2], r[3], r[4], datetime.fromisoformat(r[5]))
            for r in rows
        ]

    # -- search -----------------------------------------------------------------

    def search_messages(self, query: str, limit: int = 20) -> list[SearchResult]:
        return search_messages(self.store, query, limit, session_id=self.session_id)


def insert_messages(
    store: Store, session_id: str, messages: list[tuple[Message, str | None]]
) -> None:
    """Write (message, parent id) rows as `StoreSessionProvider.append_message` would,
    without its per-message lookups and savepoint (two statements a message).

    For callers that already know the batch is sound — unique new ids, each parent
    before its children — and hold a write transaction: an import, a fork. Messages
    are kept whole, whatever their size: an import never cuts what someone wrote
    elsewhere, and a fork copies rows that are stored already.
    """
    scope = scope_number(store, session_id, create=True)
    assert scope is not None
    for message, parent in messages:
        message.created_at = message.created_at or now()
        content = message.to_json()
        seq, _ = _insert_row(store, session_id, parent, message, content)
        _INDEX.run(store, index_rowid(scope, seq), index_body(message))


def _shallow_copy(message: Message, **changes: Any) -> Message:
    """`message` with `changes`, its other fields shared (they are valid already):
    `copy.copy` goes through the pickle protocol, ~6x the time, once per append."""
    copied = object.__new__(Message)
    copied.__dict__.update(message.__dict__, **changes)
    return copied


def _as_stored(message: Message, content: str, parent: str | None) -> Message:
    """What a later read returns, without reading it: `message` (as `_storable` made
    it) under `parent`, its mutable fields fresh from its JSON `content`, so that it
    shares nothing with the caller's message."""
    parts = None if message.metadata or message.token_usage else _fresh_parts(message.parts)
    if parts is not None:
        return _shallow_copy(message, parts=parts, metadata={}, parent_id=parent)
    data = json.loads(content)
    return _shallow_copy(
        message,
        parts=data.get("parts") or [],
        metadata=data.get("metadata") or {},
        token_usage=data.get("token_usage"),
        parent_id=parent,
    )


# A part whose keys are strings and values these exact types copies as its JSON
# reads back: a dict copy of it is what `json.loads` would give, in a fifth of the time.
_FLAT = frozenset({str, int, float, bool, type(None)})


def _fresh_parts(parts: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Copies of `parts` equal to their JSON read back, or None when one holds a
    nested value (a tool's input) or a key JSON would turn into a string."""
    fresh = []
    for part in parts:
        for key, value in part.items():
            if type(key) is not str or type(value) not in _FLAT:
                return None
        fresh.append(dict(part))
    return fresh


def _usage_json(message: Message) -> str | None:
    return json.dumps(message.token_usage) if message.token_usage is not None else None


def _row(
    session_id: str, parent: str | None, message: Message, content: str, created: str | None = None
) -> dict[str, Any]:
    """The columns of a message's row, by name (`content` is its JSON, `created` its
    `created_at` as stored, when the caller has it already)."""
    assert message.created_at is not None
    return {
        "id": message.id,
        "session_id": session_id,
        "parent_id": parent,
        "role": message.role,
        "content": content,
        "created_at": created or iso(message.created_at),
        "from_user_id": message.from_user_id,
        "from_agent_id": message.from_agent_id,
        "delivered_to_session_id": message.delivered_to_session_id,
        "token_usage": _usage_json(message),
    }


def _insert_row(
    store: Store, session_id: str, parent: str | None, message: Message, content: str
) -> tuple[int, int | None]:
    """Insert one message row (`content` is its JSON): its new seq, and its session's
    search number (None before the session has one)."""
    row = _row(session_id, parent, message, content)
    rows = _INSERT.rows(store, *(row[c.column_name] for c in _INSERT_COLUMNS))
    seq, scope = rows[0]
    return int(seq), None if scope is None else int(scope)
