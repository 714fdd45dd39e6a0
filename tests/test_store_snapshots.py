"""Reads that must agree with each other see one moment, on both engines.

An export and `db info` run in `Store.snapshot()`: SQLite's read transaction
(its WAL snapshot), PostgreSQL's REPEATABLE READ, READ ONLY. A second process
writing meanwhile (here: a second `Store` on the same database, its own
connection) is seen whole or not at all — never its message without the
rename that came with it, never a count of messages from after the count of
chats.
"""

from __future__ import annotations

import json

import pytest

import store as store_package
import store.transfer as transfer
from chatui.cli import main
from store import SessionManager, Store, StoreSessionProvider, database_info, export_session
from store.db_copy import row_counts


def msg(mid: str, text: str) -> dict:
    return {"id": mid, "role": "user", "parts": [{"type": "text", "text": text}]}


def chat_with(store: Store, name: str, n: int) -> str:
    chat = SessionManager(store).create(name)
    provider = StoreSessionProvider(store, chat.id)
    for i in range(n):
        provider.append_message(msg(f"m{i}", f"message {i}"))
    return chat.id


def write_elsewhere(url: str, chat_id: str, text: str, *, rename: str | None = None) -> None:
    """What another process does: one transaction, a message (and a rename)."""
    with Store(url) as other, other.write():
        StoreSessionProvider(other, chat_id).append_message(msg(f"x-{text}", text))
        if rename is not None:
            SessionManager(other).rename(chat_id, rename)


def test_an_export_sees_the_chat_as_it_was_when_it_began(store, store_url, monkeypatch):
    chat_id = chat_with(store, "before", 3)
    real = StoreSessionProvider.get_tree
    wrote = []

    def get_tree(self):  # the session row is read already; now another process writes
        if not wrote:
            wrote.append(True)
            write_elsewhere(store_url, chat_id, "meanwhile", rename="after")
        return real(self)

    monkeypatch.setattr(StoreSessionProvider, "get_tree", get_tree)
    document = export_session(store, chat_id)
    assert wrote
    assert document["session"]["name"] == "before"
    assert [m["id"] for m in document["messages"]] == ["m0", "m1", "m2"]
    monkeypatch.undo()
    later = export_session(store, chat_id)
    assert later["session"]["name"] == "after" and len(later["messages"]) == 4


def test_db_info_counts_every_table_at_one_moment(store, store_url, monkeypatch):
    chat_id = chat_with(store, "counted", 2)
    before = row_counts(store)
    real = store.rows
    calls = []

    def rows(query):
        calls.append(query)
        if len(calls) == 2:  # after the first count, before the others
            write_elsewhere(store_url, chat_id, "meanwhile")
            with Store(store_url) as other:
                SessionManager(other).create("another chat")
        return real(query)

    monkeypatch.setattr(store, "rows", rows)
    info = database_info(store)
    assert info.counts == before
    monkeypatch.undo()
    after = database_info(store).counts
    assert after["messages"] == before["messages"] + 1
    assert after["sessions"] == before["sessions"] + 1


def test_export_all_is_one_moment_of_the_whole_history(store, store_url, monkeypatch, capsys):
    first = chat_with(store, "first", 2)
    second = chat_with(store, "second", 3)
    store.close()
    real = transfer.export_session
    wrote = []

    def export_one(s, session_id):
        if not wrote:  # the list of chats is read: another process adds to the second
            wrote.append(True)
            write_elsewhere(store_url, second, "meanwhile")
        return real(s, session_id)

    monkeypatch.setattr(store_package, "export_session", export_one)  # imported at call time
    capsys.readouterr()
    assert main(["--db", store_url, "export", "--all", "--format", "jsonl"]) == 0
    entries = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert wrote
    messages = [e for e in entries if e["type"] == "message"]
    assert {e["session_id"] for e in messages} == {first, second}
    assert len(messages) == 5  # as many as the database held when the export began


def test_a_snapshot_inside_a_write_is_a_savepoint_of_it(store):
    chat_id = chat_with(store, "nested", 1)
    with store.write():
        StoreSessionProvider(store, chat_id).append_message(msg("in", "inside"))
        document = export_session(store, chat_id)  # sees the open write's own rows
        assert [m["id"] for m in document["messages"]] == ["m0", "in"]
    assert database_info(store).counts["messages"] == 2


def test_a_snapshot_is_read_only_on_postgresql(store, db_engine):
    if db_engine != "postgres":
        pytest.skip("SQLite's read transaction becomes a write one when it writes")
    from peewee import DatabaseError

    with pytest.raises(DatabaseError, match="read-only"), store.snapshot():
        SessionManager(store).create("not here")
    assert SessionManager(store).count() == 0
