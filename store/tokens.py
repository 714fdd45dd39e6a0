"""Heuristic token estimation (no tokenizer download, deterministic)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from .messages import Message
from .text import as_text

__all__ = [
    "estimate_string_tokens",
    "estimate_message_tokens",
    "attachment_tokens",
    "IMAGE_TOKENS",
    "TokenCounter",
    "part_text",
    "value_text",
]

TokenCounter = Callable[[list[Message]], int]
PER_MESSAGE_OVERHEAD = 4
IMAGE_TOKENS = 765
"""An attached image's estimate: OpenAI's figure for a 1024×1024 image at high detail
(85 + 4 tiles × 170); the store never decodes images to know their size."""


def estimate_string_tokens(text: str) -> int:
    """`ceil(max(chars / 4, words * 1.3))`; 0 for the empty string."""
    if not text:
        return 0
    return math.ceil(max(len(text) / 4, len(text.split()) * 1.3))


def part_text(part: dict[str, Any]) -> str:
    """The text of a part that counts toward the context window."""
    kind = part.get("type")
    if kind in ("text", "reasoning"):
        return str(part.get("text") or "")
    if kind == "tool-call":
        return value_text(part.get("input"))
    if kind == "tool-result":
        return value_text(part.get("output"))
    return ""


def value_text(value: Any) -> str:
    """A tool input or output as text, compact: `store.text.as_text` without indenting."""
    return as_text(value, indent=None)


def attachment_tokens(part: dict[str, Any]) -> int:
    """An attachment part's estimate: a text file's `tokens` (counted when it was
    stored), `IMAGE_TOKENS` for an image, 0 for anything else (never sent)."""
    tokens = part.get("tokens")
    if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0:
        return tokens
    return IMAGE_TOKENS if str(part.get("mime") or "").startswith("image/") else 0


def estimate_message_tokens(messages: Iterable[Message]) -> int:
    """Sum of 4 per message plus the estimate of its text, reasoning, tool I/O and
    attachments (`attachment_tokens`)."""
    total = 0
    for message in messages:
        total += PER_MESSAGE_OVERHEAD
        for part in message.parts:
            if part.get("type") == "attachment":
                total += attachment_tokens(part)
            else:
                total += estimate_string_tokens(part_text(part))
    return total
