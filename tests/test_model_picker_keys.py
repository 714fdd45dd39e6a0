"""The model picker's keys as a person uses them: enter picks the highlighted row, and
what is highlighted is what the typing found (a filter typed and enter pressed picks
the model the filter found, not the letters typed)."""

from __future__ import annotations

import pytest
from textual.app import App
from textual.widgets import OptionList

from chatui.tui.screens.model_picker import ModelPicker

from .app_helpers import wait_until

CHOICES = [
    ("gpt-4o-mini", "OPENAI_API_KEY is set"),
    ("gpt-4o", "OPENAI_API_KEY is set"),
    ("ollama_chat/qwen2.5:7b", "served by Ollama at http://localhost:11434"),
    ("demo", "offline"),
]


class Host(App[None]):
    def __init__(self, current: str = "demo", choices=CHOICES) -> None:
        super().__init__()
        self.current, self.choices = current, list(choices)
        self.picked: list[str | None] = []

    def on_mount(self) -> None:
        self.push_screen(ModelPicker(self.current, self.choices), self.picked.append)


async def pick(keys: list[str], **host) -> tuple[Host, list[str | None]]:
    app = Host(**host)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ModelPicker))
        await pilot.press(*keys)
        await wait_until(pilot, lambda: app.picked or not isinstance(app.screen, ModelPicker), 2)
        return app, app.picked


async def test_a_filter_and_enter_pick_the_first_model_it_found_not_the_letters():
    _, picked = await pick([*"4o-mi", "enter"])
    assert picked == ["gpt-4o-mini"]


async def test_a_name_typed_whole_wins_over_longer_names_that_hold_it():
    # "gpt-4o-mini" comes first in the list and holds "gpt-4o": the exact name wins.
    _, picked = await pick([*"gpt-4o", "enter"])
    assert picked == ["gpt-4o"]


async def test_a_name_not_listed_is_offered_as_typed_and_taken_as_written():
    app = Host()
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ModelPicker))
        await pilot.press(*"anthropic/Claude-X")
        rows = app.screen.query_one("#models-list", OptionList)
        assert [o.id for o in rows.options] == ["anthropic/Claude-X"]
        assert "as typed" in str(rows.options[0].prompt)
        assert rows.highlighted == 0
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.picked)
    assert app.picked == ["anthropic/Claude-X"]  # its capitals kept


async def test_the_row_as_typed_can_be_chosen_over_the_matches():
    # Matches first, the row "as typed" last: down into the list, down to it.
    _, picked = await pick([*"gpt-4", "down", "down", "down", "enter"])
    assert picked == ["gpt-4"]


async def test_enter_on_an_empty_name_keeps_the_current_model():
    _, picked = await pick(["enter"], current="gpt-4o")
    assert picked == ["gpt-4o"]


@pytest.mark.parametrize("typed", ["   ", ""])
async def test_nothing_listed_and_no_name_enter_picks_nothing_and_escape_closes(typed):
    app = Host(choices=[])
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ModelPicker))
        await pilot.press(*typed, "enter")
        await pilot.pause()
        assert isinstance(app.screen, ModelPicker) and not app.picked  # still open
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.picked)
    assert app.picked == [None]


async def test_a_filter_typed_then_changed_highlights_the_new_best_match():
    app = Host()
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ModelPicker))
        await pilot.press(*"gpt", "down", "down")  # into the list, on to gpt-4o
        rows = app.screen.query_one("#models-list", OptionList)
        assert rows.get_option_at_index(rows.highlighted).id == "gpt-4o"
        app.screen.query_one("#models-input").focus()
        await pilot.press("backspace", "backspace", "backspace", *"qwen", "enter")
        await wait_until(pilot, lambda: app.picked)
    assert app.picked == ["ollama_chat/qwen2.5:7b"]


async def test_the_title_names_the_model_picked_before_and_after_the_first_send(store):
    """The title line named the model the chat had before ctrl+l until the next send
    (the sidebar followed at once): `New chat · demo` with gpt-4o picked."""
    from chatui.tui.chat_panes import ChatTitle

    from .app_helpers import make_app
    from .test_app_chat import idle, type_and_send

    app = make_app(store)  # the demo model
    async with app.run_test(size=(140, 40)) as pilot:
        title = app.main.query_one(ChatTitle)

        async def choose(name: str) -> None:
            await pilot.press("ctrl+l")
            await wait_until(pilot, lambda: isinstance(app.screen, ModelPicker))
            await pilot.press(*name, "enter")
            await wait_until(pilot, lambda: title._said.endswith(f"· {name}"))

        await wait_until(pilot, lambda: title._said.endswith("· demo"))
        await choose("openai/gpt-test")  # a new chat, nothing sent
        await choose("demo")
        await type_and_send(pilot, "hello")
        await idle(pilot)
        await choose("openai/gpt-test")  # a stored chat
        assert app.main.pane.model == "openai/gpt-test"


async def test_letters_typed_in_the_list_go_on_filtering():
    """Down into the list, then more letters: they filter (the focus goes back to the
    name), and enter picks the best match of the whole filter."""
    app = Host()
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ModelPicker))
        field = app.screen.query_one("#models-input")
        await pilot.press(*"gpt", "down")
        assert isinstance(app.focused, OptionList)
        await pilot.press(*"-4o-mx", "backspace", "i")
        assert app.focused is field and field.value == "gpt-4o-mi"
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.picked)
    assert app.picked == ["gpt-4o-mini"]


async def test_letters_typed_fast_in_the_list_all_reach_the_name():
    """Keys typed fast are queued to the list they were sent to, before the first of
    them moves the focus: each still lands in the name (in tmux, ' OR first' typed
    in the search hits kept only its space)."""
    from textual import events

    app = Host()
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ModelPicker))
        field = app.screen.query_one("#models-input")
        await pilot.press(*"gpt", "down")
        rows = app.screen.query_one("#models-list", OptionList)
        assert app.focused is rows
        for char in "-4o-mini":  # to the app in the same instant, as the driver sends them
            app.post_message(events.Key(char, char))
        await wait_until(pilot, lambda: field.value == "gpt-4o-mini")
        assert app.focused is field
