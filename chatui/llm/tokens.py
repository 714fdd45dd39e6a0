"""Token counts by the server's own tokenizer, where the server can count.

llama.cpp's `llama-server` has `POST /tokenize` ({"content": text}),
llama-cpp-python's server `POST /extras/tokenize` ({"input": text}) and vLLM
`POST /tokenize` ({"prompt": text}); each answers {"tokens": [...]}. For such a server the sidebar's figure is counted,
not estimated: each piece of the request (the system prompt, each tool's
schema, each message's text) is tokenized once, off the event loop, and
remembered by its text. The chat template's few tokens around each message
are not in any piece: `store.PER_MESSAGE_OVERHEAD` stands for them.

What is asked, and when: `TOKENS.missing(api_base, texts)` says which pieces
have no count yet; `TOKENS.count(api_base, texts)` (blocking: a thread) asks
the server for them. A server with neither route is remembered as such after
one try, and its figures stay estimates.

OpenAI's hosted models are counted the same way by LiteLLM's tokenizer for the
model (tiktoken's encoding, shipped inside LiteLLM: nothing is downloaded),
under the key `litellm:MODEL` in place of an address (`counting_key`). Other
hosted providers' tokenizers are not public (LiteLLM would count Claude 3+ or
Gemini with OpenAI's encoding): their pieces stay estimated.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable

from .env import is_loaded, load_litellm, provider_of
from .windows import _root

__all__ = ["LOCAL", "TOKENS", "TokenBook", "counting_key"]

log = logging.getLogger(__name__)

ASK_TIMEOUT = 2.0
MAX_REMEMBERED = 20_000
"""Texts whose counts are kept (oldest forgotten first)."""

_ROUTES = (("/tokenize", "content"), ("/extras/tokenize", "input"), ("/tokenize", "prompt"))
"""llama-server's route and body key, llama-cpp-python's, then vLLM's (asked without
its special tokens, as llama-server's is by default: a BOS is the template's)."""
LOCAL = "litellm:"
"""The key of a model counted by LiteLLM's tokenizer, in this process."""
COUNTED_PROVIDERS = frozenset({"openai"})
"""Providers whose tokenizer LiteLLM has for real (tiktoken, by the model's encoding)."""


def counting_key(api_base: str | None, model: str) -> str | None:
    """Where `model`'s tokens are counted: its server (`api_base`), LiteLLM's tokenizer
    for an OpenAI hosted model (once LiteLLM is loaded: never imported for this), or
    nowhere (None: estimates)."""
    if api_base:
        return api_base
    if "/" not in model and not is_loaded():
        return None  # the provider of a bare name is LiteLLM's to say: not yet loaded
    return LOCAL + model if _counted_here(model) else None


@functools.lru_cache(maxsize=256)
def _counted_here(model: str) -> bool:
    return provider_of(model) in COUNTED_PROVIDERS


class TokenBook:
    """Counts by each server's tokenizer, per (api_base, text); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._route: dict[str, tuple[str, str] | None] = {}
        """api_base → the route that counts there (None: the server cannot count)."""
        self._bias: dict[str, int] = {}
        """api_base → the tokens its route adds to any text (`_learn_bias`)."""

    def counts(self, api_base: str | None) -> bool | None:
        """True when the server counts, False when it cannot, None when not yet tried."""
        if not api_base:
            return False
        with self._lock:
            if api_base not in self._route:
                return None
            return self._route[api_base] is not None

    def known(self, api_base: str | None, text: str) -> int | None:
        """The server's count of `text`, if it was counted (never touches the network)."""
        if not api_base:
            return None
        if not text:
            return 0
        with self._lock:
            return self._counts.get((api_base, text))

    def missing(self, api_base: str | None, texts: Iterable[str]) -> list[str]:
        """The texts without a count yet, when the server can (or may) count them."""
        if not api_base or self.counts(api_base) is False:
            return []
        with self._lock:
            return list(dict.fromkeys(t for t in texts if t and (api_base, t) not in self._counts))

    def count(self, api_base: str, texts: Iterable[str], timeout: float = ASK_TIMEOUT) -> bool:
        """Ask the server to count `texts` (blocking: call in a thread); True when a new
        count was learned. A server that cannot count is remembered after one try."""
        learned = False
        for text in self.missing(api_base, texts):
            tokens = self._ask(api_base, text, timeout)
            if tokens is None:
                break
            with self._lock:
                self._counts[(api_base, text)] = tokens
                if len(self._counts) > MAX_REMEMBERED:
                    self._counts.popitem(last=False)
            learned = True
        return learned

    def _ask(self, api_base: str, text: str, timeout: float) -> int | None:
        if api_base.startswith(LOCAL):
            return self._ask_litellm(api_base, text)
        with self._lock:
            routes = [self._route[api_base]] if api_base in self._route else list(_ROUTES)
        import urllib.error

        root = _root(api_base.rstrip("/"))
        answered = False
        for route in routes:
            if route is None:
                return None
            path, key = route
            try:
                body: dict[str, object] = {key: text}
                if key == "prompt":
                    body["add_special_tokens"] = False
                answer = _post(root + path, body, timeout)
                tokens = answer.get("tokens") if isinstance(answer, dict) else None
                if not isinstance(tokens, list):
                    raise ValueError("no tokens in the answer")
            except (OSError, ValueError) as exc:  # URLError and HTTPError are OSErrors
                # An answer without tokens (404, not JSON) says the route is not there;
                # no answer at all (the server is down) says nothing yet.
                answered = answered or isinstance(exc, urllib.error.HTTPError | ValueError)
                log.debug("tokenize at %s%s: %s", root, path, exc)
                continue
            with self._lock:
                found = api_base not in self._route
                self._route[api_base] = route
            if found:
                self._learn_bias(api_base, root, route, timeout)
            with self._lock:
                return max(0, len(tokens) - self._bias.get(api_base, 0))
        if answered:
            with self._lock:
                if api_base not in self._route:
                    self._route[api_base] = None  # it answered every route: it cannot count
        return None

    def _learn_bias(self, api_base: str, root: str, route: tuple[str, str], timeout: float) -> None:
        """What the route adds to every text: the tokens of the empty text (a BOS, where
        llama-cpp-python's route adds one and the model takes one). Counted once per
        request by the template, not once per piece: taken off each piece's count."""
        path, key = route
        body: dict[str, object] = {key: ""}
        if key == "prompt":
            body["add_special_tokens"] = False
        try:
            answer = _post(root + path, body, timeout)
            tokens = answer.get("tokens") if isinstance(answer, dict) else None
        except (OSError, ValueError) as exc:
            log.debug("tokenize of nothing at %s%s: %s", root, path, exc)
            return
        if isinstance(tokens, list):
            with self._lock:
                self._bias[api_base] = len(tokens)

    def _ask_litellm(self, key: str, text: str) -> int | None:
        """LiteLLM's count of `text` for the model; a tokenizer that cannot be had
        offline (an encoding file missing) makes the model's figures estimates."""
        try:
            tokens = int(load_litellm().token_counter(model=key[len(LOCAL) :], text=text))
        except Exception as exc:  # any failure of an optional count: estimates stay
            log.debug("LiteLLM's tokenizer for %s: %s", key, exc)
            with self._lock:
                self._route[key] = None
            return None
        with self._lock:
            self._route[key] = (key, "")
        return tokens

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()
            self._route.clear()
            self._bias.clear()


def _post(url: str, body: dict[str, object], timeout: float) -> object:
    import urllib.request  # not on the start-up path

    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - the user's api_base
        return json.loads(response.read(4_000_000))


TOKENS = TokenBook()
"""The process's counts: the engine and the workspace read the same book."""
