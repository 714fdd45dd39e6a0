"""Editing a model's reply and per-chat drafts (issue 24), with real keys."""

from __future__ import annotations

import json

import pytest

from chatui.core.config import Config
from chatui.tui.screens.chat_list import ChatListScreen
from chatui.tui.screens.dialogs import TextPrompt
from widgets import MessageView

from .app_helpers import make_app, populate, wait_until
from .test_app_chat import idle, type_and_send

SIZE = (140, 40)


@pytest.fixture
def config(llm_server, fake_key):
    return Config(model="openai/test-model", api_base=llm_server.base_url, max_retries=1)


def hint(app) -> str:
    return str(app.screen.query_one("#dialog-hint").render())


async def test_e_on_a_reply_makes_an_edited_sibling_the_next_request_carries(
    store, config, llm_server
):
    llm_server.text("Paris is the capital of Spain.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Capital of France?")
        await idle(pilot)
        main = app.main
        original = main.snapshot.history[-1]
        await pilot.press("up")
        assert isinstance(app.focused, MessageView) and app.focused.message_id == original.id
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, TextPrompt))
        field = app.screen.query_one("#dialog-input")
        assert field.text == original.text
        # Unchanged and empty: said in the dialog, nothing stored.
        await pilot.press("enter")
        await wait_until(pilot, lambda: "unchanged" in hint(app))
        await pilot.press("f7", "space", "enter")
        await wait_until(pilot, lambda: "the reply is empty" in hint(app))
        assert len(main.chat.session.get_tree()) == 2
        await pilot.press("f7", *"Paris is the capital of France.", "enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, TextPrompt))
        await wait_until(pilot, lambda: main.snapshot.history[-1].id != original.id)
        edited = main.snapshot.history[-1]
        assert edited.text == "Paris is the capital of France."
        assert edited.parent_id == original.parent_id  # a sibling: the same question
        assert edited.metadata["edited_from"] == original.id
        assert main.chat.session.get_message(original.id).text == original.text  # kept
        assert main.snapshot.positions[edited.id] == (2, 2)
        view = main.chat_view.view_for(edited.id)
        header = str(view.query_one(".message--header").render())
        assert "edited" in header and "‹2/2›" in header
        assert len(llm_server.requests) == 1  # nothing was asked of the model
        # The conversation goes on from the corrected reply.
        llm_server.text("Yes.")
        await type_and_send(pilot, "Sure?")
        await idle(pilot)
        sent = [m.get("content") for m in llm_server.last["messages"]]
        assert "Paris is the capital of France." in sent
        assert "Paris is the capital of Spain." not in sent
    # The original is one keypress away: left on the edited reply.
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        main = app.main
        await wait_until(pilot, lambda: main.snapshot is not None)
        main.chat_view.view_for(edited.id).focus()
        await pilot.press("left")
        await wait_until(pilot, lambda: main.snapshot.history[-1].id == original.id)


async def test_a_reply_that_called_tools_or_a_question_is_not_edited_as_a_reply(store):
    from chatui.core.workspace import EditRefused, Workspace
    from store import Message, tool_call_part

    workspace = Workspace(store, Config())
    chat_info = workspace.create_chat("c", model="demo")
    chat = workspace.open(chat_info.id)
    question = await chat.session.append_message(
        Message(id="q", role="user", parts=[{"type": "text", "text": "hi"}]), None
    )
    calling = await chat.session.append_message(
        Message(id="a", role="assistant", parts=[tool_call_part("c1", "set_context", {})]),
        question.id,
    )
    with pytest.raises(EditRefused, match="called tools"):
        await workspace.edit_reply(chat, calling.id, "text")
    with pytest.raises(EditRefused, match="only a model's reply"):
        await workspace.edit_reply(chat, question.id, "text")
    with pytest.raises(EditRefused, match="does not exist"):
        await workspace.edit_reply(chat, "nope", "text")
    assert len(chat.session.get_tree()) == 2


@pytest.fixture
def chats(store):
    return populate(store)


async def test_drafts_stay_with_their_chat_across_switches_and_a_restart(store, chats, tmp_path):
    state = tmp_path / "state.json"
    app = make_app(store, ui_state=None, state_path=state)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        main = app.main
        await wait_until(pilot, lambda: main.session_id == "chat-lisbon")
        await pilot.press(*"Half a thought about Sintra")
        # Another chat: its own (empty) input; typed there, kept there.
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ChatListScreen))
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: main.session_id == "chat-soup")
        assert main.chat_input.text == ""
        await pilot.press(*"More garlic?")
        # A new chat has its own draft too.
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: main.session_id is None)
        assert main.chat_input.text == ""
        await pilot.press(*"An idea for later")
        # Back: each chat's text, as typed.
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ChatListScreen))
        await pilot.press("enter")  # Lisbon trip, the newest
        await wait_until(pilot, lambda: main.session_id == "chat-lisbon")
        assert main.chat_input.text == "Half a thought about Sintra"
        await pilot.press(*" and Cascais")
        await pilot.press("ctrl+q")
    saved = json.loads(state.read_text())["drafts"]
    assert saved == {
        "chat-lisbon": "Half a thought about Sintra and Cascais",
        "chat-soup": "More garlic?",
        "": "An idea for later",
    }
    # A restart: the chat opened last shows its draft; the others keep theirs.
    app = make_app(store, ui_state=None, state_path=state)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        main = app.main
        await wait_until(pilot, lambda: main.session_id == "chat-lisbon")
        await wait_until(pilot, lambda: main.chat_input.text.endswith("and Cascais"))
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: main.chat_input.text == "An idea for later")
        # Sent: the draft is gone (what was sent left the input).
        await pilot.press("enter")
        await wait_until(pilot, lambda: main.session_id is not None and not main.generating)
        await idle(pilot)
        await pilot.press("ctrl+q")
    saved = json.loads(state.read_text())["drafts"]
    assert "" not in saved and "An idea for later" not in saved.values()
    assert saved["chat-soup"] == "More garlic?"


async def test_a_draft_is_written_as_it_is_typed_without_a_switch_or_a_quit(store, chats, tmp_path):
    state = tmp_path / "state.json"

    def written() -> dict:
        try:
            return json.loads(state.read_text()).get("drafts", {})
        except (OSError, ValueError):
            return {}

    app = make_app(store, ui_state=None, state_path=state)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        main = app.main
        await wait_until(pilot, lambda: main.session_id == "chat-lisbon")
        await pilot.press(*"Tram 28")
        await wait_until(pilot, lambda: written().get("chat-lisbon") == "Tram 28")
        await pilot.press(*" or walk?")
        await wait_until(pilot, lambda: written().get("chat-lisbon") == "Tram 28 or walk?")
        # Emptied by hand: forgotten in the file too.
        main.chat_input.clear()
        await wait_until(pilot, lambda: "chat-lisbon" not in written())


def test_a_damaged_drafts_entry_is_dropped_not_fatal(tmp_path):
    from chatui.core.ui_state import load_state

    path = tmp_path / "state.json"
    path.write_text(json.dumps({"drafts": {"a": "kept", "b": 3, "c": ["x"], "d": "  "}}))
    assert load_state(path).drafts == {"a": "kept"}
    path.write_text(json.dumps({"drafts": "not a table"}))
    assert load_state(path).drafts == {}


async def test_e_opens_a_message_with_the_cursor_at_its_end(store, config, llm_server):
    """What is typed after `e` goes where the message ends (its last line), not before
    its first word."""
    llm_server.text("One.")
    llm_server.text("Two.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        main = app.main
        await pilot.press(*"Capital of", "ctrl+j", *"France?", "enter")
        await idle(pilot)
        question = main.snapshot.history[-2]
        await pilot.press("up", "up")
        assert isinstance(app.focused, MessageView) and app.focused.message_id == question.id
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, TextPrompt))
        await pilot.press(*" Be brief.", "enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, TextPrompt))
        await idle(pilot)
        assert main.snapshot.history[-2].text == "Capital of\nFrance? Be brief."
