"""The model picker (ctrl+l): recent and configured models, or any LiteLLM name typed in.

What enter picks is always the highlighted row: typing filters the list and
highlights its best match (the name typed exactly, else the first that holds it),
and a name that is not listed is offered as a row of its own, "as typed", last. A
filter typed and enter pressed picks the model the filter found, not the letters
typed (before, `4o-mi` and enter made `4o-mi` the chat's model)."""

from __future__ import annotations

import contextlib

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option, OptionDoesNotExist

from ..outage import SurvivesOutage
from .list_keys import LIST_BINDINGS, ListKeys, TypingGoesToInput

__all__ = ["ModelPicker"]


class ModelPicker(SurvivesOutage, ListKeys, TypingGoesToInput, ModalScreen[str | None]):
    """Pick from `choices` (model, note) or type a name; dismisses with the model or None."""

    CSS_PATH = "model_picker.tcss"
    TYPING_INPUT = "#models-input"
    BINDINGS = [
        Binding("escape", "dismiss(None)", "Close", id="models.close"),
        Binding("down", "focus_list", "List", show=False, id="models.list"),
        *LIST_BINDINGS,
    ]

    def __init__(
        self, current: str, choices: list[tuple[str, str]], *, title: str | None = None
    ) -> None:
        super().__init__()
        self.current = current
        self.choices = choices
        self.title_text = title or f"Model for this chat (now: {current})"

    def compose(self) -> ComposeResult:
        with Vertical(id="models"):
            yield Label(self.title_text, id="models-title", markup=False)
            yield Input(
                placeholder="any LiteLLM model name, e.g. gpt-4o-mini, "
                "anthropic/claude-sonnet-4-5, ollama/llama3.2",
                id="models-input",
                select_on_focus=False,
            )
            yield OptionList(*self._options(""), id="models-list")
            yield Label(
                "enter picks the highlighted row · a name not listed is offered as "
                "typed · keys come from the environment",
                id="models-hint",
            )

    def _options(self, needle: str) -> list[Option]:
        options = []
        for model, note in self.choices:
            if needle and needle.lower() not in model.lower():
                continue
            prompt = Text(model, "bold" if model == self.current else "")
            if note:
                prompt.append(f"  {note}", "dim")
            options.append(Option(prompt, id=model))
        if needle and not self._listed(needle):
            typed = Text(needle)
            typed.append("  as typed: passed to LiteLLM as it is", "dim")
            options.append(Option(typed, id=needle))
        return options

    def on_mount(self) -> None:
        self.query_one("#models-input", Input).focus()
        self._highlight(self.current)

    def on_input_changed(self, event: Input.Changed) -> None:
        # Typing moves the highlight to the best match, whatever was highlighted.
        self.query_one("#models-list", OptionList).highlighted = None
        self._show(event.value.strip())

    def _listed(self, name: str | None) -> bool:
        return any(model == name for model, _ in self.choices)

    def _highlight(self, *names: str | None) -> None:
        """The first of `names` that is a listed model on show, else the first row (the
        first match, or the row "as typed" when nothing matched): what enter picks."""
        options = self.query_one("#models-list", OptionList)
        if not options.option_count:
            return
        options.highlighted = 0
        for name in names:
            if self._listed(name):
                with contextlib.suppress(OptionDoesNotExist):
                    options.highlighted = options.get_option_index(name or "")
                    return

    def update_choices(self, choices: list[tuple[str, str]]) -> None:
        """The lists asked for in the background came in: shown now, under the same
        filter, the highlighted model staying highlighted."""
        self.choices = choices
        self._show(self.query_one("#models-input", Input).value.strip())

    def _show(self, needle: str) -> None:
        options = self.query_one("#models-list", OptionList)
        index = options.highlighted
        was = options.get_option_at_index(index).id if index is not None else None
        options.clear_options()
        options.add_options(self._options(needle))
        # The highlighted model stays; the row "as typed" gives way to a model that
        # came in since and matches.
        self._highlight(was, needle or self.current)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        options = self.query_one("#models-list", OptionList)
        if options.option_count:
            self.dismiss(options.get_option_at_index(options.highlighted or 0).id)

    def action_focus_list(self) -> None:
        """Down from the name: into the list, on the row enter would pick (its first
        when none is highlighted)."""
        options = self.query_one("#models-list", OptionList)
        if options.highlighted is None and options.option_count:
            options.highlighted = 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)
