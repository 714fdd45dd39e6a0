"""Attachments in the store (issue 21): content stored once by its sha256, named by
message parts, checked before anything is written. Runs on both engines."""

from __future__ import annotations

import base64
import hashlib
import json
import os

import pytest

from store import (
    AttachmentError,
    Attachments,
    Message,
    SessionManager,
    Store,
    TransferError,
    UnknownAttachmentError,
    attachment_kind,
    document_entries,
    documents_from_entries,
    export_session,
    guess_mime,
    import_sessions,
    text_part,
)
from store.schema import AttachmentRow, MessageRow

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40  # a header, then anything


def _rows(store) -> int:
    return len(store.rows(AttachmentRow.select(AttachmentRow.hash)))


async def test_a_part_names_the_content_and_reads_it_back(store):
    attachments = Attachments(store)
    part = attachments.put("photo.png", "image/png", PNG)
    assert part == {
        "type": "attachment",
        "name": "photo.png",
        "mime": "image/png",
        "size": len(PNG),
        "hash": hashlib.sha256(PNG).hexdigest(),
    }
    assert attachments.content(part) == PNG and isinstance(attachments.content(part), bytes)
    info = attachments.info(part["hash"])
    assert info is not None and info.size == len(PNG)
    session = SessionManager(store).get_session(SessionManager(store).create("pics").id)
    await session.append_message(Message("u1", "user", [text_part("look"), part]))
    stored = session.get_message("u1")
    assert stored is not None and stored.attachments == [part]


async def test_same_content_on_five_branches_and_a_fork_is_stored_once(store):
    """The issue's promise: a branch or a fork copies a reference, never the bytes."""
    manager = SessionManager(store)
    attachments = Attachments(store)
    chat = manager.create("branches")
    session = manager.get_session(chat.id)
    await session.append_message(Message("root", "user", [text_part("start")]))
    await session.append_message(Message("a0", "assistant", [text_part("ok")]), "root")
    for n in range(5):  # five sibling questions, each attaching the same file again
        part = attachments.put(f"copy-{n}.png", "image/png", PNG)
        await session.append_message(Message(f"q{n}", "user", [part]), "a0")
    fork = await manager.fork(chat.id, "q3", "forked")
    forked = manager.get_history(fork.id)[-1]
    assert forked.attachments[0]["name"] == "copy-3.png"
    assert attachments.content(forked.attachments[0]) == PNG
    assert _rows(store) == 1
    assert attachments.totals() == (1, len(PNG))
    # No message row holds the content: each holds its ~150-byte part.
    longest = max(len(c) for (c,) in store.rows(MessageRow.select(MessageRow.content)))
    assert longest < 400 < len(PNG)


def test_another_name_or_chat_for_the_same_bytes_writes_nothing_new(store):
    attachments = Attachments(store)
    first = attachments.put("a.txt", "text/plain", b"same words")
    second = attachments.put("b.md", "text/markdown", b"same words")
    assert first["hash"] == second["hash"] and (first["name"], second["name"]) == ("a.txt", "b.md")
    assert _rows(store) == 1
    attachments.put("c.txt", "text/plain", b"other words")
    assert attachments.totals() == (2, len(b"same words") + len(b"other words"))


def test_a_file_is_read_and_its_type_guessed(store, tmp_path):
    attachments = Attachments(store)
    (tmp_path / "notes.md").write_text("# Notes\nbuy milk\n")
    (tmp_path / "unnamed").write_bytes(PNG)
    (tmp_path / "LICENSE").write_text("MIT, of course")
    assert attachments.put_file(tmp_path / "notes.md")["mime"] in (
        "text/markdown",
        "text/x-markdown",
    )
    assert attachments.put_file(tmp_path / "unnamed")["mime"] == "image/png"
    licence = attachments.put_file(tmp_path / "LICENSE")
    assert licence["mime"] == "text/plain" and licence["name"] == "LICENSE"
    assert attachment_kind("text/x-python") == attachment_kind("application/json") == "text"
    assert attachment_kind("image/webp") == "image"
    assert attachment_kind("application/pdf") == attachment_kind("image/bmp") == "other"
    assert guess_mime("blob", b"\x00\x01\x02") == "application/octet-stream"


# -- bad input: a clear error naming the file, and nothing stored --------------------


def _refused(attachments: Attachments, call, *words: str) -> str:
    with pytest.raises(AttachmentError) as caught:
        call()
    message = str(caught.value)
    for word in words:
        assert word in message, message
    assert attachments.totals() == (0, 0)
    return message


def test_a_missing_file_a_folder_and_an_unreadable_file_are_refused(store, tmp_path):
    attachments = Attachments(store)
    _refused(
        attachments, lambda: attachments.put_file(tmp_path / "gone.txt"), "gone.txt", "no such file"
    )
    _refused(attachments, lambda: attachments.put_file(tmp_path), "is a folder")
    # Reading /proc/self/mem at offset 0 fails with EIO, as a dying disk would, even for root.
    _refused(attachments, lambda: attachments.put_file("/proc/self/mem"), "cannot read it")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_a_file_without_read_permission_is_refused(store, tmp_path):
    attachments = Attachments(store)
    secret = tmp_path / "secret.txt"
    secret.write_text("no")
    secret.chmod(0)
    _refused(attachments, lambda: attachments.put_file(secret), "secret.txt", "permission denied")


def test_an_image_with_a_damaged_header_is_refused(store, tmp_path):
    attachments = Attachments(store)
    broken = tmp_path / "holiday.png"
    broken.write_bytes(b"\x89PNX\r\n\x1a\n" + b"\x00" * 100)  # one byte off
    _refused(attachments, lambda: attachments.put_file(broken), "holiday.png", "not a PNG image")
    jpeg = tmp_path / "cat.jpg"
    jpeg.write_bytes(PNG)  # a PNG under a JPEG name
    _refused(attachments, lambda: attachments.put_file(jpeg), "cat.jpg", "not a JPEG image")
    _refused(attachments, lambda: attachments.put("e.webp", "image/webp", b"RIFF0000WEBX"), "WebP")
    _refused(attachments, lambda: attachments.put("empty.gif", "image/gif", b""), "not a GIF")


def test_content_over_the_limit_is_refused_before_it_is_read(store, tmp_path):
    attachments = Attachments(store, max_bytes=1000)
    big = tmp_path / "big.txt"
    big.write_text("x" * 1001)
    message = _refused(attachments, lambda: attachments.put_file(big), "big.txt", "limit")
    assert "1001 B" in message and "1000 B" in message
    _refused(attachments, lambda: attachments.put("b.bin", "text/plain", b"y" * 5000), "4.9 KB")
    assert attachments.put("ok.txt", "text/plain", b"z" * 1000)["size"] == 1000  # the limit itself


def test_bad_names_types_and_content_are_refused(store):
    attachments = Attachments(store)
    _refused(attachments, lambda: attachments.put("", "text/plain", b"x"), "needs a name")
    _refused(attachments, lambda: attachments.put("\x1b[2J", "text/plain", b"x"), "needs a name")
    _refused(attachments, lambda: attachments.put("a", "plain", b"x"), "not a media type")
    _refused(attachments, lambda: attachments.put("a", "text/plain\n", b"x"), "not a media type")
    _refused(attachments, lambda: attachments.put("a", "text/plain", "str"), "must be bytes")
    _refused(attachments, lambda: attachments.put("l.txt", "text/plain", b"caf\xe9"), "not UTF-8")
    with pytest.raises(ValueError):
        Attachments(store, max_bytes=0)


def test_unknown_content_is_a_clear_error(store):
    attachments = Attachments(store)
    with pytest.raises(UnknownAttachmentError, match="no attachment content"):
        attachments.get("0" * 64)
    with pytest.raises(UnknownAttachmentError):
        attachments.content({"type": "attachment", "hash": "'; DROP TABLE attachments; --"})
    assert attachments.info("nope") is None and attachments.stored(["nope", "0" * 64]) == set()


async def test_prune_keeps_what_a_message_names(store):
    manager = SessionManager(store)
    attachments = Attachments(store)
    kept, dropped = manager.create("kept"), manager.create("dropped")
    shared = attachments.put("shared.txt", "text/plain", b"both chats")
    only = attachments.put("only.txt", "text/plain", b"one chat")
    await manager.get_session(kept.id).append_message(Message("k", "user", [shared]))
    await manager.get_session(dropped.id).append_message(Message("d", "user", [shared, only]))
    manager.purge(dropped.id)
    assert attachments.prune() == 1
    assert attachments.stored([shared["hash"], only["hash"]]) == {shared["hash"]}


# -- export and import keep the content (both engines) ----------------------------


async def _chat_with_attachments(store) -> tuple[str, list[dict]]:
    manager = SessionManager(store)
    attachments = Attachments(store)
    chat = manager.create("with files")
    session = manager.get_session(chat.id)
    image = attachments.put("photo.png", "image/png", PNG)
    notes = attachments.put("notes.txt", "text/plain", "naïve ☕ notes\n".encode())
    await session.append_message(Message("q1", "user", [text_part("see"), image, notes]))
    await session.append_message(Message("a1", "assistant", [text_part("seen")]), "q1")
    await session.append_message(Message("q2", "user", [image]), "a1")  # the same image again
    return chat.id, [image, notes]


def _as_json(doc) -> str:
    return json.dumps(doc, sort_keys=True, ensure_ascii=False)


async def test_export_import_export_is_exact_with_attachments(store, tmp_path):
    sid, (image, notes) = await _chat_with_attachments(store)
    doc = json.loads(json.dumps(export_session(store, sid)))  # through real JSON
    assert [a["hash"] for a in doc["attachments"]] == sorted([image["hash"], notes["hash"]])
    assert base64.b64decode(doc["attachments"][0]["data"]) in (PNG, "naïve ☕ notes\n".encode())
    # Back into the same engine, after the chat and its content are gone.
    SessionManager(store).purge(sid)
    assert Attachments(store).prune() == 2
    [outcome] = import_sessions(store, doc)
    assert outcome.imported
    assert _as_json(export_session(store, sid)) == _as_json(doc)
    assert Attachments(store).content(image) == PNG
    # JSONL carries the same, content before the messages that name it.
    entries = [json.loads(json.dumps(e)) for e in document_entries(doc)]
    kinds = [e["type"] for e in entries]
    assert kinds[:3] == ["session", "attachment", "attachment"] and kinds.count("attachment") == 2
    [again] = documents_from_entries(entries)
    with Store(tmp_path / "other.db") as other:  # and into a fresh SQLite file
        [copied] = import_sessions(other, again)
        assert copied.imported and _as_json(export_session(other, sid)) == _as_json(doc)
        assert Attachments(other).totals() == (2, len(PNG) + notes["size"])
        assert Attachments(other).content(notes) == "naïve ☕ notes\n".encode()


async def test_importing_content_already_stored_writes_no_second_copy(store):
    sid, _ = await _chat_with_attachments(store)
    doc = export_session(store, sid)
    [copy] = import_sessions(store, doc, new_ids=True)
    assert copy.imported and Attachments(store).totals()[0] == 2


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["attachments"][0].update(data="not base64!"), "not base64"),
        (
            lambda d: d["attachments"][0].update(data=base64.b64encode(b"tampered").decode()),
            "does not match its hash",
        ),
        (lambda d: d["attachments"][0].update(size=1), "'size' is 1"),
        (lambda d: d.pop("attachments"), "neither in the file nor in this database"),
        (lambda d: d["messages"][0]["parts"][1].update(hash="xyz"), "64 lowercase hex"),
        (lambda d: d.update(attachments={"a": 1}), "must be a list"),
    ],
)
async def test_a_damaged_attachment_in_a_file_imports_nothing(store, tmp_path, change, expected):
    sid, _ = await _chat_with_attachments(store)
    doc = json.loads(json.dumps(export_session(store, sid)))
    change(doc)
    with Store(tmp_path / "fresh.db") as fresh:
        with pytest.raises(TransferError, match=expected):
            import_sessions(fresh, doc)
        assert fresh.query("SELECT count(*) FROM sessions")[0][0] == 0
        assert Attachments(fresh).totals() == (0, 0)
