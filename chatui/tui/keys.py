"""Every key chatui answers to, in one table: the help screen and the README come from it.

A row that names its actions (`ids`, the bindings' ids) shows the keys in force for
them when a `[keys]` config rebinds one (`keys_in_force`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["KEYS", "KeyHelp"]


@dataclass(frozen=True)
class KeyHelp:
    keys: str
    action: str
    where: str = "anywhere"
    ids: tuple[str, ...] = ()
    """The actions (binding ids) the row's keys run, in the order `keys` names them."""

    def keys_in_force(self, keymap: Mapping[str, str], defaults: Mapping[str, str]) -> str:
        """`keys`, or the keys the keymap gives the row's actions when it rebinds one
        (`defaults`: action id → its default keys, for the others of the row)."""
        if not any(i in keymap for i in self.ids):
            return self.keys
        return " / ".join(keymap.get(i, defaults.get(i, "?")).replace(",", ", ") for i in self.ids)


KEYS: tuple[KeyHelp, ...] = (
    KeyHelp("enter", "send the message", "input", ids=("input.send",)),
    KeyHelp("shift+enter / ctrl+j", "new line", "input", ids=("input.newline",)),
    KeyHelp("up", "from the input's first line: move to the messages", "input"),
    KeyHelp(
        "escape",
        "cancel the reply of the chat on screen (the partial reply is kept)",
        "anywhere",
        ids=("main.cancel",),
    ),
    KeyHelp("ctrl+n", "new chat", "anywhere", ids=("app.new_chat",)),
    KeyHelp(
        "ctrl+s",
        "chat list: open, rename, delete (with undo), restore",
        "anywhere",
        ids=("app.chats",),
    ),
    KeyHelp("ctrl+f", "search every chat, all branches", "anywhere", ids=("app.search",)),
    KeyHelp(
        "ctrl+t",
        "focus the message tree (opening it); in the tree: back to the input",
        "anywhere",
        ids=("app.tree",),
    ),
    KeyHelp(
        "ctrl+b",
        "show or hide the context sidebar (small terminal: over the chat)",
        "anywhere",
        ids=("app.sidebar",),
    ),
    KeyHelp("ctrl+l", "choose the model", "anywhere", ids=("app.model",)),
    KeyHelp(
        "ctrl+o",
        "attach an image or a text file to the next message (pasting a file's path does too)",
    ),
    KeyHelp("backspace", "in an empty input: remove the last attachment", "input"),
    KeyHelp("ctrl+p", "command palette: compact now, rename, export, import, theme, …"),
    KeyHelp("f1", "this help", "anywhere", ids=("app.help",)),
    KeyHelp(
        "f2",
        "the next request: parameters, system prompt and tools, with token counts "
        "(e edits this chat's prompt, p its parameters)",
        "anywhere",
        ids=("main.prompt",),
    ),
    KeyHelp("ctrl+q", "quit", "anywhere", ids=("app.quit",)),
    KeyHelp(
        "ctrl+r",
        "regenerate: a new reply beside the old one (kept); from the input: the last reply",
        "message, tree or input",
        ids=("message.regenerate", "chat.regenerate"),
    ),
    KeyHelp(
        "ctrl+w",
        "regenerate with another model (picked in a list); the chat keeps its model",
        "message or tree",
        ids=("message.regenerate_with",),
    ),
    KeyHelp(
        "ctrl+g",
        "continue a truncated or stopped reply where it ended (appended to it, marked)",
        "message, tree or input",
        ids=("message.continue", "chat.continue"),
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
        ids=("message.edit",),
    ),
    KeyHelp(
        "f",
        "fork: a new chat holding the path up to this message",
        "message or tree",
        ids=("message.fork",),
    ),
    KeyHelp(
        "left / right",
        "previous / next sibling branch",
        "message",
        ids=("message.previous", "message.next"),
    ),
    KeyHelp(
        "v",
        "compare with its siblings side by side (differing words marked; enter keeps one)",
        "message or tree",
        ids=("message.compare",),
    ),
    KeyHelp(
        "tab",
        "in compare: pick the left or right side for enter to keep",
        "compare",
        ids=("compare.pick",),
    ),
    KeyHelp(
        "c",
        "copy the message; again: copy its code blocks in turn",
        "message or tree",
        ids=("message.copy",),
    ),
    KeyHelp(
        "g",
        "a peer message (⇄): open the other agent's chat at that message",
        "message or tree",
        ids=("message.goto",),
    ),
    KeyHelp("up / down", "previous / next message", "message", ids=("message.up", "message.down")),
    KeyHelp(
        "enter",
        "on a compaction summary: read the messages it covers",
        "message",
        ids=("message.originals",),
    ),
    KeyHelp(
        "up / down, k / j",
        "move the cursor (the chat scrolls to it)",
        "tree",
        ids=("tree.up", "tree.down"),
    ),
    KeyHelp(
        "left / right, h / l",
        "parent / child on the branch (right opens a fold)",
        "tree",
        ids=("tree.parent", "tree.child"),
    ),
    KeyHelp("[ / ]", "previous / next sibling", "tree", ids=("tree.previous", "tree.next")),
    KeyHelp("pageup / pagedown, home / end", "a page up or down, first or last row", "tree"),
    KeyHelp(
        "enter",
        "show the branch through this message; on a fold: open it",
        "tree",
        ids=("tree.select",),
    ),
    KeyHelp(
        "space", "fold the run the cursor is in again (or open a fold)", "tree", ids=("tree.fold",)
    ),
    KeyHelp(
        "z",
        "the tree full screen, the message under the cursor beside it",
        "tree",
        ids=("tree.zoom",),
    ),
    KeyHelp("< / >", "make the pane narrower / wider (remembered)", "tree or sidebar"),
    KeyHelp(
        "escape, i", "back to the input (a pane over the chat closes)", "tree", ids=("tree.leave",)
    ),
    KeyHelp(
        "enter", "open the block: its whole content, owner, budget; edit a writable one", "gauge"
    ),
    KeyHelp(
        "ctrl+s",
        "save the block (refused over its budget or when read-only)",
        "block editor",
        ids=("block.save",),
    ),
    KeyHelp(
        "ctrl+r",
        "revert the write highlighted in the block's list of writes",
        "block editor",
        ids=("block.revert",),
    ),
    KeyHelp("ctrl+home / ctrl+end", "start / end of the block's text", "block editor"),
    KeyHelp("escape", "close (edits not saved: asks before dropping them)", "block editor"),
)
