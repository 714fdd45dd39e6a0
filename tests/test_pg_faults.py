"""PostgreSQL going away under the app: a restart mid-reply, concurrent writers, secrets.

"Restarted" is done the way a restart looks to a client: the server ends the
app's backends (`pg_terminate_backend`), so every open connection is dead
and the next statement on it fails. Only this test's connections are ended
(other tests may share the server).
"""

from __future__ import annotations

import time

import psycopg
import pytest

from chatui.core.config import Config
from chatui.core.ui_state import load_state
from store import SessionManager, Store, StoreSessionProvider
from widgets import ChatNotice

from .app_helpers import make_app, wait_until
from .pg_helpers import SERVER
from .test_app_chat import SIZE, chat_path, idle, type_and_send
from .test_shared_database import appenders_race

WORDS = " ".join(f"w{i}" for i in range(300))


@pytest.fixture
def config(llm_server, fake_key):
    return Config(model="openai/test-model", api_base=llm_server.base_url, max_retries=0)


def backends_of(store: Store) -> list[int]:
    """The server processes serving this store on this thread (and its change listener)."""
    return [int(store.query("SELECT pg_backend_pid()")[0][0])]


def terminate(pids: list[int]) -> None:
    with psycopg.connect(SERVER, autocommit=True) as admin:
        for pid in pids:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


def stored_reply(location: str, session_id: str):
    with Store(location) as reader:
        tree = StoreSessionProvider(reader, session_id).get_tree()
    return [m for m in tree if m.role == "assistant"]


async def test_the_server_restarting_mid_reply_loses_nothing(pg_url, config, llm_server):
    llm_server.text(WORDS, delay=0.01)
    store = Store(pg_url)
    app = make_app(store, config)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await type_and_send(pilot, "tell me a long story")
            # wait until part of the reply is in the database
            await wait_until(
                pilot,
                lambda: (
                    app.main.session_id is not None
                    and any(
                        m.text.startswith("w0 w1")
                        for m in stored_reply(pg_url, app.main.session_id)
                    )
                ),
            )
            sid = app.main.session_id
            watcher = app.workspace._watcher
            listener = watcher._feed._listener if watcher else None
            pids = backends_of(store) + ([listener.info.backend_pid] if listener else [])
            terminate(pids)
            await idle(pilot)
            [reply] = stored_reply(pg_url, sid)
            user = [m for m in chat_path(app) if m.role == "user"]
            assert [m.text for m in user] == ["tell me a long story"]
            # kept as far as it was flushed, and either finished after reconnecting or
            # marked as not whole
            assert reply.text and WORDS.startswith(reply.text.strip())
            assert reply.text.strip() == WORDS or reply.metadata.get("incomplete") is True
            # the app is connected again: the next message is stored and answered
            llm_server.text("Back again.")
            await type_and_send(pilot, "still there?")
            await idle(pilot)
            assert [m.text for m in chat_path(app)[-2:]] == ["still there?", "Back again."]
            assert backends_of(store)[0] not in pids
    finally:
        store.close()
    with Store(pg_url) as reader:
        assert reader.integrity_check() == []


async def test_a_connection_lost_inside_a_flush_is_written_again_when_it_is_back(
    pg_url, config, llm_server, monkeypatch
):
    """The server ends the connection while a flush's transaction is open: that
    write is lost with the transaction, the reply stays in memory and the app says
    the database was unreachable; the next write (a new connection) stores the
    whole reply, and the next message works."""
    llm_server.text(WORDS, delay=0.01)
    store = Store(pg_url)
    real = Store.execute
    state = {"flushes": 0, "killed": False}

    def execute(this, sql, params=()):
        if this is store and sql.startswith('UPDATE "messages" SET') and not state["killed"]:
            state["flushes"] += 1
            if state["flushes"] == 3:  # two flushes stored, then the server goes away
                state["killed"] = True
                terminate(backends_of(store))
                time.sleep(0.05)
        return real(this, sql, params)

    monkeypatch.setattr(Store, "execute", execute)
    app = make_app(store, config)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await type_and_send(pilot, "tell me a long story")
            await idle(pilot)
            assert state["killed"]
            sid = app.main.session_id
            [reply] = stored_reply(pg_url, sid)
            assert reply.text == WORDS
            assert reply.metadata["status"] == "complete"
            notes = [n.plain for n in app.main.query(ChatNotice)]
            [down] = [n for n in notes if "unreachable" in n]
            assert "postgresql://" in down and "free disk space" not in down
            assert any("answers again" in n for n in notes)
            assert not any("Could not save" in n for n in notes)
            llm_server.text("Back again.")
            await type_and_send(pilot, "still there?")
            await idle(pilot)
            assert [m.text for m in chat_path(app)[-2:]] == ["still there?", "Back again."]
    finally:
        store.close()


async def test_an_idle_connection_killed_by_the_server_is_replaced_silently(pg_url):
    with Store(pg_url) as store:
        manager = SessionManager(store)
        chat = manager.create("quiet")
        terminate(backends_of(store))
        time.sleep(0.1)
        await manager.append(
            chat.id, {"id": "a", "role": "user", "parts": [{"type": "text", "text": "x"}]}
        )
        assert [m.id for m in manager.get_session(chat.id).get_tree()] == ["a"]
        terminate(backends_of(store))
        time.sleep(0.1)
        assert manager.get(chat.id).name == "quiet"  # a read reconnects too


def test_two_processes_append_to_one_postgresql_chat(pg_url):
    appenders_race(pg_url)


async def test_a_password_in_the_url_never_reaches_log_state_or_database(
    tmp_path, pg_url, config, llm_server, monkeypatch
):
    # Trust auth ignores the password, so a URL carrying one still connects.
    url = pg_url.replace("postgresql://postgres@", "postgresql://postgres:hunter2-secret@")
    home = tmp_path / "home"
    monkeypatch.setenv("CHATUI_HOME", str(home))
    from chatui.core import paths
    from chatui.core.logs import setup_logging

    log = setup_logging(home / "chatui.log")
    llm_server.text("Noted.")
    store = Store(url)
    assert "hunter2" not in store.path and "***" in store.path
    state = home / "state.json"
    app = make_app(store, config, state_path=state)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await type_and_send(pilot, "hello")
            await idle(pilot)
            import logging

            logging.getLogger("chatui.test").warning("opened %s", url)
            terminate(backends_of(store))  # an error path that names the database
            await pilot.pause(0.5)
    finally:
        store.close()
    assert load_state(state) is not None
    files = [p for p in home.rglob("*") if p.is_file()]
    assert log in files
    assert [p for p in files if b"hunter2" in p.read_bytes()] == []
    with Store(url) as reader:
        dump = repr([SessionManager(reader).list(), reader.query("SELECT * FROM messages")])
    assert "hunter2" not in dump
    del paths
