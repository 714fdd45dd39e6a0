"""Opening files: fresh, older schema (migrated), newer schema and foreign files refused."""

import json
import sqlite3

import pytest

from store import DatabaseFileError, SchemaVersionError, Session, Store
from store.migrations import MIGRATIONS, migrate


def test_fresh_database_has_every_migration(tmp_path):
    with Store(tmp_path / "f.db") as store:
        names = [r[0] for r in store.query("SELECT name FROM schema_migrations ORDER BY rowid")]
        assert names == [name for name, _ in MIGRATIONS]
        assert store.query("PRAGMA journal_mode")[0][0] == "wal"
        assert store.query("PRAGMA foreign_keys")[0][0] == 1


async def test_older_file_opens_and_upgrades_keeping_data(tmp_path):
    path = tmp_path / "old.db"
    # Build a file as the first release left it: only the first two migrations.
    from peewee import SqliteDatabase

    db = SqliteDatabase(str(path))
    db.connect()
    migrate(db, str(path), upto="m002_message_search")
    db.execute_sql(
        "INSERT INTO messages (id, session_id, parent_id, role, content, created_at) VALUES "
        '(\'a\', \'s\', NULL, \'user\', \'{"id":"a","role":"user","parts":'
        '[{"type":"text","text":"ancient words"}]}\', \'2025-01-01T00:00:00+00:00\')'
    )
    db.execute_sql(
        "INSERT INTO messages_fts (rowid, body, scope) VALUES (1, 'ancient words', ?)",
        (__import__("store.db", fromlist=["scope_token"]).scope_token("s"),),
    )
    db.execute_sql(
        "INSERT INTO sessions (id, name, created_at, updated_at) VALUES "
        "('s', 'Old chat', '2025-01-01T00:00:00+00:00', '2025-01-01T00:00:00+00:00')"
    )
    db.close()
    with Store(path) as store:
        applied = [r[0] for r in store.query("SELECT name FROM schema_migrations")]
        assert applied == [name for name, _ in MIGRATIONS]
        s = Session(store).for_session("s")
        assert s.get_message("a").text == "ancient words"
        assert s.search("ancient")[0].id == "a"
        await s.append_message(
            {"id": "b", "role": "assistant", "parts": [{"type": "text", "text": "new words"}]}
        )
        assert [m.id for m in s.get_history()] == ["a", "b"]
        from store import SessionManager

        info = SessionManager(store).get("s")
        assert info.status == "active" and info.deleted_at is None and info.metadata == {}
        assert store.integrity_check() == []


def test_newer_schema_fails_clearly_and_is_not_changed(tmp_path):
    path = tmp_path / "new.db"
    Store(path).close()
    con = sqlite3.connect(path)
    con.execute("INSERT INTO schema_migrations VALUES ('m999_from_the_future', 'x')")
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(SchemaVersionError, match="newer version"):
        Store(path)
    assert path.read_bytes() == before


def test_not_sqlite_fails_clearly_and_is_untouched(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n")
    with pytest.raises(DatabaseFileError, match="not a SQLite database"):
        Store(path)
    assert path.read_text() == "these are my notes, not a database\n"


def test_directory_is_refused(tmp_path):
    with pytest.raises(DatabaseFileError, match="directory"):
        Store(tmp_path)


def test_postgres_url_is_a_clear_error():
    with pytest.raises(DatabaseFileError, match="PostgreSQL"):
        Store("postgresql://localhost/chats")


def test_missing_parent_folder_is_created(tmp_path):
    with Store(tmp_path / "a" / "b" / "c.db") as store:
        assert store.integrity_check() == []


async def test_previous_schema_upgrades_to_agents_and_peer_hops(tmp_path):
    """A file at m004 (agents table without an API, no peer tables) opens and upgrades."""
    from peewee import SqliteDatabase

    from store import SessionManager, UnknownAgentError

    path = tmp_path / "m004.db"
    db = SqliteDatabase(str(path))
    db.connect()
    migrate(db, str(path), upto="m004_agents_projects_peers")
    db.execute_sql(
        "INSERT INTO agents (id, name, created_at, updated_at) VALUES "
        "('a1', 'Coder', '2025-06-01T00:00:00+00:00', '2025-06-01T00:00:00+00:00')"
    )
    db.execute_sql(
        "INSERT INTO sessions (id, name, agent_id, status, created_at, updated_at) VALUES "
        "('s1', 'Old chat', 'a1', 'idle', '2025-06-01T00:00:00+00:00', "
        "'2025-06-01T00:00:00+00:00')"
    )
    tables = {r[0] for r in db.execute_sql("SELECT name FROM sqlite_master")}
    assert "peer_hops" not in tables
    db.close()
    with Store(path) as store:
        assert [r[0] for r in store.query("SELECT name FROM schema_migrations")] == [
            name for name, _ in MIGRATIONS
        ]
        manager = SessionManager(store)
        info = manager.get("s1")
        assert (info.agent_id, info.status, info.status_detail) == ("a1", "idle", None)
        agent = manager.get_agent("a1")
        assert agent.name == "Coder" and agent.archived_at is None and agent.config == {}
        assert [s.id for s in manager.list(agent_id="a1")] == ["s1"]
        manager.archive_agent("a1")
        with pytest.raises(UnknownAgentError):
            manager.create("new", agent_id="a1")
        assert store.query("SELECT count(*) FROM peer_hops")[0][0] == 0
        assert store.integrity_check() == []


def test_every_migration_applies_alone_in_order(tmp_path):
    """Each step from blank: a file stopped after any migration opens and finishes."""
    from peewee import SqliteDatabase

    for index, (name, _) in enumerate(MIGRATIONS):
        path = tmp_path / f"step-{index}.db"
        db = SqliteDatabase(str(path))
        db.connect()
        assert migrate(db, str(path), upto=name) == [n for n, _ in MIGRATIONS[: index + 1]]
        db.close()
        with Store(path) as store:
            assert store.integrity_check() == []
            applied = [r[0] for r in store.query("SELECT name FROM schema_migrations")]
            assert applied == [n for n, _ in MIGRATIONS]


async def test_search_index_is_rebuilt_by_session_from_m005(tmp_path):
    """A file at m005 (index rows keyed by seq with a scope token) keeps every hit."""
    from peewee import SqliteDatabase

    from store import SessionManager
    from store.db import scope_token

    path = tmp_path / "m005.db"
    db = SqliteDatabase(str(path))
    db.connect()
    migrate(db, str(path), upto="m005_agents_api_and_peer_hops")
    seq = 0
    for sid in ("s1", "s2", "s1"):
        seq += 1
        db.execute_sql(
            "INSERT INTO messages (seq, id, session_id, role, content, created_at) VALUES "
            "(?, ?, ?, 'user', ?, '2025-06-01T00:00:00+00:00')",
            (
                seq,
                f"m{seq}",
                sid,
                json.dumps(
                    {
                        "id": f"m{seq}",
                        "role": "user",
                        "parts": [{"type": "text", "text": f"walrus {seq}"}],
                    }
                ),
            ),
        )
        db.execute_sql(
            "INSERT INTO messages_fts (rowid, body, scope) VALUES (?, ?, ?)",
            (seq, f"walrus {seq}", scope_token(sid)),
        )
    db.close()
    with Store(path) as store:
        manager = SessionManager(store)
        assert sorted(h.id for h in manager.search("walrus")) == ["m1", "m2", "m3"]
        assert sorted(h.id for h in manager.search("walrus", session_id="s1")) == ["m1", "m3"]
        assert [h.id for h in manager.search("walrus", session_id="s2")] == ["m2"]
        assert store.integrity_check() == []
