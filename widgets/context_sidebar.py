"""`ContextSidebar`: what the model carries — memory blocks, conversation size, spend."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.await_complete import AwaitComplete
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message as TextualMessage
from textual.widgets import Static

from store import ContextBlock

from .in_place import update_in_place
from .token_gauge import TokenGauge, format_tokens

__all__ = ["ContextSidebar", "ConversationStats"]


@dataclass(frozen=True)
class ConversationStats:
    """The figures under the gauges (all optional: unknown stays blank)."""

    tokens: int = 0
    """Estimated tokens of the history plus the system prompt."""
    window: int | None = None
    """The model's context window."""
    window_source: str = ""
    """Where the window figure came from ("server", "config", "litellm", …), shown beside it."""
    counted: str = ""
    """How `tokens` was had: "exact" (the server's counts) or "estimated"."""
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    compactions: int = 0
    """Summaries on the active path."""
    compact_at: float | None = None
    """Auto-compaction threshold as a share of the window."""


def _kind_tag(block: ContextBlock) -> str:
    return {"readonly": "read-only", "loadable": "skills"}.get(block.kind, block.kind)


class ContextSidebar(VerticalScroll):
    """One gauge per context block, then the conversation against the window.

    Data in, nothing fetched: call `show_blocks` and `show_stats` whenever the
    underlying figures change (after a memory write, a reply, a branch switch).
    """

    DEFAULT_CSS = """
    ContextSidebar {
        width: 34;
        padding: 0 1;
        border-left: vkey $foreground 10%;
        background: $surface;
    }
    ContextSidebar > .sidebar--title {
        color: $text-muted;
        text-style: bold;
        margin: 1 0 1 0;
    }
    ContextSidebar > #blocks { height: auto; }
    ContextSidebar > .sidebar--line { color: $text-muted; }
    ContextSidebar > #block-empty { color: $text-muted; text-style: italic; }
    """

    BINDINGS = [
        Binding("less_than_sign", "resize(-4)", "Narrower", id="sidebar.narrower", show=False),
        Binding("greater_than_sign", "resize(4)", "Wider", id="sidebar.wider", show=False),
    ]

    class ResizeRequested(TextualMessage):
        """Make the sidebar `step` columns wider (negative: narrower)."""

        def __init__(self, step: int) -> None:
            super().__init__()
            self.step = step

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._blocks: list[ContextBlock] = []
        self.stats = ConversationStats()

    def compose(self) -> ComposeResult:
        yield Static("MEMORY", classes="sidebar--title")
        yield VerticalScroll(id="blocks")
        yield Static("CONVERSATION", classes="sidebar--title")
        yield TokenGauge("context", id="conversation-gauge")
        yield Static("", id="counted", classes="sidebar--line")
        yield Static("", id="spend", classes="sidebar--line")
        yield Static("", id="compaction", classes="sidebar--line")
        yield Static("", id="model", classes="sidebar--line", markup=False)  # a typed name

    def action_resize(self, step: int) -> None:
        self.post_message(self.ResizeRequested(step))

    @property
    def blocks(self) -> list[ContextBlock]:
        return list(self._blocks)

    def gauge(self, label: str) -> TokenGauge | None:
        """The gauge of one block (tests and the app highlight it after a write)."""
        for gauge in self.query(TokenGauge):
            if gauge.label == label and gauge.id != "conversation-gauge":
                return gauge
        return None

    def show_blocks(self, blocks: Sequence[ContextBlock]) -> AwaitComplete:
        """Draw one gauge per block, reusing gauges whose label is unchanged.

        Returns:
            An awaitable done once new gauges are mounted: a caller that awaits it
            gets them in its next frame (not in the one after, with an empty memory).
        """
        self._blocks = list(blocks)
        holder = self.query_one("#blocks", VerticalScroll)
        existing = [g for g in holder.query(TokenGauge)]
        pending: list[Awaitable[object]] = []
        if [g.label for g in existing] != [b.label for b in blocks]:
            pending.append(holder.remove_children())
            # Built with their figures: set after mounting, each restyled its gauge again.
            new = [TokenGauge(b.label, b.tokens, b.max_tokens, _kind_tag(b)) for b in blocks]
            for gauge, block in zip(new, blocks, strict=True):
                gauge.tooltip = block.description or None
            if new:
                pending.append(holder.mount_all(new))
        else:
            for gauge, block in zip(existing, blocks, strict=True):
                gauge.kind = _kind_tag(block)
                gauge.limit = block.max_tokens
                gauge.used = block.tokens
                gauge.tooltip = block.description or None
        holder.styles.height = "auto"
        return AwaitComplete(*pending)

    def show_stats(self, stats: ConversationStats) -> None:
        """Update the conversation gauge, spend, compaction and model lines."""
        self.stats = stats
        gauge = self.query_one("#conversation-gauge", TokenGauge)
        gauge.limit = stats.window
        gauge.used = stats.tokens
        source = f" ({stats.window_source})" if stats.window_source else ""
        gauge.figure = (
            f"{format_tokens(stats.tokens)} of {format_tokens(stats.window)}{source}"
            if stats.window
            else f"{format_tokens(stats.tokens)} tok"
        )
        spent = stats.input_tokens + stats.output_tokens
        spend = f"spent {format_tokens(spent)} tok"
        if stats.cost:
            spend += f" · ${stats.cost:,.4f}" if stats.cost < 1 else f" · ${stats.cost:,.2f}"
        _say(self.query_one("#spend", Static), spend)
        counted = self.query_one("#counted", Static)
        counted.display = bool(stats.counted)
        _say(counted, f"tokens {stats.counted}" if stats.counted else "")
        parts = []
        if stats.compactions:
            parts.append(f"{stats.compactions} summar{'y' if stats.compactions == 1 else 'ies'}")
        else:
            parts.append("not compacted")
        if stats.compact_at and stats.window:
            parts.append(f"auto at {format_tokens(int(stats.window * stats.compact_at))}")
        _say(self.query_one("#compaction", Static), " · ".join(parts))
        _say(self.query_one("#model", Static), stats.model)


def _say(line: Static, text: str) -> None:
    """A line's new text, drawn only when it changed (each turn's end sets them all)."""
    if str(line.content) != text:
        update_in_place(line, text)
