"""`Workspace`: what every screen needs, with no UI — agents, model facts, usage, replies.

The app builds one and hands it to its screens ("attributes down"); screens
hear about replies and new model facts by subscribing (the app turns them
into Textual messages: "messages up"). Nothing here imports Textual, so the
same workspace drives a headless test, a benchmark or the app.

- Model facts: the context window and its source (`llm.windows`), asked of
  an `api_base` server off the event loop; whether a model lacks a key.
- One context-usage computation (`context_usage.measure`) for the sidebar
  and auto-compaction.
- Template blocks of a new chat, built by the same recipe a stored chat gets
  (`SessionManager.preview_session`).
- Reply jobs (`jobs.ReplyJobs`): a turn belongs to its chat.
- Other processes' writes (`store.ChangeWatcher`): `poll_changes()` reports
  the chats another process or machine wrote to as `ChatsChanged`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from store import (
    LATEST,
    ChangeWatcher,
    ContextBlock,
    Latest,
    Message,
    Session,
    SessionManager,
    Store,
)

from .. import llm
from ..llm.windows import WINDOWS, Window
from ..llm.worker import StreamWorker, shared_worker
from .agents import AgentRuntime
from .config import Config
from .context_usage import ContextUsage, measure
from .events import TurnEvent
from .jobs import JobEvent, ReplyJob, ReplyJobs, TurnKind

__all__ = ["ChatsChanged", "ModelFactsChanged", "Workspace", "WorkspaceEvent"]

log = logging.getLogger(__name__)

TEMPLATE_ID = "__new_chat__"
"""The session id a new chat's template blocks are loaded under (nothing is written)."""


@dataclass(frozen=True)
class ModelFactsChanged:
    """Something new is known about a model (its window, once a server answered)."""

    model: str


@dataclass(frozen=True)
class ChatsChanged:
    """Another process wrote to these chats (or to a shared memory namespace, e.g. "global")."""

    session_ids: frozenset[str]


WorkspaceEvent: TypeAlias = JobEvent | ModelFactsChanged | ChatsChanged
Listener: TypeAlias = Callable[[WorkspaceEvent], None]


class Workspace:
    """Agents, model facts, context usage and the reply jobs of every chat."""

    def __init__(
        self,
        store: Store,
        config: Config,
        *,
        launch_model: str | None = None,
        model_process: bool = False,
    ) -> None:
        self.store = store
        self.config = config
        self.launch_model = launch_model
        self.runtime = AgentRuntime(store, config)
        self.manager: SessionManager = self.runtime.manager
        self.jobs = ReplyJobs(self.manager, config.max_live_replies)
        self.llm_ready = False
        """LiteLLM is loaded (its model table and key checks can be read)."""
        self._listeners: list[Listener] = []
        self._key_checked: set[str] = set()
        self._asking: set[asyncio.Task[None]] = set()
        self._watcher: ChangeWatcher | None = None
        self.jobs.subscribe(self._emit)
        self.worker: StreamWorker | None = None
        """The model process replies stream from (`model_process=True`), else None:
        calls run in this process."""
        if model_process:
            self.worker = shared_worker()
            self.runtime.streamer = self.worker.stream

    # -- listeners ------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` with every reply event and model fact; returns the unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _emit(self, event: WorkspaceEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                log.exception("workspace listener failed")

    # -- other processes ------------------------------------------------------------

    def poll_changes(self) -> frozenset[str]:
        """Chats other processes changed since the last call, also emitted as `ChatsChanged`.

        Cheap when nothing changed (one pragma on SQLite, no round trip on
        PostgreSQL): call it a few times a second from the thread that owns the store.
        """
        if self._watcher is None:
            self._watcher = ChangeWatcher(self.store)
            return frozenset()
        changed = frozenset(self._watcher.poll())
        if changed:
            self._emit(ChatsChanged(changed))
        return changed

    def stop_watching(self) -> None:
        """Release the change watcher (its PostgreSQL listening connection)."""
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None

    def start_model_process(self) -> None:
        """Start the model process now, so LiteLLM is loaded there before the first send
        (a failure is logged; the first call tries again and says why)."""
        if self.worker is None:
            return
        try:
            self.worker.start()
        except llm.LLMError:
            log.warning("the model process did not start", exc_info=True)

    # -- models ---------------------------------------------------------------------

    def model_of(self, session_id: str | None, draft: str | None = None) -> str:
        """A chat's model; for a new chat the draft's, else --model, else the config's."""
        if session_id is not None:
            return self.runtime.engine_for(session_id).model_for(session_id)
        return draft or self.launch_model or self.config.model

    def window(self, model: str) -> Window:
        """The model's context window and where it came from; asks its server once."""
        options = self.config.options_for(model)
        if options.api_base and WINDOWS.should_ask(model, options.api_base):
            self._ask_server(model, options.api_base)
        return WINDOWS.known(model, options)

    def _ask_server(self, model: str, api_base: str) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (a synchronous caller): the next caller asks

        async def ask() -> None:
            try:
                changed = await asyncio.to_thread(WINDOWS.detect, model, api_base)
            except Exception:
                log.debug("asking %s for its window failed", api_base, exc_info=True)
                return
            if changed:
                self._emit(ModelFactsChanged(model))

        task = loop.create_task(ask(), name=f"window:{model}")
        self._asking.add(task)
        task.add_done_callback(self._asking.discard)

    async def settle(self) -> None:
        """Until every question put to a server has its answer (tests, benchmarks)."""
        while self._asking:
            await asyncio.wait(set(self._asking))

    def key_problem_once(self, model: str) -> str | None:
        """What stops `model` from running for want of a key, said once per model."""
        if not self.llm_ready or model in self._key_checked:
            return None
        self._key_checked.add(model)
        return llm.key_problem(model, self.config.options_for(model).api_base)

    def model_choices(self, current: str, recent: Sequence[str]) -> list[tuple[str, str]]:
        """Models to offer in the picker, each with why it is there (first reason wins)."""
        seen: dict[str, str] = {current: "current"}
        for model in recent:
            seen.setdefault(model, "recent")
        seen.setdefault(self.config.model, "config default")
        for model in self.config.models:
            seen.setdefault(model, "configured")
        seen.setdefault("demo", "offline demo, no key needed")
        for model in self.manager.models_used():
            seen.setdefault(model, "used before")
        return list(seen.items())

    # -- context --------------------------------------------------------------------

    async def template_blocks(self, agent_id: str | None = None) -> list[ContextBlock]:
        """The blocks a new chat will have (the sidebar before the first send).

        Built by the agent's manager recipe (`SessionManager.preview_session`), the
        one a stored chat gets, on a session id nothing is written under.
        """
        manager = self.runtime.manager_for_agent(agent_id)
        session = manager.preview_session(TEMPLATE_ID)
        return await session.load_context()

    async def usage(
        self,
        session: Session | None,
        history: Sequence[Message],
        model: str,
        *,
        template_tokens: int = 0,
        prompt_tokens: int | None = None,
    ) -> ContextUsage:
        """How full the window is: the sidebar's figure, computed as auto-compaction does.

        `session` None: a new chat, whose prompt is `template_tokens` (its blocks).
        `prompt_tokens`: the prompt of a stored chat as the branch on screen would
        send it (None: the session's frozen prompt).
        """
        window = self.window(model)
        prompt = template_tokens if session is None else prompt_tokens
        return await measure(
            session, history, model, window.tokens, window.source, prompt_tokens=prompt
        )

    # -- replies --------------------------------------------------------------------

    def start_reply(
        self,
        session_id: str,
        kind: TurnKind,
        *,
        text: str = "",
        message_id: str | None = None,
        parent_id: str | None | Latest = LATEST,
        model: str | None = None,
    ) -> ReplyJob:
        """Start a turn in the chat as a job that outlives whichever screen shows it.

        `model`: a regenerate written by another model than the chat's (that reply only).

        Raises:
            JobsFull: `max_live_replies` chats are replying already.
            RuntimeError: this chat is replying already.
        """
        engine = self.runtime.engine_for(session_id)
        events: AsyncGenerator[TurnEvent, None]
        if kind == "send":
            events = engine.send(session_id, text, parent_id=parent_id)
        elif kind == "regenerate":
            assert message_id is not None
            events = engine.regenerate(session_id, message_id, model=model)
        elif kind == "edit":
            assert message_id is not None
            events = engine.edit(session_id, message_id, text)
        else:
            events = engine.respond(session_id)
        return self.jobs.start(session_id, kind, events)

    async def shutdown(self, timeout: float = 10.0) -> None:
        """Stop every reply (what arrived is kept, marked cancelled) and wait for peers."""
        self.stop_watching()
        await self.jobs.cancel_all()
        if self.runtime.router.pending:  # fire-and-forget peer turns still writing
            try:
                await asyncio.wait_for(self.runtime.router.drain(), timeout=timeout)
            except TimeoutError:
                log.warning("quit with peer turns still running; their replies are partial")
