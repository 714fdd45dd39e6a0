"""Every state true (issue 10): empty replies are errors, tool rounds please strict
servers, the chat list marks replying chats, and a redraw reads each row once."""

from __future__ import annotations

import re

import pytest

from chatui.core.config import Config
from chatui.tui.screens.chat_list import ChatListScreen
from store import SessionManager
from tests import llm_server as script
from widgets import ChatNotice

from .app_helpers import make_app, populate, wait_until
from .test_live_chats import WORDS, ready, send

SIZE = (140, 40)


@pytest.fixture
def config(llm_server, fake_key):
    llm_server.strict = True  # what llama.cpp's templates refuse, refused
    return Config(model="openai/test-model", api_base=llm_server.base_url, max_retries=0)


def last_reply(app):
    return app.main.chat.session.get_history()[-1]


async def test_an_empty_stream_is_stored_as_an_error_and_r_retries(store, config, llm_server):
    llm_server.script(script.text(""))  # HTTP 200, a finish, and not one token
    llm_server.text("Here it is.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "A long prompt")
        await wait_until(pilot, lambda: not app.main.generating and app.main.chat is not None)
        await pilot.pause()
        reply = last_reply(app)
        assert reply.metadata["status"] == "error" and reply.metadata["incomplete"]
        assert reply.metadata["error_kind"] == "empty"
        notes = [n.plain for n in app.main.query(ChatNotice)]
        assert any("empty reply" in n and "tokens" in n for n in notes), notes
        assert "error" in app.main.chat_view.views[-1].header().plain
        await pilot.press("up", "ctrl+r")
        await wait_until(pilot, lambda: len(llm_server.requests) == 2 and not app.main.generating)
        await pilot.pause()
        assert last_reply(app).text == "Here it is."
        assert last_reply(app).metadata["status"] == "complete"


async def test_the_empty_error_names_the_window_when_it_is_known(store, llm_server, fake_key):
    from chatui.core.config import ModelOptions

    config = Config(
        model="openai/test-model",
        api_base=llm_server.base_url,
        max_retries=0,
        models={"openai/test-model": ModelOptions(context_window=300)},
    )
    llm_server.script(script.text(""))
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "word " * 400)
        await wait_until(pilot, lambda: not app.main.generating and app.main.chat is not None)
        await pilot.pause()
        notes = " ".join(n.plain for n in app.main.query(ChatNotice))
        assert "window of 300 (config)" in notes and "longer than the window" in notes


async def test_tool_rounds_send_content_so_strict_servers_keep_answering(store, config, llm_server):
    llm_server.tool_calls(
        ("set_context", {"label": "memory", "action": "append", "content": "Sam."})
    )
    llm_server.text("Noted.")
    llm_server.text("Still here.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "Remember Sam")
        await wait_until(pilot, lambda: len(llm_server.requests) == 2 and not app.main.generating)
        await send(pilot, "And now?")
        await wait_until(pilot, lambda: len(llm_server.requests) == 3 and not app.main.generating)
        await pilot.pause()
        assert last_reply(app).text == "Still here."  # a strict server did not refuse it
        calls = [m for m in llm_server.messages(-1) if m.get("tool_calls")]
        assert calls and all(m["content"] == "" for m in calls)


def test_strict_server_refuses_what_llama_cpp_refuses():
    from tests.llm_server import strict_problem

    ok = {"messages": [{"role": "user", "content": "hi"}]}
    assert strict_problem(ok) is None
    no_content = {"messages": [{"role": "assistant", "tool_calls": []}]}
    assert "content" in strict_problem(no_content)
    null = {"messages": [{"role": "assistant", "content": None, "tool_calls": []}]}
    assert strict_problem(null) is not None
    assert strict_problem({"messages": [{"role": "tool", "content": "x"}]}) is not None
    assert strict_problem({"messages": []}) is not None
    assert strict_problem({"messages": [{"role": "wizard", "content": "x"}]}) is not None


async def test_the_chat_list_marks_chats_that_are_replying(store, config, llm_server):
    llm_server.text(WORDS, delay=0.05)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "Go")
        await wait_until(pilot, lambda: app.main.generating)
        replying = app.main.session_id
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ChatListScreen))
        screen = app.screen
        assert screen.live == {replying}
        index = next(i for i, r in enumerate(screen.rows) if r and r.id == replying)
        row = screen.query_one("DataTable").get_row_at(index)
        assert "writing…" in [str(c) for c in row]
        await pilot.press("escape")
        await app.workspace.cancel_all()


async def test_a_redraw_reads_each_row_once(store, llm_server, fake_key):
    """A branched chat's redraw: the session row once, the tree once (issue 15)."""
    ids = await populate_async(store)
    config = Config(model="demo")
    app = make_app(store, config, warm_llm=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await app.main.pane.open_chat(ids["lisbon"])
        await pilot.pause()
        statements: list[str] = []
        connection = store.connection()
        connection.set_trace_callback(statements.append)
        try:
            await app.main.pane.redraw()
        finally:
            connection.set_trace_callback(None)
        # Quotes and aliases differ between hand-written SQL and the query builder's.
        plain = [" ".join(s.replace('"', "").split()) for s in statements]
        session_reads = [
            s
            for s in plain
            if re.search(r"FROM sessions\b", s) and re.search(r"WHERE\W+(\w+\.)?id = ", s)
        ]
        # The rows' text is read once; the branch's memory walks the path's ids only
        # (seq, id, parent_id: `walk_path(full=False)`).
        tree_reads = [s for s in plain if re.search(r"^SELECT .*\bcontent\b.* FROM messages\b", s)]
        id_walks = [s for s in plain if re.search(r"^SELECT \S+seq, \S+id, \S+parent_id FROM", s)]
        assert len(id_walks) <= 1, id_walks
        assert len(session_reads) == 1, session_reads
        assert len(tree_reads) == 1, tree_reads


async def populate_async(store):
    import asyncio

    return await asyncio.to_thread(populate, store)


def test_populated_chat_is_branched(store):
    ids = populate(store)
    tree = SessionManager(store).get_session(ids["lisbon"]).get_tree()
    assert len([m for m in tree if m.parent_id == "q1"]) == 2
