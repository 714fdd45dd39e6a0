"""The main screen: message tree | chat and input | context sidebar.

This module routes: widget messages become calls on `ChatState` (branches)
and `ChatEngine` (turns), and turn events become widget updates. The rules
about what is stored and how a turn runs live there, not here.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import aclosing
from typing import TYPE_CHECKING

from peewee import DatabaseError as PeeweeError
from rich.text import Text
from textual import getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerState

from store import Message, StoreError, UnknownMessageError
from widgets import (
    ChatInput,
    ChatView,
    ContextSidebar,
    MessageTree,
    MessageView,
    clean,
    code_blocks,
    one_line,
)

from ...agents import PeerMarks
from ...chat_state import ChatSnapshot, ChatState
from ...events import (
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
from .main_memory import MemoryMixin
from .main_panes import PanesMixin

if TYPE_CHECKING:
    from ..app import ChatApp

__all__ = ["MainScreen", "NEW_CHAT_NAME"]

NEW_CHAT_NAME = "New chat"
WELCOME = (
    "Type below and press enter to send (ctrl+j for a new line).\n"
    "r regenerates and e edits a focused message — both make branches, nothing is lost. "
    "ctrl+s lists chats, ctrl+f searches all of them, ctrl+l picks the model, F1 shows "
    "every key."
)


class MainScreen(PanesMixin, MemoryMixin, Screen[None]):
    """Tree, chat and sidebar for the open chat."""

    CSS_PATH = "main.tcss"
    AUTO_FOCUS = "#input"
    BINDINGS = [
        # Not in the footer (the title says "escape cancels" while a reply is written):
        # the footer's keys fit 80 columns.
        Binding("escape", "escape", "Cancel reply", id="main.cancel", show=False),
        Binding("f2", "show_prompt", "Prompt", id="main.prompt", show=False),
    ]

    if TYPE_CHECKING:  # the app module imports this one; type it without a cycle

        @property
        def app(self) -> ChatApp: ...

    tree = getters.query_one("#tree", MessageTree)
    chat_view = getters.query_one("#chat", ChatView)
    sidebar = getters.query_one("#sidebar", ContextSidebar)
    chat_input = getters.query_one("#input", ChatInput)

    def __init__(self) -> None:
        super().__init__()
        self.chat: ChatState | None = None
        """The open chat; None for a new chat not stored yet (created on first send)."""
        self.draft_model: str | None = None
        self.draft_agent: str | None = None
        """The agent a new chat will run (chosen in the agent picker)."""
        self.snapshot: ChatSnapshot | None = None
        self.marks = PeerMarks()
        """Messages of the open chat that crossed to other chats (for `g`)."""
        self.generation: Worker[None] | None = None
        self._streams: dict[str, MessageView] = {}
        self._copy_cycle: tuple[str, int, float] | None = None
        self._title_timer: Timer | None = None
        self._title = ""
        self._turn_notes: list[tuple[str, str]] = []
        """Notices of the turn running now (shown again if the chat is redrawn)."""

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
        yield Footer(compact=True)  # compact: the keys fit 80 columns

    def on_mount(self) -> None:
        self.arrange_panes()
        # Paint the frame first, then fill it: start-up does not wait on the chat.
        self.call_after_refresh(self.app.open_first_chat, self)

    # -- opening and drawing -------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self.chat.session_id if self.chat else None

    @property
    def generating(self) -> bool:
        return self.generation is not None and self.generation.state in (
            WorkerState.PENDING,
            WorkerState.RUNNING,
        )

    @property
    def model(self) -> str:
        if self.chat is not None:
            return self.app.engine_for(self.chat.session_id).model_for(self.chat.session_id)
        return self.draft_model or self.app.default_model

    async def open_chat(
        self,
        session_id: str | None,
        *,
        reveal: str | None = None,
        model: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        """Show a chat (None: a new, empty one running `agent_id`), on its remembered branch."""
        if self.generating:
            self.cancel_generation()
        if session_id is None:
            self.chat = None
            self.draft_agent = agent_id
            agent = self.app.runtime.agent(agent_id)
            self.draft_model = model or (agent.model if agent else None) or self.app.default_model
        else:
            self.chat = ChatState(self.app.runtime.manager_for(session_id), session_id)
            if reveal is not None:
                self.chat.select(reveal)
        self.app.remember_chat(session_id)
        await self.redraw()
        if reveal is not None:
            await self.chat_view.reveal(reveal)
        else:
            self.chat_input.focus()

    async def redraw(self) -> None:
        """Re-read the chat and redraw all three panes (a focused message keeps focus)."""
        focused = self.focused
        focus_id = focused.message_id if isinstance(focused, MessageView) else None
        if self.chat is None:
            self.snapshot = None
            self.show_tree()
            await self.chat_view.show([], empty_text=WELCOME)
        else:
            self.snapshot = snap = self.chat.snapshot()
            self.marks = self.app.runtime.peer_marks(snap.info.id)
            self.show_tree()
            self.chat_view.hops = self.marks.labels
            self.chat_view.senders = self.app.runtime.names()
            await self.chat_view.show(
                snap.history, positions=snap.positions, covered=snap.covered, empty_text=WELCOME
            )
        if focus_id is not None:
            view = self.chat_view.view_for(focus_id)
            if view is not None:
                view.focus(scroll_visible=False)
            else:
                self.chat_input.focus()
        self.update_title()
        await self.refresh_sidebar()
        self.app.after_chat_drawn(self)

    def update_title(self) -> None:
        """Chat name · agent · model, and what it is doing (replying, waiting for a peer)."""
        runtime = self.app.runtime
        if self.chat is None:
            name, agent = NEW_CHAT_NAME, runtime.agent(self.draft_agent)
            waiting = ""
        else:
            info = self.chat.info
            name, agent = info.name, runtime.agent(info.agent_id)
            waiting = runtime.status_line(info.id)
        parts = [one_line(name, 60)]
        if agent is not None:
            parts.append(f"agent {agent.name}")
        parts.append(self.model)
        if waiting:
            parts.append(waiting)
        if self.generating:
            parts.append("replying… (escape cancels)")
        title = clean(" · ".join(parts))
        if title != self._title:  # an update lays the screen out again: only on change
            self._title = title
            self.query_one("#chat-title", Static).update(Text(title))

    def redraw_tree(self) -> None:
        if self.chat is None:
            return
        snap = self.chat.snapshot()
        self.snapshot = snap
        self.marks = self.app.runtime.peer_marks(snap.info.id)
        self.show_tree()

    async def refresh_sidebar(self, *, blocks: bool = True) -> None:
        if not self.sidebar.display:
            return
        if blocks:
            session = self.chat.session if self.chat else None
            self.sidebar.show_blocks(
                await session.load_context()
                if session
                else await self.app.template_blocks(self.draft_agent)
            )
        self.sidebar.show_stats(await self.app.conversation_stats(self))

    # -- sending and turns ---------------------------------------------------------

    @on(ChatInput.Submitted, "#input")
    def send_from_input(self, event: ChatInput.Submitted) -> None:
        event.stop()
        if self.generating:
            self.notify("Still replying — press escape to cancel first.", severity="warning")
            return
        self.start_turn("send", text=event.text)

    def start_turn(self, kind: str, *, message_id: str | None = None, text: str = "") -> None:
        self._turn_notes = []
        self.generation = self.run_turn(kind, message_id, text)
        self.chat_input.set_class(True, "-busy")
        self.update_title()
        # The title says when the chat waits on a peer agent (set by another task).
        self._title_timer = self.set_interval(1.0, self.update_title)

    def ensure_chat(self, first_text: str) -> ChatState:
        if self.chat is None:
            name = one_line(first_text, 48) or NEW_CHAT_NAME
            agent = self.app.runtime.agent(self.draft_agent)
            model = self.draft_model or (agent.model if agent else None) or self.app.default_model
            info = self.app.manager.create(
                name, model=model, source="chatui", agent_id=agent.id if agent else None
            )
            self.chat = ChatState(self.app.runtime.manager_for(info.id), info.id)
            self.app.remember_chat(info.id)
        elif self.chat.info.name == NEW_CHAT_NAME and first_text.strip():
            self.app.manager.rename(self.chat.session_id, one_line(first_text, 48))
        return self.chat

    @work(exclusive=True, group="generation", exit_on_error=False)
    async def run_turn(self, kind: str, message_id: str | None, text: str) -> None:
        """Run one turn in the engine and show its events as they come."""
        finished = False
        failure: tuple[str, str] | None = None  # (text, title) shown once the turn is drawn
        try:
            chat = self.ensure_chat(text) if kind == "send" else self.chat
            assert chat is not None
            engine = self.app.engine_for(chat.session_id)
            if kind == "send":
                events = engine.send(chat.session_id, text, parent_id=chat.active_leaf)
            elif kind == "regenerate":
                assert message_id is not None
                events = engine.regenerate(chat.session_id, message_id)
            else:
                assert message_id is not None
                events = engine.edit(chat.session_id, message_id, text)
            # aclosing: a cancel that lands while an event is being drawn still closes
            # the engine's generator at once, so the partial reply is stored as cancelled.
            async with aclosing(events):
                async for event in events:
                    await self.show_event(event)
            finished = True
        except (sqlite3.Error, StoreError, OSError, PeeweeError) as exc:  # disk full, read-only
            self.app.log_error(exc)
            kept = (
                "Nothing you typed is lost: it is still in the input box."
                if self.chat_input.text
                else "Your message is saved; the reply may be cut short."
            )
            failure = (
                f"{exc}\n{kept} Fix the problem (free disk space, check the file's "
                "permissions) and press enter again.",
                "Could not save to the database",
            )
        except Exception as exc:  # a bug: say so, keep the app running
            self.app.log_error(exc)
            failure = (f"{type(exc).__name__}: {exc}", "Something went wrong (details in the log)")
        finally:
            self._streams.clear()
            self.chat_input.set_class(False, "-busy")
            if self._title_timer is not None:
                self._title_timer.stop()
                self._title_timer = None
            self.call_after_refresh(self.after_turn, finished, failure)

    async def after_turn(self, finished: bool, failure: tuple[str, str] | None = None) -> None:
        """Show the stored end state: a cancelled or failed turn is re-read from the store."""
        self.update_title()
        if self.chat is not None and not finished:
            await self.redraw()
        else:
            self.redraw_tree()  # once per turn: the final labels and marks
            await self.refresh_sidebar()
        if failure is not None:  # after the redraw, which would wipe it
            await self.chat_view.notice(failure[0], "error", title=failure[1])

    def _shown_leaf(self) -> str | None:
        ids = self.chat_view.shown_ids
        return ids[-1] if ids else None

    async def show_event(self, event: TurnEvent) -> None:
        """Turn one engine event into widget updates."""
        chat = self.chat
        assert chat is not None
        match event:
            case MessageStored(message=message):
                await self._show_stored(chat, message)
            case ReplyStarted(message=message):
                follows = message.parent_id == self._shown_leaf()
                chat.set_active(message.id)
                if follows:
                    view = await self.chat_view.start_reply(message)
                    self.redraw_tree()  # the user's message or tool results, and this reply
                else:
                    await self.redraw()
                    view = self.chat_view.view_for(message.id) or await self.chat_view.start_reply(
                        message
                    )
                    view.focus(scroll_visible=False)
                self._streams[message.id] = view
            case ReplyDelta(message_id=mid, text=text, kind="text"):
                view = self._streams.get(mid)
                if view is not None:
                    await view.append(text)
            case ReplyFinished(message=message):
                self._streams.pop(message.id, None)
                await self.chat_view.finish_reply(message)
            case MemoryChanged(labels=labels):
                await self.refresh_sidebar()
                for label in labels:
                    gauge = self.sidebar.gauge(label)
                    if gauge is not None:
                        gauge.add_class("-changed")
                        self.set_timer(1.5, lambda g=gauge: g.remove_class("-changed"))
            case UsageRecorded() | Compacted():
                if isinstance(event, Compacted):
                    await self.redraw()
                    for text, level in self._turn_notes:  # the redraw cleared them
                        await self.chat_view.notice(text, level)
                    # A context-length retry compacts mid-turn: stream into the new views.
                    self._streams = {
                        mid: view
                        for mid in self._streams
                        if (view := self.chat_view.view_for(mid)) is not None
                    }
                else:
                    await self.refresh_sidebar(blocks=False)
            case Notice(text=text, level=level):
                self._turn_notes.append((text, level))
                await self.chat_view.notice(text, level)
            case TurnFailed(title=title, detail=detail, hint=hint):
                body = "\n".join(p for p in (detail, hint) if p)
                await self.chat_view.notice(body, "error", title=title)

    async def _show_stored(self, chat: ChatState, message: Message) -> None:
        follows = message.parent_id == self._shown_leaf()
        chat.set_active(message.id)
        if message.role == "user":
            self.chat_input.clear()
            self.update_title()
        if follows:
            await self.chat_view.add_message(message)  # the tree follows with the reply
        else:
            await self.redraw()

    # -- cancelling ----------------------------------------------------------------

    def cancel_generation(self) -> bool:
        if not self.generating:
            return False
        self.workers.cancel_group(self, "generation")
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
        if action in ("regenerate", "edit") and self.generating:
            self.notify("Still replying — press escape to cancel first.", severity="warning")
            return
        if action == "goto":
            await self.follow_hop(message_id)
        elif action == "regenerate":
            self.start_turn("regenerate", message_id=message_id)
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
        if self.app.manager.get(session_id) is None:
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
        info = await self.app.manager.fork(self.chat.session_id, message_id, name)
        await self.open_chat(info.id)
        self.notify(f"Forked into a new chat: {name}")

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
        try:
            target = self.chat.switch_sibling(message_id, step)
        except UnknownMessageError:
            return
        if target is None:
            self.app.bell()
            self.notify("No other branch that way.", timeout=2)
            return
        await self.redraw()
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
