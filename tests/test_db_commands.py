"""`chatui db info`: engine, schema version, counts and size."""

from __future__ import annotations

import json

from chatui.cli import main
from store import SessionManager, Store, database_info
from store.migrations import MIGRATIONS


def msg(mid, text):
    return {"id": mid, "role": "user", "parts": [{"type": "text", "text": text}]}


async def make_db(path):
    with Store(path) as store:
        manager = SessionManager(store)
        for name in ("one", "two"):
            chat = manager.create(name)
            await manager.append(chat.id, msg(f"{name}-a", "hello"))
            await manager.append(chat.id, msg(f"{name}-b", "again"))
        manager.delete(chat.id)  # soft-deleted chats are still counted


async def test_db_info_json(tmp_path, capsys):
    path = tmp_path / "info.db"
    await make_db(path)
    assert main(["--db", str(path), "db", "info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["engine"] == "sqlite" and info["location"] == str(path)
    assert info["schema_version"] == info["latest_version"] == len(MIGRATIONS)
    assert info["last_migration"] == MIGRATIONS[-1][0]
    assert info["counts"]["sessions"] == 2 and info["counts"]["messages"] == 4
    assert info["counts"]["status_changes"] >= 2 and info["size_bytes"] > 0


async def test_db_info_text_and_db_option_after_the_subcommand(tmp_path, capsys):
    path = tmp_path / "info.db"
    await make_db(path)
    assert main(["db", "info", "--db", str(path)]) == 0
    out = capsys.readouterr().out
    assert "engine:          sqlite" in out and "messages:        4" in out


def test_db_without_a_subcommand_is_a_usage_error(capsys):
    assert main(["db"]) == 2
    assert "chatui db info" in capsys.readouterr().err


def test_db_info_on_a_missing_file_and_a_server_url(tmp_path, capsys):
    assert main(["--db", str(tmp_path / "none.db"), "db", "info"]) != 0
    assert "no database there" in capsys.readouterr().err
    assert main(["db", "info", "--db", "postgresql://u:sekret@127.0.0.1:1/x"]) != 0
    err = capsys.readouterr().err
    assert "sekret" not in err and "u:***@" in err


def test_database_info_in_memory():
    with Store(":memory:") as store:
        info = database_info(store)
    assert info.location == ":memory:" and info.counts["messages"] == 0 and info.size_bytes > 0
