"""`ChatInput`: the message box — enter sends, shift+enter or ctrl+j adds a line."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual import events
from textual.binding import Binding
from textual.color import Color
from textual.css.types import EdgeType
from textual.geometry import Region
from textual.message import Message as TextualMessage
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import TextArea

from .sanitize import clean

__all__ = ["ChatInput"]


class ChatInput(TextArea):
    """A multi-line input that sends on enter.

    Many terminals cannot tell shift+enter from enter; ctrl+j always inserts a
    newline. The text is not cleared on send: the app removes what was sent
    (`remove_sent`) once the message is safely stored, so a failed write
    leaves it there to retry, and what was typed meanwhile stays.
    """

    DEFAULT_CSS = """
    ChatInput {
        height: auto;
        min-height: 3;
        max-height: 12;
        margin: 0 1;
        border: round $foreground 20%;
    }
    ChatInput:focus { border: round $accent; }
    ChatInput.-busy { border: round $warning 60%; }
    """
    BUSY_BORDER: tuple[EdgeType, str, float] = ("round", "warning", 0.6)
    """The `-busy` rule's border (type, theme colour, alpha): `show_busy` sets it on the
    box itself."""

    BINDINGS = [
        Binding("enter", "submit", "Send", id="input.send", show=False),
        Binding("shift+enter,ctrl+j", "newline", "Newline", id="input.newline", show=False),
    ]

    class Submitted(TextualMessage):
        """The user pressed enter with this text."""

        def __init__(self, chat_input: ChatInput, text: str) -> None:
            super().__init__()
            self.chat_input = chat_input
            self.text = text

        @property
        def control(self) -> ChatInput:
            return self.chat_input

    class LeaveUp(TextualMessage):
        """Up was pressed on the first line: the user wants the messages above."""

        def __init__(self, chat_input: ChatInput) -> None:
            super().__init__()
            self.chat_input = chat_input

        @property
        def control(self) -> ChatInput:
            return self.chat_input

    def __init__(
        self,
        text: str = "",
        *,
        placeholder: str = "",
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        self.submit_empty = False
        """Enter sends blank text too (a dialog that says why it refuses it; a message
        whose attachments are its content)."""
        self.take_paste: Callable[[str], bool] | None = None
        """Offered each paste first; True when it used it (a pasted file path is
        attached, not typed)."""
        self.remove_before: Callable[[], bool] | None = None
        """Backspace in an empty box: True when it removed something (the last
        attachment)."""
        self.leave_up: Callable[[], bool] | None = None
        """Up on the first line: moves the focus above the box at once and says whether
        it did (without it, `LeaveUp` is posted and the keys behind it stay here)."""
        self._left = False
        """The focus was sent away by `leave_up` and has not gone yet: keys read with
        the arrow are passed on to where it goes (`_pass_on`)."""
        self._passed_on: list[events.Key] = []
        """Keys passed on since the box last had the focus: one that comes back is typed."""
        self._busy_border: tuple[EdgeType, Color] | None = None
        """The busy border set inline (`show_busy`), while the box is busy."""
        self._restyles = 0
        """Restyles of the box so far (`notify_style_update`)."""
        self._restyles_at_busy = 0
        self._theme_read_for: tuple[object, ...] | None = None
        """What the box's text theme was last filled from (`render_lines`)."""
        self._focused_unmounted = False
        """Given the focus before it was mounted (`focus_before_mount`): its own focus
        handling is still to run."""
        self.last_key_at = float("-inf")
        """When a key last reached the box (monotonic): a streaming reply draws less
        often while someone types, so each keystroke's frame stays cheap."""
        super().__init__(
            text,
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            highlight_cursor_line=False,
            placeholder=placeholder,
            name=name,
            id=id,
            classes=classes,
        )

    def show_busy(self, busy: bool) -> None:
        """Mark the box busy (a reply is being written: the `-busy` class and its
        border) or not.

        The class is set without a restyle: restyling applies the whole stylesheet to
        the box and its component classes, and empties its cache of drawn lines (a few
        ms each way, twice a send, taken from a local model on the same cores). The
        `-busy` rule's border is set on the box itself instead: the same look, one
        repaint. A restyle while busy (the focus moved, the theme changed) applies the
        rule with the class; one is then done when the class goes, as before.
        """
        if busy == self.has_class("-busy"):
            return
        self.set_class(busy, "-busy", update=False)
        if busy:
            self._restyles_at_busy = self._restyles
            self._set_busy_border()
            return
        self._busy_border = None
        self.styles.border = None  # back to the stylesheet's border
        if self._restyles != self._restyles_at_busy:
            self.app.update_styles(self)  # its styles hold the `-busy` rule's border

    def _set_busy_border(self) -> None:
        kind, colour, alpha = self.BUSY_BORDER
        border: tuple[EdgeType, Color] = (
            kind,
            Color.parse(self.app.theme_variables[colour]).multiply_alpha(alpha),
        )
        if border != self._busy_border:
            self._busy_border = border
            self.styles.border = border

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._restyles += 1
        if self._busy_border is not None:
            self._set_busy_border()  # the theme may have changed its colour

    def render_lines(self, crop: Region) -> list[Strip]:
        # TextArea fills its text theme from the box's styles before every render
        # (its base style and six component styles, each computed again after any
        # repaint: ~1 ms, three renders a send and one a key). They change only with
        # a restyle, the theme, or the backgrounds the base style blends: read again
        # only then.
        theme = self._theme
        if theme is None:
            return super().render_lines(crop)
        read_for = (theme, self._restyles, self.app.theme, self.rich_style)
        last = self._theme_read_for
        if last is None or last[0] is not theme or last[1:] != read_for[1:]:
            self._theme_read_for = read_for
            return super().render_lines(crop)  # TextArea's: fills the theme, renders
        return ScrollView.render_lines(self, crop)

    def action_submit(self) -> None:
        if self.text.strip() or self.submit_empty:
            self.post_message(self.Submitted(self, self.text))

    def remove_sent(self, text: str) -> None:
        """Take `text` (a message now stored) off the start of the box, keeping what was
        typed after enter. A box that no longer starts with it (edited meanwhile) is
        left as it is: nothing typed is ever erased."""
        if not text or not self.text.startswith(text):
            return
        lines = text.split("\n")
        self.delete((0, 0), (len(lines) - 1, len(lines[-1])))

    def action_newline(self) -> None:
        start, end = self.selection
        self.replace("\n", start, end, maintain_selection_offset=False)

    async def _on_paste(self, event: events.Paste) -> None:
        event.prevent_default()  # TextArea's own handler would insert it raw as well
        # A pasted file path (a file dropped on the terminal) may be attached instead.
        if self.take_paste is not None and self.take_paste(event.text):
            event.stop()
            return
        # A paste is text, never keys: escape sequences go, and a terminal's `\r` line
        # ends (tmux pastes newlines as `\r`) become newlines, kept in the box.
        await super()._on_paste(events.Paste(clean(event.text)))

    async def _on_key(self, event: events.Key) -> None:
        if self._left and event.key != "up" and not any(event is k for k in self._passed_on):
            self._pass_on(event)
            return
        # Enter is handled here, in key order: a priority binding would run before
        # keys typed just ahead of it reached the text. It ends the typing: the reply
        # it asks for is drawn at the full rate, not the rate kept for typists.
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.action_submit()
            return
        self.last_key_at = time.monotonic()
        # So is a new line (its keys as bound, `[keys]` included): the binding's action
        # ran after the keys read with it were typed ("alphabeta" and a new line).
        if event.key in self._newline_keys():
            event.stop()
            event.prevent_default()
            self.action_newline()
            return
        if event.key == "backspace" and not self.text and self.remove_before is not None:
            if self.remove_before():
                event.stop()
                event.prevent_default()
                return
        if event.key == "up" and (self._left or self.cursor_location[0] == 0):
            event.stop()
            event.prevent_default()
            if self.leave_up is None:
                self.post_message(self.LeaveUp(self))
            elif self.leave_up():
                self._left = True
            return
        await super()._on_key(event)

    _newline_for: object = None
    _newline_keys_now: frozenset[str] = frozenset()

    def _newline_keys(self) -> frozenset[str]:
        """The keys bound to a new line under the app's keymap (as Textual applies it
        to its bindings), worked out again only when the keymap is replaced."""
        keymap = self.app._keymap
        if self._newline_for is not keymap:
            bindings = self._bindings.copy()
            if keymap:
                bindings.apply_keymap(keymap)
            self._newline_keys_now = frozenset(
                key
                for key, bound in bindings.key_to_bindings.items()
                if any(binding.action == "newline" for binding in bound)
            )
            self._newline_for = keymap
        return self._newline_keys_now

    def _pass_on(self, event: events.Key) -> None:
        """A key read together with the arrow that sent the focus away (`send-keys Up
        Up e`, keys a terminal writes at once): every such key is handed to the box, the
        focus moves after them. Posted to the app again, it arrives behind the focus
        move and goes where the focus went (`e` edits the message the arrows reached).
        Once only: a passed-on key that comes back here is typed."""
        event.stop()
        event.prevent_default()
        key = events.Key(event.key, event.character)
        self._passed_on.append(key)
        self.app.post_message(key)

    def focus_before_mount(self, screen: Screen) -> None:
        """Give the box (not mounted yet) the focus of `screen`, so it is first styled
        focused. Focused once mounted, as before, Textual styled the box twice before
        the first frame (mounted, then focused again: the whole stylesheet applied to
        it and its drawn lines thrown away); the `Focus` event comes once it is mounted
        and does the rest of what focusing it did (the cursor shown and blinking)."""
        self.set_reactive(Widget.has_focus, True)  # `:focus` when first styled
        self._focused_unmounted = True
        screen.set_focus(self, scroll_visible=False)

    def on_focus(self) -> None:
        self._left = False
        self._passed_on.clear()
        if self._focused_unmounted:
            self._focused_unmounted = False
            self._watch_has_focus(True)  # TextArea's own: it ran on no change of has_focus

    def on_blur(self) -> None:
        # Queued behind the keys read before the focus went: they were passed on.
        self._left = False
