"""`SessionManager`: many named sessions in one store, with projects and agents.

Design notes:
- Session settings (context templates, cached prompt, compaction) are kept
  as a recipe and applied to every `Session` the manager hands out; block
  storage is namespaced by session id, and chat-scoped providers of the
  application use `"{session_id}/{label}"` namespaces, so fork copies and
  purge removes both.
- Soft delete sets `deleted_at`: the session disappears from `list`/`get`
  and global search, but its messages stay so references still resolve.
  Writing into a deleted session raises `UnknownSessionError`. `purge`
  removes everything.
- A session runs at most one agent, fixed once set; it belongs to at most
  one project. Archived projects hide their sessions from `list()`.
- Status changes are recorded with a timestamp and an optional detail.
- Every write that touches several rows (fork, purge) is one transaction.
"""

from __future__ import annotations

import builtins  # `SessionManager.list` shadows `list` in the class body
import functools
import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from peewee import SQL, Case, fn

from . import agents as _agents
from . import projects as _projects
from .agents import UNSET, AgentInfo, AgentSpec
from .clock import iso, now
from .compaction import CompactFunction
from .db import Store
from .errors import InvalidStatusError, UnknownSessionError
from .message_search import scope_number, scope_range, search_messages
from .messages import LATEST, Latest, Message, MessageLike, SearchResult
from .namespaces import copy_block_writes, copy_namespaces, delete_namespaces
from .prepared import Prepared
from .projects import ProjectInfo
from .providers.history import HistorySearchProvider
from .providers.protocols import ContextProvider
from .records import (
    SESSION_FIELDS,
    STATUSES,
    SessionInfo,
    SessionStatus,
    StatusChange,
    insert_session,
    record_status,
    session_info,
)
from .schema import (
    CompactionRow,
    MessageIndexRow,
    MessageRow,
    PeerHopRow,
    PeerLinkRow,
    ProjectRow,
    SessionRow,
    StatusChangeRow,
)
from .session import CompactionErrorHandler, Session
from .storage import StoreSessionProvider, insert_messages
from .tokens import TokenCounter
from .tools import Tool, session_search_tool
from .utf8 import require_utf8

__all__ = [
    "SessionManager",
    "SessionInfo",
    "ProjectInfo",
    "SessionStatus",
    "StatusChange",
    "HistorySearchProvider",
]


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
    branch_memory: bool = False


def _metadata_json(metadata: object) -> str:
    if not isinstance(metadata, dict):
        raise ValueError(f"session metadata must be a dict, not {type(metadata).__name__}")
    try:
        text = json.dumps(metadata, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"session metadata is not JSON-serialisable: {exc}") from exc
    return require_utf8(text, "session metadata")


S = SessionRow
_GET = Prepared(lambda sid: S.select(*SESSION_FIELDS).where(S.id == sid))
# A chat's turn writes its row three times (`set_status` twice, `add_usage`): these
# are compiled once, not built again for each write (see `prepared`).
_SET_STATUS = Prepared(
    lambda sid, status, detail: (
        S.update({S.status: status, S.status_detail: detail})
        .where(S.id == sid)
        .returning(*SESSION_FIELDS)
    )
)
_ADD_USAGE = Prepared(
    lambda sid, tokens_in, tokens_out, cost: (
        S.update(
            {
                S.input_tokens: S.input_tokens + tokens_in,
                S.output_tokens: S.output_tokens + tokens_out,
                S.cost: S.cost + cost,
            }
        )
        .where(S.id == sid)
        .returning(*SESSION_FIELDS)
    )
)


@functools.cache
def _list_query(
    deleted: str, by_project: bool, archived: bool, by_agent: bool, oldest: bool, limited: bool
) -> Prepared:
    """The `SessionManager.list` query for one combination of its options.

    Compiled once per combination (see `prepared`): the chat list runs it on
    every visit. Its values are, in order: project id, agent id, limit, offset
    (each only when used).
    """

    def build(*values: Any) -> Any:
        given = iter(values)
        where = []
        if deleted == "only":
            where.append(S.deleted_at.is_null(False))
        elif deleted == "live":
            where.append(S.deleted_at.is_null())
        if by_project:
            where.append(S.project_id == next(given))
        elif not archived:
            shelved = ProjectRow.select(ProjectRow.id).where(ProjectRow.archived_at.is_null(False))
            where.append(S.project_id.is_null() | S.project_id.not_in(shelved))
        if by_agent:
            where.append(S.agent_id == next(given))
        query = S.select(*SESSION_FIELDS)
        if where:
            query = query.where(*where)
        # SQLite's implicit rowid breaks timestamp ties in insertion order.
        if oldest:
            query = query.order_by(S.created_at, SQL("rowid"))
        else:
            query = query.order_by(S.updated_at.desc(), SQL("rowid").desc())
        if limited:
            query = query.limit(next(given)).offset(next(given))
        return query

    return Prepared(build, arity=int(by_project) + int(by_agent) + 2 * int(limited))


class SessionManager:
    """A registry of sessions sharing one store and one session recipe.

    `SessionManager(store)` starts a builder; `with_context`, `with_cached_prompt`,
    `on_compaction`, `compact_after`, `on_compaction_error` and
    `with_searchable_history` configure every session it hands out.
    """

    def __init__(self, store: Store) -> None:
        if not isinstance(store, Store):
            raise TypeError("SessionManager needs a Store")
        self.store = store
        self._recipe = _Recipe()
        self._sessions: dict[str, Session] = {}

    # -- builder ----------------------------------------------------------------

    def with_context(
        self,
        label: str,
        *,
        description: str | None = None,
        max_tokens: int | None = None,
        provider: Any = None,
    ) -> SessionManager:
        """A block every session gets; `provider` may be a factory `f(session_id)`."""
        if any(t.label == label for t in self._recipe.templates):
            raise ValueError(f"a context block {label!r} already exists")
        self._recipe.templates.append(_Template(label, description, max_tokens, provider))
        self._sessions.clear()  # sessions handed out later get the new recipe
        return self

    def with_cached_prompt(self) -> SessionManager:
        """Persist each session's frozen prompt so it survives restarts."""
        self._recipe.cached_prompt = True
        self._sessions.clear()  # sessions handed out later get the new recipe
        return self

    def on_compaction(self, fn: CompactFunction) -> SessionManager:
        """The compaction function every session uses (see `create_compact_function`)."""
        self._recipe.compact_fn = fn
        self._sessions.clear()  # sessions handed out later get the new recipe
        return self

    def compact_after(
        self, threshold: int, token_counter: TokenCounter | None = None
    ) -> SessionManager:
        """Auto-compact a session once its history and prompt exceed `threshold` tokens."""
        self._recipe.threshold = threshold
        self._recipe.token_counter = token_counter
        self._sessions.clear()  # sessions handed out later get the new recipe
        return self

    def on_compaction_error(self, handler: CompactionErrorHandler) -> SessionManager:
        """Receive the exception of a failed auto-compaction (sync or async handler)."""
        self._recipe.on_error = handler
        self._sessions.clear()  # sessions handed out later get the new recipe
        return self

    def with_branch_memory(self) -> SessionManager:
        """Memory per branch for every session's own blocks (see `Session.with_branch_memory`)."""
        self._recipe.branch_memory = True
        self._sessions.clear()  # sessions handed out later get the new recipe
        return self

    def with_searchable_history(self, label: str = "history") -> SessionManager:
        """Give every session a search block over all conversations."""
        self._recipe.history_label = label
        self._sessions.clear()  # sessions handed out later get the new recipe
        return self

    # -- lifecycle --------------------------------------------------------------

    def create(
        self,
        name: str,
        *,
        id: str | None = None,
        parent_session_id: str | None = None,
        model: str | None = None,
        source: str | None = None,
        agent_id: str | None = None,
        project_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> SessionInfo:
        """A new session with status `active`.

        Raises:
            UnknownAgentError / UnknownProjectError: `agent_id` / `project_id`
                does not exist (or the agent is archived); nothing is created.
            ValueError: `id` contains "/" or `metadata` is not a JSON dict.
        """
        if not isinstance(name, str):
            raise TypeError("a session name must be a string")
        if id is not None and (not isinstance(id, str) or not id or "/" in id):
            raise ValueError(
                "a session id must be a non-empty string without '/' "
                "('/' separates chat-scoped namespaces)"
            )
        if project_id is not None:
            _projects.require_project(self.store, project_id)
        if agent_id is not None:
            _agents.require_agent(self.store, agent_id, live=True)
        meta = _metadata_json(metadata if metadata is not None else {})
        session_id = id or uuid.uuid4().hex
        stamp = iso(now())
        with self.store.write():
            insert_session(
                self.store,
                session_id,
                name,
                created_at=stamp,
                status_detail="created",
                metadata=meta,
                parent_session_id=parent_session_id,
                model=model,
                source=source,
                agent_id=agent_id,
                project_id=project_id,
            )
            self._record_status(session_id, "active", "created", stamp)
        return self._require(session_id)

    def get(self, session_id: str, *, include_deleted: bool = False) -> SessionInfo | None:
        """The session, or None (also for a deleted one unless `include_deleted`)."""
        rows = _GET.rows(self.store, session_id)
        if not rows:
            return None
        info = session_info(rows[0])
        return None if info.deleted_at and not include_deleted else info

    def _require(self, session_id: str, *, allow_deleted: bool = False) -> SessionInfo:
        info = self.get(session_id, include_deleted=True)
        if info is None:
            raise UnknownSessionError(f"no session {session_id!r}")
        if info.deleted_at and not allow_deleted:
            raise UnknownSessionError(f"session {session_id!r} is deleted (restore it first)")
        return info

    def list(
        self,
        *,
        project_id: str | None = None,
        agent_id: str | None = None,
        include_deleted: bool = False,
        deleted_only: bool = False,
        include_archived: bool = False,
        limit: int | None = None,
        offset: int = 0,
        oldest_first: bool = False,
    ) -> builtins.list[SessionInfo]:
        """Sessions, most recently updated first (`oldest_first`: in creation order).

        Args:
            project_id / agent_id: only that project's / agent's sessions.
            include_deleted / deleted_only: also / only soft-deleted sessions.
            include_archived: also sessions of archived projects (always
                included when `project_id` names the project).
        """
        deleted = "only" if deleted_only else "all" if include_deleted else "live"
        query = _list_query(
            deleted,
            project_id is not None,
            include_archived,
            agent_id is not None,
            oldest_first,
            limit is not None,
        )
        values: builtins.list[Any] = [v for v in (project_id, agent_id) if v is not None]
        if limit is not None:
            values += [int(limit), int(offset)]
        return [session_info(r) for r in query.rows(self.store, *values)]

    def count(self, *, include_deleted: bool = False) -> int:
        """How many sessions there are (live ones unless `include_deleted`)."""
        query = S.select(fn.COUNT(SQL("*")))
        if not include_deleted:
            query = query.where(S.deleted_at.is_null())
        return int(self.store.rows(query)[0][0])

    def _update(
        self, session_id: str, changes: dict[Any, Any], *, allow_deleted: bool = False
    ) -> SessionInfo:
        """One statement: the change, and the row as it is after it (`RETURNING`); a
        chat's turn writes its row several times, and each used to read it twice."""
        with self.store.write():
            return self._update_in(session_id, changes, allow_deleted=allow_deleted)

    def _update_in(
        self, session_id: str, changes: dict[Any, Any], *, allow_deleted: bool = False
    ) -> SessionInfo:
        """`_update` inside the caller's write. Raises `UnknownSessionError` (nothing
        changed) for a missing session, or a deleted one unless `allow_deleted`."""
        query = S.update(changes).where(S.id == session_id)
        if not allow_deleted:
            query = query.where(S.deleted_at.is_null())
        return self._updated(
            self.store.rows(query.returning(*SESSION_FIELDS)), session_id, allow_deleted
        )

    def _updated(
        self, rows: builtins.list[tuple[Any, ...]], session_id: str, allow_deleted: bool
    ) -> SessionInfo:
        """The row an update returned; `UnknownSessionError` (nothing changed) when none."""
        if not rows:
            self._require(session_id, allow_deleted=allow_deleted)  # says which it is
            raise UnknownSessionError(f"no session {session_id!r}")
        return session_info(rows[0])

    def rename(self, session_id: str, name: str) -> SessionInfo:
        """Set the session's name (its `label`); blank names are refused."""
        if not isinstance(name, str) or not name.strip():
            raise ValueError("a session name must be a non-empty string")
        return self._update(session_id, {S.name: name.strip(), S.updated_at: iso(now())})

    def set_model(self, session_id: str, model: str | None) -> SessionInfo:
        """The model the session's next turns use."""
        return self._update(session_id, {S.model: model})

    def set_agent(self, session_id: str, agent_id: str) -> SessionInfo:
        """Give a session without an agent its agent; a session runs exactly one.

        Raises:
            ValueError: the session already runs another agent.
            UnknownAgentError: no such live agent.
        """
        info = self._require(session_id)
        _agents.require_agent(self.store, agent_id, live=True)
        if info.agent_id == agent_id:
            return info
        if info.agent_id is not None:
            raise ValueError(
                f"session {session_id!r} already runs agent {info.agent_id!r}; "
                "a session runs exactly one agent (start a new session)"
            )
        return self._update(session_id, {S.agent_id: agent_id})

    def update_metadata(self, session_id: str, **values: Any) -> SessionInfo:
        """Merge keys into the session's metadata (None removes a key)."""
        info = self._require(session_id)
        merged = {**info.metadata, **values}
        merged = {k: v for k, v in merged.items() if v is not None}
        return self._update(session_id, {S.metadata: _metadata_json(merged)})

    def delete(self, session_id: str) -> SessionInfo:
        """Soft delete: hidden from list/get/search, messages kept; `restore` undoes it."""
        return self._update(session_id, {S.deleted_at: iso(now())})

    def restore(self, session_id: str) -> SessionInfo:
        """Undo a soft delete."""
        return self._update(session_id, {S.deleted_at: None}, allow_deleted=True)

    def purge(self, session_id: str) -> None:
        """Delete the session and everything it owns, for good, in one transaction.

        That is its messages (and their search rows), compactions, status
        history, cached prompt, loaded-skill state, the blocks, skills and
        search entries under its namespace and under `"{session_id}/…"`,
        and its peer links and hops.
        """
        self._require(session_id, allow_deleted=True)
        with self.store.write():
            index = scope_number(self.store, session_id)
            if index is not None:  # the number itself stays: numbers are never reused
                low, high = scope_range(index)
                X = MessageIndexRow
                self.store.run(X.delete().where(X.rowid >= low, X.rowid < high))
            for column in (
                MessageRow.session_id,
                CompactionRow.session_id,
                StatusChangeRow.session_id,
                S.id,
            ):
                self.store.run(column.model.delete().where(column == session_id))
            delete_namespaces(self.store, session_id)
            L, H = PeerLinkRow, PeerHopRow
            self.store.run(
                L.delete().where((L.caller_session_id == session_id) | (L.session_id == session_id))
            )
            self.store.run(
                H.delete().where(
                    (H.from_session_id == session_id) | (H.to_session_id == session_id)
                )
            )
        self._sessions.pop(session_id, None)

    # -- sessions ---------------------------------------------------------------

    def get_session(self, session_id: str) -> Session:
        """The `Session` for an id, built from the recipe on first access and cached.

        A deleted session can be read through it; writes raise `UnknownSessionError`.
        """
        session = self._sessions.get(session_id)
        if session is None:
            self._require(session_id, allow_deleted=True)
            session = self._build(session_id)
            self._sessions[session_id] = session
        return session

    def preview_session(self, session_id: str) -> Session:
        """A session built by this manager's recipe, neither cached nor stored.

        What a chat not created yet will have (its blocks, for a sidebar): load
        its context, but write nothing through it.
        """
        return self._build(session_id)

    def _build(self, session_id: str) -> Session:
        recipe = self._recipe
        session = Session(self.store, session_id=session_id, touch_session=True)
        if recipe.branch_memory:
            session.with_branch_memory()
        for t in recipe.templates:
            provider = (
                t.provider(session_id)
                if callable(t.provider) and not isinstance(t.provider, ContextProvider)
                else t.provider
            )
            session.with_context(
                t.label, description=t.description, max_tokens=t.max_tokens, provider=provider
            )
        if recipe.history_label:
            session.with_context(
                recipe.history_label,
                description="Past conversations, searchable",
                provider=HistorySearchProvider(self.store),
            )
        if recipe.cached_prompt:
            session.with_cached_prompt()
        if recipe.compact_fn is not None:
            session.on_compaction(recipe.compact_fn)
        if recipe.threshold is not None:
            session.compact_after(recipe.threshold, recipe.token_counter)
        if recipe.on_error is not None:
            session.on_compaction_error(recipe.on_error)
        return session

    async def append(
        self, session_id: str, message: MessageLike, parent_id: str | None | Latest = LATEST
    ) -> Message:
        """Append as `Session.append_message`, bumping `updated_at`.

        Raises:
            UnknownSessionError: no such session, or it is deleted.
        """
        self._require(session_id)
        return await self.get_session(session_id).append_message(message, parent_id)

    async def upsert(
        self, session_id: str, message: MessageLike, parent_id: str | None | Latest = LATEST
    ) -> Message:
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

    async def append_all(
        self,
        session_id: str,
        messages: Iterable[MessageLike],
        parent_id: str | None | Latest = LATEST,
    ) -> builtins.list[Message]:
        """Append in order, each message a child of the one before.

        Every message is validated before the first is written.
        """
        self._require(session_id)
        session = self.get_session(session_id)
        coerced = [Message.coerce(m) for m in messages]
        for message in coerced:
            message.to_json()  # parts JSON cannot hold fail here, before any write
        stored: builtins.list[Message] = []
        parent = parent_id
        for message in coerced:
            stored.append(await session.append_message(message, parent))
            parent = stored[-1].id
        return stored

    def get_message_count(self, session_id: str) -> int:
        """Messages stored in the session, every branch counted."""
        self._require(session_id, allow_deleted=True)
        return StoreSessionProvider(self.store, session_id).count()

    def message_counts(self, session_ids: Iterable[str] | None = None) -> dict[str, int]:
        """Messages stored per session (every branch), for many sessions in one query.

        Sessions with no messages are absent from the answer; `None` means every session.
        """
        M = MessageRow
        query = M.select(M.session_id, fn.COUNT(SQL("*"))).group_by(M.session_id)
        if session_ids is not None:
            ids = builtins.list(dict.fromkeys(session_ids))
            if not ids:
                return {}
            query = query.where(M.session_id.in_(ids))
        rows = self.store.rows(query)
        return {str(sid): int(n) for sid, n in rows}

    def models_used(self, limit: int = 50) -> builtins.list[str]:
        """Distinct models sessions were set to, most recently updated first."""
        rows = self.store.rows(
            S.select(S.model)
            .where(S.model.is_null(False))
            .group_by(S.model)
            .order_by(fn.MAX(S.updated_at).desc())
            .limit(int(limit))
        )
        return [str(r[0]) for r in rows]

    def names(self, session_ids: Iterable[str]) -> dict[str, str]:
        """Name of each session found (deleted ones included), by id."""
        ids = builtins.list(dict.fromkeys(session_ids))
        if not ids:
            return {}
        rows = self.store.rows(S.select(S.id, S.name).where(S.id.in_(ids)))
        return {str(i): str(n) for i, n in rows}

    def find(self, id_or_prefix: str, *, limit: int = 6) -> builtins.list[SessionInfo]:
        """Sessions (deleted ones included) whose id is, or starts with, `id_or_prefix`.

        An exact id comes back alone; otherwise up to `limit` matches in id order, so
        a caller can tell "none", "one" and "ambiguous" apart.
        """
        if not id_or_prefix:
            return []
        exact = self.get(id_or_prefix, include_deleted=True)
        if exact is not None:
            return [exact]
        rows = self.store.rows(
            S.select(*SESSION_FIELDS)
            .where(fn.substr(S.id, 1, len(id_or_prefix)) == id_or_prefix)
            .order_by(S.id)
            .limit(int(limit))
        )
        return [session_info(r) for r in rows]

    def find_messages(
        self, session_id: str, id_or_prefix: str, *, limit: int = 6
    ) -> builtins.list[str]:
        """Ids of the session's messages that are, or start with, `id_or_prefix`;
        an exact match comes first, then the rest in append order."""
        if not id_or_prefix:
            return []
        M = MessageRow
        exact = Case(None, [(M.id == id_or_prefix, 0)], 1)
        rows = self.store.rows(
            M.select(M.id)
            .where(
                M.session_id == session_id, fn.substr(M.id, 1, len(id_or_prefix)) == id_or_prefix
            )
            .order_by(exact, M.seq)
            .limit(int(limit))
        )
        return [str(r[0]) for r in rows]

    def get_history(self, session_id: str, leaf_id: str | None = None) -> builtins.list[Message]:
        """`Session.get_history` of that session."""
        return self.get_session(session_id).get_history(leaf_id)

    def clear_messages(self, session_id: str) -> None:
        """`Session.clear_messages` of that session."""
        self.get_session(session_id).clear_messages()

    def delete_messages(self, session_id: str, message_ids: builtins.list[str]) -> None:
        """`Session.delete_messages` of that session."""
        self.get_session(session_id).delete_messages(message_ids)

    def get_branches(self, session_id: str, message_id: str) -> builtins.list[Message]:
        """`Session.get_branches` of that session."""
        return self.get_session(session_id).get_branches(message_id)

    async def fork(self, session_id: str, at_message_id: str, name: str) -> SessionInfo:
        """A new session holding a copy of the path root → `at_message_id`.

        Messages get new ids; content, order and parent links are kept, and
        so are overlays lying wholly on the path and the session's blocks,
        skills and search entries (its own namespace and `"{id}/…"` ones);
        of the blocks' writes, those on the path (and on no message).
        One transaction: a failure leaves no half-made session.
        """
        source = self._require(session_id)
        session = self.get_session(session_id)
        path = session.get_raw_history(at_message_id)
        new_id = uuid.uuid4().hex
        id_map = {m.id: f"{new_id[:8]}-{i:05d}" for i, m in enumerate(path)}
        stamp = iso(now())
        with self.store.write():
            insert_session(
                self.store,
                new_id,
                name,
                created_at=stamp,
                status="idle",
                status_detail=f"forked from {session_id}",
                metadata=json.dumps(
                    {"forked_from": {"session_id": session_id, "message_id": at_message_id}}
                ),
                parent_session_id=session_id,
                model=source.model,
                source=source.source,
                agent_id=source.agent_id,
                project_id=source.project_id,
            )
            self._record_status(new_id, "idle", f"forked from {session_id}", stamp)
            copies: list[tuple[Message, str | None]] = []
            parent: str | None = None
            for message in path:  # a root-to-leaf path: unique ids, parents first
                copy = Message.from_dict({**message.to_dict(), "id": id_map[message.id]})
                copy.parent_id = None
                copies.append((copy, parent))
                parent = copy.id
            insert_messages(self.store, new_id, copies)
            target = StoreSessionProvider(self.store, new_id)
            for c in session.get_compactions():
                if c.from_message_id in id_map and c.to_message_id in id_map:
                    target.add_compaction(
                        c.summary, id_map[c.from_message_id], id_map[c.to_message_id]
                    )
            copy_namespaces(self.store, session_id, new_id, stamp)
            copy_block_writes(self.store, session_id, new_id, id_map)
        return self._require(new_id)

    # -- usage and status ---------------------------------------------------------

    def add_usage(
        self, session_id: str, input_tokens: int = 0, output_tokens: int = 0, cost: float = 0.0
    ) -> SessionInfo:
        """Add to the session's token and cost counters (negative values are refused)."""
        for name, value in (
            ("input_tokens", input_tokens),
            ("output_tokens", output_tokens),
            ("cost", cost),
        ):
            if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative number")
        with self.store.write():
            rows = _ADD_USAGE.rows(
                self.store, session_id, int(input_tokens), int(output_tokens), float(cost)
            )
            return self._updated(rows, session_id, allow_deleted=True)

    def set_status(self, session_id: str, status: str, detail: str | None = None) -> SessionInfo:
        """Move a session to `status` and record the transition with a timestamp.

        `active` while generating, `idle` between turns, `awaiting_peer` while
        blocked on another agent, `completed` / `failed` at the end. Any move
        between them is allowed (a completed chat can be picked up again).

        Raises:
            InvalidStatusError: not one of active, awaiting_peer, idle, completed, failed.
        """
        if status not in STATUSES:
            raise InvalidStatusError(
                f"invalid status {status!r}; expected one of {', '.join(sorted(STATUSES))}"
            )
        if detail is not None and not isinstance(detail, str):
            raise ValueError("a status detail must be a string")
        stamp = iso(now())
        with self.store.write():
            rows = _SET_STATUS.rows(self.store, session_id, status, detail)
            info = self._updated(rows, session_id, allow_deleted=True)
            self._record_status(session_id, status, detail, stamp)
        return info

    def _record_status(self, session_id: str, status: str, detail: str | None, stamp: str) -> None:
        record_status(self.store, session_id, status, detail, stamp)

    def status_history(self, session_id: str) -> builtins.list[StatusChange]:
        """Every recorded status of the session, oldest first."""
        C = StatusChangeRow
        rows = self.store.rows(
            C.select(C.session_id, C.status, C.detail, C.changed_at)
            .where(C.session_id == session_id)
            .order_by(C.seq)
        )
        return [StatusChange(r[0], r[1], r[2], datetime.fromisoformat(r[3])) for r in rows]

    # -- search -------------------------------------------------------------------

    def search(
        self,
        query: str,
        limit: int = 20,
        *,
        session_id: str | None = None,
        include_deleted: bool = True,
    ) -> builtins.list[SearchResult]:
        """Full-text search across every session (or one), best first; never raises on query
        syntax (what is not a query is searched as plain words: `search.query_problem`).

        Soft-deleted chats' messages are found (SPEC §5) with `deleted=True` on
        the result; `include_deleted=False` leaves them out.
        """
        return search_messages(
            self.store, query, limit, session_id=session_id, include_deleted=include_deleted
        )

    def tools(self) -> dict[str, Tool]:
        """`session_search`: the model searches every past conversation."""
        return {"session_search": session_search_tool(self.store)}

    # -- projects (see store.projects) --------------------------------------------

    def create_project(self, name: str, *, id: str | None = None) -> ProjectInfo:
        """A new project (blank names are refused)."""
        return _projects.create_project(self.store, name, id)

    def get_project(self, project_id: str) -> ProjectInfo | None:
        """The project (archived or not), or None."""
        return _projects.get_project(self.store, project_id)

    def list_projects(self, include_archived: bool = False) -> builtins.list[ProjectInfo]:
        """Projects by name; archived ones only with `include_archived`."""
        return _projects.list_projects(self.store, include_archived)

    def rename_project(self, project_id: str, name: str) -> ProjectInfo:
        """Rename a project. Raises `UnknownProjectError`, or ValueError for a blank name."""
        return _projects.rename_project(self.store, project_id, name)

    def archive_project(self, project_id: str) -> ProjectInfo:
        """Hide the project and its sessions from listings; nothing is deleted."""
        return _projects.set_archived(self.store, project_id, True)

    def restore_project(self, project_id: str) -> ProjectInfo:
        """Undo `archive_project`."""
        return _projects.set_archived(self.store, project_id, False)

    def project_sessions(
        self, project_id: str, *, include_deleted: bool = False
    ) -> builtins.list[SessionInfo]:
        """The sessions a project owns, newest first (even when it is archived)."""
        _projects.require_project(self.store, project_id)
        return self.list(project_id=project_id, include_deleted=include_deleted)

    def move_to_project(self, session_id: str, project_id: str | None) -> SessionInfo:
        """Put a session in a project (None: out of any project)."""
        if project_id is not None:
            _projects.require_project(self.store, project_id)
        return self._update(session_id, {S.project_id: project_id})

    # -- agents (see store.agents) ------------------------------------------------

    def create_agent(
        self,
        name: str,
        *,
        model: str | None = None,
        soul: str = "",
        description: str = "",
        config: dict[str, Any] | None = None,
        id: str | None = None,
    ) -> AgentInfo:
        """A new agent. Raises `DuplicateAgentError` if the name is taken (any case)."""
        return _agents.create_agent(
            self.store,
            name,
            model=model,
            soul=soul,
            description=description,
            config=config,
            agent_id=id,
        )

    def get_agent(self, agent_id: str) -> AgentInfo | None:
        """The agent (archived or not), or None."""
        return _agents.get_agent(self.store, agent_id)

    def get_agent_by_name(self, name: str) -> AgentInfo | None:
        """The agent with that name, ignoring case (archived or not), or None."""
        return _agents.get_agent_by_name(self.store, name)

    def list_agents(self, include_archived: bool = False) -> builtins.list[AgentInfo]:
        """Agents by name; archived ones only with `include_archived`."""
        return _agents.list_agents(self.store, include_archived)

    def update_agent(
        self,
        agent_id: str,
        *,
        name: Any = UNSET,
        model: Any = UNSET,
        soul: Any = UNSET,
        description: Any = UNSET,
        config: Any = UNSET,
    ) -> AgentInfo:
        """Change the fields given; sessions keep running the same agent id."""
        return _agents.update_agent(
            self.store,
            agent_id,
            name=name,
            model=model,
            soul=soul,
            description=description,
            config=config,
        )

    def archive_agent(self, agent_id: str) -> AgentInfo:
        """Retire an agent: no new sessions; its sessions and messages stay."""
        return _agents.set_archived(self.store, agent_id, True)

    def restore_agent(self, agent_id: str) -> AgentInfo:
        """Undo `archive_agent`."""
        return _agents.set_archived(self.store, agent_id, False)

    def sync_agents(
        self, specs: Iterable[AgentSpec | Mapping[str, Any]], *, archive_missing: bool = False
    ) -> builtins.list[AgentInfo]:
        """Upsert agents from a config file (the config wins for fields it sets)."""
        return _agents.sync_agents(self.store, specs, archive_missing=archive_missing)

    def __repr__(self) -> str:
        return f"SessionManager({self.store!r})"
