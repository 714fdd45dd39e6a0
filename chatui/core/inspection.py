"""What the model carries, for people to read: a block's details and its writes.

Headless: the memory inspector draws what these return. (The next request, for
F2, is measured with every other figure: `context_usage`.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from store import (
    ContextBlock,
    StoredWrite,
    one_line,
)

from .config import BlockConfig

if TYPE_CHECKING:
    from store import AgentInfo


__all__ = ["BlockDetails", "WriteLine", "block_details", "write_lines"]


@dataclass(frozen=True)
class BlockDetails:
    """One context block as the inspector shows it."""

    block: ContextBlock
    owner: str
    """Whose content it is: this chat, every chat, an agent, the config."""
    editable: bool
    """A plain writable block: the inspector can replace its content."""
    note: str = ""
    """Why it cannot be edited here, when it cannot."""


def block_details(
    block: ContextBlock,
    config: BlockConfig | None,
    *,
    chat_name: str | None,
    agent: AgentInfo | None,
) -> BlockDetails:
    """Who a block belongs to and whether a person may edit it here.

    Args:
        config: the block's configuration (None for one added at runtime).
        chat_name: the open chat (None: a new chat, not stored yet).
        agent: the agent running the chat, if any.
    """
    who = f"agent {agent.name}" if agent else None
    if config is not None and config.kind == "static":
        owner = (
            f"{who}'s soul (its configuration)"
            if who and block.label == "soul"
            else "the config file"
        )
    elif config is not None and config.scope == "global":
        owner = f"every chat {who} runs" if who else "every chat (global)"
    elif chat_name is not None:
        owner = f"this chat ({chat_name})"
    else:
        owner = "the new chat (stored with its first message)"
    if config is not None and config.kind == "static":
        return BlockDetails(
            block,
            owner,
            False,
            "Read-only to the model. This chat's prompt: F2 then e, or Edit system prompt "
            "in ctrl+p (the config's text stays for other chats).",
        )
    if block.kind != "writable":
        note = {
            "readonly": "Read-only: the model cannot change it, nor can you here.",
            "searchable": "Keyed entries: the model adds them with set_context and searches them.",
            "loadable": "Skills: documents the model loads on demand (files in the skills folder).",
        }[block.kind]
        return BlockDetails(block, owner, False, note)
    if chat_name is None:
        return BlockDetails(
            block, owner, False, "This chat is not stored yet: send a first message, then edit."
        )
    return BlockDetails(block, owner, True)


@dataclass(frozen=True)
class WriteLine:
    """One write of a block as the inspector lists it: who, where, what."""

    seq: int
    when: str
    """Local time of the write, short."""
    who: str
    where: str
    """Which chat and branch it was made on, said from the chat on screen."""
    preview: str
    reverted: bool
    live_here: bool
    """On the branch on screen (or on no branch): it counts for what this branch holds."""

    @property
    def text(self) -> str:
        state = " · reverted" if self.reverted else ""
        return f"#{self.seq} {self.when} · {self.who} · {self.where}{state} — {self.preview}"


_WHO = {
    "model": "the model",
    "user": "you",
    "before history": "earlier",
    "import": "imported",
    "library": "a program",
    "revert": "a revert",
}


def write_lines(
    writes: list[StoredWrite],
    *,
    chat_id: str | None,
    on_path: set[str],
    names: dict[str, str],
) -> list[WriteLine]:
    """A block's writes, newest first, each said from the chat on screen.

    Args:
        on_path: ids of the branch on screen (root → active leaf).
        names: chat names by id, for writes other chats made (global blocks).
    """
    lines = []
    for w in reversed(writes):
        if w.message_id is None:
            where, here = "every branch", True
        elif w.session_id == chat_id:
            here = w.message_id in on_path
            where = "this branch" if here else "another branch"
        else:
            name = names.get(w.session_id or "", "a deleted chat")
            where, here = f"chat {one_line(name, 24)}", False
        lines.append(
            WriteLine(
                seq=w.seq,
                when=w.written_at.astimezone().strftime("%b %d %H:%M"),
                who=_WHO.get(w.origin, w.origin),
                where=where,
                preview=one_line(w.content, 60) or "(emptied)",
                reverted=w.reverted,
                live_here=here,
            )
        )
    return lines
