"""The next request, as the model will get it: the system prompt, the chat's parameters
and the tools, counted, with the whole request's figure the sidebar shows (prompt +
tools + messages). `e` edits the chat's prompt and `p` its parameters (the screen
closes with which one; the main screen opens the editor)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Collapsible, Label, Static

from widgets import clean, format_tokens, literal

from ...core.workspace import ContextUsage, NextRequest
from ..outage import SurvivesOutage

__all__ = ["PromptScreen"]


class PromptScreen(SurvivesOutage, ModalScreen[str | None]):
    """The system prompt (whole), the parameters, each tool with its schema and token
    count; dismissed with "prompt" or "params" to edit one, else None."""

    CSS_PATH = "prompt.tcss"
    BINDINGS = [
        Binding("escape,q,f2", "dismiss", "Close", id="prompt.close"),
        Binding("e", "edit('prompt')", "Edit prompt", id="prompt.edit"),
        Binding("p", "edit('params')", "Parameters", id="prompt.params"),
    ]

    def __init__(
        self,
        request: NextRequest,
        usage: ContextUsage | None = None,
        params: str = "",
    ) -> None:
        super().__init__()
        self.request = request
        self.usage = usage
        """The whole request's size (the sidebar's context figure), when known."""
        self.params = params
        """The chat's parameters as `name = value` lines ("" for none)."""

    def compose(self) -> ComposeResult:
        r = self.request
        total = r.prompt_tokens + r.tool_tokens
        title = (
            f"Next request to {r.model} · system prompt {r.prompt_tokens:,} tokens · "
            f"{len(r.tools)} tools {r.tool_tokens:,} tokens · {format_tokens(total)} "
            "before the messages"
        )
        if self.usage is not None:
            title += f" · messages {self.usage.messages:,}"
            if self.usage.template:  # learned from the server's counts (chat template, BOS)
                title += f" · template {self.usage.template:+,}"
            title += f" · whole request {self.usage.tokens:,} tokens"
        with Vertical(id="prompt"):
            yield Label(Text(title), id="prompt-title")
            with VerticalScroll(id="prompt-body"):
                yield Static(Text("PARAMETERS", style="bold"), classes="prompt--heading")
                yield Static(
                    Text(clean(self.params.strip()) or "(none: the provider's defaults)"),
                    id="prompt-params",
                )
                yield Static(Text("SYSTEM PROMPT", style="bold"), classes="prompt--heading")
                yield Static(Text(clean(r.system_prompt) or "(empty)"), id="prompt-text")
                yield Static(Text("TOOLS", style="bold"), classes="prompt--heading")
                if not r.tools:
                    yield Static("(none)")
                for tool in r.tools:
                    title = f"{tool.name} · {tool.tokens:,} tokens — {tool.description}"
                    with Collapsible(title=literal(title[:200]), collapsed=True):
                        yield Static(Text(tool.schema))
            yield Static(
                "e edits this chat's prompt · p its parameters · escape closes · "
                "the counts are estimates",
                id="prompt-hint",
            )

    def on_mount(self) -> None:
        self.query_one("#prompt-body").focus()

    async def action_dismiss(self, result: str | None = None) -> None:
        self.dismiss(None)

    def action_edit(self, which: str) -> None:
        self.dismiss(which)
