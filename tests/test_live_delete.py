"""Deleting a chat that is replying stops its reply first (issue 10).

What arrived is kept, marked cancelled, and nothing is written to the chat once it
is deleted. The model is the scripted server on 127.0.0.1, streaming slowly.
"""

from __future__ import annotations

import asyncio

from chatui.tui.screens.chat_list import ChatListScreen
from store import SessionManager

from .app_helpers import make_app, wait_until
from .test_live_chats import LONG, SIZE, config, long_chat, ready, send, stored_reply

__all__ = ["config"]  # the fixture, shared with test_live_chats


def deleted_reply(store, session_id: str):
    manager = SessionManager(store)
    assert manager.get(session_id) is None  # deleted…
    assert manager.get(session_id, include_deleted=True) is not None  # …softly
    return manager.get_session(session_id).get_history()[-1]


async def open_row(pilot, session_id: str) -> ChatListScreen:
    await pilot.press("ctrl+s")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, ChatListScreen))
    screen = pilot.app.screen
    index = next(i for i, r in enumerate(screen.rows) if r and r.id == session_id)
    screen.query_one("DataTable").move_cursor(row=index)
    await pilot.pause()
    return screen


async def assert_nothing_more_is_written(store, session_id: str, reply) -> None:
    await asyncio.sleep(0.3)  # several chunks' worth at 0.05 s each
    again = deleted_reply(store, session_id)
    assert again.text == reply.text and again.metadata == reply.metadata


async def test_deleting_a_chat_replying_in_the_background_stops_it_first(store, config, llm_server):
    first = await long_chat(store, "alpha")
    second = await long_chat(store, "beta")
    llm_server.text(LONG, delay=0.05)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await app.main.pane.open_chat(first)
        await send(pilot, "Long one")
        await wait_until(pilot, lambda: len(app.workspace.live_text(first).get(
            stored_reply(store, first).id, "")) > 20)  # fmt: skip
        await app.main.pane.open_chat(second)  # alpha goes on in the background
        screen = await open_row(pilot, first)
        assert first in screen.live
        await pilot.press("d")
        await wait_until(pilot, lambda: SessionManager(app.store).get(first) is None)
        assert not app.workspace.replying(first)  # stopped before the delete
        assert first not in screen.live
        row = screen.rows[0]
        assert row is not None and row.id == second  # the list no longer shows it
        reply = deleted_reply(store, first)
        assert reply.role == "assistant" and reply.metadata["status"] == "cancelled"
        assert reply.metadata["incomplete"] and reply.text and LONG.startswith(reply.text)
        await assert_nothing_more_is_written(store, first, reply)
        await pilot.press("u")  # undo brings it back with its partial reply
        await pilot.pause()
        assert SessionManager(app.store).get(first) is not None
        assert stored_reply(store, first).metadata["status"] == "cancelled"


async def test_deleting_the_chat_on_screen_from_the_list_while_it_replies(
    store, config, llm_server
):
    first = await long_chat(store, "alpha")
    await long_chat(store, "beta")
    llm_server.text(LONG, delay=0.05)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await app.main.pane.open_chat(first)
        await send(pilot, "Long one")
        await wait_until(pilot, lambda: app.main.generating)
        await pilot.pause(0.3)
        await open_row(pilot, first)
        await pilot.press("d", "escape")
        await wait_until(pilot, lambda: app.main.session_id != first)
        assert not app.workspace.live_chats and not app.main.generating
        reply = deleted_reply(store, first)
        assert reply.metadata["status"] == "cancelled" and LONG.startswith(reply.text)
        await assert_nothing_more_is_written(store, first, reply)


async def test_deleting_from_the_palette_while_replying_keeps_what_arrived(
    store, config, llm_server
):
    first = await long_chat(store, "alpha")
    llm_server.text(LONG, delay=0.05)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await app.main.pane.open_chat(first)
        await send(pilot, "Long one")
        await wait_until(pilot, lambda: app.main.generating)
        await pilot.pause(0.3)
        await app.main.commands.delete_chat()
        await pilot.pause()
        assert app.main.session_id != first and not app.workspace.live_chats
        reply = deleted_reply(store, first)
        assert reply.metadata["status"] == "cancelled" and reply.text
        await assert_nothing_more_is_written(store, first, reply)


async def test_deleting_a_chat_that_is_not_replying_stops_nothing(store, config, llm_server):
    """Bad input for the delete path: an idle chat, another chat's reply goes on."""
    first = await long_chat(store, "alpha")
    second = await long_chat(store, "beta")
    llm_server.text(LONG, delay=0.05)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await app.main.pane.open_chat(first)
        await send(pilot, "Long one")
        await wait_until(pilot, lambda: app.main.generating)
        await open_row(pilot, second)
        await pilot.press("d")
        await wait_until(pilot, lambda: SessionManager(app.store).get(second) is None)
        assert app.workspace.replying(first)  # the replying chat was not touched
        assert not app.workspace.replying(second)
        await app.workspace.cancel_all()
