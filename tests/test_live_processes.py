"""Two processes on one database: the app shows another process's writes.

The app runs here (Textual Pilot); the other process is a real one (a Python
child writing through the store API, as a second chatui would), so nothing is
shared but the database: one SQLite file, or one PostgreSQL database.
"""

from __future__ import annotations

import sys
import time

from chatui.core.ui_state import UiState
from store import SessionManager, Store, StoreSessionProvider

from .app_helpers import make_app, wait_until
from .other_process import WRITER, Writer


async def seen_within(pilot, condition, since: float, limit: float = 15.0) -> None:
    """Until the app shows it; fails if it never does. How soon is measured, not
    asserted (`bench/live_bench.py 4`): a loaded machine made a one-second limit fail."""
    while time.monotonic() - since < limit:
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"not shown {limit} s after the other process wrote it")


async def app_sees_other_process(location: str) -> None:
    with Store(location) as store:
        manager = SessionManager(store)
        chat = manager.create("Shared chat", model="demo")
        StoreSessionProvider(store, chat.id).append_message(
            {"id": "first", "role": "user", "parts": [{"type": "text", "text": "hello"}]}, None
        )
    store = Store(location)
    app = make_app(store, ui_state=UiState(last_session_id=chat.id, show_sidebar=True))
    writer = await Writer.start(location, chat.id)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            main = app.main
            await seen_within(
                pilot, lambda: "first" in main.chat_view.shown_ids, time.monotonic(), 30
            )
            await pilot.pause(0.5)  # the watcher has taken its first reading

            done = await writer.do("message m-afar")
            await seen_within(pilot, lambda: "m-afar" in main.chat_view.shown_ids, done)
            assert main.chat is not None and main.chat.snapshot().active_leaf == "m-afar"

            done = await writer.do("memory The user moved to Porto")
            await seen_within(
                pilot,
                lambda: any("Porto" in b.content for b in main.sidebar.blocks),
                done,
            )

            await pilot.press("ctrl+s")  # the chat list
            await pilot.pause(0.3)
            from chatui.tui.screens.chat_list import ChatListScreen

            assert isinstance(app.screen, ChatListScreen)
            chats = app.screen
            done = await writer.do("chat Made elsewhere")
            await seen_within(
                pilot,
                lambda: any(r is not None and r.name == "Made elsewhere" for r in chats.rows),
                done,
            )
    finally:
        await writer.close()
        store.close()


async def test_an_app_sees_another_process_on_one_sqlite_file(tmp_path):
    await app_sees_other_process(str(tmp_path / "shared.db"))


def test_the_writer_runs_standalone(tmp_path):
    """The child script itself works (a failure there would look like a slow app)."""
    import subprocess

    path = tmp_path / "w.db"
    with Store(path) as store:
        chat = SessionManager(store).create("x")
    out = subprocess.run(
        [sys.executable, "-c", WRITER, str(path), chat.id],
        input="message one\nchat two\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.split() == ["done", "done"], out.stderr
    with Store(path) as store:
        assert [i.name for i in SessionManager(store).list()][:2] == ["two", "x"]


async def test_an_app_sees_another_process_on_one_postgresql_database(pg_url):
    await app_sees_other_process(pg_url)


async def test_a_reply_another_app_is_writing_shows_as_written_there(tmp_path):
    """Two apps on one database: B showed A's live reply as `interrupted`. Now it says
    the reply is being written in another window, follows its text, shows it complete
    when A finishes; a reply whose writer died is interrupted (seen without a write)."""
    location = str(tmp_path / "shared.db")
    with Store(location) as store:
        chat = SessionManager(store).create("Shared chat", model="demo")
        StoreSessionProvider(store, chat.id).append_message(
            {"id": "q1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}, None
        )
    store = Store(location)
    app = make_app(store, ui_state=UiState(last_session_id=chat.id))
    writer = await Writer.start(location, chat.id)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            views = app.main.chat_view

            def last() -> tuple[str, str]:
                """The last view's text and header; nothing while the chat is redrawn
                (its views are removed and mounted again between two checks)."""
                shown = views.views
                return (shown[-1].text, shown[-1].header().plain) if shown else ("", "")

            await wait_until(pilot, lambda: views.shown_ids == ["q1"])
            await pilot.pause(0.5)  # the watcher has taken its first reading
            await writer.do("reply q1")
            # Stored empty, then its first flush: the app may draw the first write alone.
            await wait_until(
                pilot,
                lambda: len(views.views) == 2 and views.views[-1].text == "Half of the answer",
            )
            reply = views.views[-1]
            assert "writing… in another window" in reply.header().plain
            assert "interrupted" not in reply.header().plain
            await writer.do("finish")
            await wait_until(pilot, lambda: last()[0].endswith("and the rest."))
            assert "writing" not in last()[1]

            await writer.do("message q2")
            await writer.do("reply q2")  # then its process dies mid-reply
            await wait_until(pilot, lambda: len(views.views) == 4)
            await wait_until(pilot, lambda: "in another window" in last()[1])
            writer.proc.kill()
            await writer.proc.wait()
            await wait_until(pilot, lambda: "interrupted" in last()[1])
            rows = app.main.tree
            await wait_until(
                pilot, lambda: any("interrupted" in rows.row_text(i) for i in range(len(rows.rows)))
            )
    finally:
        if writer.proc.returncode is None:
            await writer.close()
        store.close()


async def test_two_apps_sending_at_once_make_siblings_not_a_chain(tmp_path, monkeypatch):
    """Sending at the same moment from two apps chained A's question under B's (user →
    user). A send answers the leaf its app shows: both questions answer the same reply.
    The app here has not looked for the other's write yet (its poll is slowed, as when
    both press enter within the same few milliseconds)."""
    from chatui.core.config import Config
    from chatui.tui import app as app_module

    monkeypatch.setattr(app_module, "CHANGE_POLL_SECONDS", 60.0)
    location = str(tmp_path / "shared.db")
    with Store(location) as store:
        chat = SessionManager(store).create("Shared chat", model="demo")
        provider = StoreSessionProvider(store, chat.id)
        provider.append_message(
            {"id": "q1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}, None
        )
        provider.append_message(
            {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "hi"}]}, "q1"
        )
    store = Store(location)
    app = make_app(store, Config(model="demo"), ui_state=UiState(last_session_id=chat.id))
    writer = await Writer.start(location, chat.id)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await wait_until(pilot, lambda: app.main.chat_view.shown_ids == ["q1", "a1"])
            await pilot.press(*"from B")
            await writer.do("message from-A")  # A's question, stored under a1
            await pilot.press("enter")
            await wait_until(pilot, lambda: len(app.main.chat_view.shown_ids) == 4)
            await wait_until(pilot, lambda: not app.main.generating)
    finally:
        await writer.close()
    tree = SessionManager(store).get_session(chat.id).get_tree()
    store.close()
    questions = {m.text: m.parent_id for m in tree if m.role == "user" and m.id != "q1"}
    assert questions == {"from afar from-A": "a1", "from B": "a1"}
