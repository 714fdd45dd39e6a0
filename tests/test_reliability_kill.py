"""The real app, killed with SIGKILL mid-reply, loses nothing that was flushed.

test_engine_kill.py kills a bare `ChatEngine`; this kills the whole app started through
the `chatui` entry point (config file, store, engine, LiteLLM, Textual — see
tests/reliability_helpers.py) while a slow stream from the scripted server is on screen,
then checks the file from outside and opens it again in a second app.
"""

from __future__ import annotations

import json
import os
import signal
import time

from store import SessionManager, Store
from store.message_search import index_body
from store.storage import row_to_message
from tests import llm_server as script

from .reliability_helpers import app_process, run_app, write_config

# Varied words: LiteLLM stops a stream that repeats one chunk 100 times in a row.
STORY = "once upon a time " * 500


def read_line(child, seconds: float = 60) -> str:
    """The child's next stdout line (its stderr when it died instead)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = child.stdout.readline()
        if line:
            return line.strip()
        if child.poll() is not None:
            raise AssertionError(f"the app exited ({child.returncode}):\n{child.stderr.read()}")
    raise AssertionError("no output from the app")


def partial_reply(db) -> str:
    with Store(db) as reader:  # another process's view of the file
        rows = reader.query("SELECT content FROM messages WHERE role = 'assistant'")
    parts = json.loads(rows[0][0])["parts"] if rows else []
    return parts[0]["text"] if parts else ""


def fts_matches_messages(store: Store) -> None:
    """Every message's search row holds exactly its text (not just a row per message).

    Index rowids are (session number << 32) + seq (store/message_search.py).
    """
    rows = store.query(
        "SELECT m.seq, m.id, m.parent_id, m.role, m.content, m.created_at, "
        "f.body FROM messages m "
        "JOIN search_scopes s ON s.session_id = m.session_id "
        "JOIN messages_fts f ON f.rowid = (s.n << 32) + m.seq"
    )
    assert len(rows) == store.query("SELECT count(*) FROM messages")[0][0]
    for row in rows:
        message = row_to_message(row[:6])
        assert row[6] == index_body(message), message.id


def tree_is_intact(store: Store, session_id: str) -> None:
    rows = store.query("SELECT id, parent_id FROM messages WHERE session_id = ?", (session_id,))
    ids = {r[0] for r in rows}
    assert len(ids) == len(rows)  # no duplicates
    assert all(parent is None or parent in ids for _, parent in rows)  # no orphans


def test_sigkill_mid_reply_keeps_message_and_partial_reply(tmp_path, llm_server, fake_key):
    home = tmp_path / "home"
    db = home / "data" / "chats.db"
    write_config(home, model="openai/test-model", api_base=llm_server.base_url, request_timeout=30)
    llm_server.script(script.text(STORY, delay=0.01))
    child = app_process(
        home,
        [
            ["type", "tell me a long story"],
            ["press", "enter"],
            ["wait_text", "once upon a time once"],
            ["say", "streaming"],
            ["hold"],
        ],
    )
    try:
        assert read_line(child) == "streaming"
        deadline = time.monotonic() + 30
        flushed = ""
        while time.monotonic() < deadline and len(flushed) < 100:
            time.sleep(0.05)
            flushed = partial_reply(db)
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert child.returncode == -signal.SIGKILL
    assert len(flushed) >= 100

    with Store(db) as store:
        assert store.integrity_check() == []
        fts_matches_messages(store)
        manager = SessionManager(store)
        (info,) = manager.list()
        tree_is_intact(store, info.id)
        history = manager.get_history(info.id)
        assert [m.role for m in history] == ["user", "assistant"]
        user, reply = history
        assert user.text == "tell me a long story"
        assert reply.parent_id == user.id
        assert reply.metadata["incomplete"] is True and reply.metadata["status"] == "streaming"
        assert len(reply.text) >= len(flushed)  # at least what we saw flushed, maybe more
        assert STORY.startswith(reply.text) and len(reply.text) < len(STORY)
        assert [h.id for h in manager.search("story")] == [user.id]
        assert [h.id for h in manager.search("upon")] == [reply.id]
        assert manager.get(info.id).status == "active"  # what the crash left…
        kept = reply.text

    # …and the next start opens the chat on it, says it was cut short, and carries on.
    llm_server.script(script.text("The end."))
    code, out, err = run_app(
        home,
        [
            ["wait_text", "once upon"],
            ["views"],
            ["type", "go on"],
            ["press", "enter"],
            ["idle"],
            ["views"],
            ["quit"],
        ],
    )
    assert code == 0, err
    before, after = (json.loads(line) for line in out if line.startswith("["))
    assert [text for _, text in before] == ["tell me a long story", kept.strip()]
    assert "interrupted" in before[1][0]
    assert [text for _, text in after][-2:] == ["go on", "The end."]
    sent = llm_server.last["messages"]
    assert sent[-2] == {"role": "assistant", "content": kept}  # the model sees the partial
    with Store(db) as store:
        assert store.integrity_check() == []
        fts_matches_messages(store)
        manager = SessionManager(store)
        (info,) = manager.list()
        assert manager.get_message_count(info.id) == 4
        assert manager.get(info.id).status == "idle"
        tree_is_intact(store, info.id)
