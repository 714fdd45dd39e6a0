"""Agents: named configurations (model, soul, description, config) a session runs.

Design notes:
- An agent is a row in `agents`; its `config` is JSON the application owns
  (by convention `blocks`, `skills_dir`, `peers`); the store never reads it.
- Names are unique whatever their case ("Coder" and "coder" would confuse a
  model picking a peer by name); `get_agent_by_name` ignores case too.
- Agents are archived, never deleted: sessions and messages keep pointing at
  them (`agent_id`, `from_agent_id`). An archived agent cannot start new
  sessions; `restore_agent` or a config sync brings it back.
- `sync_agents` upserts from the application's config file in one
  transaction: the config wins for every field it sets, the database keeps
  the rest. Everything is validated before anything is written.
- `SessionManager` is the public face; these functions hold the SQL.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from peewee import IntegrityError, fn

from .clock import iso, now
from .db import Store
from .errors import DuplicateAgentError, UnknownAgentError
from .schema import AgentRow

__all__ = ["AgentInfo", "AgentSpec", "UNSET"]

_COLUMNS = (
    AgentRow.id,
    AgentRow.name,
    AgentRow.model,
    AgentRow.soul,
    AgentRow.description,
    AgentRow.config,
    AgentRow.created_at,
    AgentRow.updated_at,
    AgentRow.archived_at,
)
MAX_NAME = 64


class _Unset:
    """Sentinel type: "leave this field as it is" in `update_agent`."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclass(frozen=True)
class AgentInfo:
    """An agent's registry entry."""

    id: str
    name: str
    model: str | None
    soul: str
    description: str
    config: dict[str, Any]
    """Application settings (blocks, skills folder, peers); JSON, opaque to the store."""
    created_at: datetime
    updated_at: datetime
    archived_at: datetime | None = None


@dataclass(frozen=True)
class AgentSpec:
    """An agent as a config file describes it, for `SessionManager.sync_agents`.

    None means "the config does not say": the stored value is kept (or the
    default used for a new agent). `config` is merged key by key.
    """

    name: str
    model: str | None = None
    soul: str | None = None
    description: str | None = None
    config: dict[str, Any] | None = field(default=None)

    @classmethod
    def coerce(cls, value: AgentSpec | Mapping[str, Any]) -> AgentSpec:
        """Accept an `AgentSpec` or a mapping with the same keys."""
        if isinstance(value, AgentSpec):
            return value
        if not isinstance(value, Mapping):
            raise ValueError(f"an agent spec must be a mapping, not {type(value).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = set(value) - known
        if unknown:
            raise ValueError(f"unknown agent spec keys: {sorted(unknown)}")
        if "name" not in value:
            raise ValueError("an agent spec needs a 'name'")
        return cls(**value)


def _agent(row: tuple[Any, ...]) -> AgentInfo:
    return AgentInfo(
        id=row[0],
        name=row[1],
        model=row[2],
        soul=row[3],
        description=row[4],
        config=json.loads(row[5]) if row[5] != "{}" else {},
        created_at=datetime.fromisoformat(row[6]),
        updated_at=datetime.fromisoformat(row[7]),
        archived_at=datetime.fromisoformat(row[8]) if row[8] else None,
    )


def clean_name(name: object) -> str:
    """A valid agent name (stripped), or ValueError saying what is wrong."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("an agent name must be a non-empty string")
    name = name.strip()
    if len(name) > MAX_NAME:
        raise ValueError(f"an agent name has at most {MAX_NAME} characters")
    if any(ord(c) < 32 for c in name):
        raise ValueError("an agent name cannot contain control characters")
    return name


def _text(label: str, value: object, *, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ValueError(f"agent {label} must be a string, not {type(value).__name__}")
    return value


def _config_json(value: object) -> str:
    if not isinstance(value, dict):
        raise ValueError(f"agent config must be a dict, not {type(value).__name__}")
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"agent config is not JSON-serialisable: {exc}") from exc


def get_agent(store: Store, agent_id: str) -> AgentInfo | None:
    """The agent (archived or not), or None."""
    rows = store.rows(AgentRow.select(*_COLUMNS).where(AgentRow.id == agent_id))
    return _agent(rows[0]) if rows else None


def get_agent_by_name(store: Store, name: str) -> AgentInfo | None:
    """The agent with that name, ignoring case and surrounding spaces, or None."""
    if not isinstance(name, str):
        return None
    # lower() on both sides: ASCII case folding, as SQLite's NOCASE (the unique
    # index agents_name_nocase) does, and the same on PostgreSQL.
    rows = store.rows(
        AgentRow.select(*_COLUMNS).where(fn.lower(AgentRow.name) == fn.lower(name.strip()))
    )
    return _agent(rows[0]) if rows else None


def require_agent(store: Store, agent_id: str, *, live: bool = False) -> AgentInfo:
    """The agent, or `UnknownAgentError` (also for an archived one when `live`)."""
    agent = get_agent(store, agent_id)
    if agent is None:
        raise UnknownAgentError(f"no agent {agent_id!r}")
    if live and agent.archived_at is not None:
        raise UnknownAgentError(f"agent {agent.name!r} is archived (restore it first)")
    return agent


def list_agents(store: Store, include_archived: bool = False) -> list[AgentInfo]:
    """Agents ordered by name (case-insensitive); live ones unless `include_archived`."""
    query = AgentRow.select(*_COLUMNS)
    if not include_archived:
        query = query.where(AgentRow.archived_at.is_null())
    return [_agent(r) for r in store.rows(query.order_by(fn.lower(AgentRow.name), AgentRow.id))]


def _check_free(store: Store, name: str, agent_id: str | None) -> None:
    other = get_agent_by_name(store, name)
    if other is not None and other.id != agent_id:
        raise DuplicateAgentError(f"an agent named {other.name!r} already exists")


def create_agent(
    store: Store,
    name: str,
    *,
    model: str | None = None,
    soul: str = "",
    description: str = "",
    config: dict[str, Any] | None = None,
    agent_id: str | None = None,
) -> AgentInfo:
    name = clean_name(name)
    values = (
        _text("model", model, optional=True),
        _text("soul", soul),
        _text("description", description),
        _config_json(config or {}),
    )
    agent_id = agent_id or uuid.uuid4().hex
    stamp = iso(now())
    with store.write():
        _check_free(store, name, None)
        try:
            model_, soul_, description_, config_ = values
            store.run(
                AgentRow.insert(
                    id=agent_id,
                    name=name,
                    model=model_,
                    soul=soul_,
                    description=description_,
                    config=config_,
                    created_at=stamp,
                    updated_at=stamp,
                )
            )
        except IntegrityError as exc:
            raise DuplicateAgentError(f"an agent with id {agent_id!r} already exists") from exc
    return require_agent(store, agent_id)


def update_agent(
    store: Store,
    agent_id: str,
    *,
    name: Any = UNSET,
    model: Any = UNSET,
    soul: Any = UNSET,
    description: Any = UNSET,
    config: Any = UNSET,
) -> AgentInfo:
    """Change the given fields (`UNSET` leaves one as it is); `config` is replaced whole."""
    require_agent(store, agent_id)
    changes: dict[str, Any] = {}
    if name is not UNSET:
        changes["name"] = clean_name(name)
    if model is not UNSET:
        changes["model"] = _text("model", model, optional=True)
    if soul is not UNSET:
        changes["soul"] = _text("soul", soul)
    if description is not UNSET:
        changes["description"] = _text("description", description)
    if config is not UNSET:
        changes["config"] = _config_json(config)
    if not changes:
        return require_agent(store, agent_id)
    with store.write():
        if "name" in changes:
            _check_free(store, changes["name"], agent_id)
        changes["updated_at"] = iso(now())
        store.run(AgentRow.update(changes).where(AgentRow.id == agent_id))
    return require_agent(store, agent_id)


def set_archived(store: Store, agent_id: str, archived: bool) -> AgentInfo:
    """Archive (keeping the first date if already archived) or restore an agent."""
    require_agent(store, agent_id)
    with store.write():
        if archived:  # archiving twice keeps the first date
            stamp = fn.COALESCE(AgentRow.archived_at, iso(now()))
            store.run(AgentRow.update(archived_at=stamp).where(AgentRow.id == agent_id))
        else:
            store.run(AgentRow.update(archived_at=None).where(AgentRow.id == agent_id))
    return require_agent(store, agent_id)


def sync_agents(
    store: Store, specs: Iterable[AgentSpec | Mapping[str, Any]], *, archive_missing: bool = False
) -> list[AgentInfo]:
    """Upsert agents from a config file, in one transaction; returns them in spec order.

    The config wins for each field it sets (not None); `config` dicts are
    merged key by key over the stored one. A listed agent that was archived
    is restored. With `archive_missing`, live agents the specs do not name
    are archived.

    Raises:
        ValueError: a spec is malformed or two specs share a name (nothing written).
    """
    cleaned: list[tuple[str, AgentSpec]] = []
    seen: set[str] = set()
    for raw in specs:
        spec = AgentSpec.coerce(raw)
        name = clean_name(spec.name)
        if name.casefold() in seen:
            raise ValueError(f"agent {name!r} is listed twice")
        seen.add(name.casefold())
        _text("model", spec.model, optional=True)
        _text("soul", spec.soul, optional=True)
        _text("description", spec.description, optional=True)
        if spec.config is not None:
            _config_json(spec.config)
        cleaned.append((name, spec))
    ids: list[str] = []
    stamp = iso(now())
    with store.write():
        for name, spec in cleaned:
            current = get_agent_by_name(store, name)
            if current is None:
                agent = create_agent(
                    store,
                    name,
                    model=spec.model,
                    soul=spec.soul or "",
                    description=spec.description or "",
                    config=spec.config,
                )
                ids.append(agent.id)
                continue
            ids.append(current.id)
            wanted = (
                name,
                spec.model if spec.model is not None else current.model,
                spec.soul if spec.soul is not None else current.soul,
                spec.description if spec.description is not None else current.description,
                {**current.config, **(spec.config or {})},
            )
            now_is = (
                current.name,
                current.model,
                current.soul,
                current.description,
                current.config,
            )
            if wanted == now_is and current.archived_at is None:
                continue  # unchanged: keep updated_at meaningful
            store.run(
                AgentRow.update(
                    name=wanted[0],
                    model=wanted[1],
                    soul=wanted[2],
                    description=wanted[3],
                    config=_config_json(wanted[4]),
                    archived_at=None,
                    updated_at=stamp,
                ).where(AgentRow.id == current.id)
            )
        if archive_missing:
            store.run(
                AgentRow.update(archived_at=stamp).where(
                    AgentRow.archived_at.is_null(), AgentRow.id.not_in(ids)
                )
            )
    return [require_agent(store, agent_id) for agent_id in ids]
