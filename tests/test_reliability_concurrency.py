"""Two processes writing one database at once: every message exactly once, the tree whole,
and no "database is locked" reaching anyone.

Store opens SQLite in WAL mode with a busy timeout and takes the write lock up front
(`BEGIN IMMEDIATE`), so a second writer waits its turn instead of failing; these tests
make two real processes (plus a third one searching) race for it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from store import SessionManager, Store
from tests.test_import_chatgpt import branching_conversation

N = 1000

WRITER = textwrap.dedent("""
    import asyncio, os, sys, time
    from store import SessionManager, Store

    db, worker, chats, n, go = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4]), sys.argv[5]

    async def main():
        with Store(db) as store:
            manager = SessionManager(store)
            while not os.path.exists(go):
                time.sleep(0.005)
            for i in range(n):
                await manager.append(chats[i % len(chats)], {
                    "id": f"{worker}-{i:04d}", "role": "user" if i % 2 else "assistant",
                    "parts": [{"type": "text", "text": f"note {i} from {worker} zebra{worker}"}]})
        print("done", flush=True)

    asyncio.run(main())
""")

SEARCHER = textwrap.dedent("""
    import os, sys, time
    from store import SessionManager, Store

    db, go, stop = sys.argv[1], sys.argv[2], sys.argv[3]
    searches = 0
    with Store(db) as store:
        manager = SessionManager(store)
        while not os.path.exists(go):
            time.sleep(0.005)
        while not os.path.exists(stop):
            manager.search("note zebra", limit=5)
            store.query("SELECT count(*) FROM messages")
            searches += 1
    print(searches, flush=True)
""")


def start(script: str, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(child: subprocess.Popen[str], timeout: float = 120) -> str:
    out, err = child.communicate(timeout=timeout)
    assert child.returncode == 0, err
    assert "locked" not in err.lower() and "Traceback" not in err, err
    return out


@pytest.mark.parametrize("layout", ["different chats", "same chat"])
def test_two_writers_and_a_reader(tmp_path, layout):
    db = tmp_path / "shared.db"
    with Store(db) as store:
        manager = SessionManager(store)
        for sid in ("chat-a", "chat-b", "chat-shared"):
            manager.create(sid, id=sid)
    go, stop = tmp_path / "go", tmp_path / "stop"
    chats = {"different chats": ("chat-a", "chat-b"), "same chat": ("chat-shared", "chat-shared")}[
        layout
    ]
    writers = [
        start(WRITER, db, worker, chat, N, go) for worker, chat in zip("AB", chats, strict=True)
    ]
    searcher = start(SEARCHER, db, go, stop)
    time.sleep(0.5)  # let every process import and open the file before the race
    go.touch()
    outputs = [finish(w) for w in writers]
    stop.touch()
    searches = int(finish(searcher).strip())
    assert outputs == ["done\n", "done\n"]
    assert searches > 0

    with Store(db) as store:
        assert store.integrity_check() == []
        manager = SessionManager(store)
        for worker, chat in zip("AB", chats, strict=True):
            ids = [
                r[0]
                for r in store.query(
                    "SELECT id FROM messages WHERE id LIKE ? ORDER BY seq", (f"{worker}-%",)
                )
            ]
            assert ids == [f"{worker}-{i:04d}" for i in range(N)]  # each once, in order
            assert {
                r[0]
                for r in store.query(
                    "SELECT DISTINCT session_id FROM messages WHERE id LIKE ?", (f"{worker}-%",)
                )
            } == {chat}
            assert len(manager.search(f"zebra{worker}", limit=N + 10)) == N
        rows = store.query("SELECT session_id, id, parent_id FROM messages")
        assert len(rows) == 2 * N
        by_chat: dict[str, dict[str, str | None]] = {}
        for sid, mid, parent in rows:
            by_chat.setdefault(sid, {})[mid] = parent
        for sid, parents in by_chat.items():
            # "Latest" is read under the write lock, so even two processes interleaving
            # in one chat build one unbroken chain: no orphan, no accidental branch.
            assert sum(p is None for p in parents.values()) == 1
            assert all(p is None or p in parents for p in parents.values())
            children = [p for p in parents.values() if p is not None]
            assert len(children) == len(set(children))
            assert manager.get_session(sid).get_path_length() == len(parents)
        if layout == "same chat":
            chain = [m.id[0] for m in manager.get_history("chat-shared")]
            switches = sum(a != b for a, b in zip(chain, chain[1:], strict=False))
            assert switches >= 1  # a race (about 100 turns here), not two runs in a row


def chatgpt_export(path: Path, prefix: str, count: int) -> Path:
    conversations = []
    for i in range(count):
        conv = branching_conversation()
        conv["id"] = conv["conversation_id"] = f"{prefix}-{i}"
        conv["title"] = f"{prefix} chat {i}"
        conversations.append(conv)
    path.write_text(json.dumps(conversations))
    return path


def test_two_chatui_imports_at_once(tmp_path):
    """Two `chatui import` commands on one database: both succeed, nothing doubled."""
    chatui = Path(sys.executable).parent / "chatui"
    if not chatui.exists():
        pytest.skip("the chatui script is not installed")
    db = tmp_path / "chats.db"
    Store(db).close()
    files = [chatgpt_export(tmp_path / f"{p}.json", p, 150) for p in ("left", "right")]
    env = {"CHATUI_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    runs = [
        subprocess.Popen(
            [str(chatui), "import", str(f), "--from", "chatgpt", "--db", str(db)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for f in files
    ]
    for run in runs:
        finish(run)
    with Store(db) as store:
        assert store.integrity_check() == []
        names = [r[0] for r in store.query("SELECT name FROM sessions")]
        assert sorted(names) == sorted(
            f"{p} chat {i}" for p in ("left", "right") for i in range(150)
        )
        per_chat = {r[0] for r in store.query("SELECT count(*) FROM messages GROUP BY session_id")}
        assert len(per_chat) == 1  # every chat has the same, whole tree


def test_opening_while_another_process_writes(tmp_path):
    """Opening checks the file before touching it; that look must not mistake another
    process's writes and checkpoints for a damaged or foreign file."""
    db = tmp_path / "busy.db"
    with Store(db) as store:
        SessionManager(store).create("busy", id="busy")
    go = tmp_path / "go"
    writer = start(WRITER, db, "W", "busy", 3000, go)
    time.sleep(0.3)
    go.touch()
    opened = 0
    while writer.poll() is None:
        with Store(db) as store:  # raises DatabaseFileError if the look went wrong
            store.query("SELECT count(*) FROM messages")
        opened += 1
    assert finish(writer) == "done\n"
    assert opened > 5
    with Store(db) as store:
        assert store.integrity_check() == []
        assert store.query("SELECT count(*) FROM messages")[0][0] == 3000
