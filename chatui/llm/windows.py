"""The model's context window, and where the figure came from.

Order of trust: what a context-length error said (the server refused at that
size), what the server says about itself, the config's `context_window`,
LiteLLM's table. A model name LiteLLM knows may be served by a local server
with a much smaller window (a 128k model at 8,192), so for an `api_base` the
server is asked:

- OpenAI-compatible `GET /v1/models`: `context_length`, `max_model_len`
  (vLLM), `meta.n_ctx_train` / `meta.n_ctx` (llama.cpp), `context_window`;
- llama.cpp `GET /props`: `default_generation_settings.n_ctx`, `n_ctx`;
- Ollama `POST /api/show`: `model_info.<arch>.context_length`.

Asking is off the event loop (a thread), once per model and address, with a
short timeout; a slow, failing or nonsensical answer just leaves the next
source in charge. Nothing here blocks start-up.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from .env import DEMO_CONTEXT_WINDOW, is_demo, is_loaded, load_litellm

if TYPE_CHECKING:
    from ..core.config import ModelOptions

__all__ = ["Window", "WindowBook", "WINDOWS", "table_window", "window_from_error"]

log = logging.getLogger(__name__)

ASK_TIMEOUT = 2.0
"""Seconds a server gets to say its window (start-up never waits on it)."""
MAX_SANE_WINDOW = 100_000_000
MAX_ANSWER_BYTES = 2_000_000


@dataclass(frozen=True)
class Window:
    """A context window in tokens (None: unknown) and where it came from."""

    tokens: int | None
    source: str = ""
    """"error", "server", "config", "litellm", "demo" or "" (unknown)."""


def _sane(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = int(value)
    return number if 0 < number <= MAX_SANE_WINDOW else None


_ERROR_PATTERNS = (
    r"maximum context length is (\d[\d,]*)",
    r"context (?:length|window|size)(?: of| is|:)? *\(?(\d[\d,]*)",
    r"n_ctx\W{0,4}(\d[\d,]*)",
    r"(\d[\d,]*)[- ]token context",
    r"limit of (\d[\d,]*) tokens",
)


def window_from_error(message: str) -> int | None:
    """The window a context-length error names ("maximum context length is 8192"), if any."""
    for pattern in _ERROR_PATTERNS:
        match = re.search(pattern, message or "", re.IGNORECASE)
        if match:
            value = _sane(int(match.group(1).replace(",", "")))
            if value is not None and value >= 256:  # "4 tokens" is not a window
                return value
    return None


def _root(api_base: str) -> str:
    """`http://host:port` of an api_base (`…/v1` dropped): where /props and /api live."""
    parts = urlsplit(api_base)
    path = re.sub(r"/v1/?$", "", parts.path.rstrip("/"))
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _get(url: str, timeout: float, body: dict[str, Any] | None = None) -> Any:
    import urllib.request  # with http.client and email: not on the start-up path

    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json"} if data else {}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - the user's api_base
        return json.loads(response.read(MAX_ANSWER_BYTES))


def _bare(model: str) -> str:
    """The model id a server knows (`openai/qwen` → `qwen`)."""
    return model.split("/", 1)[1] if "/" in model else model


def _from_models(answer: Any, model: str) -> int | None:
    entries = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(entries, list):
        return None
    dicts = [e for e in entries if isinstance(e, dict)]
    wanted = [e for e in dicts if e.get("id") in (model, _bare(model))] or dicts[:1]
    for entry in wanted:
        raw_meta = entry.get("meta")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        for value in (
            entry.get("context_length"),
            entry.get("max_model_len"),
            entry.get("context_window"),
            meta.get("n_ctx"),
            meta.get("n_ctx_train"),
        ):
            if (found := _sane(value)) is not None:
                return found
    return None


def _from_props(answer: Any) -> int | None:
    if not isinstance(answer, dict):
        return None
    settings = answer.get("default_generation_settings")
    if isinstance(settings, dict) and (found := _sane(settings.get("n_ctx"))) is not None:
        return found
    return _sane(answer.get("n_ctx"))


def _from_ollama(answer: Any) -> int | None:
    info = answer.get("model_info") if isinstance(answer, dict) else None
    if not isinstance(info, dict):
        return None
    for key, value in info.items():
        if isinstance(key, str) and key.endswith(".context_length"):
            if (found := _sane(value)) is not None:
                return found
    return None


def ask_server(api_base: str, model: str, timeout: float = ASK_TIMEOUT) -> int | None:
    """The window the server at `api_base` reports for `model`; None if it says nothing."""
    base = api_base.rstrip("/")
    root = _root(base)
    models_url = base + "/models" if base.endswith("/v1") else base + "/v1/models"
    asks = (
        (lambda: _from_models(_get(models_url, timeout), model)),
        (lambda: _from_props(_get(root + "/props", timeout))),
        (lambda: _from_ollama(_get(root + "/api/show", timeout, {"model": _bare(model)}))),
    )
    for ask in asks:
        try:
            found = ask()
        except (OSError, ValueError) as exc:  # URLError is an OSError
            log.debug("window of %s at %s: %s", model, api_base, exc)
            continue
        if found is not None:
            return found
    return None


class WindowBook:
    """Windows known so far, per (model, api_base); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._learned: dict[tuple[str, str | None], Window] = {}
        self._asked: set[tuple[str, str | None]] = set()
        self._refused: dict[tuple[str, str | None, str], int] = {}

    def known(self, model: str, options: ModelOptions | None = None) -> Window:
        """The best figure known now (never touches the network)."""
        api_base = options.api_base if options else None
        with self._lock:
            learned = self._learned.get((model, api_base))
        if learned is not None and learned.source == "error":
            return learned
        if learned is not None and learned.source == "server":
            return learned
        if options is not None and options.context_window:
            return Window(options.context_window, "config")
        if is_demo(model):
            return Window(DEMO_CONTEXT_WINDOW, "demo")
        if is_loaded():
            tokens = table_window(model)
            if tokens:
                return Window(tokens, "litellm")
        return Window(None)

    def learn(self, model: str, api_base: str | None, tokens: int, source: str) -> bool:
        """Remember a window; True when it changed what is known."""
        value = _sane(tokens)
        if value is None:
            return False
        with self._lock:
            old = self._learned.get((model, api_base))
            if old is not None and old.source == "error" and source != "error":
                return False  # what the server refused at beats what it advertises
            self._learned[(model, api_base)] = Window(value, source)
            return old != self._learned[(model, api_base)]

    def learn_from_error(self, model: str, api_base: str | None, message: str) -> bool:
        tokens = window_from_error(message)
        return tokens is not None and self.learn(model, api_base, tokens, "error")

    def note_refusal(self, model: str, api_base: str | None, at: str, estimate: int) -> None:
        """The server refused as too long the request answering message `at`, which
        chatui estimated at `estimate` tokens."""
        with self._lock:
            self._refused[(model, api_base, at)] = estimate

    def refused_at(self, model: str, api_base: str | None, at: str) -> int | None:
        """The estimate of the request answering `at` that the server refused as too long
        (None: none was): the same request, as long or longer, would fail the same way."""
        with self._lock:
            return self._refused.get((model, api_base, at))

    def should_ask(self, model: str, api_base: str | None) -> bool:
        """True once per (model, api_base) that has a server worth asking."""
        if not api_base or is_demo(model):
            return False
        with self._lock:
            if (model, api_base) in self._asked:
                return False
            self._asked.add((model, api_base))
            return True

    def detect(self, model: str, api_base: str, timeout: float = ASK_TIMEOUT) -> bool:
        """Ask the server (blocking: call in a thread); True when a new figure was learned."""
        tokens = ask_server(api_base, model, timeout)
        return tokens is not None and self.learn(model, api_base, tokens, "server")

    def clear(self) -> None:
        with self._lock:
            self._learned.clear()
            self._asked.clear()
            self._refused.clear()


_NOT_IN_TABLE: set[str] = set()
"""Models LiteLLM's model table does not know (it does not change while we run)."""


def table_window(model: str) -> int | None:
    """The window LiteLLM's model table gives (input tokens), None when it has none.

    A model the table does not know (any local one) is asked about once: its refusal
    is a row of failed look-ups through the table's fallbacks (~0.04 ms), and every
    measure of the next request asks (several a send)."""
    if model in _NOT_IN_TABLE:
        return None
    try:
        info = load_litellm().get_model_info(model)
    except Exception:
        if len(_NOT_IN_TABLE) < 1000:
            _NOT_IN_TABLE.add(model)
        return None
    for key in ("max_input_tokens", "max_tokens"):
        value = info.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return None


WINDOWS = WindowBook()
"""The process's windows: the engine and the workspace read the same book."""
