"""The main screen: message tree | chat pane | context sidebar. It composes and routes.

The chat itself — its messages, its stream, its input, its facts — is the
`ChatPane`'s. The screen places the panes (`PaneLayout`), hands the pane the
workspace's events of the chat it shows, draws the tree and the sidebar from
what the pane tells it (after each redraw, `TreeChanged`, `FactsChanged`), and
turns keys into commands (`ChatCommands`) and memory views (`MemoryViews`).

Design notes:
- The screen owns no reply. A send starts a job in the workspace; events of
  other chats only retitle the pane and, at their end, say so in a toast, so
  opening another chat never stops a reply.
- The tree and sidebar read nothing themselves: the pane's snapshot (kept up
  to date by the turn's events) and its facts (measured once per turn or
  redraw, by the rule F2 and auto-compaction use) are what they draw.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events, getters, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message as TextualMessage
from textual.screen import Screen

from widgets import (
    ChatInput,
    ChatView,
    ContextSidebar,
    FittingFooter,
    MessageTree,
    TokenGauge,
    one_line,
)

from ...core.chat_state import ChatSnapshot, ChatState
from ...core.events import JobEnded
from ...core.workspace import (
    ChatsChanged,
    ModelFactsChanged,
    ModelsListed,
    ToolApproval,
    ToolsChanged,
    UiState,
    Workspace,
    WorkspaceEvent,
)
from .. import css_cache
from ..chat_pane import NEW_CHAT_NAME, ChatPane
from ..chat_panes import ChatSidebar, ChatTree
from ..lean_compositor import LeanCompositor
from ..lean_layout import EchoFreeLayout
from ..memory_views import MemoryViews
from ..outage import SurvivesOutage
from ..panes import PaneLayout

if TYPE_CHECKING:
    from textual.command import Provider

    from .commands import ChatCommands

__all__ = ["MainScreen", "NEW_CHAT_NAME"]


def _chat_commands() -> type[Provider]:
    """The palette's chat entries (Textual calls this when the palette opens): the
    commands' module loads with its first use, not on the first frame (issue 23)."""
    from .commands import ChatCommandsProvider

    return ChatCommandsProvider


class MainScreen(SurvivesOutage, EchoFreeLayout, Screen[None]):
    """Tree, chat and sidebar for the open chat."""

    CSS_PATH = "main.tcss"
    AUTO_FOCUS = "#input"
    COMMANDS = {_chat_commands}
    BINDINGS = [
        # Not in the footer (the title says "escape cancels" while a reply is written):
        # the footer's keys fit 80 columns.
        Binding("escape", "escape", "Cancel reply", id="main.cancel", show=False),
        Binding("f2", "show_prompt", "Prompt", id="main.prompt", show=False),
        Binding("ctrl+n", "new_chat", "New chat", id="app.new_chat"),
        Binding("ctrl+s", "chats", "Chats", id="app.chats"),
        Binding("ctrl+f", "search", "Search", id="app.search"),
        Binding("ctrl+l", "choose_model", "Model", id="app.model"),
        Binding("ctrl+o", "attach", "Attach", id="app.attach", show=False),
        Binding("ctrl+b", "toggle_sidebar", "Sidebar", id="app.sidebar"),
        Binding("ctrl+t", "focus_tree", "Tree", id="app.tree"),
        Binding("f1", "help", "Help", id="app.help", show=False),
    ]

    class PanesChanged(TextualMessage):
        """The tree or the sidebar was shown or hidden; the app remembers it."""

        def __init__(self, tree: bool, sidebar: bool) -> None:
            super().__init__()
            self.tree = tree
            self.sidebar = sidebar

    class UiStateChanged(TextualMessage):
        """Something in `ui_state` changed (a width, a fold); the app saves it."""

    class FirstChatShown(TextualMessage):
        """The first chat is drawn: the app may start background work (LiteLLM's warm-up)."""

    class WorkspaceChanged(TextualMessage):
        """A model fact or another process's write (posted from the workspace's listener)."""

        def __init__(self, event: WorkspaceEvent) -> None:
            super().__init__()
            self.event = event

    tree = getters.query_one("#tree", ChatTree)  # type: ignore[assignment]  # shadows DOMNode.tree (Rich's debug tree), never used here
    pane = getters.query_one("#center", ChatPane)
    chat_view = getters.query_one("#chat", ChatView)
    sidebar = getters.query_one("#sidebar", ChatSidebar)
    chat_input = getters.query_one("#input", ChatInput)

    def __init__(
        self,
        workspace: Workspace,
        *,
        ui_state: UiState | None = None,
        first_chat: str | None = None,
    ) -> None:
        super().__init__()
        self._compositor = LeanCompositor()  # a reply's delta renders its own lines
        self.workspace = workspace
        self.ui_state = ui_state or UiState()
        """Pane widths and visibility, folds, recent models: read here, saved by the app
        when the screen says it changed (`PanesChanged`, `UiStateChanged`)."""
        self.first_chat = first_chat
        self._layout: PaneLayout | None = None
        self._unsubscribe = workspace.subscribe(self._heard)
        self._resumed = False
        self._commands: ChatCommands | None = None

    @property
    def commands(self) -> ChatCommands:
        """The keys' and the palette's commands, made on first use (their module is not
        on the first frame's import path, issue 23)."""
        if self._commands is None:
            from .commands import ChatCommands

            self._commands = ChatCommands(self)
        return self._commands

    def compose(self) -> ComposeResult:
        with Horizontal(id="panes"):
            yield ChatTree(self.ui_state, id="tree")
            yield ChatPane(
                self.workspace,
                recent_models=list(self.ui_state.recent_models),
                ui_state=self.ui_state,
                on_shown=self._pane_shown,
                id="center",
            )
            yield ChatSidebar(id="sidebar")
        yield FittingFooter()  # drops whole keys (f1 lists all) so it fits 80 columns

    async def on_mount(self) -> None:
        self._layout = PaneLayout(
            self,
            self.tree,
            self.sidebar,
            self.ui_state,
            home=self.chat_input.focus,
            on_change=self._panes_changed,
        )
        self._layout.arrange()
        self.memory = MemoryViews(self.pane)
        workspace = self.workspace
        info = workspace.newest_chat(self.first_chat)
        if info is not None and workspace.launch_model and info.model != workspace.launch_model:
            info = workspace.set_chat_model(info.id, workspace.launch_model)  # --model
        if info is None:
            # Nothing stored (a first start, an empty database): the new chat's screen
            # costs no read, so it is composed into the first frame instead of an empty
            # screen laid out and drawn ~40 ms before the same screen filled in.
            await self._open_first(None)
            return
        # Filled once mounted, not once settled: Textual paints on its own timer, and the
        # first frame does not wait for a long chat's read.
        self.call_later(self._open_first, info.id)

    def _on_screen_resume(self, event: events.ScreenResume) -> None:
        # The first resume comes right after the mount, which styled every widget with
        # the whole stylesheet (the app's sheets are read before the screen, and a
        # widget's default CSS is added before it is styled): Textual restyled all of
        # them again (half of the start's ~200 stylesheet applies, ~60 M instructions).
        # Classes changed since then restyled their nodes themselves.
        first = not self._resumed
        if first:
            self._resumed = True
            event.refresh_styles = False
        super()._on_screen_resume(event)
        if first:
            # The first screen is laid out and drawn (its frame is with the driver):
            # the stylesheets it parsed are kept for the next start, nothing waits.
            css_cache.save()

    def on_key(self, event: events.Key) -> None:
        """A printable key that reached the screen itself is typing. Keys pressed while
        the app starts are read before the input has the focus, and Textual hands a key
        to whatever is focused when it is read: nothing yet, so the screen."""
        box = self.chat_input
        if self.focused not in (None, box) or box.read_only or box.disabled:
            return  # another widget had it and let it through: not typing
        if event.is_printable and event.character:
            event.stop()
            event.prevent_default()
            box.insert(event.character)
            box.focus()

    async def _open_first(self, session_id: str | None) -> None:
        await self.pane.open_chat(session_id)
        self.post_message(self.FirstChatShown())

    def on_unmount(self) -> None:
        self._unsubscribe()

    @property
    def panes(self) -> PaneLayout:
        assert self._layout is not None, "the screen is not mounted"
        return self._layout

    # -- what tests and commands read of the chat on screen ---------------------------

    @property
    def chat(self) -> ChatState | None:
        return self._pane.chat if self._pane else None

    @property
    def snapshot(self) -> ChatSnapshot | None:
        return self._pane.snapshot if self._pane else None

    @property
    def session_id(self) -> str | None:
        return self._pane.session_id if self._pane else None

    @property
    def generating(self) -> bool:
        return self._pane is not None and self._pane.generating

    @property
    def _pane(self) -> ChatPane | None:
        """The chat pane once composed (None before)."""
        found = self.query(ChatPane)
        return found.first() if found else None

    # -- the workspace's events ----------------------------------------------------------

    def _heard(self, event: WorkspaceEvent) -> None:
        """The workspace's listener (on the event loop, synchronously): the chat on
        screen's events go to its pane as they come; the rest become messages."""
        if isinstance(
            event, ModelFactsChanged | ModelsListed | ChatsChanged | ToolsChanged | ToolApproval
        ):
            self.post_message(self.WorkspaceChanged(event))
        elif event.session_id == self.pane.session_id:
            self.pane.heard(event)
        elif isinstance(event, JobEnded):
            self.post_message(self.WorkspaceChanged(event))

    @on(WorkspaceChanged)
    async def _workspace_changed(self, message: WorkspaceChanged) -> None:
        message.stop()
        event = message.event
        pane = self.pane
        if isinstance(event, ModelFactsChanged):
            if event.model == pane.model:
                await pane.remeasure()
        elif isinstance(event, ToolsChanged):  # a server's tools joined or left: the gauge
            await pane.remeasure()
        elif isinstance(event, ToolApproval):
            self.ask_approval(event)
        elif isinstance(event, ModelsListed):
            from .model_picker import ModelPicker  # loaded by the picker's first showing

            picker = self.app.screen
            if isinstance(picker, ModelPicker):
                picker.update_choices(
                    self.workspace.model_choices(picker.current, pane.recent_models, ask=False)
                )
        elif isinstance(event, ChatsChanged):
            # Another process wrote: the chat on screen is read again if it is one of
            # them (one replying here is left to its stream: this process writes it); a
            # shared memory namespace ("global") changed: its facts are measured again.
            if pane.chat is not None and pane.session_id in event.session_ids:
                if not pane.generating:
                    pane.chat.follow_growth()
                    await pane.redraw()
            elif any(
                self.workspace.chat(i, include_deleted=True) is None for i in event.session_ids
            ):
                await pane.remeasure()
            pane.update_title()
        elif isinstance(event, JobEnded):  # another chat's reply ended
            pane.update_title()
            info = self.workspace.chat(event.session_id)
            if info is None:
                return
            name = one_line(info.name, 40)
            if event.outcome == "finished":
                self.notify(f"“{name}” has its reply.", timeout=3)
            elif event.failure is not None:
                self.notify(f"The reply in “{name}” failed: {event.failure[1]}", severity="warning")

    def ask_approval(self, request: ToolApproval) -> None:
        """A tool call waits for the person (any chat's: the dialog names it)."""
        if request.future.done():  # withdrawn before the dialog could open
            return
        from .tool_approval import ToolApprovalScreen

        info = self.workspace.chat(request.session_id, include_deleted=True)
        self.app.push_screen(ToolApprovalScreen(request, info.name if info else "a new chat"))

    # -- the tree and the sidebar follow the pane --------------------------------------

    async def _pane_shown(self, *, tree: bool = True, facts: bool = True) -> None:
        """The pane drew a chat: the tree and the sidebar, from the same reading (after
        a batch of a turn's events: those of them that changed)."""
        if tree:
            self.show_tree()
        if facts:
            await self.sidebar.show_facts(self.pane.facts, self.pane.snapshot)

    @on(ChatPane.TreeChanged)
    def _tree_changed(self, message: ChatPane.TreeChanged) -> None:
        message.stop()
        self.show_tree()

    @on(ChatPane.FactsChanged)
    async def _facts_changed(self, message: ChatPane.FactsChanged) -> None:
        message.stop()
        await self.sidebar.show_facts(self.pane.facts, self.pane.snapshot)
        self.sidebar.flash(message.labels)

    def show_tree(self) -> None:
        pane = self.pane
        self.tree.show_chat(pane.snapshot, pane.marks.labels, pane.model, pane.live_text())

    # -- the tree's messages -------------------------------------------------------------

    @on(MessageTree.ActionRequested)
    async def _tree_action(self, event: MessageTree.ActionRequested) -> None:
        event.stop()
        await self.act_from_tree(event.message_id, event.action)

    async def act_from_tree(self, message_id: str, action: str) -> None:
        target = await self.pane.actions.act(message_id, action)
        if target is not None:
            self.tree.select_message(target)
            await self.chat_view.reveal(target, focus=False)

    @on(MessageTree.BranchSelected)
    async def _branch_selected(self, event: MessageTree.BranchSelected) -> None:
        event.stop()
        if await self.pane.actions.select_branch(event.message_id):
            self.tree.select_message(event.message_id)

    @on(MessageTree.FoldsChanged)
    def _folds_changed(self, event: MessageTree.FoldsChanged) -> None:
        event.stop()  # the tree remembered them in `ui_state`: the app saves it
        self.post_message(self.UiStateChanged())

    @on(MessageTree.Highlighted)
    async def _tree_highlighted(self, event: MessageTree.Highlighted) -> None:
        """The chat follows the tree's cursor along the path on screen (a live preview)."""
        event.stop()
        if event.message_id in self.chat_view.shown_ids:
            await self.chat_view.reveal(event.message_id, focus=False)

    @on(MessageTree.LeaveRequested)
    def _tree_left(self, event: MessageTree.LeaveRequested) -> None:
        event.stop()
        if not self.panes.close_drawer():
            self.chat_input.focus()

    @on(MessageTree.ResizeRequested)
    @on(ContextSidebar.ResizeRequested)
    def _resize(self, event: MessageTree.ResizeRequested | ContextSidebar.ResizeRequested) -> None:
        event.stop()
        self.panes.resize(
            "tree" if isinstance(event, MessageTree.ResizeRequested) else "sidebar", event.step
        )

    def show_search_hit(self, message_id: str) -> None:
        """After a search opened this chat at a hit: mark it in the tree, and when a
        summary hides it, open the originals at it."""
        self.tree.mark_hit(message_id)
        snap = self.pane.snapshot
        if snap is None or self.chat_view.view_for(message_id) is not None:
            return
        for summary_id, covered in snap.covered.items():
            if any(m.id == message_id for m in covered):
                self.pane.actions.show_originals(summary_id, hit=message_id)
                return

    # -- the sidebar's gauges and the layout ------------------------------------------------

    @on(TokenGauge.Opened)
    async def _gauge_opened(self, event: TokenGauge.Opened) -> None:
        event.stop()
        if event.gauge.id == "conversation-gauge":
            self.memory.show_prompt()
        else:
            await self.memory.open_block(event.label)

    def on_resize(self, event: events.Resize) -> None:
        if self._layout is not None:
            self._layout.arrange()

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        if self._layout is not None:
            self._layout.blurred(event.widget)

    def _panes_changed(self) -> None:
        state = self.ui_state
        self.post_message(self.PanesChanged(state.show_tree, state.show_sidebar))
        self.post_message(self.UiStateChanged())

    # -- keys ------------------------------------------------------------------------------

    def action_escape(self) -> None:
        if not self.panes.close_drawer() and not self.pane.cancel():
            self.chat_input.focus()

    def action_show_prompt(self) -> None:
        self.memory.show_prompt()

    async def action_new_chat(self) -> None:
        if self.app.screen is self:
            await self.commands.new_chat()

    def action_chats(self) -> None:
        self.commands.chats()

    def action_search(self) -> None:
        self.commands.search()

    def action_choose_model(self) -> None:
        self.commands.choose_model()

    def action_attach(self) -> None:
        self.commands.attach()

    def action_help(self) -> None:
        self.commands.help()

    def action_toggle_sidebar(self) -> None:
        self.toggle_sidebar()

    def action_focus_tree(self) -> None:
        if self.app.screen is self:
            self.panes.focus_tree()

    def action_toggle_tree(self) -> None:
        self.toggle_tree()

    def toggle_sidebar(self) -> None:
        self.panes.toggle("sidebar")

    def toggle_tree(self) -> None:
        self.panes.toggle("tree")
