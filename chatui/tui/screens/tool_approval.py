"""The dialog an `ask` tool call waits on: the call's server, tool and arguments.

`y` runs it once, `a` runs it and allows the tool for good in this chat, `n`
refuses: a line for the reason opens (the model reads it; enter sends it, an
empty line refuses without one); escape refuses at once. Whatever is
answered, the model gets a tool result: a refusal is text, never a crash.
If the reply is stopped meanwhile (esc on the chat, the chat deleted), the
request is withdrawn and the dialog closes itself.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from widgets import clean

from ...core.workspace import Answer, ToolApproval
from ..outage import SurvivesOutage

__all__ = ["ToolApprovalScreen"]


class ToolApprovalScreen(SurvivesOutage, ModalScreen[None]):
    """Ask whether a tool call may run; answers the request, dismisses with nothing."""

    CSS_PATH = "dialogs.tcss"
    BINDINGS = [
        Binding("y", "answer('once')", "Run once", id="approval.once"),
        Binding("a", "answer('always')", "Always in this chat", id="approval.always"),
        Binding("n", "refuse", "Refuse", id="approval.refuse"),
        Binding("escape", "answer('refuse')", "Refuse", id="approval.escape"),
    ]

    def __init__(self, request: ToolApproval, chat_name: str) -> None:
        super().__init__()
        self.request = request
        self.chat_name = chat_name

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="dialog"):
            yield Label(
                clean(f"Run {request.tool} on the MCP server {request.server}?"),
                id="dialog-title",
                markup=False,
            )
            yield Label(clean(f"asked by the model in “{self.chat_name}”"), markup=False)
            with VerticalScroll(id="approval-arguments"):
                yield Static(clean(request.arguments_text), markup=False, id="approval-json")
            yield Input(
                placeholder="Why not? (the model reads it) · enter refuses", id="approval-reason"
            )
            yield Label(
                "y run once · a always for this tool in this chat · n refuse (with a reason)",
                id="dialog-hint",
            )

    def on_mount(self) -> None:
        self.query_one("#approval-reason").display = False
        self.request.future.add_done_callback(lambda _f: self._withdrawn())

    def _withdrawn(self) -> None:
        """The request was answered or withdrawn (its reply stopped): close if still up."""
        if self.is_attached and self.app.screen is self:
            self.dismiss(None)

    def action_answer(self, decision: str) -> None:
        self.request.answer(Answer(decision))  # type: ignore[arg-type]  # from BINDINGS
        if self.is_attached and self.app.screen is self:
            self.dismiss(None)

    def action_refuse(self) -> None:
        reason = self.query_one("#approval-reason", Input)
        reason.display = True
        reason.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.request.answer(Answer("refuse", event.value.strip()))
        self.dismiss(None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While the reason is typed, y/a/n are letters of it.
        if action in ("answer", "refuse") and self.focused is not None:
            if self.focused.id == "approval-reason" and parameters != ("refuse",):
                return False
        return True
