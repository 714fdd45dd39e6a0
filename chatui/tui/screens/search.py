"""The search screen (ctrl+f): every chat, every branch, as you type."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from store import SearchResult
from store.search import as_you_type
from widgets import clean

from ...core.workspace import Workspace
from ..outage import SurvivesOutage
from .list_keys import LIST_BINDINGS, ListKeys, TypingGoesToInput

__all__ = ["SearchHit", "SearchScreen", "highlight_snippet"]


@dataclass(frozen=True)
class SearchHit:
    """What the screen returns: the chat and message to open."""

    session_id: str
    message_id: str


def highlight_snippet(
    snippet: str, matches: Sequence[tuple[int, int]] = (), style: str = "bold reverse"
) -> Text:
    """A store snippet as one line of Text, the `matches` spans ([start, end)) styled."""
    text = Text()
    cursor = 0
    for start, end in sorted(matches):
        if start < cursor or end > len(snippet):
            continue  # overlapping or out of range: leave it plain
        text.append(_flat(snippet[cursor:start]))
        text.append(_flat(snippet[start:end]), style)
        cursor = end
    text.append(_flat(snippet[cursor:]))
    return text


def _flat(piece: str) -> str:
    """`piece` cleaned, its whitespace runs as single spaces (ends kept as one space)."""
    cleaned = clean(piece)
    words = " ".join(cleaned.split())
    head = " " if cleaned[:1].isspace() and words else ""
    tail = " " if cleaned[-1:].isspace() and words else ""
    return head + words + tail if words else (" " if cleaned else "")


class SearchScreen(SurvivesOutage, ListKeys, TypingGoesToInput, ModalScreen[SearchHit | None]):
    """Type to search; enter opens the chat at the hit, on the hit's branch."""

    TYPING_INPUT = "#search-input"

    CSS_PATH = "search.tcss"
    BINDINGS = [
        Binding("escape", "dismiss(None)", "Close", id="search.close"),
        Binding("down", "focus_results", "Results", show=False, id="search.results"),
        *LIST_BINDINGS,
    ]

    def __init__(self, workspace: Workspace, query: str = "", *, limit: int = 50) -> None:
        super().__init__()
        self.workspace = workspace
        self.initial = query
        self.limit = limit
        self.hits: list[SearchResult] = []
        self._names: dict[str, str] = {}
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="search"):
            yield Input(
                self.initial,
                placeholder='Search every chat…  ("phrase", word*, a OR b)',
                id="search-input",
                select_on_focus=False,
            )
            yield Label("", id="search-status")
            yield OptionList(id="search-results")

    def on_mount(self) -> None:
        self._names = {info.id: info.name for info in self.workspace.list_chats()}
        self.query_one("#search-input", Input).focus()
        if self.initial:
            self.run_search(self.initial)

    def on_input_changed(self, event: Input.Changed) -> None:
        if self._timer is not None:
            self._timer.stop()
        value = event.value
        self._timer = self.set_timer(0.12, lambda: self.run_search(value))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self._timer is not None:
            self._timer.stop()
        self.run_search(event.value)
        if self.hits:
            self._open(0)

    def run_search(self, query: str) -> None:
        """Search now and show the hits (synchronous: a search takes milliseconds)."""
        results = self.query_one("#search-results", OptionList)
        status = self.query_one("#search-status", Label)
        searched = as_you_type(query)
        self.hits = self.workspace.search(searched, self.limit) if query.strip() else []
        results.clear_options()
        results.add_options([self._option(i, hit) for i, hit in enumerate(self.hits)])
        problem = self.workspace.search_problem(searched) if query.strip() else None
        if not query.strip():
            status.update("Type to search every chat and every branch.")
        elif problem:  # the same sentence on both engines; the plain words were searched
            count = len(self.hits)
            status.update(Text(f"{problem} {count} match{'es' if count != 1 else ''}."))
        elif not self.hits:
            status.update(Text(f"Nothing matches {query!r}."))  # the query is not markup
        else:
            more = "+" if len(self.hits) == self.limit else ""
            plural = "es" if len(self.hits) != 1 or more else ""
            status.update(f"{len(self.hits)}{more} match{plural} · enter opens · ↓ to the list")
        if self.hits:
            results.highlighted = 0

    def _option(self, index: int, hit: SearchResult) -> Option:
        name = clean(self._names.get(hit.session_id, hit.session_id))
        when = hit.created_at.astimezone().strftime("%Y-%m-%d %H:%M") if hit.created_at else ""
        head = Text.assemble((name, "bold"), "  ", (hit.role, "italic"), "  ", (when, "dim"))
        body = (
            highlight_snippet(hit.snippet, hit.matches)
            if hit.snippet
            else highlight_snippet(hit.content[:200])
        )
        return Option(Text("\n").join([head, body]), id=str(index))

    def action_focus_results(self) -> None:
        """Down from the query: into the hits (none: the query keeps the focus)."""
        results = self.query_one("#search-results", OptionList)
        if results.option_count:
            results.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._open(event.option_index)

    def _open(self, index: int) -> None:
        hit = self.hits[index]
        self.dismiss(SearchHit(hit.session_id, hit.id))
