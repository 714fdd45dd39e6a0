"""How much a chat's next request holds against the model's window: the one measure
the sidebar, F2 (the prompt screen) and auto-compaction all read.

The request is what `ChatEngine` sends: the system prompt as the branch's blocks
render it now (a turn refreshes the prompt before it calls the model), every
tool the engine offers (`ChatEngine.tools_for`: memory, search, peers, whatever
source adds more), and the path's messages with summaries in place. One
function measures it (`measure`), from those three inputs; whoever has them
(the engine at the end of a turn, the workspace on a redraw) calls it, so the
gauge the user sees and the figure compaction acts on are one number.

Figures are counted by the server's own tokenizer where it has one (`count`:
`chatui.llm.tokens`, llama.cpp's `/tokenize`), each piece of the request (the
prompt, each tool's schema, each message's text) on its own, plus
`store.PER_MESSAGE_OVERHEAD` a message for the template's tokens around it;
estimates otherwise (`store.tokens`). What the template adds beyond that (its
tokens around each message, the tools as it renders them, a BOS) is learned
from the prompt tokens the server reported for past requests (`fit`:
`chatui.llm.template_cost`) and shown as `ContextUsage.template`.
`ContextUsage.exact` says whether the figure is counted or estimated.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from store import ContextBlock, Message, Tool, estimate_string_tokens, render_system_prompt
from store.tokens import PER_MESSAGE_OVERHEAD, part_text

from ..llm.template_cost import Piece

__all__ = [
    "ContextUsage",
    "Counter",
    "Fit",
    "Measured",
    "NextRequest",
    "ToolLine",
    "measure",
    "next_request",
    "request_texts",
]

Counter = Callable[[str], int | None]
"""A text's tokens by the server's tokenizer, None when it has not been counted."""

Fit = Callable[[list[Piece], int], "tuple[int, bool] | None"]
"""The request's pieces and its message count → its tokens as the server will count
them and whether that is exact (`TemplateCosts.figure`), None when nothing applies."""


@dataclass(frozen=True)
class ToolLine:
    """One tool of the request, as F2 lists it."""

    name: str
    description: str
    tokens: int
    """Estimated tokens of the tool's schema as sent."""
    schema: str
    """The schema, indented for reading."""


@dataclass(frozen=True)
class NextRequest:
    """The system prompt and tools the next turn of a chat will send."""

    model: str
    system_prompt: str
    prompt_tokens: int
    tools: tuple[ToolLine, ...]
    exact: bool = False
    """The prompt and every tool were counted by the server's tokenizer."""

    @property
    def tool_tokens(self) -> int:
        return sum(t.tokens for t in self.tools)


@dataclass(frozen=True)
class ContextUsage:
    """How full the model's context window is for one path of a chat."""

    prompt: int
    """Estimated tokens of the system prompt."""
    tools: int
    """Estimated tokens of the tools' schemas."""
    messages: int
    """Estimated tokens of the path's messages (summaries in place)."""
    window: int | None
    """The model's context window, None when nothing says what it is."""
    model: str
    source: str = ""
    """Where `window` came from: server, error, config, litellm, demo ("" when unknown)."""
    exact: bool = False
    """Counted, not estimated: the server counted a past request (the template's share
    is known) and every piece by its tokenizer, or whatever changed since its count
    of this chat's last request."""
    template: int = 0
    """What the chat template adds beyond `PER_MESSAGE_OVERHEAD` a message, learned
    from the server's counts (negative where it leaves a piece out, as dropped tools)."""
    counted_by: str = ""
    """Who counted an exact figure: "server" (its tokenizer, as llama.cpp's /tokenize)
    or "tokenizer" (the model's, in this process: LiteLLM's for OpenAI's models)."""

    @property
    def tokens(self) -> int:
        """The whole request: prompt, tools, messages and the template's own tokens."""
        return self.prompt + self.tools + self.messages + self.template

    @property
    def fraction(self) -> float | None:
        """tokens / window, None when the window is unknown."""
        return self.tokens / self.window if self.window else None

    def over(self, share: float) -> bool:
        """True when the request fills more than `share` of a known window."""
        return bool(self.window) and self.tokens > share * (self.window or 0)


@dataclass(frozen=True)
class Measured:
    """A chat's next request, measured: the blocks it renders, the request, its size."""

    blocks: tuple[ContextBlock, ...]
    request: NextRequest
    usage: ContextUsage
    uncounted: tuple[str, ...] = ()
    """Pieces a server that can count has not counted yet (`ChatEngine.count_tokens`)."""


def _tokens(text: str, count: Counter | None) -> tuple[int, bool]:
    """`text`'s tokens and whether they were counted (not estimated)."""
    if count is not None and (counted := count(text)) is not None:
        return counted, True
    return estimate_string_tokens(text), not text


def _part_tokens(part: dict[str, Any], count: Counter | None) -> tuple[int, bool]:
    """A message part's tokens and whether they are the server's. A tool call never is:
    the template renders it its own way (its name, its arguments as a string), which
    the tokenizer's count of its arguments alone leaves out."""
    tokens, counted = _tokens(part_text(part), count)
    return tokens, counted and part.get("type") != "tool-call"


def _sent(tool: Tool) -> str:
    return json.dumps(tool.to_openai(), ensure_ascii=False)


@functools.lru_cache(maxsize=256)
def _indented(sent: str) -> str:
    """A tool's schema as sent, indented for reading: the same text as indenting its
    `to_openai()` (JSON reads back as it was written), once per schema, not on every
    measure of the next request (indenting runs json's Python encoder, not its C one)."""
    return json.dumps(json.loads(sent), ensure_ascii=False, indent=2)


def request_texts(prompt: str, tools: Mapping[str, Tool], history: Sequence[Message]) -> list[str]:
    """The request's pieces as they are counted: the prompt, each tool's schema, each
    message part's text."""
    texts = [prompt, *(_sent(tool) for tool in tools.values())]
    texts.extend(part_text(part) for message in history for part in message.parts)
    return [t for t in texts if t]


def next_request(
    blocks: Sequence[ContextBlock],
    tools: Mapping[str, Tool],
    model: str,
    count: Counter | None = None,
) -> NextRequest:
    """The prompt `blocks` render and the `tools`, each counted as the request sends it."""
    prompt = render_system_prompt(list(blocks))
    prompt_tokens, exact = _tokens(prompt, count)
    lines = []
    for tool in tools.values():
        sent = _sent(tool)
        shown = _indented(sent)
        tokens, counted = _tokens(sent, count)
        exact = exact and counted
        lines.append(ToolLine(tool.name, tool.description, tokens, shown))
    return NextRequest(model, prompt, prompt_tokens, tuple(lines), exact)


def request_pieces(
    prompt: str,
    tools: Mapping[str, Tool],
    history: Sequence[Message],
    count: Counter | None = None,
) -> list[Piece]:
    """The request's pieces (`request_texts`), each with its tokens and whether counted:
    what the server's count of a request is set against (`TemplateCosts.learn`)."""
    pieces = [Piece.of(text, *_tokens(text, count)) for text in request_texts(prompt, tools, [])]
    for message in history:
        for part in message.parts:
            if text := part_text(part):
                pieces.append(Piece.of(text, *_part_tokens(part, count)))
    return pieces


def measure(
    blocks: Sequence[ContextBlock],
    tools: Mapping[str, Tool],
    history: Sequence[Message],
    model: str,
    window: int | None,
    source: str = "",
    count: Counter | None = None,
    fit: Fit | None = None,
) -> Measured:
    """The next request of a path: `blocks` rendered, `tools`, `history`, against `window`.
    `count`: the server's tokenizer's counts (estimates for what it has not counted);
    `fit`: what the server's past counts teach about the rest (the template's tokens)."""
    request = next_request(blocks, tools, model, count)
    exact = request.exact
    messages = 0
    for message in history:
        messages += PER_MESSAGE_OVERHEAD
        for part in message.parts:
            tokens, counted = _part_tokens(part, count)
            messages += tokens
            exact = exact and counted
    template = 0
    if fit is not None:
        pieces = request_pieces(request.system_prompt, tools, history, count)
        fitted = fit(pieces, len(history))
        if fitted is None:
            exact = False  # the pieces may be counted; the template's share is not known
        else:
            figure, exact = fitted
            template = figure - (request.prompt_tokens + request.tool_tokens + messages)
    usage = ContextUsage(
        request.prompt_tokens, request.tool_tokens, messages, window, model, source, exact, template
    )
    return Measured(tuple(blocks), request, usage)
