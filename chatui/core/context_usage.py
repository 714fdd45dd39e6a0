"""How much a chat's next request holds against the model's window: the one measure
the sidebar, F2 (the prompt screen) and auto-compaction all read.

The request is what `ChatEngine` sends: the system prompt as the branch's blocks
render it now (a turn refreshes the prompt before it calls the model), every
tool the engine offers (`ChatEngine.tools_for`: memory, search, peers, whatever
source adds more), and the path's messages with summaries in place. One
function measures it (`measure`), from those three inputs; whoever has them
(the engine at the end of a turn, the workspace on a redraw) calls it, so the
gauge the user sees and the figure compaction acts on are one number.

Figures are estimates (`store.tokens`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from store import (
    ContextBlock,
    Message,
    Tool,
    estimate_message_tokens,
    estimate_string_tokens,
    render_system_prompt,
)

__all__ = ["ContextUsage", "Measured", "NextRequest", "ToolLine", "measure", "next_request"]


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

    @property
    def tokens(self) -> int:
        """The whole request: prompt, tools and messages."""
        return self.prompt + self.tools + self.messages

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


def next_request(
    blocks: Sequence[ContextBlock], tools: Mapping[str, Tool], model: str
) -> NextRequest:
    """The prompt `blocks` render and the `tools`, each counted as the request sends it."""
    prompt = render_system_prompt(list(blocks))
    lines = []
    for tool in tools.values():
        schema = tool.to_openai()
        sent = json.dumps(schema, ensure_ascii=False)
        shown = json.dumps(schema, ensure_ascii=False, indent=2)
        lines.append(ToolLine(tool.name, tool.description, estimate_string_tokens(sent), shown))
    return NextRequest(model, prompt, estimate_string_tokens(prompt), tuple(lines))


def measure(
    blocks: Sequence[ContextBlock],
    tools: Mapping[str, Tool],
    history: Sequence[Message],
    model: str,
    window: int | None,
    source: str = "",
) -> Measured:
    """The next request of a path: `blocks` rendered, `tools`, `history`, against `window`."""
    request = next_request(blocks, tools, model)
    usage = ContextUsage(
        request.prompt_tokens,
        request.tool_tokens,
        estimate_message_tokens(list(history)),
        window,
        model,
        source,
    )
    return Measured(tuple(blocks), request, usage)
