"""`ChatEngine`: one chat turn from the user's words to a stored reply, with no UI.

Design notes:
- Nothing is lost: the user's message is stored before the model is
  called; the reply is stored empty the moment it starts and rewritten as
  it streams (`replies.ReplyWriter`); a cancel or an error leaves whatever
  arrived, marked incomplete with its status (`cancelled`, `error`).
- A turn that fails before anything is stored (no API key, a database
  that refuses the write, bad input) yields `TurnFailed` first, so the UI
  can keep the typed text in the input box.
- Provider errors never raise out of `send`/`regenerate`/`edit`: they end
  the turn with `TurnFailed`. Only cancellation propagates.
- The system prompt is refreshed at the start of each user action (so
  memory written last turn is in it) and stays frozen within the turn.
- Memory per branch: a turn reads the blocks at the message it answers,
  and a tool call's writes belong to the reply that made it, so a
  regenerated reply starts from the memory its branch had.
- Old branches are never touched: regenerate and edit append siblings.
- A chat's parameters (`params` in its metadata: temperature, max tokens, ...)
  go with each of its requests; the caller passes them with the model when it
  has the chat's row already.
- LiteLLM is imported lazily by `chatui.llm`; importing this module is cheap.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import sqlite3
from collections.abc import (
    AsyncGenerator,
    Awaitable,
    Callable,
    Collection,
    Coroutine,
    Mapping,
    Sequence,
)
from contextlib import aclosing
from dataclasses import replace
from typing import Any, TypeAlias

from store import (
    LATEST,
    AgentInfo,
    ContextBlock,
    EngineError,
    Latest,
    Message,
    Session,
    SessionManager,
    StoredCompaction,
    StoreError,
    Tool,
    create_compact_function,
    estimate_message_tokens,
    estimate_string_tokens,
    reply_state,
)
from store.tokens import PER_MESSAGE_OVERHEAD, part_text

from .. import llm
from ..llm.quirks import QUIRKS
from ..llm.template_cost import TEMPLATES, server_key
from ..llm.tokens import LOCAL, TOKENS, counting_key
from ..llm.windows import WINDOWS, Window
from .config import Config, ModelOptions
from .context_usage import (
    ContextUsage,
    Counter,
    Measured,
    measure,
    request_pieces,
    request_texts,
)
from .convert import to_openai_messages
from .events import (
    Compacted,
    ContextMeasured,
    MemoryChanged,
    MessageStored,
    Notice,
    ReplyDelta,
    ReplyFinished,
    ReplyStarted,
    ReplyStatus,
    TurnEvent,
    TurnFailed,
    UsageRecorded,
)
from .facts import choose_model, window_of
from .params import params_of
from .replies import ReplyWriter, new_id, run_tools
from .summaries import make_summarizer, summary_model
from .traffic import TRAFFIC

__all__ = [
    "ChatEngine",
    "ContextUsage",
    "KeyChecker",
    "Streamer",
]  # ContextUsage lives in context_usage

log = logging.getLogger(__name__)

Streamer: TypeAlias = Callable[..., llm.ChunkStream]
"""`llm.stream_completion`'s signature: (model, messages, *, tools, api_base, timeout,
max_retries, params) → chunks."""
KeyChecker: TypeAlias = Callable[[str, str | None], Awaitable[str | None]]
"""`llm.key_problem`, asked where LiteLLM is loaded (the app's model process)."""

Params: TypeAlias = dict[str, Any]

STORAGE_ERRORS = (StoreError, sqlite3.Error, EngineError, OSError)
"""What a database that refuses a write raises (disk full, read-only, locked, corrupt)."""

CONTINUE_PROMPT = (
    "Your reply above was cut off. Continue it exactly where it stopped, mid-word if "
    "need be: do not repeat anything, do not comment, just go on."
)
"""Asked after a truncated or stopped reply (OpenAI-compatible APIs cannot resume an
assistant message themselves): what comes back is appended to that reply."""

TRUNCATED_NOTE = (
    "The reply stopped at the model's output limit (it is kept, marked truncated). "
    "ctrl+g on it continues from where it stopped."
)

CUT_CALL_NOTE = (
    "The reply stopped at the model's output limit while writing its call to {name}, "
    "so the call was not run (the reply is kept, marked truncated). Raise max_tokens "
    "for this chat (f2, then p) and press ctrl+r on the reply to ask again."
)

DEFAULT_TAIL_BUDGET = 20_000
"""Tokens of recent conversation a compaction keeps verbatim (less for small windows)."""


class ChatEngine:
    """Runs chat turns for the sessions of one `SessionManager`.

    Args:
        manager: from `chatui.core.wiring.build_manager(store, config)`.
        config: the app's configuration (model, limits, compaction).
        flush_interval: most seconds between writes of a streaming reply.
        agent: the agent whose chats this engine runs (None: the config's defaults).
    """

    def __init__(
        self,
        manager: SessionManager,
        config: Config,
        *,
        flush_interval: float = 0.25,
        extra_tools: Callable[[str], dict[str, Tool]] | None = None,
        streamer: Streamer | None = None,
        agent: AgentInfo | None = None,
        tool_filter: Callable[[str], Collection[str] | None] | None = None,
        counted: Callable[[str], None] | None = None,
        key_checker: KeyChecker | None = None,
    ) -> None:
        self.manager = manager
        self.config = config
        self.agent = agent
        self.flush_interval = flush_interval
        self.extra_tools = extra_tools
        """More tools for a session (the app's `message_agent`), by session id."""
        self._asking: set[asyncio.Task[Any]] = set()
        """Servers being asked for a model's window (`_ask_window`)."""
        self._counting: set[asyncio.Task[Any]] = set()
        """Servers being asked for counts in the background (`_teach_template`): they wait
        for the server's turns and give way to a new one (`traffic`)."""
        self.tool_filter = tool_filter
        self.counted = counted
        """Called with the model's name when a count asked in the background (a server
        streaming without usage) taught its figures: the app measures again."""
        """The tools a chat is limited to, by session id (a persona's), or None: all."""
        self.streamer: Streamer = streamer or llm.stream_completion
        """How a model call is streamed: in this process (the default), or the app's
        model process (`llm.worker`), which keeps LiteLLM's per-chunk work off the UI."""
        self.key_checker: KeyChecker = key_checker or llm.key_problem_loaded
        """Who says whether a model's key is set (by default LiteLLM in this process). The
        app's model process can answer while this process still imports LiteLLM."""

    # -- facts --------------------------------------------------------------------

    def model_for(self, session_id: str) -> str:
        """The session's model, by the one rule (`facts.choose_model`)."""
        info = self.manager.get(session_id, include_deleted=True)
        return choose_model(info, self.agent, self.config).model

    def params_for(self, session_id: str) -> Params:
        """The chat's parameters (temperature, max tokens, ...) as stored."""
        info = self.manager.get(session_id, include_deleted=True)
        return params_of(info.metadata) if info is not None else {}

    def options_for(self, model: str) -> ModelOptions:
        return self.config.options_for(model)

    def window(self, model: str) -> Window:
        """The model's window and where the figure came from (`facts.window_of`)."""
        return window_of(self.config, model)

    def _ask_window(self, model: str, options: ModelOptions) -> None:
        """Ask an `api_base` server for the model's window once, in the background (the
        workspace may have asked already: then nothing is asked). A program using the
        engine alone gets the window, and so auto-compaction, as the app does."""
        if not options.api_base or not WINDOWS.should_ask(model, options.api_base):
            return
        task = asyncio.get_running_loop().create_task(
            asyncio.to_thread(WINDOWS.detect, model, options.api_base)
        )
        self._asking.add(task)
        task.add_done_callback(self._asking.discard)

    def _teach_template(
        self,
        model: str,
        api_base: str | None,
        tools: Mapping[str, Tool],
        chat: str,
        measured: Measured,
        history: list[Message],
    ) -> None:
        """Where a server counts pieces but reports no usage when streaming
        (llama-cpp-python), its template's share is learned once per server and tools,
        in the background: the prompt tokens of two small requests carrying the tools,
        asked without streaming (`_probe`). Once that is known, a chat whose next
        figure is still estimated (a tool call, which the template renders its own
        way) has the server count its path (`_count_chat`). The next figure takes
        them; `counted` tells the app.

        Such a server answers one request at a time: the counts wait until no turn is
        in flight there, and a turn that starts cancels them (`traffic`): the user's
        reply is never queued behind a count. One given up is asked after a later reply."""
        if not api_base or TOKENS.counts(api_base) is not True:
            return
        key = server_key(api_base, model, list(tools))
        given_up: Callable[[], None] | None = None
        work: Callable[[], Coroutine[Any, Any, None]]
        if TEMPLATES.should_probe(key):
            work = functools.partial(self._probe, model, api_base, tools, key)
            given_up = functools.partial(TEMPLATES.probe_given_up, key)
        elif not measured.usage.exact:
            work = functools.partial(
                self._count_chat, model, api_base, (chat, measured, tools, history)
            )
        else:
            return
        task = asyncio.get_running_loop().create_task(self._when_quiet(api_base, work))
        TRAFFIC.add_count(api_base, task)
        self._counting.add(task)
        task.add_done_callback(self._counting.discard)
        if given_up is not None:
            # Cancelled by a turn, even one that began before the task's first step (its
            # body never ran then): it is asked again after a later reply.
            task.add_done_callback(lambda done: given_up() if done.cancelled() else None)

    @staticmethod
    async def _when_quiet(api_base: str, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """`work()` once no turn is in flight on the server (made only then: a count a
        turn cancelled first leaves no coroutine unawaited behind)."""
        await TRAFFIC.quiet(api_base)
        await work()

    def _told(self, model: str) -> None:
        if self.counted is not None:
            try:
                self.counted(model)
            except Exception:
                log.exception("the counted listener failed")

    async def _count_chat(
        self,
        model: str,
        api_base: str,
        path: tuple[str, Measured, Mapping[str, Tool], list[Message]],
    ) -> None:
        """The server's count of the chat's path as the next request sends it (less the
        next question): one token asked without streaming, learned as the chat's anchor."""
        chat, measured, tools, history = path
        system_prompt = measured.request.system_prompt
        counted = await self._server_count(model, api_base, system_prompt, tools, history)
        if counted is None:
            return
        if await _learn_cost(api_base, model, chat, (system_prompt, tools, history), counted):
            self._told(model)

    async def _server_count(
        self,
        model: str,
        api_base: str,
        system_prompt: str,
        tools: Mapping[str, Tool],
        history: list[Message],
    ) -> int | None:
        """The server's prompt tokens for a request of `history` under `system_prompt`
        with `tools` (one token asked, not streamed); None when it did not say."""
        return await llm.prompt_tokens(
            model,
            to_openai_messages(system_prompt, history),
            [tool.to_openai() for tool in tools.values()] or None,
            api_base=api_base,
            timeout=self.config.request_timeout,
        )

    async def _probe(self, model: str, api_base: str, tools: Mapping[str, Tool], key: str) -> None:
        schemas = [tool.to_openai() for tool in tools.values()] or None
        # Two lengths give the per-message cost; the second shares the first's start,
        # which a llama.cpp server keeps evaluated: it costs a few tokens more.
        texts = ["Hi.", "Hello.", "Bye."]
        for count in (1, 3):
            history = [
                Message(
                    id=f"probe{i}",
                    role="user" if i % 2 == 0 else "assistant",
                    parts=[{"type": "text", "text": texts[i]}],
                )
                for i in range(count)
            ]
            counted = await self._server_count(model, api_base, PROBE_PROMPT, tools, history)
            if counted is None:
                return
            pieces_texts = request_texts(PROBE_PROMPT, tools, history)
            await asyncio.to_thread(TOKENS.count, api_base, pieces_texts)
            pieces = request_pieces(PROBE_PROMPT, tools, history, _counter(api_base, model))
            if not all(piece.counted for piece in pieces):
                return
            schema_digests = {piece.digest for piece in request_pieces("", tools, [])}
            optional = sum(p.tokens for p in pieces if p.digest in schema_digests)
            TEMPLATES.learn(key, PROBE_CHAT, pieces, count, counted, optional)
            if count == 1:  # the server's count of a request with the tools: are they in?
                dropped = await _tools_dropped(api_base, PROBE_PROMPT, schemas, history, counted)
                if dropped:
                    QUIRKS.hold_notice(api_base, dropped)
        self._told(model)

    async def _window_asked(self, counts: bool = True) -> None:
        """Until the servers asked for their window (and with `counts`, for the counts
        asked in the background) have answered (their timeouts bound it). A turn waits
        for the windows only: a count waits for the turns on its server."""
        asking = self._asking | self._counting if counts else self._asking
        if asking:
            await asyncio.wait(set(asking))

    async def tools_for(self, session: Session) -> dict[str, Tool]:
        """Every tool a request of `session` offers: its memory tools, the manager's
        (search), and the extra ones (peers). The request and every count of it
        (`measure`) take the list from here."""
        tools = dict(await session.tools())
        tools.update(self.manager.tools())
        if self.extra_tools is not None:
            tools.update(self.extra_tools(session.session_id))
        enabled = self.tool_filter(session.session_id) if self.tool_filter else None
        if enabled is not None:
            tools = {name: tool for name, tool in tools.items() if name in enabled}
        return tools

    async def measure(
        self,
        session: Session,
        leaf_id: str | None,
        model: str,
        *,
        history: list[Message] | None = None,
        blocks: list[ContextBlock] | None = None,
    ) -> Measured:
        """The next request of the path to `leaf_id` (latest leaf if None), measured by
        the rule every figure uses (`context_usage.measure`). `history` and `blocks`:
        what the caller holds already (read from the store otherwise)."""
        if blocks is None:
            blocks = await session.load_context(at=leaf_id)
        if history is None:
            history = session.get_history(leaf_id)
        window = self.window(model)
        tools = await self.tools_for(session)
        api_base = self.options_for(model).api_base
        count = _counter(api_base, model)
        # The server's counts of this chat's (or this server's) past requests teach what
        # the pieces leave out: the template's own tokens.
        fit = functools.partial(
            TEMPLATES.figure, server_key(api_base, model, list(tools)), session.session_id
        )
        measured = measure(blocks, tools, history, model, window.tokens, window.source, count, fit)
        counter = counting_key(api_base, model)
        if measured.usage.exact and counter:
            by = "tokenizer" if counter.startswith(LOCAL) else "server"
            measured = replace(measured, usage=replace(measured.usage, counted_by=by))
        if not counter or TOKENS.counts(counter) is False or measured.usage.exact:
            return measured
        texts = request_texts(measured.request.system_prompt, tools, history)
        return replace(measured, uncounted=tuple(TOKENS.missing(counter, texts)))

    async def count_tokens(self, model: str, measured: Measured) -> bool:
        """Have the model's server count what `measured` left uncounted (llama.cpp's
        `/tokenize`); True when a count was learned (measure again for the figure)."""
        counter = counting_key(self.options_for(model).api_base, model)
        if not counter or not measured.uncounted:
            return False
        return await asyncio.to_thread(TOKENS.count, counter, measured.uncounted)

    async def context_usage(self, session_id: str, leaf_id: str | None = None) -> ContextUsage:
        """How full the window is for the path to `leaf_id` (latest leaf if None): the
        whole next request (prompt, tools, messages), as the sidebar shows it."""
        await llm.ensure_loaded()  # LiteLLM's table is one of the window's sources
        session = self.manager.get_session(session_id)
        measured = await self.measure(session, leaf_id, self.model_for(session_id))
        return measured.usage

    # -- compaction ---------------------------------------------------------------

    async def compact(self, session_id: str, leaf_id: str | None = None) -> StoredCompaction | None:
        """Summarise the middle of the path to `leaf_id` (latest leaf if None).

        Returns None when there is nothing to compact (nothing is stored).

        Raises:
            LLMError: the summary could not be written (nothing is stored).
        """
        await llm.ensure_loaded()
        session = self.manager.get_session(session_id)
        model = self.model_for(session_id)
        writer = summary_model(self.config, model)
        window = self.window(model).tokens
        # Keep at most a quarter of the window, and at most a third of what the path's
        # messages hold now, so compacting frees a real share (min_tail_messages holds).
        history = session.get_history(leaf_id)
        tokens = estimate_message_tokens(history)
        tail = max(1, min(DEFAULT_TAIL_BUDGET, tokens // 3, *([window // 4] if window else [])))
        compact_fn = create_compact_function(
            make_summarizer(writer, self.options_for(writer), timeout=self.config.request_timeout),
            protect_head=_head_to_protect(history, tail),
            tail_token_budget=tail,
        )
        try:
            return await compact_fn(session, leaf_id)
        except llm.LLMError:
            raise
        except ValueError as exc:  # the summariser answered with nothing
            raise llm.LLMError(
                "bad_response",
                "The summary came back empty",
                str(exc),
                "Try again, or set compaction_model in the config.",
            ) from None

    # -- turns ------------------------------------------------------------------------

    async def send(
        self,
        session_id: str,
        text: str,
        *,
        parent_id: str | None | Latest = LATEST,
        model: str | None = None,
        params: Params | None = None,
        attachments: Sequence[dict[str, Any]] = (),
    ) -> AsyncGenerator[TurnEvent, None]:
        """Store the user's message under `parent_id`, then stream the reply under it.

        `model`, `params`: the chat's model and parameters when the caller has them
        already (`Workspace.facts`); read from the chat otherwise.
        `attachments`: `attachment` parts of content already stored (`Workspace.attach_*`),
        sent after the text.
        """
        if not isinstance(text, str) or not (text.strip() or attachments):
            yield TurnFailed(
                session_id,
                "There is nothing to send",
                hint="Type a message first.",
                kind="bad_input",
            )
            return
        async with aclosing(
            self._user_turn(session_id, text, parent_id, model, params, attachments)
        ) as events:
            async for event in events:
                yield event

    async def regenerate(
        self,
        session_id: str,
        message_id: str,
        *,
        model: str | None = None,
        params: Params | None = None,
    ) -> AsyncGenerator[TurnEvent, None]:
        """A new reply: a sibling of an assistant message, or under a user message.

        Args:
            model: write this one reply with another model (stored in its metadata);
                the chat's model does not change.
        """
        if model is not None and (not isinstance(model, str) or not model.strip()):
            yield TurnFailed(
                session_id, "No model named", hint="Pick a model in the list.", kind="bad_input"
            )
            return
        session = self.manager.get_session(session_id)
        message = session.get_message(message_id)
        problem = self._not_regenerable(message)
        if problem:
            yield TurnFailed(
                session_id, problem, hint="Select a user or assistant message.", kind="bad_input"
            )
            return
        assert message is not None
        parent = message.id if message.role == "user" else message.parent_id
        assert parent is not None
        model = model.strip() if model else None
        async with aclosing(self._turn(session_id, parent, model=model, params=params)) as events:
            async for event in events:
                yield event

    async def edit(
        self,
        session_id: str,
        message_id: str,
        text: str,
        *,
        model: str | None = None,
        params: Params | None = None,
    ) -> AsyncGenerator[TurnEvent, None]:
        """A new user message beside `message_id` (same parent) with `text`, then a reply."""
        session = self.manager.get_session(session_id)
        message = session.get_message(message_id)
        if message is None or message.role != "user":
            yield TurnFailed(
                session_id,
                "Only your own messages can be edited",
                hint="Select a user message and press e.",
                kind="bad_input",
            )
            return
        if not isinstance(text, str) or not text.strip():
            yield TurnFailed(
                session_id,
                "The edited message is empty",
                hint="Type the new text, or press escape to keep the old one.",
                kind="bad_input",
            )
            return
        # The edited question keeps its attachments (they are references: nothing is copied).
        async with aclosing(
            self._user_turn(session_id, text, message.parent_id, model, params, message.attachments)
        ) as events:
            async for event in events:
                yield event

    async def respond(self, session_id: str) -> AsyncGenerator[TurnEvent, None]:
        """A reply to the session's newest message (a peer turn: the message was delivered)."""
        leaf = self.manager.get_session(session_id).get_latest_leaf()
        if leaf is None:
            yield TurnFailed(session_id, "There is nothing to answer", kind="bad_input")
            return
        async with aclosing(self._turn(session_id, leaf.id)) as events:
            async for event in events:
                yield event

    async def continue_reply(
        self,
        session_id: str,
        message_id: str,
        *,
        model: str | None = None,
        params: Params | None = None,
    ) -> AsyncGenerator[TurnEvent, None]:
        """Continue a truncated, cancelled or interrupted reply from where it stopped: the
        model is shown the reply so far and asked to go on; what it writes is appended to
        the same reply, and the place it begins is marked (`metadata["continued"]`)."""
        session = self.manager.get_session(session_id)
        message = session.get_message(message_id)
        problem = self._not_continuable(message)
        if problem:
            yield TurnFailed(
                session_id, problem, hint="ctrl+r writes a new reply instead.", kind="bad_input"
            )
            return
        assert message is not None and message.parent_id is not None
        stored_model = message.metadata.get("model")
        model = model or (stored_model if isinstance(stored_model, str) else None)
        model = model or self.model_for(session_id)
        failed = await self._preflight(session_id, model)
        if failed:
            yield failed
            return
        self.manager.set_status(session_id, "active")
        try:
            if params is None:
                params = self.params_for(session_id)
            async with aclosing(self._continue(session, message, model, params)) as events:
                async for event in events:
                    yield event
        finally:
            try:
                self.manager.set_status(session_id, "idle")
            except Exception:
                log.debug("could not set %s idle", session_id, exc_info=True)

    @staticmethod
    def _not_continuable(message: Message | None) -> str | None:
        if message is None:
            return "That message does not exist (any more)"
        if message.role != "assistant" or message.is_compaction or message.parent_id is None:
            return "Only a model's reply can be continued"
        if reply_state(message) not in ("truncated", "cancelled", "interrupted"):
            return "Only a truncated or stopped reply can be continued"
        if not message.text.strip() or message.tool_calls:
            return "This reply has no text to continue"
        return None

    async def _continue(
        self, session: Session, message: Message, model: str, params: Params
    ) -> AsyncGenerator[TurnEvent, None]:
        session_id = session.session_id
        assert message.parent_id is not None
        options = self.options_for(model)
        session.set_branch(message.parent_id)
        system_prompt = await session.refresh_system_prompt()
        history = [*session.get_history(message.parent_id), message]
        messages = to_openai_messages(system_prompt, history)
        messages.append({"role": "user", "content": CONTINUE_PROMPT})
        writer = ReplyWriter(session, model, self.flush_interval)
        writer.requested()
        stream = self.streamer(
            model,
            messages,
            tools=None,  # the reply goes on in words; tools were the reply's to call before
            api_base=options.api_base,
            timeout=self.config.request_timeout,
            max_retries=self.config.max_retries,
            **({"params": params} if params else {}),
        )
        try:
            writer.resume(message)
            yield ReplyStarted(session_id, writer.stored, model, writer.live)
            try:
                async with aclosing(self._stream(session_id, writer, stream)) as events:
                    async for event in events:
                        yield event
            except llm.LLMError as error:
                status: ReplyStatus = "truncated"  # what it held, and what arrived, stays
                async for note in self._finish(session_id, writer, status):
                    yield note
                finished = writer.stored_final
                yield ReplyFinished(session_id, finished, status)
                hint = error.hint
                if error.kind == "context_length":
                    hint = self._overflow_hint(model, options)
                yield TurnFailed(session_id, error.title, error.detail, hint, error.kind)
                return
            status = "truncated" if writer.finish_reason == "length" else "complete"
            async for note in self._finish(session_id, writer, status):
                yield note
            finished = writer.stored_final
            if writer.usage is not None:
                usage = writer.usage
                self.manager.add_usage(session_id, usage["input"], usage["output"], usage["cost"])
                yield UsageRecorded(
                    session_id, finished.id, usage["input"], usage["output"], usage["cost"]
                )
            yield ReplyFinished(session_id, finished, status)
            if status == "truncated":
                yield Notice(session_id, TRUNCATED_NOTE, "warning")
        except (asyncio.CancelledError, GeneratorExit):
            writer.cancel()
            raise
        finally:
            await stream.aclose()

    @staticmethod
    def _not_regenerable(message: Message | None) -> str | None:
        if message is None:
            return "That message does not exist (any more)"
        if message.is_compaction:
            return "A summary cannot be regenerated"
        if message.role == "assistant" and message.parent_id is None:
            return "This reply has nothing to answer"
        if message.role not in ("user", "assistant"):
            return f"A {message.role} message cannot be regenerated"
        return None

    async def _preflight(self, session_id: str, model: str | None = None) -> TurnFailed | None:
        """A reason the model cannot be called at all (checked before any write)."""
        model = model or self.model_for(session_id)
        api_base = self.options_for(model).api_base
        if llm.is_demo(model) or api_base:
            # No key to check: store the user's message now rather than after LiteLLM's
            # import (seconds, on the first send after launch); the call waits for it.
            return None
        problem = await self.key_checker(model, api_base)
        if problem:
            return TurnFailed(
                session_id,
                f"No API key for {model}",
                problem,
                "Set the key in your environment and restart, or pick another "
                "model with ctrl+l (demo works offline).",
                kind="auth",
            )
        return None

    async def _user_turn(
        self,
        session_id: str,
        text: str,
        parent_id: str | None | Latest,
        model: str | None,
        params: Params | None = None,
        attachments: Sequence[dict[str, Any]] = (),
    ) -> AsyncGenerator[TurnEvent, None]:
        model = model or self.model_for(session_id)  # once per turn
        failed = await self._preflight(session_id, model) or await self._sees_images(
            session_id, model, attachments
        )
        if failed:
            yield failed
            return
        session = self.manager.get_session(session_id)
        parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text.strip() else []
        parts += [dict(part) for part in attachments]
        try:
            user = await session.append_message(
                Message(id=new_id(), role="user", parts=parts), parent_id
            )
        except STORAGE_ERRORS as exc:
            yield TurnFailed(
                session_id,
                "Your message could not be saved",
                llm.redact(str(exc)),
                f"Nothing was sent. {self.manager.store.failure_advice(exc)}",
                kind="storage",
            )
            return
        yield MessageStored(session_id, user)
        async with aclosing(
            self._turn(session_id, user.id, preflight=False, model=model, params=params)
        ) as events:
            async for event in events:
                yield event

    async def _sees_images(
        self, session_id: str, model: str, attachments: Sequence[dict[str, Any]]
    ) -> TurnFailed | None:
        """A refusal when an image goes to a model that takes no images (before any write)."""
        images = [
            str(p.get("name")) for p in attachments if str(p.get("mime")).startswith("image/")
        ]
        if not images:
            return None
        options = self.options_for(model)
        if options.vision is None and not llm.is_demo(model):
            await llm.ensure_loaded()  # LiteLLM's model table says which models see
        if llm.supports_vision(model, options):
            return None
        what = f"{', '.join(images)} {'is an image' if len(images) == 1 else 'are images'}"
        declare = f'vision = true under [models."{model}"] in the config'
        hint = (
            "Nothing was sent. Pick a model that sees images with ctrl+l, or remove the "
            "image from the tray above the input (click its ×)"
        )
        if options.vision is False:
            why = f"the config says {model} takes text only (vision = false)."
            hint += "."
        elif llm.in_model_table(model):
            why = f"LiteLLM's model table says {model} takes text only."
            hint += f"; if the model does see images, set {declare}."
        else:  # a local server's model, most often: nothing says it sees (`chatui ask`
            # prints the detail, not the hint: the way out goes there)
            why = (
                f"LiteLLM's model table does not list {model}, so nothing says it sees them "
                f"(if it does: {declare})."
            )
            hint += "."
        return TurnFailed(
            session_id,
            f"{model} cannot see images",
            f"{what}; {why}",
            hint,
            kind="bad_input",
        )

    async def _turn(
        self,
        session_id: str,
        parent_id: str,
        *,
        preflight: bool = True,
        model: str | None = None,
        params: Params | None = None,
    ) -> AsyncGenerator[TurnEvent, None]:
        """Reply under `parent_id` (tool rounds, retries, auto-compaction), status kept.

        `model`: this turn's model instead of the chat's; `params`: the chat's
        parameters (read from the chat when None).
        """
        model = model or self.model_for(session_id)  # once per turn
        if params is None:
            params = self.params_for(session_id)
        if preflight:
            failed = await self._preflight(session_id, model)
            if failed:
                yield failed
                return
        self.manager.set_status(session_id, "active")
        server = self.options_for(model).api_base
        TRAFFIC.turn_started(server)  # the server's background counts give way
        try:
            async with aclosing(self._reply_loop(session_id, parent_id, model, params)) as events:
                async for event in events:
                    yield event
        finally:
            TRAFFIC.turn_ended(server)
            try:
                self.manager.set_status(session_id, "idle")
            except Exception:  # the session may have been purged meanwhile
                log.debug("could not set %s idle", session_id, exc_info=True)

    async def _reply_loop(
        self,
        session_id: str,
        parent_id: str,
        model: str | None = None,
        params: Params | None = None,
    ) -> AsyncGenerator[TurnEvent, None]:
        session = self.manager.get_session(session_id)
        model = model or self.model_for(session_id)
        options = self.options_for(model)
        self._ask_window(model, options)
        # Memory per branch: the prompt carries what the branch being answered holds.
        session.set_branch(parent_id)
        system_prompt = await session.refresh_system_prompt()
        tools = await self.tools_for(session)
        schemas = [tool.to_openai() for tool in tools.values()] or None
        parent = parent_id
        compacted = False
        compactable = True  # False once compacting was done this turn (or found nothing)
        kept: tuple[int, int] | None = None  # what a compaction this turn left, if made
        rounds = 0
        while True:
            rounds += 1
            writer = ReplyWriter(session, model, self.flush_interval)
            history = session.get_history(parent)
            too_long = self._refused_before(model, options, parent, system_prompt, schemas, history)
            if too_long is not None and not compacted:
                # Sent as it is, it would fail as the last one did: compact first.
                compacted = True
                done = await self._compact_quietly(session_id, parent)
                compactable = isinstance(done, Notice)  # it failed: trying again may do
                if done is not None:
                    yield done
                if isinstance(done, Compacted):
                    history = session.get_history(parent)
                    kept = _sizes(system_prompt, schemas, history)
                    too_long = self._refused_before(
                        model, options, parent, system_prompt, schemas, history
                    )
            if too_long is not None:
                yield self._too_long(session_id, model, options, too_long, compactable, kept)
                return
            # The request leaves first: it carries only what is stored (the question,
            # the frozen prompt), and the reply's empty row, the events and the frames
            # that draw the question are made while it travels.
            stream: llm.ChunkStream | None = self._open(
                writer, model, options, system_prompt, history, schemas, params
            )
            try:
                started = await writer.start(parent)
                yield ReplyStarted(session_id, started, model, writer.live)
                while True:  # one model call; once more after a context-length compaction
                    if stream is None:
                        history = session.get_history(parent)  # compacted: summary in place
                        stream = self._open(
                            writer, model, options, system_prompt, history, schemas, params
                        )
                    error: llm.LLMError | None = None
                    try:
                        async with aclosing(self._stream(session_id, writer, stream)) as events:
                            async for event in events:
                                yield event
                    except llm.LLMError as exc:
                        error = exc
                    finally:
                        stream = None  # closed by `_stream`
                    if error is None:
                        break
                    if error.kind == "context_length":  # the window it names is the truth
                        WINDOWS.learn_from_error(
                            model, options.api_base, f"{error.title} {error.detail}"
                        )
                        WINDOWS.note_refusal(
                            model,
                            options.api_base,
                            parent,
                            _estimate(system_prompt, schemas, history),
                        )
                    if error.kind == "context_length" and not compacted and not writer.has_content:
                        compacted = True
                        yield Notice(
                            session_id,
                            "The conversation is too long for "
                            f"{model}; compacting it and trying again.",
                            "warning",
                        )
                        done = await self._compact_quietly(session_id, parent)
                        compactable = isinstance(done, Notice)  # failed: may do next time
                        if done is not None:
                            yield done
                        if isinstance(done, Compacted):
                            kept = _sizes(system_prompt, schemas, session.get_history(parent))
                            writer.reset()
                            continue
                    async for note in self._finish(
                        session_id, writer, "error", error=error.title, error_kind=error.kind
                    ):
                        yield note
                    yield ReplyFinished(session_id, writer.stored_final, "error")
                    hint = error.hint
                    if error.kind == "context_length":
                        hint = self._overflow_hint(model, options, compactable, kept)
                    yield TurnFailed(session_id, error.title, error.detail, hint, error.kind)
                    return
                if not writer.has_content:  # a 200 with nothing in it is a failure
                    title, detail = await self._empty_reply(session, parent, model)
                    async for note in self._finish(
                        session_id, writer, "error", error=title, error_kind="empty"
                    ):
                        yield note
                    yield ReplyFinished(session_id, writer.stored_final, "error")
                    yield TurnFailed(
                        session_id,
                        title,
                        detail,
                        "Press ctrl+r on the reply to try again.",
                        "empty",
                    )
                    return
                reported = False  # usage the server itself counted
                status: ReplyStatus = "tool_calls" if writer.calls else "complete"
                # Cut off by the output limit: kept, continuable; a tool call cut in its
                # arguments (not JSON) is not run.
                cut = [c for c in writer.calls if isinstance(c.get("input"), str)]
                if writer.finish_reason == "length" and (cut or not writer.calls):
                    status = "truncated"
                async for note in self._finish(session_id, writer, status):
                    yield note
                finished = writer.stored_final
                if writer.usage is not None:
                    self.manager.add_usage(
                        session_id,
                        writer.usage["input"],
                        writer.usage["output"],
                        writer.usage["cost"],
                    )
                    yield UsageRecorded(
                        session_id,
                        finished.id,
                        writer.usage["input"],
                        writer.usage["output"],
                        writer.usage["cost"],
                    )
                    # A local server may stream without usage: LiteLLM's count stands in.
                    reported = not options.api_base or await _servers_usage(
                        model, system_prompt, history, writer.usage["input"]
                    )
                    if reported:
                        await _learn_cost(
                            options.api_base,
                            model,
                            session_id,
                            (system_prompt, tools, history),
                            writer.usage["input"],
                            (finished, writer.usage["output"]),
                        )
                    # Judged on the server's own count only: LiteLLM's stand-in for a
                    # stream without usage leaves the tools out, as a template that
                    # drops them would. Such a server is judged by `_probe` instead.
                    dropped = (
                        await _tools_dropped(
                            options.api_base, system_prompt, schemas, history, writer.usage["input"]
                        )
                        if reported
                        else QUIRKS.take_notice(options.api_base or "")
                    )
                    if dropped:
                        yield Notice(session_id, dropped, "warning")
                yield ReplyFinished(session_id, finished, status)
                if status == "truncated":
                    said = CUT_CALL_NOTE.format(name=cut[0].get("tool_name")) if cut else ""
                    yield Notice(session_id, said or TRUNCATED_NOTE, "warning")
            except (asyncio.CancelledError, GeneratorExit):
                writer.cancel()  # keeps what streamed, marked cancelled (no-op once finished)
                raise
            finally:
                if stream is not None:  # opened, never read: the reply's row was refused
                    await stream.aclose()
            if status in ("complete", "truncated"):
                await self._window_asked(counts=False)  # asked while the reply streamed
                # The next request, measured once by the rule every figure uses: the
                # blocks as this branch holds them (no write since the prompt's refresh,
                # or `MemoryChanged` moved the session's branch here), the tools, the path.
                measure_args: dict[str, Any] = {
                    "history": [*history, finished],
                    "blocks": session.get_context_blocks(),
                }
                measured = await self.measure(session, finished.id, model, **measure_args)
                if await self.count_tokens(model, measured):  # the server counts: exact
                    measured = await self.measure(session, finished.id, model, **measure_args)
                yield ContextMeasured(session_id, finished.id, measured)
                if writer.usage is None or not reported:  # no usage of the server's own
                    self._teach_template(
                        model,
                        options.api_base,
                        tools,
                        session_id,
                        measured,
                        measure_args["history"],
                    )
                if measured.usage.over(self.config.compact_at):
                    compaction = await self._compact_quietly(session_id, finished.id)
                    if compaction is not None:
                        yield compaction
                    if isinstance(compaction, Compacted):
                        left = await self._still_over(session, session_id, finished.id, model)
                        if left is not None:
                            yield left
                return
            session.set_branch(finished.id)  # the tool calls' writes belong to this reply
            run = await run_tools(session, tools, writer.calls, finished.id)
            yield MessageStored(session_id, run.message)
            if run.changed_labels:
                yield MemoryChanged(session_id, tuple(run.changed_labels))
            parent = run.message.id
            if rounds >= self.config.max_tool_rounds:
                yield Notice(
                    session_id,
                    f"Stopped after {rounds} model calls in one turn "
                    f"(max_tool_rounds = {self.config.max_tool_rounds}). Send a "
                    "message to let the model continue.",
                    "warning",
                )
                return

    @staticmethod
    def _refused_before(
        model: str,
        options: ModelOptions,
        parent: str,
        system_prompt: str,
        schemas: list[dict[str, Any]] | None,
        history: list[Message],
    ) -> int | None:
        """The request's estimate when the server already refused it, as long, as too
        long (None: send it): `r` on a reply that overflowed does not fail again."""
        refused = WINDOWS.refused_at(model, options.api_base, parent)
        if refused is None:
            return None
        estimate = _estimate(system_prompt, schemas, history)
        return estimate if estimate >= refused else None

    def _too_long(
        self,
        session_id: str,
        model: str,
        options: ModelOptions,
        estimate: int,
        compactable: bool = True,
        kept: tuple[int, int] | None = None,
    ) -> TurnFailed:
        window = self.window(model)
        detail = f"This request is about {estimate:,} tokens"
        if window.tokens:
            detail += f"; {model} takes {window.tokens:,} ({window.source})"
        return TurnFailed(
            session_id,
            f"The conversation is too long for {model}",
            detail + ". The server refused one as long already, so it was not sent again.",
            self._overflow_hint(model, options, compactable, kept),
            "context_length",
        )

    @staticmethod
    def _overflow_hint(
        model: str,
        options: ModelOptions,
        compactable: bool = True,
        kept: tuple[int, int] | None = None,
    ) -> str:
        """Exactly what to do when a request is longer than the model's window
        (`compactable` False: this turn compacted already, so *Compact now* would do
        nothing more; `kept`: what that compaction left, the system prompt and tools'
        tokens and the messages', or None when it found nothing to summarise)."""
        if compactable:
            hint = "Compact the chat (ctrl+p, Compact now), or start a new chat (ctrl+n)"
        elif kept is not None:
            fixed, messages = kept
            hint = (
                "Compacting was not enough: the system prompt and tools are about "
                f"{fixed:,} tokens, and the messages it keeps whole (the latest ones) about "
                f"{messages:,}. Start a new chat (ctrl+n), or edit your question (e) to "
                "need less"
            )
        else:
            hint = (
                "Nothing before this turn can be compacted: start a new chat (ctrl+n), or "
                "edit your question (e) to need less"
            )
        if options.api_base:
            return (
                f"{hint}. If the server at {options.api_base} runs with a larger window, "
                f'set context_window under [models."{model}"] in the config.'
            )
        return f"{hint}, or pick a model with a larger window with ctrl+l."

    async def _empty_reply(self, session: Session, parent: str, model: str) -> tuple[str, str]:
        """Why a stream ended with nothing: the request's size against the known window."""
        window = self.window(model)
        usage = (await self.measure(session, parent, model)).usage
        detail = (
            "The model's answer had no text, no reasoning and no tool call, for a request "
            f"of about {usage.tokens:,} tokens"
        )
        if window.tokens:
            detail += f" against a context window of {window.tokens:,} ({window.source})"
            if usage.tokens > window.tokens:
                detail += (
                    ". The conversation is longer than the window: compact it (ctrl+p, "
                    "Compact now) or start a new chat"
                )
        else:
            detail += " (the model's context window is unknown)"
        return "The model sent an empty reply", detail + "."

    def _open(
        self,
        writer: ReplyWriter,
        model: str,
        options: ModelOptions,
        system_prompt: str,
        history: list[Message],
        schemas: list[dict[str, Any]] | None,
        params: Params | None = None,
    ) -> llm.ChunkStream:
        """Start one model call for `history` (the model process sends the request at
        once; an in-process call when first read)."""
        messages = to_openai_messages(system_prompt, history, self._attachment_content)
        writer.requested()
        return self.streamer(
            model,
            messages,
            tools=schemas,
            api_base=options.api_base,
            timeout=self.config.request_timeout,
            max_retries=self.config.max_retries,
            **({"params": params} if params else {}),
        )

    def _attachment_content(self, part: dict[str, Any]) -> bytes:
        """An attachment's bytes, read when a request carries it (never held here)."""
        from store import Attachments

        return Attachments(self.manager.store).content(part)

    async def _stream(
        self, session_id: str, writer: ReplyWriter, stream: llm.ChunkStream
    ) -> AsyncGenerator[TurnEvent, None]:
        """One model call streamed into `writer`; raises LLMError, yields deltas/notices."""
        try:
            async for chunk in stream:
                if isinstance(chunk, llm.TextChunk):
                    writer.add_text(chunk.text)
                    yield ReplyDelta(session_id, writer.id, chunk.text)
                elif isinstance(chunk, llm.ReasoningChunk):
                    writer.add_reasoning(chunk.text)
                    yield ReplyDelta(session_id, writer.id, chunk.text, "reasoning")
                elif isinstance(chunk, llm.ToolCallChunk):
                    writer.add_call(chunk.id, chunk.name, chunk.arguments_json)
                elif isinstance(chunk, llm.FinishChunk):
                    writer.finish_reason = chunk.reason
                elif isinstance(chunk, llm.UsageChunk):
                    writer.usage = {
                        "input": chunk.input_tokens,
                        "output": chunk.output_tokens,
                        "cost": chunk.cost,
                    }
                elif isinstance(chunk, llm.RetryChunk):
                    yield Notice(
                        session_id,
                        f"{chunk.error.title}; trying again in "
                        f"{chunk.delay:.1f}s (retry {chunk.attempt} of "
                        f"{chunk.max_retries}).",
                        "warning",
                    )
                writer.maybe_flush()
                note = writer.outage_note()
                if note is not None:
                    yield Notice(session_id, *note)
        finally:
            await stream.aclose()

    async def _finish(
        self,
        session_id: str,
        writer: ReplyWriter,
        status: ReplyStatus,
        *,
        error: str | None = None,
        error_kind: str | None = None,
    ) -> AsyncGenerator[TurnEvent, None]:
        """Store the reply in its final form (`writer.stored_final`), waiting out an
        unreachable database: the reply stays in memory and on screen, the wait is
        said once, and the write is made when the server answers again (a cancel
        meanwhile keeps what the last flush stored; see `ReplyWriter.cancel`)."""
        while True:
            try:
                writer.finish(status, error=error, error_kind=error_kind)
            except STORAGE_ERRORS as exc:
                if not writer.kept(exc):
                    raise
            note = writer.outage_note()
            if note is not None:
                yield Notice(session_id, *note)
            if writer.finished:
                return
            assert writer.outage is not None
            await writer.outage.wait()

    async def _still_over(
        self, session: Session, session_id: str, leaf_id: str, model: str
    ) -> Notice | None:
        """Why a compaction left the next request over `compact_at` (it compacts again
        on the next turn, and would free as little), or None when it freed enough."""
        usage = (await self.measure(session, leaf_id, model)).usage
        if not usage.over(self.config.compact_at) or not usage.window:
            return None
        return Notice(
            session_id,
            f"Compacting left the next request at about {usage.tokens:,} of "
            f"{usage.window:,} tokens (compact_at = {self.config.compact_at}): the system "
            f"prompt and tools are about {usage.prompt + usage.tools:,}, and the latest "
            f"messages, kept whole, about {usage.messages:,}. A new chat (ctrl+n) starts "
            "with none of them.",
            "warning",
        )

    async def _compact_quietly(self, session_id: str, leaf_id: str) -> Compacted | Notice | None:
        """Compact the path to `leaf_id`; a failure is a Notice, nothing is lost."""
        try:
            compaction = await self.compact(session_id, leaf_id)
        except llm.LLMError as error:
            return Notice(session_id, f"Compaction failed: {error.title}. {error.hint}", "warning")
        except Exception as exc:
            log.warning("compaction of %s failed", session_id, exc_info=True)
            return Notice(session_id, f"Compaction failed: {llm.redact(str(exc))}", "warning")
        return Compacted(session_id, compaction) if compaction is not None else None


def _estimate(
    system_prompt: str, schemas: list[dict[str, Any]] | None, history: list[Message]
) -> int:
    """The request's size by the estimate (its prompt, tools and messages)."""
    tools = estimate_string_tokens(json.dumps(schemas)) if schemas else 0
    return estimate_string_tokens(system_prompt) + tools + estimate_message_tokens(history)


PROTECT_HEAD = 3
"""The first messages a compaction keeps whole (`store.create_compact_function`'s
default), fewer when they hold more than the tail may (`_head_to_protect`)."""


def _head_to_protect(history: list[Message], budget: int) -> int:
    """How many first messages a compaction keeps: `PROTECT_HEAD`, fewer when they hold
    more than `budget` tokens (the tail's). A long first question in a small window
    was kept whole, and compacting freed too little to fit (1.5k tokens, a 400-token
    question): it is summarised with the rest instead."""
    head = min(PROTECT_HEAD, len(history))
    while head and estimate_message_tokens(history[:head]) > budget:
        head -= 1
    return head


def _sizes(
    system_prompt: str, schemas: list[dict[str, Any]] | None, history: list[Message]
) -> tuple[int, int]:
    """The request's estimate in two: its system prompt and tools, its messages."""
    tools = estimate_string_tokens(json.dumps(schemas)) if schemas else 0
    return estimate_string_tokens(system_prompt) + tools, estimate_message_tokens(history)


async def _servers_usage(
    model: str, system_prompt: str, history: list[Message], prompt_tokens: int
) -> bool:
    """Whether a reply's prompt count is the server's: LiteLLM fills a stream's missing
    usage with its own count of the messages (llama-cpp-python sends none), which must
    not teach anything."""
    messages = to_openai_messages(system_prompt, history)
    own = await asyncio.to_thread(llm.litellm_count, llm.litellm_model(model), messages)
    return own != prompt_tokens


PROBE_PROMPT = "You are a helpful assistant."
PROBE_CHAT = "\x00probe"
"""The anchor key of the probes' requests (no chat of the store has it)."""


def _counter(api_base: str | None, model: str) -> Counter:
    """A text's tokens as the model's server counts them, where known: its tokenizer's
    count (`TOKENS`), or a reply's `completion_tokens` as the server reported them."""
    replies = server_key(api_base, model, ())
    counter = counting_key(api_base, model)

    def count(text: str) -> int | None:
        known = TOKENS.known(counter, text)
        return known if known is not None else TEMPLATES.reply(replies, text)

    return count


async def _learn_cost(
    api_base: str | None,
    model: str,
    chat: str,
    request: tuple[str, Mapping[str, Tool], list[Message]],
    prompt_tokens: int,
    reply: tuple[Message, int] | None = None,
) -> bool:
    """Set the server's count of the request just answered against its pieces, and a
    plain reply's text against its `completion_tokens` (`TEMPLATES`): the next figures
    take the template's cost from them. False when the count taught nothing."""
    system_prompt, tools, history = request
    counter = counting_key(api_base, model)
    if counter and TOKENS.counts(counter) is not False:
        texts = request_texts(system_prompt, tools, history)
        await asyncio.to_thread(TOKENS.count, counter, texts)  # the new question, mostly
    pieces = request_pieces(system_prompt, tools, history, _counter(api_base, model))
    schemas = {piece.digest for piece in request_pieces("", tools, [])}
    optional = sum(piece.tokens for piece in pieces if piece.digest in schemas)
    key = server_key(api_base, model, list(tools))
    if not TEMPLATES.learn(key, chat, pieces, len(history), prompt_tokens, optional):
        return False  # not this request's count (a stand-in figure): nothing learned from it
    if reply is None:
        return True
    message, completion_tokens = reply
    # Only a reply sent back as it was written: reasoning is not sent, tool calls are
    # rendered otherwise, and a continued reply's tokens are only the continuation's.
    if [p.get("type") for p in message.parts] == ["text"] and not message.metadata.get("continued"):
        TEMPLATES.learn_reply(server_key(api_base, model, ()), message.text, completion_tokens)
    return True


async def _tools_dropped(
    api_base: str | None,
    system_prompt: str,
    schemas: list[dict[str, Any]] | None,
    history: list[Message],
    prompt_tokens: int,
) -> str | None:
    """What to do, once per server, when the prompt tokens it counted are those of the
    request without its tools (its chat template has no place for them). Judged only
    where the server counts every piece itself (`TOKENS`): estimates are too rough."""
    if not api_base or not schemas or prompt_tokens <= 0 or TOKENS.counts(api_base) is not True:
        return None
    if not QUIRKS.streams_tools(api_base) or QUIRKS.told_dropped_tools(api_base):
        return None  # a server that refused to stream tools renders them; told already
    texts = [json.dumps(schema, ensure_ascii=False) for schema in schemas]
    pieces = [system_prompt, *texts, *(part_text(p) for m in history for p in m.parts)]
    await asyncio.to_thread(TOKENS.count, api_base, pieces)  # the new question, mostly
    tools = [TOKENS.known(api_base, text) for text in texts]
    rest = [TOKENS.known(api_base, system_prompt)]
    rest.extend(TOKENS.known(api_base, part_text(p)) for m in history for p in m.parts)
    if None in tools or None in rest:
        return None  # not all counted yet: judged on a later turn
    tool_tokens = sum(t or 0 for t in tools)
    without = sum(t or 0 for t in rest) + PER_MESSAGE_OVERHEAD * (len(history) + 1)
    if tool_tokens < 50 or abs(prompt_tokens - without) >= abs(
        prompt_tokens - without - tool_tokens
    ):
        return None
    if not QUIRKS.tell_dropped_tools(api_base):
        return None
    return (
        f"The server at {api_base} left the tools out of the prompt ({prompt_tokens:,} prompt "
        f"tokens; the tools alone are {tool_tokens:,}): its chat template has no place for "
        "them, so the model cannot save memory or search. For llama-cpp-python start it with "
        "--chat_format chatml-function-calling; for llama-server add --jinja."
    )
