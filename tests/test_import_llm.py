"""Importing simonw/llm's logs.db: conversations become chats."""

from __future__ import annotations

import sqlite3

import pytest

from chatui.transfer import ImportFormatError, load_documents
from store import SessionManager, import_sessions

# The tables as llm's migrations leave them (m010 conversations/responses, m013 usage,
# m017 tool calls and results), trimmed to the columns that matter here.
SCHEMA = """
CREATE TABLE _llm_migrations (name TEXT PRIMARY KEY, applied_at TEXT);
CREATE TABLE conversations (id TEXT PRIMARY KEY, name TEXT, model TEXT);
CREATE TABLE responses (
    id TEXT PRIMARY KEY, model TEXT, prompt TEXT, system TEXT, prompt_json TEXT,
    options_json TEXT, response TEXT, response_json TEXT,
    conversation_id TEXT REFERENCES conversations(id), duration_ms INTEGER,
    datetime_utc TEXT, input_tokens INTEGER, output_tokens INTEGER, token_details TEXT,
    schema_id TEXT, resolved_model TEXT);
CREATE TABLE tool_calls (id INTEGER PRIMARY KEY, response_id TEXT, tool_id INTEGER,
    name TEXT, arguments TEXT, tool_call_id TEXT);
CREATE TABLE tool_results (id INTEGER PRIMARY KEY, response_id TEXT, tool_id INTEGER,
    name TEXT, output TEXT, tool_call_id TEXT, instance_id INTEGER, exception TEXT);
"""


def llm_logs(path, *, extra_conversation=False):
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.execute("INSERT INTO conversations VALUES ('01conv', 'Haiku about tea', 'gpt-4o-mini')")
    rows = [
        (
            "01r1",
            "gpt-4o-mini",
            "Write a haiku about tea",
            "You are a poet.",
            "Steam curls from the cup",
            "01conv",
            812,
            "2024-05-01T10:00:00.000001+00:00",
            12,
            9,
        ),
        (
            "01r2",
            "gpt-4o-mini",
            "Now about coffee",
            "You are a poet.",
            "Dark roast, bitter dawn",
            "01conv",
            640,
            "2024-05-01T10:01:00",
            30,
            8,
        ),
        (
            "01r3",
            "gpt-4o-mini",
            "What time is it in Lisbon?",
            None,
            "",
            "01conv",
            300,
            "2024-05-01T10:02:00",
            40,
            5,
        ),
        (
            "01r4",
            "gpt-4o-mini",
            "",
            None,
            "It is 11:02 in Lisbon.",
            "01conv",
            200,
            "2024-05-01T10:02:05",
            50,
            7,
        ),
    ]
    conn.executemany(
        "INSERT INTO responses (id, model, prompt, system, response, conversation_id, "
        "duration_ms, datetime_utc, input_tokens, output_tokens) VALUES (?,?,?,?,?,?,?,?,?,?)",
        rows,
    )
    conn.execute(
        "INSERT INTO tool_calls (response_id, name, arguments, tool_call_id) "
        "VALUES ('01r3', 'local_time', '{\"city\": \"Lisbon\"}', 'call_1')"
    )
    conn.execute(
        "INSERT INTO tool_results (response_id, name, output, tool_call_id) "
        "VALUES ('01r4', 'local_time', '11:02', 'call_1')"
    )
    if extra_conversation:
        conn.execute("INSERT INTO conversations VALUES ('02conv', NULL, 'claude-3.5-haiku')")
        conn.execute(
            "INSERT INTO responses (id, model, prompt, response, conversation_id, "
            "datetime_utc) VALUES ('02r1', 'claude-3.5-haiku', 'Name a fruit', "
            "'Mango.', '02conv', '2024-05-02T08:00:00')"
        )
    conn.commit()
    conn.close()
    return path


def test_conversation_becomes_a_chain(store, tmp_path):
    path = llm_logs(tmp_path / "logs.db", extra_conversation=True)
    outcomes = import_sessions(store, load_documents(path, "llm"), match_source=True)
    assert [o.name for o in outcomes] == ["Haiku about tea", "Name a fruit"]
    manager = SessionManager(store)
    history = manager.get_history(outcomes[0].session_id)
    assert [(m.role, m.text) for m in history] == [
        ("system", "You are a poet."),
        ("user", "Write a haiku about tea"),
        ("assistant", "Steam curls from the cup"),
        ("user", "Now about coffee"),
        ("assistant", "Dark roast, bitter dawn"),
        ("user", "What time is it in Lisbon?"),
        ("assistant", ""),
        ("tool", ""),
        ("assistant", "It is 11:02 in Lisbon."),
    ]
    call = history[6]
    assert call.tool_calls == [
        {
            "type": "tool-call",
            "tool_call_id": "call_1",
            "tool_name": "local_time",
            "input": {"city": "Lisbon"},
        }
    ]
    assert history[7].tool_results[0]["output"] == "11:02"
    assert history[2].token_usage == {"input": 12, "output": 9}
    assert history[1].created_at.isoformat() == "2024-05-01T10:00:00.000001+00:00"
    info = manager.get(outcomes[0].session_id)
    assert info.source == "llm:01conv" and info.metadata["llm"]["model"] == "gpt-4o-mini"
    again = import_sessions(store, load_documents(path, "llm"), match_source=True)
    assert not any(o.imported for o in again)


def test_the_file_is_not_modified(tmp_path):
    path = llm_logs(tmp_path / "logs.db")
    before = path.read_bytes()
    load_documents(path, "llm")
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda p: p.write_text("not a database"), "not a SQLite file"),
        (
            lambda p: sqlite3.connect(p).execute("CREATE TABLE t (x)").connection.commit(),
            "no 'responses' or 'threads' table",
        ),
        (
            lambda p: (
                sqlite3.connect(p).execute("CREATE TABLE responses (id TEXT)").connection.commit()
            ),
            "lacks conversation_id",
        ),
        (lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200), "cannot read"),
    ],
)
def test_bad_databases_are_refused(tmp_path, make, expected):
    path = tmp_path / "logs.db"
    make(path)
    with pytest.raises(ImportFormatError, match=expected) as info:
        load_documents(path, "llm")
    assert str(path) in str(info.value)
