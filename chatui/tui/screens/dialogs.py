"""Small modal dialogs: a text prompt (rename, edit a message) and a yes/no question."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from widgets import ChatInput, clean

__all__ = ["Confirm", "TextPrompt"]


class TextPrompt(ModalScreen[str | None]):
    """Ask for a line (or, with `multiline`, a message); dismisses with the text or None."""

    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="dialog.cancel")]

    def __init__(
        self, title: str, value: str = "", *, multiline: bool = False, hint: str = ""
    ) -> None:
        super().__init__()
        self.title_text = title
        self.value = clean(value)  # names and messages may hold escape sequences
        self.multiline = multiline
        self.hint = hint

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.title_text, id="dialog-title")
            if self.multiline:
                yield ChatInput(self.value, id="dialog-input")
            else:
                yield Input(self.value, id="dialog-input", select_on_focus=True)
            hint = self.hint or (
                "enter saves · ctrl+j new line · escape cancels"
                if self.multiline
                else "enter saves · escape cancels"
            )
            yield Label(hint, id="dialog-hint")

    def on_mount(self) -> None:
        self.query_one("#dialog-input").focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def on_chat_input_submitted(self, event: ChatInput.Submitted) -> None:
        event.stop()
        self.dismiss(event.text)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Confirm(ModalScreen[bool]):
    """A yes/no question; y/enter answer yes, n/escape no."""

    CSS_PATH = "dialogs.tcss"
    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, question: str, yes: str = "Yes", no: str = "No") -> None:
        super().__init__()
        self.question = question
        self.yes, self.no = yes, no

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.question, id="dialog-title")
            with Horizontal(id="dialog-buttons"):
                yield Button(self.yes, id="yes", variant="error")
                yield Button(self.no, id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)
