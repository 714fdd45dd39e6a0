"""Keys that move in a list (the chat list, search results, pickers, F1's table), with
ids a `[keys]` config rebinds: the `vim` preset adds `j` / `k` (a list has no input
for printable keys to belong to)."""

from __future__ import annotations

from typing import Any

from textual import events
from textual.binding import Binding
from textual.widgets import Input

__all__ = ["LIST_BINDINGS", "ListKeys", "TypingGoesToInput"]

LIST_BINDINGS = [
    Binding("down", "list_move(1)", "Down", id="list.down", show=False),
    Binding("up", "list_move(-1)", "Up", id="list.up", show=False),
]
"""A list's own widget (OptionList, DataTable) answers up and down first; these make a
remapped key (`list.down = "j"`) move it too."""


class ListKeys:
    """`list_move` for a screen whose focused widget is a list."""

    def action_list_move(self, step: int) -> None:
        name = "action_cursor_down" if step > 0 else "action_cursor_up"
        move = getattr(getattr(self, "focused", None), name, None)
        if callable(move):
            move()


class TypingGoesToInput:
    """For a screen whose input filters its list: a key typed while the list has the
    focus (a printable one that no binding takes, or backspace) goes to the input,
    and the focus with it. Down had moved into the list, and the letters typed next
    went nowhere. `TYPING_INPUT`: the input's selector (its `select_on_focus` off,
    or focusing it would select what is there and the next key replace it)."""

    TYPING_INPUT = "Input"

    def on_key(self, event: events.Key) -> None:
        # The input takes its own keys (they never come here): a key that does came
        # from the list, even one already on its way there when an earlier key moved
        # the focus (keys typed fast are queued to the list they were sent to).
        screen: Any = self
        if event.key != "backspace" and not (event.is_printable and event.character):
            return
        if event.key in screen.app.active_bindings:  # `j` / `k` in the vim preset
            return
        field = screen.query_one(self.TYPING_INPUT, Input)
        event.stop()
        event.prevent_default()
        if screen.focused is not field:
            screen.set_focus(field)
        field.cursor_position = len(field.value)
        if event.key == "backspace":
            field.action_delete_left()
        else:
            field.insert_text_at_cursor(event.character or "")
