"""The `chatui` command line: commands, output, exit codes (run in-process)."""

from __future__ import annotations

import json
import sqlite3
import sys
import types
from pathlib import Path

import pytest

from chatui.cli import main
from chatui.cli.commands import EXIT_CODES
from chatui.core import paths
from store import SessionManager, Store
from tests.test_import_chatgpt import EXPECTED_PARENTS, branching_conversation
from tests.test_import_pi import pi_session, write_jsonl


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def text(mid, role, body):
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": body}]}


@pytest.fixture
async def chats():
    """Two chats in the default database (CHATUI_HOME is per test)."""
    paths.ensure_private_dir(paths.default_db().parent)
    with Store(paths.default_db()) as store:
        manager = SessionManager(store)
        trip = manager.create("Lisbon trip", model="gpt-4o", id="aa11bb22cc33")
        await manager.append(trip.id, text("q1", "user", "Flights to Lisbon?"))
        await manager.append(trip.id, text("a1", "assistant", "TAP flies direct."))
        await manager.append(
            trip.id, text("a2", "assistant", "Ryanair \x1b[31mis cheaper"), parent_id="q1"
        )
        code = manager.create("Rust \x1b]0;owned\x07 lifetimes", id="aa99ff00")
        await manager.append(code.id, text("r1", "user", "Explain lifetimes in Lisbon terms"))
        gone = manager.create("Deleted chat", id="dd00")
        manager.delete(gone.id)
    return {"trip": trip.id, "code": code.id}


def count_sessions(db: Path | None = None) -> int:
    with Store(db or paths.default_db()) as store:
        return store.query("SELECT count(*) FROM sessions")[0][0]


# -- list / search / show ---------------------------------------------------------


async def test_list(capsys, chats):
    code, out, _ = run(capsys, "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "UPDATED", "(UTC)", "MSGS", "MODEL", "STATUS", "NAME"]
    assert "aa11bb22" in out and "Lisbon trip" in out and "gpt-4o" in out
    assert "Deleted chat" not in out
    assert "\x1b" not in out and "\x07" not in out and "\\x1b]0;owned\\x07" in out
    code, out, _ = run(capsys, "list", "--json")
    rows = {r["id"]: r for r in json.loads(out)}
    assert rows[chats["trip"]]["messages"] == 3 and rows[chats["code"]]["messages"] == 1
    assert set(rows) == {chats["trip"], chats["code"]}
    code, out, _ = run(capsys, "list", "--deleted", "--json")
    assert [r["name"] for r in json.loads(out)] == ["Deleted chat"]


async def test_search(capsys, chats):
    code, out, _ = run(capsys, "search", "lisbon")
    assert code == 0
    assert "Lisbon trip" in out and "user" in out and "[Lisbon]" in out
    code, out, _ = run(capsys, "search", "lisbon", "--session", "aa99", "--json")
    hits = json.loads(out)
    assert code == 0 and [h["message_id"] for h in hits] == ["r1"]
    assert hits[0]["session_name"] == "Rust \x1b]0;owned\x07 lifetimes"  # JSON keeps it exact
    assert "\x1b" not in out  # …as an escape, not a raw byte
    code, out, err = run(capsys, "search", "zebra")
    assert code == 1 and out == "" and "No messages match" in err
    code, out, _ = run(capsys, "search", "zebra", "--json")
    assert code == 1 and json.loads(out) == []
    code, _, err = run(capsys, "search", '"unbalanced', "AND", "(")
    assert code == 1  # odd FTS syntax is plain words, never a crash
    assert 'A quoted phrase is not closed: add the closing ". Searched as plain words.' in err
    code, out, err = run(capsys, "search", "lisbon NOT zebra")
    assert code == 0 and "Lisbon trip" in out and "Searched as plain words" not in err


async def test_show_active_branch_and_others(capsys, chats):
    code, out, _ = run(capsys, "show", "aa11")
    assert code == 0
    assert "Ryanair" in out and "TAP" not in out  # a2 is the latest leaf
    assert "Other branches here: `a1`" in out and "\\x1b[31m" in out and "\x1b" not in out
    code, out, _ = run(capsys, "show", "aa11", "--branch", "a1")
    assert "TAP flies direct." in out and "Ryanair" not in out
    code, out, _ = run(capsys, "show", "aa11", "--json")
    data = json.loads(out)
    assert data["leaf"] == "a2" and [m["id"] for m in data["messages"]] == ["q1", "a2"]
    assert data["forks"] == [{"position": 2, "message_id": "a2", "siblings": ["a1", "a2"]}]
    code, out, _ = run(capsys, "show", "aa11", "--tree")
    assert [line.split()[:2] for line in out.splitlines()[1:]] == [
        ["*", "q1"],
        ["├─", "a1"],
        ["└─", "*"],
    ]


async def test_ids_not_found_and_ambiguous(capsys, chats):
    code, _, err = run(capsys, "show", "zz")
    assert code == 1 and "no chat 'zz'" in err
    code, _, err = run(capsys, "show", "aa")
    assert code == 2 and "matches several chats" in err
    code, _, err = run(capsys, "show", "aa11", "--branch", "nope")
    assert code == 1 and "no message 'nope'" in err
    code, out, _ = run(capsys, "show", "dd00")  # deleted chats can still be read
    assert code == 0 and "**Deleted:**" in out
    assert err.count("\n") <= 1


# -- export -----------------------------------------------------------------------------


async def test_export_formats(capsys, chats, tmp_path):
    code, out, _ = run(capsys, "export", "aa11")
    doc = json.loads(out)
    assert code == 0 and doc["format"] == "chatui" and len(doc["messages"]) == 3
    code, out, _ = run(capsys, "export", "--all", "--format", "jsonl")
    entries = [json.loads(line) for line in out.splitlines()]
    assert [e["type"] for e in entries].count("session") == 2
    code, out, _ = run(capsys, "export", "aa11", "--format", "md", "--branch", "a1")
    assert out.startswith("# Lisbon trip") and "TAP flies direct." in out
    target = tmp_path / "out" / "all.json"
    code, _, err = run(capsys, "export", "--all", "-o", target)
    assert code == 0 and "Exported 2 chats" in err
    assert len(json.loads(target.read_text())) == 2
    assert target.stat().st_mode & 0o777 == 0o600
    code, _, _ = run(capsys, "export", "--all", "--format", "md", "-o", tmp_path / "md")
    names = sorted(p.name for p in (tmp_path / "md").iterdir())
    assert len(names) == 2 and all(n.endswith(".md") for n in names)
    assert any("lisbon-trip-aa11bb22" in n for n in names)


async def test_export_errors(capsys, chats, tmp_path):
    assert run(capsys, "export")[0] == 2
    assert run(capsys, "export", "aa11", "--all")[0] == 2
    assert run(capsys, "export", "aa11", "--format", "pdf")[0] == 2
    assert run(capsys, "export", "nothing")[0] == 1
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    code, _, err = run(capsys, "export", "aa11", "-o", blocker / "sub" / "x.json")
    assert code == 5 and "cannot write" in err
    code, _, err = run(capsys, "export", "--all", "--format", "md", "-o", blocker)
    assert code == 5 and "is a file" in err


def test_api_keys_never_reach_exports(capsys, tmp_path, monkeypatch):
    key = "sk-proj-FAKEKEY0123456789abcdefTESTONLY"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("ANTHROPIC_API_KEY", key + "-anthropic")
    source = tmp_path / "conversations.json"
    source.write_text(json.dumps([branching_conversation()]))
    assert run(capsys, "import", source, "--from", "chatgpt")[0] == 0
    for fmt in ("json", "jsonl", "md"):
        code, out, _ = run(capsys, "export", "--all", "--format", fmt)
        assert code == 0 and out and key not in out and "FAKEKEY" not in out
    assert b"FAKEKEY" not in paths.default_db().read_bytes()


# -- import -----------------------------------------------------------------------------


def test_import_chatgpt_then_again(capsys, tmp_path):
    source = tmp_path / "conversations.json"
    source.write_text(json.dumps([branching_conversation()]))
    code, out, _ = run(capsys, "import", source, "--from", "chatgpt")
    assert code == 0 and out.startswith("imported") and "Reversing things (10 messages)" in out
    code, out, _ = run(capsys, "import", source, "--from", "chatgpt", "--json")
    report = json.loads(out)
    assert code == 0 and report["imported"] == 0 and report["skipped"] == 1
    assert report["chats"][0]["reason"].startswith("already imported")
    sid = report["chats"][0]["session_id"]
    code, out, _ = run(capsys, "export", sid)
    parents = {m["id"]: m["parent_id"] for m in json.loads(out)["messages"]}
    assert parents == EXPECTED_PARENTS


def test_import_chatui_round_trip_and_new_ids(capsys, tmp_path):
    pi_file = write_jsonl(tmp_path / "s.jsonl", pi_session())
    assert run(capsys, "import", pi_file, "--from", "pi")[0] == 0
    backup = tmp_path / "backup.json"
    assert run(capsys, "export", "--all", "-o", backup)[0] == 0
    other = tmp_path / "other.db"
    code, out, _ = run(capsys, "import", backup, "--from", "chatui", "--db", other)
    assert code == 0 and "1 chat imported, 9 messages added" in out
    again = tmp_path / "again.json"
    assert run(capsys, "--db", other, "export", "--all", "-o", again)[0] == 0
    assert json.loads(again.read_text()) == json.loads(backup.read_text())
    code, out, _ = run(capsys, "import", backup, "--from", "chatui", "--db", other)
    assert "already there" in out and count_sessions(other) == 1
    code, out, _ = run(capsys, "import", backup, "--from", "chatui", "--db", other, "--new-ids")
    assert code == 0 and count_sessions(other) == 2


def test_dry_run_writes_nothing(capsys, tmp_path):
    source = write_jsonl(tmp_path / "s.jsonl", pi_session())
    code, out, _ = run(capsys, "import", source, "--from", "pi", "--dry-run")
    assert code == 0 and "would import" in out and "dry run" in out
    assert not paths.default_db().exists()  # not even an empty database file
    new = tmp_path / "new.db"
    assert run(capsys, "import", source, "--from", "pi", "--dry-run", "--db", new)[0] == 0
    assert not new.exists()


@pytest.mark.parametrize(
    "make, source, expected",
    [
        (
            lambda p: p.write_text(json.dumps([branching_conversation()])[:500]),
            "chatgpt",
            "truncated",
        ),
        (lambda p: write_jsonl(p, pi_session()), "chatgpt", "use --from pi"),
        (
            lambda p: p.write_text(json.dumps([branching_conversation()])),
            "pi",
            "use --from chatgpt",
        ),
        (
            lambda p: p.write_text(json.dumps([branching_conversation()])),
            "llm",
            "not a SQLite file",
        ),
        (lambda p: write_jsonl(p, pi_session()), "chatui", "use --from pi"),
        (lambda p: p.write_text(""), "chatui", "empty"),
        (lambda p: p.write_bytes(b"\xff\xfe\x00garbage"), "chatgpt", "not UTF-8"),
    ],
)
def test_bad_files_exit_3_and_import_nothing(capsys, tmp_path, make, source, expected):
    path = tmp_path / "input.data"
    make(path)
    code, out, err = run(capsys, "import", path, "--from", source)
    assert code == 3, err
    assert err.startswith("chatui: error: ") and str(path) in err and expected in err
    assert err.count("\n") == 1 and out == ""
    assert count_sessions() == 0


def test_invalid_chatui_document_exits_3(capsys, tmp_path):
    bad = {
        "format": "chatui",
        "version": 1,
        "session": {"id": "x", "name": "x"},
        "messages": [
            {"id": "a", "parent_id": "b", "role": "user", "parts": []},
            {"id": "b", "parent_id": "a", "role": "user", "parts": []},
        ],
    }
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    code, _, err = run(capsys, "import", path, "--from", "chatui")
    assert code == 3 and "cycle" in err and str(path) in err
    assert count_sessions() == 0


def test_missing_file_exits_3(capsys, tmp_path):
    code, _, err = run(capsys, "import", tmp_path / "nope.json", "--from", "chatgpt")
    assert code == 3 and "no such file" in err


# -- database and usage errors -------------------------------------------------------


def test_database_errors_exit_4(capsys, tmp_path):
    not_db = tmp_path / "notes.txt"
    not_db.write_text("hello")
    code, _, err = run(capsys, "list", "--db", not_db)
    assert code == 4 and "not a SQLite database" in err
    code, _, err = run(capsys, "--db", tmp_path / "missing.db", "list")
    assert code == 4 and "no database there" in err
    newer = tmp_path / "newer.db"
    Store(newer).close()
    with sqlite3.connect(newer) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES ('m999_future', 'x')")
    code, _, err = run(capsys, "list", "--db", newer)
    assert code == 4 and "newer version" in err


def test_usage_errors_exit_2(capsys):
    assert run(capsys, "import", "x.json")[0] == 2  # --from is required
    assert run(capsys, "search")[0] == 2
    assert run(capsys, "search", "x", "--limit", "0")[0] == 2
    assert run(capsys, "frobnicate")[0] == 2


def test_help_everywhere(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "exit codes:" in out
    for command in ("ask", "search", "list", "show", "export", "import"):
        code, out, _ = run(capsys, command, "--help")
        assert code == 0 and "example:" in out and "exit codes:" in out
    assert set(EXIT_CODES) == {*range(13), 130}  # 8-12: ask's model failures


def test_no_command_launches_the_app(capsys, monkeypatch, tmp_path):
    calls = []
    app = types.ModuleType("chatui.tui.app")
    app.run = lambda **kwargs: calls.append(kwargs) or 0
    monkeypatch.setitem(sys.modules, "chatui.tui.app", app)
    assert run(capsys, "--db", tmp_path / "x.db", "--model", "demo", "--theme", "light")[0] == 0
    assert calls == [{"db_path": tmp_path / "x.db", "model": "demo", "theme": "light"}]
    calls.clear()
    assert run(capsys)[0] == 0
    assert calls == [{"db_path": None, "model": None, "theme": None}]


def test_the_app_with_its_own_options_reads_them_as_the_parser_does(capsys, monkeypatch):
    """`chatui` with only --db/--model/--theme starts the app without building the full
    parser (every command's options and help: ~12 M instructions of the start-up); any
    other arguments are the parser's, and what both read is the same."""
    from chatui.cli import commands
    from chatui.cli.argv import app_options

    parser = commands.build_parser()
    for argv in (
        [],
        ["--model", "demo"],
        ["--model=demo", "--db", "x.db", "--theme", "light"],
        ["--db=", "--model", "a b"],
        ["--theme", "x", "--model", "demo/y"],
    ):
        options = app_options(argv)
        assert options is not None, argv
        assert vars(parser.parse_args(argv)) == {**options, "command": None}
    for argv in (
        ["--help"],
        ["--version"],
        ["--mod", "demo"],  # an abbreviation: argparse's to accept
        ["--model"],
        ["--model", "-x"],
        ["--model", "a", "--model", "b"],
        ["list"],
        ["--model", "demo", "search", "x"],
        ["a question in one argument"],
        ["--", "x"],
    ):
        assert app_options(argv) is None, argv
    calls = []
    app = types.ModuleType("chatui.tui.app")
    app.run = lambda **kwargs: calls.append(kwargs) or 0
    monkeypatch.setitem(sys.modules, "chatui.tui.app", app)

    def no_parser():
        raise AssertionError("the full parser was built")

    monkeypatch.setattr(commands, "build_parser", no_parser)
    assert run(capsys, "--model", "demo")[0] == 0
    assert calls == [{"db_path": None, "model": "demo", "theme": None}]


async def test_show_names_every_reply_state(capsys):
    """`chatui show` uses the app's words for each reply state (issue 10)."""
    from tests.test_export_markdown import replies_in_every_state

    paths.ensure_private_dir(paths.default_db().parent)
    with Store(paths.default_db()) as store:
        await replies_in_every_state(SessionManager(store))
    code, out, _ = run(capsys, "show", "states0001")
    assert code == 0
    for word, mid in [
        ("cancelled", "stopped"),
        ("cancelled", "stopped-empty"),
        ("error", "failed"),
        ("interrupted", "cut"),
    ]:
        assert any(
            f"Assistant · {word} · " in line and f"`{mid}`" in line for line in out.splitlines()
        )
    assert "Half an ans" in out and "> *error — rate limited (429)*" in out
    code, out, _ = run(capsys, "show", "states0001", "--json")
    states = {m["id"]: m["state"] for m in json.loads(out)["messages"]}
    assert states == {
        "u1": None, "done": "complete", "u2": None, "stopped": "cancelled", "u3": None,
        "stopped-empty": "cancelled", "u4": None, "failed": "error", "u5": None,
        "cut": "interrupted",
    }  # fmt: skip
    code, out, _ = run(capsys, "show", "states0001", "--tree")
    lines = {line.split()[1]: line for line in out.splitlines()[1:]}
    assert "assistant [cancelled]: Half an ans" in lines["stopped"]
    assert "assistant [error]:" in lines["failed"]
    assert "assistant [interrupted]: Cut off mid" in lines["cut"]
    assert "assistant: Finished answer." in lines["done"]
    code, out, _ = run(capsys, "export", "states0001", "--format", "md")
    assert "· cancelled ·" in out and "· interrupted ·" in out and "· error ·" in out


async def test_show_names_attachments(capsys, chats):
    from store import Attachments

    with Store(paths.default_db()) as store:
        notes = Attachments(store).put("notes.txt", "text/plain", b"buy milk\n")
        await SessionManager(store).append(
            chats["code"],
            {"id": "r2", "role": "user", "parts": [text("x", "user", "see")["parts"][0], notes]},
        )
    code, out, _ = run(capsys, "show", "aa99")
    assert code == 0 and "*[attachment: notes.txt · text/plain · 9 B]*" in out
    assert "buy milk" not in out
