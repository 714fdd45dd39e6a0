"""`ChatPane`: the chat on screen — its title, its messages streaming in place, the input.

The pane owns the open chat (`ChatState`), the snapshot it draws and the
chat's facts (`Workspace.facts`), and the stream of that chat on screen: the
main screen passes it the workspace's events of the chat it shows (`heard`),
and the pane draws them. It tells the screen what the other panes need in
messages (`TreeChanged`, `FactsChanged`) or, after a redraw, by awaiting
`on_shown`; it never draws them.

Design notes:
- One delta path: a `ReplyDelta`'s text goes straight into its reply's
  `ReplyStream` when heard; the reply's view joins and draws it (one batching).
  A view mounted in the middle of a reply starts from the workspace's live
  text (the engine's own copy), read in the same step its stream is opened,
  so nothing is drawn twice or lost.
- When events are drawn is the first-frame policy's (`FirstFrame`, run by the
  pane's `ChatStream`): a sent question and its reply's first words in one
  frame, what follows them after that frame. Each release is drawn in one
  `App.batch_update()`, opened and closed by one coroutine.
- The snapshot follows a turn without reads (`ChatSnapshot.grow`), and the
  end of a turn brings the next request's measure (`ContextMeasured`): a short
  turn reads nothing for the screen beyond what the engine reads itself.
- Every change to what the pane shows runs under one lock: two redraws never
  interleave (the `DuplicateIds 'earlier'` crash of two `ChatView.show` at once).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from textual import getters, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message as TextualMessage
from textual.timer import Timer

from store import SessionInfo
from store.text import plain
from widgets import AttachmentTray, ChatInput, ChatView, MessageView, one_line

from ..core.chat_state import ChatSnapshot, ChatState
from ..core.events import (
    Compacted,
    ContextMeasured,
    JobEnded,
    JobEvent,
    MemoryChanged,
    MessageStored,
    Notice,
    ReplyDelta,
    ReplyFinished,
    ReplyStarted,
    TurnEvent,
    TurnFailed,
    TurnKind,
    UsageRecorded,
    written_elsewhere,
)
from ..core.workspace import (
    Attached,
    AttachRefused,
    ChatFacts,
    JobsFull,
    PeerMarks,
    PersonaConfig,
    UiState,
    Workspace,
)
from .chat_panes import ChatTitle
from .chat_stream import ChatStream
from .first_frame import Release
from .message_actions import MessageActions
from .outage import SurvivesOutage

__all__ = ["BUSY_AFTER", "NEW_CHAT_NAME", "ChatPane"]

_NOTHING_SHOWN = object()
"""No chat shown yet: the empty input is nobody's draft."""
DRAFT_SAVE_AFTER = 0.5
"""Seconds between typing and the draft reaching the state file: a killed terminal
loses at most this much typing. A throttle, not a debounce (a steady typist's draft
is written too); each write is the UI state file, whole and atomically (`save_state`),
and a draft that did not change writes nothing."""

log = logging.getLogger(__name__)

NEW_CHAT_NAME = "New chat"
STORAGE_TITLE = "Could not save to the database"
BUSY_AFTER = 0.1
"""Seconds after enter before the title, the input's busy border and the tree follow:
a fast reply's first words are drawn by then."""
WRITERS_CHECK_SECONDS = 1.0
"""How often a chat showing a reply another process writes asks whether it still lives
(a process that dies writes nothing more: no change tells the pane)."""
LOADING_NOTE = "starting the model…"
WELCOME = (
    "Type below and press enter to send (ctrl+j for a new line).\n"
    "ctrl+r regenerates and e edits a focused message — both make branches, nothing is "
    "lost. ctrl+s lists chats, ctrl+f searches all of them, ctrl+l picks the model, F1 "
    "shows every key."
)


class ChatPane(SurvivesOutage, Vertical):
    """The title, the chat view and the input of the chat on screen."""

    # From the input, the keys of a focused message act on the branch's last reply:
    # a failure says "press ctrl+r" while the input has the focus. A focused message
    # or the tree binds the same keys for itself; the input's ctrl+w deletes a word.
    BINDINGS = [
        Binding("ctrl+r", "last('regenerate')", "Regenerate", id="chat.regenerate", show=False),
        Binding("ctrl+g", "last('continue')", "Continue", id="chat.continue", show=False),
    ]

    class TreeChanged(TextualMessage):
        """The chat's messages changed during a turn: the tree follows."""

    class FactsChanged(TextualMessage):
        """The chat's facts changed (a measure, a spend, memory): the sidebar follows."""

        def __init__(self, labels: tuple[str, ...] = ()) -> None:
            super().__init__()
            self.labels = labels
            """Blocks a tool just wrote (their gauges flash)."""

    class ChatOpened(TextualMessage):
        """The pane shows another chat (None: a new one); the app remembers it."""

        def __init__(self, session_id: str | None) -> None:
            super().__init__()
            self.session_id = session_id

    class DraftChanged(TextualMessage):
        """The draft of the chat on screen changed in `ui_state`; the app writes it."""

    class ModelChosen(TextualMessage):
        """The user picked a model; the app keeps it among the recent ones."""

        def __init__(self, model: str) -> None:
            super().__init__()
            self.model = model

    class _Draw(TextualMessage):
        """Releases of the first-frame policy wait to be drawn (`_releases`)."""

    chat_view = getters.query_one("#chat", ChatView)
    chat_input = getters.query_one("#input", ChatInput)

    def __init__(
        self,
        workspace: Workspace,
        *,
        recent_models: list[str],
        on_shown: Callable[..., Awaitable[None]],
        ui_state: UiState | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.workspace = workspace
        self.ui_state = ui_state if ui_state is not None else UiState()
        """Where each chat's draft (typed, not sent) is kept; the app saves it."""
        self._draft_for: str | None | object = _NOTHING_SHOWN
        """The chat whose draft the input holds (None: the new chat)."""
        self.on_shown = on_shown
        """What draws the rest of the screen from this chat (the tree and the sidebar),
        awaited after each redraw: all three panes show one reading in one frame."""
        self.recent_models = recent_models
        """Models picked lately, newest first (offered first in the pickers)."""
        self.chat: ChatState | None = None
        """The open chat; None for a new chat not stored yet (created on first send)."""
        self.snapshot: ChatSnapshot | None = None
        self.facts: ChatFacts | None = None
        """The chat's agent, model, window and next request (`Workspace.facts`)."""
        self.marks = PeerMarks()
        """Messages of the open chat that crossed to other chats (for `g`)."""
        self._focus_sibling = True
        self.draft_model: str | None = None
        """The model picked for a new chat before its first send (ctrl+l)."""
        self.draft_agent: str | None = None
        """The agent a new chat will run (chosen in the agent picker)."""
        self.draft_persona: PersonaConfig | None = None
        """The persona a new chat starts as (chosen at ctrl+n), applied when stored."""
        self.actions = MessageActions(self)
        self.stream = ChatStream(
            draw=self._post_draw,
            set_timer=lambda delay, callback: self.set_timer(delay, callback),
        )
        """The live replies of the chat on screen, and when its events are drawn."""
        self._sent: str | None = None
        """The text of the send whose question is not stored yet (taken off the input
        once it is: what was typed after enter stays)."""
        self._created: str | None = None
        """A chat this pane created for a send: removed again if its turn stores nothing."""
        self._asked_at: float | None = None
        self._measured = False
        """The running turn measured the next request (`ContextMeasured`)."""
        self._draw_lock = asyncio.Lock()
        self._title_timer: Timer | None = None
        self._elsewhere: frozenset[str] = frozenset()
        """Replies on screen another process is writing (`written_elsewhere`)."""
        self._writers_timer: Timer | None = None
        self._follow_timer: Timer | None = None
        self._blink_paused = False
        """The input's cursor blink is off while the chat on screen replies (on after)."""
        """Brings the busy title and the tree after enter (`BUSY_AFTER`), until it fires."""
        self._panes_due: set[str] | None = None
        """While `_draw` draws a batch: which of "tree" and "facts" (the sidebar) follow
        in it."""
        self._releases: list[Release] = []
        """Released events not drawn yet: the next `_draw` draws all of them, one batch."""
        self._draft_timer: Timer | None = None
        """Pending: the draft typed since the last write goes to the state file."""
        self.attached: list[Attached] = []
        """What goes with the next message (the tray above the input shows it)."""
        self._sending: list[Attached] | None = None
        """The attachments of the send whose question is not stored yet (they leave
        the tray once it is; a failed send keeps them there)."""

    def compose(self) -> ComposeResult:
        yield ChatTitle(id="chat-title")
        yield ChatView(id="chat")
        yield AttachmentTray(id="tray")
        box = ChatInput(id="input", placeholder="Message · enter sends · ctrl+j new line · F1 keys")
        if self.screen.focused is None:
            # The first chat opened focuses the input: focused now, it is styled once
            # before the first frame, not once mounted and again when focused.
            box.focus_before_mount(self.screen)
        yield box

    # -- facts ------------------------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self.chat.session_id if self.chat else None

    @property
    def generating(self) -> bool:
        """The chat on screen is writing a reply."""
        return self.workspace.replying(self.session_id)

    @property
    def model(self) -> str:
        """The chat's model, as its facts decided it ("" before the first draw)."""
        return self.facts.model.model if self.facts is not None else ""

    @property
    def name(self) -> str:
        return self.facts.name if self.facts and self.facts.name else NEW_CHAT_NAME

    def model_chosen(self, model: str) -> None:
        """A model was picked: first among the recent ones, and the app remembers it."""
        self.recent_models[:] = [model, *(m for m in self.recent_models if m != model)]
        self.post_message(self.ModelChosen(model))

    def live_text(self) -> dict[str, str]:
        """Message id → text so far, of the replies the chat on screen is writing."""
        return self.workspace.live_text(self.session_id)

    # -- opening and drawing ------------------------------------------------------------

    async def open_chat(
        self,
        session_id: str | None,
        *,
        reveal: str | None = None,
        model: str | None = None,
        agent_id: str | None = None,
        persona: PersonaConfig | None = None,
    ) -> None:
        """Show a chat (None: a new, empty one running `agent_id`, as `persona`), on its
        remembered branch.

        A reply being written in the chat left keeps going (its job belongs to the chat).
        """
        async with self._draw_lock:
            self.keep_draft()
            self.stream.reset()
            if session_id is None:
                self.chat = None
                self.draft_agent = agent_id
                self.draft_model = model
                self.draft_persona = persona
            else:
                self.chat = self.workspace.open(session_id)
                if reveal is not None:
                    self.chat.select(reveal)
            self._take_draft(session_id)
            self.post_message(self.ChatOpened(session_id))
            await self._redraw()
            if reveal is not None:
                await self.chat_view.reveal(reveal)
            else:
                self.chat_input.focus()

    def keep_draft(self) -> bool:
        """Keep what the input holds as the draft of the chat it was typed in; whether
        the kept draft changed."""
        if self._draft_for is _NOTHING_SHOWN:
            return False
        key = self._draft_for if isinstance(self._draft_for, str) else None
        return self.ui_state.remember_draft(key, self.chat_input.text)

    @on(ChatInput.Changed, "#input")
    def _draft_typed(self) -> None:
        """Typing (or a paste, or a send taking text off) is written as the draft within
        `DRAFT_SAVE_AFTER` seconds, so a terminal killed mid-sentence keeps it."""
        if self._draft_timer is None:
            self._draft_timer = self.set_timer(DRAFT_SAVE_AFTER, self._save_draft)

    def _save_draft(self) -> None:
        self._draft_timer = None
        if self.keep_draft():
            self.post_message(self.DraftChanged())

    def _take_draft(self, session_id: str | None) -> None:
        """The input shows the draft of the chat now on screen (empty without one)."""
        box = self.chat_input
        # Keys pressed while the app was starting reach the input before the first chat
        # is shown: they are the user's too, so they follow that chat's draft.
        early = box.text if self._draft_for is _NOTHING_SHOWN else ""
        self._draft_for = session_id
        box.load_text(self.ui_state.draft(session_id) + early)
        box.move_cursor(box.document.end)

    async def redraw(self) -> None:
        """Re-read the chat and redraw it (a focused message keeps focus)."""
        async with self._draw_lock:
            await self._redraw()

    async def _redraw(self) -> None:
        focused = self.screen.focused
        focus_id = focused.message_id if isinstance(focused, MessageView) else None
        workspace = self.workspace
        if self.chat is None:
            self.snapshot = None
            self.marks = PeerMarks()
            await self._measure()
            self.stream.opened({})
            await self.chat_view.show([], empty_text=WELCOME)
        else:
            self.snapshot = snap = self.chat.snapshot()
            self.marks = workspace.peer_marks(snap.info.id)
            await self._measure()
            # The live texts and their streams in one step: every delta heard after
            # this goes to a stream, and none before it is drawn twice.
            live = self.live_text()
            streams = self.stream.opened(live)
            self.chat_view.hops = self.marks.labels
            self.chat_view.senders = workspace.agent_names()
            self.chat_view.notes = snap.notes
            await self.chat_view.show(
                snap.history,
                positions=snap.positions,
                covered=snap.covered,
                empty_text=WELCOME,
                live=live,
                streams=streams,
            )
            for text, level in workspace.turn_notes(self.session_id):
                await self.chat_view.notice(text, level)  # notices of the running turn
        if focus_id is not None:
            view = self.chat_view.view_for(focus_id)
            (view or self.chat_input).focus()
        self._watch_writers()
        self.sync_busy()
        await self.on_shown()
        self._key_notice()

    def _writing_elsewhere(self) -> frozenset[str]:
        tree = self.snapshot.tree if self.snapshot is not None else []
        return frozenset(m.id for m in tree if m.role == "assistant" and written_elsewhere(m))

    def _watch_writers(self) -> None:
        """While another process writes a reply of this chat it shows as being written
        there; when that process dies mid-reply, the chat is drawn again (interrupted)."""
        self._elsewhere = self._writing_elsewhere()
        if self._elsewhere and self._writers_timer is None:
            self._writers_timer = self.set_interval(WRITERS_CHECK_SECONDS, self._check_writers)
        elif not self._elsewhere and self._writers_timer is not None:
            self._writers_timer.stop()
            self._writers_timer = None

    async def _check_writers(self) -> None:
        if self._writing_elsewhere() != self._elsewhere:
            await self.redraw()

    async def _measure(self) -> None:
        """The chat's facts, from the snapshot drawn (its row and path are not read again)."""
        snap = self.snapshot
        if self.chat is None or snap is None:
            self.facts = await self.workspace.facts(
                None, picked=self.draft_model, agent_id=self.draft_agent
            )
        else:
            self.facts = await self.workspace.facts(
                snap.info.id, at=snap.active_leaf, info=snap.info, history=snap.history
            )

    async def remeasure(self, labels: tuple[str, ...] = ()) -> None:
        """Measure the chat's facts again (memory changed, a window was learned, the
        model picked): the title names the model the facts hold, so it follows."""
        await self._measure()
        self.update_title()
        self._tell(self.FactsChanged(labels))

    def renamed(self, info: SessionInfo) -> None:
        """The chat's row changed (a rename, a model): the title and facts follow."""
        if self.snapshot is not None:
            self.snapshot.info = info
        self.run_worker(self.remeasure(), group="facts", exclusive=True)
        self.update_title()

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
            await self.remeasure()
            self._key_notice()

    # -- the title and the busy state ----------------------------------------------------

    def update_title(self) -> None:
        """Chat name · agent · model, and what it is doing (replying, waiting for a peer)."""
        facts = self.facts
        parts = [one_line(self.name, 60)]
        if facts is not None and facts.agent is not None:
            parts.append(f"agent {facts.agent.name}")
        parts.append(self.model)
        if self.generating:
            waiting = self.workspace.status_line(self.session_id or "")
            if waiting:
                parts.append(waiting)
            parts.append("replying… (escape cancels)")
        others = len(self.workspace.live_chats - {self.session_id})
        if others:
            parts.append(f"{others} other chat{'s' if others > 1 else ''} replying")
        self.query_one(ChatTitle).say(parts)

    def sync_busy(self) -> None:
        """Input, title and the title's timer follow whether the chat on screen replies."""
        busy = self.generating
        self.chat_input.show_busy(busy)
        # A steady cursor while a reply is written: each blink is a frame (a few ms of
        # the app's CPU, twice a second) taken from a local model on the same cores.
        box = self.chat_input
        if busy and box.cursor_blink:
            box.cursor_blink, self._blink_paused = False, True
        elif not busy and self._blink_paused:
            box.cursor_blink, self._blink_paused = True, False
        if busy and self._title_timer is None:
            # The title says when the chat waits on a peer agent (set by another task).
            self._title_timer = self.set_interval(1.0, self.update_title)
        elif not busy and self._title_timer is not None:
            self._title_timer.stop()
            self._title_timer = None
        self.update_title()

    # -- sending ----------------------------------------------------------------------

    @on(ChatInput.Submitted, "#input")
    def send_from_input(self, event: ChatInput.Submitted) -> None:
        event.stop()
        if self.generating:
            self.notify("Still replying — press escape to cancel first.", severity="warning")
            return
        self.start_turn("send", text=event.text)

    def start_turn(
        self,
        kind: TurnKind,
        *,
        message_id: str | None = None,
        text: str = "",
        model: str | None = None,
    ) -> None:
        """Start a reply job in the chat on screen (a new chat is stored first)."""
        workspace = self.workspace
        if len(workspace.live_chats) >= workspace.reply_limit:
            limit = workspace.reply_limit
            self.notify(
                f"{limit} chats are writing replies already (max_live_replies = "
                f"{limit}). Wait for one, or open it and press escape.",
                severity="warning",
            )
            return
        try:
            chat = self._ensure_chat(text) if kind == "send" else self.chat
            assert chat is not None
            attached = list(self.attached) if kind == "send" else []
            if kind == "send":
                self._sent = text
                self._sending = attached
            self._asked_at = time.monotonic()
            self._measured = False
            # A sibling started from a message or the tree takes the focus; one
            # started from the input (ctrl+r there) leaves it where typing goes on.
            self._focus_sibling = self.screen.focused is not self.chat_input
            workspace.start_reply(
                chat.session_id,
                kind,
                text=text,
                message_id=message_id,
                # A send answers the branch on screen (the snapshot's: no read).
                parent_id=(self.snapshot.active_leaf if self.snapshot else chat.active_leaf)
                if kind == "send"
                else None,
                model=model,
                facts=self.facts,
                attachments=attached,
            )
        except JobsFull as exc:
            self.notify(str(exc), severity="warning")
            return
        except Exception as exc:  # the database refused the new chat: say so, keep the text
            log.error("could not start a reply", exc_info=exc)
            advice = self.workspace.store.failure_advice(exc)  # the engine's terms
            failure = JobEnded(
                self.session_id or "", "failed", (str(exc), STORAGE_TITLE), True, advice
            )
            self.run_worker(self._show_failure(failure), group="failure")
            return
        # The title and the input's busy border follow a moment later: restyling the
        # input costs milliseconds that the request and the first frames should not
        # wait for.
        self.set_timer(BUSY_AFTER, self._busy_after_enter)

    def _busy_after_enter(self) -> None:
        # A reply drawn by now brings the busy title with the tree, due at this moment
        # too (`_follow_reply`): drawn here as well, they were two frames.
        if self._follow_timer is None:
            self.sync_busy()

    def _ensure_chat(self, first_text: str) -> ChatState:
        # Named as the question reads, not as it is marked up ("**Why** `pip`" → "Why pip").
        words = plain(first_text)
        if not words.strip() and self.attached:  # an attachment sent alone names it
            words = self.attached[0].name
        name = one_line(words, 48) or NEW_CHAT_NAME
        if self.chat is None:
            facts = self.facts
            agent = facts.agent if facts is not None else None
            info = self.workspace.create_chat(
                name,
                model=self.model,
                agent_id=agent.id if agent else None,
                persona=self.draft_persona,
            )
            self.draft_persona = None
            self._created = info.id
            self.chat = self.workspace.open(info.id, info)
            self.ui_state.remember_draft(None, "")  # the new chat's draft is this chat's now
            self._draft_for = info.id
            self.snapshot = ChatSnapshot(info, [], None, [])
            if facts is not None:  # what the new chat's facts were, now under its id
                self.facts = facts.stored(info)
            self.post_message(self.ChatOpened(info.id))
        elif self.name == NEW_CHAT_NAME and words.strip():
            self.renamed(self.workspace.rename_chat(self.chat.session_id, name))
        return self.chat

    # -- the stream of the chat on screen ----------------------------------------------

    def heard(self, event: JobEvent) -> None:
        """An event of the chat on screen, as the workspace's listener hears it (on the
        event loop, synchronously): deltas go to their stream now; everything else is
        drawn when the first-frame policy releases it."""
        if isinstance(event, MessageStored):
            self._created = None  # the new chat holds something now: it stays
            if event.message.role == "user" and self._sent:
                # Stored: only what was sent leaves the input, at once (its own frame).
                self.chat_input.remove_sent(self._sent)
                self._sent = None
            if event.message.role == "user" and self._sending is not None:
                sent, self._sending = self._sending, None
                self.attached = [a for a in self.attached if a not in sent]
                self._show_tray()
        self.stream.heard(event)

    def _post_draw(self, release: Release) -> None:
        # Drawn in order; what is released before the pane gets to draw joins the same
        # batch (a turn's end is its usage, its measure and its end, a few ms apart: each
        # was a frame of its own, with the tree and the sidebar drawn again in each).
        self._releases.append(release)
        if len(self._releases) == 1:
            self.post_message(self._Draw())

    def _first_words_drawn(self) -> None:
        self.stream.frame_drawn()
        if self._follow_timer is None:  # else the tree follows the reply soon, words and all
            self.post_message(self.TreeChanged())  # its row shows the words, not "no text yet"

    def _tell(self, message: ChatPane.TreeChanged | ChatPane.FactsChanged) -> None:
        """Tell the screen the tree or the sidebar should follow: while a batch of events
        is drawn (`_draw`), they are drawn at its end, in its frame (a turn's end was two
        frames: the reply's, then the tree's and the sidebar's); otherwise posted."""
        labels = getattr(message, "labels", ())
        if self._panes_due is not None and not labels:
            self._panes_due.add("tree" if isinstance(message, ChatPane.TreeChanged) else "facts")
        else:
            self.post_message(message)

    @on(_Draw)
    async def _draw(self, message: _Draw) -> None:
        message.stop()
        releases, self._releases = self._releases, []
        if not releases:
            return
        async with self._draw_lock:
            self._panes_due = set()
            try:
                with self.app.batch_update():  # one frame for the batch, closed by this block
                    for event in (e for release in releases for e in release.events):
                        if isinstance(event, JobEnded):
                            await self._turn_ended(event)
                        elif event.session_id == self.session_id and self.chat is not None:
                            await self._show(event)
                    if self._panes_due:  # what follows, in this frame
                        due = self._panes_due
                        await self.on_shown(tree="tree" in due, facts="facts" in due)
            finally:
                self._panes_due = None
        worded = [release for release in releases if release.first_words]
        if worded:
            # The words' frame must be drawn before the policy is told: the words'
            # widget hands its repaint to the screen only when it next idles, and a
            # screen with nothing to draw runs "after refresh" callbacks at once,
            # before the frame. Words drawn into a reply's plain body (mounted with its
            # question, one line high already) are handed over now: a repaint of their
            # lines. Otherwise (views mounted, a Markdown body) the screen is marked
            # for layout, which repaints what moved (a repaint of the screen was a full
            # frame); laying it out for the words alone was a reflow and a repaint of
            # the whole chat area in most sends.
            if not all(self._hand_over(release) for release in worded):
                self.screen.refresh(repaint=False, layout=True)
            self.call_after_refresh(self._first_words_drawn)

    def _hand_over(self, release: Release) -> bool:
        """The release's words were drawn into views on screen that handed their repaint
        to the screen (`MessageView.hand_over`); False if anything else is in it."""
        deltas = [event for event in release.events if isinstance(event, ReplyDelta)]
        if len(deltas) != len(release.events):
            return False
        views = [self.chat_view.view_for(delta.message_id) for delta in deltas]
        return all(view is not None and view.hand_over() for view in views)

    async def _show(self, event: TurnEvent) -> None:
        """Draw one event of the chat on screen (under the lock)."""
        chat, snap = self.chat, self.snapshot
        assert chat is not None
        match event:
            case MessageStored(message=message) | ReplyStarted(message=message):
                chat.adopt(message.id)  # the job moved the chat's branch already
                follows = snap is not None and snap.grow(message)
                if not follows:
                    await self._redraw()  # a sibling branch (regenerate, edit): read it
                    view = self.chat_view.view_for(message.id)
                elif isinstance(event, ReplyStarted):
                    # Mounted now, empty and marked writing: after a send it is drawn
                    # in the question's frame, and its first words update its body.
                    view = self.chat_view.view_for(message.id) or await self.chat_view.start_reply(
                        message, stream=self.stream.reply(message.id)
                    )
                    # The tree's new nodes and the busy title a moment after enter:
                    # drawn before a fast reply's first words, they made that frame wait.
                    since = time.monotonic() - (self._asked_at or time.monotonic())
                    if self._follow_timer is not None:
                        self._follow_timer.stop()
                    self._follow_timer = self.set_timer(
                        max(BUSY_AFTER - since, 0.01), self._follow_reply
                    )
                else:
                    view = await self.chat_view.add_message(message)
                if isinstance(event, ReplyStarted) and view is not None:
                    if self.workspace.model_loading:
                        view.note_waiting(LOADING_NOTE)
                    if not follows and self._focus_sibling:
                        view.focus(scroll_visible=False)
            case ReplyDelta(message_id=mid):  # its first words: in this frame
                view = self.chat_view.view_for(mid)
                if view is not None:
                    await view.draw_waiting()
            case ReplyFinished(message=message):
                self.stream.ended(message.id)
                if snap is not None:
                    snap.grow(message)
                await self.chat_view.finish_reply(message)
                if message.tool_calls:
                    # The turn goes on (a tool runs, or waits for the user's approval):
                    # its row names the calls now, not "writing… (no text yet)".
                    self._tell(self.TreeChanged())
            case MemoryChanged(labels=labels):
                await self.remeasure(labels)
            case ContextMeasured(leaf_id=leaf, measured=measured):
                if self.facts is not None and leaf == chat.active_leaf:
                    self._measured = True
                    self.facts = self.facts.remeasured(measured)
                    self._tell(self.FactsChanged())
            case UsageRecorded(input_tokens=i, output_tokens=o, cost=cost):
                if self.facts is not None:
                    self.facts = self.facts.spent(i, o, cost)
                    if snap is not None and self.facts.info is not None:
                        snap.info = self.facts.info  # what later measures start from
                    self._tell(self.FactsChanged())
            case Compacted():
                # The redraw draws the running turn's notices again, and the live reply
                # (a context-length retry compacts mid-turn) streaming into its new view.
                await self._redraw()
            case Notice(text=text, level=level):
                await self.chat_view.notice(text, level)
            case TurnFailed(title=title, detail=detail, hint=hint):
                body = "\n".join(p for p in (detail, hint) if p)
                await self.chat_view.notice(body, "error", title=title)

    async def _follow_reply(self) -> None:
        self._follow_timer = None
        # The busy input and title and the tree's new rows, in one frame: the tree, told
        # by a message, was drawn by the screen in a frame of its own after the title's
        # (a frame is about a millisecond of the app's CPU, taken from a local model).
        with self.app.batch_update():
            self.sync_busy()
            await self.on_shown(tree=True, facts=False)

    async def _turn_ended(self, event: JobEnded) -> None:
        """Show the stored end state: a cancelled or failed turn is re-read from the store."""
        if event.session_id != self.session_id:
            return
        self._sent = None
        self._sending = None  # not stored: what was attached stays in the tray
        created, self._created = self._created, None
        try:
            await self._reread_after_turn(event, created)
        except Exception as exc:  # a server that stopped answering: keep what is drawn
            if not self.workspace.store.unreachable(exc):
                raise
            log.warning("the chat could not be read after its turn", exc_info=exc)
        self.sync_busy()
        await self._show_failure(event)

    async def _reread_after_turn(self, event: JobEnded, created: str | None) -> None:
        if created is not None and self.workspace.discard_if_empty(created):
            # A new chat whose turn stored nothing (no key, say): it never existed; the
            # typed text is still in the input, the error stays on screen.
            self.chat, self.snapshot = None, None
            self._draft_for = None
            self.post_message(self.ChatOpened(None))
            await self._measure()
            await self.on_shown()
        elif event.outcome != "finished":
            await self._redraw()
        else:
            self.marks = self.workspace.peer_marks(event.session_id)  # messages that crossed
            self._tell(self.TreeChanged())  # once per turn: the final labels
            if not self._measured:  # a turn that ended without measuring (tool rounds)
                await self.remeasure()

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

    def cancel(self) -> bool:
        """Cancel the reply of the chat on screen (only that one)."""
        if not self.workspace.cancel_reply(self.session_id):
            return False
        self.notify("Reply cancelled — what arrived is kept, marked cancelled.")
        return True

    # -- messages and focus -------------------------------------------------------------

    async def action_last(self, action: str) -> None:
        """Run a message's `action` on the last reply of the branch on screen (or, when
        the branch ends in a question no reply answered yet, on that question)."""
        snap = self.snapshot
        history = snap.history if snap is not None else []
        last = next(
            (
                m
                for m in reversed(history)
                if not m.is_compaction and m.role in ("user", "assistant")
            ),
            None,
        )
        if last is None:
            self.notify("Nothing to regenerate yet: type a message and press enter.")
            return
        await self.actions.act(last.id, action)

    @on(MessageView.ActionRequested)
    async def _message_action(self, event: MessageView.ActionRequested) -> None:
        event.stop()
        moved_to = await self.actions.act(event.message_id, event.action)
        if moved_to is not None:  # another branch: focus follows to the sibling
            await self.chat_view.reveal(moved_to)

    def on_mount(self) -> None:
        self.chat_view.type_into = self._type_into
        self.chat_input.take_paste = self._take_paste
        self.chat_input.remove_before = self._remove_last
        self.chat_input.leave_up = self._leave_up

    # -- attachments --------------------------------------------------------------------

    def attach(self, attached: Attached) -> None:
        """Put checked, stored content (`Workspace.attach_file` / `attach_bytes`) in the
        tray: it goes with the next message."""
        if any(a.part == attached.part for a in self.attached):
            self.notify(f"{attached.name} is attached already.")
            return
        self.attached.append(attached)
        self._show_tray()

    def attach_path(self, path: str) -> bool:
        """Attach the file at `path`; a refusal is shown with its reason. True if attached."""
        try:
            attached = self.workspace.attach_file(path)
        except AttachRefused as exc:
            self.notify(str(exc), title="Not attached", severity="error", timeout=8)
            return False
        self.attach(attached)
        return True

    def remove_attachment(self, index: int) -> None:
        if 0 <= index < len(self.attached):
            removed = self.attached.pop(index)
            self._show_tray()
            self.notify(f"Removed {removed.name}.", timeout=2)

    def _show_tray(self) -> None:
        self.query_one(AttachmentTray).show([a.label for a in self.attached])
        self.chat_input.submit_empty = bool(self.attached)

    def _take_paste(self, text: str) -> bool:
        """A paste that is one path to an existing file attaches it (a file dropped on
        the terminal); anything else is typed."""
        path = self.workspace.pasted_path(text)
        if path is None:
            return False
        self.attach_path(str(path))
        return True  # refused or not, a path is not typed into the message

    def _remove_last(self) -> bool:
        if not self.attached:
            return False
        self.remove_attachment(len(self.attached) - 1)
        return True

    @on(AttachmentTray.Removed)
    def _tray_removed(self, event: AttachmentTray.Removed) -> None:
        event.stop()
        self.remove_attachment(event.index)

    def _type_into(self, character: str) -> None:
        """Typing on a focused message: the key goes to the input at once (in order with
        the keys that follow), and the focus with it."""
        self.chat_input.insert(character)
        if self.screen.focused is not self.chat_input:
            self.screen.set_focus(self.chat_input)

    @on(MessageView.MoveRequested)
    def _move_past_the_messages(self, event: MessageView.MoveRequested) -> None:
        """Down from the last message (the chat view moves between the others)."""
        event.stop()
        self.chat_input.focus()

    def _leave_up(self) -> bool:
        """Up from the input's first line: the focus goes to the message above (True),
        if there is one."""
        if not self.chat_view.views:
            return False
        self.chat_view.step_focus(self.chat_input, -1)
        return True
