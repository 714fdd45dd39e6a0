"""`MessageView`: one message in the chat pane — header, Markdown body, tools.

Tool calls and their results sit collapsed under the assistant message that
made them; a compaction summary can be expanded to the messages it covers.
All text shown here went through `sanitize.clean` first.

A reply being written draws from a `ReplyStream`: whoever hears the reply's
deltas writes their text there; the view's one drawing task joins what waits
and draws it (the shape of Textual's `MarkdownStream`). The view keeps no copy
of the text: what it drew is its body's (a Static's text, the Markdown's source).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message as TextualMessage
from textual.widget import MountError, Widget
from textual.widgets import Collapsible, Static

from store import Message, as_text, reply_state_label

from .in_place import update_in_place
from .sanitize import clean, literal, one_line
from .tree_layout import status_of

if TYPE_CHECKING:  # Markdown (markdown-it) loads on first use, off the first frame
    from textual.widgets import Markdown

__all__ = [
    "DrawPace",
    "MessageView",
    "ReplyStream",
    "code_blocks",
    "looks_like_markdown",
    "status_of",
]

FLUSH_SECONDS = 0.1
"""Most time streamed text waits before it is drawn: ten draws a second at most (each
is a frame, and a new line a layout of the screen: CPU taken from a local model on the
same cores). The first words after a quiet spell are drawn at once."""
TYPING_FLUSH_SECONDS = 0.25
"""The same while someone types (a key within `TYPING_SECONDS`): drawing a growing
reply re-lays the screen, and a keystroke's frame should not wait for that."""
TYPING_SECONDS = 0.5
STATES = ("writing", "cancelled", "error", "interrupted", "truncated")
"""A reply's states, each a class of its view (`-writing`…)."""
UNSTYLED_CLASSES = frozenset({"-writing"})
"""Classes of a view that no CSS styles (a test asserts it): marks for code and tests."""
ROLE_NAMES = {"user": "You", "assistant": "Assistant", "tool": "Tool", "system": "System"}
_FENCE = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1[ \t]*$", re.MULTILINE | re.DOTALL)
# Anything Markdown would render differently from plain text.
_MARKDOWN_HINTS = re.compile(r"[*_`#\[\]|<>~]|^\s*(?:[-+]\s|\d+[.)]\s)|^\s*$", re.MULTILINE)


def looks_like_markdown(text: str) -> bool:
    """True when rendering `text` as Markdown would change how it looks."""
    text = text.strip()
    return bool(text) and bool(_MARKDOWN_HINTS.search(text))


async def _append_markdown(body: Widget, text: str) -> None:
    """Append to a Markdown body; nothing when the body has left the screen meanwhile
    (its view removed by a redraw, a chat switch or the app quitting while a reply
    streams): the stream's text is the store's, and this view is no longer drawn."""
    if not body.is_attached:
        return
    try:
        await body.append(text)  # type: ignore[attr-defined]  # Markdown
    except MountError:
        if body.is_attached:
            raise


def _plain(text: str) -> Text:
    """Text drawn as it is (trailing blank lines dropped: a paragraph break still
    streaming would otherwise jump the view by two lines)."""
    return Text(text.rstrip())


def code_blocks(text: str) -> list[str]:
    """The contents of the fenced code blocks in Markdown text, in order."""
    return [m.group(2).rstrip("\n") for m in _FENCE.finditer(text)]


def _call_summary(call: dict[str, Any]) -> str:
    args = call.get("input")
    if isinstance(args, dict):
        shown = ", ".join(f"{k}={one_line(as_text(v), 24)}" for k, v in list(args.items())[:3])
    else:
        shown = one_line(as_text(args), 40)
    return f"{call.get('tool_name', '?')}({shown})"


class ReplyStream:
    """The text of a reply on its way to its view: one queue, drained by the view's one
    drawing task.

    `write` each delta's text as it is heard, before or after the view is mounted;
    the view joins what waits and draws it, at most every `FLUSH_SECONDS` (the
    first text after a quiet spell at once). It holds only what is not drawn yet.
    """

    def __init__(self) -> None:
        self._waiting: list[str] = []
        self._ready = asyncio.Event()
        self.closed = False
        """The reply ended: its view shows the stored message, nothing more is drawn."""

    def write(self, text: str) -> None:
        if text and not self.closed:
            self._waiting.append(text)
            self._ready.set()

    @property
    def waiting(self) -> str:
        """What was written and is not drawn yet."""
        return "".join(self._waiting)

    def take(self) -> str:
        """What waits, joined; the queue is empty after."""
        text = "".join(self._waiting)
        self._waiting.clear()
        self._ready.clear()
        return text

    async def ready(self) -> None:
        """Until something waits (or the stream is closed)."""
        await self._ready.wait()

    def close(self) -> None:
        self.closed = True
        self._waiting.clear()
        self._ready.set()


class DrawPace:
    """When a streaming reply's next draw may come: at once after a quiet spell of
    `FLUSH_SECONDS` (a reply's first words), else `FLUSH_SECONDS` after the last draw
    (`TYPING_FLUSH_SECONDS` while someone types: a key within `TYPING_SECONDS`)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.drawn_at = float("-inf")

    def wait(self, typed_at: float = float("-inf")) -> float:
        """Seconds until the text waiting now may be drawn (0: at once)."""
        now = self.clock()
        interval = TYPING_FLUSH_SECONDS if now - typed_at < TYPING_SECONDS else FLUSH_SECONDS
        return max(self.drawn_at + interval - now, 0.0)

    def drawn(self) -> None:
        self.drawn_at = self.clock()


class _Header(Static):
    """A message's header line, fitted to its width each time it is drawn (a resize
    redraws it): at 80 columns a cancelled reply still says so."""

    def __init__(self, view: MessageView, *, classes: str) -> None:
        super().__init__(classes=classes)
        self.view = view

    def render(self) -> Text:
        return self.view.header(self.size.width or None)


class MessageView(Vertical, can_focus=True):
    """One message of the active path; focus it to act on it with keys."""

    DEFAULT_CSS = """
    MessageView {
        height: auto;
        padding: 0 1;
        margin: 0 0 1 0;
        border-left: outer $foreground 10%;
    }
    MessageView:focus { border-left: outer $accent; background: $boost; }
    MessageView.-user { border-left: outer $accent 50%; }
    MessageView.-compaction { border-left: outer $secondary; }
    MessageView > .message--header { color: $text-muted; height: 1; }
    MessageView > .message--body { padding: 0 0; margin: 0; }
    MessageView > Markdown > MarkdownParagraph:last-child { margin-bottom: 0; }
    MessageView.-error > .message--header, MessageView.-cancelled > .message--header,
    MessageView.-interrupted > .message--header,
    MessageView.-truncated > .message--header { color: $warning; }
    MessageView Collapsible { padding: 0; margin: 0; border: none; background: $boost; }
    MessageView Collapsible > Contents { padding: 0 1; }
    /* A title wider than the chat (a call's arguments) ends in "…", not cut mid-word. */
    MessageView CollapsibleTitle { max-width: 100%; text-wrap: nowrap; text-overflow: ellipsis; }
    MessageView .message--tool-output { color: $text-muted; }
    MessageView .message--attachments { color: $text-muted; }
    MessageView .message--covered { color: $text-muted; }
    MessageView .message--note { color: $secondary; }
    MessageView .message--note-text { color: $text-muted; }
    """

    # Keys that spend tokens take ctrl: a sentence typed while a message has focus
    # must never run them (its other printable keys go to the input: `on_key`).
    BINDINGS = [
        Binding("ctrl+r", "act('regenerate')", "Regenerate", id="message.regenerate"),
        Binding(
            "ctrl+w",
            "act('regenerate_with')",
            "Regenerate with…",
            id="message.regenerate_with",
            show=False,
        ),
        Binding("ctrl+g", "act('continue')", "Continue", id="message.continue", show=False),
        Binding("e", "act('edit')", "Edit", id="message.edit"),
        Binding("f", "act('fork')", "Fork", id="message.fork"),
        Binding("c", "act('copy')", "Copy", id="message.copy"),
        Binding("g", "act('goto')", "Go to peer chat", id="message.goto", show=False),
        Binding("v", "act('compare')", "Compare siblings", id="message.compare", show=False),
        Binding("left", "act('previous')", "‹ Branch", id="message.previous"),
        Binding("right", "act('next')", "Branch ›", id="message.next"),
        Binding("up,k", "move(-1)", "Previous message", id="message.up", show=False),
        Binding("down,j", "move(1)", "Next message", id="message.down", show=False),
        Binding("enter", "act('originals')", "Originals", id="message.originals", show=False),
    ]

    class ActionRequested(TextualMessage):
        """A key asked for an action on this message."""

        def __init__(self, message_id: str, action: str) -> None:
            super().__init__()
            self.message_id = message_id
            self.action = action

    class Typed(TextualMessage):
        """A printable key that is no command of a message: typing meant for the input."""

        def __init__(self, view: MessageView, character: str) -> None:
            super().__init__()
            self.view = view
            self.character = character

    class MoveRequested(TextualMessage):
        """Move focus to the neighbouring message (`step` -1 or 1), or to the input (0)."""

        def __init__(self, view: MessageView, step: int) -> None:
            super().__init__()
            self.view = view
            self.step = step

    def __init__(
        self,
        message: Message,
        *,
        position: tuple[int, int] = (1, 1),
        tool_results: Sequence[Message] = (),
        covered: Sequence[Message] = (),
        streaming: bool = False,
        stream: ReplyStream | None = None,
        hop: str | None = None,
        sender: str | None = None,
        notes: Sequence[tuple[str, str]] = (),
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.message = message
        self.position = position
        self.tool_results: list[Message] = list(tool_results)
        self.covered = list(covered)
        self.hop = hop
        self.sender = sender
        self.notes = list(notes)
        """(title, text) of notes on the sibling branches left behind ("what we tried")."""
        """The name of the agent that sent this message (None: the user, or unknown)."""
        """Where the message crossed to another chat ("from B"); `g` follows it."""
        self._streaming = streaming
        self.stream: ReplyStream | None = (stream or ReplyStream()) if streaming else None
        """Where the reply's text comes from while it is written (None once it ended)."""
        self.pace = DrawPace()
        """When the stream's text is next drawn (`_drain`)."""
        self.waiting_note = ""
        """Said in the header while a reply has no text yet (the model is loading)."""
        self.type_into: Callable[[str], None] | None = None
        """Where typing on this message goes (the app's input), at once: keys typed fast
        must land in order. None: a `Typed` message says what was typed."""
        self._typing = False
        self._appending = asyncio.Lock()
        """Draws one at a time (two `Markdown.append`s at once can draw a block twice)."""
        self._seed = ""
        """Text of a Markdown body composed streaming, appended when it is mounted:
        Textual's `Markdown(text)` then `append()` redraws only the last line of a last
        paragraph that spans several (its parse restarts at the text's last line), so
        a streaming body starts empty and every text reaches it by `append`."""
        self._tail = ""
        """Trailing blank lines of a plain body's text, held back from its Static (a
        paragraph break still streaming would jump the view by two lines)."""
        # Styled when mounted: restyling a view not mounted yet is work done twice
        # (a millisecond or two on the way to a reply's first frame).
        self._update_classes(update=False)

    arranging = False
    """Set (by the app's compositor, `chatui.tui.lean_compositor`) while it places widgets:
    only then does a view far from the chat's viewport keep its children out of the
    compositor's map (`unmapped`). Left unset, every view is placed whole."""
    unmapped = False
    """Far from the chat's viewport in its last arrangement (`ChatView.arrange`)."""

    @property
    def is_container(self) -> bool:
        # Read by the compositor to decide whether to place the view's children: a far
        # view's (its header and body, a screen or more away) are left out of the map.
        # Everything else that asks (focus chain, content size) gets Textual's answer.
        if self.unmapped and MessageView.arranging:
            return False
        return super().is_container

    @property
    def message_id(self) -> str:
        return self.message.id

    @property
    def text(self) -> str:
        """The text shown (while streaming: everything received so far)."""
        if self.stream is None:
            return clean(self.message.text)
        return self.shown + clean(self.stream.waiting)

    @property
    def shown(self) -> str:
        """The text drawn in the body (while streaming, `text` less what waits to be
        drawn): read from the body itself."""
        if self.stream is None or not self.is_mounted:
            return clean(self.message.text)
        body = self._body_widget()
        if body is None:
            return clean(self.message.text)
        if isinstance(body, Static):
            content = body.content
            return (content.plain if isinstance(content, Text) else str(content)) + self._tail
        return str(getattr(body, "source", "")) + self._seed  # Markdown (one is empty)

    def _body_widget(self) -> Widget | None:
        """The body among the view's children (no DOM query: a streamed reply's every
        draw looked it up, and a query walks and matches the view's whole subtree)."""
        for child in self.children:
            if child.has_class("message--body"):
                return child
        return None

    def _update_classes(self, *, update: bool = True) -> None:
        """Set the view's role and state classes; restyled once (the view and all that
        is in it), and only when a class that some CSS styles changed: a reply's end
        only drops `-writing`, and that restyle was milliseconds for nothing."""
        status = status_of(self.message, live=self._streaming)
        wanted = {
            "-user": self.message.role == "user",
            "-compaction": self.message.is_compaction,
            **{f"-{name}": status == name for name in STATES},
        }
        changed = {name for name, on in wanted.items() if self.has_class(name) != on}
        for name in changed:
            self.set_class(wanted[name], name, update=False)
        if update and changed - UNSTYLED_CLASSES:
            self.update_node_styles()

    def header_parts(self) -> list[tuple[str, str, int]]:
        """The header's pieces as (text, style, drop order): 0 is always shown; a narrow
        pane drops the highest first (the date, then the token figures, then the model),
        so who wrote it, ‹1/2› and the reply's state (cancelled, error…) stay."""
        m = self.message
        parts: list[tuple[str, str, int]] = []
        if m.is_compaction:
            covered = m.metadata.get("compaction", {}).get("covered", len(self.covered))
            return [(f"Summary of {covered} earlier messages", "bold", 0)]
        if m.role == "user" and m.from_agent_id:
            # Another agent wrote it, not the person at the keyboard: name the agent.
            parts.append((clean(self.sender) if self.sender else "Another agent", "bold", 0))
        else:
            parts.append((ROLE_NAMES.get(m.role, m.role), "bold", 0))
        if self.hop:
            parts.append((f" · ⇄ {clean(self.hop)} (g opens that chat)", "italic", 2))
        model = m.metadata.get("model")
        if model and m.role == "assistant":
            parts.append((f" · {model}", "", 3))
        if m.metadata.get("edited_from"):
            # A person's correction (the original is kept): as lasting as ‹1/2›.
            parts.append((" · edited", "italic", 0))
        if m.created_at is not None:
            parts.append((f" · {m.created_at.astimezone().strftime('%b %d %H:%M')}", "", 5))
        if self.position[1] > 1:
            parts.append((f"  ‹{self.position[0]}/{self.position[1]}›", "bold", 0))
        label = reply_state_label(m, status_of(m, live=self._streaming))
        if label:
            parts.append((f"  {label}", "italic", 0))
        if self.waiting_note and self.stream is not None:
            # Why nothing comes yet is the reply's state for now: never dropped (it was
            # cut first at 160 columns, so a slow first reply said nothing).
            parts.append((f" · {self.waiting_note}", "italic", 0))
        usage = m.token_usage if isinstance(m.token_usage, dict) else {}  # an old row: any shape
        if isinstance(usage.get("output"), int | float) and usage.get("output"):
            parts.append((f"  {usage.get('input', 0)}→{usage['output']} tok", "", 4))
        return parts

    def header(self, width: int | None = None) -> Text:
        """The header line; given a `width`, what fits it (see `header_parts`)."""
        parts = self.header_parts()
        if width is not None:
            for order in sorted({o for _, _, o in parts if o}, reverse=True):
                if sum(cell_len(t) for t, _, _ in parts) <= width:
                    break
                parts = [p for p in parts if p[2] != order]
        text = Text(no_wrap=True, overflow="ellipsis")
        for piece, style, _ in parts:
            text.append(piece, style)
        return text

    def compose(self) -> ComposeResult:
        yield _Header(self, classes="message--header")
        for title, note in self.notes:
            with Collapsible(title=literal(title), collapsed=True, classes="message--note"):
                yield Static(Text(clean(note)), classes="message--note-text")
        reasoning = "\n".join(
            clean(str(p.get("text", "")))
            for p in self.message.parts
            if p.get("type") == "reasoning"
        )
        if reasoning.strip():
            with Collapsible(title="thinking", collapsed=True):
                yield Static(Text(reasoning), classes="message--tool-output")
        yield self._body()
        if self.message.attachments:
            yield Static(self._attachments_line(), classes="message--attachments")
        yield from self._compose_tools()
        if self.covered:
            with Collapsible(
                title=f"show the {len(self.covered)} messages it covers",
                collapsed=True,
                classes="message--covered",
            ):
                for m in self.covered:
                    role = ROLE_NAMES.get(m.role, m.role)
                    yield Static(
                        Text(f"{role}: {one_line(m.text or '', 400)}"), classes="message--covered"
                    )

    def _attachments_line(self) -> Text:
        """`attached: photo.png · image/png · 5.0 MB   notes.txt · …`: named, never drawn
        (a word, not an emoji: its width differs between terminals)."""
        from store import format_size

        items = [
            f"{one_line(str(p.get('name') or '?'), 60)} · {clean(str(p.get('mime') or ''))}"
            f" · {format_size(int(p.get('size') or 0))}"
            for p in self.message.attachments
        ]
        return Text("attached: " + "   ".join(items), style="italic")

    def _body(self) -> Static | Markdown:
        """The message text: a Markdown widget while streaming Markdown, otherwise a
        cheap Static.

        Textual's Markdown widget builds a widget per block (tens of ms for a long
        reply); finished messages are drawn by Rich's Markdown renderer in one Static,
        so opening a long chat stays fast. A streaming reply whose text is plain so far
        (its first words, usually) is a Static too: mounting an empty Markdown widget
        and its first block cost a reply's first words several milliseconds.
        """
        text = clean(self.message.text)
        if not looks_like_markdown(text):
            self._tail = text[len(text.rstrip()) :]
            return Static(_plain(text), classes="message--body")
        if self._streaming:
            from textual.widgets import Markdown

            self._seed = text
            return Markdown(open_links=False, classes="message--body")
        # Imported here, not above: Rich's Markdown loads markdown-it (tens of ms), which a
        # chat of plain replies never needs (it was a first send's largest cost).
        from rich.markdown import Markdown as RichMarkdown

        theme = "monokai" if self.app.current_theme.dark else "default"
        return Static(
            RichMarkdown(text, code_theme=theme, hyperlinks=False), classes="message--body"
        )

    async def on_mount(self) -> None:
        await self._plant_seed()
        if self.stream is not None:
            self.run_worker(self._drain(self.stream), group="stream", exclusive=True)

    async def _plant_seed(self) -> None:
        """Append `_seed` to the Markdown body just composed (after mount, recompose)."""
        if self._seed:
            async with self._appending:
                if self._seed:  # a draw may have sent it first
                    body = self.query_one(".message--body")
                    seed, self._seed = self._seed, ""
                    await _append_markdown(body, seed)

    def _compose_tools(self) -> ComposeResult:
        results: dict[str, dict[str, Any]] = {}
        for tool_message in self.tool_results:
            for part in tool_message.tool_results:
                results[str(part.get("tool_call_id"))] = part
        for call in self.message.tool_calls:
            result = results.get(str(call.get("tool_call_id")))
            if result is None:
                mark = "…"
            elif result.get("is_error") or str(result.get("output", "")).startswith("Error:"):
                mark = "✗"
            else:
                mark = "✓"
            # The model writes the arguments ("[1. …, metadata={…" crashed the chat's view).
            # The mark goes first: a title wider than the chat is cut at its end.
            title = literal(f"⚙ {mark} {_call_summary(call)}")
            with Collapsible(title=title, collapsed=True, classes="message--tool"):
                yield Static(Text(clean(as_text(call.get("input")))), classes="message--tool-input")
                if result is not None:
                    yield Static(
                        Text(clean(as_text(result.get("output")))), classes="message--tool-output"
                    )

    # -- updates ----------------------------------------------------------------

    async def update_message(
        self,
        message: Message,
        *,
        position: tuple[int, int] | None = None,
        tool_results: Sequence[Message] | None = None,
    ) -> None:
        """Show a newer version of the message (final text, status, tools)."""
        stream = self.stream
        same_text = False
        if stream is not None:
            async with self._appending:
                await self._draw(stream)
                same_text = clean(message.text) == self.shown
            self.stream = None
            stream.close()  # the drawing task ends
        self.message = message
        if position is not None:
            self.position = position
        if tool_results is not None:
            self.tool_results = list(tool_results)
        self._update_classes()
        reasoning = any(p.get("type") == "reasoning" for p in message.parts)
        if same_text and not message.tool_calls and not reasoning:
            # What streamed is what was stored: keep the drawn body (re-rendering a
            # long reply at once would stall the screen) and refresh the header.
            self._streaming = False
            self._update_classes()
            self.refresh_header()
            return
        self._streaming = False
        await self.recompose()
        await self._plant_seed()

    async def add_tool_results(self, tool_message: Message) -> None:
        self.tool_results.append(tool_message)
        await self.recompose()
        await self._plant_seed()

    def refresh_header(self) -> None:
        self.query_one(".message--header", _Header).refresh()

    def note_waiting(self, note: str) -> None:
        """Say why a reply has no text yet, in its header (until its words come)."""
        self.waiting_note = note
        if self.is_mounted:
            self.refresh_header()

    async def draw_waiting(self) -> None:
        """Draw what the stream holds now (the first words' frame: not at the next slot)."""
        if self.stream is not None:
            async with self._appending:
                await self._draw(self.stream)

    def hand_over(self) -> bool:
        """Hand the plain body's pending repaint (or layout) to the screen now, not when
        the body next idles: a caller can then wait for the frame that shows what was
        just drawn ("after refresh") without laying the screen out. False (nothing
        done) when the body is not a plain text on screen."""
        body = self._body_widget()
        if not isinstance(body, Static) or not body.is_mounted:
            return False
        body._check_refresh()  # what Textual runs when the widget idles
        return True

    async def _drain(self, stream: ReplyStream) -> None:
        """The view's one drawing task: what the stream holds, joined, drawn at most
        every `FLUSH_SECONDS`; the first text after a quiet spell at once.

        A fast model sends hundreds of fragments a second; the screen needs ten
        updates, and each one repaints (a new line: re-lays) the growing block. While someone types
        (a key within `TYPING_SECONDS`) the slot is `TYPING_FLUSH_SECONDS`: a
        keystroke's frame should not wait for a reply's layout.
        """
        pace = self.pace
        while True:
            await stream.ready()
            if stream.closed:
                return
            wait = pace.wait(getattr(self.screen.focused, "last_key_at", float("-inf")))
            if wait > 0:
                await asyncio.sleep(wait)
            if stream.closed:
                return
            async with self._appending:
                await self._draw(stream)
            pace.drawn()

    async def _draw(self, stream: ReplyStream) -> None:
        """Draw what waits in `stream` (under `_appending`)."""
        text = clean(stream.take())
        if not text:
            return
        if self.waiting_note:
            self.waiting_note = ""
            self.refresh_header()
        body = self._body_widget()
        if body is None:  # the view is being removed (a redraw): nothing to draw into
            return
        if not isinstance(body, Static):  # a Markdown body: appended to
            await _append_markdown(body, self._seed + text)
            self._seed = ""
            return
        shown = self.shown + text
        if looks_like_markdown(shown):
            # Plain no more: a Markdown body from here on, appended to. Filled by an
            # append, not built with the text (see `_seed`), and swapped in one batch.
            from textual.widgets import Markdown

            markdown = Markdown(open_links=False, classes="message--body")
            self._tail = ""
            with self.app.batch_update():
                await self.mount(markdown, after=body)
                await _append_markdown(markdown, shown)
                await body.remove()
        else:
            self._tail = shown[len(shown.rstrip()) :]
            # Laid out again only when the reply takes another line: most deltas
            # land in its last line and repaint that alone.
            update_in_place(body, _plain(shown))

    # -- actions ----------------------------------------------------------------

    def on_key(self, event: events.Key) -> None:
        """A printable key that is none of this view's commands goes to the input with
        the focus: someone typing here thought they were in the input. Once typing has
        begun, every printable key is typing (a fast typist's next keys reach this view
        before the focus has moved)."""
        if not (event.is_printable and event.character):
            return
        if self._typing or event.key not in self.command_keys():
            event.stop()
            event.prevent_default()
            self._typing = True
            if self.type_into is not None:
                self.type_into(event.character)
            else:
                self.post_message(self.Typed(self, event.character))

    def on_blur(self) -> None:
        self._typing = False

    def command_keys(self) -> frozenset[str]:
        """The keys this view answers to itself, as they are bound now (a `[keys]`
        config rebinds them through `App.set_keymap`: the screen's `active_bindings`
        carry the keys in force); every other printable key is typing."""
        return frozenset(
            key for key, active in self.screen.active_bindings.items() if active.node is self
        )

    def typing_to(self, target: Callable[[str], None] | None) -> MessageView:
        """Send typing to `target` (see `type_into`); returns the view."""
        self.type_into = target
        return self

    def action_act(self, action: str) -> None:
        self.post_message(self.ActionRequested(self.message_id, action))

    def action_move(self, step: int) -> None:
        self.post_message(self.MoveRequested(self, step))
