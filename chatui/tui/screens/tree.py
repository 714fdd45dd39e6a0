"""The tree full screen (z in the tree pane): big trees, with the focused message beside."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from rich.console import Group, RenderableType
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from store import Message
from widgets import MessageTree, clean, looks_like_markdown, one_line

from ..outage import SurvivesOutage

__all__ = ["TreeScreen"]

KEYS_HINT = (
    "↑↓ jk move · ←→ hl parent/child · [ ] siblings · enter show branch · space fold · "
    "ctrl+r e f regenerate/edit/fork · z q esc back"
)


class TreeScreen(SurvivesOutage, Screen[tuple[str, str] | None]):
    """The whole tree of one chat; dismisses with ("select" or an action, message id)."""

    CSS_PATH = "tree.tcss"
    BINDINGS = [
        Binding("q,z", "dismiss", "Back", id="tree-screen.close"),
    ]

    def __init__(
        self,
        messages: Sequence[Message],
        active_leaf: str | None,
        hops: Mapping[str, str] | None = None,
        *,
        chat_model: str | None = None,
        unfolded: Collection[str] = (),
        cursor: str | None = None,
        title: str = "",
        remember_folds: Callable[[frozenset[str]], None] | None = None,
    ) -> None:
        super().__init__()
        self._messages = list(messages)
        self._by_id = {m.id: m for m in self._messages}
        self._leaf = active_leaf
        self._hops = dict(hops or {})
        self._chat_model = chat_model
        self._unfolded = set(unfolded)
        self._cursor = cursor
        self._title = title
        self._remember = remember_folds

    def compose(self) -> ComposeResult:
        count = len(self._messages)
        yield Static(
            Text(one_line(f"{self._title} · {count:,} message{'s' if count != 1 else ''}", 200)),
            id="tree-title",
        )
        with Horizontal():
            yield MessageTree(id="big-tree")
            with VerticalScroll(id="tree-preview"):
                yield Static("", id="tree-preview-text")
        # A fixed hint line, not a Footer: a Footer of this many keys costs more to
        # mount than the whole tree (a 2,000-message tree opens in a third of the time).
        yield Static(Text(KEYS_HINT), id="tree-keys")

    def on_mount(self) -> None:
        tree = self.query_one(MessageTree)
        tree.show(
            self._messages,
            self._leaf,
            self._hops,
            chat_model=self._chat_model,
            unfolded=self._unfolded,
        )
        if self._cursor:
            tree.select_message(self._cursor)
        tree.focus()
        self._preview(tree.cursor_message_id)

    def _preview(self, message_id: str | None) -> None:
        message = self._by_id.get(message_id or "")
        preview: RenderableType = Text()
        if message is not None:
            heading = Text(f"{message.role}", "bold")
            model = message.metadata.get("model")
            if model and message.role == "assistant":
                heading.append(f" · {clean(str(model))}")
            if message.created_at is not None:
                heading.append(f" · {message.created_at.astimezone():%Y-%m-%d %H:%M}")
            heading.append("\n")
            preview = Group(heading, self._words(clean(message.text)))
        self.query_one("#tree-preview-text", Static).update(preview)

    def _words(self, text: str) -> RenderableType:
        """The message as the chat draws it: Markdown rendered, not its marks."""
        if not text:
            return Text("(no text)")
        if not looks_like_markdown(text):
            return Text(text)
        # Imported here as the chat does: markdown-it loads on first use.
        from rich.markdown import Markdown

        theme = "monokai" if self.app.current_theme.dark else "default"
        return Markdown(text, code_theme=theme, hyperlinks=False)

    @on(MessageTree.Highlighted)
    def highlighted(self, event: MessageTree.Highlighted) -> None:
        event.stop()
        self._preview(event.message_id)

    @on(MessageTree.FoldsChanged)
    def folds_changed(self, event: MessageTree.FoldsChanged) -> None:
        event.stop()
        if self._remember is not None:
            self._remember(event.unfolded)

    @on(MessageTree.BranchSelected)
    def selected(self, event: MessageTree.BranchSelected) -> None:
        event.stop()
        self.leave_with(("select", event.message_id))

    @on(MessageTree.ActionRequested)
    def action_requested(self, event: MessageTree.ActionRequested) -> None:
        event.stop()
        self.leave_with((event.action, event.message_id))

    @on(MessageTree.LeaveRequested)
    @on(MessageTree.ZoomRequested)
    def leave(self, event: MessageTree.LeaveRequested | MessageTree.ZoomRequested) -> None:
        event.stop()
        self.leave_with(None)

    @on(MessageTree.ResizeRequested)
    def no_resize(self, event: MessageTree.ResizeRequested) -> None:
        event.stop()  # the full screen has no pane width to change

    async def action_dismiss(self, result: tuple[str, str] | None = None) -> None:
        self.leave_with(result)

    def leave_with(self, result: tuple[str, str] | None) -> None:
        """Dismiss once. Keys typed quickly (`z z`, `z q`, `z esc`) reach this screen
        before the first dismiss has taken it off the stack; a second dismiss would pop
        the main screen (ScreenStackError, exit 1, the streaming reply lost)."""
        if self.app.screen is not self:
            return
        self.dismiss(result)
