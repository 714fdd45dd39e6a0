"""Compare (v on a reply with siblings): two siblings side by side, words that differ marked.

The left pane holds the message the key was pressed on; left/right cycle the
right pane through its other siblings. Each pane says which sibling it is,
its model, tokens, cost and time to first token (what the reply stored).
tab picks a side; enter keeps the picked one as the branch shown.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from store import Message, as_text, reply_state, reply_state_label
from widgets import DiffView, format_tokens, one_line, word_diff

from ..outage import SurvivesOutage

__all__ = ["CompareScreen", "reply_facts"]


def reply_facts(message: Message, chat_model: str | None) -> str:
    """model · tokens in→out · cost · first token: what the reply stored, "?" for what it did not."""
    model = message.metadata.get("model") if message.role == "assistant" else None
    facts = [one_line(str(model), 28) if model else ("you" if message.role == "user" else "?")]
    if model and model == chat_model:
        facts[0] += " (chat's)"
    usage = message.token_usage or {}
    if isinstance(usage.get("output"), int):
        facts.append(
            f"{format_tokens(usage.get('input') or 0)}→{format_tokens(usage['output'])} tok"
        )
    cost = usage.get("cost")
    if isinstance(cost, int | float) and cost:
        facts.append(f"${cost:.4f}")
    first = message.metadata.get("first_token_s")
    if isinstance(first, int | float):
        facts.append(f"first token {first:.2f}s")
    return " · ".join(facts)


class CompareScreen(SurvivesOutage, ModalScreen[str | None]):
    """Siblings two at a time; dismisses with the id to keep, or None."""

    CSS_PATH = "compare.tcss"
    BINDINGS = [
        Binding("left", "cycle(-1)", "‹ Other", id="compare.previous"),
        Binding("right", "cycle(1)", "Other ›", id="compare.next"),
        Binding("tab", "pick", "Pick side", id="compare.pick"),
        Binding("enter", "keep", "Keep", id="compare.keep"),
        Binding("escape", "dismiss(None)", "Close", id="compare.close"),
    ]

    def __init__(self, siblings: list[Message], left_id: str, chat_model: str | None) -> None:
        super().__init__()
        if len(siblings) < 2:
            raise ValueError("comparing needs two siblings")
        self.replies = siblings
        self.chat_model = chat_model
        self.left = next(i for i, m in enumerate(siblings) if m.id == left_id)
        self.right = next(i for i in range(len(siblings)) if i != self.left)
        self.picked = "left"

    def compose(self) -> ComposeResult:
        with Vertical(id="compare"):
            with Horizontal(id="compare-panes"):
                for side in ("left", "right"):
                    with Vertical(id=f"compare-{side}", classes="compare-pane"):
                        yield Label("", id=f"compare-{side}-title", classes="compare-title")
                        yield Static("", id=f"compare-{side}-facts", classes="compare-facts")
                        with VerticalScroll(classes="compare-body"):
                            yield DiffView(id=f"compare-{side}-text")
            yield Static(
                Text("←/→ another sibling on the right · tab picks a side · enter keeps it · esc"),
                id="compare-hint",
            )

    def on_mount(self) -> None:
        self._draw()

    def _draw(self) -> None:
        left, right = self.replies[self.left], self.replies[self.right]
        ours, theirs = word_diff(compared_text(left), compared_text(right))
        count = len(self.replies)
        for side, index, message, runs in (
            ("left", self.left, left, ours),
            ("right", self.right, right, theirs),
        ):
            mark = "▶ " if self.picked == side else ""
            self.query_one(f"#compare-{side}-title", Label).update(
                Text(f"{mark}‹{index + 1}/{count}›")
            )
            self.query_one(f"#compare-{side}-facts", Static).update(
                Text(reply_facts(message, self.chat_model))
            )
            self.query_one(f"#compare-{side}-text", DiffView).show(runs)
            self.query_one(f"#compare-{side}").set_class(self.picked == side, "-picked")

    @property
    def shown(self) -> tuple[str, str]:
        """Ids of the left and right messages."""
        return self.replies[self.left].id, self.replies[self.right].id

    def action_cycle(self, step: int) -> None:
        """Show the next (or previous) sibling on the right, skipping the left one."""
        count = len(self.replies)
        index = self.right
        for _ in range(count):
            index = (index + step) % count
            if index != self.left:
                break
        self.right = index
        self._draw()

    def action_pick(self) -> None:
        self.picked = "right" if self.picked == "left" else "left"
        self._draw()

    def action_keep(self) -> None:
        left, right = self.shown
        self.dismiss(left if self.picked == "left" else right)


def compared_text(message: Message) -> str:
    """What a reply says, for comparing: its text; for a reply that only called tools,
    the calls (name and arguments); for one with nothing, its state."""
    if message.text.strip():
        return message.text
    calls = [
        f"called {call.get('tool_name', '?')} {as_text(call.get('input'), indent=None)}"
        for call in message.tool_calls
    ]
    if calls:
        return "\n".join(calls)
    return f"({reply_state_label(message, reply_state(message)) or 'no text'})"
