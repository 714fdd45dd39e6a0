"""The change feed: a process sees which chats another process changed.

Each test runs on a SQLite file and on a PostgreSQL schema (LISTEN/NOTIFY).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from store import ChangeWatcher, SessionManager, Store
from store.providers import StoreContextProvider


def msg(mid, text):
    return {"id": mid, "role": "user", "parts": [{"type": "text", "text": text}]}


@pytest.fixture(params=["sqlite", "postgres"])
def location(request, tmp_path):
    """Where the processes meet: one SQLite file, or one PostgreSQL schema."""
    if request.param == "sqlite":
        return str(tmp_path / "feed.db")
    return request.getfixturevalue("pg_url")


def poll(watcher: ChangeWatcher, seconds: float = 1.0) -> set[str]:
    """What the watcher reports within `seconds` (notifications take a moment to arrive)."""
    deadline = time.monotonic() + seconds
    while True:
        seen = watcher.poll()
        if seen or time.monotonic() > deadline:
            return seen
        time.sleep(0.01)


async def test_a_second_connection_sees_writes_to_chats_and_memory(location):
    path = location
    with Store(path) as mine, Store(path) as theirs:
        other = SessionManager(theirs)
        chat = other.create("shared")
        quiet = other.create("quiet")
        watcher = ChangeWatcher(mine)
        assert poll(watcher, 0.1) == set()  # nothing since it started
        await other.append(chat.id, msg("a", "hello"))
        assert poll(watcher) == {chat.id}
        assert poll(watcher, 0.1) == set()  # reported once
        time.sleep(0.002)  # stamps are microseconds: make the next write's visibly later
        await StoreContextProvider(theirs, f"{quiet.id}/notes", "notes").set("a fact")
        assert poll(watcher) == {quiet.id}  # a memory write, without a message
        other.rename(chat.id, "renamed")
        assert poll(watcher) == {chat.id}
        watcher.close()


async def test_own_writes_are_not_reported(location):
    with Store(location) as store, ChangeWatcher(store) as watcher:
        manager = SessionManager(store)
        await manager.append(manager.create("mine").id, msg("a", "x"))
        assert poll(watcher, 0.2) == set()


def test_the_watcher_sees_another_process(location):
    # How soon is the app's figure (`bench/live_bench.py 4`), not a limit here.
    path = location
    with Store(path) as store:
        chat = SessionManager(store).create("two processes")
        watcher = ChangeWatcher(store)
        code = textwrap.dedent(
            f"""
            import asyncio
            from store import SessionManager, Store
            with Store({str(path)!r}) as store:
                asyncio.run(SessionManager(store).append({chat.id!r},
                    {{"id": "p", "role": "user", "parts": [{{"type": "text", "text": "hi"}}]}}))
            """
        )
        subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
        start = time.monotonic()
        seen: set[str] = set()
        while not seen and time.monotonic() - start < 15.0:
            seen = watcher.poll()
            time.sleep(0.05)
        assert seen == {chat.id}
        watcher.close()


async def test_a_dropped_listener_reconnects_and_reports_what_it_missed(location):
    if not location.startswith("postgresql"):
        pytest.skip("SQLite's watcher holds no connection of its own")
    import psycopg

    from .pg_helpers import SERVER

    with Store(location) as mine, Store(location) as theirs, ChangeWatcher(mine) as watcher:
        other = SessionManager(theirs)
        chat = other.create("shared")
        assert poll(watcher) == {chat.id}
        listener = watcher._feed._listener
        with psycopg.connect(SERVER, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (listener.info.backend_pid,))
        time.sleep(0.1)
        await other.append(chat.id, msg("while-down", "nobody listened"))
        assert poll(watcher, 2.0) == {chat.id}  # found by its stamp after reconnecting
        await other.append(chat.id, msg("after", "listening again"))
        assert poll(watcher) == {chat.id}


async def test_a_peer_hop_written_elsewhere_is_reported(location):
    from store import PeerRouter

    with Store(location) as mine, Store(location) as theirs, ChangeWatcher(mine) as watcher:
        other = SessionManager(theirs)
        other.create_agent("Bob", model="m-b")
        caller = other.create("Plan")
        assert poll(watcher) == {caller.id}

        async def run_turn(session_id):
            await other.append(session_id, msg(f"r-{session_id[:6]}", "Bob: 40k"))
            return "Bob: 40k"

        time.sleep(0.002)
        await PeerRouter(other, run_turn).send(caller.id, "Bob", "budget?", wait=True)
        target = [i.id for i in other.list() if i.id != caller.id]
        seen: set[str] = set()
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and not seen >= set(target):
            seen |= watcher.poll()
            time.sleep(0.01)
        assert len(target) == 1 and seen >= set(target)  # the peer's session, with the hop
