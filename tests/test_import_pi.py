"""Importing Pi coding-agent session files (JSONL trees linked by id/parentId)."""

from __future__ import annotations

import json

import pytest

from chatui.transfer import ImportFormatError, load_documents
from store import SessionManager, import_sessions
from tests.engine_helpers import sql

USAGE = {
    "input": 120,
    "output": 30,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 150,
    "cost": {"input": 0.001, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.003},
}


def entry(kind, eid, parent, second, **fields):
    return {
        "type": kind,
        "id": eid,
        "parentId": parent,
        "timestamp": f"2025-01-05T10:00:{second:02d}.000Z",
        **fields,
    }


def pi_session(session_id="0b5e7c1a-2f2d-4c1e-9a63-5d6f1f0a9e11"):
    """A Pi v3 session as its SessionManager writes it: settings entries in the chain,
    a tool round trip, a label, a branch from an earlier entry, a compaction, a
    session name, an extension message and a `!` shell command; the current leaf is
    the last line."""
    ms = 1736071200000
    return [
        {
            "type": "session",
            "version": 3,
            "id": session_id,
            "timestamp": "2025-01-05T10:00:00.000Z",
            "cwd": "/home/ana/shop",
        },
        entry(
            "model_change", "e0000001", None, 1, provider="anthropic", modelId="claude-sonnet-4-5"
        ),
        entry("thinking_level_change", "e0000002", "e0000001", 1, thinkingLevel="high"),
        entry(
            "message",
            "u0000001",
            "e0000002",
            2,
            message={"role": "user", "content": "Why does checkout 500?", "timestamp": ms + 2000},
        ),
        entry(
            "message",
            "a0000001",
            "u0000001",
            3,
            message={
                "role": "assistant",
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": USAGE,
                "stopReason": "toolUse",
                "timestamp": ms + 3000,
                "content": [
                    {"type": "thinking", "thinking": "Look at the logs first."},
                    {"type": "text", "text": "Let me read the log."},
                    {
                        "type": "toolCall",
                        "id": "toolu_01",
                        "name": "read",
                        "arguments": {"path": "logs/app.log"},
                    },
                ],
            },
        ),
        entry(
            "message",
            "t0000001",
            "a0000001",
            4,
            message={
                "role": "toolResult",
                "toolCallId": "toolu_01",
                "toolName": "read",
                "content": [{"type": "text", "text": "KeyError: 'currency'"}],
                "isError": False,
                "timestamp": ms + 4000,
            },
        ),
        entry(
            "message",
            "a0000002",
            "t0000001",
            5,
            message={
                "role": "assistant",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": USAGE,
                "stopReason": "stop",
                "timestamp": ms + 5000,
                "content": [{"type": "text", "text": "The cart has no currency."}],
            },
        ),
        entry("label", "l0000001", "a0000002", 6, targetId="u0000001", label="bug report"),
        # /tree: go back and branch from the first answer.
        entry(
            "branch_summary",
            "b0000001",
            "a0000001",
            7,
            fromId="a0000002",
            summary="Found a KeyError on currency.",
        ),
        entry(
            "message",
            "u0000002",
            "b0000001",
            8,
            message={
                "role": "user",
                "content": [{"type": "text", "text": "Check the payment code."}],
                "timestamp": ms + 8000,
            },
        ),
        entry(
            "message",
            "a0000003",
            "u0000002",
            9,
            message={
                "role": "assistant",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": USAGE,
                "stopReason": "stop",
                "timestamp": ms + 9000,
                "content": [{"type": "text", "text": "payments.py assumes EUR."}],
            },
        ),
        entry(
            "compaction",
            "c0000001",
            "a0000003",
            10,
            summary="Checkout fails on currency.",
            firstKeptEntryId="u0000002",
            tokensBefore=5000,
        ),
        entry("session_info", "s0000001", "c0000001", 11, name="Checkout 500"),
        entry(
            "custom_message",
            "x0000001",
            "s0000001",
            12,
            customType="todo",
            content="Remember to add a test.",
            display=True,
        ),
        entry(
            "message",
            "h0000001",
            "x0000001",
            13,
            message={
                "role": "bashExecution",
                "command": "pytest -q",
                "output": "1 failed",
                "exitCode": 1,
                "cancelled": False,
                "truncated": False,
                "timestamp": ms + 13000,
            },
        ),
    ]


EXPECTED_PARENTS = {
    "u0000001": None,
    "a0000001": "u0000001",
    "t0000001": "a0000001",
    "a0000002": "t0000001",
    "b0000001": "a0000001",
    "u0000002": "b0000001",
    "a0000003": "u0000002",
    "x0000001": "a0000003",
    "h0000001": "x0000001",
}


def write_jsonl(path, entries):
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def test_tree_labels_name_and_compaction(store, tmp_path):
    path = write_jsonl(tmp_path / "2025-01-05T10-00-00-000Z_0b5e.jsonl", pi_session())
    [outcome] = import_sessions(store, load_documents(path, "pi"), match_source=True)
    sid = outcome.session_id
    parents = dict(sql(store, "SELECT id, parent_id FROM messages WHERE session_id = ?", (sid,)))
    assert parents == EXPECTED_PARENTS
    manager = SessionManager(store)
    info = manager.get(sid)
    assert info.name == "Checkout 500"
    assert info.source == "pi:0b5e7c1a-2f2d-4c1e-9a63-5d6f1f0a9e11"
    assert info.metadata["pi"]["cwd"] == "/home/ana/shop"
    assert info.metadata["active_leaf"] == "h0000001"
    session = manager.get_session(sid)
    assert session.get_latest_leaf().id == "h0000001"
    assert session.get_message("u0000001").metadata == {"label": "bug report"}
    [compaction] = session.get_compactions()
    assert (compaction.from_message_id, compaction.to_message_id) == ("u0000001", "b0000001")
    assert compaction.summary == "Checkout fails on currency."


def test_message_shapes(store, tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", pi_session())
    [outcome] = import_sessions(store, load_documents(path, "pi"))
    session = SessionManager(store).get_session(outcome.session_id)
    a1 = session.get_message("a0000001")
    assert a1.parts == [
        {"type": "reasoning", "text": "Look at the logs first."},
        {"type": "text", "text": "Let me read the log."},
        {
            "type": "tool-call",
            "tool_call_id": "toolu_01",
            "tool_name": "read",
            "input": {"path": "logs/app.log"},
        },
    ]
    assert a1.token_usage == {"input": 120, "output": 30, "cost": 0.003}
    assert a1.metadata["pi"]["model"] == "claude-sonnet-4-5"
    assert a1.created_at.isoformat() == "2025-01-05T10:00:03+00:00"
    tool = session.get_message("t0000001")
    assert tool.role == "tool" and tool.tool_results == [
        {
            "type": "tool-result",
            "tool_call_id": "toolu_01",
            "tool_name": "read",
            "output": "KeyError: 'currency'",
        }
    ]
    assert session.get_message("b0000001").text == "Found a KeyError on currency."
    assert session.get_message("x0000001").metadata["pi"]["custom_type"] == "todo"
    bash = session.get_message("h0000001")
    assert "$ pytest -q" in bash.text and bash.metadata["pi"]["exit_code"] == 1


def test_version_1_files_are_one_chain(store, tmp_path):
    v1 = [
        {"type": "session", "id": "old-1", "timestamp": "2024-06-01T09:00:00.000Z", "cwd": "/tmp"},
        {
            "type": "message",
            "timestamp": "2024-06-01T09:00:01.000Z",
            "message": {"role": "user", "content": "hi"},
        },
        {
            "type": "message",
            "timestamp": "2024-06-01T09:00:02.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
        },
    ]
    path = write_jsonl(tmp_path / "v1.jsonl", v1)
    [outcome] = import_sessions(store, load_documents(path, "pi"))
    history = SessionManager(store).get_history(outcome.session_id)
    assert [m.text for m in history] == ["hi", "hello"]
    assert SessionManager(store).get(outcome.session_id).name == "hi"


def test_a_folder_imports_every_session(store, tmp_path):
    folder = tmp_path / "sessions" / "--home-ana-shop--"
    folder.mkdir(parents=True)
    write_jsonl(folder / "a.jsonl", pi_session("aaaa"))
    write_jsonl(folder / "b.jsonl", pi_session("bbbb"))
    outcomes = import_sessions(
        store, load_documents(tmp_path / "sessions", "pi"), match_source=True
    )
    assert sorted(o.source for o in outcomes) == ["pi:aaaa", "pi:bbbb"]
    again = import_sessions(store, load_documents(tmp_path / "sessions", "pi"), match_source=True)
    assert not any(o.imported for o in again)


@pytest.mark.parametrize(
    "breakage, expected",
    [
        (lambda es: es[3].update(parentId="a0000002"), "cycle"),
        (lambda es: es[4].update(parentId="gone"), "missing parent"),
        (lambda es: es.pop(0), "not a Pi session file"),
        (lambda es: es.append(dict(es[5])), "used twice"),
    ],
)
def test_broken_files_are_refused(tmp_path, breakage, expected):
    entries = pi_session()
    breakage(entries)
    path = write_jsonl(tmp_path / "s.jsonl", entries)
    with pytest.raises(ImportFormatError, match=expected) as info:
        load_documents(path, "pi")
    assert str(path) in str(info.value)


def test_truncated_file_names_the_line(tmp_path):
    path = tmp_path / "s.jsonl"
    text = "".join(json.dumps(e) + "\n" for e in pi_session())
    path.write_text(text[: len(text) - 40], encoding="utf-8")
    with pytest.raises(ImportFormatError, match=r"line 15 is not valid JSON.*truncated"):
        load_documents(path, "pi")
