"""How full the model's context window is: the one figure the sidebar shows and
auto-compaction acts on.

Both read it here so the gauge the user sees and the threshold the engine
compacts at can never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from store import Message, Session, estimate_message_tokens, estimate_string_tokens

__all__ = ["ContextUsage", "measure"]


@dataclass(frozen=True)
class ContextUsage:
    """How full the model's context window is for one path of a chat."""

    tokens: int
    """Estimated tokens of the history (overlays applied) plus the system prompt."""
    window: int | None
    """The model's context window, None when nothing says what it is."""
    model: str
    source: str = ""
    """Where `window` came from: server, error, config, litellm, demo ("" when unknown)."""

    @property
    def fraction(self) -> float | None:
        """tokens / window, None when the window is unknown."""
        return self.tokens / self.window if self.window else None

    def over(self, share: float) -> bool:
        """True when the path fills more than `share` of a known window."""
        return bool(self.window) and self.tokens > share * (self.window or 0)


async def measure(
    session: Session | None,
    history: Sequence[Message],
    model: str,
    window: int | None,
    source: str = "",
    *,
    prompt_tokens: int | None = None,
) -> ContextUsage:
    """Tokens of `history` plus the session's (frozen) system prompt against `window`.

    `prompt_tokens` stands in for the prompt when given: a new chat's template
    blocks, or a stored chat's blocks as the branch on screen holds them.
    """
    if prompt_tokens is not None:
        prompt = prompt_tokens
    elif session is not None:
        prompt = estimate_string_tokens(await session.freeze_system_prompt())
    else:
        prompt = 0
    return ContextUsage(estimate_message_tokens(list(history)) + prompt, window, model, source)
