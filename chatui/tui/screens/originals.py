"""The messages a compaction summary stands for, read as the chat showed them (Markdown).

Opened with enter on a summary, or by a search hit inside a compacted range
(then scrolled to the hit, which is marked). Tool-only messages read as one
"called …" line; a message with nothing to show is left out rather than drawn
as an empty "Assistant:".
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Markdown, Static

from store import Message
from widgets import clean, preview

from ..outage import SurvivesOutage

__all__ = ["OriginalsScreen"]

ROLE_NAMES = {"user": "You", "assistant": "Assistant", "tool": "Tool", "system": "System"}


class OriginalsScreen(SurvivesOutage, ModalScreen[None]):
    """The original messages under one summary, oldest first."""

    CSS_PATH = "originals.tcss"
    BINDINGS = [Binding("escape,q", "dismiss", "Close", id="originals.close")]

    def __init__(self, messages: Sequence[Message], *, hit: str | None = None) -> None:
        super().__init__()
        self.messages = list(messages)
        self.hit = hit

    def compose(self) -> ComposeResult:
        with Vertical(id="originals"):
            yield Label(
                Text(f"The {len(self.messages)} messages the summary stands for"),
                id="originals-title",
            )
            with VerticalScroll(id="originals-body"):
                for m in self.messages:
                    body = clean(m.text).strip()
                    if not body:
                        if not (m.tool_calls or m.tool_results):
                            continue  # nothing to read: no empty "Assistant:" line
                        body = preview(m, 400)
                    with Vertical(
                        id=f"orig-{m.id}",
                        classes="original -hit" if m.id == self.hit else "original",
                    ):
                        stamp = (
                            m.created_at.astimezone().strftime(" · %b %d %H:%M")
                            if m.created_at
                            else ""
                        )
                        yield Static(
                            Text(ROLE_NAMES.get(m.role, m.role) + stamp), classes="original--header"
                        )
                        yield Markdown(body, classes="original--body")
            yield Static("escape closes", id="originals-hint")

    def on_mount(self) -> None:
        body = self.query_one("#originals-body")
        body.focus()
        if self.hit is not None:
            target = self.query(f"#orig-{self.hit}")
            if target:
                self.call_after_refresh(
                    body.scroll_to_widget, target.first(), animate=False, top=True
                )

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
