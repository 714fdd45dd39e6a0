"""Micro-compaction: shortening single messages, never the stored originals.

`truncate_older_messages` works on copies for what is sent to a model;
`shrink_to_row_limit` keeps one stored row under the store's size limit by
cutting the largest tool outputs first (a tool can be re-run; words cannot).
"""

from __future__ import annotations

import copy

from .messages import Message
from .tokens import value_text

__all__ = ["truncate_older_messages", "shrink_to_row_limit", "PREVIEW_CHARS"]

PREVIEW_CHARS = 1000


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[… truncated {len(text) - limit:,} characters]"


def truncate_older_messages(
    messages: list[Message], keep_recent: int = 4, max_chars: int = 2000
) -> list[Message]:
    """Copies of `messages` with long text and tool outputs of older ones shortened.

    The last `keep_recent` messages are copied untouched.
    """
    result = []
    cutoff = max(len(messages) - max(keep_recent, 0), 0)
    for index, message in enumerate(messages):
        clone = copy.deepcopy(message)
        if index < cutoff:
            for part in clone.parts:
                kind = part.get("type")
                if kind == "tool-result":
                    text = value_text(part.get("output"))
                    if len(text) > max_chars:
                        part["output"] = _cut(text, max_chars)
                elif kind in ("text", "reasoning") and isinstance(part.get("text"), str):
                    part["text"] = _cut(part["text"], max_chars)
        result.append(clone)
    return result


def _size(message: Message) -> int:
    return len(message.to_json().encode())


def shrink_to_row_limit(message: Message, max_bytes: int) -> Message:
    """`message` itself if it fits in `max_bytes`, else a copy cut down until it does.

    Largest tool outputs go first (replaced by a preview and a note that the
    tool can be re-run), then the longest text parts. Never raises for size.
    """
    if _size(message) <= max_bytes:
        return message
    clone = copy.deepcopy(message)
    clone.metadata["shrunk"] = True
    outputs = sorted(
        (p for p in clone.parts if p.get("type") == "tool-result"),
        key=lambda p: len(value_text(p.get("output"))),
        reverse=True,
    )
    for part in outputs:
        text = value_text(part.get("output"))
        part["output"] = (
            f"{text[:PREVIEW_CHARS]}\n[output of {len(text):,} characters was too large to "
            "store; this is a preview. Re-run the tool to see all of it.]"
        )
        if _size(clone) <= max_bytes:
            return clone
    texts = sorted(
        (p for p in clone.parts if isinstance(p.get("text"), str)),
        key=lambda p: len(p["text"]),
        reverse=True,
    )
    for part in texts:
        overflow = _size(clone) - max_bytes
        if overflow <= 0:
            return clone
        text = part["text"]
        keep = max(len(text) - overflow - 200, 0)
        while True:
            part["text"] = _cut(text, keep)
            if _size(clone) <= max_bytes or keep == 0:
                break
            keep //= 2
    if _size(clone) > max_bytes:
        # Only non-text parts remain too large: keep their types, drop bodies.
        clone.parts = [
            {"type": p.get("type", "unknown"), "dropped": "too large to store"} for p in clone.parts
        ]
    return clone
