"""The persona picker: how a new chat starts (shown by ctrl+n when personas exist)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from widgets import clean

from ...core.workspace import PersonaConfig
from ..outage import SurvivesOutage
from .list_keys import LIST_BINDINGS, ListKeys

__all__ = ["NO_PERSONA", "PersonaPicker"]

NO_PERSONA = ""
"""What the picker returns for "no persona" (the config's prompt, model and parameters)."""


class PersonaPicker(SurvivesOutage, ListKeys, ModalScreen[str | None]):
    """Dismisses with a persona's name, `NO_PERSONA`, or None when cancelled."""

    CSS_PATH = "agent_picker.tcss"  # the agent picker's look
    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="personas.cancel"), *LIST_BINDINGS]

    def __init__(self, personas: Sequence[PersonaConfig]) -> None:
        super().__init__()
        self.personas = list(personas)

    def compose(self) -> ComposeResult:
        options = [
            Option(
                Text.assemble(
                    ("No persona", "bold"), "  ", ("the config's prompt, model and settings", "dim")
                ),
                id="-",
            )
        ]
        for persona in self.personas:
            prompt = Text(clean(persona.name), "bold")
            if persona.model:
                prompt.append(f"  {clean(persona.model)}", "italic")
            if persona.params:
                shown = ", ".join(f"{k}={v}" for k, v in persona.params.items())
                prompt.append(f"  {clean(shown)}", "dim")
            detail = persona.description or (persona.prompt or "")
            if detail:
                prompt.append(f"\n{clean(detail)[:160]}", "dim")
            options.append(Option(prompt, id=f"persona:{persona.name}"))
        with Vertical(id="agents"):
            yield Label("New chat as…", id="agents-title")
            yield OptionList(*options, id="agents-list")
            yield Label("enter starts the chat · escape cancels", id="agents-hint")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        option_id = event.option.id or "-"
        self.dismiss(NO_PERSONA if option_id == "-" else option_id.removeprefix("persona:"))
