"""The CLI on either engine (this module runs once per engine, see conftest): `--db`,
`CHATUI_DB` and the config's `database` open it; `db info` describes it."""

from __future__ import annotations

import json

from chatui.cli import main
from store import SessionManager, Store
from store.migrations import MIGRATIONS


def msg(mid, text):
    return {"id": mid, "role": "user", "parts": [{"type": "text", "text": text}]}


async def fill(store: Store) -> str:
    manager = SessionManager(store)
    chat = manager.create("Engines chat")
    await manager.append(chat.id, msg("a", "The runners were running to 这个组件很好 🎉"))
    await manager.append(chat.id, msg("b", "and then they rested"))
    return chat.id


async def test_db_info_describes_the_engine(store, store_url, db_engine, capsys):
    await fill(store)
    assert main(["--db", store_url, "db", "info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["engine"] == db_engine
    assert info["schema_version"] == info["latest_version"] == len(MIGRATIONS)
    assert info["last_migration"] == MIGRATIONS[-1][0]
    assert info["counts"]["sessions"] == 1 and info["counts"]["messages"] == 2
    assert info["size_bytes"] > 0
    assert main(["db", "info", "--db", store_url]) == 0
    out = capsys.readouterr().out
    assert f"engine:          {db_engine}" in out and "messages:        2" in out


async def test_commands_read_the_same_chats_on_both_engines(store, store_url, capsys):
    chat_id = await fill(store)
    assert main(["--db", store_url, "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [c["id"] for c in listed] == [chat_id]
    for query, hit in [
        ("run", "a"),
        ("组件", "a"),
        ("🎉", "a"),
        ('"they rested"', "b"),
        ("rest*", "b"),
        ("nothing OR then", "b"),
        ("and", "b"),
    ]:
        assert main(["--db", store_url, "search", query, "--json"]) == 0, query
        hits = json.loads(capsys.readouterr().out)
        assert [h["message_id"] for h in hits] == [hit], query


async def test_chatui_db_and_the_config_database_open_it(store, store_url, capsys, monkeypatch):
    chat_id = await fill(store)
    monkeypatch.setenv("CHATUI_DB", store_url)
    assert main(["list", "--json"]) == 0
    assert [c["id"] for c in json.loads(capsys.readouterr().out)] == [chat_id]
    monkeypatch.delenv("CHATUI_DB")
    from chatui.core import paths

    paths.config_file().parent.mkdir(parents=True, exist_ok=True)
    paths.config_file().write_text(f"database = {json.dumps(store_url)}\n")
    assert main(["list", "--json"]) == 0
    assert [c["id"] for c in json.loads(capsys.readouterr().out)] == [chat_id]


def _foreign_table(store_url: str, engine: str) -> None:
    """Another program's table where the store's would go."""
    if engine == "postgres":
        import psycopg

        with psycopg.connect(store_url.split("&application_name")[0], autocommit=True) as c:
            c.execute("CREATE TABLE notes (id int primary key, body text)")
            c.execute("INSERT INTO notes VALUES (1, 'mine')")
    else:
        import sqlite3

        with sqlite3.connect(store_url) as lite:
            lite.execute("CREATE TABLE notes (id int primary key, body text)")
            lite.execute("INSERT INTO notes VALUES (1, 'mine')")
        lite.close()


def _notes(store_url: str, engine: str) -> list[tuple]:
    if engine == "postgres":
        import psycopg

        with psycopg.connect(store_url.split("&application_name")[0]) as c:
            tables = c.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            ).fetchall()
            return [tuple(r) for r in c.execute("SELECT * FROM notes")] + tables
    import sqlite3

    lite = sqlite3.connect(store_url)
    try:
        tables = lite.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        return lite.execute("SELECT * FROM notes").fetchall() + tables
    finally:
        lite.close()


def test_a_foreign_database_is_refused_and_left_unchanged(store_url, db_engine):
    import pytest

    from store import DatabaseFileError

    _foreign_table(store_url, db_engine)
    before = _notes(store_url, db_engine)
    with pytest.raises(DatabaseFileError, match="not a chatui database"):
        Store(store_url)
    assert _notes(store_url, db_engine) == before == [(1, "mine"), ("notes",)]


def test_a_newer_database_is_refused(store, store_url):
    import pytest

    from store import SchemaVersionError
    from tests.engine_helpers import sql

    sql(
        store,
        "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
        ("m999_from_the_future", "2030-01-01"),
    )
    store.close()
    with pytest.raises(SchemaVersionError, match="newer version.*m999_from_the_future"):
        Store(store_url)


def test_every_migration_is_recorded_in_order_and_reopening_changes_nothing(store, store_url):
    from tests.engine_helpers import sql

    names = [r[0] for r in sql(store, "SELECT name FROM schema_migrations ORDER BY rowid")]
    assert names == [name for name, _ in MIGRATIONS]
    store.close()
    with Store(store_url) as again:
        assert [r[0] for r in sql(again, "SELECT name FROM schema_migrations")] == names
        assert again.integrity_check() == []


def test_a_sqlite_store_never_loads_the_postgresql_driver():
    """psycopg (and playhouse's URL parser, which imports every backend) cost ~0.2 s of
    the app's start-up; a SQLite database must not pay for them."""
    import subprocess
    import sys

    code = (
        "import sys, store\n"
        "store.Store(':memory:').close()\n"
        "loaded = [m for m in ('psycopg', 'playhouse.db_url', 'playhouse.postgres_ext') "
        "if m in sys.modules]\n"
        "print(','.join(loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
