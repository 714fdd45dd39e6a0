"""`ChatView`: the active path of a chat, newest at the bottom, streaming in place.

Long chats mount only the newest `page_size` messages; earlier ones are
mounted a page at a time when the user scrolls to the top (or a search hit
asks for one), so opening a 2,000-message chat costs the same as a short one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from rich.text import Text
from textual import events
from textual.containers import VerticalScroll
from textual.geometry import Region, Size
from textual.layout import DockArrangeResult
from textual.scrollbar import ScrollBar
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from store import Message

from .kept_lines import KeptLines
from .message_view import MessageView, ReplyStream
from .sanitize import clean

__all__ = ["ChatView", "ChatNotice"]


@dataclass
class _Item:
    message: Message
    tool_results: list[Message] = field(default_factory=list)


class ChatNotice(Static):
    """A note in the chat pane that is not a message: an error, a hint, a welcome."""

    DEFAULT_CSS = """
    ChatNotice {
        margin: 0 1 1 1;
        padding: 0 1;
        border: round $primary 50%;
        color: $text-muted;
    }
    ChatNotice.-warning { border: round $warning; color: $text; }
    ChatNotice.-error { border: round $error; color: $text; }
    """

    def __init__(
        self, text: str, level: str = "info", *, title: str | None = None, id: str | None = None
    ) -> None:
        body = Text()
        if title:
            body.append(clean(title) + "\n", "bold")
        body.append(clean(text))
        super().__init__(body, id=id, classes=f"-{level}")
        self.level = level
        self.plain = (f"{title}\n" if title else "") + text


class _KeptScrollBar(ScrollBar):
    """The chat's scrollbar: a line is drawn again only when what it shows changed."""

    def __init__(
        self, vertical: bool = True, name: str | None = None, *, thickness: int = 1
    ) -> None:
        super().__init__(vertical, name, thickness=thickness)
        self._kept = KeptLines()

    def render_lines(self, crop: Region) -> list[Strip]:
        return self._kept.render(self, crop, super().render_lines)


class _EarlierMarker(Static):
    DEFAULT_CSS = """
    _EarlierMarker { color: $text-muted; text-align: center; margin-bottom: 1; }
    """


class ChatView(VerticalScroll, can_focus=False):
    """Shows one path of messages; tool messages fold into the reply that called them."""

    DEFAULT_CSS = """
    ChatView { height: 1fr; padding: 1 1 0 1; }
    """

    MOUNTED_PAGES = 4
    """Pages of message views a chat mounts as it grows, at most, while the user follows
    its end: every layout of a send arranges each of them."""
    KEPT_PAGES = 2
    """Pages left mounted when the oldest are let go (scrolling up mounts them again)."""

    def __init__(
        self,
        *,
        page_size: int = 12,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.page_size = page_size
        self._items: list[_Item] = []
        self._first_shown = 0
        self._positions: Mapping[str, tuple[int, int]] = {}
        self._covered: Mapping[str, Sequence[Message]] = {}
        self.hops: Mapping[str, str] = {}
        """Message id → where it crossed to another chat ("from B", "asked B")."""
        self.senders: Mapping[str, str] = {}
        """Agent id → name: a message another agent sent is labelled with its name."""
        self.notes: Mapping[str, Sequence[tuple[str, str]]] = {}
        """Message id → (title, text) notes of its siblings' branches, shown collapsed."""
        self.type_into: Callable[[str], None] | None = None
        """Where typing on a focused message goes (`MessageView.type_into`)."""
        self._live: Mapping[str, str] = {}
        self._streams: Mapping[str, ReplyStream] = {}
        self._lock = asyncio.Lock()
        """Mounting and removing never interleave (two `show`s at once would mount two
        "earlier" markers: DuplicateIds)."""
        self._asked: list[Widget] = []
        """Where the moves of one run of keys came from, then each place they sent the
        focus (`step_focus`)."""
        self._own_lines = KeptLines()
        """Its own lines last drawn (`render_lines`), with what they were drawn from."""
        self._unmapped: list[MessageView] = []
        """The views marked far in its last arrangement (`_mark_far_views`)."""

    def on_mount(self) -> None:
        self.watch(self.screen, "focused", self._focus_moved, init=False)

    def render_lines(self, crop: Region) -> list[Strip]:
        # Its own lines are its background and padding around the messages: Textual
        # throws them away in every layout of a send (a message mounted, a reply's new
        # line) and drew all of them again, and cut them up, in the layout's frame
        # (~2 ms a layout). Kept while what they are drawn from is the same.
        return self._own_lines.render(self, crop, super().render_lines)

    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        # Every view is whole while the chat arranges them: a view's height is its
        # children's (`is_container`), and a far one was measured as one line.
        for view in self._unmapped:
            view.unmapped = False
        self._unmapped = []
        arrangement = super().arrange(size, optimal)
        if MessageView.arranging:
            self._mark_far_views(arrangement, size)
        return arrangement

    def _mark_far_views(self, arrangement: DockArrangeResult, size: Size) -> None:
        """Mark the message views more than a viewport above or below the one shown
        (`MessageView.unmapped`): the compositor places them but not their children.

        Every layout of a send placed every widget of every mounted message (up to
        `MOUNTED_PAGES` pages, three or more widgets each), and sized each, though a
        long sitting shows a tenth of them: with 48 views mounted, 160 widgets placed a
        layout for the 44 on screen. Scrolling arranges the chat again from the new
        offset before it draws, so a view coming near is placed whole first. A view
        holding the focus stays whole (a child left out of the map is blurred)."""
        total = arrangement.spatial_map.total_region
        if self._anchored and not self._anchor_released:
            top = total.bottom - size.height  # where the compositor scrolls it next
        else:
            top = round(self.scroll_offset.y)
        near = Region(0, top - size.height, max(size.width, total.right), size.height * 3)
        focused = self.screen.focused if self.is_attached else None
        holding = set(focused.ancestors_with_self) if focused is not None else ()
        for placement in arrangement.placements:
            view = placement.widget
            if isinstance(view, MessageView):
                if not placement.region.overlaps(near) and view not in holding:
                    view.unmapped = True
                    self._unmapped.append(view)

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        # Textual's own (8.2), with a scrollbar that keeps its lines: sized again in
        # every layout of a send, it drew its 35 lines again (~1.3 ms), its thumb
        # having moved by an eighth of a cell on one or two of them.
        if self._vertical_scrollbar is None:
            bar = _KeptScrollBar(
                vertical=True, name="vertical", thickness=self.scrollbar_size_vertical
            )
            bar.display = False
            self._vertical_scrollbar = bar
            self.app._start_widget(self, bar)
        return self._vertical_scrollbar

    # -- whole path -------------------------------------------------------------

    @staticmethod
    def _group(history: Sequence[Message]) -> list[_Item]:
        items: list[_Item] = []
        for message in history:
            if (
                message.role == "tool"
                and items
                and items[-1].message.role == "assistant"
                and items[-1].message.tool_calls
            ):
                items[-1].tool_results.append(message)
            else:
                items.append(_Item(message))
        return items

    def _view(self, item: _Item) -> MessageView:
        message = item.message
        live = self._live.get(message.id)
        if live is not None:  # being written now: the text streamed so far, drawn streaming
            others = [p for p in message.parts if p.get("type") != "text"]
            message = replace(message, parts=[*others, {"type": "text", "text": live}])
        return MessageView(
            message,
            position=self._positions.get(message.id, (1, 1)),
            tool_results=item.tool_results,
            covered=self._covered.get(message.id, ()),
            hop=self.hops.get(message.id),
            sender=self.senders.get(message.from_agent_id or ""),
            notes=self.notes.get(message.id, ()),
            streaming=live is not None,
            stream=self._streams.get(message.id),
        ).typing_to(self.type_into)

    async def show(
        self,
        history: Sequence[Message],
        *,
        positions: Mapping[str, tuple[int, int]] | None = None,
        covered: Mapping[str, Sequence[Message]] | None = None,
        empty_text: str | None = None,
        live: Mapping[str, str] | None = None,
        streams: Mapping[str, ReplyStream] | None = None,
    ) -> None:
        """Replace what is shown by `history` (root → leaf).

        Args:
            positions: message id → (index, count) among its siblings.
            covered: compaction message id → the original messages it stands for.
            empty_text: a note to show when there are no messages.
            live: message id → text so far, of replies being written (drawn streaming).
            streams: message id → where a live reply's next texts come from.
        """
        async with self._lock:
            self._streams = streams or {}
            await self._show(history, positions, covered, empty_text, live)

    async def _show(
        self,
        history: Sequence[Message],
        positions: Mapping[str, tuple[int, int]] | None,
        covered: Mapping[str, Sequence[Message]] | None,
        empty_text: str | None,
        live: Mapping[str, str] | None,
    ) -> None:
        self._live = live or {}
        self._positions = positions or {}
        self._covered = covered or {}
        self._items = self._group(history)
        self._first_shown = max(len(self._items) - self.page_size, 0)
        with self.app.batch_update():
            await self.remove_children()
            widgets: list[Static | MessageView] = []
            if self._first_shown:
                widgets.append(self._marker())
            widgets.extend(self._view(i) for i in self._items[self._first_shown :])
            if not self._items and empty_text:
                widgets.append(ChatNotice(empty_text, id="empty-note"))
            if widgets:
                await self.mount_all(widgets)
        if self.size.height:
            self.scroll_end(animate=False, immediate=True)
            self.anchor()
        else:
            # Not laid out yet (drawn with the first frame): a scroll now measures no
            # height and hides the content until a frame later; anchor after the layout.
            self.call_after_refresh(self.anchor)

    def _marker(self) -> _EarlierMarker:
        return _EarlierMarker(
            f"↑ {self._first_shown} earlier message{'s' if self._first_shown != 1 else ''}"
            " — scroll up or press home to load them",
            id="earlier",
        )

    async def load_earlier(self, count: int | None = None) -> int:
        """Mount up to `count` (a page) more of the earlier messages; returns how many."""
        async with self._lock:
            return await self._load_earlier(count)

    async def _load_earlier(self, count: int | None = None) -> int:
        if not self._first_shown:
            return 0
        count = count or self.page_size
        start = max(self._first_shown - count, 0)
        new = [self._view(i) for i in self._items[start : self._first_shown]]
        self._first_shown = start
        marker = self.query("#earlier")
        anchor = self.children[1] if marker and len(self.children) > 1 else None
        with self.app.batch_update():
            if marker:
                await marker.remove()
            if new:
                await self.mount_all(new, before=0 if self.children else None)
            if self._first_shown:
                await self.mount(self._marker(), before=0)
        if anchor is not None:
            self.scroll_to_widget(anchor, animate=False, top=True)
        return len(new)

    def on_mouse_scroll_up(self, _: events.MouseScrollUp) -> None:
        if self.scroll_y <= 1 and self._first_shown:
            self.run_worker(self.load_earlier(), group="earlier", exclusive=True)

    def key_home(self) -> None:
        if self._first_shown:
            self.run_worker(self.load_earlier(self._first_shown), group="earlier", exclusive=True)
        self.scroll_home(animate=False)

    # -- moving between messages ------------------------------------------------

    def on_message_view_move_requested(self, event: MessageView.MoveRequested) -> None:
        """Focus the message before or after; earlier pages load at the top. Past the
        last message the event goes on up (the app puts the focus in its input)."""
        if event.step and self.step_focus(event.view, event.step):
            event.stop()

    def step_focus(self, origin: Widget, step: int) -> bool:
        """Move the focus `step` messages on from `origin` (a message, or the input
        below the last one); False when that is past the last message.

        Keys read together (a held arrow key, a terminal that sends them in one
        write) are all handed to the widget that had the focus when they were read;
        the focus moves after. A move from a widget the focus was already sent away
        from is therefore counted from where it was sent (`_asked`), so four ups
        move four messages, not one four times."""
        asked = self._asked
        if origin in asked[:-1]:
            base = asked[-1]
        else:
            base = origin
            asked = self._asked = [origin]
        views = self.views
        if not views:
            return True
        index = (views.index(base) if base in views else len(views)) + step
        if index >= len(views):
            self._asked = []
            return False
        if index >= 0:
            asked.append(views[index])
            views[index].focus()
            views[index].scroll_visible(animate=False)
        elif isinstance(base, MessageView):
            self._asked = []
            self.run_worker(self._focus_earlier(base), exclusive=True)
        return True

    def _focus_moved(self, focused: Widget | None) -> None:
        """The focus went somewhere no move sent it (a click, the input): the moves so
        far are over."""
        if focused not in self._asked[1:]:
            self._asked = []

    async def _focus_earlier(self, view: MessageView) -> None:
        if await self.load_earlier():
            views = self.views
            index = views.index(view)
            if index > 0:
                views[index - 1].focus()

    # -- lookups ----------------------------------------------------------------

    @property
    def views(self) -> list[MessageView]:
        # Its children, not a query: the views are mounted here, and a query walks and
        # matches every widget inside every view (a long chat's hundreds, on each event
        # of a streamed reply: CPU taken from a local model on the same cores).
        return [child for child in self.children if isinstance(child, MessageView)]

    def view_for(self, message_id: str) -> MessageView | None:
        for view in self.views:
            if view.message_id == message_id or any(t.id == message_id for t in view.tool_results):
                return view
        return None

    @property
    def shown_ids(self) -> list[str]:
        """Ids of the messages on the path, including those not mounted yet."""
        ids = []
        for item in self._items:
            ids.append(item.message.id)
            ids.extend(t.id for t in item.tool_results)
        return ids

    async def reveal(self, message_id: str, *, focus: bool = True) -> MessageView | None:
        """Mount earlier pages until the message is shown, then scroll it into view."""
        view = self.view_for(message_id)
        while view is None and self._first_shown:
            await self.load_earlier()
            view = self.view_for(message_id)
        if view is not None:
            self.release_anchor()
            self.call_after_refresh(self.scroll_to_widget, view, animate=False, top=True)
            if focus:
                view.focus(scroll_visible=False)
        return view

    # -- incremental updates ----------------------------------------------------

    async def _remove_empty_note(self) -> None:
        for note in [child for child in self.children if child.id == "empty-note"]:
            await note.remove()

    async def add_message(
        self,
        message: Message,
        position: tuple[int, int] = (1, 1),
        *,
        streaming: bool = False,
        stream: ReplyStream | None = None,
    ) -> MessageView:
        """Show a newly stored message at the end (tool results fold into their reply)."""
        async with self._lock:
            return await self._add_message(message, position, streaming=streaming, stream=stream)

    async def _add_message(
        self,
        message: Message,
        position: tuple[int, int],
        *,
        streaming: bool,
        stream: ReplyStream | None = None,
    ) -> MessageView:
        await self._remove_empty_note()
        views = self.views
        if (
            message.role == "tool"
            and views
            and views[-1].message.role == "assistant"
            and views[-1].message.tool_calls
        ):
            self._items[-1].tool_results.append(message)
            await views[-1].add_tool_results(message)
            return views[-1]
        item = _Item(message)
        self._items.append(item)
        view = MessageView(
            message,
            position=position,
            streaming=streaming,
            stream=stream,
            sender=self.senders.get(message.from_agent_id or ""),
        ).typing_to(self.type_into)
        following = self.is_vertical_scroll_end
        with self.app.batch_update():
            await self.mount(view)
            if following and len(views) + 1 > self.MOUNTED_PAGES * self.page_size:
                await self._unmount_oldest(len(views) + 1 - self.KEPT_PAGES * self.page_size)
        self.scroll_end(animate=False)
        return view

    async def _unmount_oldest(self, count: int) -> None:
        """Let go of the `count` oldest mounted messages (and the notes among them), as
        the chat was opened with them not yet mounted: a long sitting cost more CPU a
        send with every exchange (each layout arranged every message since the chat was
        opened). Not while the focus is on one of them (the user is reading it)."""
        views = self.views
        if count <= 0 or count >= len(views):
            return
        first_kept = views[count]
        gone = list(self.children[: self.children.index(first_kept)])
        focused = self.screen.focused
        if focused is not None and any(focused is w or w in focused.ancestors for w in gone):
            return
        self._first_shown += count
        await self.remove_children(gone)
        await self.mount(self._marker(), before=0)

    async def start_reply(
        self,
        message: Message,
        position: tuple[int, int] = (1, 1),
        *,
        stream: ReplyStream | None = None,
    ) -> MessageView:
        """Mount an empty reply that will stream from `stream`; keeps the view pinned to
        the bottom."""
        view = await self.add_message(message, position, streaming=True, stream=stream)
        self.anchor()
        return view

    async def finish_reply(self, message: Message) -> None:
        """Replace a streamed reply by its stored final form."""
        for item in self._items:
            if item.message.id == message.id:
                item.message = message
        view = self.view_for(message.id)
        if view is not None:
            await view.update_message(message)

    async def notice(
        self, text: str, level: str = "info", *, title: str | None = None
    ) -> ChatNotice:
        """Show an error, warning or hint at the end of the chat."""
        note = ChatNotice(text, level, title=title)
        async with self._lock:
            await self._remove_empty_note()
            await self.mount(note)
        self.scroll_end(animate=False)
        return note
