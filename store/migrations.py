"""Schema migrations: one ordered list of named functions, for both engines.

Each migration runs in the same transaction as the row that records it, so a
crash leaves the database either before or after it. A fresh database is
built by running all of them (one code path per engine). Table shapes are
frozen here as SQL, not imported from the live models, so an old migration
means today what it meant when it was written. A database that records a
migration this code does not know was written by a newer version and is
refused, on either engine.

Two engines, one list. m001–m007 were written for SQLite alone and keep
their SQLite SQL exactly, so existing files migrate as they always did.
PostgreSQL support came after them: on PostgreSQL, m001 builds the baseline —
the shape SQLite has after m007, in PostgreSQL's words (`_POSTGRES_BASELINE`:
BIGSERIAL for AUTOINCREMENT, a `rowid` column where the code orders by
SQLite's implicit rowid, `tsvector` tables under GIN indexes for the FTS5
ones) — and m002–m007 are recorded without running (`@migration(postgres=None)`).
So both engines record the same names and `chatui db info` reads the same
version on both. From m008 on, a migration is one function for both engines
(plain `@migration`): write it with `playhouse.migrate`
(`SchemaMigrator.from_database(db)`) or the query builder, or branch on
`is_postgres(db)` where the dialects truly differ.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, overload

from peewee import Database, PostgresqlDatabase

from .errors import SchemaVersionError

__all__ = ["MIGRATIONS", "migrate", "applied_migrations", "is_postgres"]

Migration = Callable[[Database], None]
MIGRATIONS: list[tuple[str, Migration]] = []
_SAME = object()


def is_postgres(db: Database) -> bool:
    """True when `db` is a PostgreSQL database (else SQLite)."""
    return isinstance(db, PostgresqlDatabase)


@overload
def migration(fn: Migration, *, postgres: Any = ...) -> Migration: ...
@overload
def migration(fn: None = None, *, postgres: Any = ...) -> Callable[[Migration], Migration]: ...
def migration(
    fn: Migration | None = None, *, postgres: Any = _SAME
) -> Migration | Callable[[Migration], Migration]:
    """Register the next migration (order of definition is order of application).

    `@migration`: one function for both engines. `@migration(postgres=other)`:
    the function is the SQLite form and `other` the PostgreSQL one; `None`
    means "already in the PostgreSQL baseline" (recorded, nothing run).
    """

    def register(sqlite_form: Migration) -> Migration:
        if postgres is _SAME:
            MIGRATIONS.append((sqlite_form.__name__, sqlite_form))
            return sqlite_form

        def both(db: Database) -> None:
            if not is_postgres(db):
                sqlite_form(db)
            elif postgres is not None:
                postgres(db)

        both.__name__ = sqlite_form.__name__
        both.__doc__ = sqlite_form.__doc__
        MIGRATIONS.append((sqlite_form.__name__, both))
        return sqlite_form

    return register(fn) if fn is not None else register


def _run(db: Database, script: str) -> None:
    for statement in script.split(";\n"):
        if statement.strip():
            db.execute_sql(statement)


# Every text column collates bytewise ("C"), as SQLite compares: the namespace
# range scans (`namespaces.namespace_range`) and id orderings depend on it.
_T = 'TEXT COLLATE "C"'
_POSTGRES_BASELINE = f"""
    CREATE TEXT SEARCH DICTIONARY chatui_english_stem (TEMPLATE = snowball, Language = english);
    CREATE TEXT SEARCH CONFIGURATION chatui_english (COPY = english);
    ALTER TEXT SEARCH CONFIGURATION chatui_english
        ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
        WITH chatui_english_stem;
    CREATE TABLE sessions (
        id {_T} PRIMARY KEY,
        name {_T} NOT NULL,
        parent_session_id {_T},
        model {_T},
        source {_T},
        input_tokens BIGINT NOT NULL DEFAULT 0,
        output_tokens BIGINT NOT NULL DEFAULT 0,
        cost DOUBLE PRECISION NOT NULL DEFAULT 0,
        created_at {_T} NOT NULL,
        updated_at {_T} NOT NULL,
        agent_id {_T},
        project_id {_T},
        status {_T} NOT NULL DEFAULT 'active',
        metadata {_T} NOT NULL DEFAULT '{{}}',
        deleted_at {_T},
        status_detail {_T},
        rowid BIGSERIAL NOT NULL
    );
    CREATE INDEX sessions_updated ON sessions (updated_at);
    CREATE INDEX sessions_project ON sessions (project_id, updated_at);
    CREATE INDEX sessions_live ON sessions (updated_at) WHERE deleted_at IS NULL;
    CREATE INDEX sessions_agent ON sessions (agent_id);
    CREATE TABLE messages (
        seq BIGSERIAL PRIMARY KEY,
        id {_T} NOT NULL,
        session_id {_T} NOT NULL,
        parent_id {_T},
        role {_T} NOT NULL,
        content {_T} NOT NULL,
        created_at {_T} NOT NULL,
        from_user_id {_T},
        from_agent_id {_T},
        delivered_to_session_id {_T},
        token_usage {_T},
        UNIQUE (session_id, id),
        CHECK (from_user_id IS NULL OR from_agent_id IS NULL)
    );
    CREATE INDEX messages_parent ON messages (session_id, parent_id);
    CREATE INDEX messages_session ON messages (session_id);
    CREATE TABLE compactions (
        id {_T} PRIMARY KEY,
        session_id {_T} NOT NULL,
        summary {_T} NOT NULL,
        from_message_id {_T} NOT NULL,
        to_message_id {_T} NOT NULL,
        created_at {_T} NOT NULL,
        rowid BIGSERIAL NOT NULL
    );
    CREATE INDEX compactions_session ON compactions (session_id, created_at);
    CREATE TABLE search_scopes (
        n BIGSERIAL PRIMARY KEY,
        session_id {_T} NOT NULL UNIQUE
    );
    CREATE TABLE messages_fts (
        rowid BIGINT PRIMARY KEY,
        body {_T} NOT NULL,
        tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('chatui_english', body)) STORED
    );
    CREATE INDEX messages_fts_tsv ON messages_fts USING GIN (tsv);
    CREATE TABLE context_blocks (
        namespace {_T} NOT NULL,
        label {_T} NOT NULL,
        content {_T} NOT NULL,
        updated_at {_T} NOT NULL,
        PRIMARY KEY (namespace, label)
    );
    CREATE TABLE search_entries (
        rowid BIGSERIAL PRIMARY KEY,
        namespace {_T} NOT NULL,
        key {_T} NOT NULL,
        content {_T} NOT NULL,
        updated_at {_T} NOT NULL,
        UNIQUE (namespace, key)
    );
    CREATE TABLE search_entries_fts (
        rowid BIGINT PRIMARY KEY,
        content {_T} NOT NULL,
        scope {_T} NOT NULL,
        tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('chatui_english', content)) STORED
    );
    CREATE INDEX search_entries_fts_tsv ON search_entries_fts USING GIN (tsv);
    CREATE TABLE skills (
        namespace {_T} NOT NULL,
        key {_T} NOT NULL,
        content {_T} NOT NULL,
        description {_T},
        updated_at {_T} NOT NULL,
        PRIMARY KEY (namespace, key)
    );
    CREATE TABLE prompts (
        namespace {_T} PRIMARY KEY,
        prompt {_T} NOT NULL,
        updated_at {_T} NOT NULL
    );
    CREATE TABLE loaded_skills (
        namespace {_T} NOT NULL,
        label {_T} NOT NULL,
        key {_T} NOT NULL,
        tool_call_id {_T},
        message_id {_T},
        PRIMARY KEY (namespace, label, key)
    );
    CREATE TABLE projects (
        id {_T} PRIMARY KEY,
        name {_T} NOT NULL,
        created_at {_T} NOT NULL,
        archived_at {_T}
    );
    CREATE TABLE agents (
        id {_T} PRIMARY KEY,
        name {_T} NOT NULL UNIQUE,
        model {_T},
        soul {_T} NOT NULL DEFAULT '',
        description {_T} NOT NULL DEFAULT '',
        config {_T} NOT NULL DEFAULT '{{}}',
        created_at {_T} NOT NULL,
        updated_at {_T} NOT NULL,
        archived_at {_T}
    );
    CREATE UNIQUE INDEX agents_name_nocase ON agents (lower(name));
    CREATE TABLE status_changes (
        seq BIGSERIAL PRIMARY KEY,
        session_id {_T} NOT NULL,
        status {_T} NOT NULL,
        detail {_T},
        changed_at {_T} NOT NULL
    );
    CREATE INDEX status_changes_session ON status_changes (session_id, seq);
    CREATE TABLE peer_links (
        caller_session_id {_T} NOT NULL,
        agent_id {_T} NOT NULL,
        session_id {_T} NOT NULL,
        created_at {_T} NOT NULL,
        PRIMARY KEY (caller_session_id, agent_id)
    );
    CREATE INDEX peer_links_session ON peer_links (session_id);
    CREATE TABLE peer_hops (
        id {_T} PRIMARY KEY,
        from_session_id {_T} NOT NULL,
        from_agent_id {_T},
        from_message_id {_T},
        to_session_id {_T} NOT NULL,
        to_agent_id {_T} NOT NULL,
        message_id {_T} NOT NULL,
        reply_message_id {_T},
        wait INTEGER NOT NULL,
        state {_T} NOT NULL CHECK (state IN ('delivered', 'replied', 'failed')),
        error {_T},
        created_at {_T} NOT NULL,
        finished_at {_T},
        rowid BIGSERIAL NOT NULL
    );
    CREATE INDEX peer_hops_from ON peer_hops (from_session_id, created_at);
    CREATE INDEX peer_hops_to ON peer_hops (to_session_id, created_at)
    """


def _postgres_baseline(db: Database) -> None:
    # PostgreSQL starts at the shape SQLite reaches after m007 (see the module
    # docstring); the search tables are tsvector ones under GIN indexes. Their
    # configuration, chatui_english, is `english` (snowball stemming) without
    # its stop words: FTS5's porter tokenizer drops none, and a search for
    # "and" or "the" must find the same messages on both engines.
    _run(db, _POSTGRES_BASELINE)


@migration(postgres=_postgres_baseline)
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


@migration(postgres=None)
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


@migration(postgres=None)
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


@migration(postgres=None)
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


@migration(postgres=None)
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


@migration(postgres=None)
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


@migration(postgres=None)
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
    text, key = (
        (_T, "BIGSERIAL PRIMARY KEY")
        if is_postgres(db)
        else (
            "TEXT",
            "INTEGER PRIMARY KEY AUTOINCREMENT",
        )
    )
    _run(
        db,
        f"""
    CREATE TABLE block_writes (
        seq {key},
        namespace {text} NOT NULL,
        label {text} NOT NULL,
        content {text} NOT NULL,
        session_id {text},
        message_id {text},
        origin {text} NOT NULL DEFAULT 'model',
        written_at {text} NOT NULL,
        reverted_at {text}
    );
    CREATE INDEX block_writes_block ON block_writes (namespace, label, seq);
    CREATE INDEX block_writes_message ON block_writes (session_id, message_id);
    INSERT INTO block_writes (namespace, label, content, origin, written_at)
        SELECT namespace, label, content, 'before history', updated_at FROM context_blocks
        ORDER BY namespace, label
    """,
    )


@migration
def m009_change_notifications(db: Database) -> None:
    # Issue 12: processes (machines) sharing one PostgreSQL database see each
    # other's new chats, messages and memory writes without polling tables:
    # every committed change to a session row (each message write bumps its
    # `updated_at`) or to a context block sends `NOTIFY chatui_changes,
    # '<schema> <session id or namespace>'`, which `changes.ChangeWatcher`
    # LISTENs for. SQLite needs nothing: its watcher reads `data_version`.
    if not is_postgres(db):
        return
    # One statement at a time: the function body holds ";\n" (see `_run`).
    db.execute_sql(
        """
        CREATE OR REPLACE FUNCTION chatui_notify_change() RETURNS trigger
        LANGUAGE plpgsql AS $$
        DECLARE
            changed text;
        BEGIN
            IF TG_TABLE_NAME = 'sessions' THEN
                IF TG_OP = 'DELETE' THEN changed := OLD.id; ELSE changed := NEW.id; END IF;
            ELSE
                IF TG_OP = 'DELETE' THEN
                    changed := OLD.namespace;
                ELSE
                    changed := NEW.namespace;
                END IF;
            END IF;
            PERFORM pg_notify('chatui_changes', TG_TABLE_SCHEMA || ' ' || changed);
            RETURN NULL;
        END
        $$
        """
    )
    for table in ("sessions", "context_blocks"):
        db.execute_sql(
            f"CREATE TRIGGER {table}_notify AFTER INSERT OR UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION chatui_notify_change()"
        )


@migration
def m010_messages_by_session_and_seq(db: Database) -> None:
    # Issue 12: a history is read in windows of a chat's newest rows
    # (`storage.walk_path`): one backward range scan of (session_id, seq). On
    # PostgreSQL the index on (session_id) alone made that a scan of the chat's
    # every row and a sort; (session_id, seq) serves whatever the old one did.
    # SQLite needs nothing: an index entry ends with the rowid, which is seq.
    if is_postgres(db):
        _run(
            db,
            """
        CREATE INDEX messages_session_seq ON messages (session_id, seq);
        DROP INDEX messages_session
        """,
        )


# Each term at its position (1, 2, …), as FTS5 numbers them: phrases match
# alike. No parser or dictionary of PostgreSQL's touches the terms (`text_prep`
# decided them). tsvector keeps positions up to 16383 and 256 of them per term:
# a phrase past those in one message is the only place the engines can differ.
_TSVECTOR_FUNCTION = r"""
    CREATE OR REPLACE FUNCTION chatui_tsvector(terms text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT coalesce(string_agg(chr(39) || t || chr(39) || ':' || n::text, ' '), '')::tsvector
        FROM unnest(string_to_array(terms, ' ')) WITH ORDINALITY AS u(t, n)
        WHERE t <> ''
    $$
"""
_REINDEX_BATCH = 2_000


def _reindex_search(db: Database) -> None:
    """Empty both search indexes and fill them again with today's `text_prep.tokens`
    (in batches: a large history is never held in memory at once)."""
    import json

    from .messages import Message
    from .search import scope_token
    from .text_prep import index_text, index_tokens

    p = "%s" if is_postgres(db) else "?"
    db.execute_sql("DELETE FROM messages_fts")
    db.execute_sql("DELETE FROM search_entries_fts")
    last = -1
    while True:
        rows = db.execute_sql(
            "SELECT m.seq, s.n, m.content, m.created_at FROM messages m "
            f"JOIN search_scopes s ON s.session_id = m.session_id WHERE m.seq > {p} "
            f"ORDER BY m.seq LIMIT {_REINDEX_BATCH}",
            (last,),
        ).fetchall()
        if not rows:
            break
        db.cursor().executemany(
            f"INSERT INTO messages_fts (rowid, body) VALUES ({p}, {p})",
            [
                (
                    (n << 32) + seq,
                    index_tokens(index_text(Message.from_stored(json.loads(c), None, at))),
                )
                for seq, n, c, at in rows
            ],
        )
        last = rows[-1][0]
    rows = db.execute_sql("SELECT rowid, namespace, content FROM search_entries").fetchall()
    if rows:
        db.cursor().executemany(
            f"INSERT INTO search_entries_fts (rowid, content, scope) VALUES ({p}, {p}, {p})",
            [(rowid, index_tokens(content), scope_token(ns)) for rowid, ns, content in rows],
        )


@migration
def m011_one_tokenisation(db: Database) -> None:
    # Issue 23: the same query found different messages on the two engines
    # (FTS5's Porter stemmer is not PostgreSQL's Snowball; prefixes expanded
    # over different stems; PostgreSQL folded no accents). The words a message
    # is indexed under are now decided in Python (`text_prep.tokens`), and the
    # index rows hold them: FTS5 with its `ascii` tokenizer (it splits at the
    # spaces only), PostgreSQL through `chatui_tsvector` (no stemming again).
    # Every row is indexed again.
    if is_postgres(db):
        db.execute_sql(_TSVECTOR_FUNCTION)
        _run(
            db,
            """
        ALTER TABLE messages_fts DROP COLUMN tsv;
        ALTER TABLE search_entries_fts DROP COLUMN tsv
        """,
        )
        _reindex_search(db)
        _run(
            db,
            """
        ALTER TABLE messages_fts ADD COLUMN tsv TSVECTOR
            GENERATED ALWAYS AS (chatui_tsvector(body)) STORED;
        CREATE INDEX messages_fts_tsv ON messages_fts USING GIN (tsv);
        ALTER TABLE search_entries_fts ADD COLUMN tsv TSVECTOR
            GENERATED ALWAYS AS (chatui_tsvector(content)) STORED;
        CREATE INDEX search_entries_fts_tsv ON search_entries_fts USING GIN (tsv)
        """,
        )
        return
    _run(
        db,
        """
    DROP TABLE messages_fts;
    CREATE VIRTUAL TABLE messages_fts USING fts5(body, tokenize = 'ascii');
    DROP TABLE search_entries_fts;
    CREATE VIRTUAL TABLE search_entries_fts USING fts5(content, scope, tokenize = 'ascii')
    """,
    )
    _reindex_search(db)


@migration
def m012_prefix_indexes(db: Database) -> None:
    # Issue 23: a two- or three-letter prefix (`th*`, what search-as-you-type
    # meets first) made FTS5 merge the doclists of every term it begins: 1.25 s
    # at 1M messages. FTS5 keeps an index of each term's first 2 and 3
    # characters as well, so such a prefix reads one doclist. PostgreSQL's GIN
    # index answers prefixes from its sorted terms and needs nothing.
    if is_postgres(db):
        return
    _run(
        db,
        """
    CREATE VIRTUAL TABLE messages_fts_new USING fts5(body, tokenize = 'ascii', prefix = '2 3');
    INSERT INTO messages_fts_new (rowid, body) SELECT rowid, body FROM messages_fts;
    DROP TABLE messages_fts;
    ALTER TABLE messages_fts_new RENAME TO messages_fts
    """,
    )


@migration
def m013_sessions_indexes_an_append_writes(db: Database) -> None:
    # Issue 23: every append moves its chat's `updated_at`, and with it an entry
    # in each index holding that column: three, so a commit wrote three more index
    # pages than the message needed. The list of live chats keeps its index
    # (sessions_live). The trash lists deleted chats only, and a project's list
    # chats of that project: their indexes now hold only those rows, which an
    # append to a live chat outside a project (the usual one) leaves alone. A
    # list of every chat, deleted ones too, sorts them (a few thousand rows).
    _run(
        db,
        """
    DROP INDEX sessions_updated;
    CREATE INDEX sessions_deleted ON sessions (updated_at) WHERE deleted_at IS NOT NULL;
    DROP INDEX sessions_project;
    CREATE INDEX sessions_project ON sessions (project_id, updated_at) WHERE project_id IS NOT NULL
    """,
    )


@migration
def m015_attachments(db: Database) -> None:
    # Issue 21: files and images attached to messages. Content is stored once,
    # under its sha256; a message's `attachment` part names the hash, so a
    # branch, a regenerated reply or a fork copies a reference, never bytes.
    # (m011-m014 are reserved for other work; the list order is what applies.)
    text, size, blob = (_T, "BIGINT", "BYTEA") if is_postgres(db) else ("TEXT", "INTEGER", "BLOB")
    db.execute_sql(
        f"CREATE TABLE attachments (hash {text} PRIMARY KEY, size {size} NOT NULL, "
        f"content {blob} NOT NULL, created_at {text} NOT NULL)"
    )


def applied_migrations(db: Database, *, create: bool = True) -> list[str]:
    """Names of the migrations the database records, oldest first (creating the record
    table unless `create` is False: a read-only transaction may not)."""
    if create and is_postgres(db):
        db.execute_sql(
            "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, "
            "applied_at TEXT NOT NULL, rowid BIGSERIAL NOT NULL)"
        )
    elif create:
        db.execute_sql(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
    return [row[0] for row in db.execute_sql("SELECT name FROM schema_migrations ORDER BY rowid")]


def migrate(
    db: Database,
    path: str = "",
    upto: str | None = None,
    *,
    before: Callable[[], None] | None = None,
) -> list[str]:
    """Apply every migration not yet recorded; return the names applied.

    Args:
        upto: stop after this migration (tests use it to build old files).
        before: run first inside the transaction that reads the record (the
            engine's migration lock: two processes opening a new database
            migrate one after the other).

    Raises:
        SchemaVersionError: the database records migrations this code does not know.
    """
    from .schema import SchemaMigrationRow

    # PostgreSQL: one transaction holding the engine's lock, so a second process
    # waits, then finds everything applied. SQLite keeps its own rhythm (a
    # transaction per migration; its write lock serialises them).
    with db.atomic() if is_postgres(db) else contextlib.nullcontext():
        with db.atomic():
            if before is not None:
                before()
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
                stamp = datetime.now(UTC).isoformat()
                SchemaMigrationRow.insert(name=name, applied_at=stamp).execute(db)
            done.append(name)
            if name == upto:
                break
    return done
