"""`Workspace`: the one object screens ask — chats, their facts, their replies — with no UI.

The app builds one and hands it to its screens ("attributes down"); screens
hear about replies and new model facts by subscribing (the app turns them
into Textual messages: "messages up"). Nothing here imports Textual, so the
same workspace drives a headless test, a benchmark or the app.

A facade: its session manager, agent runtime and reply jobs are its own.
Screens get decisions, not the parts that make them:

- `facts(session_id)`: a chat's agent, model, window and the size of its next
  request, resolved by one rule (`chatui.core.facts`) once per turn or redraw;
  the sidebar, the title, F2 and auto-compaction all read it.
- Chats: open, create, rename, fork, delete (its reply stopped first), search,
  export and import.
- Attachments: `attach_file`, `attach_bytes` (content from elsewhere: an MCP
  resource) and `pasted_path` give what `start_reply` sends with the text.
- Replies (`jobs.ReplyJobs`): a turn belongs to its chat, not to a screen.
- Model facts learned later (an `api_base` server's window) are emitted as
  `ModelFactsChanged`; other processes' writes (`store.ChangeWatcher`) as
  `ChatsChanged`.

Screens import only this module, `events` and `chat_state` from the headless
side (an import-linter contract); the types they need come from here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from store import (
    LATEST,
    AgentInfo,
    BranchSite,
    Latest,
    Message,
    ProjectInfo,
    SearchResult,
    SessionInfo,
    Store,
    estimate_string_tokens,
    text_part,
)
from store.search import query_problem

from .. import llm
from ..llm.windows import WINDOWS
from ..llm.worker import StreamWorker, shared_worker
from ..mcp.hub import Answer, McpHub, ServerStatus, ToolApproval, ToolsChanged
from . import paths
from .agents import AgentRuntime, PeerMarks
from .attachments import Attached, AttachmentDesk, AttachRefused, pasted_path
from .branch_notes import LeftBranch, left_branch, stored_notes, write_note
from .chat_state import ChatState
from .config import Config, PersonaConfig, TemplateConfig, ollama_address
from .context_usage import ContextUsage, Measured, NextRequest, ToolLine
from .events import JobEvent, TurnEvent, TurnKind
from .facts import ChatFacts, ModelChoice, choose_model, window_of
from .jobs import JobsFull, ReplyJobs
from .params import ParamsError, check_params, params_of, params_text, parse_params
from .replies import new_id
from .ui_state import UiState

if TYPE_CHECKING:
    from store import ChangeWatcher, ContextBlock, StoredCompaction, StoredWrite

    from ..transfer.importing import ImportReport
    from .engine import ChatEngine
    from .inspection import BlockDetails, WriteLine

__all__ = [
    "Answer",
    "AttachRefused",
    "Attached",
    "BlockDetails",
    "ChatFacts",
    "ChatsChanged",
    "EditRefused",
    "ContextUsage",
    "ImportFailed",
    "JobsFull",
    "LeftBranch",
    "Measured",
    "ModelChoice",
    "ModelFactsChanged",
    "ModelsListed",
    "NextRequest",
    "ParamsError",
    "PeerMarks",
    "PersonaConfig",
    "TemplateConfig",
    "UnknownPersona",
    "ServerStatus",
    "ToolApproval",
    "ToolLine",
    "ToolsChanged",
    "UiState",
    "Workspace",
    "WorkspaceEvent",
    "WriteLine",
]


def __getattr__(name: str) -> object:
    """The memory inspector's types, loaded with it (not on the first frame's path)."""
    if name in ("BlockDetails", "WriteLine"):
        from . import inspection

        return getattr(inspection, name)
    raise AttributeError(name)


log = logging.getLogger(__name__)

TEMPLATE_ID = "__new_chat__"
"""The session id a new chat's template blocks are loaded under (nothing is written)."""


@dataclass(frozen=True)
class ModelFactsChanged:
    """Something new is known about a model (its window, once a server answered; its
    server's count of a request, asked in the background)."""

    model: str


@dataclass(frozen=True)
class ModelsListed:
    """A server's or a provider's list of models changed (asked in the background when
    the picker opened): an open picker shows it at once."""


@dataclass(frozen=True)
class ChatsChanged:
    """Another process wrote to these chats (or to a shared memory namespace, e.g. "global")."""

    session_ids: frozenset[str]


class ImportFailed(Exception):
    """Nothing was imported; the message says why, naming the file."""


class UnknownPersona(ParamsError):
    """No persona by that name in the config; the message lists the ones there are."""


class EditRefused(ValueError):
    """A message cannot be edited as asked; the message says why (nothing is stored)."""


WorkspaceEvent: TypeAlias = (
    JobEvent | ModelFactsChanged | ModelsListed | ChatsChanged | ToolsChanged | ToolApproval
)
Listener: TypeAlias = Callable[[WorkspaceEvent], None]


class Workspace:
    """Chats, their facts and their reply jobs, for every screen."""

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
        """--model: the model of the chat opened at launch and of new chats."""
        self._runtime = AgentRuntime(store, config)
        self._manager = self._runtime.manager
        self._jobs = ReplyJobs(self._manager, config.max_live_replies)
        self.llm_ready = False
        """LiteLLM is loaded (its model table and key checks can be read)."""
        self._listeners: list[Listener] = []
        self._key_checked: set[str] = set()
        self._asking: set[asyncio.Task[None]] = set()
        self._watcher: ChangeWatcher | None = None
        self._desk: AttachmentDesk | None = None
        self._jobs.subscribe(self._emit)
        self._runtime.counted = lambda model: self._emit(ModelFactsChanged(model))
        self.worker: StreamWorker | None = None
        """The model process replies stream from (`model_process=True`), else None:
        calls run in this process."""
        if model_process:
            self.worker = shared_worker()
            self._runtime.streamer = self.worker.stream
            self._runtime.key_checker = self._key_problem
        self.tools = McpHub(
            config.mcp, self._manager, emit=self._emit, log_dir=paths.log_file().parent
        )
        """The MCP servers (`[mcp.servers.NAME]`), started by `start_tools`."""
        if self.tools:
            self._runtime.tool_source = self.tools.tools_for

    # -- attachments ----------------------------------------------------------------

    @property
    def desk(self) -> AttachmentDesk:
        if self._desk is None:
            self._desk = AttachmentDesk(self.store, self.config.max_attachment_bytes)
        return self._desk

    def attach_file(self, path: str | Path) -> Attached:
        """Check and store a file for the next message (an image or a text file).

        Raises:
            AttachRefused: missing, a folder, unreadable, over `max_attachment_mb`, a
                type no model takes, or a damaged image; the message says which.
        """
        return self.desk.file(path)

    def attach_bytes(self, name: str, mime: str, data: bytes) -> Attached:
        """Check and store content from elsewhere (an MCP resource) for the next message.

        Raises:
            AttachRefused: as `attach_file`.
        """
        return self.desk.content(name, mime, data)

    def pasted_path(self, text: str) -> Path | None:
        """The existing file a paste names, when the whole paste is one path; else None."""
        return pasted_path(text)

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
            from store.changes import ChangeWatcher  # loaded by its first poll (start-up)

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

    async def _key_problem(self, model: str, api_base: str | None) -> str | None:
        """Whether `model`'s key is set, asked of the model process while this one still
        imports LiteLLM and that one is ready (a spare adopted at launch): the first
        question after launch goes without waiting for this process's import."""
        worker = self.worker
        if not llm.is_loaded() and worker is not None and worker.ready.is_set():
            try:
                return await worker.key_problem(model, api_base)
            except llm.LLMError:
                log.warning("the model process did not say whether a key is set", exc_info=True)
        return await llm.key_problem_loaded(model, api_base)

    def start_model_process(self) -> None:
        """Start the model process now, so LiteLLM is loaded there before the first send
        (a failure is logged; the first call tries again and says why)."""
        if self.worker is None:
            return
        try:
            self.worker.start()
        except llm.LLMError:
            log.warning("the model process did not start", exc_info=True)

    # -- facts ----------------------------------------------------------------------

    async def facts(
        self,
        session_id: str | None,
        *,
        at: str | None = None,
        info: SessionInfo | None = None,
        history: Sequence[Message] | None = None,
        picked: str | None = None,
        agent_id: str | None = None,
    ) -> ChatFacts:
        """A chat's agent, model, window and next request, by one rule (`facts`).

        Args:
            session_id: the chat (None: the new chat on screen, not stored yet).
            at: the leaf of the branch shown (None: the latest leaf).
            info, history: the row and the path as the caller read them already
                (each is read here otherwise).
            picked, agent_id: a new chat's model picked for it, and its agent.
        """
        if session_id is None:
            agent = self._runtime.agent(agent_id)
            model = choose_model(None, agent, self.config, picked=picked, launch=self.launch_model)
            engine = self._runtime.engine_for_agent(agent_id)
            session = self._runtime.manager_for_agent(agent_id).preview_session(TEMPLATE_ID)
            measured = await engine.measure(session, None, model.model, history=[])
            self._ask_window(model.model)
            self._count(engine, model.model, measured)
            return ChatFacts(None, None, agent, model, measured, self.config.compact_at)
        if info is None:
            info = self._manager.get(session_id, include_deleted=True)
        if info is None:
            raise LookupError(f"no chat {session_id!r}")
        agent = self._runtime.agent(info.agent_id)
        model = choose_model(info, agent, self.config)
        self._runtime.note_tools(info)
        engine = self._runtime.engine_for_agent(info.agent_id)
        session = self._runtime.manager_for_agent(info.agent_id).get_session(session_id)
        measured = await engine.measure(
            session, at, model.model, history=list(history) if history is not None else None
        )
        self._ask_window(model.model)
        self._count(engine, model.model, measured)
        return ChatFacts(session_id, info, agent, model, measured, self.config.compact_at)

    def _count(self, engine: ChatEngine, model: str, measured: Measured) -> None:
        """Have the server count what the figure estimated (llama.cpp's `/tokenize`), in
        the background; the exact figure comes as `ModelFactsChanged`."""
        if not measured.uncounted:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self._counted(engine, model, measured), name=f"count:{model}")
        self._asking.add(task)
        task.add_done_callback(self._asking.discard)

    async def _counted(self, engine: ChatEngine, model: str, measured: Measured) -> None:
        try:
            learned = await engine.count_tokens(model, measured)
        except Exception:
            log.debug("counting tokens for %s failed", model, exc_info=True)
            return
        if learned:
            self._emit(ModelFactsChanged(model))

    def _ask_window(self, model: str) -> None:
        """Ask an `api_base` server for the model's window once; its answer comes as
        `ModelFactsChanged` (the figures drawn meanwhile say where theirs came from)."""
        options = self.config.options_for(model)
        if options.api_base and WINDOWS.should_ask(model, options.api_base):
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return  # no loop (a synchronous caller): the next caller asks
            task = loop.create_task(self._ask(model, options.api_base), name=f"window:{model}")
            self._asking.add(task)
            task.add_done_callback(self._asking.discard)

    async def _ask(self, model: str, api_base: str) -> None:
        try:
            changed = await asyncio.to_thread(WINDOWS.detect, model, api_base)
        except Exception:
            log.debug("asking %s for its window failed", api_base, exc_info=True)
            return
        if changed:
            self._emit(ModelFactsChanged(model))

    def window_known(self, model: str) -> int | None:
        """The model's window as known now (tests and the CLI; screens read `facts`)."""
        return window_of(self.config, model).tokens

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

    def model_choices(
        self, current: str, recent: Sequence[str], *, ask: bool = True
    ) -> list[tuple[str, str]]:
        """Models to offer in the picker, each with why it is there (first reason wins).
        `ask`: the servers and providers are asked again in the background (a changed
        list comes as `ModelsListed`); False reads the lists as known."""
        from ..llm.served import HOSTED, OLLAMA_PREFIX, SERVED  # loaded by the picker

        seen: dict[str, str] = {current: "current"}
        for model in recent:
            seen.setdefault(model, "recent")
        if self.launch_model:
            seen.setdefault(self.launch_model, "--model")
        seen.setdefault(self.config.model, "config default")
        for model in self.config.models:
            seen.setdefault(model, "configured")
        seen.setdefault("demo", "offline demo, no key needed")
        if self.config.api_base:  # a bare name goes there: what it serves can be picked
            for model in SERVED.known(self.config.api_base):
                seen.setdefault(model, f"served at {self.config.api_base}")
            if ask:
                self._refresh_served(self.config.api_base)
        ollama = ollama_address()
        if ollama != (self.config.api_base or "").rstrip("/"):
            # A local Ollama needs no config: its models, named for LiteLLM's Ollama
            # provider, go to the same address (a bare name found there would go to
            # OpenAI: only Ollama's own list counts).
            for model in SERVED.known(ollama):
                if model.startswith(OLLAMA_PREFIX):
                    seen.setdefault(model, f"served by Ollama at {ollama}")
            if ask:
                self._refresh_served(ollama)
        for model in self._manager.models_used():
            seen.setdefault(model, "used before")
        for model, variable in HOSTED.known():
            seen.setdefault(model, f"{variable} is set")
        if ask:
            self._refresh_hosted()
        return list(seen.items())

    def _refresh_hosted(self) -> None:
        """Make the hosted models' list in the background (LiteLLM's table, for the
        providers whose key is set); the picker never waits for it. Only once LiteLLM
        is loaded (the app loads it after its first frame): never imported for this."""
        if not llm.is_loaded():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self._hosted(), name="models:hosted")
        self._asking.add(task)
        task.add_done_callback(self._asking.discard)

    async def _hosted(self) -> None:
        try:
            from ..llm.served import HOSTED

            changed = await asyncio.to_thread(HOSTED.refresh)
        except Exception:
            log.debug("listing hosted models failed", exc_info=True)
            return
        if changed:
            self._emit(ModelsListed())

    def _refresh_served(self, api_base: str) -> None:
        """Ask the server for its models in the background; the picker shows the list
        known when it opens and never waits (the next one shows what came back)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self._served(api_base), name=f"models:{api_base}")
        self._asking.add(task)
        task.add_done_callback(self._asking.discard)

    async def _served(self, api_base: str) -> None:
        try:
            from ..llm.served import SERVED

            changed = await asyncio.to_thread(SERVED.refresh, api_base)
        except Exception:
            log.debug("asking %s for its models failed", api_base, exc_info=True)
            return
        if changed:
            self._emit(ModelsListed())

    # -- chats ----------------------------------------------------------------------

    def open(self, session_id: str, info: SessionInfo | None = None) -> ChatState:
        """The chat's state, on its agent's recipe (its blocks), at its remembered branch
        (`info`: its row as the caller read it, not read again)."""
        if info is not None:
            return ChatState(self._runtime.manager_for_agent(info.agent_id), session_id)
        return ChatState(self._runtime.manager_for(session_id), session_id)

    def chat(self, session_id: str, *, include_deleted: bool = False) -> SessionInfo | None:
        return self._manager.get(session_id, include_deleted=include_deleted)

    def newest_chat(self, preferred: str | None = None) -> SessionInfo | None:
        """`preferred` if it still exists, else the chat used last (None: none stored)."""
        info = self._manager.get(preferred) if preferred else None
        if info is None:
            recent = self._manager.list(limit=1)
            info = recent[0] if recent else None
        return info

    def list_chats(self, *, deleted: bool = False) -> list[SessionInfo]:
        """Live chats (`deleted`: the deleted ones), most recently used first."""
        return self._manager.list(deleted_only=True) if deleted else self._manager.list()

    def chat_names(self, session_ids: Collection[str] | None = None) -> dict[str, str]:
        """Chat id → name (deleted chats included), of `session_ids` or of every chat."""
        if session_ids is not None:
            return self._manager.names(session_ids)
        return {i.id: i.name for i in self._manager.list(include_deleted=True)}

    def message_counts(self) -> dict[str, int]:
        return self._manager.message_counts()

    def create_chat(
        self,
        name: str,
        *,
        model: str,
        agent_id: str | None = None,
        persona: PersonaConfig | None = None,
    ) -> SessionInfo:
        """A new chat; with a `persona` (from `check_persona`), its parameters and
        enabled tools are stored with the chat and its prompt is the chat's soul (on
        every branch). `model`: the caller's choice (`persona_model` for a persona's)."""
        metadata: dict[str, object] | None = None
        if persona is not None:
            metadata = {"persona": persona.name}
            if persona.params:
                metadata["params"] = dict(persona.params)
            if persona.tools is not None:
                metadata["tools"] = list(persona.tools)
        info = self._manager.create(
            name, model=model, source="chatui", agent_id=agent_id, metadata=metadata
        )
        if persona is not None:
            self._runtime.note_tools(info)
            label = self._prompt_label(self._runtime.agent(agent_id))
            if persona.prompt and label is not None:
                session = self._runtime.manager_for_agent(agent_id).get_session(info.id)
                provider = session.block_provider(label)
                provider.write_at(persona.prompt, BranchSite(info.id, None, "user"))
        return info

    # -- personas and templates -----------------------------------------------------------

    def personas(self) -> list[PersonaConfig]:
        """The config's personas, by name."""
        return [self.config.personas[name] for name in sorted(self.config.personas)]

    def persona(self, name: str) -> PersonaConfig:
        """The persona called `name`.

        Raises:
            UnknownPersona: none by that name (the message lists the ones there are).
        """
        found = self.config.personas.get(name)
        if found is None:
            known = ", ".join(sorted(self.config.personas)) or "none configured"
            raise UnknownPersona(f"no persona {name!r} (personas: {known})")
        return found

    async def check_persona(self, name: str, agent_id: str | None = None) -> PersonaConfig:
        """The persona, its parameters checked against LiteLLM's and its tools against
        the tools a chat has: what `create_chat(persona=...)` takes. `chatui ask
        --persona` and ctrl+n both start here.

        Raises:
            UnknownPersona: no such persona. ParamsError: a bad parameter or tool name.
        """
        persona = self.persona(name)
        await llm.ensure_loaded()
        try:
            check_params(persona.params, llm.known_params())
        except ParamsError as exc:
            raise ParamsError(f"persona {name}: {exc}") from None
        if persona.tools is not None:
            engine = self._runtime.engine_for_agent(agent_id)
            preview = self._runtime.manager_for_agent(agent_id).preview_session(TEMPLATE_ID)
            known = set(await engine.tools_for(preview))
            unknown = [t for t in persona.tools if t not in known]
            if unknown:
                raise ParamsError(
                    f"persona {name}: unknown tool {unknown[0]!r} "
                    f"(tools: {', '.join(sorted(known)) or 'none'})"
                )
        return persona

    def persona_model(self, persona: PersonaConfig, agent_id: str | None = None) -> str:
        """The model a persona's chat starts on: its own, else the default rule's."""
        if persona.model:
            return persona.model
        agent = self._runtime.agent(agent_id)
        return choose_model(None, agent, self.config, launch=self.launch_model).model

    def templates(self) -> list[TemplateConfig]:
        """The config's message templates, by name."""
        return [self.config.templates[name] for name in sorted(self.config.templates)]

    # -- editing a reply --------------------------------------------------------------

    async def edit_reply(self, chat: ChatState, message_id: str, text: str) -> Message:
        """A corrected copy of a model's reply, beside it (the same question), marked
        edited; the original is kept and the branch shown moves to the copy. Nothing is
        asked of the model: the next send continues from the corrected reply.

        Raises:
            EditRefused: not a reply, a reply that called tools, an empty or unchanged
                text (nothing is stored).
        """
        message = chat.session.get_message(message_id)
        if message is None:
            raise EditRefused("that message does not exist (any more)")
        if message.role != "assistant" or message.is_compaction or message.parent_id is None:
            raise EditRefused("only a model's reply is edited this way")
        if message.tool_calls:
            raise EditRefused(
                "this reply called tools (their results follow it): regenerate it instead"
            )
        if not isinstance(text, str) or not text.strip():
            raise EditRefused("the reply is empty: type the corrected text, or escape")
        if text == message.text:
            raise EditRefused("unchanged: edit the text, or escape to keep the reply")
        metadata: dict[str, object] = {"status": "complete", "edited_from": message.id}
        if message.metadata.get("model"):
            metadata["model"] = message.metadata["model"]
        edited = await chat.session.append_message(
            Message(id=new_id(), role="assistant", parts=[text_part(text)], metadata=metadata),
            message.parent_id,
        )
        chat.set_active(edited.id)
        return edited

    # -- a chat's prompt and parameters ------------------------------------------------

    def prompt_label(self, facts: ChatFacts) -> str | None:
        """The block a person edits as the chat's system prompt: its `soul`, else its
        first static block (None: the chat has no static block to rewrite)."""
        return self._prompt_label(facts.agent)

    def _prompt_label(self, agent: AgentInfo | None) -> str | None:
        statics = [b.label for b in self._runtime.blocks_of(agent) if b.kind == "static"]
        return "soul" if "soul" in statics else (statics[0] if statics else None)

    def chat_prompt(self, facts: ChatFacts) -> str:
        """The chat's system prompt (its soul) on the branch its facts were read at."""
        label = self.prompt_label(facts)
        return next((b.content for b in facts.blocks if b.label == label), "")

    async def set_chat_prompt(self, chat: ChatState, facts: ChatFacts, text: str) -> None:
        """Rewrite the chat's system prompt (its soul) from the question on screen on: a
        person's write, kept per branch like a memory write. It belongs to the last
        question of the branch shown, so a regenerate of the reply on screen is
        written with it, and branches that split off before that question keep the
        prompt they had (the config's text stays for other chats).

        Raises:
            ParamsError: no static block to rewrite, or the text is empty or too long
                (nothing is written).
        """
        label = self.prompt_label(facts)
        if label is None:
            raise ParamsError("this chat's blocks have no static block (a soul) to rewrite")
        if not isinstance(text, str) or not text.strip():
            raise ParamsError("the system prompt is empty: type one, or escape to keep it")
        if "\x00" in text:
            raise ParamsError("the system prompt holds a NUL character")
        budget = next(
            (b.max_tokens for b in self._runtime.blocks_of(facts.agent) if b.label == label),
            None,
        )
        if budget is not None and estimate_string_tokens(text) > budget:
            raise ParamsError(f"the prompt is over its block's budget of {budget} tokens")
        leaf = chat.active_leaf
        path = chat.session.get_raw_history(leaf) if leaf is not None else []
        question = next((m.id for m in reversed(path) if m.role == "user"), None)
        site = BranchSite(chat.session_id, question, "user")
        await chat.session.block_provider(label).set_at(text, site)

    def chat_params(self, info: SessionInfo | None) -> dict[str, object]:
        """The chat's parameters as stored (none for a new chat)."""
        return params_of(info.metadata) if info is not None else {}

    @staticmethod
    def params_text(params: dict[str, object]) -> str:
        """Parameters as the `name = value` lines the editor shows."""
        return params_text(params)

    async def check_params_text(self, text: str) -> dict[str, object]:
        """`name = value` lines, parsed and checked against LiteLLM's parameters.

        Raises:
            ParamsError: the first bad line, name or value.
        """
        parsed = parse_params(text)
        await llm.ensure_loaded()  # LiteLLM's list of parameters
        return check_params(parsed, llm.known_params())

    async def set_chat_params(self, session_id: str, text: str) -> SessionInfo:
        """Replace the chat's parameters with `text`'s (`name = value` lines; empty: none).

        Raises:
            ParamsError: a bad line, name or value (nothing changes).
        """
        params = await self.check_params_text(text)
        return self._manager.update_metadata(session_id, params=params or None)

    def rename_chat(self, session_id: str, name: str) -> SessionInfo:
        return self._manager.rename(session_id, name)

    def set_chat_model(self, session_id: str, model: str) -> SessionInfo:
        return self._manager.set_model(session_id, model)

    async def fork_chat(self, session_id: str, at_message_id: str, name: str) -> SessionInfo:
        return await self._manager.fork(session_id, at_message_id, name)

    async def delete_chat(self, session_id: str) -> SessionInfo:
        """Soft-delete a chat; a reply it is writing is stopped and stored first."""
        await self._jobs.stop(session_id)
        return self._manager.delete(session_id)

    def discard_if_empty(self, session_id: str) -> bool:
        """Remove a chat made for a first send whose turn stored nothing (no key, say):
        it holds nothing, and an empty chat must not linger in the list."""
        if self._manager.get_message_count(session_id):
            return False
        self._manager.purge(session_id)
        return True

    def restore_chat(self, session_id: str) -> SessionInfo:
        return self._manager.restore(session_id)

    def projects(self, *, include_archived: bool = False) -> list[ProjectInfo]:
        return self._manager.list_projects(include_archived=include_archived)

    def move_to_project(self, session_id: str, project: str | None) -> ProjectInfo | None:
        """Put the chat in the project named `project` (created if new; None: in none)."""
        if project is None:
            self._manager.move_to_project(session_id, None)
            return None
        known = self._manager.list_projects()
        found = next((p for p in known if p.name.lower() == project.lower()), None)
        if found is None:
            found = self._manager.create_project(project)
        self._manager.move_to_project(session_id, found.id)
        return found

    def search(self, query: str, limit: int = 50) -> list[SearchResult]:
        """Every chat's messages, best first (deleted chats left out)."""
        return self._manager.search(query, limit, include_deleted=False)

    def search_problem(self, query: str) -> str | None:
        """Why `query` was searched as plain words (an unclosed quote, an operator
        without its words, too many words), or None when it is a query."""
        return query_problem(query)

    async def compact(self, session_id: str, leaf_id: str | None) -> StoredCompaction | None:
        """Summarise the middle of the path to `leaf_id` (None: nothing to compact).

        Raises:
            LLMError: the summary could not be written (nothing is stored).
        """
        return await self._runtime.engine_for(session_id).compact(session_id, leaf_id)

    def export_chat(self, session_id: str, target: Path, fmt: str, leaf: str | None) -> Path:
        """Write the chat as Markdown (`md`, the branch through `leaf`) or JSON (the tree).

        Raises:
            OSError: the file cannot be written (nothing partial is left behind).
        """
        from ..transfer.files import export_chat  # not on the first frame's path

        live = self._jobs.live_messages(session_id)
        return export_chat(self._manager, session_id, target, fmt, leaf, live)

    def export_path(self, name: str, fmt: str) -> Path:
        from ..transfer.files import default_export_path

        return default_export_path(name, fmt)

    async def import_chats(self, path: Path) -> ImportReport:
        """Import a ChatGPT, chatui, Pi or llm file, off the event loop.

        Raises:
            ImportFailed: nothing was imported (the store rolled back).
        """
        from ..transfer.files import ImportProblem, import_file

        try:
            return await asyncio.to_thread(import_file, self.store, path)
        except ImportProblem as exc:
            raise ImportFailed(str(exc)) from None
        except Exception as exc:  # a bug or an I/O failure: the store rolled back
            log.error("%s", exc, exc_info=exc)
            raise ImportFailed(str(exc)) from None

    # -- agents and peers -----------------------------------------------------------

    def agents(self) -> list[AgentInfo]:
        """Live agents, by name (read fresh: the agent picker)."""
        return self._runtime.agents()

    def agent_names(self) -> dict[str, str]:
        """Agent id → name, archived ones included (for labels)."""
        return self._runtime.names()

    def peer_marks(self, session_id: str) -> PeerMarks:
        """Where this chat's messages crossed to other chats (the tree, `g`); no read in
        a database that never had an agent (no message can have crossed)."""
        if not self._runtime.names():
            return PeerMarks()
        return self._runtime.peer_marks(session_id)

    def status_line(self, session_id: str) -> str:
        """ "waiting for <agent>" while the chat waits on a peer, else "" (no read at all
        without agents: no chat can wait on one)."""
        if not self._runtime.has_agents():
            return ""
        return self._runtime.status_line(session_id)

    # -- memory ---------------------------------------------------------------------

    def block_details(self, block: ContextBlock, facts: ChatFacts) -> BlockDetails:
        """Who a block of the chat belongs to and whether a person may edit it here."""
        from .inspection import block_details  # the inspector's: loaded when it opens

        config = next(
            (b for b in self._runtime.blocks_of(facts.agent) if b.label == block.label), None
        )
        return block_details(block, config, chat_name=facts.name, agent=facts.agent)

    def write_lines(
        self, chat: ChatState, writes: list[StoredWrite], leaf: str | None
    ) -> list[WriteLine]:
        """A block's writes, newest first, each said from the branch on screen."""
        from .inspection import write_lines

        on_path = {m.id for m in chat.session.get_raw_history(leaf)} if leaf else set()
        names = self._manager.names({w.session_id for w in writes if w.session_id})
        return write_lines(writes, chat_id=chat.session_id, on_path=on_path, names=names)

    def left_branch(self, chat: ChatState, before: str | None) -> LeftBranch | None:
        """What the shown branch left behind when it moved from leaf `before` (None:
        nothing worth a note, or branch notes are off)."""
        if self.config.branch_notes == "off":
            return None
        return left_branch(chat.session, before, chat.active_leaf, stored_notes(chat.info.metadata))

    async def write_branch_note(self, session_id: str, left: LeftBranch) -> str | None:
        """Have the compaction model note what was tried on `left` (stored in the chat).

        Returns None when the note is stored, else why not, to tell the user (nothing
        is stored then).
        """
        model = self._runtime.engine_for(session_id).model_for(session_id)
        try:
            await write_note(self._manager, self.config, session_id, model, left)
        except llm.LLMError as error:
            return f"{error.title}. {error.hint}"
        except Exception as exc:  # a note is a nicety: say why, lose nothing
            log.warning("branch note failed", exc_info=True)
            return llm.redact(str(exc))
        return None

    # -- MCP tool servers -------------------------------------------------------------

    def start_tools(self) -> None:
        """Start the MCP servers in the background (the app calls it after the first
        frame; nothing waits for them: their tools join each chat once listed)."""
        self.tools.start()

    def tool_servers(self, session_id: str | None) -> list[ServerStatus]:
        """Each configured server: its state, its tools, on or off in the chat."""
        return self.tools.statuses(session_id)

    def set_tool_server(self, session_id: str, server: str, on: bool) -> None:
        """Turn a server's tools on or off in a chat (remembered in the chat)."""
        self.tools.set_enabled(session_id, server, on)

    def tool_prompts(self, session_id: str | None) -> list[tuple[str, str, str]]:
        """(server, prompt name, description) of the MCP prompts the chat may use."""
        return [(s, p.name, p.description) for s, p in self.tools.prompts(session_id)]

    def prompt_arguments(self, server: str, name: str) -> list[tuple[str, bool]]:
        """(argument, required) of an MCP prompt, in order."""
        for found, prompt in self.tools.prompts(None):
            if found == server and prompt.name == name:
                return list(prompt.arguments)
        return []

    def tool_resources(self, session_id: str | None) -> list[tuple[str, str, str, str]]:
        """(server, uri, name, description) of the MCP resources the chat may attach."""
        return [(s, r.uri, r.name, r.description) for s, r in self.tools.resources(session_id)]

    async def attach_resource(self, server: str, uri: str, name: str) -> Attached:
        """Read an MCP resource and attach it like a file (same checks, stored once).

        Raises:
            AttachRefused: the server is not running or refused, or the content cannot
                be attached (a type no model takes, over the size limit); says which.
        """
        try:
            mime, data = await self.tools.read_resource(server, uri)
        except RuntimeError as exc:
            raise AttachRefused(f"{name} ({uri}): {exc}") from None
        return self.attach_bytes(name, mime, data)

    async def fill_prompt(self, server: str, name: str, arguments: dict[str, str]) -> str:
        """An MCP prompt's text with its arguments filled in.

        Raises:
            RuntimeError: the server is not running or refused (the message says why).
        """
        return await self.tools.get_prompt(server, name, arguments)

    # -- replies --------------------------------------------------------------------

    @property
    def model_loading(self) -> bool:
        """The model process (or LiteLLM in this process) is still loading: the first
        reply after launch waits for it (a few seconds on a loaded machine)."""
        if self.worker is not None and not self.worker.broken:
            return not self.worker.ready.is_set()
        return not llm.is_loaded()

    def replying(self, session_id: str | None) -> bool:
        """The chat is writing a reply now."""
        return self._jobs.running(session_id)

    @property
    def live_chats(self) -> set[str]:
        """Ids of the chats writing a reply now."""
        return self._jobs.live_chats

    @property
    def reply_limit(self) -> int:
        """At most this many chats write replies at once (`max_live_replies`)."""
        return self._jobs.limit

    def live_text(self, session_id: str | None) -> dict[str, str]:
        """Message id → its text so far, of the replies the chat is writing now."""
        return self._jobs.live_messages(session_id)

    def turn_notes(self, session_id: str | None) -> list[tuple[str, str]]:
        """(text, level) of the notices of the chat's running turn (drawn again on a redraw)."""
        job = self._jobs.job(session_id)
        return list(job.notes) if job else []

    def start_reply(
        self,
        session_id: str,
        kind: TurnKind,
        *,
        text: str = "",
        message_id: str | None = None,
        parent_id: str | None | Latest = LATEST,
        model: str | None = None,
        facts: ChatFacts | None = None,
        attachments: Sequence[Attached] = (),
    ) -> None:
        """Start a turn in the chat as a job that outlives whichever screen shows it.

        `attachments`: sent with a send's text (`attach_file`, `attach_bytes`).

        `model`: a send or regenerate written by another model than the chat's (that
        turn only; `chatui ask --model` on an existing chat).
        `facts`: the chat's facts as the caller has them (read here otherwise): the
        turn runs on their agent and model, and reads the chat's row no more.

        Raises:
            JobsFull: `max_live_replies` chats are replying already.
            RuntimeError: this chat is replying already.
        """
        info = facts.info if facts is not None else None
        if info is None:
            info = self._manager.get(session_id, include_deleted=True)
        agent_id = info.agent_id if info is not None else None
        if info is not None:
            self._runtime.note_tools(info)
        engine = self._runtime.engine_for_agent(agent_id)
        chat_model = (
            facts.model.model
            if facts is not None and facts.session_id == session_id
            else choose_model(info, self._runtime.agent(agent_id), self.config).model
        )
        params = params_of(info.metadata) if info is not None else {}
        events: AsyncGenerator[TurnEvent, None]
        if kind == "send":
            events = engine.send(
                session_id,
                text,
                parent_id=parent_id,
                model=model or chat_model,
                params=params,
                attachments=[a.part for a in attachments],
            )
        elif kind == "regenerate":
            assert message_id is not None
            events = engine.regenerate(
                session_id, message_id, model=model or chat_model, params=params
            )
        elif kind == "edit":
            assert message_id is not None
            events = engine.edit(session_id, message_id, text, model=chat_model, params=params)
        elif kind == "continue":
            assert message_id is not None
            events = engine.continue_reply(session_id, message_id, model=model, params=params)
        else:
            events = engine.respond(session_id)
        stored_leaf = info.metadata.get("active_leaf") if info is not None else None
        self._jobs.start(
            session_id,
            kind,
            events,
            stored_leaf=stored_leaf if isinstance(stored_leaf, str) else None,
        )

    def cancel_reply(self, session_id: str | None) -> bool:
        """Stop the chat's reply; what arrived is kept, marked cancelled."""
        return self._jobs.cancel(session_id)

    async def wait_for_replies(self, session_id: str | None = None) -> None:
        """Until the chat's reply (every reply when None) has ended."""
        await self._jobs.wait(session_id)

    async def cancel_all(self) -> int:
        """Cancel every reply and wait until what arrived is stored."""
        return await self._jobs.cancel_all()

    def peer_turns_pending(self) -> bool:
        """Agents are still answering messages other chats sent them."""
        return bool(self._runtime.router.pending)

    async def shutdown(self, timeout: float = 10.0) -> None:
        """Stop every reply (what arrived is kept, marked cancelled) and wait for peers."""
        self.stop_watching()
        await self._jobs.cancel_all()
        await self.tools.stop()
        if self._runtime.router.pending:  # fire-and-forget peer turns still writing
            try:
                await asyncio.wait_for(self._runtime.router.drain(), timeout=timeout)
            except TimeoutError:
                log.warning("quit with peer turns still running; their replies are partial")
