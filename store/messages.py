"""The message type every part of the library speaks, and its part shapes.

A `Message` is a plain dataclass; the database stores `to_dict()` as JSON so
unknown part types and metadata survive a round trip untouched.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias

from .utf8 import require_utf8

__all__ = [
    "LATEST",
    "Latest",
    "Message",
    "MessageLike",
    "Role",
    "SearchResult",
    "StoredCompaction",
    "attachment_part",
    "text_part",
    "tool_call_part",
    "tool_result_part",
    "COMPACTION_PREFIX",
]

Role: TypeAlias = Literal["user", "assistant", "tool", "system"]
ROLES: frozenset[str] = frozenset({"user", "assistant", "tool", "system"})
COMPACTION_PREFIX = "compaction_"


class Latest:
    """Sentinel type: "append under the latest leaf" (see `LATEST`)."""

    _instance: Latest | None = None

    def __new__(cls) -> Latest:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "LATEST"

    def __reduce__(self) -> str:
        return "LATEST"


LATEST = Latest()


def _parse_time(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, int | float) and math.isfinite(value):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise ValueError(f"created_at is out of range: {value!r}") from exc
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise ValueError(f"created_at is not an ISO 8601 time: {value!r}") from exc
        parsed = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
        try:
            parsed.astimezone(UTC)  # stored in UTC: 0001-01-01T00:00+05:00 has no UTC time
        except OverflowError as exc:
            raise ValueError(f"created_at is out of range: {value!r}") from exc
        return parsed
    raise ValueError(f"created_at must be a datetime or ISO string, not {type(value).__name__}")


def _stored_time(value: str) -> datetime:
    # The store writes `isoformat()`; a naive value (a caller passed a naive
    # datetime) reads back as UTC, as `_parse_time` does on the way in.
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


# One encoder for every message written: `json.dumps` with options builds a new
# encoder on each call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)

MAX_COUNT = 2**63 - 1
"""The largest count a database column holds (a signed 64-bit integer)."""
_TEXT_PARTS = ("text", "reasoning")
_USAGE_NUMBERS = ("input", "output", "cost")


def _check_parts(parts: Any) -> None:
    """What every reader relies on: parts are objects with a string `type`; a text or
    reasoning part's `text`, when there, is a string; a tool part's id and name are strings.
    Other keys and unknown part types are kept as they are."""
    if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
        raise ValueError("message parts must be a list of dicts")
    for i, part in enumerate(parts):
        kind = part.get("type")
        if not isinstance(kind, str):
            raise ValueError(f"part {i}: 'type' must be a string")
        if kind in _TEXT_PARTS and not isinstance(part.get("text", ""), str):
            raise ValueError(f"part {i}: a {kind} part's 'text' must be a string")
        if kind in ("tool-call", "tool-result"):
            for key in ("tool_call_id", "tool_name"):
                if key in part and not isinstance(part[key], str):
                    raise ValueError(f"part {i}: a {kind} part's {key!r} must be a string")


def _check_number(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where} must be a number, not {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where} must be a finite number, not {value}")
    if not 0 <= value <= MAX_COUNT:
        raise ValueError(f"{where} must be between 0 and 2^63-1")


def _check_usage(usage: Any, where: str = "token_usage", depth: int = 0) -> None:
    """Token usage: an object whose numbers are counts (0 … 2^63-1, finite); `input`,
    `output` and `cost` are numbers when given. Provider details may nest one level."""
    if usage is None and depth == 0:
        return
    if not isinstance(usage, dict) or depth > 1:
        raise ValueError(f"{where} must be an object of token counts")
    for key, value in usage.items():
        at = f"{where}[{key!r}]"
        if key in _USAGE_NUMBERS and depth == 0:
            _check_number(value, at)
        elif isinstance(value, dict):
            _check_usage(value, at, depth + 1)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            _check_number(value, at)
        elif value is not None and not isinstance(value, str | bool):
            raise ValueError(f"{at} must be a number")


@dataclass
class Message:
    """One message in a conversation tree.

    `parts` holds dicts with a `type` key (`text`, `reasoning`, `tool-call`,
    `tool-result`, `attachment` (a reference to content in `store.attachments`),
    `file`, or anything else, kept as-is).
    """

    id: str
    role: str
    parts: list[dict[str, Any]]
    created_at: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    from_user_id: str | None = None
    from_agent_id: str | None = None
    delivered_to_session_id: str | None = None
    token_usage: dict[str, Any] | None = None
    parent_id: str | None = None
    """Set on messages read back from a store; ignored when appending."""

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError("message id must be a non-empty string")
        if not isinstance(self.role, str) or self.role not in ROLES:
            raise ValueError(f"message role must be one of {sorted(ROLES)}, not {self.role!r}")
        _check_parts(self.parts)
        # None, not falsy: the table's CHECK counts "" as a sender (a chatui file
        # with "from_agent_id": "" beside a user was a database error on import).
        if self.from_user_id is not None and self.from_agent_id is not None:
            raise ValueError("a message has one sender: from_user_id or from_agent_id, not both")
        # Per append: most messages have none of these, and no time of their own yet.
        if not (
            self.from_user_id is None
            and self.from_agent_id is None
            and self.delivered_to_session_id is None
        ):
            for key in ("from_user_id", "from_agent_id", "delivered_to_session_id"):
                if getattr(self, key) is not None and not isinstance(getattr(self, key), str):
                    raise ValueError(f"{key} must be a string")
        if not isinstance(self.metadata, dict):
            raise ValueError("message metadata must be a dict")
        if self.token_usage is not None:
            _check_usage(self.token_usage)
        if self.created_at is not None:
            self.created_at = _parse_time(self.created_at)

    @property
    def text(self) -> str:
        """The text parts joined by newlines."""
        return "\n".join(
            p["text"]
            for p in self.parts
            if p.get("type") == "text" and isinstance(p.get("text"), str) and p["text"]
        )  # a row written before parts were checked may hold a number there: not shown

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The `tool-call` parts, in order."""
        return [p for p in self.parts if p.get("type") == "tool-call"]

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """The `tool-result` parts, in order."""
        return [p for p in self.parts if p.get("type") == "tool-result"]

    @property
    def attachments(self) -> list[dict[str, Any]]:
        """The `attachment` parts, in order."""
        return [p for p in self.parts if p.get("type") == "attachment"]

    @property
    def is_compaction(self) -> bool:
        """True for the synthetic summary message of a compaction overlay."""
        return self.id.startswith(COMPACTION_PREFIX)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; `from_dict(to_dict())` gives an equal message."""
        data: dict[str, Any] = {"id": self.id, "role": self.role, "parts": self.parts}
        if self.created_at is not None:
            data["created_at"] = self.created_at.isoformat()
        if self.metadata:
            data["metadata"] = self.metadata
        # Spelled out, not a getattr loop: this runs per append and per export row.
        if self.from_user_id is not None:
            data["from_user_id"] = self.from_user_id
        if self.from_agent_id is not None:
            data["from_agent_id"] = self.from_agent_id
        if self.delivered_to_session_id is not None:
            data["delivered_to_session_id"] = self.delivered_to_session_id
        if self.token_usage is not None:
            data["token_usage"] = self.token_usage
        if self.parent_id is not None:
            data["parent_id"] = self.parent_id
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """Build a message from a mapping with the same keys as the dataclass.

        Raises:
            ValueError: a key is missing or has the wrong type.
        """
        # `type(...) is dict` first: an ABC's isinstance is slow, and this runs per append.
        if type(data) is not dict and not isinstance(data, Mapping):
            raise ValueError(f"a message must be a mapping, not {type(data).__name__}")
        if not _FIELDS.issuperset(data):
            unknown = set(data) - _FIELDS
            raise ValueError(f"unknown message keys: {sorted(unknown)}")
        for key in ("id", "role"):
            if key not in data:
                raise ValueError(f"a message needs {key!r}")
        parts = data.get("parts")
        if parts is None and "content" in data and isinstance(data["content"], str):
            parts = [text_part(data["content"])]  # tolerate {"role", "content"} chat dicts
        if parts is not None and not isinstance(parts, list):
            raise ValueError("message parts must be a list of dicts")
        metadata = data.get("metadata")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ValueError(f"message metadata must be an object, not {type(metadata).__name__}")
        kwargs = {k: v for k, v in data.items() if k != "content"}
        kwargs["parts"] = [
            dict(p) if type(p) is dict or isinstance(p, Mapping) else p for p in (parts or [])
        ]
        kwargs["metadata"] = dict(metadata or {})
        return cls(**kwargs)

    @classmethod
    def from_stored(
        cls, data: Mapping[str, Any], parent_id: str | None, created_at: str
    ) -> Message:
        """Rebuild a message from the JSON the store wrote, without validating again.

        Every stored message passed `__post_init__` on its way in, and reads
        far outnumber writes: validating each row of a history again cost more
        than the SQL that fetched it. `created_at` is the row's column, used
        when the JSON has none (files written before it was stored there).
        """
        message = object.__new__(cls)
        message.__dict__.update(
            id=data["id"],
            role=data["role"],
            parts=data.get("parts") or [],
            created_at=_stored_time(data.get("created_at") or created_at),
            metadata=data.get("metadata") or {},
            from_user_id=data.get("from_user_id"),
            from_agent_id=data.get("from_agent_id"),
            delivered_to_session_id=data.get("delivered_to_session_id"),
            token_usage=data.get("token_usage"),
            parent_id=parent_id,
        )
        return message

    @classmethod
    def coerce(cls, value: MessageLike) -> Message:
        """Accept a `Message` or a mapping; always return a `Message`."""
        return value if isinstance(value, Message) else cls.from_dict(value)

    def to_json(self) -> str:
        """Serialise; raises ValueError when a part holds something JSON cannot."""
        try:
            text = _ENCODER.encode(self.to_dict())
        except (TypeError, ValueError, RecursionError) as exc:
            raise ValueError(f"message {self.id!r} is not JSON-serialisable: {exc}") from exc
        return require_utf8(text, f"message {self.id!r}")


_FIELDS = {f for f in Message.__dataclass_fields__} | {"content"}

MessageLike: TypeAlias = Message | Mapping[str, Any]


def text_part(text: str) -> dict[str, Any]:
    """A `text` part."""
    return {"type": "text", "text": text}


def attachment_part(
    name: str, mime: str, size: int, hash: str, tokens: int | None = None
) -> dict[str, Any]:
    """An `attachment` part: a file's name and type, and the sha256 `hash` of its
    content, which the store holds once (`store.attachments`); the part never
    holds the content, so copying a message (a branch, a fork) copies no bytes.
    `tokens`: a text file's estimated size in tokens (what the gauge counts)."""
    part: dict[str, Any] = {
        "type": "attachment",
        "name": name,
        "mime": mime,
        "size": size,
        "hash": hash,
    }
    if tokens is not None:
        part["tokens"] = tokens
    return part


def tool_call_part(tool_call_id: str, tool_name: str, input: Any) -> dict[str, Any]:
    """A `tool-call` part (in an assistant message)."""
    return {
        "type": "tool-call",
        "tool_call_id": tool_call_id,
        "tool_name": tool_name,
        "input": input,
    }


def tool_result_part(
    tool_call_id: str, tool_name: str, output: Any, is_error: bool = False
) -> dict[str, Any]:
    """A `tool-result` part (in a `tool` message)."""
    part = {
        "type": "tool-result",
        "tool_call_id": tool_call_id,
        "tool_name": tool_name,
        "output": output,
    }
    if is_error:
        part["is_error"] = True
    return part


@dataclass(frozen=True)
class SearchResult:
    """One search hit, best first in the lists that carry it."""

    id: str
    role: str
    content: str
    created_at: datetime | None
    session_id: str
    snippet: str = ""
    """A short excerpt of the message text, as written (no marks added)."""
    rank: float = 0.0
    matches: tuple[tuple[int, int], ...] = ()
    """[start, end) of each matched word in `snippet`, for a UI to highlight."""
    deleted: bool = False
    """True when the message belongs to a soft-deleted chat (SPEC §5: still found)."""

    def marked_snippet(self, open_: str = "[", close: str = "]") -> str:
        """`snippet` with each match wrapped in `open_` `close`, for a plain-text UI."""
        out: list[str] = []
        cursor = 0
        for start, end in self.matches:
            out += [self.snippet[cursor:start], open_, self.snippet[start:end], close]
            cursor = end
        out.append(self.snippet[cursor:])
        return "".join(out)


@dataclass(frozen=True)
class StoredCompaction:
    """A summary overlay that hides the path `from_message_id … to_message_id`."""

    id: str
    session_id: str
    summary: str
    from_message_id: str
    to_message_id: str
    created_at: datetime
