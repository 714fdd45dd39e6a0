"""Damaged, foreign or newer files: one clear line naming the file, a non-zero exit, and
not one byte changed.

Everything runs the real `chatui` console script in a separate process with its own
CHATUI_HOME, the way a user meets these files.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from store import Store

CHATUI = Path(sys.executable).parent / "chatui"
pytestmark = pytest.mark.skipif(not CHATUI.exists(), reason="the chatui script is not installed")


def chatui(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "CHATUI_HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TERM": "dumb",
        "LANG": "C.UTF-8",
    }
    return subprocess.run(
        [str(CHATUI), *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def fingerprint(folder: Path) -> dict[str, tuple[str, int, int]]:
    """Every file under `folder`: content hash, mtime and mode (to prove nothing changed)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            stat = path.stat()
            found[str(path.relative_to(folder))] = (
                hashlib.sha256(path.read_bytes()).hexdigest(),
                stat.st_mtime_ns,
                stat.st_mode,
            )
    return found


def one_error_line(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    line = lines[0]
    assert line.startswith("chatui:"), line
    assert "Traceback" not in done.stderr
    for needle in needles:
        assert needle in line, (needle, line)
    return line


# -- database files ---------------------------------------------------------------------


def text_file(path: Path) -> None:
    path.write_text("my shopping list\n- eggs\n- coffee\n")


def corrupt_file(path: Path) -> None:
    Store(path).close()
    data = path.read_bytes()
    # A real SQLite header, then garbage: what a half-copied file or a bad disk leaves.
    path.write_bytes(data[:100] + bytes(range(256)) * ((len(data) - 100) // 256 + 1))


def foreign_file(path: Path) -> None:
    """Another program's SQLite database (rollback journal, its own tables)."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE bookmarks (url TEXT, title TEXT)")
        conn.execute("INSERT INTO bookmarks VALUES ('https://example.org', 'Example')")
    conn.close()


def foreign_wal_file(path: Path) -> None:
    """Another program's database that happens to use WAL too."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=wal")
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.commit()
    conn.close()


def newer_file(path: Path) -> None:
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_migrations VALUES ('m999_from_the_future', 'x')")
    conn.commit()
    conn.close()


BAD_DATABASES = {
    "text": (text_file, "not a SQLite database"),
    "corrupt": (corrupt_file, "malformed"),
    "foreign": (foreign_file, "not a chatui database"),
    "foreign-wal": (foreign_wal_file, "not a chatui database"),
    "newer": (newer_file, "newer version"),
}


@pytest.fixture(params=sorted(BAD_DATABASES))
def bad_db(request, tmp_path):
    """(CHATUI_HOME, the bad default database, expected words)."""
    home = tmp_path / "home"
    db = home / "data" / "chats.db"
    db.parent.mkdir(parents=True, mode=0o700)
    make, words = BAD_DATABASES[request.param]
    make(db)
    return home, db, words


def test_app_refuses_a_bad_database_and_changes_nothing(bad_db):
    home, db, words = bad_db
    before = fingerprint(home)
    done = chatui(home)
    assert done.returncode != 0
    one_error_line(done, str(db), words)
    assert fingerprint(home) == before  # no byte, no mtime, no -wal/-shm, no log file


@pytest.mark.parametrize(
    "command",
    [
        ["list"],
        ["search", "eggs"],
        ["show", "abc"],
        ["export", "--all"],
        ["export", "--all", "--format", "md"],
    ],
)
def test_commands_refuse_a_bad_database_and_change_nothing(bad_db, command):
    home, db, words = bad_db
    before = fingerprint(home)
    done = chatui(home, *command, "--db", str(db))
    assert done.returncode == 4, done.stderr
    one_error_line(done, str(db), words)
    assert done.stdout == ""
    assert fingerprint(home) == before


def test_import_into_a_bad_database_imports_nothing(bad_db, tmp_path):
    home, db, words = bad_db
    source = tmp_path / "backup.json"
    good = tmp_path / "good.db"
    with Store(good) as store:
        from store import SessionManager, export_session

        manager = SessionManager(store)
        info = manager.create("Kept")
        import asyncio

        asyncio.run(
            manager.append(
                info.id, {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
            )
        )
        import json

        source.write_text(json.dumps(export_session(store, info.id)))
    before = fingerprint(home)
    done = chatui(home, "import", str(source), "--from", "chatui", "--db", str(db))
    assert done.returncode == 4, done.stderr
    one_error_line(done, str(db), words)
    assert fingerprint(home) == before


def test_database_path_that_is_a_folder(tmp_path):
    home = tmp_path / "home"
    folder = tmp_path / "chats.db"
    folder.mkdir()
    done = chatui(home, "--db", str(folder))
    assert done.returncode != 0
    one_error_line(done, str(folder), "directory")
    assert list(folder.iterdir()) == []


# -- the config file ----------------------------------------------------------------------

BAD_CONFIGS = {
    "not-toml": (b'model = "gpt-4o\n', "not valid TOML"),
    "wrong-type": (b"model = 42\n", "model must be a string"),
    "wrong-nested-type": (
        b'[[blocks]]\nlabel = "memory"\nmax_tokens = "lots"\n',
        "max_tokens must be an integer",
    ),
    "unknown-setting": (b'modle = "gpt-4o"\n', "unknown setting 'modle'"),
    "out-of-range": (b"compact_at = 7\n", "compact_at must be between"),
    "not-utf8": (b'model = "caf\xe9"\n', "not UTF-8"),
}


@pytest.mark.parametrize("name", sorted(BAD_CONFIGS))
def test_bad_config_is_one_line_naming_the_file(tmp_path, name):
    home = tmp_path / "home"
    config = home / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    content, words = BAD_CONFIGS[name]
    config.write_bytes(content)
    # A good database beside it must not be touched either.
    db = home / "data" / "chats.db"
    Store(db).close()
    before = fingerprint(home)
    done = chatui(home)
    assert done.returncode != 0
    one_error_line(done, str(config), words)
    assert fingerprint(home) == before


def test_config_that_cannot_be_read(tmp_path):
    home = tmp_path / "home"
    config = home / "config" / "config.toml"
    config.mkdir(parents=True)  # unreadable as a file even for root, unlike chmod 000
    done = chatui(home)
    assert done.returncode != 0
    one_error_line(done, str(config), "cannot read")
    assert not (home / "data").exists()  # nothing created before the config was read


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_config_without_read_permission(tmp_path):
    home = tmp_path / "home"
    config = home / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('model = "demo"\n')
    config.chmod(0)
    done = chatui(home)
    assert done.returncode != 0
    one_error_line(done, str(config), "cannot read")


@pytest.mark.parametrize("command", [[], ["list"]])
def test_database_folder_that_cannot_be_made(tmp_path, command):
    home = tmp_path / "home"
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file where a folder would go\n")
    db = blocker / "chats.db"
    done = chatui(home, *command, "--db", str(db)) if command else chatui(home, "--db", str(db))
    assert done.returncode != 0
    one_error_line(done, str(db))
    assert blocker.read_text() == "a file where a folder would go\n"


def test_import_creating_a_database_where_it_cannot(tmp_path):
    home = tmp_path / "home"
    blocker = tmp_path / "notes.txt"
    blocker.write_text("x")
    source = tmp_path / "empty.jsonl"
    source.write_text("")
    done = chatui(
        home, "import", str(source), "--from", "chatui", "--db", str(blocker / "chats.db")
    )
    assert done.returncode in (3, 4)
    one_error_line(done)


# -- the same refusals, in-process, at the store boundary ----------------------------------


@pytest.mark.parametrize("name", sorted(BAD_DATABASES))
def test_store_refuses_without_writing(tmp_path, name):
    from store import DatabaseFileError, SchemaVersionError

    db = tmp_path / "x.db"
    make, words = BAD_DATABASES[name]
    make(db)
    before = fingerprint(tmp_path)
    with pytest.raises((DatabaseFileError, SchemaVersionError), match=words):
        Store(db)
    assert fingerprint(tmp_path) == before


def test_an_empty_file_is_a_new_database(tmp_path):
    db = tmp_path / "empty.db"
    db.touch()
    with Store(db) as store:
        assert store.integrity_check() == []
