"""The tree and the sidebar as the main screen composes them: `MessageTree` and
`ContextSidebar` that know how to draw the open chat (`ChatPane`'s snapshot and facts);
and the chat pane's title line.

Data in, messages out, as their widgets: `ChatTree` draws the chat's tree with
its remembered folds and opens itself full screen (`z`), whose choice comes
back as the tree's own messages; `ChatSidebar` draws the chat's facts — the
blocks the next request renders, and its whole size against the window.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.cells import cell_len, set_cell_size
from rich.text import Text
from textual.widgets import Static

from widgets import ContextSidebar, ConversationStats, MessageTree, clean, update_in_place

if TYPE_CHECKING:
    from ..core.chat_state import ChatSnapshot
    from ..core.workspace import ChatFacts, UiState

__all__ = ["ChatSidebar", "ChatTitle", "ChatTree"]

CHANGED_FLASH = 1.5
"""Seconds a gauge stays marked after a tool wrote its block."""


class ChatTree(MessageTree):
    """The open chat's message tree (every branch), with the chat's remembered folds."""

    def __init__(self, ui_state: UiState, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ui_state = ui_state
        self._snapshot: ChatSnapshot | None = None
        self._marks: dict[str, str] = {}
        self._model: str | None = None

    def show_chat(
        self,
        snapshot: ChatSnapshot | None,
        marks: Mapping[str, str],
        model: str,
        live: Mapping[str, str],
    ) -> None:
        """Draw `snapshot`'s tree: `marks` label the messages that crossed to other chats;
        `live` are the replies being written, with their text so far."""
        self._snapshot, self._marks, self._model = snapshot, dict(marks), model
        if snapshot is None:
            self.show([], None)
            return
        self.show(
            snapshot.tree,
            snapshot.active_leaf,
            marks,
            chat_model=model,
            unfolded=self.ui_state.tree_unfolded.get(snapshot.info.id, ()),
            live=live,
        )

    def on_message_tree_folds_changed(self, event: MessageTree.FoldsChanged) -> None:
        """Folds are remembered per chat (the app saves UI state when told)."""
        if self._snapshot is not None:
            self.ui_state.remember_unfolded(self._snapshot.info.id, event.unfolded)

    def on_message_tree_zoom_requested(self, event: MessageTree.ZoomRequested) -> None:
        """The tree full screen; enter there shows a branch, the message keys act as
        here: its choice comes back as this tree's own messages."""
        event.stop()
        from .screens.tree import TreeScreen

        snap = self._snapshot
        if snap is None:
            return
        session_id = snap.info.id

        def remember(keys: frozenset[str]) -> None:
            self.ui_state.remember_unfolded(session_id, keys)
            self.post_message(self.FoldsChanged(keys))

        def done(result: tuple[str, str] | None) -> None:
            if self._snapshot is None or self._snapshot.info.id != session_id:
                return  # another chat is shown by now
            self.show_chat(self._snapshot, self._marks, self._model or "", {})
            if result is None:
                return
            action, message_id = result
            if action == "select":
                self.post_message(self.BranchSelected(message_id))
            else:
                self.post_message(self.ActionRequested(message_id, action))

        screen = TreeScreen(
            snap.tree,
            snap.active_leaf,
            self._marks,
            chat_model=self._model,
            unfolded=self.ui_state.tree_unfolded.get(session_id, ()),
            cursor=self.cursor_message_id,
            title=snap.info.name,
            remember_folds=remember,
        )
        self.app.push_screen(screen, done)


class ChatSidebar(ContextSidebar):
    """The open chat's memory gauges and its next request's size, from its facts."""

    async def show_facts(
        self, facts: ChatFacts | None, snapshot: ChatSnapshot | None, *, blocks: bool = True
    ) -> None:
        """Draw the chat's facts (even hidden: shown, it is up to date at once)."""
        if facts is None:
            return
        if blocks:
            await self.show_blocks(facts.blocks)
        usage, info = facts.usage, facts.info
        self.show_stats(
            ConversationStats(
                tokens=usage.tokens,
                window=usage.window,
                window_source=usage.source,
                counted=_counted(usage.exact, usage.counted_by),
                model=f"{facts.model.model} ({facts.model.why})",
                input_tokens=info.input_tokens if info else 0,
                output_tokens=info.output_tokens if info else 0,
                cost=info.cost if info else 0.0,
                compactions=snapshot.compactions if snapshot else 0,
                compact_at=facts.compact_at,
            )
        )

    def flash(self, labels: tuple[str, ...]) -> None:
        """Mark the gauges of blocks a tool just wrote, for a moment."""
        for label in labels:
            gauge = self.gauge(label)
            if gauge is not None:
                gauge.add_class("-changed")
                self.set_timer(CHANGED_FLASH, lambda g=gauge: g.remove_class("-changed"))


def _counted(exact: bool, by: str) -> str:
    """How the sidebar's figure was made: estimated, or counted (and by whom)."""
    if not exact:
        return "estimated"
    return {"server": "exact (server's count)", "tokenizer": "exact (model's tokenizer)"}.get(
        by, "exact"
    )


class ChatTitle(Static):
    """The chat pane's title line: the chat, its agent and model, what it is doing.

    The chat's name gives way first: it is cut to leave room for what follows (the
    model, "replying… (escape cancels)"), which a long name would otherwise push
    off the line. The tree shows the name too."""

    MIN_NAME = 12
    """Cells the name keeps however narrow the line."""
    MIN_MIDDLE = 12
    """Cells the model (and agent) keep; past both minimums the line's end is cut."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self._parts: list[str] = []
        self._said = ""

    def say(self, parts: list[str]) -> None:
        """Show `parts` joined: the name first, what the chat is doing last."""
        self._parts = list(parts)
        title = self._fitted(self.content_size.width)
        if title != self._said:  # only on change, and one line: no layout
            self._said = title
            update_in_place(self, Text(title))

    def on_resize(self) -> None:
        if self._parts:
            self.say(self._parts)

    def _fitted(self, width: int) -> str:
        """The parts joined, cut to `width`: the name gives way first, then the model
        (both are shown elsewhere: the tree, each reply's header), never the last part."""
        parts = [clean(part) for part in self._parts]
        title = " · ".join(parts)
        over = cell_len(title) - width
        if not width or len(parts) < 2 or over <= 0:
            return title
        name, *middle, last = parts
        name, over = _shortened(name, over, self.MIN_NAME)
        if middle and over > 0:
            joined, over = _shortened(" · ".join(middle), over, self.MIN_MIDDLE)
            middle = [joined]
        return " · ".join([name, *middle, last])


def _shortened(text: str, over: int, keep: int) -> tuple[str, int]:
    """`text` cut by up to `over` cells (to no fewer than `keep`, an ellipsis last), and
    the cells still over."""
    width = cell_len(text)
    target = max(width - over, keep)
    if target >= width:
        return text, over
    cut = set_cell_size(text, target - 1).rstrip() + "…"
    return cut, over - (width - cell_len(cut))
