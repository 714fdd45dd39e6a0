"""The session records `SessionManager` returns, and their row converter.

`SessionInfo` is a snapshot of one `sessions` row; `StatusChange` one row
of its recorded status history. Stored times are `store.clock` text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_args

from .prepared import Prepared
from .schema import SessionRow, StatusChangeRow

if TYPE_CHECKING:
    from .db import Store

__all__ = [
    "SessionInfo",
    "SessionStatus",
    "STATUSES",
    "StatusChange",
    "SESSION_COLUMNS",
    "SESSION_FIELDS",
    "insert_session",
    "record_status",
    "session_info",
]

SessionStatus: TypeAlias = Literal["active", "awaiting_peer", "idle", "completed", "failed"]
STATUSES: frozenset[str] = frozenset(get_args(SessionStatus))


@dataclass(frozen=True)
class SessionInfo:
    """A session's registry entry (a snapshot: re-read it after a change)."""

    id: str
    name: str
    parent_session_id: str | None
    model: str | None
    source: str | None
    agent_id: str | None
    project_id: str | None
    status: str
    metadata: dict[str, Any]
    input_tokens: int
    output_tokens: int
    cost: float
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None = None
    status_detail: str | None = None
    """Why the session has its status, e.g. "waiting for agent 'B'" (None if not given)."""

    @property
    def label(self) -> str:
        """The human-readable name (seed 002 calls it `label`); same as `name`."""
        return self.name


_FIELDS = tuple(f.name for f in fields(SessionInfo))
SESSION_FIELDS = tuple(SessionRow._meta.sorted_fields)
"""The `sessions` columns, in the model's order: every select and insert of a session
row names them through this (never typed again; a test holds the model and
`SessionInfo` to the same names)."""
_NAMES = tuple(f.name for f in SESSION_FIELDS)
SESSION_COLUMNS = ", ".join(_NAMES)  # for hand-written SQL: rows come back in this order
_METADATA, _CREATED, _UPDATED, _DELETED = (
    _NAMES.index(name) for name in ("metadata", "created_at", "updated_at", "deleted_at")
)
_fromiso = datetime.fromisoformat


def session_info(r: tuple[Any, ...]) -> SessionInfo:
    """A `sessions` row (columns in `SESSION_FIELDS` order) → `SessionInfo`.

    Listing builds many of these, and a frozen dataclass's `__init__` pays
    one `object.__setattr__` per field: that cost more than the query. So the
    instance dict is built in one go; the result is an ordinary `SessionInfo`,
    equal to one made by `__init__` (a test holds the two together).
    """
    # Converted in place by position, then zipped into the instance dict: a dict
    # first and its keys assigned after took a quarter longer, 50 times a list.
    row = list(r)
    metadata = row[_METADATA]
    row[_METADATA] = {} if metadata == "{}" else json.loads(metadata)
    row[_CREATED] = _fromiso(row[_CREATED])
    row[_UPDATED] = _fromiso(row[_UPDATED])
    deleted = row[_DELETED]
    row[_DELETED] = _fromiso(deleted) if deleted else None
    info = object.__new__(SessionInfo)
    info.__dict__.update(zip(_NAMES, row, strict=True))
    return info


@dataclass(frozen=True)
class StatusChange:
    """One recorded status transition of a session."""

    session_id: str
    status: str
    detail: str | None
    changed_at: datetime


# Prepared: built per call, this insert cost more than the rest of an imported
# chat's rows together (1.5 ms of peewee rendering against 0.05 ms of SQLite).
_INSERT_SESSION = Prepared(
    lambda *values: SessionRow.insert(dict(zip(SESSION_FIELDS, values, strict=True))),
    arity=len(SESSION_FIELDS),
)


def insert_session(
    store: Store,
    session_id: str,
    name: str,
    *,
    created_at: str,
    status: str = "active",
    status_detail: str | None = None,
    metadata: str = "{}",
    parent_session_id: str | None = None,
    model: str | None = None,
    source: str | None = None,
    agent_id: str | None = None,
    project_id: str | None = None,
    input_tokens: int = 0,
    output_tokens: int = 0,
    cost: float = 0.0,
    updated_at: str | None = None,
    deleted_at: str | None = None,
) -> None:
    """Write one `sessions` row (inside the caller's `store.write()`); the one place a
    session row is inserted — create, fork and import all come here.

    `metadata` is JSON text; times are `store.clock` text.
    """
    row = {
        "id": session_id,
        "name": name,
        "parent_session_id": parent_session_id,
        "model": model,
        "source": source,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cost": cost,
        "created_at": created_at,
        "updated_at": updated_at or created_at,
        "agent_id": agent_id,
        "project_id": project_id,
        "status": status,
        "metadata": metadata,
        "deleted_at": deleted_at,
        "status_detail": status_detail,
    }
    _INSERT_SESSION.run(store, *(row[name] for name in _NAMES))


# Prepared, as the session row: an import records one status per chat.
_INSERT_STATUS = Prepared(
    lambda sid, status, detail, stamp: StatusChangeRow.insert(
        session_id=sid, status=status, detail=detail, changed_at=stamp
    )
)


def record_status(
    store: Store, session_id: str, status: str, detail: str | None, stamp: str
) -> None:
    """Append one entry to the session's status history (inside the caller's write)."""
    _INSERT_STATUS.run(store, session_id, status, detail, stamp)
