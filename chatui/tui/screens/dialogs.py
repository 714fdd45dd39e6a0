"""Small modal dialogs: a text prompt (rename, edit a message) and a yes/no question."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from widgets import ChatInput, clean

from ..outage import SurvivesOutage

__all__ = ["Confirm", "TextPrompt"]


class TextPrompt(SurvivesOutage, ModalScreen[str | None]):
    """Ask for a line (or, with `multiline`, a message); dismisses with the text or None."""

    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="dialog.cancel")]

    def __init__(
        self,
        title: str,
        value: str = "",
        *,
        multiline: bool = False,
        hint: str = "",
        check: Callable[[str], Awaitable[str | None]] | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.value = clean(value)  # names and messages may hold escape sequences
        self.multiline = multiline
        self.hint = hint
        self.check = check
        """Saves the text and returns None, or returns why not: said in the dialog,
        which stays open with the text as typed (nothing is lost)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.title_text, id="dialog-title")
            if self.multiline:
                box = ChatInput(self.value, id="dialog-input")
                box.submit_empty = self.check is not None  # the check says why not
                yield box
            else:
                yield Input(self.value, id="dialog-input", select_on_focus=True)
            hint = self.hint or (
                "enter saves · ctrl+j new line · escape cancels"
                if self.multiline
                else "enter saves · escape cancels"
            )
            yield Label(hint, id="dialog-hint")

    def on_mount(self) -> None:
        field = self.query_one("#dialog-input")
        if isinstance(field, ChatInput):
            # A message or a setting is edited where it ends, as a chat's edit box
            # opens: typing at its start put a correction before the first word.
            field.move_cursor(field.document.end)
        field.focus()

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        await self._done(event.value)

    async def on_chat_input_submitted(self, event: ChatInput.Submitted) -> None:
        event.stop()
        await self._done(event.text)

    async def _done(self, text: str) -> None:
        if self.check is not None:
            problem = await self.check(text)
            if problem is not None:
                hint = self.query_one("#dialog-hint", Label)
                hint.update(clean(problem))
                hint.add_class("-error")
                return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Confirm(SurvivesOutage, ModalScreen[bool]):
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
            yield Label(self.question, id="dialog-title", classes="-question")
            with Horizontal(id="dialog-buttons"):
                yield Button(self.yes, id="yes", variant="error")
                yield Button(self.no, id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)
