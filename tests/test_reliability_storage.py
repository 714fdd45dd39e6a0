"""A database that refuses writes (read-only, disk full): a clear error in the chat pane,
the typed message still in the input box, nothing half-written, and enter works again
once the disk is fixed.

Faults are injected at the storage boundary, not in the LLM: SQLite's own
`PRAGMA query_only` makes the app's connection read-only (chmod cannot, as tests may
run as root), and "disk full" is sqlite3's SQLITE_FULL error raised by the statements
that write. The model is the scripted server, reached through the real LiteLLM client.
"""

from __future__ import annotations

import sqlite3

import pytest

from chatui.core.config import Config
from store import SessionManager, Store
from tests import llm_server as script
from widgets import ChatInput, ChatNotice

from .app_helpers import make_app
from .test_app_chat import SIZE, chat_path, idle, type_and_send

TYPED = "My long and careful message"


@pytest.fixture
def config(llm_server, fake_key):
    return Config(model="openai/test-model", api_base=llm_server.base_url, max_retries=0)


def counts(store: Store) -> tuple[int, int]:
    return (
        store.query("SELECT count(*) FROM sessions")[0][0],
        store.query("SELECT count(*) FROM messages")[0][0],
    )


def read_only(store: Store, on: bool) -> None:
    store.execute(f"PRAGMA query_only = {int(on)}")


class DiskFull:
    """Makes every write statement fail as SQLite does when the disk is full."""

    def __init__(self, monkeypatch, store: Store, *, only: str = "") -> None:
        self.on = True
        real = Store.execute
        real_sql = store.db.execute_sql

        def refuse(sql: str) -> None:
            statement = " ".join(sql.split())
            if (
                self.on
                and statement.startswith(only)
                and statement.split(None, 1)[0].upper() in ("INSERT", "UPDATE", "DELETE")
            ):
                raise sqlite3.OperationalError("database or disk is full")

        def execute(this, sql, params=()):
            if this is store:
                refuse(sql)
            return real(this, sql, params)

        def execute_sql(sql, params=None, *args, **kwargs):  # the query builder's way in
            refuse(sql)
            return real_sql(sql, params, *args, **kwargs)

        engine = store.engine
        real_append = engine.append_in_one

        def append_in_one(row, body, touched_at):  # SQLite's append runs on the connection
            refuse("INSERT INTO messages")
            return real_append(row, body, touched_at)

        monkeypatch.setattr(Store, "execute", execute)
        monkeypatch.setattr(store.db, "execute_sql", execute_sql)
        monkeypatch.setattr(engine, "append_in_one", append_in_one)


def error_notes(app) -> list[str]:
    return [n.plain for n in app.main.query(ChatNotice) if n.level == "error"]


async def retry_works(pilot, server, before: tuple[int, int]) -> None:
    """The fault gone, enter sends the kept text: stored once, answered."""
    server.script(script.text("Got it."))
    await pilot.press("enter")
    await idle(pilot)
    assert [m.text for m in chat_path(pilot.app)[-2:]] == [TYPED, "Got it."]
    assert pilot.app.main.query_one(ChatInput).text == ""
    assert counts(pilot.app.store)[1] == before[1] + 2


@pytest.fixture
def existing_chat(store) -> str:
    import asyncio

    manager = SessionManager(store)
    info = manager.create("Existing", model="openai/test-model")
    asyncio.run(
        manager.append_all(
            info.id,
            [
                {
                    "id": "q",
                    "role": "user",
                    "parts": [{"type": "text", "text": "Earlier question"}],
                },
                {
                    "id": "a",
                    "role": "assistant",
                    "parts": [{"type": "text", "text": "Earlier answer"}],
                },
            ],
        )
    )
    return info.id


@pytest.mark.parametrize("where", ["new chat", "existing chat"])
async def test_read_only_database(store, config, llm_server, existing_chat, where):
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        if where == "new chat":
            await pilot.press("ctrl+n")
            await pilot.pause()
        before = counts(store)
        read_only(store, True)
        await type_and_send(pilot, TYPED)
        await idle(pilot)
        errors = error_notes(app)
        assert len(errors) == 1, errors
        assert "could not" in errors[0].lower() and "readonly" in errors[0].lower()
        assert "Traceback" not in errors[0]
        assert app.main.query_one(ChatInput).text == TYPED  # kept for a retry
        read_only(store, False)
        assert counts(store) == before  # nothing half-written: no chat, no message
        assert llm_server.requests == []  # nothing sent without it being saved first
        await retry_works(pilot, llm_server, before)


@pytest.mark.parametrize("where", ["new chat", "existing chat"])
async def test_disk_full_before_the_message_is_saved(
    store, config, llm_server, existing_chat, monkeypatch, where
):
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        if where == "new chat":
            await pilot.press("ctrl+n")
            await pilot.pause()
        before = counts(store)
        full = DiskFull(monkeypatch, store)
        await type_and_send(pilot, TYPED)
        await idle(pilot)
        errors = error_notes(app)
        assert len(errors) == 1, errors
        assert "disk is full" in errors[0] and "could not" in errors[0].lower()
        assert app.main.query_one(ChatInput).text == TYPED
        full.on = False
        assert counts(store) == before
        assert llm_server.requests == []
        await retry_works(pilot, llm_server, before)


async def test_disk_full_while_the_reply_streams(
    store, config, llm_server, existing_chat, monkeypatch
):
    """The user's message and the empty reply are saved; then rewriting the reply fails."""
    llm_server.script(script.text("word " * 200, delay=0.005))
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        before = counts(store)
        full = DiskFull(
            monkeypatch, store, only='UPDATE "messages" SET'
        )  # as the query builder writes it
        await type_and_send(pilot, TYPED)
        await idle(pilot)
        errors = error_notes(app)
        assert len(errors) == 1, [n.plain for n in app.main.query(ChatNotice)]
        assert "disk is full" in errors[0] and "Your message is saved" in errors[0]
        full.on = False
        with Store(store.path) as reader:  # what another process would find
            assert reader.integrity_check() == []
        user, reply = chat_path(app)[-2:]
        assert user.text == TYPED and reply.parent_id == user.id
        assert reply.metadata["incomplete"] is True  # never passed off as a whole reply
        assert counts(store)[1] == before[1] + 2
        # the app answers the next message
        llm_server.script(script.text("Back."))
        await type_and_send(pilot, "Still there?")
        await idle(pilot)
        assert chat_path(app)[-1].text == "Back."
