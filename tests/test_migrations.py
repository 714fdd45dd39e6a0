"""Opening files: fresh, older schema (migrated), newer schema and foreign files refused."""

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
        "('a', 's', NULL, 'user', '{\"id\":\"a\",\"role\":\"user\",\"parts\":"
        "[{\"type\":\"text\",\"text\":\"ancient words\"}]}', '2025-01-01T00:00:00+00:00')")
    db.execute_sql("INSERT INTO messages_fts (rowid, body, scope) VALUES (1, 'ancient words', ?)",
                   (__import__("store.db", fromlist=["scope_token"]).scope_token("s"),))
    db.execute_sql("INSERT INTO sessions (id, name, created_at, updated_at) VALUES "
                   "('s', 'Old chat', '2025-01-01T00:00:00+00:00', '2025-01-01T00:00:00+00:00')")
    db.close()
    with Store(path) as store:
        applied = [r[0] for r in store.query("SELECT name FROM schema_migrations")]
        assert applied == [name for name, _ in MIGRATIONS]
        s = Session(store).for_session("s")
        assert s.get_message("a").text == "ancient words"
        assert s.search("ancient")[0].id == "a"
        await s.append_message({"id": "b", "role": "assistant",
                                "parts": [{"type": "text", "text": "new words"}]})
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
