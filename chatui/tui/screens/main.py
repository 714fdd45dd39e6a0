"""The main screen: message tree | chat and input | context sidebar.

This module routes: widget messages become calls on `ChatState` (branches)
and the `Workspace` (turns run as reply jobs of their chat), and the jobs'
events become widget updates. The rules about what is stored and how a turn
runs live there, not here.

Design notes:
- The screen owns no reply. A send starts a job in the workspace; the
  screen draws the events of the chat it shows and ignores the others, so
  opening another chat never stops a reply and returning to it shows the
  stream where it is (`Workspace.jobs.live_messages`).
- Every change to what the panes show (a redraw, a job's event, opening a
  chat) runs under one lock: two redraws never interleave (the
  `DuplicateIds 'earlier'` crash of two `ChatView.show` at once).
- A redraw reads the session row once (the snapshot's `info` serves the
  title, the model and the sidebar's figures).
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import ExitStack

from rich.text import Text
from textual import getters, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message as TextualMessage
from textual.timer import Timer
from textual.widgets import Static

from store import (
    Message,
    SessionInfo,
    UnknownMessageError,
    estimate_string_tokens,
    render_system_prompt,
)
from widgets import (
    ChatInput,
    ChatView,
    ContextSidebar,
    ConversationStats,
    FittingFooter,
    MessageTree,
    MessageView,
    clean,
    code_blocks,
    one_line,
)

from ...core.agents import PeerMarks
from ...core.branch_notes import notes_by_shown, stored_notes
from ...core.chat_state import ChatSnapshot, ChatState
from ...core.events import (
    Compacted,
    MemoryChanged,
    MessageStored,
    Notice,
    ReplyDelta,
    ReplyFinished,
    ReplyStarted,
    TurnEvent,
    TurnFailed,
    UsageRecorded,
)
from ...core.jobs import JobEnded, JobsFull, TurnKind
from ...core.ui_state import UiState
from ...core.workspace import ChatsChanged, ModelFactsChanged, Workspace, WorkspaceEvent
from .commands import ChatCommands
from .main_memory import MemoryMixin
from .main_notes import BranchNotesMixin
from .main_panes import PanesMixin

__all__ = ["MainScreen", "NEW_CHAT_NAME"]

log = logging.getLogger(__name__)

NEW_CHAT_NAME = "New chat"
STORAGE_TITLE = "Could not save to the database"
BUSY_AFTER = 0.1
"""Seconds after enter, or after a reply starts, before the title, the input's busy
border and the tree follow: a fast reply's first words are drawn by then."""
QUESTION_HOLD = 0.04
"""Seconds a sent question waits for its reply's first words before it is drawn alone:
a reply sent at once arrives ~10 ms after enter (up to ~30 under load), and drawing the
question first cost a frame (6-15 ms) the words then waited behind, plus the update
grid's next slot. A model that thinks pays this once, before its question shows."""
BATCH_AT_MOST = 0.5
"""Seconds frames may stay suspended for a held question's first words, at most."""
WELCOME = (
    "Type below and press enter to send (ctrl+j for a new line).\n"
    "r regenerates and e edits a focused message — both make branches, nothing is lost. "
    "ctrl+s lists chats, ctrl+f searches all of them, ctrl+l picks the model, F1 shows "
    "every key."
)


class MainScreen(PanesMixin, MemoryMixin, BranchNotesMixin, ChatCommands):
    """Tree, chat and sidebar for the open chat."""

    CSS_PATH = "main.tcss"
    AUTO_FOCUS = "#input"
    BINDINGS = [
        # Not in the footer (the title says "escape cancels" while a reply is written):
        # the footer's keys fit 80 columns.
        Binding("escape", "escape", "Cancel reply", id="main.cancel", show=False),
        Binding("f2", "show_prompt", "Prompt", id="main.prompt", show=False),
        Binding("ctrl+n", "new_chat", "New chat", id="app.new_chat"),
        Binding("ctrl+s", "chats", "Chats", id="app.chats"),
        Binding("ctrl+f", "search", "Search", id="app.search"),
        Binding("ctrl+l", "choose_model", "Model", id="app.model"),
        Binding("ctrl+b", "toggle_sidebar", "Sidebar", id="app.sidebar"),
        Binding("ctrl+t", "focus_tree", "Tree", id="app.tree"),
        Binding("f1", "help", "Help", id="app.help", show=False),
    ]

    class ChatOpened(TextualMessage):
        """The screen shows another chat (None: a new one); the app remembers it."""

        def __init__(self, session_id: str | None) -> None:
            super().__init__()
            self.session_id = session_id

    class PanesChanged(TextualMessage):
        """The tree or the sidebar was shown or hidden; the app remembers it."""

        def __init__(self, tree: bool, sidebar: bool) -> None:
            super().__init__()
            self.tree = tree
            self.sidebar = sidebar

    class ModelChosen(TextualMessage):
        """The user picked a model; the app keeps it among the recent ones."""

        def __init__(self, model: str) -> None:
            super().__init__()
            self.model = model

    class UiStateChanged(TextualMessage):
        """Something in `ui_state` changed (a width, a fold); the app saves it."""

    class FirstChatShown(TextualMessage):
        """The first chat is drawn: the app may start background work (LiteLLM's warm-up)."""

    class WorkspaceChanged(TextualMessage):
        """A reply job or a model fact changed (posted from the workspace's listener)."""

        def __init__(self, event: WorkspaceEvent, *, first_words: bool = False) -> None:
            super().__init__()
            self.event = event
            self.first_words = first_words
            """A reply's first text: the events behind it wait for its frame."""

    tree = getters.query_one("#tree", MessageTree)  # type: ignore[assignment]  # shadows DOMNode.tree (Rich's debug tree), never used here
    chat_view = getters.query_one("#chat", ChatView)
    sidebar = getters.query_one("#sidebar", ContextSidebar)
    chat_input = getters.query_one("#input", ChatInput)

    def __init__(
        self,
        workspace: Workspace,
        *,
        ui_state: UiState | None = None,
        first_chat: str | None = None,
    ) -> None:
        super().__init__()
        self.workspace = workspace
        self.ui_state = ui_state or UiState()
        """Pane widths and visibility, folds, recent models: read here, saved by the app
        when the screen says it changed (`PanesChanged`, `UiStateChanged`)."""
        self.first_chat = first_chat
        self.recent_models = list(self.ui_state.recent_models)
        self.chat: ChatState | None = None
        """The open chat; None for a new chat not stored yet (created on first send)."""
        self.draft_model: str | None = None
        self.draft_agent: str | None = None
        """The agent a new chat will run (chosen in the agent picker)."""
        self.snapshot: ChatSnapshot | None = None
        self.marks = PeerMarks()
        """Messages of the open chat that crossed to other chats (for `g`)."""
        self._streams: dict[str, MessageView] = {}
        """Views of replies being written in the chat on screen."""
        self._drawn: dict[str, int] = {}
        """Characters of each streaming reply's text already drawn."""
        self._first_words: set[str] = set()
        """Replies of the chat on screen whose first text has been posted."""
        self._held: list[WorkspaceEvent] | None = None
        """Events heard after a reply's first words, until the frame showing them is
        drawn (None: nothing held). See `_heard`."""
        self._question: list[WorkspaceEvent] | None = None
        """A sent question's events, held until its reply's first words or the end of
        `QUESTION_HOLD` (None: no question held). See `_hold_question`."""
        self._question_timer: Timer | None = None
        self._asked_at: float | None = None
        """When the held question was heard (`time.monotonic`)."""
        self._batched = ExitStack()
        """Frames suspended from a held question's release to its first words' update."""
        self._draw_lock = asyncio.Lock()
        self._copy_cycle: tuple[str, int, float] | None = None
        self._title_timer: Timer | None = None
        self._title = ""
        self._delta_waiting: set[str] = set()
        """Replies with a text delta message posted and not yet handled."""
        self._unsubscribe = workspace.subscribe(self._heard)

    def compose(self) -> ComposeResult:
        with Horizontal(id="panes"):
            yield MessageTree(id="tree")
            with Vertical(id="center"):
                yield Static("", id="chat-title")
                yield ChatView(id="chat")
                yield ChatInput(
                    id="input", placeholder="Message · enter sends · ctrl+j new line · F1 keys"
                )
            yield ContextSidebar(id="sidebar")
        yield FittingFooter()  # drops whole keys (f1 lists all) so it fits 80 columns

    async def on_mount(self) -> None:
        self.arrange_panes()
        info = self._last_chat()
        if info is None:
            # Nothing stored (a first start, an empty database): the new chat's screen
            # costs no read, so it is composed into the first frame instead of an empty
            # screen laid out and drawn ~40 ms before the same screen filled in.
            await self.open_first_chat(None)
            return
        # Fill the screen once it is mounted, not once it has settled: waiting for it to
        # go idle cost several frames (the footer, the input) before the chat was read.
        # Textual paints on its own timer; measured, the first frame still came first
        # (a long chat takes a few hundred ms to read and draw: the first frame does not
        # wait for it).
        self.call_later(self.open_first_chat, info)

    def _heard(self, event: WorkspaceEvent) -> None:
        """The workspace's listener: its events become this screen's messages.

        Text deltas of one reply are coalesced: one waiting message draws everything
        streamed so far (`_catch_up`), so a fast stream does not queue hundreds of
        messages ahead of the frames that show it.

        A reply's first words get a frame of their own: what is heard after them (the
        rest of a reply that came at once, its end, the tree and sidebar it redraws)
        is held until that frame is drawn. Textual draws when the screen's queue is
        empty; queued behind them, the first words waited for the whole reply.
        """
        if not self._hold_question(event):
            self._hear(event)

    def _hear(self, event: WorkspaceEvent) -> None:
        if self._held is not None:
            self._held.append(event)
            return
        first = False
        if isinstance(event, ReplyDelta) and event.kind == "text":
            if event.message_id in self._delta_waiting:
                return
            self._delta_waiting.add(event.message_id)
            if event.session_id == self.session_id and event.message_id not in self._first_words:
                self._first_words.add(event.message_id)
                first = True
                self._held = []
        self.post_message(self.WorkspaceChanged(event, first_words=first))

    def _hold_question(self, event: WorkspaceEvent) -> bool:
        """Hold a sent question until its reply's first words: both in one frame.

        The question is stored and its request sent before this is heard, so a kill
        during the hold loses nothing. Only the input clears at once (a frame that
        redraws the input alone). True: the event is held.
        """
        if self._question is None:
            if not (
                isinstance(event, MessageStored)
                and event.message.role == "user"
                and event.session_id == self.session_id
                and self._held is None
            ):
                return False
            self._question = [event]
            self._asked_at = time.monotonic()
            self.chat_input.clear()
            self._question_timer = self.set_timer(QUESTION_HOLD, self._release_question)
            return True
        self._question.append(event)
        words = isinstance(event, ReplyDelta) and event.kind == "text"
        if words or isinstance(event, JobEnded):
            self._release_question()
        return True

    def _release_question(self) -> None:
        """Hear the held question's events, in order (its first words last, if come)."""
        held, self._question = self._question, None
        if self._question_timer is not None:
            self._question_timer.stop()
            self._question_timer = None
        last = held[-1] if held else None
        if isinstance(last, ReplyDelta) and last.session_id == self.session_id:
            # No frame until the first words are in their view: a frame the update
            # grid had due (the input's, cleared at enter) fell while the question was
            # being mounted and drew it, and the reply's empty view, alone.
            self._batched.enter_context(self.app.batch_update())
            # Frames suspended must come back whatever happens to those words (a
            # redraw that fails, a chat switched away): the screen would freeze.
            self.set_timer(BATCH_AT_MOST, self._batched.close)
        for event in held or []:
            self._hear(event)
        if self._held is None:  # the words were not marked first: nothing to wait for
            self._batched.close()

    def _release_held(self) -> None:
        """The first words' frame is drawn: hear what waited behind it, in order."""
        held, self._held = self._held or [], None
        for event in held:
            self._heard(event)

    def on_unmount(self) -> None:
        self._unsubscribe()
        self._batched.close()

    def _last_chat(self) -> SessionInfo | None:
        """The chat open last time, else the newest (None: nothing is stored)."""
        manager = self.workspace.manager
        info = manager.get(self.first_chat) if self.first_chat else None
        if info is None:
            recent = manager.list(limit=1)
            info = recent[0] if recent else None
        return info

    async def open_first_chat(self, info: SessionInfo | None) -> None:
        """Open `info` (the chat of `_last_chat`; None: a new chat), with --model applied."""
        manager = self.workspace.manager
        launch = self.workspace.launch_model
        if info is not None and launch and info.model != launch:
            manager.set_model(info.id, launch)
        await self.open_chat(info.id if info else None, model=launch)
        self.post_message(self.FirstChatShown())

    # -- opening and drawing -------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self.chat.session_id if self.chat else None

    @property
    def generating(self) -> bool:
        """The chat on screen is writing a reply."""
        return self.workspace.jobs.running(self.session_id)

    @property
    def model(self) -> str:
        if self.chat is not None:
            info = self.snapshot.info if self.snapshot else self.chat.info
            return self._model_of(info)
        return self.workspace.model_of(None, self.draft_model)

    def _model_of(self, info: SessionInfo) -> str:
        engine = self.workspace.runtime.engine_for_agent(info.agent_id)
        return info.model or engine.config.model

    @property
    def default_model(self) -> str:
        """The model of a new chat: the one open, else --model, else the config's."""
        return self.model if self.chat is not None else self.workspace.model_of(None)

    async def open_chat(
        self,
        session_id: str | None,
        *,
        reveal: str | None = None,
        model: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        """Show a chat (None: a new, empty one running `agent_id`), on its remembered branch.

        A reply being written in the chat left keeps going (its job belongs to the chat).
        """
        async with self._draw_lock:
            if session_id is None:
                default = self.default_model
                self.chat = None
                self.draft_agent = agent_id
                agent = self.workspace.runtime.agent(agent_id)
                self.draft_model = model or (agent.model if agent else None) or default
            else:
                runtime = self.workspace.runtime
                self.chat = ChatState(runtime.manager_for(session_id), session_id)
                if reveal is not None:
                    self.chat.select(reveal)
            self.post_message(self.ChatOpened(session_id))
            await self._redraw()
            if reveal is not None:
                await self.chat_view.reveal(reveal)
            else:
                self.chat_input.focus()

    async def redraw(self) -> None:
        """Re-read the chat and redraw all three panes (a focused message keeps focus)."""
        async with self._draw_lock:
            await self._redraw()

    async def _redraw(self) -> None:
        focused = self.focused
        focus_id = focused.message_id if isinstance(focused, MessageView) else None
        live = self.workspace.jobs.live_messages(self.session_id)
        if self.chat is None:
            self.snapshot = None
            self.show_tree()
            await self.chat_view.show([], empty_text=WELCOME)
        else:
            self.snapshot = snap = self.chat.snapshot()
            self.marks = self.workspace.runtime.peer_marks(snap.info.id)
            self.show_tree()
            self.chat_view.hops = self.marks.labels
            self.chat_view.senders = self.workspace.runtime.names()
            self.chat_view.notes = notes_by_shown(
                snap.history, snap.positions, stored_notes(snap.info.metadata)
            )
            await self.chat_view.show(
                snap.history,
                positions=snap.positions,
                covered=snap.covered,
                empty_text=WELCOME,
                live=live,
            )
            job = self.workspace.jobs.job(self.session_id)
            for text, level in job.notes if job else ():  # notices of the running turn
                await self.chat_view.notice(text, level)
        self._streams = {
            mid: view for mid in live if (view := self.chat_view.view_for(mid)) is not None
        }
        self._drawn = {mid: len(text) for mid, text in live.items()}
        if focus_id is not None:
            view = self.chat_view.view_for(focus_id)
            if view is not None:
                view.focus(scroll_visible=False)
            else:
                self.chat_input.focus()
        self._sync_busy()
        await self.refresh_sidebar()
        self._key_notice()

    def update_title(self) -> None:
        """Chat name · agent · model, and what it is doing (replying, waiting for a peer)."""
        runtime = self.workspace.runtime
        if self.chat is None:
            name, agent = NEW_CHAT_NAME, runtime.agent(self.draft_agent)
            waiting = ""
        else:
            info = self.snapshot.info if self.snapshot else self.chat.info
            name, agent = info.name, runtime.agent(info.agent_id)
            waiting = runtime.status_line(info.id) if self.generating else ""
        parts = [one_line(name, 60)]
        if agent is not None:
            parts.append(f"agent {agent.name}")
        parts.append(self.model)
        if waiting:
            parts.append(waiting)
        if self.generating:
            parts.append("replying… (escape cancels)")
        others = len(self.workspace.jobs.live_chats - {self.session_id})
        if others:
            parts.append(f"{others} other chat{'s' if others > 1 else ''} replying")
        title = clean(" · ".join(parts))
        if title != self._title:  # an update lays the screen out again: only on change
            self._title = title
            self.query_one("#chat-title", Static).update(Text(title))

    def model_chosen(self, model: str) -> None:
        """Tell the app (it keeps the recent models)."""
        self.post_message(self.ModelChosen(model))

    def refresh_info(self) -> None:
        """Re-read the chat's row (after a rename or a model change) and retitle."""
        if self.chat is not None and self.snapshot is not None:
            self.snapshot.info = self.chat.info
        self.update_title()

    def _sync_busy(self) -> None:
        """Input, title and the title's timer follow whether the chat on screen replies."""
        busy = self.generating
        self.chat_input.set_class(busy, "-busy")
        if busy and self._title_timer is None:
            # The title says when the chat waits on a peer agent (set by another task).
            self._title_timer = self.set_interval(1.0, self.update_title)
        elif not busy and self._title_timer is not None:
            self._title_timer.stop()
            self._title_timer = None
        self.update_title()

    def redraw_tree(self) -> None:
        if self.chat is None:
            return
        snap = self.chat.snapshot()
        self.snapshot = snap
        self.marks = self.workspace.runtime.peer_marks(snap.info.id)
        self.show_tree()

    async def refresh_sidebar(self, *, blocks: bool = True) -> None:
        if not self.sidebar.display:
            return
        workspace = self.workspace
        if blocks or not self.sidebar.blocks:
            # Memory per branch: the blocks as the branch on screen holds them.
            await self.sidebar.show_blocks(
                await self.chat.session.load_context(at=self.chat.active_leaf)
                if self.chat
                else await workspace.template_blocks(self.draft_agent)
            )
        model = self.model
        if self.chat is None:
            usage = await workspace.usage(
                None, [], model, template_tokens=sum(b.tokens for b in self.sidebar.blocks)
            )
            self.sidebar.show_stats(
                ConversationStats(
                    tokens=usage.tokens,
                    window=usage.window,
                    window_source=usage.source,
                    model=model,
                    compact_at=workspace.config.compact_at,
                )
            )
            return
        snap = self.snapshot
        info = snap.info if snap else self.chat.info
        # The prompt the next turn sends: the blocks of this branch, rendered.
        prompt = estimate_string_tokens(render_system_prompt(self.sidebar.blocks))
        usage = await workspace.usage(
            self.chat.session, snap.history if snap else [], model, prompt_tokens=prompt
        )
        self.sidebar.show_stats(
            ConversationStats(
                tokens=usage.tokens,
                window=usage.window,
                window_source=usage.source,
                model=model,
                input_tokens=info.input_tokens,
                output_tokens=info.output_tokens,
                cost=info.cost,
                compactions=snap.compactions if snap else 0,
                compact_at=workspace.config.compact_at,
            )
        )

    def _key_notice(self) -> None:
        """Say how to set a key up when the chat's model has none (once per model)."""
        model = self.model
        problem = self.workspace.key_problem_once(model)
        if problem:
            self.call_after_refresh(
                self.chat_view.notice,
                f"{problem}\nPast chats are all here and searchable. To chat now without a "
                "key, press ctrl+l and pick `demo` (offline).",
                "warning",
                title=f"{model} needs an API key",
            )

    async def model_facts_ready(self) -> None:
        """LiteLLM is loaded: the window and the key check can be read now."""
        async with self._draw_lock:
            await self.refresh_sidebar(blocks=False)
            self._key_notice()

    # -- sending and turns ---------------------------------------------------------

    @on(ChatInput.Submitted, "#input")
    def send_from_input(self, event: ChatInput.Submitted) -> None:
        event.stop()
        if self.generating:
            self.notify("Still replying — press escape to cancel first.", severity="warning")
            return
        self.start_turn("send", text=event.text)

    def regenerate_with(self, message_id: str) -> None:
        """Pick a model, then regenerate the message with it (that reply only)."""
        from .model_picker import ModelPicker

        def chosen(model: str | None) -> None:
            if model:
                self.recent_models = [model, *(m for m in self.recent_models if m != model)]
                self.model_chosen(model)
                self.start_turn("regenerate", message_id=message_id, model=model)

        choices = self.workspace.model_choices(self.model, self.recent_models)
        self.app.push_screen(
            ModelPicker(
                self.model,
                choices,
                title=f"Regenerate this reply with (the chat keeps {self.model})",
            ),
            chosen,
        )

    def start_turn(
        self,
        kind: TurnKind,
        *,
        message_id: str | None = None,
        text: str = "",
        model: str | None = None,
    ) -> None:
        """Start a reply job in the chat on screen (a new chat is stored first)."""
        jobs = self.workspace.jobs
        if len(jobs.live_chats) >= jobs.limit:
            self.notify(
                f"{jobs.limit} chats are writing replies already (max_live_replies = "
                f"{jobs.limit}). Wait for one, or open it and press escape.",
                severity="warning",
            )
            return
        try:
            chat = self.ensure_chat(text) if kind == "send" else self.chat
            assert chat is not None
            self.workspace.start_reply(
                chat.session_id,
                kind,
                text=text,
                message_id=message_id,
                parent_id=chat.active_leaf if kind == "send" else None,
                model=model,
            )
        except JobsFull as exc:
            self.notify(str(exc), severity="warning")
            return
        except Exception as exc:  # the database refused the new chat: say so, keep the text
            log.error("could not start a reply", exc_info=exc)
            failure = JobEnded(self.session_id or "", "failed", (str(exc), STORAGE_TITLE), True)
            self.run_worker(self._show_failure(failure), group="failure")
            return
        # The title and the input's busy border follow a moment later (`BUSY_AFTER`):
        # restyling the input costs milliseconds that the request and the first
        # frames should not wait for.
        self.set_timer(BUSY_AFTER, self._sync_busy)

    def ensure_chat(self, first_text: str) -> ChatState:
        if self.chat is None:
            name = one_line(first_text, 48) or NEW_CHAT_NAME
            agent = self.workspace.runtime.agent(self.draft_agent)
            model = self.draft_model or (agent.model if agent else None) or self.default_model
            info = self.workspace.manager.create(
                name, model=model, source="chatui", agent_id=agent.id if agent else None
            )
            self.chat = ChatState(self.workspace.runtime.manager_for(info.id), info.id)
            self.snapshot = None
            self.post_message(self.ChatOpened(info.id))
        elif self.chat.info.name == NEW_CHAT_NAME and first_text.strip():
            self.workspace.manager.rename(self.chat.session_id, one_line(first_text, 48))
        return self.chat

    @on(WorkspaceChanged)
    async def workspace_changed(self, message: WorkspaceChanged) -> None:
        message.stop()
        event = message.event
        if isinstance(event, ReplyDelta):
            self._delta_waiting.discard(event.message_id)  # later deltas post again
        try:
            await self._workspace_changed(event)
        finally:
            if message.first_words:
                self._batched.close()
                # Marked for layout now: the words' widget asks for its own only when it
                # next idles, and a screen with nothing to lay out runs "after refresh"
                # callbacks at once, before the frame.
                self.refresh(layout=True)
                self.call_after_refresh(self._release_held)

    async def _workspace_changed(self, event: WorkspaceEvent) -> None:
        async with self._draw_lock:
            if isinstance(event, ModelFactsChanged):
                if event.model == self.model:
                    await self.refresh_sidebar(blocks=False)
                return
            if isinstance(event, ChatsChanged):
                await self._changed_elsewhere(event.session_ids)
                return
            if event.session_id != self.session_id or self.chat is None:
                self._elsewhere(event)
                return
            if isinstance(event, JobEnded):
                await self._turn_ended(event)
            else:
                await self.show_event(event)

    async def _changed_elsewhere(self, session_ids: frozenset[str]) -> None:
        """Another process wrote: redraw the chat on screen if it is one of them.

        A chat replying here is left to its stream (this process writes it); a
        change to a namespace that is no chat (shared memory) refreshes the sidebar.
        """
        if self.chat is not None and self.session_id in session_ids and not self.generating:
            self.chat.follow_growth()
            await self._redraw()
        else:
            manager = self.workspace.manager
            others = session_ids - {self.session_id}
            if any(manager.get(i, include_deleted=True) is None for i in others):
                await self.refresh_sidebar()
        self.update_title()

    def _elsewhere(self, event: WorkspaceEvent) -> None:
        """An event of a chat not on screen: only its end is worth a word."""
        if not isinstance(event, JobEnded):
            return
        self.update_title()
        info = self.workspace.manager.get(event.session_id)
        if info is None:
            return
        name = one_line(info.name, 40)
        if event.outcome == "finished":
            self.notify(f"“{name}” has its reply.", timeout=3)
        elif event.failure is not None:
            self.notify(f"The reply in “{name}” failed: {event.failure[1]}", severity="warning")

    async def _turn_ended(self, event: JobEnded) -> None:
        """Show the stored end state: a cancelled or failed turn is re-read from the store."""
        self._streams.clear()
        self._drawn.clear()
        self._first_words.clear()
        if event.outcome != "finished":
            await self._redraw()
        else:
            self.redraw_tree()  # once per turn: the final labels and marks
            self._sync_busy()
            await self.refresh_sidebar()
        await self._show_failure(event)

    async def _show_failure(self, event: JobEnded) -> None:
        if event.failure is not None:  # after the redraw, which would wipe it
            text, title = event.failure
            if event.storage:
                kept = (
                    "Nothing you typed is lost: it is still in the input box."
                    if self.chat_input.text
                    else "Your message is saved; the reply may be cut short."
                )
                # The store says what failed in its engine's terms (a lost PostgreSQL
                # connection is no full disk).
                advice = event.advice or (
                    "Fix the problem (free disk space, check the file's permissions) and "
                    "press enter again."
                )
                text = f"{text}\n{kept} {advice}"
            await self.chat_view.notice(text, "error", title=title)

    def _shown_leaf(self) -> str | None:
        ids = self.chat_view.shown_ids
        return ids[-1] if ids else None

    async def show_event(self, event: TurnEvent) -> None:
        """Turn one event of the chat on screen into widget updates (under the lock)."""
        chat = self.chat
        assert chat is not None
        match event:
            case MessageStored(message=message):
                follows = message.parent_id == self._shown_leaf()
                chat.adopt(message.id)  # the job moved the chat's branch already
                if message.role == "user":
                    self.chat_input.clear()
                if follows:
                    await self.chat_view.add_message(message)  # the tree follows with the reply
                else:
                    await self._redraw()
            case ReplyStarted(message=message):
                follows = message.parent_id == self._shown_leaf()
                chat.adopt(message.id)
                if follows:
                    # Mounted now, empty and marked writing: after a send it is drawn
                    # in the question's frame, and its first words are an update of
                    # its body, not a mount.
                    self._streams[message.id] = await self.chat_view.start_reply(message)
                    self._drawn[message.id] = 0
                    # The tree's new nodes (a snapshot of the chat: tens of ms in a long
                    # one) and the busy title and input a moment later: drawn before a
                    # fast reply's first words, they made that frame wait and grow.
                    # Counted from enter when the question was held: counted from here,
                    # a held question's tree and busy restyle came 0.1 s after the hold,
                    # just when a model that thinks sent its first words.
                    asked, self._asked_at = self._asked_at, None
                    # (Textual's timers divide by their delay: never 0.)
                    after = max(BUSY_AFTER - (time.monotonic() - asked if asked else 0.0), 0.01)
                    self.set_timer(after, self.redraw_tree)
                    self.set_timer(after, self._sync_busy)
                else:
                    await self._redraw()  # a regenerated reply: a sibling, drawn streaming
                    view = self.chat_view.view_for(message.id) or await self.chat_view.start_reply(
                        message
                    )
                    self._streams[message.id] = view
                    self._drawn.setdefault(message.id, 0)
                    view.focus(scroll_visible=False)
            case ReplyDelta(message_id=mid, kind="text"):
                await self._catch_up(mid)
            case ReplyFinished(message=message):
                self._first_words.discard(message.id)
                self._streams.pop(message.id, None)
                self._drawn.pop(message.id, None)
                await self.chat_view.finish_reply(message)
            case MemoryChanged(labels=labels):
                await self.refresh_sidebar()
                for label in labels:
                    gauge = self.sidebar.gauge(label)
                    if gauge is not None:
                        gauge.add_class("-changed")
                        self.set_timer(1.5, lambda g=gauge: g.remove_class("-changed"))
            case Compacted():
                # The redraw draws the running turn's notices again, and the live reply
                # (a context-length retry compacts mid-turn) streaming into its new view.
                await self._redraw()
            case UsageRecorded():
                await self.refresh_sidebar(blocks=False)
            case Notice(text=text, level=level):
                await self.chat_view.notice(text, level)
            case TurnFailed(title=title, detail=detail, hint=hint):
                body = "\n".join(p for p in (detail, hint) if p)
                await self.chat_view.notice(body, "error", title=title)

    async def _catch_up(self, message_id: str) -> None:
        """Draw what the reply's job has streamed and this view has not drawn yet.

        Idempotent: deltas queued before a redraw find nothing new to draw.
        """
        view = self._streams.get(message_id)
        live = self.workspace.jobs.live_messages(self.session_id).get(message_id)
        if live is None:
            # A short reply that came at once ended before its first words were drawn:
            # its stored text waits behind their frame; without it that frame was empty.
            live = next(
                (
                    e.message.text
                    for e in self._held or []
                    if isinstance(e, ReplyFinished) and e.message.id == message_id
                ),
                None,
            )
        if view is None or live is None:
            return
        drawn = self._drawn.get(message_id, 0)
        if len(live) > drawn:
            self._drawn[message_id] = len(live)
            await view.append(live[drawn:])

    # -- cancelling ----------------------------------------------------------------

    def cancel_generation(self) -> bool:
        """Cancel the reply of the chat on screen (only that one)."""
        if not self.workspace.jobs.cancel(self.session_id):
            return False
        self.notify("Reply cancelled — what arrived is kept, marked cancelled.")
        return True

    def action_escape(self) -> None:
        if not self.close_drawer() and not self.cancel_generation():
            self.chat_input.focus()

    # -- message actions -----------------------------------------------------------

    @on(MessageView.ActionRequested)
    @on(MessageTree.ActionRequested)
    async def message_action(
        self, event: MessageView.ActionRequested | MessageTree.ActionRequested
    ) -> None:
        event.stop()
        await self.act(
            event.message_id, event.action, from_tree=isinstance(event, MessageTree.ActionRequested)
        )

    async def act(self, message_id: str, action: str, *, from_tree: bool = False) -> None:
        """Regenerate, edit, fork, copy, or move to a sibling branch."""
        chat = self.chat
        if chat is None:
            return
        if message_id.startswith("compaction_"):
            if action == "originals" and self.show_originals(message_id):
                return
            self.notify("That is a summary: enter opens the messages it covers.")
            return
        message = chat.session.get_message(message_id)
        if message is None:
            self.notify("That message no longer exists.", severity="warning")
            return
        if action in ("regenerate", "regenerate_with", "edit", "fork") and self.generating:
            # A fork would copy a half-written reply: like r and e, it waits for the end.
            self.notify("Still replying — press escape to cancel first.", severity="warning")
            return
        if action == "goto":
            await self.follow_hop(message_id)
        elif action == "regenerate":
            self.start_turn("regenerate", message_id=message_id)
        elif action == "regenerate_with":
            self.regenerate_with(message_id)
        elif action == "edit":
            if message.role != "user":
                self.notify(
                    "Only your own messages can be edited; r regenerates a reply.",
                    severity="warning",
                )
                return
            from .dialogs import TextPrompt

            self.app.push_screen(
                TextPrompt(
                    "Edit message — the edit becomes a new branch; the original stays",
                    message.text,
                    multiline=True,
                ),
                lambda text: self._edited(message_id, message.text, text),
            )
        elif action == "fork":
            await self.fork(message_id)
        elif action == "compare":
            self.compare(message)
        elif action == "copy":
            self.copy(message)
        elif action in ("previous", "next"):
            await self.switch_sibling(
                message_id, -1 if action == "previous" else 1, from_tree=from_tree
            )

    async def follow_hop(self, message_id: str) -> None:
        """Open the other chat of a peer message, at the message on its side."""
        target = self.marks.targets.get(message_id)
        if target is None:
            self.notify("This message did not cross to another chat.", timeout=3)
            return
        session_id, other = target
        if self.workspace.manager.get(session_id) is None:
            self.notify(
                "That chat was deleted (restore it from the chat list).", severity="warning"
            )
            return
        await self.open_chat(session_id, reveal=other)

    def _edited(self, message_id: str, old: str, text: str | None) -> None:
        if text is None or not text.strip():
            return
        if text == old:
            self.notify("Unchanged — nothing to do.")
            return
        self.start_turn("edit", message_id=message_id, text=text)

    async def fork(self, message_id: str) -> None:
        assert self.chat is not None
        name = f"{self.chat.info.name} ⑂"
        info = await self.workspace.manager.fork(self.chat.session_id, message_id, name)
        await self.open_chat(info.id)
        self.notify(f"Forked into a new chat: {name}")

    def compare(self, message: Message) -> None:
        """Open the message beside its siblings; the one kept becomes the branch shown."""
        from .compare import CompareScreen

        assert self.chat is not None
        chat = self.chat
        siblings = (
            chat.session.get_branches(message.parent_id)
            if message.parent_id
            else [m for m in chat.session.get_tree() if m.parent_id is None]
        )
        if len(siblings) < 2:
            self.notify("No sibling to compare with: r regenerates one.", timeout=3)
            return

        async def kept(message_id: str | None) -> None:
            if message_id is None or self.chat is not chat:
                return
            before = chat.active_leaf
            chat.set_active(chat.session.latest_leaf_under(message_id))
            await self.redraw()
            self.note_left_branch(before)
            await self.chat_view.reveal(message_id)

        self.app.push_screen(CompareScreen(siblings, message.id, self.model), kept)

    def copy(self, message: Message) -> None:
        text = message.text
        blocks = code_blocks(text)
        now = time.monotonic()
        cycle = self._copy_cycle
        if blocks and cycle and cycle[0] == message.id and now - cycle[2] < 5:
            index = (cycle[1] + 1) % (len(blocks) + 1)
        else:
            index = 0
        self._copy_cycle = (message.id, index, now)
        if index == 0:
            self.app.copy_to_clipboard(text)
            more = " — press c again for its code block" if blocks else ""
            self.notify(f"Copied the message{more}.")
        else:
            self.app.copy_to_clipboard(blocks[index - 1])
            self.notify(f"Copied code block {index} of {len(blocks)}.")

    async def switch_sibling(self, message_id: str, step: int, *, from_tree: bool) -> None:
        assert self.chat is not None
        before = self.chat.active_leaf
        try:
            target = self.chat.switch_sibling(message_id, step)
        except UnknownMessageError:
            return
        if target is None:
            self.app.bell()
            self.notify("No other branch that way.", timeout=2)
            return
        await self.redraw()
        self.note_left_branch(before)
        if from_tree:
            self.tree.select_message(target)
            await self.chat_view.reveal(target, focus=False)
        else:
            await self.chat_view.reveal(target)

    @on(MessageTree.BranchSelected)
    async def branch_selected(self, event: MessageTree.BranchSelected) -> None:
        event.stop()
        if self.chat is None:
            return
        before = self.chat.active_leaf
        self.chat.select(event.message_id)
        if self.chat.active_leaf != before:
            await self.redraw()
            self.note_left_branch(before)
            self.tree.select_message(event.message_id)
        await self.chat_view.reveal(event.message_id, focus=False)

    # -- focus movement ------------------------------------------------------------

    @on(MessageView.MoveRequested)
    def move_focus(self, event: MessageView.MoveRequested) -> None:
        event.stop()
        if event.step == 0:
            self.chat_input.focus()
            return
        views = self.chat_view.views
        index = views.index(event.view) + event.step
        if index >= len(views):
            self.chat_input.focus()
        elif index >= 0:
            views[index].focus()
            views[index].scroll_visible(animate=False)
        else:
            self.run_worker(self._focus_earlier(event.view), exclusive=True)

    async def _focus_earlier(self, view: MessageView) -> None:
        if await self.chat_view.load_earlier():
            views = self.chat_view.views
            index = views.index(view)
            if index > 0:
                views[index - 1].focus()

    @on(ChatInput.LeaveUp, "#input")
    def input_up(self, event: ChatInput.LeaveUp) -> None:
        event.stop()
        views = self.chat_view.views
        if views:
            views[-1].focus()
            views[-1].scroll_visible(animate=False)
