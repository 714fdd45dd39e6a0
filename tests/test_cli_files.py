"""Files that are not plain files (issue 25 items 9-11): `export -o` writes through
symlinks, FIFOs and devices and replaces only regular files; a FIFO or a process
substitution imports without hanging; `search -- -word`; a database on a read-only
mount is read (list, search, show, export, db copy)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from chatui.cli import main
from chatui.transfer import importing
from store import SessionManager, Store
from tests.test_import_chatgpt import branching_conversation

CHATUI = str(Path(sys.executable).with_name("chatui"))


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
async def db(tmp_path) -> Path:
    path = tmp_path / "chats.db"
    with Store(path) as store:
        manager = SessionManager(store)
        info = manager.create("Flags", id="ff00aa11")
        await manager.append(
            info.id,
            {"id": "q1", "role": "user", "parts": [{"type": "text", "text": "use -verbose here"}]},
        )
    return path


# -- export -o --------------------------------------------------------------------------


def test_export_follows_a_symlink_and_keeps_it(capsys, db, tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    code, _, err = run(capsys, "export", "ff00", "-o", link, "--db", db)
    assert code == 0, err
    assert link.is_symlink() and link.resolve() == real
    assert json.loads(real.read_text())["session"]["name"] == "Flags"
    assert stat.S_IMODE(real.stat().st_mode) == 0o600


def test_export_writes_into_a_fifo(capsys, db, tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, _, err = run(capsys, "export", "ff00", "-o", fifo, "--db", db)
    reader.join(10)
    assert code == 0, err
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # still the FIFO, not a file put in its place
    assert json.loads(got[0])["session"]["name"] == "Flags"


def test_export_to_a_link_to_stdout_reaches_stdout(db, tmp_path):
    # /dev/stdout itself is such a link (to /proc/self/fd/1); one of the test's own is
    # used so that code which replaces the link cannot replace the machine's /dev/stdout.
    stdout = tmp_path / "stdout"
    stdout.symlink_to("/proc/self/fd/1")
    proc = subprocess.run(
        [CHATUI, "export", "ff00", "-o", str(stdout), "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["session"]["name"] == "Flags"
    assert stdout.is_symlink()


def test_export_replaces_a_regular_file_whole(capsys, db, tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    inode = target.stat().st_ino
    code, _, _ = run(capsys, "export", "ff00", "-o", target, "--db", db)
    assert code == 0
    assert target.stat().st_ino != inode  # a new file renamed over the old one
    assert json.loads(target.read_text())["session"]["name"] == "Flags"


# -- import from pipes ------------------------------------------------------------------


def test_import_from_a_fifo_nobody_writes_is_refused_not_hung(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(importing, "PIPE_WAIT", 0.5)
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    code, _, err = run(capsys, "import", fifo, "--from", "chatgpt", "--db", tmp_path / "x.db")
    assert code == 3
    assert str(fifo) in err and "nothing was written" in err
    assert err.count("\n") == 1


def test_import_from_a_fifo_and_a_process_substitution(tmp_path):
    source = tmp_path / "conversations.json"
    source.write_text(json.dumps([branching_conversation()]))
    target = tmp_path / "chats.db"
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(source.read_bytes()), daemon=True)
    writer.start()
    assert main(["import", str(fifo), "--from", "chatgpt", "--db", str(target)]) == 0
    writer.join(10)
    # bash's `<(cat f)`: a /dev/fd/N pipe, guessed and read once.
    proc = subprocess.run(
        [
            "bash",
            "-c",
            f'"{CHATUI}" import <(cat "{source}") --from chatgpt --new-ids --db "{target}"',
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "1 chat imported" in proc.stdout
    with Store(target) as store:
        assert store.query("SELECT count(*) FROM sessions")[0][0] == 2


# -- search words that start with a dash ------------------------------------------------


def test_search_for_a_word_starting_with_a_dash_after_double_dash(capsys, db):
    code, out, err = run(capsys, "--db", db, "search", "--", "-verbose")
    assert code == 0, err
    assert "verbose" in out
    code, out, _ = run(capsys, "search", "--help")
    assert "search -- -word" in " ".join(out.split())


# -- a database on a read-only mount ----------------------------------------------------


@pytest.fixture
def read_only_mount(tmp_path):
    """A tmpfs mounted here, then remounted read-only (needs root and mount)."""
    where = tmp_path / f"ro-{uuid.uuid4().hex[:6]}"
    where.mkdir()
    mount = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(where)], capture_output=True
    )
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mount.stderr.decode().strip()}")

    def read_only() -> None:
        subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)

    try:
        yield where, read_only
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_database_on_a_read_only_mount_is_read(capsys, db, tmp_path, read_only_mount):
    where, make_read_only = read_only_mount
    ro_db = where / "chats.db"
    ro_db.write_bytes(db.read_bytes())
    make_read_only()
    for argv in (["list"], ["search", "verbose"], ["show", "ff00"], ["export", "ff00"]):
        code, out, err = run(capsys, "--db", ro_db, *argv)
        assert code == 0, (argv, err)
        assert "Flags" in out or "verbose" in out, (argv, out)
    copy = tmp_path / "copy.db"
    code, _, err = run(capsys, "db", "copy", ro_db, copy)
    assert code == 0, err
    with Store(copy) as store:
        assert store.query("SELECT count(*) FROM messages")[0][0] == 1
    # A command that writes says so in one line.
    source = tmp_path / "conversations.json"
    source.write_text(json.dumps([branching_conversation()]))
    code, _, err = run(capsys, "--db", ro_db, "import", source, "--from", "chatgpt")
    assert code != 0 and "Traceback" not in err and err.count("\n") == 1, err
    assert sorted(p.name for p in where.iterdir()) == ["chats.db"]
