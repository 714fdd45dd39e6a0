"""A streamed chunk's model built by pydantic's validator, not by the OpenAI client's walk.

LiteLLM streams from OpenAI-compatible servers through the `openai` client,
which turns every SSE event into a `ChatCompletionChunk` with `construct_type`:
a lenient builder written in Python that reads the type hints of every field of
every nested model (the chunk, its choices, the delta, ...), about 0.1 ms of
CPU per chunk, taken from a local model generating on the same cores. For the
same data pydantic's own validator (compiled) builds the same objects about
20 times faster.

The validator is used only where it gives the same result: when it accepts the
data. Anything it refuses (a field of an unexpected type, a `finish_reason`
the types do not list) goes to the client's own lenient builder, as before, so
no chunk that streamed before is refused now. A client set to validate strictly
keeps its own path.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["install"]

log = logging.getLogger(__name__)


def install() -> bool:
    """Build streamed chat chunks with the validator first (idempotent); False when
    the client has no such hook (nothing changed)."""
    import pydantic
    from openai._base_client import BaseClient
    from openai.types.chat import ChatCompletionChunk

    original = getattr(BaseClient, "_process_response_data", None)
    if original is None:
        log.info("the OpenAI client has no _process_response_data: its chunk builder is kept")
        return False
    if getattr(original, "chatui_lean", False):
        return True
    validate = ChatCompletionChunk.model_validate

    def _lean(self: Any, *, data: object, cast_to: Any, response: Any) -> Any:
        if (
            cast_to is ChatCompletionChunk
            and type(data) is dict
            and not self._strict_response_validation
        ):
            try:
                return validate(data)
            except pydantic.ValidationError:
                pass  # the lenient builder below keeps what the types do not list
        return original(self, data=data, cast_to=cast_to, response=response)

    _lean.chatui_lean = True  # type: ignore[attr-defined]
    BaseClient._process_response_data = _lean  # type: ignore[method-assign]
    return True
