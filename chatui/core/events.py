"""What a running turn reports to whoever shows it (the app, a test, the CLI).

The engine (`chatui.core.engine`) yields these from an async generator; it never
touches the UI. Every event that names a message names one already stored,
so whatever shows it can re-read the database and find the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from store import REPLY_STATES, Message, ReplyState, StoredCompaction, reply_state

__all__ = [
    "REPLY_STATES",
    "Compacted",
    "MemoryChanged",
    "MessageStored",
    "Notice",
    "ReplyDelta",
    "ReplyFinished",
    "ReplyStarted",
    "ReplyState",
    "ReplyStatus",
    "TurnEvent",
    "TurnFailed",
    "UsageRecorded",
    "reply_state",
]

ReplyStatus: TypeAlias = Literal["complete", "tool_calls", "cancelled", "error"]
"""How one model call ended, as the engine stores it in `metadata["status"]`.

What a reply *shows* (chat pane, tree, chat list, `chatui show`, exports) is its
`ReplyState` — writing, complete, cancelled, error, interrupted — read from the
stored message by `reply_state(message, live=...)` (defined in `store.text`, so
widgets and every headless module share the one vocabulary)."""


@dataclass(frozen=True)
class MessageStored:
    """A whole message was stored: the user's, an edit, or a tool message with results."""

    session_id: str
    message: Message


@dataclass(frozen=True)
class ReplyStarted:
    """An assistant message was stored empty (marked incomplete) and will now stream."""

    session_id: str
    message: Message
    model: str


@dataclass(frozen=True)
class ReplyDelta:
    """Text appended to a streaming reply (`kind` says which part grows)."""

    session_id: str
    message_id: str
    text: str
    kind: Literal["text", "reasoning"] = "text"


@dataclass(frozen=True)
class ReplyFinished:
    """The reply is stored in its final form; `status` says how it ended.

    `tool_calls`: the reply asked for tools; their results follow as a
    `MessageStored` and the model is called again.
    """

    session_id: str
    message: Message
    status: ReplyStatus


@dataclass(frozen=True)
class MemoryChanged:
    """A tool wrote context blocks; the sidebar should re-read them."""

    session_id: str
    labels: tuple[str, ...]


@dataclass(frozen=True)
class UsageRecorded:
    """Tokens and cost of one model call, already added to the chat's counters."""

    session_id: str
    message_id: str
    input_tokens: int
    output_tokens: int
    cost: float


@dataclass(frozen=True)
class Compacted:
    """A compaction overlay was stored (automatically or on request)."""

    session_id: str
    compaction: StoredCompaction


@dataclass(frozen=True)
class Notice:
    """Something the user should read that is not an error (a retry, a bound hit)."""

    session_id: str
    text: str
    level: Literal["info", "warning"] = "info"


@dataclass(frozen=True)
class TurnFailed:
    """The turn stopped on an error; what was stored stays stored.

    `title` is one short line ("The API key was rejected"), `detail` what
    the provider said (secrets removed), `hint` what to do about it.
    """

    session_id: str
    title: str
    detail: str = ""
    hint: str = ""
    kind: str = "unknown"


TurnEvent: TypeAlias = (
    MessageStored
    | ReplyStarted
    | ReplyDelta
    | ReplyFinished
    | MemoryChanged
    | UsageRecorded
    | Compacted
    | Notice
    | TurnFailed
)
