"""LiteLLM's pricing of each call, skipped while nothing of LiteLLM's reads the price.

LiteLLM prices every call twice for itself: when the response arrives (a
"response_cost" among the response's hidden parameters) and when a stream ends
(a `cost` on the usage it assembles). chatui reads neither: it prices a reply
itself (`completion_cost`, from the usage). For a model its price table does
not know (any local model) each pricing is a row of failed look-ups through the
table's fallbacks: about 3 ms of CPU a send in the model process, taken from a
local model generating on the same cores (issue 22).

The price is left out only while nothing of LiteLLM's could read it: no
callback of LiteLLM's is set (its logging integrations) and no budget. A
program that sets one gets LiteLLM's pricing back on its next call.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["install", "listening"]

log = logging.getLogger(__name__)

_READERS = (
    "success_callback",
    "_async_success_callback",
    "failure_callback",
    "_async_failure_callback",
    "callbacks",
    "max_budget",
)
"""LiteLLM's settings whose users read a call's price (its callbacks, its budget)."""


def listening(litellm: Any) -> bool:
    """Something of LiteLLM's reads a call's price or its logging: a callback, a budget."""
    return any(getattr(litellm, name, None) for name in _READERS)


def install() -> bool:
    """Skip LiteLLM's pricing of a call while `listening` is False (idempotent); False
    when LiteLLM has no such hook (nothing changed)."""
    import litellm
    from litellm.litellm_core_utils.litellm_logging import Logging

    original = getattr(Logging, "response_cost_calculator", None)
    if original is None:
        log.info("LiteLLM's logging has no response_cost_calculator: its pricing is kept")
        return False
    if getattr(original, "chatui_lean", False):
        return True

    def _lean(self: Any, *args: Any, **kwargs: Any) -> float | None:
        if not listening(litellm):
            return None  # read by nobody: LiteLLM takes None as "no price"
        return original(self, *args, **kwargs)

    _lean.chatui_lean = True  # type: ignore[attr-defined]
    Logging.response_cost_calculator = _lean  # type: ignore[method-assign]
    return True
