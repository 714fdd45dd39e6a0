"""What a streamed model call yields: text, reasoning, tool calls, usage, retries."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol, TypeAlias

from .errors import LLMError

__all__ = [
    "Chunk",
    "ChunkStream",
    "FinishChunk",
    "ReasoningChunk",
    "RetryChunk",
    "TextChunk",
    "ToolCallChunk",
    "UsageChunk",
]


@dataclass(frozen=True)
class TextChunk:
    """Reply text, in the order it arrived."""

    text: str


@dataclass(frozen=True)
class ReasoningChunk:
    """Reasoning ("thinking") text, for models that stream it."""

    text: str


@dataclass(frozen=True)
class ToolCallChunk:
    """One complete tool call (emitted once its arguments have fully arrived)."""

    id: str
    name: str
    arguments_json: str


@dataclass(frozen=True)
class UsageChunk:
    """Tokens of the call and its cost in USD (0.0 when LiteLLM has no price)."""

    input_tokens: int
    output_tokens: int
    cost: float


@dataclass(frozen=True)
class FinishChunk:
    """Why the model stopped (`finish_reason`): "stop", "tool_calls", or "length" when
    its output limit cut the reply off (the reply is then truncated, not complete)."""

    reason: str


@dataclass(frozen=True)
class RetryChunk:
    """The provider said "too many requests"; the call is retried after `delay` seconds."""

    attempt: int
    max_retries: int
    delay: float
    error: LLMError


Chunk: TypeAlias = (
    TextChunk | ReasoningChunk | ToolCallChunk | UsageChunk | RetryChunk | FinishChunk
)


class ChunkStream(Protocol):
    """A model call's chunks: an async generator (`stream_completion`), or the model
    process's stream (`worker.StreamWorker.stream`, whose request is out already).
    Whoever iterates one closes it."""

    def __aiter__(self) -> AsyncIterator[Chunk]: ...

    async def __anext__(self) -> Chunk: ...

    async def aclose(self) -> None: ...
