"""The change feed: a process sees which chats another process changed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

from store import ChangeWatcher, SessionManager, Store
from store.providers import StoreContextProvider


def msg(mid, text):
    return {"id": mid, "role": "user", "parts": [{"type": "text", "text": text}]}


async def test_a_second_connection_sees_writes_to_chats_and_memory(tmp_path):
    path = tmp_path / "feed.db"
    with Store(path) as mine, Store(path) as theirs:
        other = SessionManager(theirs)
        chat = other.create("shared")
        quiet = other.create("quiet")
        watcher = ChangeWatcher(mine)
        assert watcher.poll() == set()  # nothing since it started
        await other.append(chat.id, msg("a", "hello"))
        assert watcher.poll() == {chat.id}
        assert watcher.poll() == set()  # reported once
        time.sleep(0.002)  # stamps are microseconds: make the next write's visibly later
        await StoreContextProvider(theirs, f"{quiet.id}/notes", "notes").set("a fact")
        assert watcher.poll() == {quiet.id}  # a memory write, without a message
        other.rename(chat.id, "renamed")
        assert watcher.poll() == {chat.id}


async def test_own_writes_are_not_reported(tmp_path):
    with Store(tmp_path / "own.db") as store:
        watcher = ChangeWatcher(store)
        manager = SessionManager(store)
        await manager.append(manager.create("mine").id, msg("a", "x"))
        assert watcher.poll() == set()


def test_another_process_is_seen_within_a_second(tmp_path):
    path = tmp_path / "procs.db"
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
        while not seen and time.monotonic() - start < 1.0:
            seen = watcher.poll()
            time.sleep(0.05)
        assert seen == {chat.id}
