"""The message search index and searches over it (FTS5 on SQLite, tsvector on PostgreSQL).

Design notes and invariants:
- Each session has a number (`search_scopes.n`, never reused or removed);
  the index row of a message has rowid `(n << 32) + seq`. One session's rows
  are therefore one rowid range, which FTS5 seeks into: a session search
  reads that session's matches and nothing else, however large the rest of
  the history is. A message's index row is written in the transaction that
  writes the message.
- The engine (`store.engines`) runs the full-text part; this module owns
  what is the same on both: the rowids, the session ranking, the results.
- Global search ranks with the engine's rank (FTS5's `bm25()`, PostgreSQL's
  `ts_rank`). A session search does not use `bm25()`: it counts every match
  of every term in the whole index to weigh rare words, which would make a
  one-chat search as slow as the biggest word's history. SQLite ranks the
  session's matches with the BM25 formula on term hits and message length
  instead (`engines.base.rank_by_hits`: the same order for a one-word query;
  terms weigh alike when there are several); PostgreSQL with `ts_rank`
  normalized by length, which likewise reads each message alone. The two
  agree on what is found and mostly on the order (more hits first, then
  shorter messages); ties go to the newest message on both.
"""

from __future__ import annotations

import functools
import json
import re
from datetime import datetime

from .db import Store
from .engines.base import SEQ_BITS, SEQ_MASK
from .errors import StoreError
from .messages import Message, SearchResult
from .prepared import Prepared
from .schema import MessageRow, SearchScopeRow, SessionRow
from .search import Query, parse_query, positive_terms
from .text_prep import MARK_CLOSE as _CLOSE
from .text_prep import MARK_OPEN as _OPEN
from .text_prep import index_text, index_tokens, marked_snippet, parts_text, snippet

__all__ = [
    "index_body",
    "index_text",
    "index_rowid",
    "scope_number",
    "scope_range",
    "search_messages",
    "snippet",
]


_SCOPE = Prepared(
    lambda sid: SearchScopeRow.select(SearchScopeRow.n).where(SearchScopeRow.session_id == sid)
)

# RETURNING, not `lastrowid`: psycopg has none (SQLite 3.35+ and PostgreSQL both return it).
# A second process may number the same session between our read and this insert
# (PostgreSQL does not serialise writers as SQLite's write lock does): the insert
# then does nothing and the number is read again.
_NEW_SCOPE = Prepared(
    lambda sid: (
        SearchScopeRow.insert(session_id=sid).on_conflict_ignore().returning(SearchScopeRow.n)
    )
)


_DELETED = Prepared(
    lambda sid: SessionRow.select(SessionRow.id).where(
        SessionRow.id == sid, SessionRow.deleted_at.is_null(False)
    )
)


@functools.lru_cache(maxsize=64)
def _by_seqs(n: int) -> Prepared:
    """The messages with those `n` seqs (compiled once per `n`: a search is on the hot path)."""
    M = MessageRow
    return Prepared(
        lambda *seqs: M.select(M.seq, M.id, M.role, M.content, M.created_at, M.session_id).where(
            M.seq.in_(list(seqs))
        ),
        arity=n,
    )


def index_body(message: Message) -> str:
    """What the index holds for a message: the terms of its search text (`text_prep`)."""
    return index_tokens(index_text(message))


def scope_number(store: Store, session_id: str, *, create: bool = False) -> int | None:
    """The session's number in the index (made on first use when `create`)."""
    rows = _SCOPE.rows(store, session_id)
    if rows:
        return int(rows[0][0])
    if not create:
        return None
    rows = _NEW_SCOPE.rows(store, session_id) or _SCOPE.rows(store, session_id)
    return int(rows[0][0])


def index_rowid(scope: int, seq: int) -> int:
    """The index rowid of message `seq` in the session numbered `scope`."""
    if seq > SEQ_MASK:
        raise StoreError("the store holds more than 4 billion messages; the index cannot")
    return (scope << SEQ_BITS) + seq


def scope_range(scope: int) -> tuple[int, int]:
    """[low, high) of the index rowids of the session numbered `scope`."""
    return scope << SEQ_BITS, (scope + 1) << SEQ_BITS


def search_messages(
    store: Store,
    query: str,
    limit: int = 20,
    *,
    session_id: str | None = None,
    include_deleted: bool = False,
) -> list[SearchResult]:
    """Full-text search over messages, best first.

    Global search leaves out soft-deleted sessions unless `include_deleted`;
    a search in one session (`session_id`) always covers it.

    Never raises for any query text: what is not a query is searched as its
    plain words (`search.query_problem` says why).
    """
    parsed = parse_query(query)
    if parsed is None or limit <= 0:
        return []
    if session_id is not None:
        return _search_session(store, parsed, session_id, int(limit))
    rows = store.engine.search_messages(parsed, int(limit), include_deleted)
    terms = _terms(parsed)
    return [
        _result(terms, mid, role, content, created, sid, score, bool(gone))
        for mid, role, content, created, sid, score, gone in rows
    ]


def _search_session(store: Store, query: Query, session_id: str, limit: int) -> list[SearchResult]:
    scope = scope_number(store, session_id)
    if scope is None:
        return []
    low, high = scope_range(scope)
    best = store.engine.search_session(query, low, high, limit)
    if not best:
        return []
    seqs = [rowid & SEQ_MASK for rowid, _ in best]
    rows = {r[0]: r[1:] for r in _by_seqs(len(seqs)).rows(store, *seqs)}
    gone = bool(_DELETED.rows(store, session_id))
    terms = _terms(query)
    results = []
    for rowid, score in best:
        row = rows.get(rowid & SEQ_MASK)
        if row is not None:
            mid, role, content, created, sid = row
            results.append(_result(terms, mid, role, content, created, sid, score, gone))
    return results


def _terms(query: Query) -> tuple[frozenset[str], tuple[str, ...]]:
    """The terms a snippet marks, found once per search (frozen: `marked_snippet`
    keys its per-query pattern by them)."""
    exact, prefixes = positive_terms(query)
    return frozenset(exact), prefixes


def _result(
    terms: tuple[frozenset[str], tuple[str, ...]],
    mid: str,
    role: str,
    content: str,
    created: str,
    sid: str,
    score: float,
    deleted: bool,
) -> SearchResult:
    # The text from the stored JSON's parts alone: a whole `Message` (every field,
    # its time parsed) cost 3.2 µs a result against 2.1.
    text = parts_text(json.loads(content).get("parts") or [])
    # The snippet is cut here, from the message as written, for the rows returned
    # only: the same on both engines (their index rows hold terms, not text).
    snippet_text, spans = unmark(marked_snippet(text, *terms))
    return SearchResult(
        id=mid,
        role=role,
        content=text,
        created_at=datetime.fromisoformat(created),
        session_id=sid,
        snippet=snippet_text,
        rank=score,
        matches=spans,
        deleted=deleted,
    )


_MARKS = re.compile(f"([{_OPEN}{_CLOSE}])")


def unmark(marked: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Text with the index's match marks removed, and where each mark was.

    The text a model or a user reads is the message's own (no brackets are
    added: a `[` in the result was in the message); highlighting is the UI's.
    """
    plain: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    start: int | None = None
    for piece in _MARKS.split(marked):
        if piece == _OPEN:
            start = length
        elif piece == _CLOSE:
            if start is not None and length > start:
                spans.append((start, length))
            start = None
        else:
            plain.append(piece)
            length += len(piece)
    if start is not None and length > start:  # a match cut off by the excerpt
        spans.append((start, length))
    return "".join(plain), tuple(spans)
