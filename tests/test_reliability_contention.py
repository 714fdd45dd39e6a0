"""A long import beside a streaming reply (issue 25 item 5): the import commits in
batches of whole chats, so the reply's writes get the lock in between and the reply
finishes whole, with the app's own lock wait (10 s). The reply streams while the
import is midway (some of its batches committed, not all; one transaction would show
none, then all), and writes every token as it comes, so each of its writes races a
batch. `bench/contention_bench.py` runs the same with a 100 MB import."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from contextlib import closing

from chatui.core.events import Notice, ReplyDelta, ReplyFinished, TurnFailed
from chatui.transfer.files import import_file
from store import Store, StoreSessionProvider, document_entries
from tests import llm_server as script
from tests.test_engine import make_chat, of, run

CHATS, MESSAGES = 60, 200  # 12,000 messages, ~4 MB of JSONL


def big_export(path) -> int:
    with path.open("w") as fh:
        for c in range(CHATS):
            sid = f"big{c:04d}"
            messages, parent = [], None
            for m in range(MESSAGES):
                mid = f"{sid}-{m}"
                messages.append({
                    "id": mid, "parent_id": parent, "role": "user" if m % 2 == 0 else "assistant",
                    "parts": [{"type": "text", "text": f"message {m} " + "lorem ipsum " * 25}],
                })  # fmt: skip
                parent = mid
            doc = {"format": "chatui", "version": 1,
                   "session": {"id": sid, "name": f"Big {c}"}, "messages": messages}  # fmt: skip
            for entry in document_entries(doc):
                fh.write(json.dumps(entry) + "\n")
    return path.stat().st_size


def imported(db) -> int:
    """Messages of the import that are committed (a reader sees only those)."""
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT count(*) FROM messages WHERE id LIKE 'big%'").fetchone()[0]


async def test_a_long_import_lets_a_streaming_reply_through(tmp_path, llm_server, fake_key):
    source = tmp_path / "big.jsonl"
    size = big_export(source)
    assert size > 3_000_000
    db = tmp_path / "chats.db"
    Store(db).close()
    done: list[object] = []

    def importing() -> None:
        with Store(db) as store:
            try:
                done.append(import_file(store, source, "chatui"))
            except Exception as exc:  # noqa: BLE001 - reported by the assertion below
                done.append(exc)

    words = " ".join(f"w{i}" for i in range(120))
    with Store(db) as store:
        chat = make_chat(store, llm_server, max_retries=0)
        # A first reply before the import: LiteLLM's first call loads it, seconds on a
        # busy machine, and the import could end before the second reply's first token.
        llm_server.script(script.text("warm"), script.text(words, delay=0.01))
        assert of(await run(chat.engine.send(chat.sid, "before the import")), ReplyFinished)
        worker = threading.Thread(target=importing, daemon=True)
        worker.start()
        probe = sqlite3.connect(db, timeout=0, isolation_level=None)
        for _ in range(3000):  # until the import is writing: it holds the write lock
            try:
                probe.execute("BEGIN IMMEDIATE")
                probe.execute("ROLLBACK")
            except sqlite3.OperationalError:
                break
            await asyncio.sleep(0.01)
        probe.close()
        events, halfway = [], []
        async for event in chat.engine.send(chat.sid, "stream while it imports"):
            events.append(event)
            if isinstance(event, ReplyDelta) and not halfway:
                # the reply's writes race the import: some batches committed, not all
                halfway.append((worker.is_alive(), imported(db)))
        worker.join(600)  # a busy machine imports slowly
        assert not of(events, TurnFailed), [(e.title, e.detail) for e in of(events, TurnFailed)]
        assert not [n for n in of(events, Notice) if "locked" in n.text.lower()]
        assert of(events, ReplyFinished)
        (alive, committed), *_ = halfway
        assert alive and 0 < committed < CHATS * MESSAGES, halfway
        reply = StoreSessionProvider(store, chat.sid).get_latest_leaf()
        assert reply is not None and reply.text == words
        assert reply.metadata.get("status") == "complete", reply.metadata
    report = done[0]
    assert not isinstance(report, Exception), report
    assert report.count("imported") == CHATS
    with Store(db) as store:
        assert store.query("SELECT count(*) FROM messages")[0][0] == CHATS * MESSAGES + 4
