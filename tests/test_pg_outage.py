"""PostgreSQL stopped mid-reply, and started again (issue 25, item 2).

The server is the test's own (`pg_cluster`: initdb and pg_ctl from the machine's
PostgreSQL), so stopping it disturbs no other test. What the user must see: the app
stays up and says the database is unreachable; the reply streams on into memory and
is written, whole and final, when the server is back; nothing typed is lost, and a
message sent meanwhile is refused with the text left in the input.
"""

from __future__ import annotations

import asyncio
import time

import peewee
import pytest

from chatui.core.config import Config
from chatui.tui.screens.chat_list import ChatListScreen
from chatui.tui.screens.dialogs import Confirm
from store import DatabaseUnavailableError, SessionManager, Store, StoreSessionProvider
from widgets import ChatNotice, MessageView

from .app_helpers import make_app, notices, wait_until
from .test_app_chat import SIZE, idle, type_and_send
from .test_engine import make_chat, run

OUTAGE_SECONDS = 10.0
"""How long the server stays down mid-reply (what the issue asks for)."""
WORDS = " ".join(f"w{i}" for i in range(150))


def config_for(llm_server) -> Config:
    return Config(model="openai/test-model", api_base=llm_server.base_url, max_retries=0)


def stored(url: str, session_id: str) -> list:
    """The chat's messages as a connection of the test's own reads them ([] while down)."""
    try:
        with Store(url) as reader:
            return StoreSessionProvider(reader, session_id).get_tree()
    except Exception:  # the server is down
        return []


def replies(url: str, session_id: str) -> list:
    return [m for m in stored(url, session_id) if m.role == "assistant"]


def notes(app) -> list[str]:
    return [n.plain for n in app.main.query(ChatNotice)]


def live(app) -> str:
    return " ".join(app.main.pane.live_text().values())


async def test_a_ten_second_outage_mid_reply_keeps_the_reply_and_the_typed_text(
    pg_cluster, llm_server, fake_key
):
    llm_server.text(WORDS, delay=0.02)  # ~3 s of words: it ends while the server is down
    store = Store(pg_cluster.url)
    looks: list[float] = []
    answers = store.answers

    def look() -> bool:  # how often the app asks whether the server is back
        looks.append(time.monotonic())
        return answers()

    store.answers = look  # type: ignore[method-assign]
    app = make_app(store, config_for(llm_server))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await type_and_send(pilot, "tell me a long story")
            await wait_until(pilot, lambda: app.main.session_id is not None)
            sid = app.main.session_id
            await wait_until(
                pilot, lambda: any(m.text.startswith("w0 w1") for m in replies(pg_cluster.url, sid))
            )
            pg_cluster.stop()
            back_at = time.monotonic() + OUTAGE_SECONDS
            await wait_until(pilot, lambda: any("unreachable" in n for n in notes(app)))
            # The reply streams on, into memory: its last word is on screen.
            await wait_until(pilot, lambda: "w149" in live(app))
            # What is typed stays typed (enter: the chat is still replying).
            await type_and_send(pilot, "are you there?")
            await pilot.pause()
            assert app.main.pane.chat_input.text == "are you there?"
            # The chat list cannot be read: it says so, and the app stays up.
            await pilot.press("ctrl+s")
            await wait_until(pilot, lambda: isinstance(app.screen, ChatListScreen))
            status = str(app.screen.query_one("#chats-status").render())
            assert "does not answer" in status
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is app.main)
            # Quitting now would lose the reply: the question says so (no: stay).
            await pilot.press("ctrl+q")
            await wait_until(pilot, lambda: isinstance(app.screen, Confirm))
            assert "does not answer" in app.screen.question
            await pilot.press("n")
            await wait_until(pilot, lambda: app.screen is app.main)
            await wait_until(pilot, lambda: time.monotonic() >= back_at, OUTAGE_SECONDS + 5)
            assert app.is_running and app.main.generating  # waiting to write the reply
            # A look on a doubling delay (0.25 s up to 2 s), not a busy loop: ~8 in 10 s.
            assert 3 <= len(looks) <= 15, len(looks)
            pg_cluster.start()
            await wait_until(
                pilot, lambda: [m.text for m in replies(pg_cluster.url, sid)] == [WORDS], 30
            )
            await idle(pilot)
            [reply] = replies(pg_cluster.url, sid)
            assert reply.metadata["status"] == "complete"
            assert not reply.metadata.get("incomplete")
            assert any("answers again" in n for n in notes(app))
            assert app.main.pane.chat_input.text == "are you there?"
            # Connected again: the kept text is sent and answered.
            llm_server.text("Back again.")
            await pilot.press("enter")
            await idle(pilot)
            assert [m.text for m in stored(pg_cluster.url, sid)][-2:] == [
                "are you there?",
                "Back again.",
            ]
    finally:
        store.close()


async def test_a_message_sent_while_the_server_is_down_stays_in_the_input(
    pg_cluster, llm_server, fake_key
):
    llm_server.text("Hello.")
    store = Store(pg_cluster.url)
    app = make_app(store, config_for(llm_server))
    try:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await pilot.pause()
            await type_and_send(pilot, "hi")
            await idle(pilot)
            sid = app.main.session_id
            pg_cluster.stop()
            await type_and_send(pilot, "hello again")
            await wait_until(pilot, lambda: any("Nothing was sent" in n for n in notes(app)))
            [note] = [n for n in notes(app) if "Nothing was sent" in n]
            assert "PostgreSQL" in note and "try again when the server answers" in note
            await idle(pilot)
            assert app.main.pane.chat_input.text == "hello again"
            # Every key that reads leaves the screen as it was: the chat, its messages
            # and what is typed (a new chat, the sidebar, search, the model, the list).
            shown = [v.text for v in app.main.query(MessageView)]
            for key in ("ctrl+n", "ctrl+b", "ctrl+b", "ctrl+f", "escape", "ctrl+l", "escape"):
                await pilot.press(key)
                await pilot.pause()
            await wait_until(pilot, lambda: app.screen is app.main)
            assert app.is_running and app.main.session_id == sid
            assert [v.text for v in app.main.query(MessageView)] == shown
            assert app.main.pane.chat_input.text == "hello again"
            assert "Database unreachable" in notices(app)
            pg_cluster.start()
            llm_server.text("Welcome back.")
            await pilot.press("enter")
            await idle(pilot)
            assert [m.text for m in stored(pg_cluster.url, sid)] == [
                "hi",
                "Hello.",
                "hello again",
                "Welcome back.",
            ]
            assert app.main.pane.chat_input.text == ""
    finally:
        store.close()


def test_the_store_tells_a_server_away_from_other_failures(pg_cluster):
    with Store(pg_cluster.url) as store:
        manager = SessionManager(store)
        chat = manager.create("kept")
        assert store.answers()
        pg_cluster.stop()
        assert not store.answers()
        with pytest.raises(Exception) as failed:  # the connection the server ended
            manager.get(chat.id)
        assert store.unreachable(failed.value)
        with pytest.raises(DatabaseUnavailableError) as refused:  # no server to connect to
            manager.get(chat.id)
        assert store.unreachable(refused.value)
        assert "127.0.0.1" in store.failure_advice(refused.value)
        pg_cluster.start()
        assert store.answers()
        assert manager.get(chat.id).name == "kept"  # the same store reads again


async def test_a_write_that_fails_with_the_server_answering_ends_the_turn(
    pg_url, llm_server, fake_key, monkeypatch
):
    """A fault that reads as "connection lost" while the server answers every look is
    not waited for (the turn would never end): after a few tries it fails the turn
    with the storage error, as any other failed write."""
    llm_server.text("Some words.")
    with Store(pg_url) as store:
        chat = make_chat(store, llm_server)

        def lost(self, message, final=True):
            raise peewee.InterfaceError("the connection is lost")

        monkeypatch.setattr(StoreSessionProvider, "update_message", lost)
        with pytest.raises(peewee.InterfaceError):
            await asyncio.wait_for(run(chat.engine.send(chat.sid, "hello")), 120)
