"""One database, several processes: concurrent appends, a server that is down, secrets.

Each writer is a real process (a Python child using the store API), so the
database is the only thing shared, as between two machines.
"""

from __future__ import annotations

import subprocess
import sys

from store import SessionManager, Store, StoreSessionProvider

APPENDER = r"""
import asyncio, sys
from store import SessionManager, Store

location, chat, tag, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with Store(location) as store:
    manager = SessionManager(store)
    async def run():
        for i in range(count):
            text = f"{tag} message {i}"
            await manager.append(chat, {"id": f"{tag}-{i}", "role": "user",
                                        "parts": [{"type": "text", "text": text}]})
    asyncio.run(run())
print("done", flush=True)
"""


CLI = "import sys; from chatui.cli import main; sys.exit(main(sys.argv[1:]))"


def appenders_race(location: str, count: int = 1000) -> None:
    """Two processes append `count` messages each to one chat: every one is there once."""
    with Store(location) as store:
        chat = SessionManager(store).create("Busy chat")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", APPENDER, location, chat.id, tag, str(count)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("left", "right")
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0 and out.strip() == "done", err
    with Store(location) as store:
        tree = StoreSessionProvider(store, chat.id).get_tree()
        ids = [m.id for m in tree]
        expected = {f"{tag}-{i}" for tag in ("left", "right") for i in range(count)}
        assert len(ids) == len(set(ids)) == 2 * count
        assert set(ids) == expected
        # each process's own messages keep their order in the append order
        for tag in ("left", "right"):
            mine = [i for i in ids if i.startswith(tag)]
            assert mine == [f"{tag}-{i}" for i in range(count)]
        assert {h.id for h in SessionManager(store).search("left message 999")} >= {"left-999"}
        info = SessionManager(store).get(chat.id)
        assert info is not None and info.updated_at is not None


def test_two_processes_append_to_one_sqlite_chat(tmp_path):
    appenders_race(str(tmp_path / "busy.db"))


def test_a_server_down_at_launch_is_one_line_without_the_password(tmp_path):
    env = {"CHATUI_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    url = "postgresql://ana:sekret-pw@127.0.0.1:1/chats"
    for argv in (["--db", url], ["--db", url, "list"], ["db", "copy", url, str(tmp_path / "x")]):
        out = subprocess.run(
            [sys.executable, "-c", CLI, *argv],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1, out.stderr
        assert "sekret" not in out.stderr + out.stdout
        assert "ana:***@127.0.0.1:1/chats" in lines[0]
        assert out.returncode == (3 if argv == ["--db", url] else 7)  # app / commands
    leaked = [p for p in tmp_path.rglob("*") if p.is_file() and b"sekret" in p.read_bytes()]
    assert leaked == []
