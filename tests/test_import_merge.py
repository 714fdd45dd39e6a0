"""Re-imports merge, partial imports, one import path (issue 13 items 2 and 6).

The inputs are the formats' documented shapes (the fixtures of the importer
tests), cut down to "an earlier export" and then imported whole, as a user
who kept chatting elsewhere would.
"""

from __future__ import annotations

import copy
import json
import sqlite3
import zipfile

import pytest

from chatui.cli import main
from chatui.transfer.files import ImportProblem, import_file
from store import SessionManager, Store, StoreSessionProvider
from tests.test_import_chatgpt import EXPECTED_PARENTS, branching_conversation
from tests.test_import_llm_threads import Log, new_layout, text
from tests.test_import_pi import pi_session, write_jsonl


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def tree(db, session_id=None):
    with Store(db) as store:
        manager = SessionManager(store)
        sid = session_id or manager.list()[0].id
        return {m.id: m.parent_id for m in StoreSessionProvider(store, sid).get_tree()}, (
            manager.get(sid).metadata.get("active_leaf")
        )


def count_sessions(db):
    with Store(db) as store:
        return SessionManager(store).count()


def earlier_chatgpt():
    """The same conversation before the edited question (u2b…a3) was asked."""
    conv = branching_conversation(current="a3x")
    for nid in ("u2b", "img", "call", "out", "a3"):
        del conv["mapping"][nid]
    conv["mapping"]["a2"]["children"] = ["u2"]
    return conv


# -- merging ----------------------------------------------------------------------


def test_chatgpt_newer_export_adds_only_new_messages(capsys, tmp_path):
    db = tmp_path / "chats.db"
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([earlier_chatgpt()]))
    assert run(capsys, "--db", db, "import", path, "--from", "chatgpt")[0] == 0
    assert len(tree(db)[0]) == 5
    path.write_text(json.dumps([branching_conversation()]))
    code, out, _ = run(capsys, "--db", db, "import", path, "--from", "chatgpt")
    assert code == 0 and "1 chat updated, 5 messages added" in out and "(+5 messages)" in out
    parents, active = tree(db)
    assert parents == EXPECTED_PARENTS and active == "a3"  # placed in the tree, none doubled
    code, out, _ = run(capsys, "--db", db, "import", path, "--from", "chatgpt", "--json")
    report = json.loads(out)
    assert code == 0 and report["unchanged"] == 1 and report["messages_added"] == 0
    assert len(tree(db)[0]) == 10 and count_sessions(db) == 1
    # --new-ids keeps its meaning: a copy beside the original.
    assert run(capsys, "--db", db, "import", path, "--from", "chatgpt", "--new-ids")[0] == 0
    assert count_sessions(db) == 2


def test_dry_run_reports_the_merge_and_writes_nothing(capsys, tmp_path):
    db = tmp_path / "chats.db"
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([earlier_chatgpt()]))
    run(capsys, "--db", db, "import", path, "--from", "chatgpt")
    path.write_text(json.dumps([branching_conversation()]))
    code, out, _ = run(capsys, "--db", db, "import", path, "--from", "chatgpt", "--dry-run")
    assert code == 0 and "would update" in out and "5 messages added" in out
    assert len(tree(db)[0]) == 5


def test_pi_session_continued_elsewhere(capsys, tmp_path):
    db = tmp_path / "chats.db"
    entries = pi_session()
    cut = next(i for i, e in enumerate(entries) if e.get("id") == "a0000002") + 1
    path = write_jsonl(tmp_path / "s.jsonl", entries[:cut])
    assert run(capsys, "--db", db, "import", path, "--from", "pi")[0] == 0
    before, _ = tree(db)
    write_jsonl(path, entries)
    code, out, _ = run(capsys, "--db", db, "import", path, "--from", "pi")
    after, active = tree(db)
    assert code == 0 and "1 chat updated" in out
    assert set(before) < set(after) and all(after[m] == p for m, p in before.items())
    assert active == "h0000001"
    code, out, _ = run(capsys, "--db", db, "import", path, "--from", "pi")
    assert "already there" in out and tree(db)[0] == after


def test_llm_thread_continued(capsys, tmp_path):
    db = tmp_path / "chats.db"
    path = new_layout(tmp_path / "logs.db")
    assert run(capsys, "--db", db, "import", path, "--from", "llm")[0] == 0
    conn = sqlite3.connect(path)
    log = Log(conn)
    log.message("m9", "m7", "user", text("One more?"))
    log.message("m10", "m9", "assistant", text("No."))
    conn.execute("UPDATE threads SET tip_message_hash = 'm10' WHERE id = 't1'")
    log.turn("u5", "t1", "m9", "m10", "2025-02-01T10:00:00")
    conn.commit()
    conn.close()
    code, out, _ = run(capsys, "--db", db, "import", path, "--from", "llm")
    assert code == 0 and "1 chat updated, 2 messages added, 1 already there" in out
    with Store(db) as store:
        manager = SessionManager(store)
        sid = next(i.id for i in manager.list() if i.name == "README chat")
        assert [m.text for m in manager.get_history(sid)][-2:] == ["One more?", "No."]


def test_chatui_export_imported_again_after_more_chatting(capsys, tmp_path):
    db, other = tmp_path / "a.db", tmp_path / "b.db"
    source = write_jsonl(tmp_path / "s.jsonl", pi_session())
    run(capsys, "--db", db, "import", source, "--from", "pi")
    backup = tmp_path / "backup.json"
    run(capsys, "--db", db, "export", "--all", "-o", backup)
    run(capsys, "--db", other, "import", backup, "--from", "chatui")
    doc = json.loads(backup.read_text())[0]
    last = doc["messages"][-1]["id"]
    doc["messages"].append(
        {"id": "later-1", "parent_id": last, "role": "user",
         "parts": [{"type": "text", "text": "Back again"}]}
    )  # fmt: skip
    backup.write_text(json.dumps([doc]))
    code, out, _ = run(capsys, "--db", other, "import", backup, "--from", "chatui")
    assert code == 0 and "1 chat updated, 1 message added" in out
    parents, _ = tree(other)
    assert parents["later-1"] == last and count_sessions(other) == 1


def test_a_merged_message_brings_its_attachment(capsys, tmp_path):
    """Content for a message added by a re-import comes with it (the chat is already here)."""
    import base64
    import hashlib

    from store import Attachments

    db, other = tmp_path / "a.db", tmp_path / "b.db"
    run(
        capsys,
        "--db",
        db,
        "import",
        write_jsonl(tmp_path / "s.jsonl", pi_session()),
        "--from",
        "pi",
    )
    backup = tmp_path / "backup.json"
    run(capsys, "--db", db, "export", "--all", "-o", backup)
    run(capsys, "--db", other, "import", backup, "--from", "chatui")
    doc = json.loads(backup.read_text())[0]
    data = b"later notes"
    digest = hashlib.sha256(data).hexdigest()
    part = {"type": "attachment", "name": "n.txt", "mime": "text/plain", "size": 11, "hash": digest}
    doc["messages"].append(
        {"id": "later-2", "parent_id": doc["messages"][-1]["id"], "role": "user", "parts": [part]}
    )
    doc["attachments"] = [{"hash": digest, "size": 11, "data": base64.b64encode(data).decode()}]
    backup.write_text(json.dumps([doc]))
    code, out, _ = run(capsys, "--db", other, "import", backup, "--from", "chatui")
    assert code == 0 and "1 message added" in out
    with Store(other) as store:
        assert Attachments(store).content(part) == data


# -- partial imports ----------------------------------------------------------------


def three_conversations():
    good = branching_conversation()
    bad = copy.deepcopy(branching_conversation())
    bad["conversation_id"] = bad["id"] = "conv-bad"
    bad["mapping"]["a2"]["parent"] = "nowhere"
    other = earlier_chatgpt()
    other["conversation_id"] = other["id"] = "conv-2"
    return [good, bad, other]


def test_one_bad_conversation_does_not_reject_the_file(capsys, tmp_path):
    db = tmp_path / "chats.db"
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(three_conversations()))
    code, out, err = run(capsys, "--db", db, "import", path, "--from", "chatgpt")
    assert code == 6 and "2 chats imported" in out and "1 rejected" in out
    assert "rejected:" in err and "conversation 2 (conv-bad)" in err and "missing parent" in err
    assert count_sessions(db) == 2
    code, out, _ = run(capsys, "--db", db, "import", path, "--from", "chatgpt", "--json")
    report = json.loads(out)
    assert code == 6 and len(report["rejected"]) == 1 and report["unchanged"] == 2


def test_strict_is_all_or_nothing(capsys, tmp_path):
    db = tmp_path / "chats.db"
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(three_conversations()))
    code, _, err = run(capsys, "--db", db, "import", path, "--from", "chatgpt", "--strict")
    assert code == 3 and "missing parent" in err
    assert not db.exists() or count_sessions(db) == 0


def test_nothing_readable_is_bad_input(capsys, tmp_path):
    path = tmp_path / "conversations.json"
    bad = three_conversations()[1]
    path.write_text(json.dumps([bad]))
    code, _, err = run(capsys, "--db", tmp_path / "c.db", "import", path, "--from", "chatgpt")
    assert code == 3 and "nothing imported" in err


def test_damaged_zip_says_so(capsys, tmp_path):
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("conversations.json", json.dumps(three_conversations() * 20))
    whole = archive.read_bytes()
    archive.write_bytes(whole[: len(whole) // 2])  # a cut-off download
    db = tmp_path / "chats.db"
    code, _, err = run(capsys, "--db", db, "import", archive, "--from", "chatgpt")
    assert code == 3 and "damaged zip" in err and str(archive) in err
    # A zip whose data is corrupt (CRC) says so too.
    data = bytearray(whole)
    start = whole.index(b"conversations.json") + len("conversations.json") + 10
    data[start : start + 20] = b"\x00" * 20
    archive.write_bytes(bytes(data))
    code, _, err = run(capsys, "--db", db, "import", archive, "--from", "chatgpt")
    assert code == 3 and "damaged zip" in err


def test_a_bad_pi_file_in_a_folder(capsys, tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", pi_session())
    (folder / "b.jsonl").write_text('{"type": "session", "version": 3, "id": "x"}\n{oops\n')
    code, out, err = run(capsys, "--db", tmp_path / "c.db", "import", folder, "--from", "pi")
    assert code == 6 and "1 chat imported" in out and "b.jsonl" in err


def test_a_bad_chatui_document_beside_good_ones(capsys, tmp_path):
    db = tmp_path / "a.db"
    run(
        capsys,
        "--db",
        db,
        "import",
        write_jsonl(tmp_path / "s.jsonl", pi_session()),
        "--from",
        "pi",
    )
    backup = tmp_path / "backup.json"
    run(capsys, "--db", db, "export", "--all", "-o", backup)
    good = json.loads(backup.read_text())[0]
    bad = copy.deepcopy(good)
    bad["session"]["id"] = "other-chat"
    bad["messages"][0]["parent_id"] = bad["messages"][-1]["id"]  # a cycle
    backup.write_text(json.dumps([good, bad]))
    other = tmp_path / "b.db"
    code, out, err = run(capsys, "--db", other, "import", backup, "--from", "chatui")
    assert code == 6 and "cycle" in err and str(backup) in err and count_sessions(other) == 1


def test_the_palette_and_the_cli_share_the_path(store, tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(three_conversations()))
    report = import_file(store, path)  # format guessed, as the palette does
    assert report.partial and report.count("imported") == 2
    assert "1 rejected" in report.summary()
    with pytest.raises(ImportProblem, match="missing parent"):
        import_file(store, path, strict=True)
