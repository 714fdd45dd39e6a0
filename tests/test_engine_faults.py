"""ChatEngine under provider faults, cancellation and storage failures: nothing is lost."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3

import pytest

from chatui.core.events import (
    Compacted,
    MessageStored,
    Notice,
    ReplyDelta,
    ReplyFinished,
    ReplyStarted,
    TurnFailed,
)
from store import Store, StoreSessionProvider
from tests import llm_server as script
from tests.conftest import FAKE_OPENAI_KEY
from tests.test_engine import make_chat, of, run

SUMMARY = "## Topic\nEarlier talk\n## Key Points\n- q\n## Current State\nok\n## Open Items\n-"


@pytest.fixture
def chat(store, llm_server, fake_key):
    return make_chat(store, llm_server)


async def fill(chat, turns: int) -> None:
    for i in range(turns):
        chat.server.script(script.text(f"answer {i}"))
        await run(chat.engine.send(chat.sid, f"question {i}"))


# -- provider errors end the turn readably ----------------------------------------------


@pytest.mark.parametrize(
    "reply, kind",
    [
        (script.error(401, "Incorrect API key provided"), "auth"),
        (script.error(403, "not allowed"), "permission"),
        (script.error(404, "The model does not exist", code="model_not_found"), "not_found"),
        (script.error(500, "boom", type="server_error"), "server"),
        (script.error(429, "slow down", headers={"Retry-After": "0"}), "rate_limit"),
    ],
)
async def test_http_errors_become_turn_failed_and_keep_an_error_reply(chat, reply, kind):
    chat.server.script(*[reply] * 3)  # enough for the 429 retries
    events = await run(chat.engine.send(chat.sid, "hello"))
    failed = of(events, TurnFailed)
    assert len(failed) == 1 and failed[0].kind == kind
    assert failed[0].title and failed[0].hint
    assert isinstance(events[-1], TurnFailed)
    user = of(events, MessageStored)[0].message
    assert chat.session.get_message(user.id).text == "hello"  # stored before the call
    reply_msg = of(events, ReplyFinished)[0].message
    assert of(events, ReplyFinished)[0].status == "error"
    stored = chat.session.get_message(reply_msg.id)
    assert stored.parent_id == user.id and stored.parts == []
    assert stored.metadata["status"] == "error" and stored.metadata["incomplete"] is True
    assert stored.metadata["error"] == failed[0].title
    assert stored.metadata["error_kind"] == kind
    assert chat.manager.get(chat.sid).status == "idle"


async def test_429_retry_is_announced_then_the_reply_streams(chat):
    chat.server.script(
        script.error(429, "slow down", headers={"Retry-After": "0.1"}),
        script.text("after the wait"),
    )
    events = await run(chat.engine.send(chat.sid, "hello"))
    notices = of(events, Notice)
    assert len(notices) == 1 and "retry 1 of 2" in notices[0].text
    assert of(events, TurnFailed) == []
    assert of(events, ReplyFinished)[0].message.text == "after the wait"
    assert len(of(events, ReplyStarted)) == 1  # retried into the same stored reply


async def test_broken_stream_keeps_the_partial_reply_marked_incomplete(chat):
    chat.server.script(script.broken_stream("The first half of"))
    events = await run(chat.engine.send(chat.sid, "hello"))
    failed = of(events, TurnFailed)[0]
    assert failed.kind in ("connection", "bad_response")
    streamed = "".join(d.text for d in of(events, ReplyDelta))
    assert streamed == "The first half of"
    stored = chat.session.get_message(of(events, ReplyStarted)[0].message.id)
    assert stored.text == streamed
    assert stored.metadata["status"] == "error" and stored.metadata["incomplete"] is True


async def test_malformed_chunks_end_the_turn_without_a_traceback(chat):
    chat.server.script(script.malformed("{nope", text_before="Starting"))
    events = await run(chat.engine.send(chat.sid, "hello"))
    failed = of(events, TurnFailed)[0]
    assert failed.kind == "bad_response"
    assert "Traceback" not in failed.detail
    stored = chat.session.get_message(of(events, ReplyStarted)[0].message.id)
    assert stored.text == "Starting" and stored.metadata["incomplete"]


async def test_timeout_mid_stream_keeps_partial(store, llm_server, fake_key):
    chat = make_chat(store, llm_server, request_timeout=0.4)
    chat.server.script(script.hang(10, text_before="So far"))
    events = await run(chat.engine.send(chat.sid, "hello"))
    assert of(events, TurnFailed)[0].kind == "timeout"
    assert chat.session.get_message(of(events, ReplyStarted)[0].message.id).text == "So far"


async def test_connection_refused(store, llm_server, fake_key):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    chat = make_chat(store, llm_server, api_base=f"http://127.0.0.1:{port}/v1")
    events = await run(chat.engine.send(chat.sid, "hello"))
    failed = of(events, TurnFailed)[0]
    assert failed.kind == "connection" and str(port) in failed.title


async def test_missing_key_fails_before_anything_is_stored(store, llm_server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    chat = make_chat(store, llm_server, model="gpt-4o-mini", api_base=None)
    events = await run(chat.engine.send(chat.sid, "hello"))
    assert [type(e) for e in events] == [TurnFailed]
    assert events[0].kind == "auth" and "OPENAI_API_KEY" in events[0].detail
    assert chat.manager.get_message_count(chat.sid) == 0
    assert llm_server.requests == []


async def test_database_refusing_the_write_keeps_nothing_and_calls_no_model(chat, monkeypatch):
    def full(self, message, parent_id=None):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(StoreSessionProvider, "append_message", full)
    events = await run(chat.engine.send(chat.sid, "my long careful message"))
    assert [type(e) for e in events] == [TurnFailed]
    assert events[0].kind == "storage" and "disk is full" in events[0].detail
    assert chat.server.requests == []


# -- context length: compact and retry once ------------------------------------------------


async def test_context_length_compacts_and_retries_once(chat):
    await fill(chat, 6)
    chat.server.script(
        script.context_length_error(), script.json_reply(SUMMARY), script.text("Now it fits.")
    )
    events = await run(chat.engine.send(chat.sid, "one more"))
    assert of(events, TurnFailed) == []
    assert "compacting" in of(events, Notice)[0].text
    assert len(of(events, Compacted)) == 1
    assert len(of(events, ReplyStarted)) == 1
    finished = of(events, ReplyFinished)[0]
    assert finished.status == "complete" and finished.message.text == "Now it fits."
    too_long, summary_call, retried = chat.server.requests[-3:]
    assert "Summarise the conversation" in summary_call["messages"][-1]["content"]
    assert len(retried["messages"]) < len(too_long["messages"])
    assert any(
        "Summary of the earlier conversation" in (m.get("content") or "")
        for m in retried["messages"]
    )
    assert retried["messages"][-1] == {"role": "user", "content": "one more"}
    assert chat.manager.get_message_count(chat.sid) == 14  # originals all kept


async def test_context_length_that_still_does_not_fit_fails_clearly(chat):
    await fill(chat, 6)
    chat.server.script(
        script.context_length_error(), script.json_reply(SUMMARY), script.context_length_error()
    )
    events = await run(chat.engine.send(chat.sid, "one more"))
    failed = of(events, TurnFailed)
    assert len(failed) == 1 and failed[0].kind == "context_length"
    assert len(of(events, Compacted)) == 1
    assert len(chat.server.requests) == 6 + 3  # no second compaction, no third try


async def test_context_length_with_nothing_to_compact_fails(chat):
    chat.server.script(script.context_length_error())
    events = await run(chat.engine.send(chat.sid, "a huge paste"))
    assert of(events, TurnFailed)[0].kind == "context_length"
    assert of(events, Compacted) == []


# -- cancellation -----------------------------------------------------------------------------


def _start_streaming(chat, words: int = 400) -> tuple[list, list]:
    chat.server.script(script.text("word " * words, delay=0.005))
    return [], []


async def test_cancelling_the_task_keeps_the_partial_reply_marked_cancelled(chat):
    deltas, started = _start_streaming(chat)

    async def consume():
        async for event in chat.engine.send(chat.sid, "talk"):
            if isinstance(event, ReplyDelta):
                deltas.append(event)
            elif isinstance(event, ReplyStarted):
                started.append(event)

    task = asyncio.create_task(consume())
    while len(deltas) < 5:
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    stored = chat.session.get_message(started[0].message.id)
    assert stored.metadata["status"] == "cancelled" and stored.metadata["incomplete"] is True
    assert stored.text == "".join(d.text for d in deltas)
    assert 0 < len(stored.text) < len("word " * 400)
    assert chat.manager.get(chat.sid).status == "idle"


async def test_aclose_keeps_the_partial_reply_marked_cancelled(chat):
    deltas, started = _start_streaming(chat)
    events = chat.engine.send(chat.sid, "talk")
    async for event in events:
        if isinstance(event, ReplyStarted):
            started.append(event)
        if isinstance(event, ReplyDelta):
            deltas.append(event)
            if len(deltas) == 7:
                break
    await events.aclose()
    stored = chat.session.get_message(started[0].message.id)
    assert stored.metadata["status"] == "cancelled" and stored.metadata["incomplete"] is True
    assert stored.text == "".join(d.text for d in deltas)
    assert chat.manager.get(chat.sid).status == "idle"


async def test_reply_after_a_cancel_sends_the_partial_text(chat):
    deltas, started = _start_streaming(chat, words=200)
    events = chat.engine.send(chat.sid, "talk")
    async for event in events:
        if isinstance(event, ReplyDelta):
            deltas.append(event)
            if len(deltas) == 3:
                break
    await events.aclose()
    chat.server.script(script.text("ok"))
    await run(chat.engine.send(chat.sid, "go on"))
    sent = chat.server.last["messages"]
    assert sent[-2] == {"role": "assistant", "content": "".join(d.text for d in deltas)}


# -- flushing and secrets ------------------------------------------------------------------------


async def test_reply_is_in_the_database_while_it_streams(store, llm_server, fake_key, tmp_path):
    """What a killed process would leave: the text up to the last flush, marked incomplete."""
    chat = make_chat(store, llm_server)
    chat.engine.flush_interval = 0.02
    chat.server.script(script.text("token " * 100, delay=0.005))
    streamed = ""
    reader = Store(tmp_path / "test.db")  # a second connection, as another process would have
    events = chat.engine.send(chat.sid, "stream please")
    try:
        async for event in events:
            if isinstance(event, ReplyDelta):
                streamed += event.text
                if len(streamed) > 20 * len("token "):
                    rows = reader.query("SELECT content FROM messages WHERE role = 'assistant'")
                    break
    finally:
        await events.aclose()
        reader.close()
    partial = json.loads(rows[0][0])
    writer = partial["metadata"].pop("writer")  # whose stream it is, for other processes
    assert writer["pid"] == os.getpid()
    assert partial["metadata"] == {
        "model": "openai/test-model",
        "status": "streaming",
        "incomplete": True,
    }
    text = partial["parts"][0]["text"]
    assert text and streamed.startswith(text) and len(text) < len("token " * 100)


async def test_api_key_never_reaches_the_database(
    store, llm_server, fake_key, tmp_path, _isolated_home
):
    chat = make_chat(store, llm_server)
    chat.server.script(
        script.tool_calls(
            ("c1", "set_context", {"label": "memory", "content": "The user likes tea."})
        ),
        script.text("Saved."),
        script.error(401, f"Incorrect API key provided: {FAKE_OPENAI_KEY}", code="invalid_api_key"),
        script.broken_stream(f"echoing {FAKE_OPENAI_KEY[:6]}"),
    )
    await run(chat.engine.send(chat.sid, "remember tea"))
    failed = of(await run(chat.engine.send(chat.sid, "again")), TurnFailed)[0]
    assert FAKE_OPENAI_KEY not in failed.detail + failed.title + failed.hint
    await run(chat.engine.send(chat.sid, "third"))
    store.close()
    written = [p for root in (tmp_path, _isolated_home) for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "test.db" for p in written)
    for path in written:
        assert FAKE_OPENAI_KEY.encode() not in path.read_bytes(), path


async def test_closing_right_after_reply_started_marks_the_empty_reply_cancelled(chat):
    chat.server.script(script.text("never read", delay=0.01))
    events = chat.engine.send(chat.sid, "talk")
    async for event in events:
        if isinstance(event, ReplyStarted):
            reply_id = event.message.id
            break
    await events.aclose()
    stored = chat.session.get_message(reply_id)
    assert stored.metadata == {
        "model": "openai/test-model",
        "status": "cancelled",
        "incomplete": True,
    }


async def test_closing_after_the_reply_finished_does_not_mark_it_cancelled(chat):
    chat.server.script(
        script.tool_calls(("c1", "session_search", {"query": "x"})), script.text("second")
    )
    events = chat.engine.send(chat.sid, "talk")
    async for event in events:
        if isinstance(event, ReplyFinished):
            first = event.message
            break
    await events.aclose()
    assert chat.session.get_message(first.id).metadata["status"] == "tool_calls"
    assert chat.manager.get(chat.sid).status == "idle"
