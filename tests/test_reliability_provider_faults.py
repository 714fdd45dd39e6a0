"""Provider faults at the app level: each ends with a readable note in the chat pane, the
user's message kept, and an app that answers the next message.

The engine's handling of each fault is tested in test_engine_faults.py; here the whole
path runs — keys pressed through Pilot, the real LiteLLM client, the scripted server on
127.0.0.1 — and the assertions are about what the user sees and can do next.
"""

from __future__ import annotations

import asyncio
import socket
import time
from dataclasses import replace

import pytest

from chatui.core.config import Config, ModelOptions
from store import SessionManager
from tests import llm_server as script
from widgets import ChatInput, ChatNotice, MessageView

from .app_helpers import make_app
from .conftest import FAKE_OPENAI_KEY
from .test_app_chat import SIZE, chat_path, idle, type_and_send

MAX_RETRIES = 2
SUMMARY = "## Topic\nEarlier talk\n## Key Points\n- q\n## Current State\nok\n## Open Items\n-"


@pytest.fixture
def config(llm_server, fake_key):
    # Generous: a loaded machine must not turn other faults into timeouts.
    return Config(
        model="openai/test-model",
        api_base=llm_server.base_url,
        max_retries=MAX_RETRIES,
        request_timeout=20.0,
    )


def notes(app, level: str | None = None) -> list[ChatNotice]:
    return [n for n in app.main.query(ChatNotice) if level is None or n.level == level]


def assert_readable(note: ChatNotice, *words: str) -> None:
    """A title line a person understands, then what to do; no traces, no secrets."""
    title, _, rest = note.plain.partition("\n")
    assert title.strip() and rest.strip(), note.plain
    for word in words:
        assert word.lower() in note.plain.lower(), (word, note.plain)
    assert "Traceback" not in note.plain and FAKE_OPENAI_KEY not in note.plain
    hint = rest.strip().splitlines()[-1]
    for line in (title, hint):  # the provider's own words may sit between them, as sent
        for junk in ("litellm.", "Exception", "Error:", "<class", "{"):
            assert junk not in line, (junk, note.plain)


async def still_answers(pilot, server) -> None:
    """The app is responsive: the next message is sent, stored and answered."""
    server.script(script.text("Recovered."))
    await type_and_send(pilot, "Again")
    await idle(pilot)
    history = chat_path(pilot.app)
    assert [m.text for m in history[-2:]] == ["Again", "Recovered."]
    assert pilot.app.main.query_one(ChatInput).text == ""


# -- one fault, one failed turn -----------------------------------------------------------

FAULTS = {
    "401": (
        [
            script.error(
                401, "Incorrect API key provided: " + FAKE_OPENAI_KEY, code="invalid_api_key"
            )
        ],
        ["API key", "rejected"],
        "",
    ),
    "403": ([script.error(403, "Project does not have access to model")], ["may not use"], ""),
    "404-model": (
        [script.error(404, "The model `test-model` does not exist", code="model_not_found")],
        ["does not know the model"],
        "",
    ),
    "429-exhausted": (
        [
            script.error(
                429, "Rate limit reached", type="rate_limit_error", headers={"Retry-After": "0.05"}
            )
        ]
        * (MAX_RETRIES + 1),
        ["rate-limiting", "wait"],
        "",
    ),
    "500": (
        [script.error(500, "The server had an error", type="server_error")],
        ["server error"],
        "",
    ),
    "stream-cut-mid-token": (
        [script.broken_stream("The first half of")],
        ["broke mid-reply", "partial reply is kept"],
        "The first half of",
    ),
    "malformed-chunks": (
        [script.malformed("{nope", "[1, 2", text_before="Starting")],
        ["could not read"],
        "Starting",
    ),
    "timeout-before-any-text": ([script.hang(8)], ["did not answer in time"], ""),
    "timeout-mid-stream": (
        [script.hang(8, text_before="So far")],
        ["stopped answering", "partial reply is kept"],
        "So far",
    ),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_fault_is_explained_and_the_app_keeps_going(store, config, llm_server, fault):
    replies, words, partial = FAULTS[fault]
    llm_server.script(*replies)
    if fault.startswith("timeout"):
        config = replace(config, request_timeout=2.5)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Hello?")
        await idle(pilot)
        errors = notes(app, "error")
        assert len(errors) == 1, [n.plain for n in notes(app)]
        assert_readable(errors[0], *words)
        user, reply = chat_path(app)
        assert (user.role, user.text) == ("user", "Hello?")  # stored before the call
        assert reply.parent_id == user.id
        assert reply.metadata["status"] == "error" and reply.metadata["incomplete"] is True
        assert reply.text == partial
        view = app.main.chat_view.view_for(reply.id)
        assert "error" in view.header().plain  # the reply itself says it failed
        if fault == "429-exhausted":
            assert len(llm_server.requests) == MAX_RETRIES + 1  # retried, and bounded
            assert len(notes(app, "warning")) == MAX_RETRIES
        else:
            assert len(llm_server.requests) == 1  # other faults are not retried blindly
        await still_answers(pilot, llm_server)
        assert len(notes(app, "error")) == 1  # the recovery added no new error


# -- 429: retried after Retry-After, then the reply streams --------------------------------


async def test_429_waits_as_asked_then_answers(store, config, llm_server):
    llm_server.script(
        script.error(429, "slow down", headers={"Retry-After": "0.4"}),
        script.text("After the wait."),
    )
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Hello?")
        await idle(pilot)
        warnings = notes(app, "warning")
        assert len(warnings) == 1 and "retry 1 of 2" in warnings[0].plain
        assert "0.4s" in warnings[0].plain
        assert notes(app, "error") == []
        assert chat_path(app)[-1].text == "After the wait."
        first, second = llm_server.request_times
        assert second - first >= 0.4
        # one reply, retried in place: no empty failed sibling left behind
        assert len(app.main.chat.session.get_tree()) == 2


async def test_429_asking_for_too_long_a_wait_fails_at_once(store, config, llm_server):
    llm_server.script(script.error(429, "quota", headers={"Retry-After": "3600"}))
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        started = time.monotonic()
        await type_and_send(pilot, "Hello?")
        await idle(pilot)
        assert time.monotonic() - started < 10
        assert len(llm_server.requests) == 1
        assert_readable(notes(app, "error")[0], "rate-limiting", "3600s")
        await still_answers(pilot, llm_server)


# -- connection refused: the user picks a working model and carries on ------------------------


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_connection_refused_then_switch_model(store, llm_server, fake_key):
    port = closed_port()
    config = Config(
        model="openai/test-model",
        api_base=llm_server.base_url,
        models={"openai/offline": ModelOptions(api_base=f"http://127.0.0.1:{port}/v1")},
    )
    app = make_app(store, config, model="openai/offline")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Hello?")
        await idle(pilot)
        assert_readable(notes(app, "error")[0], "cannot reach", str(port))
        assert llm_server.requests == []
        await pilot.press("ctrl+l")
        await pilot.pause()
        await pilot.press(*"openai/test-model", "enter")
        await pilot.pause()
        assert app.main.pane.model == "openai/test-model"
        await still_answers(pilot, llm_server)
        assert llm_server.last["messages"][-1] == {"role": "user", "content": "Again"}


# -- context length: compact once and retry, as a user would want ------------------------------


def long_chat(store) -> str:
    manager = SessionManager(store)
    info = manager.create("Long chat", model="openai/test-model")
    messages = []
    for i in range(6):
        messages.append(
            {
                "id": f"q{i}",
                "role": "user",
                "parts": [{"type": "text", "text": f"question {i} " * 20}],
            }
        )
        messages.append(
            {
                "id": f"a{i}",
                "role": "assistant",
                "parts": [{"type": "text", "text": f"answer {i} " * 20}],
            }
        )
    asyncio.run(manager.append_all(info.id, messages))
    return info.id


async def test_context_length_compacts_and_retries_once(store, config, llm_server):
    sid = await asyncio.to_thread(long_chat, store)
    llm_server.script(
        script.context_length_error(), script.json_reply(SUMMARY), script.text("Now it fits.")
    )
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.main.session_id == sid
        await type_and_send(pilot, "One more")
        await idle(pilot)
        assert notes(app, "error") == []
        history = chat_path(app)
        assert history[-1].text == "Now it fits." and history[-2].text == "One more"
        assert any(m.is_compaction for m in history)
        # What tells the user: the summary, on screen, saying what it stands for.
        # (The "compacting it and trying again" notice is drawn, then wiped by the redraw
        # that shows the summary — reported, not asserted.)
        headers = [v.header().plain for v in app.main.query(MessageView)]
        assert any(h.startswith("Summary of") for h in headers), headers
        assert app.main.chat_view.views[-1].text == "Now it fits."  # streamed into view
        assert SessionManager(app.store).get_message_count(sid) == 14  # every original kept
        assert len(llm_server.requests) == 3
        await still_answers(pilot, llm_server)


async def test_context_length_twice_fails_readably_after_one_compaction(store, config, llm_server):
    sid = await asyncio.to_thread(long_chat, store)
    llm_server.script(
        script.context_length_error(), script.json_reply(SUMMARY), script.context_length_error()
    )
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "One more")
        await idle(pilot)
        assert_readable(notes(app, "error")[0], "too long")
        assert len(app.main.chat.session.get_compactions()) == 1
        assert len(llm_server.requests) == 3  # no second compaction, no third try
        assert SessionManager(app.store).get_message_count(sid) == 14
        await still_answers(pilot, llm_server)
