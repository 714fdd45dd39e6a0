"""What a running turn reports to whoever shows it (the app, a test, the CLI).

The engine (`chatui.core.engine`) yields these from an async generator; it never
touches the UI. Every event that names a message names one already stored,
so whatever shows it can re-read the database and find the same thing.
`JobEnded` is the reply job's last word (`chatui.core.jobs`).

A streaming reply's text is one `LiveText`: the engine's writer appends to it
and stores it; `ReplyStarted` hands it out by reference, so a view opened in
the middle of the reply reads it once, then draws each `ReplyDelta`'s text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from store import (
    REPLY_STATES,
    Message,
    ReplyState,
    StoredCompaction,
    reply_state,
    written_elsewhere,
)

from .context_usage import Measured

__all__ = [
    "REPLY_STATES",
    "Compacted",
    "ContextMeasured",
    "JobEnded",
    "JobEvent",
    "LiveText",
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
    "TurnKind",
    "UsageRecorded",
    "reply_state",
    "written_elsewhere",
]

TurnKind: TypeAlias = Literal["send", "regenerate", "edit", "respond", "continue"]
"""What started a turn: the user's send, a regenerate, an edit, a peer's message."""

ReplyStatus: TypeAlias = Literal["complete", "tool_calls", "cancelled", "error", "truncated"]
"""How one model call ended, as the engine stores it in `metadata["status"]`.

What a reply *shows* (chat pane, tree, chat list, `chatui show`, exports) is its
`ReplyState` — writing, complete, cancelled, error, interrupted — read from the
stored message by `reply_state(message, live=...)` (defined in `store.text`, so
widgets and every headless module share the one vocabulary)."""


class LiveText:
    """The text of a reply being written, growing as it streams.

    The one copy of a live reply's text outside the store: the engine's writer
    appends to it and stores it from it; the reply job hands it to a view that
    opens mid-reply (`ReplyStarted.live`). Views draw `ReplyDelta` texts, never
    this; reading it joins the pieces once (cheap to append, cheap to read).
    """

    __slots__ = ("_parts",)

    def __init__(self, text: str = "") -> None:
        self._parts: list[str] = [text] if text else []

    def append(self, text: str) -> None:
        if text:
            self._parts.append(text)

    def clear(self) -> None:
        self._parts.clear()

    @property
    def text(self) -> str:
        """Everything appended so far."""
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def __bool__(self) -> bool:
        return bool(self._parts)

    def __repr__(self) -> str:
        return f"LiveText({self.text!r})"


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
    live: LiveText = field(default_factory=LiveText, compare=False)
    """Its text as it streams (the writer's): read by a view opened mid-reply."""


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
class ContextMeasured:
    """The next request of the chat, measured at the end of a turn by the rule every
    figure uses (`context_usage.measure`): what auto-compaction decided on, and what
    the sidebar draws, so both show one number."""

    session_id: str
    leaf_id: str
    measured: Measured


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
    | ContextMeasured
    | Notice
    | TurnFailed
)


@dataclass(frozen=True)
class JobEnded:
    """A chat's reply job ended: `outcome` says how; `failure` is (text, title) to show."""

    session_id: str
    outcome: Literal["finished", "cancelled", "failed"]
    failure: tuple[str, str] | None = None
    storage: bool = False
    """The failure was the database refusing a write (the typed text may be unsaved)."""
    advice: str | None = None
    """For a storage failure: what to do, in the database engine's terms (a SQLite
    file's disk and permissions, a PostgreSQL server's connection or disk)."""


JobEvent: TypeAlias = TurnEvent | JobEnded
