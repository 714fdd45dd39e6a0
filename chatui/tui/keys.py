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
    KeyHelp("ctrl+t", "focus the message tree (opening it); in the tree: back to the input"),
    KeyHelp("ctrl+b", "show or hide the context sidebar (small terminal: over the chat)"),
    KeyHelp("ctrl+l", "choose the model"),
    KeyHelp(
        "ctrl+o",
        "attach an image or a text file to the next message (pasting a file's path does too)",
    ),
    KeyHelp("backspace", "in an empty input: remove the last attachment", "input"),
    KeyHelp("ctrl+p", "command palette: compact now, rename, export, import, theme, …"),
    KeyHelp("f1", "this help"),
    KeyHelp(
        "f2",
        "the next request: parameters, system prompt and tools, with token counts "
        "(e edits this chat's prompt, p its parameters)",
    ),
    KeyHelp("ctrl+q", "quit"),
    KeyHelp("ctrl+r", "regenerate: a new reply beside the old one (kept)", "message or tree"),
    KeyHelp(
        "ctrl+w",
        "regenerate with another model (picked in a list); the chat keeps its model",
        "message or tree",
    ),
    KeyHelp(
        "ctrl+g",
        "continue a truncated or stopped reply where it ended (appended to it, marked)",
        "message or tree",
    ),
    KeyHelp(
        "other keys",
        "typing on a focused message types into the input (keys that spend tokens take ctrl)",
        "message",
    ),
    KeyHelp(
        "e",
        "edit your message (a new branch, then a reply) or a reply (a sibling marked edited)",
        "message or tree",
    ),
    KeyHelp("f", "fork: a new chat holding the path up to this message", "message or tree"),
    KeyHelp("left / right", "previous / next sibling branch", "message"),
    KeyHelp(
        "v",
        "compare with its siblings side by side (differing words marked; enter keeps one)",
        "message or tree",
    ),
    KeyHelp("tab", "in compare: pick the left or right side for enter to keep", "compare"),
    KeyHelp("c", "copy the message; again: copy its code blocks in turn", "message or tree"),
    KeyHelp(
        "g", "a peer message (⇄): open the other agent's chat at that message", "message or tree"
    ),
    KeyHelp("up / down", "previous / next message", "message"),
    KeyHelp("enter", "on a compaction summary: read the messages it covers", "message"),
    KeyHelp("up / down, k / j", "move the cursor (the chat scrolls to it)", "tree"),
    KeyHelp("left / right, h / l", "parent / child on the branch (right opens a fold)", "tree"),
    KeyHelp("[ / ]", "previous / next sibling", "tree"),
    KeyHelp("pageup / pagedown, home / end", "a page up or down, first or last row", "tree"),
    KeyHelp("enter", "show the branch through this message; on a fold: open it", "tree"),
    KeyHelp("space", "fold the run the cursor is in again (or open a fold)", "tree"),
    KeyHelp("z", "the tree full screen, the message under the cursor beside it", "tree"),
    KeyHelp("< / >", "make the pane narrower / wider (remembered)", "tree or sidebar"),
    KeyHelp("escape, i", "back to the input (a pane over the chat closes)", "tree"),
    KeyHelp(
        "enter", "open the block: its whole content, owner, budget; edit a writable one", "gauge"
    ),
    KeyHelp("ctrl+s", "save the block (refused over its budget or when read-only)", "block editor"),
    KeyHelp("ctrl+r", "revert the write highlighted in the block's list of writes", "block editor"),
    KeyHelp("ctrl+home / ctrl+end", "start / end of the block's text", "block editor"),
    KeyHelp("escape", "close (edits not saved: asks before dropping them)", "block editor"),
)
