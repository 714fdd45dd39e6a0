"""The main screen's panes: widths, drawers at small sizes, and the tree's keys.

A mixin of `MainScreen`, kept apart so the screen module stays about chats
and turns. It reads the open chat only through `MainScreen.tree_source`.
"""

from __future__ import annotations

from textual import events

from widgets import ContextSidebar, MessageTree, TokenGauge

from ..panes import SIDEBAR_WIDTHS, TREE_WIDTHS, PanePlan, clamp_width, plan_panes

__all__ = ["PanesMixin"]


class PanesMixin:
    """Pane layout and tree handling for `MainScreen`.

    Handlers here go by Textual's naming convention (`on_message_tree_…`): `@on`
    only registers in classes Textual builds, and a mixin is not one.
    """

    _drawer: str | None = None
    """The pane open as a drawer over the chat ("tree", "sidebar"), if any."""
    plan: PanePlan | None = None

    # -- layout -------------------------------------------------------------------------

    def arrange_panes(self) -> None:
        """Place the panes for the screen's width (on mount, resize and any pane change)."""
        state = self.ui_state
        plan = plan_panes(
            self.size.width,
            tree_width=state.tree_width,
            sidebar_width=state.sidebar_width,
            show_tree=state.show_tree,
            show_sidebar=state.show_sidebar,
        )
        self.plan = plan
        if self._drawer == "tree" and plan.tree != "drawer":
            self._drawer = None
        if self._drawer == "sidebar" and plan.sidebar != "drawer":
            self._drawer = None
        for widget, mode, width, which in (
            (self.tree, plan.tree, plan.tree_width, "tree"),
            (self.sidebar, plan.sidebar, plan.sidebar_width, "sidebar"),
        ):
            widget.styles.width = width  # the user's remembered width, not a theme's
            widget.set_class(mode == "drawer", "-drawer")
            widget.display = mode == "beside" or (mode == "drawer" and self._drawer == which)

    def on_resize(self, event: events.Resize) -> None:
        self.arrange_panes()

    def open_drawer(self, which: str | None) -> None:
        self._drawer = which
        self.arrange_panes()

    @property
    def drawer_open(self) -> bool:
        return self._drawer is not None

    def close_drawer(self) -> bool:
        """Close an open drawer; False when none was open (escape then does its usual)."""
        if self._drawer is None:
            return False
        self.open_drawer(None)
        self.chat_input.focus()
        return True

    async def toggle_pane(self, which: str) -> None:
        """Show or hide a pane; a pane that is a drawer at this size opens or closes."""
        plan = self.plan
        mode = (plan.tree if which == "tree" else plan.sidebar) if plan else "beside"
        state = self.ui_state
        if mode == "drawer":
            self.open_drawer(None if self._drawer == which else which)
        elif which == "tree":
            state.show_tree = not state.show_tree
        else:
            state.show_sidebar = not state.show_sidebar
        self.arrange_panes()
        if which == "sidebar" and self.sidebar.display:
            await self.refresh_sidebar()
        if mode == "drawer" and self._drawer == which:
            # A drawer is opened to be used: the keys go to it (enter on a gauge, < >).
            target = self.tree if which == "tree" else self.sidebar
            gauges = list(self.sidebar.query(TokenGauge)) if which == "sidebar" else []
            (gauges[0] if gauges else target).focus()
        self.post_message(self.PanesChanged(state.show_tree, state.show_sidebar))

    def focus_tree(self) -> None:
        """The tree key: focus the tree (opening it if hidden); pressed in the tree, back."""
        if self.focused is self.tree:
            self.close_drawer() or self.chat_input.focus()
            return
        state = self.ui_state
        if not state.show_tree:
            state.show_tree = True
            self.post_message(self.PanesChanged(state.show_tree, state.show_sidebar))
        if self.plan is not None and self.plan.tree == "drawer":
            self._drawer = "tree"
        self.arrange_panes()
        self.tree.focus()

    def resize_pane(self, which: str, step: int) -> None:
        state = self.ui_state
        if which == "tree":
            state.tree_width = clamp_width(state.tree_width + step, TREE_WIDTHS)
        else:
            state.sidebar_width = clamp_width(state.sidebar_width + step, SIDEBAR_WIDTHS)
        self.arrange_panes()
        self.post_message(self.UiStateChanged())

    # -- the tree's messages ---------------------------------------------------------------

    def show_tree(self) -> None:
        """Draw the tree from the screen's snapshot, with the chat's remembered folds."""
        snap = self.snapshot
        if snap is None:
            self.tree.show([], None)
            return
        self.tree.show(
            snap.tree,
            snap.active_leaf,
            self.marks.labels,
            chat_model=self.model,
            unfolded=self.ui_state.tree_unfolded.get(snap.info.id, ()),
            live=self.workspace.jobs.live_messages(snap.info.id).keys(),
        )

    def on_message_tree_folds_changed(self, event: MessageTree.FoldsChanged) -> None:
        event.stop()
        if self.session_id is not None:
            self.ui_state.remember_unfolded(self.session_id, event.unfolded)
            self.post_message(self.UiStateChanged())

    async def on_message_tree_highlighted(self, event: MessageTree.Highlighted) -> None:
        """The chat follows the tree's cursor along the path on screen (a live preview)."""
        event.stop()
        if event.message_id in self.chat_view.shown_ids:
            await self.chat_view.reveal(event.message_id, focus=False)

    def on_message_tree_leave_requested(self, event: MessageTree.LeaveRequested) -> None:
        event.stop()
        self.close_drawer() or self.chat_input.focus()

    def on_message_tree_resize_requested(self, event: MessageTree.ResizeRequested) -> None:
        event.stop()
        self.resize_pane("tree", event.step)

    def on_context_sidebar_resize_requested(self, event: ContextSidebar.ResizeRequested) -> None:
        event.stop()
        self.resize_pane("sidebar", event.step)

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        # A drawer is a glance: it closes once focus leaves it.
        if self._drawer is not None and event.widget in (self.tree, self.sidebar):
            self.call_after_refresh(self._close_unfocused_drawer)

    def _close_unfocused_drawer(self) -> None:
        pane = self.tree if self._drawer == "tree" else self.sidebar
        if self._drawer is not None and (
            self.focused is None or pane not in self.focused.ancestors_with_self
        ):
            if self.app.screen is self:  # a dialog over the screen keeps it open
                self.open_drawer(None)

    def on_message_tree_zoom_requested(self, event: MessageTree.ZoomRequested) -> None:
        """The tree full screen; enter there shows a branch, r/e/f act as here."""
        event.stop()
        from .tree import TreeScreen

        snap = self.snapshot
        if snap is None:
            return
        session_id = snap.info.id

        def remember(keys: frozenset[str]) -> None:
            self.ui_state.remember_unfolded(session_id, keys)
            self.post_message(self.UiStateChanged())

        async def done(result: tuple[str, str] | None) -> None:
            self.show_tree()
            if result is None or self.session_id != session_id:
                return
            action, message_id = result
            if action == "select":
                await self.branch_selected(MessageTree.BranchSelected(message_id))
            else:
                await self.act(message_id, action, from_tree=True)

        screen = TreeScreen(
            snap.tree,
            snap.active_leaf,
            self.marks.labels,
            chat_model=self.model,
            unfolded=self.ui_state.tree_unfolded.get(session_id, ()),
            cursor=self.tree.cursor_message_id,
            title=snap.info.name,
            remember_folds=remember,
        )
        self.app.push_screen(screen, done)
