"""The store's tables as peewee models: the one place that says what a row holds.

Design notes:
- The models describe today's tables (the shape the last migration left);
  migrations freeze their own shapes and never import these, so an old
  migration keeps meaning what it meant when it was written.
- The models are not bound to a database: a process may hold several
  `Store`s at once (tests, `db copy`). A query is built here and run on one
  store with `store.run(query)` / `store.rows(query)`, which binds it to that
  store's connection for that call only.
- Timestamps stay ISO-8601 text, exactly as the hand-written SQL wrote them,
  so files made by earlier versions read back unchanged.
- Rows never leave `store/`: callers turn them into the dataclasses of
  `records`, `projects`, `agents`...
"""

from __future__ import annotations

from peewee import (
    AutoField,
    BigIntegerField,
    BlobField,
    CompositeKey,
    FloatField,
    IntegerField,
    Model,
    TextField,
)

__all__ = [
    "AgentRow",
    "AttachmentRow",
    "BlockWriteRow",
    "CompactionRow",
    "ContextBlockRow",
    "EntryIndexRow",
    "LoadedSkillRow",
    "MessageIndexRow",
    "MessageRow",
    "PeerHopRow",
    "PeerLinkRow",
    "ProjectRow",
    "PromptRow",
    "SchemaMigrationRow",
    "SearchEntryRow",
    "SearchScopeRow",
    "SessionRow",
    "SkillRow",
    "StatusChangeRow",
    "MODELS",
]


class _Table(Model):
    class Meta:
        database = None  # bound per query (see the module docstring)
        legacy_table_names = False


class SchemaMigrationRow(_Table):
    """One applied migration (see `migrations`)."""

    name = TextField(primary_key=True)
    applied_at = TextField()

    class Meta:
        table_name = "schema_migrations"


class SessionRow(_Table):
    """A chat's registry entry (`SessionInfo` outside the store)."""

    id = TextField(primary_key=True)
    name = TextField()
    parent_session_id = TextField(null=True)
    model = TextField(null=True)
    source = TextField(null=True)
    input_tokens = IntegerField(default=0)
    output_tokens = IntegerField(default=0)
    cost = FloatField(default=0)
    created_at = TextField()
    updated_at = TextField()
    agent_id = TextField(null=True)
    project_id = TextField(null=True)
    status = TextField(default="active")
    metadata = TextField(default="{}")
    deleted_at = TextField(null=True)
    status_detail = TextField(null=True)

    class Meta:
        table_name = "sessions"


class MessageRow(_Table):
    """One message of a session's tree; `seq` is the append order."""

    seq = AutoField()
    id = TextField()
    session_id = TextField()
    parent_id = TextField(null=True)
    role = TextField()
    content = TextField()  # the message's JSON
    created_at = TextField()
    from_user_id = TextField(null=True)
    from_agent_id = TextField(null=True)
    delivered_to_session_id = TextField(null=True)
    token_usage = TextField(null=True)

    class Meta:
        table_name = "messages"


class CompactionRow(_Table):
    """A summary standing for a run of messages (an overlay, never an edit)."""

    id = TextField(primary_key=True)
    session_id = TextField()
    summary = TextField()
    from_message_id = TextField()
    to_message_id = TextField()
    created_at = TextField()

    class Meta:
        table_name = "compactions"


class SearchScopeRow(_Table):
    """A session's number: its search rows are keyed (n << 32) + seq."""

    n = AutoField()
    session_id = TextField(unique=True)

    class Meta:
        table_name = "search_scopes"


class MessageIndexRow(_Table):
    """The search index row of a message: rowid (session number << 32) + seq.

    On SQLite an FTS5 table (`rowid` is FTS5's own); on PostgreSQL a table whose
    generated `tsv` column is the tsvector of `body`. Written here the same way
    on both; searched by the engine (`store.engines`).
    """

    rowid = BigIntegerField(primary_key=True)
    body = TextField()  # the message's search text, prepared (`text_prep`)

    class Meta:
        table_name = "messages_fts"


class ContextBlockRow(_Table):
    """A writable memory block of a namespace."""

    namespace = TextField()
    label = TextField()
    content = TextField()
    updated_at = TextField()

    class Meta:
        table_name = "context_blocks"
        primary_key = CompositeKey("namespace", "label")


class BlockWriteRow(_Table):
    """One write to a memory block: its whole new content, who made it and where.

    `session_id`/`message_id` name the chat and the message (a tool call's
    reply, or the leaf a person was looking at) the write belongs to; a
    branch-aware block's content on a branch is the newest write on its path
    (a write without a message applies to every branch).
    """

    seq = AutoField()
    namespace = TextField()
    label = TextField()
    content = TextField()
    session_id = TextField(null=True)
    message_id = TextField(null=True)
    origin = TextField(default="model")
    written_at = TextField()
    reverted_at = TextField(null=True)

    class Meta:
        table_name = "block_writes"


class SearchEntryRow(_Table):
    """A searchable entry of a namespace (indexed in `search_entries_fts`)."""

    rowid = AutoField()
    namespace = TextField()
    key = TextField()
    content = TextField()
    updated_at = TextField()

    class Meta:
        table_name = "search_entries"


class EntryIndexRow(_Table):
    """The search index row of a `SearchEntry` (same rowid; FTS5 or tsvector, as above)."""

    rowid = BigIntegerField(primary_key=True)
    content = TextField()  # prepared (`text_prep`)
    scope = TextField()  # `db.scope_token(namespace)`: FTS5 matches it; PostgreSQL joins instead

    class Meta:
        table_name = "search_entries_fts"


class SkillRow(_Table):
    """A skill a model can load into its context."""

    namespace = TextField()
    key = TextField()
    content = TextField()
    description = TextField(null=True)
    updated_at = TextField()

    class Meta:
        table_name = "skills"
        primary_key = CompositeKey("namespace", "key")


class LoadedSkillRow(_Table):
    """Which skills a namespace's block has loaded, and by which tool call."""

    namespace = TextField()
    label = TextField()
    key = TextField()
    tool_call_id = TextField(null=True)
    message_id = TextField(null=True)

    class Meta:
        table_name = "loaded_skills"
        primary_key = CompositeKey("namespace", "label", "key")


class PromptRow(_Table):
    """The frozen system prompt of a namespace (`with_cached_prompt`)."""

    namespace = TextField(primary_key=True)
    prompt = TextField()
    updated_at = TextField()

    class Meta:
        table_name = "prompts"


class ProjectRow(_Table):
    """A named unit of work owning sessions."""

    id = TextField(primary_key=True)
    name = TextField()
    created_at = TextField()
    archived_at = TextField(null=True)

    class Meta:
        table_name = "projects"


class AgentRow(_Table):
    """A named model configuration (soul, tools, model)."""

    id = TextField(primary_key=True)
    name = TextField()
    model = TextField(null=True)
    soul = TextField(default="")
    description = TextField(default="")
    config = TextField(default="{}")
    created_at = TextField()
    updated_at = TextField()
    archived_at = TextField(null=True)

    class Meta:
        table_name = "agents"


class StatusChangeRow(_Table):
    """One entry of a session's status history."""

    seq = AutoField()
    session_id = TextField()
    status = TextField()
    detail = TextField(null=True)
    changed_at = TextField()

    class Meta:
        table_name = "status_changes"


class PeerLinkRow(_Table):
    """Which session answers a caller session for an agent."""

    caller_session_id = TextField()
    agent_id = TextField()
    session_id = TextField()
    created_at = TextField()

    class Meta:
        table_name = "peer_links"
        primary_key = CompositeKey("caller_session_id", "agent_id")


class PeerHopRow(_Table):
    """One delivery of a peer message and its outcome."""

    id = TextField(primary_key=True)
    from_session_id = TextField()
    from_agent_id = TextField(null=True)
    from_message_id = TextField(null=True)
    to_session_id = TextField()
    to_agent_id = TextField()
    message_id = TextField()
    reply_message_id = TextField(null=True)
    wait = IntegerField()
    state = TextField()
    error = TextField(null=True)
    created_at = TextField()
    finished_at = TextField(null=True)

    class Meta:
        table_name = "peer_hops"


class AttachmentRow(_Table):
    """An attachment's content, stored once under its sha256 (`store.attachments`);
    messages name it in their `attachment` parts."""

    hash = TextField(primary_key=True)  # sha256, 64 lowercase hex digits
    size = BigIntegerField()
    content = BlobField()
    created_at = TextField()

    class Meta:
        table_name = "attachments"


# Every table with a model, in an order that copies parents before children.
MODELS: tuple[type[Model], ...] = (
    ProjectRow,
    AgentRow,
    SessionRow,
    SearchScopeRow,
    MessageRow,
    CompactionRow,
    StatusChangeRow,
    ContextBlockRow,
    BlockWriteRow,
    SearchEntryRow,
    SkillRow,
    LoadedSkillRow,
    PromptRow,
    PeerLinkRow,
    PeerHopRow,
    AttachmentRow,
)
