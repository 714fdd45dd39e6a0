"""Every key chatui answers to, in one table: the help screen and the README come from it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KEYS", "KeyHelp"]


@dataclass(frozen=True)
class KeyHelp:
    keys: str
    action: str
    where: str = "anywhere"


KEYS: tuple[KeyHelp, ...] = (
    KeyHelp("enter", "send the message", "input"),
    KeyHelp("shift+enter / ctrl+j", "new line", "input"),
    KeyHelp("up", "from the input's first line: move to the messages", "input"),
    KeyHelp("escape", "cancel the reply of the chat on screen (the partial reply is kept)"),
    KeyHelp("ctrl+n", "new chat"),
    KeyHelp("ctrl+s", "chat list: open, rename, delete (with undo), restore"),
    KeyHelp("ctrl+f", "search every chat, all branches"),
    KeyHelp("ctrl+b", "show or hide the context sidebar"),
    KeyHelp("ctrl+t", "show or hide the message tree"),
    KeyHelp("ctrl+l", "choose the model"),
    KeyHelp("ctrl+p", "command palette: compact now, rename, export, import, theme, …"),
    KeyHelp("f1", "this help"),
    KeyHelp("ctrl+q", "quit"),
    KeyHelp("r", "regenerate: a new reply beside the old one (kept)", "message or tree"),
    KeyHelp("e", "edit your message: a new branch, then a new reply", "message or tree"),
    KeyHelp("f", "fork: a new chat holding the path up to this message", "message or tree"),
    KeyHelp("left / right", "previous / next sibling branch", "message or tree"),
    KeyHelp("c", "copy the message; again: copy its code blocks in turn", "message or tree"),
    KeyHelp(
        "g", "a peer message (⇄): open the other agent's chat at that message", "message or tree"
    ),
    KeyHelp("up / down", "previous / next message", "message"),
    KeyHelp("i", "back to the input", "message"),
    KeyHelp("enter", "show the branch through this message", "tree"),
    KeyHelp("space", "expand or collapse a branch", "tree"),
)
