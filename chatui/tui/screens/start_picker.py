"""The pickers ctrl+n shows before a new chat starts (a persona, then an agent): one
list in one dialog, a default row first."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from ..outage import SurvivesOutage
from .list_keys import ListKeys

__all__ = ["NO_CHOICE", "StartPicker"]

NO_CHOICE = ""
"""What a picker returns for its default row (the config's own settings)."""


class StartPicker(SurvivesOutage, ListKeys, ModalScreen[str | None]):
    """Dismisses with the chosen row's value, `NO_CHOICE` for the default row, or None
    when cancelled. A subclass names the dialog, its default row and its `choices`, and
    binds escape (its own binding id, for `[keys]`)."""

    CSS_PATH = "agent_picker.tcss"
    HEADING: ClassVar[str]
    """The dialog's title ("New chat with…")."""
    DEFAULT_ROW: ClassVar[tuple[str, str]]
    """The default row: its name and what it means."""

    def choices(self) -> Iterable[tuple[str, Text]]:
        """(the value a row returns, what the row shows), in the order listed."""
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        name, meaning = self.DEFAULT_ROW
        options = [Option(Text.assemble((name, "bold"), "  ", (meaning, "dim")), id="-")]
        # The values are kept by position: a row's value is never read back from its id.
        self._values = [NO_CHOICE]
        for value, prompt in self.choices():
            options.append(Option(prompt, id=f"choice-{len(self._values)}"))
            self._values.append(value)
        with Vertical(id="agents"):
            yield Label(self.HEADING, id="agents-title")
            yield OptionList(*options, id="agents-list")
            yield Label("enter starts the chat · escape cancels", id="agents-hint")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self._values[event.option_index])
