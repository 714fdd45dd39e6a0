"""Projects: named units of work that own sessions (seed 002).

Design notes:
- A session belongs to at most one project (`sessions.project_id`); sessions
  outside any project are "ad hoc".
- Archiving a project hides it from `list_projects()` and hides its sessions
  from `SessionManager.list()`; nothing is deleted, search still finds them,
  `list(project_id=…)` and `project_sessions()` still list them, and
  `restore_project` brings everything back.
- `SessionManager` is the public face; these functions hold the SQL.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from peewee import fn

from .clock import iso, now
from .db import Store
from .errors import UnknownProjectError
from .schema import ProjectRow

__all__ = ["ProjectInfo"]

_COLUMNS = (ProjectRow.id, ProjectRow.name, ProjectRow.created_at, ProjectRow.archived_at)


@dataclass(frozen=True)
class ProjectInfo:
    """A project's registry entry; `archived_at` is None while it is live."""

    id: str
    name: str
    created_at: datetime
    archived_at: datetime | None = None


def _project(row: tuple[Any, ...]) -> ProjectInfo:
    return ProjectInfo(
        row[0],
        row[1],
        datetime.fromisoformat(row[2]),
        datetime.fromisoformat(row[3]) if row[3] else None,
    )


def _clean_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValueError("a project name must be a non-empty string")
    return name.strip()


def get_project(store: Store, project_id: str) -> ProjectInfo | None:
    """The project (archived or not), or None."""
    rows = store.rows(ProjectRow.select(*_COLUMNS).where(ProjectRow.id == project_id))
    return _project(rows[0]) if rows else None


def require_project(store: Store, project_id: str) -> ProjectInfo:
    """The project, or `UnknownProjectError`."""
    project = get_project(store, project_id)
    if project is None:
        raise UnknownProjectError(f"no project {project_id!r}")
    return project


def create_project(store: Store, name: str, project_id: str | None = None) -> ProjectInfo:
    clean = _clean_name(name)
    project_id = project_id or uuid.uuid4().hex
    with store.write():
        store.run(ProjectRow.insert(id=project_id, name=clean, created_at=iso(now())))
    return require_project(store, project_id)


def list_projects(store: Store, include_archived: bool = False) -> list[ProjectInfo]:
    """Projects ordered by name; live ones unless `include_archived`."""
    query = ProjectRow.select(*_COLUMNS)
    if not include_archived:
        query = query.where(ProjectRow.archived_at.is_null())
    return [_project(r) for r in store.rows(query.order_by(ProjectRow.name, ProjectRow.id))]


def update_project(store: Store, project_id: str, changes: dict[Any, Any]) -> ProjectInfo:
    require_project(store, project_id)
    with store.write():
        store.run(ProjectRow.update(changes).where(ProjectRow.id == project_id))
    return require_project(store, project_id)


def rename_project(store: Store, project_id: str, name: str) -> ProjectInfo:
    """Rename; blank names raise ValueError, unknown ids `UnknownProjectError`."""
    return update_project(store, project_id, {ProjectRow.name: _clean_name(name)})


def set_archived(store: Store, project_id: str, archived: bool) -> ProjectInfo:
    """Archive (keeping the first date if already archived) or restore a project."""
    if archived:  # archiving twice keeps the first date
        stamp = fn.COALESCE(ProjectRow.archived_at, iso(now()))
        return update_project(store, project_id, {ProjectRow.archived_at: stamp})
    return update_project(store, project_id, {ProjectRow.archived_at: None})
