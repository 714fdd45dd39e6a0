"""Memory you can read and correct: the block inspector and the next request's prompt."""

from __future__ import annotations

import pytest
from textual.widgets import TextArea

from chatui.tui.screens.memory import BlockScreen
from chatui.tui.screens.prompt import PromptScreen

from .app_helpers import make_app, populate


@pytest.fixture
def chats(store):
    return populate(store)


async def open_gauge(pilot, label: str) -> None:
    gauge = pilot.app.main.sidebar.gauge(label)
    gauge.focus()
    await pilot.press("enter")
    await pilot.pause()


async def test_enter_on_a_gauge_shows_the_block_and_an_edit_reaches_the_next_prompt(store, chats):
    app = make_app(store)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        main = app.main
        await open_gauge(pilot, "scratchpad")
        screen = app.screen
        assert isinstance(screen, BlockScreen)
        title = str(screen.query_one("#block-title").render())
        assert "scratchpad · writable · 0/600 tokens" in title
        assert "this chat (Lisbon trip)" in str(screen.query_one("#block-facts").render())
        screen.query_one(TextArea).text = "Check the tram 28 timetable."
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is main
        session = main.chat.session
        assert session.get_context_block("scratchpad").content == "Check the tram 28 timetable."
        await pilot.press("f2")  # the next request carries it
        await pilot.pause()
        prompt = app.screen
        assert isinstance(prompt, PromptScreen)
        assert "Check the tram 28 timetable." in prompt.request.system_prompt
        assert {"set_context", "session_search"} <= {t.name for t in prompt.request.tools}
        assert prompt.request.prompt_tokens > 0 and all(t.tokens > 0 for t in prompt.request.tools)
        assert "SCRATCHPAD" in str(prompt.query_one("#prompt-text").render())


async def test_a_read_only_block_refuses_and_an_over_budget_edit_is_refused(store, chats):
    app = make_app(store)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        main = app.main
        await open_gauge(pilot, "soul")
        screen = app.screen
        assert isinstance(screen, BlockScreen) and screen.query_one(TextArea).read_only
        await pilot.press("ctrl+s")
        await pilot.pause()
        status = screen.query_one("#block-status")
        assert app.screen is screen and status.has_class("-error")
        assert "Read-only" in str(status.render())
        await pilot.press("escape")
        await pilot.pause()
        await open_gauge(pilot, "scratchpad")
        screen = app.screen
        screen.query_one(TextArea).text = "word " * 3000
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is screen  # still open: nothing lost
        assert "Not saved" in str(screen.query_one("#block-status").render())
        assert "limit is 600" in str(screen.query_one("#block-status").render())
        assert main.chat.session.get_context_block("scratchpad").content == ""


async def test_the_conversation_gauge_opens_the_prompt_screen(store, chats):
    app = make_app(store)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        app.main.query_one("#conversation-gauge").focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main
