"""Schema migrations: an ordered list of named functions.

Each migration runs in the same transaction as the row that records it, so a
crash leaves the file either before or after it. A fresh database is built by
running all of them (one code path). Table shapes are frozen here as SQL, not
imported from the live models, so an old migration means today what it meant
when it was written. A database that records a migration this code does not
know was written by a newer version and is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from peewee import Database

from .errors import SchemaVersionError

__all__ = ["MIGRATIONS", "migrate", "applied_migrations"]

Migration = Callable[[Database], None]
MIGRATIONS: list[tuple[str, Migration]] = []


def migration(fn: Migration) -> Migration:
    """Register `fn` as the next migration (order of definition is order of application)."""
    MIGRATIONS.append((fn.__name__, fn))
    return fn


def _run(db: Database, script: str) -> None:
    for statement in script.split(";\n"):
        if statement.strip():
            db.execute_sql(statement)


@migration
def m001_messages_and_sessions(db: Database) -> None:
    # The core: a message tree per session (seq is the append order that
    # "latest" means), compaction overlays, and the session registry.
    _run(
        db,
        """
    CREATE TABLE messages (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        parent_id TEXT,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (session_id, id)
    );
    CREATE INDEX messages_parent ON messages (session_id, parent_id);
    CREATE TABLE compactions (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        summary TEXT NOT NULL,
        from_message_id TEXT NOT NULL,
        to_message_id TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX compactions_session ON compactions (session_id, created_at);
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        parent_session_id TEXT,
        model TEXT,
        source TEXT,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cost REAL NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX sessions_updated ON sessions (updated_at)
    """,
    )


@migration
def m002_message_search(db: Database) -> None:
    # Full-text index over message text. `scope` holds one token derived from
    # the session id so a session-scoped query is an FTS AND, not "rank every
    # match everywhere, then filter": it stays flat as history grows.
    _run(
        db,
        """
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        body, scope, tokenize = 'porter unicode61'
    )
    """,
    )


@migration
def m003_context_storage(db: Database) -> None:
    # Storage for the built-in providers (writable blocks, searchable entries,
    # skills) and the frozen system prompts of `with_cached_prompt()`.
    _run(
        db,
        """
    CREATE TABLE context_blocks (
        namespace TEXT NOT NULL,
        label TEXT NOT NULL,
        content TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (namespace, label)
    );
    CREATE TABLE search_entries (
        rowid INTEGER PRIMARY KEY AUTOINCREMENT,
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        content TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (namespace, key)
    );
    CREATE VIRTUAL TABLE search_entries_fts USING fts5(
        content, scope, tokenize = 'porter unicode61'
    );
    CREATE TABLE skills (
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        content TEXT NOT NULL,
        description TEXT,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (namespace, key)
    );
    CREATE TABLE prompts (
        namespace TEXT PRIMARY KEY,
        prompt TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE loaded_skills (
        namespace TEXT NOT NULL,
        label TEXT NOT NULL,
        key TEXT NOT NULL,
        tool_call_id TEXT,
        message_id TEXT,
        PRIMARY KEY (namespace, label, key)
    )
    """,
    )


@migration
def m004_agents_projects_peers(db: Database) -> None:
    # Seed 002: senders (never both, backed by a CHECK), peer delivery, token
    # usage per message; projects, agents, status, metadata and soft delete
    # on sessions. SQLite cannot add a CHECK to an existing table, so
    # messages is rebuilt; its FTS rows are keyed by seq, which is kept.
    _run(
        db,
        """
    CREATE TABLE messages_new (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        parent_id TEXT,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        created_at TEXT NOT NULL,
        from_user_id TEXT,
        from_agent_id TEXT,
        delivered_to_session_id TEXT,
        token_usage TEXT,
        UNIQUE (session_id, id),
        CHECK (from_user_id IS NULL OR from_agent_id IS NULL)
    );
    INSERT INTO messages_new (seq, id, session_id, parent_id, role, content, created_at)
        SELECT seq, id, session_id, parent_id, role, content, created_at FROM messages;
    DROP TABLE messages;
    ALTER TABLE messages_new RENAME TO messages;
    CREATE INDEX messages_parent ON messages (session_id, parent_id);
    CREATE INDEX messages_session ON messages (session_id);
    ALTER TABLE sessions ADD COLUMN agent_id TEXT;
    ALTER TABLE sessions ADD COLUMN project_id TEXT;
    ALTER TABLE sessions ADD COLUMN status TEXT NOT NULL DEFAULT 'active';
    ALTER TABLE sessions ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
    ALTER TABLE sessions ADD COLUMN deleted_at TEXT;
    CREATE INDEX sessions_project ON sessions (project_id, updated_at);
    CREATE TABLE projects (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        created_at TEXT NOT NULL,
        archived_at TEXT
    );
    CREATE TABLE agents (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        model TEXT,
        soul TEXT NOT NULL DEFAULT '',
        description TEXT NOT NULL DEFAULT '',
        config TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE status_changes (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        status TEXT NOT NULL,
        detail TEXT,
        changed_at TEXT NOT NULL
    );
    CREATE INDEX status_changes_session ON status_changes (session_id, seq)
    """,
    )


@migration
def m005_agents_api_and_peer_hops(db: Database) -> None:
    # Issue 4: agents get an API (archive instead of delete; names unique
    # whatever their case, since a model picks them by name), sessions keep
    # the detail of their current status ("waiting for agent B") so a chat
    # list needs no per-row query, and peer messaging records which session
    # answers a caller (peer_links) and every delivery (peer_hops). The
    # partial index serves the chat list, which only ever shows live sessions.
    _run(
        db,
        """
    ALTER TABLE agents ADD COLUMN archived_at TEXT;
    CREATE UNIQUE INDEX agents_name_nocase ON agents (name COLLATE NOCASE);
    ALTER TABLE sessions ADD COLUMN status_detail TEXT;
    CREATE INDEX sessions_live ON sessions (updated_at) WHERE deleted_at IS NULL;
    CREATE INDEX sessions_agent ON sessions (agent_id);
    CREATE TABLE peer_links (
        caller_session_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (caller_session_id, agent_id)
    );
    CREATE INDEX peer_links_session ON peer_links (session_id);
    CREATE TABLE peer_hops (
        id TEXT PRIMARY KEY,
        from_session_id TEXT NOT NULL,
        from_agent_id TEXT,
        from_message_id TEXT,
        to_session_id TEXT NOT NULL,
        to_agent_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        reply_message_id TEXT,
        wait INTEGER NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('delivered', 'replied', 'failed')),
        error TEXT,
        created_at TEXT NOT NULL,
        finished_at TEXT
    );
    CREATE INDEX peer_hops_from ON peer_hops (from_session_id, created_at);
    CREATE INDEX peer_hops_to ON peer_hops (to_session_id, created_at)
    """,
    )


@migration
def m006_session_clustered_search(db: Database) -> None:
    # The `scope` token of m002 made a session search cost as much as the
    # shorter of two doclists: the session's every message, or the word's
    # every match; both grow with history. Instead each session gets a
    # number and its index rows the rowids (number << 32) + seq, so one
    # session's rows are one rowid range FTS5 seeks into: the cost follows
    # the session's matches only. The index is rebuilt without `scope`.
    _run(
        db,
        """
    CREATE TABLE search_scopes (
        n INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL UNIQUE
    );
    INSERT INTO search_scopes (session_id)
        SELECT session_id FROM messages GROUP BY session_id ORDER BY min(seq);
    CREATE VIRTUAL TABLE messages_fts_new USING fts5(body, tokenize = 'porter unicode61');
    INSERT INTO messages_fts_new (rowid, body)
        SELECT (s.n << 32) + m.seq, f.body
        FROM messages m
        JOIN messages_fts f ON f.rowid = m.seq
        JOIN search_scopes s ON s.session_id = m.session_id;
    DROP TABLE messages_fts;
    ALTER TABLE messages_fts_new RENAME TO messages_fts
    """,
    )


@migration
def m007_cjk_and_emoji_search(db: Database) -> None:
    # Issue 13: CJK words inside a sentence and emoji were not findable (a CJK
    # run was one token, emoji none). The index now holds text prepared by
    # `text_prep` (a token per CJK character, a word per emoji); rows whose
    # prepared text differs are rewritten. This uses today's preparation on
    # purpose: the index must match what today's queries look for.
    import json

    from .messages import Message
    from .text_prep import index_text, prepare

    scopes = dict(db.execute_sql("SELECT session_id, n FROM search_scopes").fetchall())
    rows = db.execute_sql("SELECT seq, session_id, content, created_at FROM messages").fetchall()
    for seq, session_id, content, created_at in rows:
        text = index_text(Message.from_stored(json.loads(content), None, created_at))
        prepared = prepare(text)
        if prepared != text and session_id in scopes:
            db.execute_sql(
                "UPDATE messages_fts SET body = ? WHERE rowid = ?",
                (prepared, (scopes[session_id] << 32) + seq),
            )
    for rowid, content in db.execute_sql("SELECT rowid, content FROM search_entries").fetchall():
        if prepare(content) != content:
            db.execute_sql(
                "UPDATE search_entries_fts SET content = ? WHERE rowid = ?",
                (prepare(content), rowid),
            )


@migration
def m008_block_writes(db: Database) -> None:
    # Issue 14: a memory block's writes are kept, each with the chat and
    # message that made it, so a block can have one content per branch (the
    # newest write on the branch's path) and a history a person can revert.
    # What a block holds today becomes its first write, on no message: it
    # applies to every branch, as it did.
    _run(
        db,
        """
    CREATE TABLE block_writes (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        namespace TEXT NOT NULL,
        label TEXT NOT NULL,
        content TEXT NOT NULL,
        session_id TEXT,
        message_id TEXT,
        origin TEXT NOT NULL DEFAULT 'model',
        written_at TEXT NOT NULL,
        reverted_at TEXT
    );
    CREATE INDEX block_writes_block ON block_writes (namespace, label, seq);
    CREATE INDEX block_writes_message ON block_writes (session_id, message_id);
    INSERT INTO block_writes (namespace, label, content, origin, written_at)
        SELECT namespace, label, content, 'before history', updated_at FROM context_blocks
        ORDER BY namespace, label
    """,
    )


def applied_migrations(db: Database) -> list[str]:
    """Names of the migrations the file records, oldest first (creating the record table)."""
    db.execute_sql(
        "CREATE TABLE IF NOT EXISTS schema_migrations "
        "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    return [row[0] for row in db.execute_sql("SELECT name FROM schema_migrations ORDER BY rowid")]


def migrate(db: Database, path: str = "", upto: str | None = None) -> list[str]:
    """Apply every migration not yet recorded; return the names applied.

    Args:
        upto: stop after this migration (tests use it to build old files).

    Raises:
        SchemaVersionError: the file records migrations this code does not know.
    """
    with db.atomic():
        applied = applied_migrations(db)
    known = [name for name, _ in MIGRATIONS]
    unknown = [name for name in applied if name not in known]
    if unknown:
        raise SchemaVersionError(
            f"{path or 'the database'} was written by a newer version of chatui "
            f"(unknown migrations: {', '.join(unknown)}); upgrade chatui to open it"
        )
    done: list[str] = []
    for name, fn in MIGRATIONS:
        if name in applied:
            continue
        with db.atomic():
            fn(db)
            db.execute_sql(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                (name, datetime.now(UTC).isoformat()),
            )
        done.append(name)
        if name == upto:
            break
    return done
