"""API keys never reach a file: a chat in the real app (tool calls, provider errors that
quote the key back, a broken stream, a failed compaction that is logged), then every
file under CHATUI_HOME — the database, its -wal and -shm, the log, the UI state — and
every export is searched for the keys.

The app runs in its own process through the `chatui` entry point and is SIGKILLed at the
end, so the -wal file is still there to be read (a clean exit would fold it away).
"""

from __future__ import annotations

import json
import os
import signal

from chatui import cli
from tests import llm_server as script

from .conftest import FAKE_OPENAI_KEY
from .reliability_helpers import app_process, write_config
from .test_reliability_kill import read_line

# A second key of no known shape: only its value in the environment can give it away.
ODD_KEY = "zq9-RECOGNISABLE-4242-wombat-teapot"
SENT = [
    "Remember that I like tea",
    "Key trouble?",
    "Bad request?",
    "Server down?",
    "Cut off?",
    "All good?",
]


def written_files(home) -> list:
    return sorted(p for p in home.rglob("*") if p.is_file())


def assert_no_key(paths) -> None:
    for path in paths:
        data = path.read_bytes()
        for key in (FAKE_OPENAI_KEY, ODD_KEY):
            # whole, or its distinctive middle (a key cut by a snippet or a line wrap)
            for piece in (key, key[4:-4]):
                assert piece.encode() not in data, f"{piece!r} found in {path}"


def test_no_key_in_any_file_the_app_or_the_commands_write(
    tmp_path, llm_server, fake_key, monkeypatch
):
    monkeypatch.setenv("ACME_API_KEY", ODD_KEY)
    home = tmp_path / "home"
    write_config(
        home,
        model="openai/test-model",
        api_base=llm_server.base_url,
        request_timeout=30,
        max_retries=0,
    )
    both = f"{FAKE_OPENAI_KEY} / {ODD_KEY}"
    llm_server.script(
        script.tool_calls(("set_context", {"label": "memory", "content": "Likes tea."})),
        script.text("Saved."),
        script.error(401, f"Incorrect API key provided: {both}.", code="invalid_api_key"),
        script.error(400, f"Bad request; you sent Authorization: Bearer {both}"),
        script.error(
            500, body=f"<html>upstream: x-api-key={ODD_KEY} Bearer {FAKE_OPENAI_KEY}</html>"
        ),
        script.broken_stream("Half of"),
        script.text("Fine now."),
        script.error(401, f"summary refused for key {both}"),
    )  # the compaction's call
    steps = []
    for text in SENT:
        steps += [["type", text], ["press", "enter"], ["idle"]]
    steps += [["call", "compact_now"], ["pause", 1.0], ["views"], ["say", "done"], ["hold"]]
    child = app_process(home, steps)
    try:
        lines = []
        while (line := read_line(child)) != "done":
            lines.append(line)
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    # The keys were really in play: sent on every request, quoted back in errors.
    assert all(
        h["authorization"] == f"Bearer {FAKE_OPENAI_KEY}" for h in llm_server.request_headers
    )
    assert len(llm_server.requests) == 8
    views = json.loads(lines[-1])
    assert [text for _, text in views][-2:] == ["All good?", "Fine now."]
    files = written_files(home)
    names = {p.relative_to(home).as_posix() for p in files}
    assert {
        "data/chats.db",
        "data/chats.db-wal",
        "data/state.json",
        "data/chatui.log",
        "config/config.toml",
    } <= names, names
    log = (home / "data" / "chatui.log").read_text()
    assert "Compaction" in log or "compact" in log.lower(), log  # the failure was logged
    assert "[redacted]" in log  # …with the quoted keys taken out
    assert_no_key(files)

    db = str(home / "data" / "chats.db")
    exports = tmp_path / "exports"
    for fmt in ("json", "jsonl"):
        assert (
            cli.main(
                ["export", "--all", "--format", fmt, "-o", str(exports / f"all.{fmt}"), "--db", db]
            )
            == 0
        )
    assert (
        cli.main(["export", "--all", "--format", "md", "-o", str(exports / "md"), "--db", db]) == 0
    )
    exported = written_files(exports)
    assert len(exported) == 3
    assert any("Likes tea." in p.read_text() for p in exported)
    assert_no_key(exported)
