"""The agent picker: which agent runs a new chat (shown by ctrl+n when agents exist)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from store import AgentInfo
from widgets import clean

from ..outage import SurvivesOutage
from .list_keys import LIST_BINDINGS, ListKeys

__all__ = ["AgentPicker", "NO_AGENT"]

NO_AGENT = ""
"""What the picker returns for "no agent" (the config's default assistant)."""


class AgentPicker(SurvivesOutage, ListKeys, ModalScreen[str | None]):
    """Dismisses with an agent id, `NO_AGENT`, or None when cancelled."""

    CSS_PATH = "agent_picker.tcss"
    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="agents.cancel"), *LIST_BINDINGS]

    def __init__(self, agents: Sequence[AgentInfo]) -> None:
        super().__init__()
        self.agents = list(agents)

    def compose(self) -> ComposeResult:
        options = [
            Option(
                Text.assemble(
                    ("Default assistant", "bold"), "  ", ("the config's model and memory", "dim")
                ),
                id="-",
            )
        ]
        for agent in self.agents:
            prompt = Text(clean(agent.name), "bold")
            if agent.model:
                prompt.append(f"  {clean(agent.model)}", "italic")
            if agent.description:
                prompt.append(f"\n{clean(agent.description)}", "dim")
            options.append(Option(prompt, id=agent.id))
        with Vertical(id="agents"):
            yield Label("New chat with…", id="agents-title")
            yield OptionList(*options, id="agents-list")
            yield Label("enter starts the chat · escape cancels", id="agents-hint")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        option_id = event.option.id
        self.dismiss(NO_AGENT if option_id == "-" else option_id)
