"""Keys that move in a list (the chat list, search results, pickers, F1's table), with
ids a `[keys]` config rebinds: the `vim` preset adds `j` / `k` (a list has no input
for printable keys to belong to)."""

from __future__ import annotations

from textual.binding import Binding

__all__ = ["LIST_BINDINGS", "ListKeys"]

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
