"""ChatEngine turns against the scripted server through the real LiteLLM client."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from types import SimpleNamespace

import pytest

from chatui.core.config import Config
from chatui.core.engine import ChatEngine, ContextUsage
from chatui.core.events import (
    Compacted,
    MemoryChanged,
    MessageStored,
    Notice,
    ReplyDelta,
    ReplyFinished,
    ReplyStarted,
    TurnFailed,
    UsageRecorded,
)
from chatui.core.wiring import build_manager
from tests import llm_server as script


def make_chat(store, server, **config):
    settings = dict(
        model="openai/test-model", api_base=server.base_url, request_timeout=5.0, max_retries=2
    )
    settings.update(config)
    cfg = Config(**settings)
    manager = build_manager(store, cfg)
    engine = ChatEngine(manager, cfg, flush_interval=0.0)
    info = manager.create("test chat")
    return SimpleNamespace(
        engine=engine,
        manager=manager,
        sid=info.id,
        server=server,
        config=cfg,
        session=manager.get_session(info.id),
    )


@pytest.fixture
def chat(store, llm_server, fake_key):
    return make_chat(store, llm_server)


async def run(events) -> list:
    return [event async for event in events]


def of(events, kind) -> list:
    return [e for e in events if isinstance(e, kind)]


# -- a plain turn --------------------------------------------------------------------


async def test_send_stores_user_then_streams_reply_exactly(chat):
    reply = "Sure — here is **bold** text,\n\nand a second paragraph.  Two spaces."
    chat.server.script(script.text(reply, usage=(40, 12)))
    events = await run(chat.engine.send(chat.sid, "Tell me something"))

    kinds = [type(e).__name__ for e in events]
    assert kinds[:2] == ["MessageStored", "ReplyStarted"]
    # the next request, measured once at the end (what the sidebar draws and what
    # auto-compaction decided on)
    assert kinds[-3:] == ["UsageRecorded", "ReplyFinished", "ContextMeasured"]
    user = events[0].message
    assert user.role == "user" and user.text == "Tell me something"
    started = of(events, ReplyStarted)[0]
    assert started.message.parent_id == user.id
    started_meta = dict(started.message.metadata)
    writer = started_meta.pop("writer")  # who streams it, for another app on the database
    assert writer["pid"] == os.getpid() and writer["host"] and writer["at"]
    assert started_meta == {
        "model": "openai/test-model",
        "status": "streaming",
        "incomplete": True,
    }
    deltas = of(events, ReplyDelta)
    assert len(deltas) > 5
    assert "".join(d.text for d in deltas) == reply
    finished = of(events, ReplyFinished)[0]
    assert finished.status == "complete"
    stored = chat.session.get_message(started.message.id)
    assert stored.text == reply
    metadata = dict(stored.metadata)
    first_token = metadata.pop("first_token_s")  # time to first token, for compare
    assert isinstance(first_token, float) and first_token >= 0
    assert metadata == {"model": "openai/test-model", "status": "complete"}
    assert stored.token_usage == {"input": 40, "output": 12, "cost": 0.0}
    info = chat.manager.get(chat.sid)
    assert (info.input_tokens, info.output_tokens) == (40, 12)
    assert of(events, UsageRecorded)[0].input_tokens == 40
    assert info.status == "idle"
    assert [m.id for m in chat.session.get_history()] == [user.id, stored.id]


async def test_model_is_sent_the_system_prompt_and_history(chat):
    chat.server.script(script.text("one"), script.text("two"))
    await run(chat.engine.send(chat.sid, "first"))
    await run(chat.engine.send(chat.sid, "second"))
    sent = chat.server.messages()
    assert sent[0]["role"] == "system" and "SOUL" in sent[0]["content"]
    assert "MEMORY" in sent[0]["content"]
    assert [(m["role"], m["content"]) for m in sent[1:]] == [
        ("user", "first"),
        ("assistant", "one"),
        ("user", "second"),
    ]
    names = {t["function"]["name"] for t in chat.server.last["tools"]}
    assert {"set_context", "session_search"} <= names


async def test_status_is_active_while_generating(chat):
    chat.server.script(script.text("a b c d"))
    chat.manager.set_status(chat.sid, "idle")
    seen = {}
    async for event in chat.engine.send(chat.sid, "x"):
        seen.setdefault(type(event).__name__, chat.manager.get(chat.sid).status)
    assert seen["ReplyStarted"] == "active" and seen["ReplyDelta"] == "active"
    assert chat.manager.get(chat.sid).status == "idle"


async def test_send_under_an_explicit_parent_makes_a_branch(chat):
    chat.server.script(script.text("r1"), script.text("r2"), script.text("r3"))
    first = await run(chat.engine.send(chat.sid, "root"))
    root = first[0].message
    await run(chat.engine.send(chat.sid, "child A"))
    events = await run(
        chat.engine.send(chat.sid, "child B", parent_id=of(first, ReplyFinished)[0].message.id)
    )
    branches = chat.session.get_branches(of(first, ReplyFinished)[0].message.id)
    assert [m.text for m in branches] == ["child A", "child B"]
    assert chat.session.get_history(of(events, ReplyFinished)[0].message.id)[0].id == root.id


async def test_empty_text_is_refused_and_changes_nothing(chat):
    events = await run(chat.engine.send(chat.sid, "   \n"))
    assert [type(e) for e in events] == [TurnFailed]
    assert events[0].kind == "bad_input"
    assert chat.manager.get_message_count(chat.sid) == 0
    assert chat.server.requests == []


# -- tools ---------------------------------------------------------------------------


async def test_tool_round_trip_writes_memory_and_sends_the_result_back(chat):
    chat.server.script(
        script.tool_calls(
            (
                "call_1",
                "set_context",
                {"label": "memory", "content": "The user drinks green tea.", "action": "append"},
            ),
            text_before="Noting that. ",
        ),
        script.text("Saved it."),
    )
    events = await run(chat.engine.send(chat.sid, "remember I drink green tea"))

    kinds = [type(e).__name__ for e in events if not isinstance(e, ReplyDelta)]
    assert kinds == [
        "MessageStored",
        "ReplyStarted",
        "UsageRecorded",
        "ReplyFinished",
        "MessageStored",
        "MemoryChanged",
        "ReplyStarted",
        "UsageRecorded",
        "ReplyFinished",
        "ContextMeasured",
    ]
    first = of(events, ReplyFinished)[0]
    assert first.status == "tool_calls"
    assert first.message.text == "Noting that. "
    assert first.message.tool_calls == [
        {
            "type": "tool-call",
            "tool_call_id": "call_1",
            "tool_name": "set_context",
            "input": {
                "label": "memory",
                "content": "The user drinks green tea.",
                "action": "append",
            },
        }
    ]
    tool_msg = of(events, MessageStored)[1].message
    assert tool_msg.role == "tool" and tool_msg.parent_id == first.message.id
    assert tool_msg.tool_results[0]["tool_call_id"] == "call_1"
    assert not tool_msg.tool_results[0].get("is_error")
    assert of(events, MemoryChanged)[0].labels == ("memory",)
    assert "green tea" in chat.session.get_context_block("memory").content

    second_request = chat.server.requests[1]["messages"]
    assert second_request[-2]["tool_calls"][0]["id"] == "call_1"
    assert second_request[-1]["role"] == "tool"
    assert second_request[-1]["tool_call_id"] == "call_1"
    assert "Appended to 'memory'" in second_request[-1]["content"]
    # The frozen prompt does not change within the turn...
    assert second_request[0] == chat.server.requests[0]["messages"][0]
    final = of(events, ReplyFinished)[1]
    assert final.status == "complete" and final.message.parent_id == tool_msg.id
    assert chat.manager.get(chat.sid).input_tokens == 20 + 12

    # ...and the next user turn sees the memory in its system prompt.
    chat.server.script(script.text("Green tea it is."))
    await run(chat.engine.send(chat.sid, "what do I drink?"))
    assert "green tea" in chat.server.last["messages"][0]["content"]


async def test_several_calls_in_one_reply_get_one_tool_message(chat):
    chat.server.script(
        script.tool_calls(
            ("c1", "session_search", {"query": "tea"}),
            ("c2", "no_such_tool", {}),
            ("c3", "set_context", "{broken json"),
        ),
        script.text("done"),
    )
    events = await run(chat.engine.send(chat.sid, "go"))
    tool_msgs = [e.message for e in of(events, MessageStored) if e.message.role == "tool"]
    assert len(tool_msgs) == 1
    results = {r["tool_call_id"]: r for r in tool_msgs[0].tool_results}
    assert set(results) == {"c1", "c2", "c3"}
    assert not results["c1"].get("is_error")
    assert results["c2"]["output"].startswith("Error: unknown tool 'no_such_tool'")
    assert results["c3"]["is_error"] and "not valid JSON" in results["c3"]["output"]
    assert of(events, MemoryChanged) == []
    sent = chat.server.requests[1]["messages"]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ["c1", "c2", "c3"]


async def test_tool_round_bound_stops_with_a_notice(store, llm_server, fake_key):
    chat = make_chat(store, llm_server, max_tool_rounds=2)
    for i in range(3):
        chat.server.script(script.tool_calls((f"c{i}", "session_search", {"query": "x"})))
    events = await run(chat.engine.send(chat.sid, "loop forever"))
    assert len(chat.server.requests) == 2
    notices = of(events, Notice)
    assert len(notices) == 1 and "max_tool_rounds = 2" in notices[0].text
    assert notices[0].level == "warning"
    # The last round's calls were answered, so the stored tree stays valid to send.
    leaf = chat.session.get_latest_leaf()
    assert leaf.role == "tool" and leaf.tool_results[0]["tool_call_id"] == "c1"
    assert of(events, TurnFailed) == []
    assert chat.manager.get(chat.sid).status == "idle"


# -- branching ---------------------------------------------------------------------------


async def test_regenerate_an_assistant_reply_adds_a_sibling_and_keeps_the_old(chat):
    chat.server.script(script.text("first answer"), script.text("second answer"))
    events = await run(chat.engine.send(chat.sid, "question"))
    user = events[0].message
    old = of(events, ReplyFinished)[0].message
    again = await run(chat.engine.regenerate(chat.sid, old.id))
    assert of(again, MessageStored) == []  # no new user message
    new = of(again, ReplyFinished)[0].message
    assert new.parent_id == user.id and new.text == "second answer"
    assert [m.text for m in chat.session.get_branches(user.id)] == ["first answer", "second answer"]
    assert chat.session.get_message(old.id).text == "first answer"
    # The model saw the history up to the user message, not the old answer.
    assert [m["content"] for m in chat.server.last["messages"][1:]] == ["question"]


async def test_regenerate_on_a_user_message_answers_it_again(chat):
    chat.server.script(script.text("one"), script.text("two"))
    events = await run(chat.engine.send(chat.sid, "q"))
    user = events[0].message
    again = await run(chat.engine.regenerate(chat.sid, user.id))
    assert of(again, ReplyFinished)[0].message.parent_id == user.id
    assert len(chat.session.get_branches(user.id)) == 2


async def test_edit_makes_a_sibling_user_message_and_a_reply(chat):
    chat.server.script(script.text("a1"), script.text("a2"), script.text("a3"))
    await run(chat.engine.send(chat.sid, "hello"))
    second = await run(chat.engine.send(chat.sid, "what is 2+2"))
    original = second[0].message
    edited = await run(chat.engine.edit(chat.sid, original.id, "what is 3+3"))
    new_user = edited[0].message
    assert isinstance(edited[0], MessageStored) and new_user.text == "what is 3+3"
    assert new_user.parent_id == original.parent_id and new_user.id != original.id
    siblings = chat.session.get_branches(original.parent_id)
    assert [m.text for m in siblings] == ["what is 2+2", "what is 3+3"]
    assert chat.session.get_message(original.id).text == "what is 2+2"
    assert len(chat.session.get_branches(original.id)) == 1  # old reply still there
    sent = [m["content"] for m in chat.server.last["messages"][1:]]
    assert sent == ["hello", "a1", "what is 3+3"]


async def test_edit_of_the_first_message_makes_a_new_root(chat):
    chat.server.script(script.text("a1"), script.text("a2"))
    first = await run(chat.engine.send(chat.sid, "hello"))
    edited = await run(chat.engine.edit(chat.sid, first[0].message.id, "hi there"))
    assert edited[0].message.parent_id is None
    assert chat.manager.get_message_count(chat.sid) == 4


@pytest.mark.parametrize("target", ["missing", "tool", "assistant-edit", "empty-edit"])
async def test_bad_branch_targets_fail_clearly_and_change_nothing(chat, target):
    chat.server.script(
        script.tool_calls(("c1", "session_search", {"query": "q"})), script.text("done")
    )
    events = await run(chat.engine.send(chat.sid, "q"))
    count = chat.manager.get_message_count(chat.sid)
    requests = len(chat.server.requests)
    tool_id = [e.message.id for e in of(events, MessageStored) if e.message.role == "tool"][0]
    reply_id = of(events, ReplyFinished)[-1].message.id
    if target == "missing":
        result = await run(chat.engine.regenerate(chat.sid, "nope"))
    elif target == "tool":
        result = await run(chat.engine.regenerate(chat.sid, tool_id))
    elif target == "assistant-edit":
        result = await run(chat.engine.edit(chat.sid, reply_id, "new"))
    else:
        result = await run(chat.engine.edit(chat.sid, events[0].message.id, "  "))
    assert [type(e) for e in result] == [TurnFailed]
    assert result[0].kind == "bad_input" and result[0].title
    assert chat.manager.get_message_count(chat.sid) == count
    assert len(chat.server.requests) == requests


# -- context and compaction ---------------------------------------------------------------


async def test_context_usage_counts_history_and_prompt(store, llm_server, fake_key):
    chat = make_chat(store, llm_server)
    chat.config = replace(chat.config)
    usage = await chat.engine.context_usage(chat.sid)
    assert isinstance(usage, ContextUsage)
    assert usage.window is None and usage.fraction is None  # the test model is unknown
    empty = usage.tokens
    assert empty > 0  # the system prompt alone
    chat.server.script(script.text("word " * 50))
    await run(chat.engine.send(chat.sid, "hello " * 100))
    assert (await chat.engine.context_usage(chat.sid)).tokens > empty + 150


async def test_context_window_from_config_override(store, llm_server, fake_key):
    from chatui.core.config import ModelOptions

    chat = make_chat(
        store, llm_server, models={"openai/test-model": ModelOptions(context_window=50_000)}
    )
    usage = await chat.engine.context_usage(chat.sid)
    assert usage.window == 50_000 and 0 < usage.fraction < 1


async def test_model_for_prefers_the_session_model(chat):
    assert chat.engine.model_for(chat.sid) == "openai/test-model"
    chat.manager.set_model(chat.sid, "demo")
    assert chat.engine.model_for(chat.sid) == "demo"


async def test_auto_compaction_when_the_window_fills(store, llm_server, fake_key):
    from chatui.core.config import ModelOptions

    chat = make_chat(
        store,
        llm_server,
        compact_at=0.5,
        models={"openai/test-model": ModelOptions(context_window=1200)},
    )
    for i in range(4):
        chat.server.script(script.text(f"answer {i} " + "filler " * 40))
        await run(chat.engine.send(chat.sid, f"question {i} " + "padding " * 40))
    summary = "## Topic\nQuestions\n## Key Points\n- q\n## Current State\nok\n## Open Items\n-"
    chat.server.script(script.text("last answer"), script.json_reply(summary))
    events = await run(chat.engine.send(chat.sid, "final question"))
    compacted = [e for e in events if type(e).__name__ == "Compacted"]
    assert len(compacted) == 1, [type(e).__name__ for e in events]
    history = chat.session.get_history()
    assert any(m.is_compaction and "## Key Points" in m.text for m in history)
    assert chat.manager.get_message_count(chat.sid) == 10  # nothing deleted
    summary_request = chat.server.last
    assert "Summarise the conversation" in summary_request["messages"][-1]["content"]
    assert summary_request.get("stream") in (None, False)


async def test_failed_auto_compaction_is_a_notice_and_loses_nothing(store, llm_server, fake_key):
    from chatui.core.config import ModelOptions

    chat = make_chat(
        store,
        llm_server,
        compact_at=0.1,
        models={"openai/test-model": ModelOptions(context_window=600)},
    )
    for _ in range(3):
        chat.server.script(script.text("answer " * 30))
        await run(chat.engine.send(chat.sid, "question " * 30))
    chat.server.script(script.text("fine"), script.error(500, "summariser down"))
    events = await run(chat.engine.send(chat.sid, "more"))
    notices = of(events, Notice)
    assert notices and "Compaction failed" in notices[-1].text
    assert of(events, TurnFailed) == []
    assert chat.session.get_compactions() == []
    assert chat.manager.get_message_count(chat.sid) == 8


async def test_compact_now_on_a_branch_and_nothing_to_compact(chat):
    assert await chat.engine.compact(chat.sid) is None  # empty chat
    for i in range(6):
        chat.server.script(script.text(f"a{i}"))
        await run(chat.engine.send(chat.sid, f"q{i}"))
    chat.server.script(
        script.json_reply("## Topic\nT\n## Key Points\n-\n## Current State\n-\n## Open Items\n-")
    )
    leaf = chat.session.get_latest_leaf().id
    compaction = await chat.engine.compact(chat.sid, leaf)
    assert compaction is not None
    assert compaction.to_message_id in [m.id for m in chat.session.get_raw_history(leaf)]


async def test_summary_model_from_config(store, llm_server, fake_key):
    chat = make_chat(store, llm_server, compaction_model="openai/summary-model")
    for i in range(6):
        chat.server.script(script.text(f"a{i}"))
        await run(chat.engine.send(chat.sid, f"q{i}"))
    chat.server.script(script.json_reply("## Topic\nT"))
    await chat.engine.compact(chat.sid)
    assert chat.server.last["model"] == "summary-model"


async def test_tool_arguments_are_stored_as_json_objects(chat):
    args = {"query": "ünïcode ✓", "limit": 3}
    chat.server.script(script.tool_calls(("c9", "session_search", args)), script.text("ok"))
    events = await run(chat.engine.send(chat.sid, "find"))
    call = of(events, ReplyFinished)[0].message.tool_calls[0]
    assert call["input"] == args
    assert (
        json.loads(
            chat.server.requests[1]["messages"][-2]["tool_calls"][0]["function"]["arguments"]
        )
        == args
    )


async def test_reasoning_is_stored_as_its_own_part_and_not_sent_back(chat):
    chat.server.script(script.text("Four.", reasoning="2 plus 2 is 4."), script.text("ok"))
    events = await run(chat.engine.send(chat.sid, "2+2?"))
    kinds = {d.kind for d in of(events, ReplyDelta)}
    assert kinds == {"text", "reasoning"}
    stored = of(events, ReplyFinished)[0].message
    assert stored.parts == [
        {"type": "reasoning", "text": "2 plus 2 is 4."},
        {"type": "text", "text": "Four."},
    ]
    await run(chat.engine.send(chat.sid, "thanks"))
    assert "2 plus 2" not in json.dumps(chat.server.last["messages"])


SUMMARY = "## Topic\nT\n## Key Points\n- k\n## Current State\nok\n## Open Items\n-"


async def test_a_long_first_question_in_a_small_window_is_compacted_too(
    store, llm_server, fake_key
):
    """A 1.5k window whose first question is long: the first messages a compaction
    protects held it, so compacting freed too little and ran again each turn (found on
    a real local server). The protection shrinks to what the tail may hold: the
    question is summarised with the rest and the next request is under `compact_at`."""
    from chatui.core.config import ModelOptions

    chat = make_chat(
        store, llm_server, models={"openai/test-model": ModelOptions(context_window=1536)}
    )
    fixed = await chat.engine.context_usage(chat.sid)
    words = int((0.8 * 1536 - fixed.tokens - 40) / 1.3)  # the first turn fits, just
    chat.server.script(script.text("Sure."))
    await run(chat.engine.send(chat.sid, "word " * words))
    first = chat.session.get_history()[0]
    assert not (await chat.engine.context_usage(chat.sid)).over(0.8)
    chat.server.script(script.text("Then this. " * 10), script.json_reply(SUMMARY))
    events = await run(chat.engine.send(chat.sid, "And then what happens next? " * 5))
    compacted = of(events, Compacted)
    assert len(compacted) == 1, [type(e).__name__ for e in events]
    assert compacted[0].compaction.from_message_id == first.id  # the question too
    assert not of(events, Notice)
    after = await chat.engine.context_usage(chat.sid)
    assert not after.over(0.8), after
    chat.server.script(script.text("ok"))
    assert not of(await run(chat.engine.send(chat.sid, "fine")), Compacted)  # once


async def test_a_compaction_that_cannot_free_enough_says_why(store, llm_server, fake_key):
    """The latest messages are kept whole: when they alone fill the window past
    `compact_at`, compacting says so, with the figures, instead of a silent summary each
    turn."""
    from chatui.core.config import ModelOptions

    chat = make_chat(
        store, llm_server, models={"openai/test-model": ModelOptions(context_window=1536)}
    )
    for i in range(2):
        chat.server.script(script.text(f"a{i}"))
        await run(chat.engine.send(chat.sid, f"q{i}"))
    answer = " ".join(f"w{i}" for i in range(300))  # no repeated chunk: not a loop
    chat.server.script(script.text(answer), script.json_reply(SUMMARY))
    events = await run(chat.engine.send(chat.sid, "question " * 200))
    assert of(events, Compacted)
    notes = [n.text for n in of(events, Notice)]
    assert len(notes) == 1 and "kept whole" in notes[0] and "ctrl+n" in notes[0], notes
