"""The persona picker: how a new chat starts (shown by ctrl+n when personas exist)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.text import Text
from textual.binding import Binding

from widgets import clean

from ...core.workspace import PersonaConfig
from .list_keys import LIST_BINDINGS
from .start_picker import NO_CHOICE, StartPicker

__all__ = ["NO_PERSONA", "PersonaPicker"]

NO_PERSONA = NO_CHOICE
"""What the picker returns for "no persona" (the config's prompt, model and parameters)."""


class PersonaPicker(StartPicker):
    """Dismisses with a persona's name, `NO_PERSONA`, or None when cancelled."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="personas.cancel"), *LIST_BINDINGS]
    HEADING = "New chat as…"
    DEFAULT_ROW = ("No persona", "the config's prompt, model and settings")

    def __init__(self, personas: Sequence[PersonaConfig]) -> None:
        super().__init__()
        self.personas = list(personas)

    def choices(self) -> Iterable[tuple[str, Text]]:
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
            yield persona.name, prompt
