"""Importing llm 0.32+'s message store (threads/turns/messages/parts), and both layouts.

The tables are those of llm 0.32's `migrations.py` (m023_message_store, with
m027's `turns.response_json`; `fragments` from m015, `attachments` from m009),
column for column; part payloads are what `llm/logs.py` `_write_part` writes
(`text_ref` for text borrowing fragments, attachment ids in place of bytes).
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from chatui.transfer import ImportFormatError, load_documents
from store import SessionManager, import_sessions

from .test_import_llm import llm_logs

NEW_SCHEMA = """
CREATE TABLE IF NOT EXISTS _llm_migrations (name TEXT PRIMARY KEY, applied_at TEXT);
CREATE TABLE IF NOT EXISTS conversations (id TEXT PRIMARY KEY, name TEXT, model TEXT);
CREATE TABLE IF NOT EXISTS responses (id TEXT PRIMARY KEY, model TEXT, prompt TEXT,
    system TEXT, response TEXT, conversation_id TEXT, duration_ms INTEGER,
    datetime_utc TEXT, input_tokens INTEGER, output_tokens INTEGER);
CREATE TABLE fragments (id INTEGER PRIMARY KEY, hash TEXT, content TEXT,
    datetime_utc TEXT, source TEXT);
CREATE TABLE attachments (id TEXT PRIMARY KEY, type TEXT, path TEXT, url TEXT, content BLOB);
CREATE TABLE messages (hash TEXT PRIMARY KEY, parent_hash TEXT REFERENCES messages(hash),
    role TEXT, provider_metadata TEXT);
CREATE TABLE parts (id INTEGER PRIMARY KEY, message_hash TEXT REFERENCES messages(hash),
    position INTEGER, type TEXT, tool_name TEXT, text TEXT, payload TEXT);
CREATE UNIQUE INDEX idx_parts ON parts (message_hash, position);
CREATE TABLE threads (id TEXT PRIMARY KEY, name TEXT,
    tip_message_hash TEXT REFERENCES messages(hash), forked_from TEXT REFERENCES threads(id),
    datetime_utc TEXT);
CREATE TABLE turns (id TEXT PRIMARY KEY, thread_id TEXT REFERENCES threads(id),
    parent_message_hash TEXT, tip_message_hash TEXT, model TEXT, resolved_model TEXT,
    options_json TEXT, schema_id TEXT, input_tokens INTEGER, output_tokens INTEGER,
    token_details TEXT, duration_ms INTEGER, datetime_utc TEXT, response_json TEXT);
"""


class Log:
    """Writes rows the way llm's LogStore does: a chain of messages, then a turn."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def message(self, mhash, parent, role, *parts):
        self.conn.execute("INSERT INTO messages VALUES (?, ?, ?, NULL)", (mhash, parent, role))
        for position, (kind, tool_name, text, payload) in enumerate(parts):
            self.conn.execute(
                "INSERT INTO parts (message_hash, position, type, tool_name, text, payload) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (mhash, position, kind, tool_name, text, json.dumps(payload) if payload else None),
            )

    def turn(self, tid, thread, parent, tip, when, tokens=(0, 0)):
        self.conn.execute(
            "INSERT INTO turns (id, thread_id, parent_message_hash, tip_message_hash, model, "
            "input_tokens, output_tokens, duration_ms, datetime_utc) "
            "VALUES (?, ?, ?, ?, 'gpt-5-mini', ?, ?, 100, ?)",
            (tid, thread, parent, tip, *tokens, when),
        )


def text(t):
    return ("text", None, t, None)


def new_layout(path, *, schema=NEW_SCHEMA):
    conn = sqlite3.connect(path)
    conn.executescript(schema)
    log = Log(conn)
    conn.execute(
        "INSERT INTO fragments VALUES (1, 'h1', 'the whole README', '2025-01-01', 'README.md')"
    )
    conn.execute(
        "INSERT INTO attachments VALUES ('att1', 'image/png', '/home/u/cat.png', NULL, ?)",
        (b"\x89PNG-bytes",),
    )
    # Thread t1: system, user (borrowing a fragment, with an image), assistant tool call,
    # tool result, assistant answer; then a second question.
    log.message("m1", None, "system", text("Be brief."))
    log.message(
        "m2",
        "m1",
        "user",
        ("text", None, None, {"text_ref": [{"literal": "Summarise: "}, {"fragment": 1}]}),
        ("attachment", None, None, {"attachment": {"id": "att1"}}),
    )
    log.message(
        "m3",
        "m2",
        "assistant",
        ("reasoning", None, "Need the clock.", None),
        ("tool_call", "clock", None, {"name": "clock", "arguments": {"tz": "UTC"},
                                      "tool_call_id": "c1"}),
    )  # fmt: skip
    log.message(
        "m4",
        "m3",
        "tool",
        ("tool_result", "clock", None, {"name": "clock", "output": "09:00", "tool_call_id": "c1"}),
    )
    log.message("m5", "m4", "assistant", text("A README, read at 09:00."))
    log.message("m6", "m5", "user", text("Thanks. Shorter?"))
    log.message("m7", "m6", "assistant", text("README."))
    # Thread t2 forks t1 after m2: another answer.
    log.message("m8", "m2", "assistant", text("Cannot see it."))
    conn.execute("INSERT INTO threads VALUES ('t1', 'README chat', 'm7', NULL, '2025-01-01')")
    conn.execute("INSERT INTO threads VALUES ('t2', NULL, 'm8', 't1', '2025-01-02')")
    log.turn("u1", "t1", "m2", "m5", "2025-01-01T10:00:00", (100, 20))
    log.turn("u2", "t1", "m6", "m7", "2025-01-01T10:05:00", (130, 2))
    log.turn("u3", "t2", "m2", "m8", "2025-01-02T08:00:00")
    # Thread t3: a second conversation.
    log.message("n1", None, "user", text("Name a fruit"))
    log.message("n2", "n1", "assistant", text("Mango."))
    conn.execute("INSERT INTO threads VALUES ('t3', NULL, 'n2', NULL, '2025-01-03')")
    log.turn("u4", "t3", "n1", "n2", "2025-01-03T08:00:00")
    conn.commit()
    conn.close()
    return path


def test_threads_become_chats_with_their_forks(store, tmp_path):
    path = new_layout(tmp_path / "logs.db")
    outcomes = import_sessions(store, load_documents(path, "llm"), match_source=True)
    assert [(o.name, o.messages) for o in outcomes] == [("README chat", 8), ("Name a fruit", 2)]
    manager = SessionManager(store)
    sid = outcomes[0].session_id
    info = manager.get(sid)
    assert info.source == "llm:t1"
    history = manager.get_history(sid)
    # The active branch is the newest turn's (the fork t2).
    assert [(m.role, m.text) for m in history] == [
        ("system", "Be brief."),
        ("user", "Summarise: the whole README"),
        ("assistant", "Cannot see it."),
    ]
    user = history[1]
    assert user.parts[1]["type"] == "file" and user.parts[1]["media_type"] == "image/png"
    assert user.parts[1]["filename"] == "cat.png" and user.parts[1]["data"]
    assert history[1].created_at.isoformat() == "2025-01-01T10:00:00+00:00"


def test_tool_calls_reasoning_and_usage(tmp_path):
    path = new_layout(tmp_path / "logs.db")
    doc = load_documents(path, "llm")[0]
    by = {m["id"].rsplit("-", 1)[1]: m for m in doc["messages"]}
    assert by["m3"]["parts"] == [
        {"type": "reasoning", "text": "Need the clock."},
        {"type": "tool-call", "tool_call_id": "c1", "tool_name": "clock", "input": {"tz": "UTC"}},
    ]
    assert by["m4"]["parts"][0]["output"] == "09:00"
    assert by["m5"]["token_usage"] == {"input": 100, "output": 20}
    assert by["m8"]["parent_id"] == by["m2"]["id"]
    assert by["m7"]["created_at"].startswith("2025-01-01T10:05")


def test_database_upgraded_in_place_keeps_both(store, tmp_path):
    """Old responses, then llm 0.32 continuing the same conversation as a thread."""
    path = llm_logs(tmp_path / "logs.db")  # conversation 01conv, layout before 0.32
    conn = sqlite3.connect(path)
    conn.executescript(
        NEW_SCHEMA.replace("CREATE TABLE IF NOT EXISTS _llm", "CREATE TABLE IF NOT EXISTS _x")
    )
    log = Log(conn)
    # llm replays the old conversation as the chain, then adds the new exchange.
    old = [
        ("system", "You are a poet."),
        ("user", "Write a haiku about tea"),
        ("assistant", "Steam curls from the cup"),
        ("user", "Now about coffee"),
        ("assistant", "Dark roast, bitter dawn"),
    ]
    parent = None
    for i, (role, body) in enumerate(old):
        log.message(f"o{i}", parent, role, text(body))
        parent = f"o{i}"
    log.message("x1", parent, "user", text("And about water?"))
    log.message("x2", "x1", "assistant", text("Clear, cold, enough."))
    conn.execute("INSERT INTO threads VALUES ('01conv', 'Haiku about tea', 'x2', NULL, NULL)")
    log.turn("y1", "01conv", "x1", "x2", "2025-06-01T09:00:00")
    conn.commit()
    conn.close()
    docs = load_documents(path, "llm")
    assert len(docs) == 1
    outcomes = import_sessions(store, docs, match_source=True)
    history = SessionManager(store).get_history(outcomes[0].session_id)
    texts = [m.text for m in history]
    assert texts[-2:] == ["And about water?", "Clear, cold, enough."]
    assert texts.count("Write a haiku about tea") == 1  # the replay is not doubled
    # The replay stops after "Dark roast", so the new exchange forks there: 9 old + 2.
    assert len(texts) == 7 and outcomes[0].messages == 9 + 2


def test_empty_new_layout_is_no_chats(tmp_path):
    path = tmp_path / "logs.db"
    sqlite3.connect(path).executescript(NEW_SCHEMA).close()
    assert load_documents(path, "llm") == []


def test_damaged_message_chain_is_refused(tmp_path):
    path = new_layout(tmp_path / "logs.db")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE messages SET parent_hash = 'm7' WHERE hash = 'm1'")  # a loop
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(ImportFormatError, match="cycle"):
        load_documents(path, "llm")
    assert path.read_bytes() == before
