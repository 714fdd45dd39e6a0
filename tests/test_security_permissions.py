"""Private files: data and config folders 0700; the database (and its -wal/-shm while
open), the log, the UI state and exports 0600 — under the usual umask 022.

The app is the real one in its own process (`tests/reliability_helpers.py`), chatting
with the offline demo model; the commands run through `chatui.cli.commands`.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from chatui import cli
from chatui.core import paths
from store import Store

from .reliability_helpers import mode, run_app

PRIVATE_FILE, PRIVATE_DIR = 0o600, 0o700


def modes_while_open(lines: list[str]) -> dict[str, int]:
    reports = [json.loads(line) for line in lines if line.startswith("{")]
    assert reports, lines
    return {path: int(m, 8) for path, m in reports[-1].items()}


def test_the_app_keeps_every_file_private(tmp_path):
    home = tmp_path / "home"
    code, out, err = run_app(
        home,
        [["type", "hello there"], ["press", "enter"], ["idle"], ["files"], ["quit"]],
        "--model",
        "demo",
    )
    assert code == 0, err
    seen = modes_while_open(out)
    db = "data/chats.db"
    # While the app runs, SQLite's side files hold the newest messages: private too.
    assert {db, db + "-wal", db + "-shm", "data/chatui.log", "data/state.json"} <= set(seen)
    for name, found in seen.items():
        wanted = PRIVATE_DIR if (home / name).is_dir() else PRIVATE_FILE
        assert found == wanted, f"{name}: {oct(found)} while the app ran"
    for path in [home / "data", *home.rglob("*")]:
        wanted = PRIVATE_DIR if path.is_dir() else PRIVATE_FILE
        assert mode(path) == wanted, f"{path}: {oct(mode(path))} after the app closed"
    with Store(home / "data" / "chats.db") as store:  # the chat really happened
        assert store.query("SELECT count(*) FROM messages")[0][0] == 2


def test_an_existing_database_with_loose_modes_is_tightened(tmp_path):
    home = tmp_path / "home"
    db = home / "data" / "chats.db"
    Store(db).close()
    db.chmod(0o644)
    code, out, err = run_app(home, [["files"], ["quit"]])
    assert code == 0, err
    seen = modes_while_open(out)
    assert seen["data/chats.db"] == PRIVATE_FILE
    assert seen.get("data/chats.db-wal", PRIVATE_FILE) == PRIVATE_FILE
    assert seen.get("data/chats.db-shm", PRIVATE_FILE) == PRIVATE_FILE


def test_the_config_folder_is_private_and_the_config_file_is_never_rewritten(tmp_path):
    home = tmp_path / "home"
    config = home / "config" / "config.toml"
    config.parent.mkdir(parents=True, mode=0o755)
    config.write_text('model = "demo"\n')
    config.chmod(0o600)
    before = config.read_bytes(), config.stat().st_mtime_ns
    code, _, err = run_app(home, [["quit"]])
    assert code == 0, err
    assert (config.read_bytes(), config.stat().st_mtime_ns) == before
    assert mode(config) == PRIVATE_FILE


def test_paths_creates_private_folders_and_leaves_existing_ones_alone(tmp_path):
    old = os.umask(0o022)
    try:
        made = paths.ensure_private_dir(tmp_path / "a" / "b")
        assert mode(made) == PRIVATE_DIR
        assert mode(tmp_path / "a") == PRIVATE_DIR  # every folder it makes, not only the last
        shared = tmp_path / "shared"
        shared.mkdir()
        shared.chmod(0o1777)  # a sticky shared folder, like /tmp
        paths.ensure_private_dir(shared)
        assert mode(shared) == 0o1777
        loose = tmp_path / "loose"
        loose.mkdir(mode=0o755)
        paths.ensure_private_dir(loose)
        assert mode(loose) == 0o755  # ours, but it existed: never changed
    finally:
        os.umask(old)


def test_no_command_changes_the_mode_of_a_folder_it_did_not_create(tmp_path, capsys):
    """Issue 25 item 1: the app, `import` and `db copy` once chmodded an existing
    (shared, sticky) database folder to 0700 on every start."""
    from tests.test_import_chatgpt import branching_conversation

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    source = tmp_path / "conversations.json"
    source.write_text(json.dumps([branching_conversation()]))
    db = shared / "chats.db"
    assert cli.main(["import", str(source), "--from", "chatgpt", "--db", str(db)]) == 0
    assert mode(shared) == 0o1777
    other = tmp_path / "other"
    other.mkdir(mode=0o755)
    other.chmod(0o755)
    assert cli.main(["db", "copy", str(db), str(other / "copy.db")]) == 0
    assert mode(other) == 0o755
    assert mode(other / "copy.db") == PRIVATE_FILE
    capsys.readouterr()
    home = tmp_path / "home"
    code, _, err = run_app(home, [["quit"]], "--db", str(db))
    assert code == 0, err
    assert mode(shared) == 0o1777


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_commands_create_a_private_database_and_private_exports(
    tmp_path, monkeypatch, umask_022, capsys
):
    source = tmp_path / "conversations.json"
    from chatui.transfer import importing
    from tests.test_import_chatgpt import branching_conversation

    source.write_text(json.dumps([branching_conversation()]))
    db = tmp_path / "new" / "chats.db"
    seen: dict[str, int] = {}
    real = importing.import_sessions  # the one import path the CLI goes through

    def watching(store, *args, **kwargs):
        # Mid-command, with the database open: what would a reader on this machine see?
        for suffix in ("", "-wal", "-shm"):
            side = db.with_name(db.name + suffix)
            if side.exists():
                seen[suffix or "db"] = mode(side)
        return real(store, *args, **kwargs)

    monkeypatch.setattr(importing, "import_sessions", watching)
    assert cli.main(["import", str(source), "--from", "chatgpt", "--db", str(db)]) == 0
    assert seen and all(m == PRIVATE_FILE for m in seen.values()), {
        k: oct(v) for k, v in seen.items()
    }
    assert mode(db) == PRIVATE_FILE
    out = tmp_path / "exports" / "all.jsonl"
    assert cli.main(["export", "--all", "--format", "jsonl", "-o", str(out), "--db", str(db)]) == 0
    assert mode(out) == PRIVATE_FILE
    folder = tmp_path / "md"
    assert cli.main(["export", "--all", "--format", "md", "-o", str(folder), "--db", str(db)]) == 0
    assert mode(folder) == PRIVATE_DIR
    assert [mode(p) for p in folder.iterdir()] == [PRIVATE_FILE]
    capsys.readouterr()


def test_private_modes_are_what_stat_reports():
    assert stat.S_IMODE(0o100600) == PRIVATE_FILE  # the helper reads permission bits only
