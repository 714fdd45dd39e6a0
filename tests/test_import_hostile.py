"""Hostile input, cause by cause (issue 25 items 3, 4, 7 and 8): each is one line on
stderr and a non-zero exit, never a traceback, and nothing written; what the store
accepts, every reader shows; a message over 1 MiB is imported whole; a zip bomb is
refused by its size and ratio before it is unpacked."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import pytest

from store import DatabaseFileError, SessionManager, Store, StoreSessionProvider, document_entries
from tests.test_cli_files import CHATUI
from tests.test_fuzz_import import CHATUI_DOC, cli_run
from tests.test_import_chatgpt import branching_conversation
from tests.test_import_pi import pi_session


def chatui_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "in.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


def with_message(**changes) -> dict:
    doc = json.loads(json.dumps(CHATUI_DOC))
    doc["messages"][1].update(changes)
    return doc


def refused(tmp_path: Path, path: Path, fmt: str, *words: str) -> str:
    db = tmp_path / "x.db"
    code, _, err = cli_run("import", path, "--from", fmt, "--db", db)
    assert code == 3, err
    assert err.count("\n") == 1 and err.startswith("chatui: error: "), err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err
    if db.exists():
        with Store(db) as store:
            assert store.query("SELECT count(*) FROM messages")[0][0] == 0
    return err


# -- the 13 causes of issue 25 item 4 ---------------------------------------------------


def test_json_nested_past_a_thousand_levels(tmp_path):
    doc = json.dumps(with_message(metadata={"deep": "DEEP"}))
    path = chatui_file(tmp_path, doc.replace('"DEEP"', "[" * 5000 + "]" * 5000))
    refused(tmp_path, path, "chatui", "nested too deeply")


def test_an_integer_of_over_4300_digits(tmp_path):
    doc = json.dumps(with_message(metadata={"n": "HUGE"}))
    refused(tmp_path, chatui_file(tmp_path, doc.replace('"HUGE"', "9" * 5000)), "chatui")


def test_a_lone_surrogate(tmp_path):
    doc = json.dumps(with_message(parts=[{"type": "text", "text": "a\ud800b"}]))
    refused(tmp_path, chatui_file(tmp_path, doc), "chatui", "surrogate")


@pytest.mark.parametrize("where", ["cwd", "label"])
def test_a_lone_surrogate_in_what_becomes_session_metadata(tmp_path, where):
    """Found by the fuzz soak: a Pi session's `cwd`, or a label's target, with a lone
    surrogate went into the chat's metadata (stored as an ASCII escape), and `export`
    then died with a UnicodeEncodeError traceback writing it."""
    entries = pi_session()
    if where == "cwd":
        entries[0]["cwd"] = "/home/\ud800"
    else:
        entries.append({"type": "label", "id": "l1", "parentId": entries[-1]["id"],
                        "targetId": "gone\ud800", "label": "kept"})  # fmt: skip
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in entries))
    refused(tmp_path, path, "pi", "surrogate")


def test_the_store_refuses_session_metadata_it_could_not_write_out():
    with Store(":memory:") as store:
        with pytest.raises(ValueError, match="session metadata holds a lone surrogate"):
            SessionManager(store).create("x", metadata={"cwd": "\ud800"})


def test_a_time_that_has_no_utc_form(tmp_path):
    doc = json.dumps(with_message(created_at="0001-01-01T00:00:00+05:00"))
    refused(tmp_path, chatui_file(tmp_path, doc), "chatui", "created_at")


def test_token_counts_of_2_to_the_64(tmp_path):
    doc = json.dumps(with_message(token_usage={"input": 2**64, "output": 1}))
    refused(tmp_path, chatui_file(tmp_path, doc), "chatui", "2^63-1")
    session = json.loads(json.dumps(CHATUI_DOC))
    session["session"]["input_tokens"] = 2**64
    refused(tmp_path, chatui_file(tmp_path, json.dumps(session)), "chatui", "input_tokens")


def test_two_senders_one_of_them_empty(tmp_path):
    """Found by the fuzz soak: the table's CHECK counts "" as a sender, the check on
    the way in did not; the import died with an IntegrityError traceback."""
    doc = json.dumps(with_message(from_user_id="someone", from_agent_id=""))
    refused(tmp_path, chatui_file(tmp_path, doc), "chatui", "one sender")


@pytest.mark.parametrize("first", [False, True])
def test_a_jsonl_entry_type_with_a_newline(tmp_path, first):
    """Found by the fuzz soak: an entry's `type` was put in the error as it was, so
    "\n" made the one-line refusal two lines."""
    entries = list(document_entries(CHATUI_DOC))
    entries[0 if first else 1]["type"] = "\n\x1b[2J"
    if not first:
        entries[1]["session_id"] = "another"
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in entries))
    err = refused(tmp_path, path, "chatui", "'\\n\\x1b[2J'")
    assert "\x1b" not in err


def test_metadata_as_a_list(tmp_path):
    refused(tmp_path, chatui_file(tmp_path, json.dumps(with_message(metadata=[1]))), "chatui")


def test_a_pi_header_with_a_string_version(tmp_path):
    entries = pi_session()
    entries[0]["version"] = "3"
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in entries))
    refused(tmp_path, path, "pi", "version")


@pytest.mark.parametrize("trick", ["encrypted", "unknown method"])
def test_an_encrypted_or_unknown_method_zip_entry(tmp_path, trick):
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", json.dumps([branching_conversation()]))
    raw = bytearray(path.read_bytes())
    central = raw.find(b"PK\x01\x02")
    if trick == "encrypted":
        raw[6] |= 1
        raw[central + 8] |= 1
    else:
        raw[8:10] = raw[central + 10 : central + 12] = (99).to_bytes(2, "little")
    path.write_bytes(bytes(raw))
    refused(tmp_path, path, "chatgpt", "zip")


def test_nan_cost_is_bad_input_not_a_database_error(tmp_path):
    doc = json.loads(json.dumps(CHATUI_DOC))
    doc["session"]["cost"] = "NAN"
    refused(tmp_path, chatui_file(tmp_path, json.dumps(doc).replace('"NAN"', "NaN")), "chatui")


def test_a_postgresql_url_with_port_99999(tmp_path):
    code, _, err = cli_run("--db", "postgresql://me:pw@127.0.0.1:99999/x", "list")
    assert code == 4 and err.count("\n") == 1 and "Port out of range" in err, err
    assert "pw" not in err
    with pytest.raises(DatabaseFileError):
        Store("postgresql://me@127.0.0.1:99999/x")


def test_show_with_an_id_that_is_not_utf8(tmp_path):
    db = tmp_path / "x.db"
    Store(db).close()
    proc = subprocess.run([CHATUI, "--db", str(db), "show", b"\xff\xfe"], capture_output=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count(b"\n") == 1 and b"not UTF-8" in proc.stderr, proc.stderr


@pytest.fixture
def tiny_disk(tmp_path):
    where = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    where.mkdir()
    mount = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(where)], capture_output=True
    )
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mount.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_full_disk_during_an_import(tmp_path, tiny_disk):
    conversations = [branching_conversation() for _ in range(1)]
    big = json.loads(json.dumps(conversations[0]))
    for node in big["mapping"].values():
        if node.get("message"):
            node["message"]["content"]["parts"] = ["lorem ipsum " * 20_000]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([big]))
    db = tiny_disk / "chats.db"
    code, _, err = cli_run("import", path, "--from", "chatgpt", "--db", db)
    assert code == 4, err
    assert err.count("\n") == 1 and "full" in err and "Traceback" not in err, err


# -- item 3: what the store accepts, every reader shows ---------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        {"parts": [{"type": "text", "text": 42}]},
        {"parts": [{"text": "no type"}]},
        {"parts": "text"},
        {"token_usage": "12 tokens"},
        {"token_usage": {"input": -1}},
        {"token_usage": {"cost": float("nan")}},
        {"metadata": [1]},
    ],
)
def test_the_store_refuses_what_its_readers_cannot_show(bad):
    with Store(":memory:") as store:
        sid = SessionManager(store).create("x").id
        provider = StoreSessionProvider(store, sid)
        with pytest.raises(ValueError):
            provider.append_message({"id": "m", "role": "user", "parts": [], **bad})
        assert provider.get_tree() == []


def test_rows_written_before_the_checks_are_still_shown(tmp_path):
    """A database that holds a number as a text part's text (written by an older
    chatui) opens in `show`, `show --tree` and the Markdown export."""
    db = tmp_path / "old.db"
    with Store(db) as store:
        sid = SessionManager(store).create("Old", id="0ld0").id
        StoreSessionProvider(store, sid).append_message(
            {"id": "m", "role": "user", "parts": [{"type": "text", "text": "fine"}]}
        )
        content = json.dumps({"id": "m", "role": "user", "parts": [{"type": "text", "text": 42}]})
        store.query("UPDATE messages SET content = ?, token_usage = ?", (content, '"str"'))
    for extra in ([], ["--tree"], ["--json"]):
        code, _, err = cli_run("--db", db, "show", "0ld0", *extra)
        assert code == 0, err
    code, _, err = cli_run("--db", db, "export", "0ld0", "--format", "md")
    assert code == 0, err


# -- item 7: a message over 1 MiB is imported whole -------------------------------------


def test_a_message_over_one_mib_is_imported_whole_and_found(tmp_path):
    words = " ".join(f"word{i}" for i in range(300_000)) + " finalzebra"
    assert len(words.encode()) > 3 * 1024**2
    path = chatui_file(tmp_path, json.dumps(with_message(parts=[{"type": "text", "text": words}])))
    db = tmp_path / "x.db"
    code, out, err = cli_run("import", path, "--from", "chatui", "--db", db)
    assert code == 0, err
    with Store(db) as store:
        (message,) = [m for m in StoreSessionProvider(store, "f0f0f0f0").get_tree() if m.id == "a1"]
        assert message.text == words and "shrunk" not in message.metadata
    code, out, _ = cli_run("--db", db, "search", "finalzebra")
    assert code == 0 and "finalzebra" in out


# -- item 8: zip bombs ------------------------------------------------------------------


def test_a_zip_bomb_is_refused_before_it_is_unpacked(tmp_path):
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("conversations.json", "w", force_zip64=True) as fh:
            fh.write(b"[")
            for _ in range(300):
                fh.write(b" " * 1024**2)
            fh.write(b"]")
    assert path.stat().st_size < 1024**2
    script = (
        "import resource, sys; from chatui import cli;"
        "resource.setrlimit(resource.RLIMIT_AS, (1024**3, 1024**3));"
        f"sys.exit(cli.main(['import', {str(path)!r}, '--from', 'chatgpt', "
        f"'--db', {str(tmp_path / 'x.db')!r}]))"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 3, proc.stderr
    assert "zip bomb" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
