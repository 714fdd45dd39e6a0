"""What we tried (issue 14): leaving a branch writes a short note on it, shown at the branch point."""

from __future__ import annotations

import pytest
from textual.widgets import Collapsible

from chatui.core.config import BranchNotes, Config, parse_config
from chatui.tui.screens.dialogs import Confirm
from store import SessionManager
from widgets import MessageView

from .app_helpers import make_app, populate, wait_until
from .test_app_chat import idle

SIZE = (140, 40)
NOTE = "Started in Belém, then asked about museums: the Gulbenkian came up."


@pytest.fixture
def chats(store):
    return populate(store)


def config(server, mode: BranchNotes) -> Config:
    return Config(
        compaction_model="openai/test-model",
        api_base=server.base_url,
        max_retries=0,
        branch_notes=mode,
    )


async def leave_a2_for_a1(pilot) -> None:
    await pilot.pause()
    await pilot.press("up", "up", "up")  # input → a4 → q2b → a2
    assert isinstance(pilot.app.focused, MessageView) and pilot.app.focused.message_id == "a2"
    await pilot.press("left")
    await pilot.pause()


async def settle_note(pilot) -> None:
    await wait_until(pilot, lambda: pilot.app.main.chat.info.metadata.get("branch_notes"), 4)
    await idle(pilot)
    await pilot.pause(0.1)


async def test_always_notes_the_branch_left_and_shows_it_at_the_branch_point(
    store, chats, llm_server, fake_key
):
    llm_server.text(NOTE)
    app = make_app(store, config(llm_server, "always"))
    async with app.run_test(size=SIZE) as pilot:
        await leave_a2_for_a1(pilot)
        await settle_note(pilot)
        notes = app.main.chat.info.metadata["branch_notes"]
        assert set(notes) == {"a2"}  # keyed by the first message of the branch left
        assert notes["a2"]["at"] == "q1" and notes["a2"]["leaf_id"] == "a4"
        assert notes["a2"]["summary"] == NOTE and notes["a2"]["model"] == "openai/test-model"
        # The note writer got the branch's messages, not the ones above the branch point.
        prompt = llm_server.messages(0)[-1]["content"]
        assert "Start in Belém" in prompt and "Gulbenkian" in prompt
        assert "Plan three days" not in prompt
        # Shown collapsed on a1, the sibling now on screen; the messages are untouched.
        view = app.main.chat_view.view_for("a1")
        assert view.notes == [("What we tried on ‹2/2› (note by openai/test-model)", NOTE)]
        note = view.query_one(Collapsible)
        assert note.collapsed
        assert SessionManager(app.store).get_message_count(chats["lisbon"]) == 7
        # Back to a2: a1's branch is left now, and gets its own note.
        llm_server.text("Started in Alfama.")
        app.main.chat_view.view_for("a1").focus()
        await pilot.press("right")
        await wait_until(pilot, lambda: len(app.main.chat.info.metadata["branch_notes"]) == 2)
        await idle(pilot)
        assert len(llm_server.requests) == 2
        # And to a1 again: a2's branch is noted up to the same leaf, no third call.
        app.main.chat_view.view_for("a2").focus()
        await pilot.press("left")
        await pilot.pause(0.3)
        assert len(llm_server.requests) == 2


async def test_ask_writes_only_on_yes(store, chats, llm_server, fake_key):
    llm_server.text(NOTE)
    app = make_app(store, config(llm_server, "ask"))
    async with app.run_test(size=SIZE) as pilot:
        await leave_a2_for_a1(pilot)
        assert isinstance(app.screen, Confirm)
        await pilot.press("n")
        await pilot.pause(0.2)
        assert "branch_notes" not in app.main.chat.info.metadata
        assert llm_server.requests == []
        await pilot.press("right")  # back to a2: a1's branch has a reply too — asked again
        await pilot.pause()
        assert isinstance(app.screen, Confirm)
        await pilot.press("y")
        await settle_note(pilot)
        assert set(app.main.chat.info.metadata["branch_notes"]) == {"a1"}


async def test_off_by_default_and_a_failed_note_loses_nothing(store, chats, llm_server, fake_key):
    assert Config().branch_notes == "off"
    app = make_app(store, config(llm_server, "off"))
    async with app.run_test(size=SIZE) as pilot:
        await leave_a2_for_a1(pilot)
        await pilot.pause(0.2)
        assert llm_server.requests == [] and not isinstance(app.screen, Confirm)
    llm_server.error(500, "boom")
    app = make_app(store, config(llm_server, "always"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("up")  # the first run left a1's branch on screen: input → a1
        await pilot.pause()
        focused = app.focused
        assert isinstance(focused, MessageView) and focused.message_id == "a1"
        await pilot.press("right")  # leaving a1's branch: the note writer fails
        await wait_until(pilot, lambda: llm_server.requests)
        await pilot.pause(0.3)
        assert len(llm_server.requests) == 1  # it was asked, and failed
        assert "branch_notes" not in app.main.chat.info.metadata
        assert app.main.chat.active_leaf == "a4"  # the switch itself happened
        assert SessionManager(app.store).get_message_count(chats["lisbon"]) == 7


def test_a_bad_branch_notes_setting_is_refused():
    with pytest.raises(ValueError, match="branch_notes must be one of off, ask, always"):
        parse_config({"branch_notes": "sometimes"})
    with pytest.raises(ValueError, match="branch_notes"):
        parse_config({"branch_notes": 3})
    assert parse_config({"branch_notes": "ask"}).branch_notes == "ask"
