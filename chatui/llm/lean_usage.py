"""A stream's last chunk with the usage its server reported, not the whole reply assembled again.

When a stream's server has sent its last event, LiteLLM's stream wrapper
(`CustomStreamWrapper._finalize_completed_stream`) makes the usage chunk it
yields last from `stream_chunk_builder`, run in a worker thread: the whole reply
assembled again from its chunks (content joined, usage gathered, priced,
metadata stamped), then deep-copied and handed to a task that stores it in a
cache. chatui reads two numbers of that chunk: the prompt's tokens and the
reply's (`_ending`). When the server reported them in one usage event, they are
the numbers the builder takes (`ChunkProcessor.calculate_usage`: a count the
server reported wins over any estimate of LiteLLM's), so that event's usage is
given as is: about 3 ms of CPU a call in the model process, taken from a local
model generating on the same cores (issue 22).

Used only while nothing else of LiteLLM's reads the assembled reply (no
callback, budget or cache: `_bookkeeping_read`), and only for a stream whose
usage came as one event with both counts and not from Anthropic (whose first
event carries a placeholder count the builder may set aside); any other stream
ends as LiteLLM ends it.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["install", "reported"]

log = logging.getLogger(__name__)


def reported(chunks: list[Any]) -> Any:
    """The usage the server reported in one event among `chunks` (LiteLLM's kept
    chunks), with both counts; None when there is none, or more than one, or a
    chunk's usage LiteLLM keeps elsewhere (its hidden parameters)."""
    found = None
    for chunk in chunks:
        usage = getattr(chunk, "usage", None)
        if usage is None:
            hidden = getattr(chunk, "_hidden_params", None)
            if isinstance(hidden, dict) and hidden.get("usage") is not None:
                return None
            continue
        if found is not None:
            return None  # several events: LiteLLM's own rules choose
        found = usage
    if found is None:
        return None
    counts = (getattr(found, "prompt_tokens", None), getattr(found, "completion_tokens", None))
    if all(type(count) is int and count >= 0 for count in counts):
        return found
    return None


def install(stream: Any) -> bool:
    """End `stream` (a `CustomStreamWrapper`) with its server's usage when it reported
    it (`reported`); False when the wrapper has no such step (nothing changed)."""
    original = getattr(stream, "_finalize_completed_stream", None)
    if original is None or not hasattr(stream, "model_response_creator"):
        log.info("LiteLLM's stream has no _finalize_completed_stream: its usage step is kept")
        return False

    async def _lean(cache_hit: bool) -> Any:
        if (
            stream.sent_last_chunk is True
            and stream.sent_stream_usage is False
            and stream.send_stream_usage is True
            and getattr(stream, "custom_llm_provider", None) != "anthropic"
        ):
            usage = reported(stream.chunks)
            if usage is not None:
                stream.sent_stream_usage = True
                response = stream.model_response_creator()
                response.usage = usage
                return response
        return await original(cache_hit=cache_hit)

    stream._finalize_completed_stream = _lean
    return True
