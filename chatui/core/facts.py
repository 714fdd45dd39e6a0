"""`ChatFacts`: what a chat runs and what its next request holds, decided by one rule.

Which model a chat uses, which window that model has and how many tokens the
next request holds are each decided here, once per turn or redraw; the
sidebar, the title, F2 and auto-compaction read the result, never their own.

- The model (`choose_model`): the chat's own (picked with ctrl+l, or given
  with --model when the chat was opened at launch), else its agent's; a new
  chat not stored yet takes the model picked for it, else its agent's, else
  --model, else the config's `model`. A new chat never inherits the model of
  the chat shown before it: the configured default wins, and the sidebar says
  where the model came from.
- The window (`window_of`): what the model's server said, else what a refused
  request said, else the config's `context_window`, else LiteLLM's table.
- The request's size: `context_usage.measure` (prompt, tools and messages).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

from store import AgentInfo, ContextBlock, SessionInfo

from ..llm.windows import WINDOWS, Window
from .config import Config
from .context_usage import ContextUsage, Measured, NextRequest
from .params import params_of

__all__ = ["ChatFacts", "ModelChoice", "ModelSource", "choose_model", "window_of"]

ModelSource: TypeAlias = Literal["chat", "agent", "picked", "launch", "config"]


@dataclass(frozen=True)
class ModelChoice:
    """A chat's model and where the choice came from."""

    model: str
    source: ModelSource
    agent: str | None = None
    """The agent's name, when the model is its."""

    @property
    def why(self) -> str:
        """Where the model came from, in words (the sidebar shows it)."""
        return {
            "chat": "this chat's",
            "agent": f"agent {self.agent}'s",
            "picked": "picked for this chat",
            "launch": "--model",
            "config": "config default",
        }[self.source]


def choose_model(
    info: SessionInfo | None,
    agent: AgentInfo | None,
    config: Config,
    *,
    picked: str | None = None,
    launch: str | None = None,
) -> ModelChoice:
    """The model a chat runs (`info` None: a new chat, not stored yet).

    Args:
        picked: for a new chat, the model chosen for it (ctrl+l before the first send).
        launch: --model (a new chat's default before the config's).
    """
    if info is not None and info.model:
        return ModelChoice(info.model, "chat")
    if info is None and picked:
        return ModelChoice(picked, "picked")
    if agent is not None and agent.model:
        return ModelChoice(agent.model, "agent", agent.name)
    if info is None and launch:
        return ModelChoice(launch, "launch")
    return ModelChoice(config.model, "config")


def window_of(config: Config, model: str) -> Window:
    """The model's context window and where the figure came from (never asks a server:
    `Workspace` asks an `api_base` server once, in the background)."""
    return WINDOWS.known(model, config.options_for(model))


@dataclass(frozen=True)
class ChatFacts:
    """One chat (or the new chat on screen), resolved once: everything the panes say
    about it besides its messages."""

    session_id: str | None
    """None: a new chat, stored with its first message."""
    info: SessionInfo | None
    """The chat's row as read for these facts (None for a new chat)."""
    agent: AgentInfo | None
    model: ModelChoice
    measured: Measured
    """The next request: the blocks it renders, the prompt and tools, its size."""
    compact_at: float
    """Auto-compaction's threshold, a share of the window."""

    @property
    def name(self) -> str | None:
        return self.info.name if self.info is not None else None

    @property
    def blocks(self) -> tuple[ContextBlock, ...]:
        return self.measured.blocks

    @property
    def params(self) -> dict[str, Any]:
        """The chat's parameters sent with each request (temperature, max tokens, ...)."""
        return params_of(self.info.metadata) if self.info is not None else {}

    @property
    def request(self) -> NextRequest:
        return self.measured.request

    @property
    def usage(self) -> ContextUsage:
        return self.measured.usage

    def stored(self, info: SessionInfo) -> ChatFacts:
        """A new chat's facts once its first send stored it as `info` (no read)."""
        model = ModelChoice(info.model, "chat") if info.model else self.model
        return replace(self, session_id=info.id, info=info, model=model)

    def remeasured(self, measured: Measured) -> ChatFacts:
        """The same chat with its request measured again (at the end of a turn)."""
        return replace(self, measured=measured)

    def spent(self, input_tokens: int, output_tokens: int, cost: float) -> ChatFacts:
        """The same chat after a model call added to its counters (no read: the engine
        stored the same sums)."""
        if self.info is None:
            return self
        info = replace(
            self.info,
            input_tokens=self.info.input_tokens + input_tokens,
            output_tokens=self.info.output_tokens + output_tokens,
            cost=self.info.cost + cost,
        )
        return replace(self, info=info)
