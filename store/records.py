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
SESSION_COLUMNS = ", ".join(_FIELDS)  # rows come back in field order
_fromiso = datetime.fromisoformat
_set_attr = object.__setattr__


def session_info(r: tuple[Any, ...]) -> SessionInfo:
    """A `sessions` row (columns in `_FIELDS` order) → `SessionInfo`.

    Listing builds many of these, and a frozen dataclass's `__init__` pays
    one `object.__setattr__` per field: that cost more than the query. So the
    instance dict is built in one go; the result is an ordinary `SessionInfo`,
    equal to one made by `__init__` (a test holds the two together).
    """
    info = object.__new__(SessionInfo)
    _set_attr(
        info,
        "__dict__",
        {
            "id": r[0],
            "name": r[1],
            "parent_session_id": r[2],
            "model": r[3],
            "source": r[4],
            "agent_id": r[5],
            "project_id": r[6],
            "status": r[7],
            "metadata": {} if r[8] == "{}" else json.loads(r[8]),
            "input_tokens": r[9],
            "output_tokens": r[10],
            "cost": r[11],
            "created_at": _fromiso(r[12]),
            "updated_at": _fromiso(r[13]),
            "deleted_at": _fromiso(r[14]) if r[14] else None,
            "status_detail": r[15],
        },
    )
    return info


@dataclass(frozen=True)
class StatusChange:
    """One recorded status transition of a session."""

    session_id: str
    status: str
    detail: str | None
    changed_at: datetime


_SESSION_COLUMNS = (
    SessionRow.id,
    SessionRow.name,
    SessionRow.parent_session_id,
    SessionRow.model,
    SessionRow.source,
    SessionRow.agent_id,
    SessionRow.project_id,
    SessionRow.status,
    SessionRow.status_detail,
    SessionRow.metadata,
    SessionRow.input_tokens,
    SessionRow.output_tokens,
    SessionRow.cost,
    SessionRow.created_at,
    SessionRow.updated_at,
    SessionRow.deleted_at,
)
# Prepared: built per call, this insert cost more than the rest of an imported
# chat's rows together (1.5 ms of peewee rendering against 0.05 ms of SQLite).
_INSERT_SESSION = Prepared(
    lambda *values: SessionRow.insert(dict(zip(_SESSION_COLUMNS, values, strict=True))),
    arity=len(_SESSION_COLUMNS),
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
    _INSERT_SESSION.run(
        store,
        session_id,
        name,
        parent_session_id,
        model,
        source,
        agent_id,
        project_id,
        status,
        status_detail,
        metadata,
        input_tokens,
        output_tokens,
        cost,
        created_at,
        updated_at or created_at,
        deleted_at,
    )


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
