"""Any model per sibling (issue 14): R regenerates a reply with a model picked in the list."""

from __future__ import annotations

import pytest

from chatui.core.config import Config
from chatui.tui.screens.model_picker import ModelPicker
from widgets import MessageTree, MessageView

from .app_helpers import make_app
from .test_app_chat import idle, type_and_send

SIZE = (140, 40)


@pytest.fixture
def config(llm_server, fake_key):
    return Config(model="openai/test-model", api_base=llm_server.base_url, max_retries=1)


async def test_shift_r_regenerates_with_the_picked_model_and_marks_the_sibling(
    store, config, llm_server
):
    llm_server.text("First answer.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Hello")
        await idle(pilot)
        main = app.main
        first = main.snapshot.history[-1]
        await pilot.press("up")  # the reply
        assert isinstance(app.focused, MessageView) and app.focused.message_id == first.id
        llm_server.text("Second answer, by another model.")
        await pilot.press("ctrl+w")
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, ModelPicker)
        assert "the chat keeps openai/test-model" in str(picker.query_one("#models-title").render())
        await pilot.press(*"openai/other-model", "enter")
        await idle(pilot)
        assert llm_server.last["model"] == "other-model"  # LiteLLM sent the picked model
        reply = main.snapshot.history[-1]
        assert reply.id != first.id and reply.parent_id == first.parent_id
        assert reply.text == "Second answer, by another model."
        assert reply.metadata["model"] == "openai/other-model"
        # The chat's model did not change; the title still names it.
        assert main.chat.info.model in (None, "openai/test-model")
        assert main.pane.model == "openai/test-model"
        # Marked in the chat (the reply's header) and in the tree (its model differs).
        view = main.chat_view.view_for(reply.id)
        assert "openai/other-model" in str(view.query_one(".message--header").render())
        tree = main.query_one(MessageTree)
        assert tree.entry_for(reply.id).model == "openai/other-model"
        assert tree.entry_for(first.id).model is None  # the chat's own model: unmarked
        rows = {r.message_id: i for i, r in enumerate(tree.rows)}
        if reply.id in rows:
            assert "[other-model]" in tree.row_text(rows[reply.id])


async def test_escape_in_the_picker_regenerates_nothing(store, config, llm_server):
    llm_server.text("Only answer.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Hello")
        await idle(pilot)
        await pilot.press("up", "ctrl+w")
        await pilot.pause()
        await pilot.press("escape")
        await idle(pilot)
        assert len(llm_server.requests) == 1
        assert app.main.chat.manager.get_message_count(app.main.chat.session_id) == 2


async def test_the_engine_refuses_a_blank_model(store, config, llm_server):
    from chatui.core.engine import ChatEngine
    from chatui.core.events import ReplyFinished, TurnFailed
    from chatui.core.wiring import build_manager

    manager = build_manager(store, config)
    engine = ChatEngine(manager, config, flush_interval=0.0)
    sid = manager.create("x").id
    llm_server.text("hi")
    events = [e async for e in engine.send(sid, "hello")]
    reply = next(e for e in events if isinstance(e, ReplyFinished)).message
    again = [e async for e in engine.regenerate(sid, reply.id, model="  ")]
    assert isinstance(again[0], TurnFailed) and again[0].kind == "bad_input"
    assert manager.get_message_count(sid) == 2
