"""`Store(durability=…)`: which commits wait for the database's disk.

"final" (the default) waits for every commit but a streaming reply's flushes,
which a later write supersedes; "full" waits for all; "relaxed" for none. On
PostgreSQL that is `synchronous_commit`, seen here with `SHOW` inside the
transaction; on SQLite "full" is `synchronous=FULL`.
"""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from chatui.core.replies import ReplyWriter
from store import Session, SessionManager, Store

from .pg_helpers import SERVER


def waits(store: Store) -> str:
    return str(store.query("SHOW synchronous_commit")[0][0])


def test_an_unknown_durability_is_refused(tmp_path):
    with pytest.raises(ValueError, match="full, final, relaxed"):
        Store(tmp_path / "chat.db", durability="sometimes")
    assert not (tmp_path / "chat.db").exists()


def test_final_skips_the_wait_only_for_superseded_writes(pg_url):
    with Store(pg_url) as store:
        assert store.durability == "final" and waits(store) == "on"
        with store.write():
            assert waits(store) == "on"
        with store.write(durable=False):
            assert waits(store) == "off"
        assert waits(store) == "on"  # SET LOCAL: that transaction only
        with store.write(), store.write(durable=False):
            assert waits(store) == "on"  # a savepoint follows its transaction


def test_full_and_relaxed(pg_url):
    with Store(pg_url, durability="full") as store:
        with store.write(durable=False):
            assert waits(store) == "on"
    with Store(pg_url, durability="relaxed") as store:
        assert waits(store) == "off"
        with store.write():
            assert waits(store) == "off"
        # a connection the server ended is replaced with the same setting
        pid = store.query("SELECT pg_backend_pid()")[0][0]
        with psycopg.connect(SERVER, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        assert waits(store) == "off"
        assert store.query("SELECT pg_backend_pid()")[0][0] != pid


def test_sqlite_full_syncs_every_commit(tmp_path):
    with Store(tmp_path / "a.db") as store:
        assert store.query("PRAGMA synchronous")[0][0] == 1  # NORMAL, as always
        with store.write(durable=False):
            pass
    with Store(tmp_path / "b.db", durability="full") as store:
        assert store.query("PRAGMA synchronous")[0][0] == 2


def test_a_streaming_reply_writes_its_flushes_as_superseded(pg_url, monkeypatch):
    with Store(pg_url) as store:
        manager = SessionManager(store)
        chat = manager.create("chat")
        session = Session(store).for_session(chat.id)
        seen: list[tuple[bool, str]] = []
        real = Store.write

        def write(self, *, durable=True):
            seen.append((durable, waits(self) if not self.db.in_transaction() else "nested"))
            return real(self, durable=durable)

        monkeypatch.setattr(Store, "write", write)
        question = {"id": "q", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
        asyncio.run(session.append_message(question, None))
        writer = ReplyWriter(session, "demo", flush_interval=0.0)
        asyncio.run(writer.start("q"))
        seen.clear()
        writer.add_text("so far")
        writer.flush()
        flush = [durable for durable, _ in seen]
        seen.clear()
        writer.add_text(", and the rest")
        final = writer.finish("finished")
        assert final.text == "so far, and the rest"
        assert flush and not any(flush)  # the flush: not durable
        assert seen and all(durable for durable, _ in seen)  # the final write: durable
