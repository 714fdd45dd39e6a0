"""The models a configured server offers, for the model picker.

OpenAI-compatible servers (llama.cpp, vLLM, LM Studio, a LiteLLM proxy) list
theirs at `GET /v1/models`; Ollama at `GET /api/tags`. The lists are asked
for in a background thread and cached per address: the picker shows what is
known when it opens and never waits for a server.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from .windows import _get, _root

__all__ = ["SERVED", "ServedModels"]

log = logging.getLogger(__name__)

ASK_TIMEOUT = 2.0
MAX_MODELS = 500


def _ids(answer: Any) -> list[str]:
    """Model ids from a `/v1/models` (`data[].id`) or `/api/tags` (`models[].name`) answer."""
    if not isinstance(answer, dict):
        return []
    found = []
    for key, field in (("data", "id"), ("models", "name")):
        entries = answer.get(key)
        if isinstance(entries, list):
            found += [
                e[field] for e in entries if isinstance(e, dict) and isinstance(e.get(field), str)
            ]
    return [name for name in dict.fromkeys(found) if name.strip()][:MAX_MODELS]


class ServedModels:
    """Model ids per server address, as last asked; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._models: dict[str, list[str]] = {}

    def known(self, api_base: str) -> list[str]:
        """What the server listed when last asked (never touches the network)."""
        with self._lock:
            return list(self._models.get(api_base, []))

    def refresh(self, api_base: str, timeout: float = ASK_TIMEOUT) -> bool:
        """Ask the server again (blocking: call in a thread); True when the list changed."""
        base = api_base.rstrip("/")
        models_url = base + "/models" if base.endswith("/v1") else base + "/v1/models"
        found: list[str] = []
        for url in (models_url, _root(base) + "/api/tags"):
            try:
                found = _ids(_get(url, timeout))
            except (OSError, ValueError) as exc:
                log.debug("models at %s: %s", url, exc)
                continue
            if found:
                break
        with self._lock:
            if not found or self._models.get(api_base) == found:
                return False
            self._models[api_base] = found
            return True

    def clear(self) -> None:
        with self._lock:
            self._models.clear()


SERVED = ServedModels()
"""The process's lists of served models."""
