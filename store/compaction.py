"""Macro-compaction: summarising the middle of a long conversation.

Invariants: the first `protect_head` messages and a tail that fits
`tail_token_budget` (never fewer than `min_tail_messages`) are kept; a tool
call and its results are never split; an earlier summary is updated, not
replaced, and the new overlay covers it; nothing is stored on failure.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Protocol

from .messages import Message, StoredCompaction
from .tokens import estimate_message_tokens, part_text

__all__ = [
    "BranchCompactFunction",
    "Compactable",
    "COMPACTION_SECTIONS",
    "CompactFunction",
    "build_summary_prompt",
    "create_compact_function",
]

COMPACTION_SECTIONS = ("Topic", "Key Points", "Current State", "Open Items")


class Compactable(Protocol):
    """What a compaction needs of a session: its history and a way to store the
    overlay. `store.Session` is one; so is any view of one branch of it."""

    def get_history(self, leaf_id: str | None = None) -> list[Message]: ...

    def add_compaction(self, summary: str, from_id: str, to_id: str) -> StoredCompaction: ...


CompactFunction = Callable[[Compactable], Awaitable[StoredCompaction | None]]
"""What `Session.on_compaction` takes: summarise part of the session, store the
overlay, return it (None when there was nothing to compact)."""


class BranchCompactFunction(Protocol):
    """A `CompactFunction` that can also compact the path to a given leaf."""

    def __call__(
        self, session: Compactable, leaf_id: str | None = None
    ) -> Awaitable[StoredCompaction | None]: ...


Summarize = Callable[[str], Awaitable[str] | str]


def _render(message: Message) -> str:
    pieces = []
    for part in message.parts:
        kind = part.get("type")
        if kind == "text":
            pieces.append(str(part.get("text", "")))
        elif kind == "tool-call":
            pieces.append(f"[called {part.get('tool_name')}({part_text(part)[:300]})]")
        elif kind == "tool-result":
            pieces.append(f"[{part.get('tool_name')} returned: {part_text(part)[:500]}]")
    return f"{message.role}: {' '.join(p for p in pieces if p)}"


def build_summary_prompt(messages: list[Message], previous_summary: str | None = None) -> str:
    """The instruction sent to the summariser."""
    sections = "\n".join(f"## {name}" for name in COMPACTION_SECTIONS)
    lines = [
        "Summarise the conversation below so it can replace these messages in the "
        "model's context. Keep names, numbers, decisions and anything still to do. "
        f"Answer in Markdown with exactly these sections:\n{sections}",
    ]
    if previous_summary:
        lines.append(
            "An earlier summary exists. Update it with the new messages; do not drop "
            f"what it says unless the conversation overturned it.\n\n<previous-summary>\n"
            f"{previous_summary}\n</previous-summary>"
        )
    lines.append("<conversation>\n" + "\n".join(_render(m) for m in messages) + "\n</conversation>")
    return "\n\n".join(lines)


def _call_ids(message: Message) -> set[str]:
    return {str(p.get("tool_call_id")) for p in message.tool_calls}


def _result_ids(message: Message) -> set[str]:
    return {str(p.get("tool_call_id")) for p in message.tool_results}


def _split_safe(history: list[Message], index: int) -> bool:
    """True when cutting before `index` separates no tool call from its results."""
    if index <= 0 or index >= len(history):
        return True
    before: set[str] = set()
    for m in history[:index]:
        before |= _call_ids(m)
    after: set[str] = set()
    for m in history[index:]:
        after |= _result_ids(m)
    return not (before & after)


def create_compact_function(
    summarize: Summarize,
    protect_head: int = 3,
    tail_token_budget: int = 20_000,
    min_tail_messages: int = 2,
) -> BranchCompactFunction:
    """A function for `Session.on_compaction` that summarises the middle of the history.

    Called with a session alone it compacts the latest branch; `leaf_id` picks
    another (the branch the user is on).
    """

    async def compact(session: Compactable, leaf_id: str | None = None) -> StoredCompaction | None:
        history: list[Message] = session.get_history(leaf_id)
        head = min(protect_head, len(history))
        # A summary in the head is folded into the new one, so the head ends before it.
        for i in range(head):
            if history[i].is_compaction:
                head = i
                break
        # The head is protected, so it grows rather than shrinks: when its last
        # message is a tool call, its results join the head (SPEC: the first
        # `protect_head` messages are never summarised).
        while head < len(history) and not _split_safe(history, head):
            head += 1
        tail_start = len(history)
        used = 0
        while tail_start > head:
            cost = estimate_message_tokens([history[tail_start - 1]])
            kept = len(history) - tail_start
            if kept >= min_tail_messages and used + cost > tail_token_budget:
                break
            used += cost
            tail_start -= 1
        # Widen what is kept rather than narrow it: the tail grows until no
        # tool call is cut off from its results, so the tail never drops
        # below `min_tail_messages`.
        while tail_start > head and not _split_safe(history, tail_start):
            tail_start -= 1
        middle = history[head:tail_start]
        if not middle or all(m.is_compaction for m in middle) and len(middle) == 1:
            return None
        previous = None
        first_id = middle[0].id
        for m in middle:
            if m.is_compaction:
                previous = m.text
                break
        if middle[0].is_compaction:
            first_id = middle[0].metadata["compaction"]["from_message_id"]
        last = middle[-1]
        last_id = last.metadata["compaction"]["to_message_id"] if last.is_compaction else last.id
        originals = [m for m in middle if not m.is_compaction]
        result = summarize(build_summary_prompt(originals, previous))
        summary = await result if inspect.isawaitable(result) else result
        if not isinstance(summary, str) or not summary.strip():
            raise ValueError("the summariser returned an empty summary; nothing was compacted")
        return session.add_compaction(summary.strip(), first_id, last_id)

    return compact
