"""The stream worker's wire format: chunks and errors as one JSON object per line.

Both sides of `worker` (the app and the model process) speak it; nothing
here imports LiteLLM.
"""

from __future__ import annotations

import json
from typing import Any

from .chunks import (
    Chunk,
    FinishChunk,
    ReasoningChunk,
    RetryChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from .errors import LLMError

__all__ = ["END", "decode", "encode", "error_from", "error_to"]

END = {"t": "end"}


def error_to(error: LLMError) -> dict[str, Any]:
    return {
        "kind": error.kind,
        "title": error.title,
        "detail": error.detail,
        "hint": error.hint,
        "retry_after": error.retry_after,
        "partial": error.partial,
    }


def error_from(data: dict[str, Any]) -> LLMError:
    return LLMError(
        data.get("kind", "unknown"),
        str(data.get("title") or "The model call failed"),
        str(data.get("detail") or ""),
        str(data.get("hint") or ""),
        data.get("retry_after"),
        partial=bool(data.get("partial")),
    )


def encode(item: Chunk | LLMError | dict[str, Any], request: int) -> bytes:
    """One line for `item` (a chunk, an error, or a ready-made dict such as END)."""
    match item:
        case TextChunk(text=text):
            data: dict[str, Any] = {"t": "text", "text": text}
        case ReasoningChunk(text=text):
            data = {"t": "reasoning", "text": text}
        case ToolCallChunk():
            data = {"t": "call", "call": item.id, "name": item.name, "args": item.arguments_json}
        case UsageChunk():
            data = {"t": "usage", "in": item.input_tokens, "out": item.output_tokens}
            data["cost"] = item.cost
        case FinishChunk(reason=reason):
            data = {"t": "finish", "reason": reason}
        case RetryChunk():
            data = {"t": "retry", "attempt": item.attempt, "max": item.max_retries}
            data.update(delay=item.delay, error=error_to(item.error))
        case LLMError():
            data = {"t": "error", "error": error_to(item)}
        case dict():
            data = dict(item)
    data["id"] = request
    return json.dumps(data, ensure_ascii=False).encode() + b"\n"


def decode(data: dict[str, Any]) -> Chunk | LLMError | None:
    """The chunk or error a decoded line carries; None for END and unknown lines."""
    match data.get("t"):
        case "text":
            return TextChunk(str(data["text"]))
        case "reasoning":
            return ReasoningChunk(str(data["text"]))
        case "call":
            return ToolCallChunk(str(data["call"]), str(data["name"]), str(data["args"]))
        case "usage":
            return UsageChunk(int(data["in"]), int(data["out"]), float(data["cost"]))
        case "finish":
            return FinishChunk(str(data["reason"]))
        case "retry":
            return RetryChunk(
                int(data["attempt"]),
                int(data["max"]),
                float(data["delay"]),
                error_from(data["error"]),
            )
        case "error":
            return error_from(data["error"])
    return None
