"""What a server said a request cost, to correct the next request's figure.

Counting each piece of a request (the system prompt, each tool's schema, each
message part) leaves out what only the server adds: the chat template's
tokens around each message and before the reply, the way it renders the tools
(another text than their JSON, or nothing when its template drops them), a
BOS token. The server's usage says the whole: `prompt_tokens` of the request
it was sent. Set against the pieces of that same request, it teaches the rest:

- **per chat** (an anchor): the next request of the same chat is the last one
  plus what changed (the reply, the new question, a rewritten system prompt),
  so its figure is the server's count plus the pieces added less the pieces
  gone, plus the template's cost of each message added. When every piece that
  changed was counted (by the server's tokenizer, or a reply by the server's
  own `completion_tokens`), the figure is exact even where the pieces that
  stayed were only estimated (Ollama, hosted models): their error cancels.
- **per server** (a fit): where every piece was counted, the difference is the
  template's alone: `intercept + per_message × messages`, the same for every
  chat with the same tools; two requests with different message counts give
  the per-message cost. A new chat's figure takes it.

Keys hold no text: pieces are remembered by a digest, with their tokens.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["TEMPLATES", "Piece", "TemplateCosts", "server_key"]

DEFAULT_PER_MESSAGE = 4
"""The template's tokens around a message until two requests teach the server's
(`store.PER_MESSAGE_OVERHEAD`: ChatML's `<|im_start|>role\\n … <|im_end|>\\n`)."""
MAX_PER_MESSAGE = 16
"""A learned per-message cost above this (or below 0) is noise: not taken."""
COUNTED_SHARE = 0.9
ESTIMATED_SHARE = 0.5
"""The least share of its pieces' tokens a server's count of a request may be."""
SMALL_REQUEST = 100
"""A template's tokens may double a request of a few words: allowed above 2×."""
MAX_ANCHORS = 500
MAX_REPLIES = 2_000


@dataclass(frozen=True)
class Piece:
    """One piece of a request, as measured: its digest, tokens, and whether counted."""

    digest: str
    tokens: int
    counted: bool

    @classmethod
    def of(cls, text: str, tokens: int, counted: bool) -> Piece:
        return cls(_digest(text), tokens, counted)


def _slope_known(fit: _Fit | None, added: int) -> bool:
    """Whether a figure `added` messages away from a count may be called exact. The
    template's cost of a message is the default's guess until two counts taught it:
    off by a token or two for the one message a turn adds to the last count (a reply),
    but an old count's error grows each turn (a figure called exact drifted 3 tokens a
    turn on SmolLM2's server, -3.8 % after 8 turns)."""
    return abs(added) <= 1 or (fit is not None and fit.per_message is not None)


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def server_key(api_base: str | None, model: str, tool_names: Sequence[str]) -> str:
    """What a template's cost depends on: the server, the model, the tools offered."""
    return "\n".join((api_base or "", model, ",".join(sorted(tool_names))))


@dataclass(frozen=True)
class _Anchor:
    pieces: Counter[str]
    tokens: dict[str, tuple[int, bool]]
    messages: int
    prompt_tokens: int


@dataclass(frozen=True)
class _Fit:
    messages: int
    rest: int
    """prompt_tokens − the pieces' tokens, of the last fully counted request."""
    per_message: float | None
    """Learned from two fully counted requests with different message counts."""


class TemplateCosts:
    """The servers' counts of past requests, per chat and per server; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._anchors: OrderedDict[tuple[str, str], _Anchor] = OrderedDict()
        self._fits: dict[str, _Fit] = {}
        self._replies: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._probed: set[str] = set()

    def learn(
        self,
        key: str,
        chat: str,
        pieces: Sequence[Piece],
        messages: int,
        prompt_tokens: int,
        optional: int = 0,
    ) -> bool:
        """The server counted `prompt_tokens` for a request of `messages` messages (the
        system prompt not among them) made of `pieces`, of which `optional` tokens (the
        tools) a template may leave out. False when the count cannot be this request's
        (under 90 % of what must be there when counted, half when estimated, or over
        twice the whole): not learned."""
        whole = sum(p.tokens for p in pieces)
        # Counted pieces are what the prompt holds at least (the template only adds);
        # estimates may be a third off. Under that, the count is not the whole prompt's:
        # a server that reports only what its cache did not hold, a stand-in figure.
        share = COUNTED_SHARE if all(p.counted for p in pieces) else ESTIMATED_SHARE
        if not (whole - optional) * share <= prompt_tokens <= 2 * whole + SMALL_REQUEST:
            return False
        bag = Counter(p.digest for p in pieces)
        tokens = {p.digest: (p.tokens, p.counted) for p in pieces}
        with self._lock:
            self._anchors[(key, chat)] = _Anchor(bag, tokens, messages, prompt_tokens)
            self._anchors.move_to_end((key, chat))
            while len(self._anchors) > MAX_ANCHORS:
                self._anchors.popitem(last=False)
            if not all(p.counted for p in pieces):
                return True
            rest = prompt_tokens - whole
            before = self._fits.get(key)
            per_message = before.per_message if before else None
            if before is not None and before.messages != messages:
                slope = (rest - before.rest) / (messages - before.messages)
                if 0 <= slope <= MAX_PER_MESSAGE:
                    per_message = slope
            self._fits[key] = _Fit(messages, rest, per_message)
        return True

    def learn_reply(self, key: str, text: str, completion_tokens: int) -> None:
        """A reply's text cost `completion_tokens` as the server counted it: its tokens
        when the next request sends it back."""
        if not text or completion_tokens <= 0:
            return
        with self._lock:
            self._replies[(key, _digest(text))] = completion_tokens
            while len(self._replies) > MAX_REPLIES:
                self._replies.popitem(last=False)

    def reply(self, key: str, text: str) -> int | None:
        """A reply's tokens as the server counted them when it wrote it, if known."""
        if not text:
            return None
        with self._lock:
            return self._replies.get((key, _digest(text)))

    def per_message(self, key: str) -> float:
        """The template's tokens around one message on this server (learned, else 4)."""
        with self._lock:
            fit = self._fits.get(key)
        if fit is None or fit.per_message is None:
            return DEFAULT_PER_MESSAGE
        return fit.per_message

    def figure(
        self, key: str, chat: str, pieces: Sequence[Piece], messages: int
    ) -> tuple[int, bool] | None:
        """The request's tokens as the server will count them, and whether that is exact
        (everything not anchored in a past count was counted); None when nothing was
        learned that applies (the caller keeps its own figure)."""
        per_message = self.per_message(key)
        with self._lock:
            anchor = self._anchors.get((key, chat))
            fit = self._fits.get(key)
        if anchor is not None:
            # Measured against the last count even when much changed (another branch, a
            # compacted path): the count holds the template's share, which estimates
            # lack, and the pieces' estimates err no more than they would alone.
            bag = Counter(p.digest for p in pieces)
            tokens = {p.digest: (p.tokens, p.counted) for p in pieces}
            added = bag - anchor.pieces
            gone = anchor.pieces - bag
            figure = anchor.prompt_tokens + per_message * (messages - anchor.messages)
            figure += sum(tokens[d][0] * n for d, n in added.items())
            figure -= sum(anchor.tokens[d][0] * n for d, n in gone.items())
            exact = all(tokens[d][1] for d in added) and all(anchor.tokens[d][1] for d in gone)
            exact = exact and _slope_known(fit, messages - anchor.messages)
            return max(0, round(figure)), exact
        if fit is not None and pieces and all(p.counted for p in pieces):
            figure = sum(p.tokens for p in pieces) + fit.rest
            figure += per_message * (messages - fit.messages)
            return max(0, round(figure)), _slope_known(fit, messages - fit.messages)
        return None

    def should_probe(self, key: str) -> bool:
        """True once per key with nothing fitted yet: the caller asks the server for the
        counts of two small requests (`ChatEngine`, for a server that streams without
        usage, as llama-cpp-python's does)."""
        with self._lock:
            if key in self._fits or key in self._probed:
                return False
            self._probed.add(key)
            return True

    def probe_given_up(self, key: str) -> None:
        """The probe `should_probe` allowed was not asked to its end (it gave way to a
        user's turn): the next caller may ask again."""
        with self._lock:
            self._probed.discard(key)

    def clear(self) -> None:
        with self._lock:
            self._probed.clear()
            self._anchors.clear()
            self._fits.clear()
            self._replies.clear()


TEMPLATES = TemplateCosts()
"""The process's book: the engine learns into it and every figure reads it."""
