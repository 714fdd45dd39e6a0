"""store: session memory for LLM agents.

Tree-structured conversations with branching, context blocks rendered into a
system prompt, tools the model calls to edit its own memory, non-destructive
compaction, full-text search and a `SessionManager` for many chats. It
needs no server (SQLite through peewee, the default) and also runs on
PostgreSQL (`Store("postgresql://…")`); it imports no UI or LLM client.
"""

from typing import TYPE_CHECKING

# First, before anything imports peewee: keeps psycopg off the start-up path.
from . import driver as _driver  # noqa: F401
from .agents import UNSET, AgentInfo, AgentSpec
from .block_writes import BranchSite, StoredWrite, UnknownWriteError, session_writes
from .compaction import create_compact_function
from .context import BANNER, ContextBlock, ContextConfig, render_system_prompt
from .db import Store
from .driver import EngineError
from .errors import (
    AttachmentError,
    ContextError,
    ContextLimitError,
    DatabaseFileError,
    DatabaseUnavailableError,
    DuplicateAgentError,
    DuplicateBlockError,
    InvalidStatusError,
    PeerError,
    PeerLoopError,
    ReadOnlyBlockError,
    SchemaVersionError,
    SearchSyntaxError,
    StoreError,
    UnknownAgentError,
    UnknownAttachmentError,
    UnknownBlockError,
    UnknownMessageError,
    UnknownParentError,
    UnknownProjectError,
    UnknownSessionError,
    UnknownSkillError,
)
from .manager import SessionInfo, SessionManager, SessionStatus, StatusChange
from .messages import (
    LATEST,
    Latest,
    Message,
    Role,
    SearchResult,
    StoredCompaction,
    attachment_part,
    text_part,
    tool_call_part,
    tool_result_part,
)
from .micro import truncate_older_messages
from .overlays import apply_compactions
from .peers import PeerHop, PeerRouter, message_agent_tool
from .projects import ProjectInfo
from .prompts import PromptCache, StorePromptCache
from .providers import (
    DirectorySkillProvider,
    StaticProvider,
    StoreContextProvider,
    StoreSearchProvider,
    StoreSkillProvider,
)
from .session import Session
from .storage import SessionProvider, StoreSessionProvider
from .text import (
    CONTROL_CHARS,
    REPLY_STATES,
    ReplyState,
    as_text,
    clean,
    one_line,
    reply_state,
    reply_state_label,
    writer_mark,
    written_elsewhere,
)
from .tokens import estimate_message_tokens, estimate_string_tokens
from .tools import Tool
from .urls import is_url, redact_url, redact_urls_in

if TYPE_CHECKING:  # loaded on first use at run time (`__getattr__` below)
    from .attachments import (
        DEFAULT_MAX_ATTACHMENT_BYTES,
        AttachmentInfo,
        AttachmentKind,
        Attachments,
        attachment_kind,
        data_url,
        format_size,
        guess_mime,
    )
    from .changes import ChangeWatcher
    from .db_copy import CopyError, CopyReport, copy_database
    from .db_info import DatabaseInfo, database_info
    from .transfer import (
        EXPORT_FORMAT,
        EXPORT_VERSION,
        ImportOutcome,
        TransferError,
        document_entries,
        documents_from_entries,
        export_session,
        export_sessions,
        import_sessions,
        load_export,
    )

__all__ = [
    "EngineError",
    # attachments (store.attachments)
    "DEFAULT_MAX_ATTACHMENT_BYTES",
    "AttachmentError",
    "AttachmentInfo",
    "AttachmentKind",
    "Attachments",
    "UnknownAttachmentError",
    "attachment_kind",
    "attachment_part",
    "data_url",
    "format_size",
    "guess_mime",
    # memory per branch (store.block_writes)
    "BranchSite",
    "StoredWrite",
    "session_writes",
    "UnknownWriteError",
    "ChangeWatcher",
    "CopyError",
    "CopyReport",
    "copy_database",
    "DatabaseInfo",
    "database_info",
    "is_url",
    "redact_url",
    "redact_urls_in",
    "CONTROL_CHARS",
    "REPLY_STATES",
    "ReplyState",
    "as_text",
    "clean",
    "one_line",
    "reply_state",
    "reply_state_label",
    "writer_mark",
    "written_elsewhere",
    "BANNER",
    "LATEST",
    "Latest",
    "apply_compactions",
    "text_part",
    "tool_call_part",
    "tool_result_part",
    "ContextBlock",
    "ContextConfig",
    "ContextError",
    "ContextLimitError",
    "DatabaseFileError",
    "DatabaseUnavailableError",
    "DirectorySkillProvider",
    "DuplicateBlockError",
    "InvalidStatusError",
    "Message",
    "ProjectInfo",
    "PromptCache",
    "ReadOnlyBlockError",
    "Role",
    "SchemaVersionError",
    "SearchSyntaxError",
    "SearchResult",
    "Session",
    "SessionInfo",
    "SessionManager",
    "SessionProvider",
    "SessionStatus",
    "StaticProvider",
    "Store",
    "StoreContextProvider",
    "StoreError",
    "StorePromptCache",
    "StoreSearchProvider",
    "StoreSessionProvider",
    "StoreSkillProvider",
    "StoredCompaction",
    "Tool",
    "UnknownBlockError",
    "UnknownMessageError",
    "UnknownParentError",
    "UnknownProjectError",
    "UnknownSessionError",
    "UnknownSkillError",
    "create_compact_function",
    "estimate_message_tokens",
    "estimate_string_tokens",
    "render_system_prompt",
    "truncate_older_messages",
    # backup and restore (store.transfer)
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "ImportOutcome",
    "TransferError",
    "document_entries",
    "documents_from_entries",
    "export_session",
    "export_sessions",
    "import_sessions",
    "load_export",
    "AgentInfo",
    "AgentSpec",
    "DuplicateAgentError",
    "PeerError",
    "PeerLoopError",
    "StatusChange",
    "UNSET",
    "UnknownAgentError",
    "PeerHop",
    "PeerRouter",
    "message_agent_tool",
]

# Attachments, backup, restore, copy and `db info` load on first use (`from store import
# export_session` works as before): an app that opens a store and reads chats
# never needs them, and their modules and dataclasses cost its every start ~5 ms.
# `ChangeWatcher` too: an app polls for other processes' writes after its first frame.
_LAZY = {
    "ChangeWatcher": "changes",
    **{
        name: "attachments"
        for name in (
            "DEFAULT_MAX_ATTACHMENT_BYTES",
            "AttachmentInfo",
            "AttachmentKind",
            "Attachments",
            "attachment_kind",
            "data_url",
            "format_size",
            "guess_mime",
        )
    },
    "CopyError": "db_copy",
    "CopyReport": "db_copy",
    "copy_database": "db_copy",
    "DatabaseInfo": "db_info",
    "database_info": "db_info",
    "EXPORT_FORMAT": "transfer",
    "EXPORT_VERSION": "transfer",
    "ImportOutcome": "transfer",
    "TransferError": "transfer",
    "document_entries": "transfer",
    "documents_from_entries": "transfer",
    "export_session": "transfer",
    "export_sessions": "transfer",
    "import_sessions": "transfer",
    "load_export": "transfer",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'store' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
