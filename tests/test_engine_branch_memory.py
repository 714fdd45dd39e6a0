"""Memory per branch through real turns: a regenerated reply starts from its branch's memory."""

from __future__ import annotations

import pytest

from chatui.core.events import ReplyFinished
from tests import llm_server as script
from tests.test_engine import make_chat, of, run


@pytest.fixture
def chat(store, llm_server, fake_key):
    return make_chat(store, llm_server)


def remember(server, fact):
    server.script(
        script.tool_calls(("c1", "set_context", {"label": "scratchpad", "content": fact})),
        script.text("Noted."),
    )


async def test_a_regenerated_reply_does_not_carry_the_memory_its_sibling_wrote(chat):
    remember(chat.server, "The user drinks green tea.")
    events = await run(chat.engine.send(chat.sid, "remember: green tea"))
    wrote = of(events, ReplyFinished)[0].message  # the reply whose tool call wrote
    assert any("green tea" in b.content for b in await chat.session.load_context(at=wrote.id))
    # The user regenerates that reply: the new sibling's prompt has no green tea.
    chat.server.script(script.text("Another answer."))
    again = await run(chat.engine.regenerate(chat.sid, wrote.id))
    sibling = of(again, ReplyFinished)[0].message
    assert "green tea" not in chat.server.last["messages"][0]["content"]
    assert not any("green tea" in b.content for b in await chat.session.load_context(at=sibling.id))
    # Continuing the sibling's branch: still none.
    chat.server.script(script.text("ok"))
    await run(chat.engine.send(chat.sid, "what do I drink?", parent_id=sibling.id))
    assert "green tea" not in chat.server.last["messages"][0]["content"]
    # Continuing the first branch: the memory is there.
    leaf = chat.session.latest_leaf_under(wrote.id)
    chat.server.script(script.text("Green tea."))
    await run(chat.engine.send(chat.sid, "what do I drink?", parent_id=leaf))
    assert "green tea" in chat.server.last["messages"][0]["content"]
    # The write is recorded against the reply that made it, by the model.
    [write] = chat.session.block_history("scratchpad")
    assert (write.message_id, write.origin) == (wrote.id, "model")


async def test_global_blocks_stay_shared_across_branches_and_record_the_chat(chat):
    chat.server.script(
        script.tool_calls(("c1", "set_context", {"label": "memory", "content": "Sky is blue."})),
        script.text("Noted."),
    )
    events = await run(chat.engine.send(chat.sid, "remember the sky"))
    wrote = of(events, ReplyFinished)[0].message
    chat.server.script(script.text("Again."))
    await run(chat.engine.regenerate(chat.sid, wrote.id))
    assert "Sky is blue." in chat.server.last["messages"][0]["content"]
    [write] = chat.session.block_history("memory")
    assert (write.session_id, write.message_id) == (chat.sid, wrote.id)
