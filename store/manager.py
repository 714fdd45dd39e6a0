"""`SessionManager`: many named sessions in one store, plus projects.

Design notes:
- Session settings (context templates, cached prompt, compaction) are kept
  as a recipe and applied to every `Session` the manager hands out; block
  storage is namespaced by session id.
- Soft delete sets `deleted_at`: the session disappears from `list`/`get`
  and global search, but its messages stay so references still resolve.
  `purge` removes everything.
- Every write that touches several rows (fork, purge) is one transaction.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypeAlias, get_args

from .db import Store
from .errors import InvalidStatusError, UnknownProjectError, UnknownSessionError
from .messages import LATEST, Latest, Message, MessageLike, SearchResult
from .providers.protocols import ContextProvider
from .session import CompactFunction, CompactionErrorHandler, Session
from .storage import _iso, now, search_messages
from .tokens import TokenCounter
from .tools import Tool

__all__ = [
    "SessionManager",
    "SessionInfo",
    "ProjectInfo",
    "SessionStatus",
    "StatusChange",
    "HistorySearchProvider",
]

SessionStatus: TypeAlias = Literal["active", "awaiting_peer", "idle", "completed", "failed"]
STATUSES: frozenset[str] = frozenset(get_args(SessionStatus))

_SESSION_COLUMNS = (
    "id, name, parent_session_id, model, source, agent_id, project_id, status, metadata, "
    "input_tokens, output_tokens, cost, created_at, updated_at, deleted_at"
)


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


@dataclass(frozen=True)
class SessionInfo:
    """A session's registry entry."""

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


def _info(row: tuple[Any, ...]) -> SessionInfo:
    return SessionInfo(
        id=row[0], name=row[1], parent_session_id=row[2], model=row[3], source=row[4],
        agent_id=row[5], project_id=row[6], status=row[7], metadata=json.loads(row[8] or "{}"),
        input_tokens=row[9], output_tokens=row[10], cost=row[11],
        created_at=datetime.fromisoformat(row[12]), updated_at=datetime.fromisoformat(row[13]),
        deleted_at=_dt(row[14]),
    )


@dataclass(frozen=True)
class ProjectInfo:
    id: str
    name: str
    created_at: datetime
    archived_at: datetime | None = None


@dataclass(frozen=True)
class StatusChange:
    session_id: str
    status: str
    detail: str | None
    changed_at: datetime


@dataclass
class _Template:
    label: str
    description: str | None
    max_tokens: int | None
    provider: Any


@dataclass
class _Recipe:
    templates: list[_Template] = field(default_factory=list)
    cached_prompt: bool = False
    compact_fn: CompactFunction | None = None
    threshold: int | None = None
    token_counter: TokenCounter | None = None
    on_error: CompactionErrorHandler | None = None
    history_label: str | None = None


class HistorySearchProvider:
    """A search block over every past conversation (`with_searchable_history`)."""

    def __init__(self, store: Store, exclude_session: str | None = None) -> None:
        self.store = store
        self.exclude_session = exclude_session

    async def get(self) -> str:
        messages, sessions = self.store.query(
            "SELECT count(*), count(DISTINCT session_id) FROM messages"
        )[0]
        return f"{messages} messages in {sessions} conversations are searchable."

    async def search(self, query: str) -> str:
        hits = [h for h in search_messages(self.store, query, 10)]
        return format_hits(self.store, hits) or f"No past messages match {query!r}."


def format_hits(store: Store, hits: list[SearchResult]) -> str:
    """Search hits as text for a model: chat name, role, date, snippet."""
    if not hits:
        return ""
    ids = sorted({h.session_id for h in hits})
    marks = ",".join("?" * len(ids))
    names = dict(store.query(f"SELECT id, name FROM sessions WHERE id IN ({marks})", ids))
    lines = []
    for hit in hits:
        when = hit.created_at.strftime("%Y-%m-%d") if hit.created_at else "?"
        name = names.get(hit.session_id, hit.session_id)
        lines.append(f"[{name} · {hit.role} · {when} · session {hit.session_id} · message "
                     f"{hit.id}]\n{hit.snippet or hit.content[:300]}")
    return "\n\n".join(lines)


class SessionManager:
    """A registry of sessions sharing one store and one session recipe."""

    def __init__(self, store: Store) -> None:
        if not isinstance(store, Store):
            raise TypeError("SessionManager needs a Store")
        self.store = store
        self._recipe = _Recipe()
        self._sessions: dict[str, Session] = {}

    # -- builder ----------------------------------------------------------------

    def with_context(self, label: str, *, description: str | None = None,
                     max_tokens: int | None = None, provider: Any = None) -> SessionManager:
        """A block every session gets; `provider` may be a factory `f(session_id)`."""
        if any(t.label == label for t in self._recipe.templates):
            raise ValueError(f"a context block {label!r} already exists")
        self._recipe.templates.append(_Template(label, description, max_tokens, provider))
        self._sessions.clear()
        return self

    def with_cached_prompt(self) -> SessionManager:
        self._recipe.cached_prompt = True
        return self

    def on_compaction(self, fn: CompactFunction) -> SessionManager:
        self._recipe.compact_fn = fn
        return self

    def compact_after(self, threshold: int, token_counter: TokenCounter | None = None
                      ) -> SessionManager:
        self._recipe.threshold = threshold
        self._recipe.token_counter = token_counter
        return self

    def on_compaction_error(self, handler: CompactionErrorHandler) -> SessionManager:
        self._recipe.on_error = handler
        return self

    def with_searchable_history(self, label: str = "history") -> SessionManager:
        """Give every session a search block over all conversations."""
        self._recipe.history_label = label
        return self

    # -- lifecycle --------------------------------------------------------------

    def create(self, name: str, *, id: str | None = None, parent_session_id: str | None = None,
               model: str | None = None, source: str | None = None,
               agent_id: str | None = None, project_id: str | None = None,
               metadata: dict[str, Any] | None = None) -> SessionInfo:
        """A new session with status `active`."""
        if not isinstance(name, str):
            raise TypeError("a session name must be a string")
        if project_id is not None:
            self._project_row(project_id)
        session_id = id or uuid.uuid4().hex
        stamp = _iso(now())
        with self.store.write():
            self.store.execute(
                "INSERT INTO sessions (id, name, parent_session_id, model, source, agent_id, "
                "project_id, status, metadata, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, ?)",
                (session_id, name, parent_session_id, model, source, agent_id, project_id,
                 json.dumps(metadata or {}), stamp, stamp),
            )
            self._record_status(session_id, "active", "created", stamp)
        return self._require(session_id)

    def get(self, session_id: str, *, include_deleted: bool = False) -> SessionInfo | None:
        rows = self.store.query(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?",
                                (session_id,))
        if not rows:
            return None
        info = _info(rows[0])
        return None if info.deleted_at and not include_deleted else info

    def _require(self, session_id: str, *, allow_deleted: bool = False) -> SessionInfo:
        info = self.get(session_id, include_deleted=True)
        if info is None:
            raise UnknownSessionError(f"no session {session_id!r}")
        if info.deleted_at and not allow_deleted:
            raise UnknownSessionError(f"session {session_id!r} is deleted (restore it first)")
        return info

    def list(self, *, project_id: str | None = None, include_deleted: bool = False,
             deleted_only: bool = False, limit: int | None = None, offset: int = 0
             ) -> list[SessionInfo]:
        """Sessions, most recently updated first."""
        where, params = [], []
        if deleted_only:
            where.append("deleted_at IS NOT NULL")
        elif not include_deleted:
            where.append("deleted_at IS NULL")
        if project_id is not None:
            where.append("project_id = ?")
            params.append(project_id)
        sql = f"SELECT {_SESSION_COLUMNS} FROM sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated_at DESC, rowid DESC"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [int(limit), int(offset)]
        return [_info(r) for r in self.store.query(sql, params)]

    def count(self, *, include_deleted: bool = False) -> int:
        sql = "SELECT count(*) FROM sessions"
        if not include_deleted:
            sql += " WHERE deleted_at IS NULL"
        return self.store.query(sql)[0][0]

    def _update(self, session_id: str, sql: str, params: tuple[Any, ...],
                *, allow_deleted: bool = False) -> SessionInfo:
        self._require(session_id, allow_deleted=allow_deleted)
        with self.store.write():
            self.store.execute(f"UPDATE sessions SET {sql} WHERE id = ?", (*params, session_id))
        return self._require(session_id, allow_deleted=True)

    def rename(self, session_id: str, name: str) -> SessionInfo:
        if not isinstance(name, str) or not name.strip():
            raise ValueError("a session name must be a non-empty string")
        return self._update(session_id, "name = ?, updated_at = ?", (name.strip(), _iso(now())))

    def set_model(self, session_id: str, model: str | None) -> SessionInfo:
        return self._update(session_id, "model = ?", (model,))

    def update_metadata(self, session_id: str, **values: Any) -> SessionInfo:
        """Merge keys into the session's metadata (None removes a key)."""
        info = self._require(session_id)
        merged = {**info.metadata, **values}
        merged = {k: v for k, v in merged.items() if v is not None}
        return self._update(session_id, "metadata = ?", (json.dumps(merged),))

    def delete(self, session_id: str) -> SessionInfo:
        """Soft delete: hidden from list/get/search, messages kept; `restore` undoes it."""
        return self._update(session_id, "deleted_at = ?", (_iso(now()),))

    def restore(self, session_id: str) -> SessionInfo:
        return self._update(session_id, "deleted_at = NULL", (), allow_deleted=True)

    def purge(self, session_id: str) -> None:
        """Delete the session and everything it owns, for good."""
        self._require(session_id, allow_deleted=True)
        with self.store.write():
            self.store.execute(
                "DELETE FROM messages_fts WHERE rowid IN "
                "(SELECT seq FROM messages WHERE session_id = ?)", (session_id,))
            for table, column in (("messages", "session_id"), ("compactions", "session_id"),
                                  ("context_blocks", "namespace"), ("skills", "namespace"),
                                  ("prompts", "namespace"), ("loaded_skills", "namespace"),
                                  ("status_changes", "session_id"), ("sessions", "id")):
                self.store.execute(f"DELETE FROM {table} WHERE {column} = ?", (session_id,))
            self.store.execute(
                "DELETE FROM search_entries_fts WHERE rowid IN "
                "(SELECT rowid FROM search_entries WHERE namespace = ?)", (session_id,))
            self.store.execute("DELETE FROM search_entries WHERE namespace = ?", (session_id,))
        self._sessions.pop(session_id, None)

    # -- sessions ---------------------------------------------------------------

    def get_session(self, session_id: str) -> Session:
        """The `Session` for an id, built from the recipe on first access and cached."""
        session = self._sessions.get(session_id)
        if session is None:
            self._require(session_id, allow_deleted=True)
            session = self._build(session_id)
            self._sessions[session_id] = session
        return session

    def _build(self, session_id: str) -> Session:
        recipe = self._recipe
        session = Session(self.store, session_id=session_id)
        session._touch_session = True
        for t in recipe.templates:
            provider = t.provider(session_id) if callable(t.provider) and not isinstance(
                t.provider, ContextProvider) else t.provider
            session.with_context(t.label, description=t.description, max_tokens=t.max_tokens,
                                 provider=provider)
        if recipe.history_label:
            session.with_context(recipe.history_label,
                                 description="Past conversations, searchable",
                                 provider=HistorySearchProvider(self.store, session_id))
        if recipe.cached_prompt:
            session.with_cached_prompt()
        if recipe.compact_fn is not None:
            session.on_compaction(recipe.compact_fn)
        if recipe.threshold is not None:
            session.compact_after(recipe.threshold, recipe.token_counter)
        if recipe.on_error is not None:
            session.on_compaction_error(recipe.on_error)
        return session

    async def append(self, session_id: str, message: MessageLike,
                     parent_id: str | None | Latest = LATEST) -> Message:
        self._require(session_id)
        return await self.get_session(session_id).append_message(message, parent_id)

    async def upsert(self, session_id: str, message: MessageLike,
                     parent_id: str | None | Latest = LATEST) -> Message:
        """Update the message if its id exists in the session, else append it."""
        self._require(session_id)
        session = self.get_session(session_id)
        message = Message.coerce(message)
        if session.get_message(message.id) is not None:
            session.update_message(message)
            stored = session.get_message(message.id)
            assert stored is not None
            return stored
        return await session.append_message(message, parent_id)

    async def append_all(self, session_id: str, messages: list[MessageLike],
                         parent_id: str | None | Latest = LATEST) -> list[Message]:
        """Append in order, each message a child of the one before."""
        self._require(session_id)
        session = self.get_session(session_id)
        coerced = [Message.coerce(m) for m in messages]  # all valid before any write
        stored: list[Message] = []
        parent = parent_id
        for message in coerced:
            stored.append(await session.append_message(message, parent))
            parent = stored[-1].id
        return stored

    def get_message_count(self, session_id: str) -> int:
        self._require(session_id, allow_deleted=True)
        return self.store.query("SELECT count(*) FROM messages WHERE session_id = ?",
                                (session_id,))[0][0]

    def get_history(self, session_id: str, leaf_id: str | None = None) -> list[Message]:
        return self.get_session(session_id).get_history(leaf_id)

    def clear_messages(self, session_id: str) -> None:
        self.get_session(session_id).clear_messages()

    def delete_messages(self, session_id: str, message_ids: list[str]) -> None:
        self.get_session(session_id).delete_messages(message_ids)

    def get_branches(self, session_id: str, message_id: str) -> list[Message]:
        return self.get_session(session_id).get_branches(message_id)

    async def fork(self, session_id: str, at_message_id: str, name: str) -> SessionInfo:
        """A new session holding a copy of the path root → `at_message_id`.

        Messages get new ids; content, order and parent links are kept, and
        so are overlays lying wholly on the path and the writable blocks.
        """
        source = self._require(session_id)
        session = self.get_session(session_id)
        path = session.get_raw_history(at_message_id)
        new_id = uuid.uuid4().hex
        id_map = {m.id: f"{new_id[:8]}-{i:05d}" for i, m in enumerate(path)}
        stamp = _iso(now())
        with self.store.write():
            self.store.execute(
                "INSERT INTO sessions (id, name, parent_session_id, model, source, agent_id, "
                "project_id, status, metadata, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 'idle', ?, ?, ?)",
                (new_id, name, session_id, source.model, source.source, source.agent_id,
                 source.project_id,
                 json.dumps({"forked_from": {"session_id": session_id,
                                             "message_id": at_message_id}}), stamp, stamp),
            )
            self._record_status(new_id, "idle", f"forked from {session_id}", stamp)
            target = self.get_session(new_id).provider
            parent: str | None = None
            for message in path:
                copy = Message.from_dict({**message.to_dict(), "id": id_map[message.id]})
                copy.parent_id = None
                target.append_message(copy, parent)
                parent = copy.id
            for c in session.get_compactions():
                if c.from_message_id in id_map and c.to_message_id in id_map:
                    target.add_compaction(c.summary, id_map[c.from_message_id],
                                          id_map[c.to_message_id])
            self.store.execute(
                "INSERT INTO context_blocks (namespace, label, content, updated_at) "
                "SELECT ?, label, content, ? FROM context_blocks WHERE namespace = ?",
                (new_id, stamp, session_id),
            )
        return self._require(new_id)

    # -- usage and status ---------------------------------------------------------

    def add_usage(self, session_id: str, input_tokens: int = 0, output_tokens: int = 0,
                  cost: float = 0.0) -> SessionInfo:
        for name, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens),
                            ("cost", cost)):
            if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative number")
        return self._update(
            session_id,
            "input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, cost = cost + ?",
            (int(input_tokens), int(output_tokens), float(cost)), allow_deleted=True,
        )

    def set_status(self, session_id: str, status: str, detail: str | None = None
                   ) -> SessionInfo:
        """Move a session to `status` and record the transition with a timestamp.

        Raises:
            InvalidStatusError: not one of active, awaiting_peer, idle, completed, failed.
        """
        if status not in STATUSES:
            raise InvalidStatusError(
                f"invalid status {status!r}; expected one of {', '.join(sorted(STATUSES))}"
            )
        self._require(session_id, allow_deleted=True)
        stamp = _iso(now())
        with self.store.write():
            self.store.execute("UPDATE sessions SET status = ? WHERE id = ?",
                               (status, session_id))
            self._record_status(session_id, status, detail, stamp)
        return self._require(session_id, allow_deleted=True)

    def _record_status(self, session_id: str, status: str, detail: str | None,
                       stamp: str) -> None:
        self.store.execute(
            "INSERT INTO status_changes (session_id, status, detail, changed_at) "
            "VALUES (?, ?, ?, ?)", (session_id, status, detail, stamp))

    def status_history(self, session_id: str) -> list[StatusChange]:
        rows = self.store.query(
            "SELECT session_id, status, detail, changed_at FROM status_changes "
            "WHERE session_id = ? ORDER BY seq", (session_id,))
        return [StatusChange(r[0], r[1], r[2], datetime.fromisoformat(r[3])) for r in rows]

    # -- search -------------------------------------------------------------------

    def search(self, query: str, limit: int = 20, *, session_id: str | None = None,
               include_deleted: bool = False) -> list[SearchResult]:
        """FTS5 across every session (or one), best first; never raises on query syntax."""
        return search_messages(self.store, query, limit, session_id=session_id,
                               include_deleted=include_deleted)

    def tools(self) -> dict[str, Tool]:
        """`session_search`: the model searches every past conversation."""
        async def session_search(query: str, limit: int = 10) -> str:
            hits = self.search(query, limit)
            return format_hits(self.store, hits) or f"No past messages match {query!r}."

        return {"session_search": Tool(
            name="session_search",
            description="Search every past conversation (all chats, all branches) by words. "
                        "Returns chat name, role, date and a snippet for each hit.",
            parameters={
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words to look for."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50,
                              "description": "Most results to return (default 10)."},
                },
                "required": ["query"],
            },
            fn=session_search,
        )}

    # -- projects -----------------------------------------------------------------

    def create_project(self, name: str, *, id: str | None = None) -> ProjectInfo:
        if not isinstance(name, str) or not name.strip():
            raise ValueError("a project name must be a non-empty string")
        project_id = id or uuid.uuid4().hex
        with self.store.write():
            self.store.execute("INSERT INTO projects (id, name, created_at) VALUES (?, ?, ?)",
                               (project_id, name.strip(), _iso(now())))
        return self._project(project_id)

    def _project_row(self, project_id: str) -> tuple[Any, ...]:
        rows = self.store.query(
            "SELECT id, name, created_at, archived_at FROM projects WHERE id = ?", (project_id,))
        if not rows:
            raise UnknownProjectError(f"no project {project_id!r}")
        return rows[0]

    def _project(self, project_id: str) -> ProjectInfo:
        r = self._project_row(project_id)
        return ProjectInfo(r[0], r[1], datetime.fromisoformat(r[2]), _dt(r[3]))

    def get_project(self, project_id: str) -> ProjectInfo | None:
        try:
            return self._project(project_id)
        except UnknownProjectError:
            return None

    def list_projects(self, include_archived: bool = False) -> list[ProjectInfo]:
        sql = "SELECT id FROM projects"
        if not include_archived:
            sql += " WHERE archived_at IS NULL"
        return [self._project(r[0]) for r in self.store.query(sql + " ORDER BY name, id")]

    def rename_project(self, project_id: str, name: str) -> ProjectInfo:
        if not isinstance(name, str) or not name.strip():
            raise ValueError("a project name must be a non-empty string")
        self._project_row(project_id)
        with self.store.write():
            self.store.execute("UPDATE projects SET name = ? WHERE id = ?",
                               (name.strip(), project_id))
        return self._project(project_id)

    def archive_project(self, project_id: str) -> ProjectInfo:
        self._project_row(project_id)
        with self.store.write():
            self.store.execute("UPDATE projects SET archived_at = ? WHERE id = ?",
                               (_iso(now()), project_id))
        return self._project(project_id)

    def move_to_project(self, session_id: str, project_id: str | None) -> SessionInfo:
        if project_id is not None:
            self._project_row(project_id)
        return self._update(session_id, "project_id = ?", (project_id,))

    def __repr__(self) -> str:
        return f"SessionManager({self.store!r})"

