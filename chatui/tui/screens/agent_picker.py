"""The agent picker: which agent runs a new chat (shown by ctrl+n when agents exist)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.text import Text
from textual.binding import Binding

from store import AgentInfo
from widgets import clean

from .list_keys import LIST_BINDINGS
from .start_picker import NO_CHOICE, StartPicker

__all__ = ["AgentPicker", "NO_AGENT"]

NO_AGENT = NO_CHOICE
"""What the picker returns for "no agent" (the config's default assistant)."""


class AgentPicker(StartPicker):
    """Dismisses with an agent id, `NO_AGENT`, or None when cancelled."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="agents.cancel"), *LIST_BINDINGS]
    HEADING = "New chat with…"
    DEFAULT_ROW = ("Default assistant", "the config's model and memory")

    def __init__(self, agents: Sequence[AgentInfo]) -> None:
        super().__init__()
        self.agents = list(agents)

    def choices(self) -> Iterable[tuple[str, Text]]:
        for agent in self.agents:
            prompt = Text(clean(agent.name), "bold")
            if agent.model:
                prompt.append(f"  {clean(agent.model)}", "italic")
            if agent.description:
                prompt.append(f"\n{clean(agent.description)}", "dim")
            yield agent.id, prompt
