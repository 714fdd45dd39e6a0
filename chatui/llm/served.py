"""The models a configured server offers, and the hosted ones a key is set for, for
the model picker.

OpenAI-compatible servers (llama.cpp, vLLM, LM Studio, a LiteLLM proxy) list
theirs at `GET /v1/models`; Ollama at `GET /api/tags`, named `ollama_chat/…` when
the address is its root (see `_lists`). The lists are asked
for in a background thread and cached per address: the picker shows what is
known when it opens, never waits for a server, and shows what comes back (the
workspace's `ModelsListed`).

Hosted providers' chat models come from LiteLLM's own table
(`models_by_provider`, `model_cost`), for the providers whose key variable is
set in the environment (`OPENAI_API_KEY`, …): read only to know that it is set,
never kept or shown. Also made in a background thread and cached, refreshed
when the picker opens.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from .env import load_litellm, provider_key_env
from .windows import _get, _root

__all__ = ["HOSTED", "OLLAMA_PREFIX", "SERVED", "HostedModels", "ServedModels"]

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


OLLAMA_PREFIX = "ollama_chat/"
"""How an Ollama server's models are named: LiteLLM's Ollama provider, which calls
the server's own `/api/chat` at the `api_base` given."""


def _lists(base: str) -> list[tuple[str, str]]:
    """Where a server at `base` lists its models, in the order asked, each with the
    prefix its names take. An address ending in `/v1` is an OpenAI-compatible API:
    bare names, sent there as `openai/…`. At a server's root, Ollama's `/api/tags`
    comes first: Ollama lists the same models at `/v1/models` too, but a bare name
    sent to its root asks `/chat/completions`, which Ollama does not serve."""
    if base.endswith("/v1"):  # Ollama's too, if that is where it was given: bare names
        return [(base + "/models", ""), (_root(base) + "/api/tags", "")]
    return [(base + "/api/tags", OLLAMA_PREFIX), (base + "/v1/models", "")]


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
        found: list[str] = []
        for url, prefix in _lists(base):
            try:
                found = [prefix + name for name in _ids(_get(url, timeout))]
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


MAX_HOSTED = 2_000


def _named_for_litellm(litellm: Any, provider: str, name: str) -> str:
    """`name` as it reaches `provider` through LiteLLM: bare where LiteLLM routes it
    there by itself (gpt-4o, claude-…), else prefixed (gemini/…, a name Vertex would
    otherwise take)."""
    if name.startswith(provider + "/"):
        return name
    try:
        routed = litellm.get_llm_provider(model=name)[1]
    except Exception:  # LiteLLM cannot place the bare name: the prefix does
        routed = None
    return name if routed == provider else f"{provider}/{name}"


class HostedModels:
    """Hosted chat models whose provider's key is set, from LiteLLM's table; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._models: list[tuple[str, str]] = []
        self._for: tuple[str, ...] | None = None
        """The providers (with a key set) the list was made for."""

    def known(self) -> list[tuple[str, str]]:
        """(model, provider's key variable) as last made (never imports LiteLLM)."""
        with self._lock:
            return list(self._models)

    def refresh(self, environ: dict[str, str] | None = None) -> bool:
        """Make the list again if the providers with a key changed (blocking: LiteLLM
        is imported if it was not; call in a thread); True when it changed."""
        environ = dict(os.environ if environ is None else environ)
        litellm = load_litellm()
        by_provider = getattr(litellm, "models_by_provider", {}) or {}
        table = getattr(litellm, "model_cost", {}) or {}
        keyed = tuple(
            sorted(p for p in by_provider if environ.get(provider_key_env(str(p)), "").strip())
        )
        with self._lock:
            if keyed == self._for:
                return False
        found: list[tuple[str, str]] = []
        for provider in keyed:
            names = sorted(
                str(name)
                for name in by_provider[provider]
                if (table.get(name) or table.get(f"{provider}/{name}") or {}).get("mode") == "chat"
            )
            variable = provider_key_env(provider)
            found += [(_named_for_litellm(litellm, provider, n), variable) for n in names]
        with self._lock:
            self._for = keyed
            self._models = list(dict(found).items())[:MAX_HOSTED]
            return True

    def clear(self) -> None:
        with self._lock:
            self._models = []
            self._for = None


HOSTED = HostedModels()
"""The process's list of hosted models a key is set for."""
