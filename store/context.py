"""Context blocks: configuration, their state, and the system-prompt format.

A block is a label plus a provider; what the provider can do (duck typed)
decides its kind: readonly, writable, searchable or loadable. The rendered
system prompt is a sequence of banners, one per block, in declaration order.
"""

from __future__ import annotations

import math
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Literal

from .providers.protocols import can_set, is_searchable, is_skill, is_writable
from .tokens import estimate_string_tokens

__all__ = [
    "BANNER",
    "BlockKind",
    "ContextBlock",
    "ContextConfig",
    "InMemoryProvider",
    "block_kind",
    "render_block",
    "render_system_prompt",
]

BANNER = "═" * 46
BlockKind = Literal["readonly", "writable", "searchable", "loadable"]


@dataclass
class ContextConfig:
    """How to build one context block (the direct-constructor form)."""

    label: str
    description: str | None = None
    max_tokens: int | None = None
    provider: Any = None
    """Any object with async `get()`; None wires the default writable storage."""

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label.strip():
            raise ValueError("a context block needs a non-empty label")
        if self.max_tokens is not None and (
            not isinstance(self.max_tokens, int) or self.max_tokens <= 0
        ):
            raise ValueError(f"max_tokens of {self.label!r} must be a positive integer")


@dataclass(frozen=True)
class ContextBlock:
    """A block as it stands now (content as last loaded from its provider)."""

    label: str
    description: str | None
    content: str
    tokens: int
    max_tokens: int | None
    writable: bool
    is_skill: bool
    is_searchable: bool

    @property
    def kind(self) -> BlockKind:
        """What the block is to the model: its tag in the system prompt."""
        if self.is_searchable:
            return "searchable"
        if self.is_skill:
            return "loadable"
        return "writable" if self.writable else "readonly"

    @property
    def fill(self) -> float | None:
        """tokens / max_tokens, or None without a budget."""
        return self.tokens / self.max_tokens if self.max_tokens else None


def block_kind(provider: Any) -> BlockKind:
    """A provider's kind, from the methods it has (searchable wins over loadable's `set`)."""
    if is_searchable(provider):
        return "searchable"
    if is_skill(provider):
        return "loadable"
    return "writable" if is_writable(provider) else "readonly"


def make_block(config: ContextConfig, provider: Any, content: str) -> ContextBlock:
    """The `ContextBlock` snapshot of a configured block holding `content`."""
    kind = block_kind(provider)
    return ContextBlock(
        label=config.label,
        description=config.description,
        content=content,
        tokens=estimate_string_tokens(content),
        max_tokens=config.max_tokens,
        writable=kind == "writable" or (kind in ("searchable", "loadable") and can_set(provider)),
        is_skill=kind == "loadable",
        is_searchable=kind == "searchable",
    )


def render_block(block: ContextBlock) -> str | None:
    """One banner section; None for an empty read-only block (it is omitted)."""
    if block.kind == "readonly" and not block.content.strip():
        return None
    header = block.label.upper()
    if block.description:
        header += f" ({block.description})"
    if block.max_tokens:
        percent = math.floor(block.tokens * 100 / block.max_tokens)
        header += f" [{percent}% — {block.tokens}/{block.max_tokens} tokens]"
    header += f" [{block.kind}]"
    lines = [BANNER, header, BANNER]
    if block.content:
        lines.append(block.content)
    return "\n".join(lines)


def render_system_prompt(blocks: list[ContextBlock]) -> str:
    """The system prompt: every non-omitted block, joined by a blank line."""
    return "\n\n".join(text for b in blocks if (text := render_block(b)) is not None)


class InMemoryProvider:
    """A writable provider that keeps its content in this process only."""

    def __init__(self, content: str = "") -> None:
        self.content = content

    async def get(self) -> str:
        """The content."""
        return self.content

    async def set(self, content: str) -> None:
        """Replace the content."""
        self.content = content


def run_now(coro: Coroutine[Any, Any, Any]) -> tuple[bool, Any]:
    """Drive a coroutine that never suspends to its result without an event loop.

    The built-in SQLite providers are `async` for the protocol's sake but never
    await I/O, so sync getters can still read them. Returns (False, None) and
    closes the coroutine when it would have suspended.
    """
    try:
        coro.send(None)
    except StopIteration as done:
        return True, done.value
    coro.close()
    return False, None
