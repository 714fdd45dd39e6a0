"""A template's small form: one field per `{variable}`; enter fills them in and the
filled text is sent as the next message (the palette's *Use template*)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from widgets import clean

from ...core.workspace import TemplateConfig
from ..outage import SurvivesOutage

__all__ = ["TemplateForm"]


class TemplateForm(SurvivesOutage, ModalScreen[str | None]):
    """Dismisses with the filled text, or None when cancelled."""

    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="template.cancel")]

    def __init__(self, template: TemplateConfig) -> None:
        super().__init__()
        self.template = template

    def compose(self) -> ComposeResult:
        template = self.template
        with Vertical(id="dialog"):
            yield Label(f"Template {clean(template.name)}", id="dialog-title")
            yield Static(clean(template.text), id="template-text")
            for name in template.variables:
                yield Label(name, classes="template--label")
                yield Input(placeholder=name, id=f"var-{name}", classes="template--field")
            yield Label(
                "tab moves · enter on the last field sends · escape cancels", id="dialog-hint"
            )

    def on_mount(self) -> None:
        fields = self.query(Input)
        if fields:
            fields.first().focus()

    def values(self) -> dict[str, str]:
        return {
            name: self.query_one(f"#var-{name}", Input).value for name in self.template.variables
        }

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        fields = list(self.query(Input))
        empty = next((f for f in fields if not f.value.strip()), None)
        if empty is not None:
            hint = self.query_one("#dialog-hint", Label)
            name = (empty.id or "").removeprefix("var-")
            hint.update(f"Fill in {name} first (every variable needs a value).")
            hint.add_class("-error")
            empty.focus()
            return
        self.dismiss(self.template.fill(self.values()))
