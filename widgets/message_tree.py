"""`MessageTree`: a chat's whole message tree, drawn like `git log --graph`.

The active path is one line of descent down lane 0 (filled glyphs); every
alternative forks off at its branch point with `├─` and shows at once
(hollow glyphs). Long linear runs fold to "… N messages" (enter or space
opens them). Only the lines on screen are drawn (Textual's Line API), so a
chat of thousands of messages opens and scrolls as fast as a short one.
The layout itself is `tree_layout.lay_out`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message as TextualMessage
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.timer import Timer

from store import Message, reply_state, reply_state_label
from store.text import plain

from .sanitize import clean, one_line
from .tree_layout import TreeEntry, TreeLayout, TreeRow, lay_out

__all__ = ["MessageTree", "TreeEntry", "preview"]

GLYPHS = {"user": ("●", "○"), "assistant": ("◆", "◇"), "tool": ("▪", "▫"), "system": ("■", "□")}
"""Role glyph (on the active path, off it)."""
STATUS_TEXT = {
    "writing": "writing…",
    "cancelled": "cancelled",
    "error": "error",
    "interrupted": "interrupted",
    "truncated": "truncated",
}
HIGHLIGHT_DELAY = 0.12
"""Seconds the cursor rests on a message before the chat scrolls to it (held keys glide)."""


def preview(message: Message, width: int = 60, *, state_shown: bool = False) -> str:
    """A one-line summary of a message for lists and trees (`state_shown`: the row
    names a failed reply's state already, so its summary says only why)."""
    text = message.text[: width * 8]  # enough to fill the line after whitespace collapses
    if not text.strip():
        calls = [p.get("tool_name", "?") for p in message.tool_calls]
        results = message.tool_results
        if calls:
            text = "called " + ", ".join(str(c) for c in calls)
        elif results:
            text = "; ".join(f"{r.get('tool_name', '?')} → {r.get('output', '')}" for r in results)
        elif (state := reply_state(message)) in ("error", "cancelled"):
            label = reply_state_label(message, state)  # failed with no text: say so
            if state_shown:  # "error (error — why…" would cut off the why
                label = label.removeprefix(f"{state} — ").removeprefix(f"{state} ")
            text = f"({label})"
        elif message.metadata.get("incomplete"):
            text = "(no text yet)"
        else:
            text = "(empty)"
    return one_line(plain(text), width)


class MessageTree(ScrollView, can_focus=True):
    """The message tree of one chat; enter on a message makes its branch active."""

    DEFAULT_CSS = """
    MessageTree {
        width: 36;
        overflow-x: hidden;
        overflow-y: auto;
        scrollbar-size-vertical: 1;
        border-right: vkey $foreground 10%;
        background: $surface;
        padding: 0 0 0 1;
    }
    MessageTree:focus { background-tint: $foreground 4%; }
    MessageTree > .message-tree--user { color: $accent; text-style: bold; }
    MessageTree > .message-tree--assistant { color: $primary; text-style: bold; }
    MessageTree > .message-tree--tool { color: $text-muted; }
    MessageTree > .message-tree--system { color: $text-muted; }
    MessageTree > .message-tree--lane { color: $foreground 35%; }
    MessageTree > .message-tree--path { color: $accent; text-style: bold; }
    MessageTree > .message-tree--off-path { color: $text-muted; }
    MessageTree > .message-tree--branch { color: $warning; text-style: bold; }
    MessageTree > .message-tree--leaf { text-style: bold underline; }
    MessageTree > .message-tree--hop { color: $secondary; text-style: italic; }
    MessageTree > .message-tree--status { color: $error; text-style: italic; }
    MessageTree > .message-tree--model { color: $text-muted; }
    MessageTree > .message-tree--fold { color: $text-muted; text-style: italic; }
    MessageTree > .message-tree--hit { background: $warning 35%; }
    MessageTree > .message-tree--cursor {
        background: $foreground 12%;
    }
    MessageTree:focus > .message-tree--cursor {
        color: $block-cursor-foreground;
        background: $block-cursor-background;
        text-style: bold;
    }
    """

    COMPONENT_CLASSES = {
        "message-tree--user",
        "message-tree--assistant",
        "message-tree--tool",
        "message-tree--system",
        "message-tree--lane",
        "message-tree--path",
        "message-tree--off-path",
        "message-tree--branch",
        "message-tree--leaf",
        "message-tree--hop",
        "message-tree--status",
        "message-tree--model",
        "message-tree--fold",
        "message-tree--hit",
        "message-tree--cursor",
    }

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", id="tree.up", show=False),
        Binding("down,j", "cursor(1)", "Down", id="tree.down", show=False),
        Binding("left,h", "parent", "Parent", id="tree.parent", show=False),
        Binding("right,l", "child", "Child", id="tree.child", show=False),
        Binding("left_square_bracket", "sibling(-1)", "‹ Sibling", id="tree.previous", show=False),
        Binding("right_square_bracket", "sibling(1)", "Sibling ›", id="tree.next", show=False),
        Binding("pageup", "page(-1)", "Page up", id="tree.page_up", show=False),
        Binding("pagedown", "page(1)", "Page down", id="tree.page_down", show=False),
        Binding("home", "jump(0)", "First", id="tree.first", show=False),
        Binding("end", "jump(-1)", "Last", id="tree.last", show=False),
        Binding("enter", "select", "Show branch", id="tree.select"),
        Binding("space", "toggle_fold", "Fold", id="tree.fold"),
        # As on a message: keys that spend tokens take ctrl.
        Binding("ctrl+r", "message('regenerate')", "Regenerate", id="tree.regenerate", show=False),
        Binding(
            "ctrl+w",
            "message('regenerate_with')",
            "Regenerate with…",
            id="tree.regenerate_with",
            show=False,
        ),
        Binding("ctrl+g", "message('continue')", "Continue", id="tree.continue", show=False),
        Binding("e", "message('edit')", "Edit", id="tree.edit", show=False),
        Binding("f", "message('fork')", "Fork", id="tree.fork", show=False),
        Binding("c", "message('copy')", "Copy", id="tree.copy", show=False),
        Binding("g", "message('goto')", "Go to peer chat", id="tree.goto", show=False),
        Binding("v", "message('compare')", "Compare siblings", id="tree.compare", show=False),
        Binding("z", "zoom", "Full screen", id="tree.zoom"),
        Binding("less_than_sign", "resize(-4)", "Narrower", id="tree.narrower", show=False),
        Binding("greater_than_sign", "resize(4)", "Wider", id="tree.wider", show=False),
        Binding("escape,i", "leave", "Back to input", id="tree.leave", show=False),
    ]

    class BranchSelected(TextualMessage):
        """The user chose a message: show the branch through it."""

        def __init__(self, message_id: str) -> None:
            super().__init__()
            self.message_id = message_id

    class ActionRequested(TextualMessage):
        """A key asked for an action on a message (regenerate, edit, fork, copy, goto)."""

        def __init__(self, message_id: str, action: str) -> None:
            super().__init__()
            self.message_id = message_id
            self.action = action

    class Highlighted(TextualMessage):
        """The cursor rested on a message (the chat can scroll to it)."""

        def __init__(self, message_id: str) -> None:
            super().__init__()
            self.message_id = message_id

    class FoldsChanged(TextualMessage):
        """The user opened or closed a fold; `unfolded` is every open run's key."""

        def __init__(self, unfolded: frozenset[str]) -> None:
            super().__init__()
            self.unfolded = unfolded

    class ZoomRequested(TextualMessage):
        """The user asked for the tree full screen."""

    class LeaveRequested(TextualMessage):
        """The user is done with the tree (escape): focus goes back to the input."""

    class ResizeRequested(TextualMessage):
        """Make the pane `step` columns wider (negative: narrower)."""

        def __init__(self, step: int) -> None:
            super().__init__()
            self.step = step

    def __init__(
        self,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.layout_ = TreeLayout()
        """The rows drawn now."""
        self.unfolded: set[str] = set()
        """Keys of the runs the user opened (the app remembers them per chat)."""
        self.hit: str | None = None
        """A search hit: highlighted, and never hidden in a fold."""
        self.cursor = 0
        """The row under the cursor."""
        self._messages: dict[str, Message] = {}
        self._strips: dict[tuple[object, ...], tuple[Message | None, Strip]] = {}
        """Rows drawn, by what they show (`render_line`); the message is kept with its
        strip, so that its id in the key is never another message's."""
        self._line_context: tuple[int, Style] | None = None
        """The width and base style of the lines `render_lines` is rendering."""
        self._line_looks: tuple[object, ...] | None = None
        """Their looks (`_looks`), read at the first line it draws."""
        self._row_styles: dict[str, Style] = {}
        """The rows' component styles (`_row_text`) for `_row_styles_for`."""
        self._row_styles_for: tuple[object, ...] | None = None
        self._hops: Mapping[str, str] = {}
        self._chat_model: str | None = None
        self._leaf: str | None = None
        self._live: frozenset[str] = frozenset()
        self._highlight_timer: Timer | None = None
        self._quiet = False
        """`show` is redrawing: the lines whose rows changed are repainted at its end."""

    # -- data in ----------------------------------------------------------------------

    @property
    def active_leaf(self) -> str | None:
        return self.layout_.active_leaf

    def show(
        self,
        messages: Sequence[Message],
        active_leaf: str | None,
        hops: Mapping[str, str] | None = None,
        *,
        chat_model: str | None = None,
        unfolded: Collection[str] | None = None,
        live: Collection[str] | Mapping[str, str] = (),
    ) -> None:
        """Redraw from every message of the chat and the active leaf.

        `live`: replies being written now (shown "writing"; others cut off show
        "interrupted"); a mapping gives their text so far, shown in their rows.

        The cursor stays on the message it was on; a new tree puts it on the leaf.
        """
        # The tree's base style and looks, read once for both sides of the comparison:
        # showing rows restyles nothing, and each read walks the tree's ancestors' styles
        # or its pseudo-classes (two or three shows a send).
        look = (self.rich_style, self._looks()) if self.is_mounted else None
        drawn = self._drawn_lines(look)
        self._quiet = drawn is not None
        try:
            self._show(messages, active_leaf, hops, chat_model, unfolded, live)
        finally:
            self._quiet = False
        if drawn is not None:
            self._repaint_changed(drawn, look)

    def _show(
        self,
        messages: Sequence[Message],
        active_leaf: str | None,
        hops: Mapping[str, str] | None,
        chat_model: str | None,
        unfolded: Collection[str] | None,
        live: Collection[str] | Mapping[str, str],
    ) -> None:
        kept = self.cursor_message_id
        self._messages = {m.id: m for m in messages}
        if isinstance(live, Mapping):
            for mid, text in live.items():
                known = self._messages.get(mid)
                if known is not None and text:
                    others = [p for p in known.parts if p.get("type") != "text"]
                    parts = [*others, {"type": "text", "text": text}]
                    self._messages[mid] = replace(known, parts=parts)
        self._hops = dict(hops or {})
        self._chat_model = chat_model
        self._leaf = active_leaf
        self._live = frozenset(live)
        if unfolded is not None:
            self.unfolded = set(unfolded)
        if self.hit not in self._messages:
            self.hit = None
        self._relayout()
        target = kept if kept in self._messages else self.active_leaf
        self.cursor = self.layout_.row_of.get(target, 0) if target else 0
        self._clamp_cursor(scroll=True)

    def _relayout(self) -> None:
        self.layout_ = lay_out(
            list(self._messages.values()),
            self._leaf,
            hops=self._hops,
            unfolded=self.unfolded,
            pinned={self.hit} if self.hit else (),
            chat_model=self._chat_model,
            live=self._live,
        )
        size = Size(1, len(self.layout_.rows))
        height = self.styles.height
        if self.is_mounted and self.container_size and height is not None and not height.is_auto:
            # Its box is its container's, not its rows': more rows need no layout of
            # the screen (a reflow and repaint, each new row of a send) unless a
            # scrollbar comes or goes, which asks for one itself (`_scroll_update`).
            self.set_reactive(MessageTree.virtual_size, size)
            self._scroll_update(size)
        else:
            self.virtual_size = size
        if not self._quiet:
            self.refresh()

    # -- reading the tree (for the app and tests) ---------------------------------------

    @property
    def rows(self) -> list[TreeRow]:
        return self.layout_.rows

    @property
    def message_ids(self) -> list[str]:
        """Every message in the tree, folded or not."""
        return list(self.layout_.entries)

    def entry_for(self, message_id: str) -> TreeEntry | None:
        return self.layout_.entries.get(message_id)

    @property
    def cursor_row(self) -> TreeRow | None:
        rows = self.layout_.rows
        return rows[self.cursor] if 0 <= self.cursor < len(rows) else None

    @property
    def cursor_message_id(self) -> str | None:
        """The message under the cursor (a fold: its first message)."""
        row = self.cursor_row
        return row.message_id if row is not None else None

    def row_text(self, index: int, width: int = 200) -> str:
        """The plain text of one row (what a screen reader or a test reads)."""
        return self._row_text(self.layout_.rows[index], width).plain

    # -- moving -------------------------------------------------------------------------

    def select_message(self, message_id: str, *, scroll: bool = True) -> None:
        """Put the cursor on a message, opening the fold that hides it."""
        layout = self.layout_
        row = layout.row_of.get(message_id)
        if row is None:
            return
        if layout.rows[row].kind == "fold":
            self.unfolded.add(layout.rows[row].message_id)
            self._relayout()
            self.post_message(self.FoldsChanged(frozenset(self.unfolded)))
            row = self.layout_.row_of[message_id]
        self.cursor = row
        self._clamp_cursor(scroll=scroll)

    def mark_hit(self, message_id: str | None) -> None:
        """Highlight a search hit (None clears it); it stays visible whatever is folded."""
        self.hit = message_id if message_id in self._messages else None
        self._relayout()
        if self.hit:
            self.select_message(self.hit)

    def _clamp_cursor(self, *, scroll: bool = True) -> None:
        rows = self.layout_.rows
        self.cursor = max(0, min(self.cursor, len(rows) - 1))
        if scroll and rows:
            self._scroll_to_cursor()
        row = self.cursor_row
        message = self._messages.get(row.message_id) if row and row.kind == "message" else None
        self.tooltip = one_line(clean(message.text), 600) if message and message.text else None
        if not self._quiet:
            self.refresh()

    def _scroll_to_cursor(self) -> None:
        height = max(self.scrollable_content_region.height, 1)
        top = round(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def _move(self, row: int) -> None:
        if not self.layout_.rows:
            return
        self.cursor = row
        self._clamp_cursor()
        if self._highlight_timer is not None:
            self._highlight_timer.stop()
        self._highlight_timer = self.set_timer(HIGHLIGHT_DELAY, self._post_highlight)

    def _post_highlight(self) -> None:
        row = self.cursor_row
        if row is not None and row.kind == "message":
            self.post_message(self.Highlighted(row.message_id))

    def action_cursor(self, step: int) -> None:
        self._move(self.cursor + step)

    def action_page(self, step: int) -> None:
        self._move(self.cursor + step * max(self.scrollable_content_region.height - 1, 1))

    def action_jump(self, where: int) -> None:
        self._move(0 if where == 0 else len(self.layout_.rows) - 1)

    def action_parent(self) -> None:
        row = self.cursor_row
        if row is None:
            return
        parent = self.layout_.parent.get(row.message_id)
        if parent is not None:
            self._move(self.layout_.row_of[parent])

    def action_child(self) -> None:
        row = self.cursor_row
        if row is None:
            return
        if row.kind == "fold":
            self._set_fold(row.message_id, open_=True)
            return
        kids = self.layout_.children.get(row.message_id, [])
        if kids:
            on_path = [k for k in kids if self.layout_.entries[k].on_path]
            self._move(self.layout_.row_of[(on_path or kids[-1:])[0]])

    def action_sibling(self, step: int) -> None:
        row = self.cursor_row
        if row is None:
            return
        parent = self.layout_.parent.get(row.message_id)
        siblings = self.layout_.children.get(parent, [])
        if row.message_id not in siblings:
            return
        index = siblings.index(row.message_id) + step
        if 0 <= index < len(siblings):
            self._move(self.layout_.row_of[siblings[index]])
        else:
            self.app.bell()

    # -- folding ------------------------------------------------------------------------

    def _set_fold(self, key: str, *, open_: bool) -> None:
        (self.unfolded.add if open_ else self.unfolded.discard)(key)
        current = self.cursor_message_id
        self._relayout()
        target = key if open_ else current
        if target in self.layout_.row_of:
            self.cursor = self.layout_.row_of[target]
        self._clamp_cursor()
        self.post_message(self.FoldsChanged(frozenset(self.unfolded)))

    def action_toggle_fold(self) -> None:
        row = self.cursor_row
        if row is None:
            return
        if row.kind == "fold":
            self._set_fold(row.message_id, open_=True)
        elif row.run is not None:
            self._set_fold(row.run, open_=False)

    # -- acting -------------------------------------------------------------------------

    def action_select(self) -> None:
        row = self.cursor_row
        if row is None:
            return
        if row.kind == "fold":
            self._set_fold(row.message_id, open_=True)
        else:
            self.post_message(self.BranchSelected(row.message_id))

    def action_message(self, action: str) -> None:
        row = self.cursor_row
        if row is not None and row.kind == "message":
            self.post_message(self.ActionRequested(row.message_id, action))

    def action_zoom(self) -> None:
        self.post_message(self.ZoomRequested())

    def action_leave(self) -> None:
        self.post_message(self.LeaveRequested())

    def action_resize(self, step: int) -> None:
        self.post_message(self.ResizeRequested(step))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        row = round(self.scroll_y) + offset.y
        if not 0 <= row < len(self.layout_.rows):
            return
        if row == self.cursor or event.chain > 1:
            self.cursor = row
            self.action_select()
        else:
            self._move(row)

    # -- drawing ------------------------------------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        # The width and the base style are the same for every line of one render: read
        # once, not per line (the style walks the ancestors' styles: ~8 M of the 20 M
        # instructions an empty tree's 39 blank lines took in the first frame).
        self._line_context = (self.scrollable_content_region.width, self.rich_style)
        try:
            return super().render_lines(crop)
        finally:
            self._line_context = self._line_looks = None

    def render_line(self, y: int) -> Strip:
        """A row, drawn again only when something it shows changed.

        The tree is repainted whole whenever it changes (a send adds two rows) or the
        screen is laid out around it, several times a send; building each row's text
        was most of that frame's CPU, taken from a local model on the same cores.
        """
        width, base = self._line_context or (self.scrollable_content_region.width, self.rich_style)
        index = round(self.scroll_y) + y
        rows = self.layout_.rows
        if not 0 <= index < len(rows):
            return Strip.blank(width, base)
        row = rows[index]
        looks = self._line_looks
        if looks is None:
            looks = self._looks()
            if self._line_context is not None:  # read once a render
                self._line_looks = looks
                if self._row_styles_for != (base, looks):
                    self._row_styles, self._row_styles_for = {}, (base, looks)
        message, key = self._line_key(index, width, base, looks)
        cached = self._strips.get(key)
        if cached is not None and cached[0] is message:
            return cached[1]
        text = self._row_text(row, width)
        text.pad_right(width - text.cell_len)  # the cursor bar spans the pane
        if row.message_id == self.hit and row.kind == "message":
            text.stylize(self.get_component_rich_style("message-tree--hit"))
        if index == self.cursor:
            text.stylize(self.get_component_rich_style("message-tree--cursor"))
        segments = Segment.apply_style(text.render(self.app.console), base)
        strip = Strip(segments).crop_extend(0, width, base).simplify()
        if len(self._strips) > 2 * len(rows) + 100:
            self._strips.clear()  # rows long gone (the message is kept alive by its key)
        self._strips[key] = (message, strip)
        return strip

    def _line_key(
        self, index: int, width: int, base: Style, looks: tuple[object, ...] | None = None
    ) -> tuple[Message | None, tuple[object, ...]]:
        """The message row `index` shows, and everything its drawn line depends on
        (`looks`: the tree's own part of that, `_looks()`, when read for many lines)."""
        row = self.layout_.rows[index]
        message = self._messages.get(row.message_id)
        entry = self.layout_.entries.get(row.message_id) if row.kind == "message" else None
        return message, (
            row,
            tuple(vars(entry).values()) if entry is not None else None,
            id(message),
            row.message_id == self.hit,
            row.message_id == self.active_leaf,
            index == self.cursor,
            width,
            base,
            looks if looks is not None else self._looks(),
        )

    def _looks(self) -> tuple[object, ...]:
        """What every line's look depends on besides its row: the tree's pseudo-classes
        (focus, hover…: each read walks them all, ~0.2 ms for a screenful of lines) and
        the theme."""
        return (frozenset(self.get_pseudo_classes()), self.app.theme)

    def _drawn_lines(
        self, look: tuple[Style, tuple[object, ...]] | None = None
    ) -> list[tuple[Message | None, tuple[object, ...]] | None] | None:
        """What each line on screen shows now (None past the rows); None when the tree
        is not on screen yet (drawn whole). `look`: the tree's base style and `_looks()`
        when the caller read them already."""
        if not self.is_mounted or not self.size:
            return None
        top = round(self.scroll_y)
        region = self.scrollable_content_region
        width = region.width
        base, looks = look if look is not None else (self.rich_style, self._looks())
        rows = len(self.layout_.rows)
        return [
            self._line_key(top + y, width, base, looks) if top + y < rows else None
            for y in range(region.height)
        ]

    def _repaint_changed(
        self,
        drawn: list[tuple[Message | None, tuple[object, ...]] | None],
        look: tuple[Style, tuple[object, ...]] | None = None,
    ) -> None:
        """Repaint the lines whose rows changed since `drawn` (`_drawn_lines`).

        A send changes a few rows (its two new ones, the old leaf's mark, a reply's
        state): repainting the whole tree for them cost each of the send's tree frames
        milliseconds (every line through the styles cache, the blank ones too).
        """
        now = self._drawn_lines(look)
        if now is None or len(now) != len(drawn):
            self.refresh()
            return
        for y, (before, after) in enumerate(zip(drawn, now, strict=True)):
            if before is None or after is None:
                changed = before is not after
            else:
                changed = before[0] is not after[0] or before[1] != after[1]
            if changed:
                self.refresh_lines(round(self.scroll_y) + y)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._row_styles, self._row_styles_for = {}, None

    def _row_text(self, row: TreeRow, width: int) -> Text:
        # Within a render the rows' styles are kept until the tree's styles, base
        # style, pseudo-classes or theme change: Textual computes a component's style
        # again after every repaint (~0.3 ms each, six or so a row drawn).
        cache = self._row_styles if self._line_context is not None else {}

        def style(name: str) -> Style:
            known = cache.get(name)
            if known is None:
                # Colour and text style only: the row's background is the pane's or
                # the cursor's.
                full = self.get_component_rich_style(name)
                known = cache[name] = Style(
                    color=full.color,
                    bold=full.bold,
                    italic=full.italic,
                    underline=full.underline,
                )
            return known

        text = Text(no_wrap=True, overflow="ellipsis", end="")
        for i, char in enumerate(row.lanes):
            on_lane0 = i == 0 and char in "│├"
            text.append(char, style("message-tree--path" if on_lane0 else "message-tree--lane"))
        if row.kind == "fold":
            glyph_style = style("message-tree--path" if row.on_path else "message-tree--lane")
            text.append("┆", glyph_style)
            n = len(row.hidden)
            text.append(f" … {n:,} message{'s' if n != 1 else ''}", style("message-tree--fold"))
            text.truncate(width, overflow="ellipsis")
            return text
        entry = self.layout_.entries[row.message_id]
        message = self._messages[row.message_id]
        on, off = GLYPHS.get(entry.role, ("•", "·"))
        text.append(
            on if entry.on_path else off,
            style(f"message-tree--{entry.role}") if entry.role in GLYPHS else Style(),
        )
        text.append(" ")
        if entry.position[1] > 1:
            text.append(
                f"‹{entry.position[0]}/{entry.position[1]}› ", style("message-tree--branch")
            )
        if entry.status:
            text.append(f"{STATUS_TEXT[entry.status]} ", style("message-tree--status"))
        if entry.hop:
            text.append(f"⇄ {clean(entry.hop)} ", style("message-tree--hop"))
        if entry.model:
            text.append(
                f"[{one_line(entry.model.rsplit('/', 1)[-1], 16)}] ", style("message-tree--model")
            )
        room = max(width - text.cell_len, 1)
        label = Text(preview(message, room, state_shown=bool(entry.status)))
        if not entry.on_path:
            label.stylize(style("message-tree--off-path"))
        if entry.message_id == self.active_leaf:
            label.stylize(style("message-tree--leaf"))
        text.append_text(label)
        text.truncate(width, overflow="ellipsis")
        return text
