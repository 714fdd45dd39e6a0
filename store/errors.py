"""Exceptions raised by the store library.

Every error a caller can act on has its own class, all under `StoreError`, so
"not found" is never confused with "disk full" (sqlite errors pass through).
"""

from __future__ import annotations

__all__ = [
    "StoreError",
    "DatabaseFileError",
    "DatabaseUnavailableError",
    "SchemaVersionError",
    "SearchSyntaxError",
    "UnknownParentError",
    "UnknownMessageError",
    "UnknownSessionError",
    "UnknownProjectError",
    "UnknownAgentError",
    "DuplicateAgentError",
    "PeerError",
    "PeerLoopError",
    "InvalidStatusError",
    "ContextError",
    "ContextLimitError",
    "ReadOnlyBlockError",
    "UnknownBlockError",
    "DuplicateBlockError",
    "UnknownSkillError",
    "AttachmentError",
    "UnknownAttachmentError",
]


class StoreError(Exception):
    """Base class of every error the store raises on purpose."""


class DatabaseFileError(StoreError):
    """The database cannot be used (not SQLite, unreadable, corrupt, not chatui's)."""


class DatabaseUnavailableError(DatabaseFileError):
    """The database server does not answer (down, unreachable, refusing the login).

    A `DatabaseFileError` too, so code that handles "cannot open the database"
    handles it; the CLI gives it its own exit code (a script may retry).
    """


class SchemaVersionError(StoreError):
    """The database was written by a newer chatui/store than this one."""


class SearchSyntaxError(StoreError, ValueError):
    """A search string that is not a query (an unclosed quote or parenthesis, an
    operator without its words, too many words); the message says which."""


class UnknownParentError(StoreError, ValueError):
    """`append_message` was given a parent id that does not exist in the session."""


class UnknownMessageError(StoreError, KeyError):
    """No message with that id in the session."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown message"


class UnknownSessionError(StoreError, KeyError):
    """No session with that id (or it was purged)."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "unknown session"


class UnknownProjectError(StoreError, KeyError):
    """No project with that id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown project"


class UnknownAgentError(StoreError, KeyError):
    """No agent with that id or name (or it is archived where a live one is needed)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown agent"


class DuplicateAgentError(StoreError, ValueError):
    """Another agent already has that name (names are unique whatever their case)."""


class PeerError(StoreError):
    """A peer message could not be delivered or answered; the caller's state is restored."""


class PeerLoopError(PeerError):
    """The target agent is already waiting in this chain of peer calls, or it is too deep."""


class InvalidStatusError(StoreError, ValueError):
    """A session status outside `SessionStatus`."""


class ContextError(StoreError):
    """Base class of context-block errors."""


class ContextLimitError(ContextError, ValueError):
    """A write would exceed the block's `max_tokens`; nothing was written."""


class ReadOnlyBlockError(ContextError):
    """The block's provider has no `set`."""


class UnknownBlockError(ContextError, KeyError):
    """No context block with that label."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown block"


class DuplicateBlockError(ContextError, ValueError):
    """A context block with that label already exists."""


class UnknownSkillError(ContextError, KeyError):
    """The skill provider has no document with that key."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown skill"


class AttachmentError(StoreError, ValueError):
    """A file or content cannot be attached (missing, unreadable, too large, not the
    type it claims); the message names it and says why. Nothing was stored."""


class UnknownAttachmentError(StoreError, KeyError):
    """No attachment content with that hash in the store."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown attachment"
