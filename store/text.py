"""Plain-text helpers every layer shares: control characters, one-line previews,
Markdown as the words it shows, a value as text, and the words for how a reply ended.

They live in `store` because it is the one package both `widgets` and `chatui`
may import; nothing here draws anything.
"""

from __future__ import annotations

import json
import os
import re
import socket
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias

from .messages import Message

__all__ = [
    "CONTROL_CHARS",
    "ESCAPE_SEQUENCES",
    "REPLY_STATES",
    "ReplyState",
    "as_text",
    "clean",
    "one_line",
    "plain",
    "reply_state",
    "reply_state_label",
    "written_elsewhere",
    "writer_mark",
]

ESCAPE_SEQUENCES = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]            # CSI
    | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?   # OSC, to BEL or ST (or unterminated)
    | \x1b[PX^_][^\x1b]*(?:\x1b\\)?    # DCS, SOS, PM, APC
    | \x1b[@-Z\\-_]                    # other two-byte escapes
    | \x9b[0-?]*[ -/]*[@-~]            # 8-bit CSI
    | \x9d[^\x07\x9c]*[\x07\x9c]?      # 8-bit OSC
    """,
    re.VERBOSE,
)
"""ESC-introduced sequences: CSI, OSC (to BEL or ST), DCS/SOS/PM/APC, two-byte escapes."""

CONTROL_CHARS = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
"""C0 controls except tab and newline, DEL, C1 controls, a lone ESC, and the bidi
controls that would reorder what a terminal shows: the one set every layer removes."""

_LINE_SEPARATORS = re.compile("[\u2028\u2029]")
_CR_LINE = re.compile(r"\r(?!\n)")


def clean(text: str) -> str:
    """`text` without escape sequences or control characters (newlines and tabs kept)."""
    if not text:
        return ""
    text = ESCAPE_SEQUENCES.sub("", text)
    text = text.replace("\r\n", "\n")
    text = _CR_LINE.sub("\n", text)  # a bare CR would overwrite the line before it
    text = _LINE_SEPARATORS.sub("\n", text)
    return CONTROL_CHARS.sub("", text)


def one_line(text: str, width: int | None = 80) -> str:
    """A clean single-line preview, whitespace collapsed, cut to `width` with an ellipsis
    (None: not cut)."""
    flat = " ".join(clean(text).split())
    if width is None or len(flat) <= width:
        return flat
    return flat[: max(width - 1, 1)].rstrip() + "…"


def as_text(value: Any, *, indent: int | None = 2) -> str:
    """A tool's input or output as text: strings as they are, None as "", anything else
    as JSON (`str()` when it is not JSON-able). The one "value as text" of every layer."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, indent=indent)
    except (TypeError, ValueError):
        return str(value)


ReplyState: TypeAlias = Literal[
    "writing", "complete", "cancelled", "error", "interrupted", "truncated"
]
"""How a model reply stands: being written now; finished; stopped by the user (what
arrived is kept); failed (with `metadata["error"]`); cut off by a crash or a closed
app while it was being written; cut off by the model's output limit (its
`finish_reason` was "length": kept, and it can be continued)."""

REPLY_STATES: tuple[ReplyState, ...] = (
    "writing",
    "complete",
    "cancelled",
    "error",
    "interrupted",
    "truncated",
)


WRITER_SILENT_SECONDS = 300
"""A reply another machine writes is taken as interrupted when its last flush is older
than this (its process cannot be asked): flushes come with every burst of text."""


def writer_mark() -> dict[str, Any]:
    """Who writes a reply being streamed, and when it last wrote: stored in the reply's
    metadata with each flush, so another process tells a live reply from a dead one."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "at": datetime.now(UTC).isoformat()}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # it exists (another user's), or the platform cannot tell: assume so
    return True


def written_elsewhere(message: Message) -> bool:
    """The reply is still being written by another process (not this one): one on this
    machine that is alive, or one on another machine that wrote lately."""
    mark = message.metadata.get("writer")
    if not isinstance(mark, dict):
        return False
    pid = mark.get("pid")
    if mark.get("host") == socket.gethostname():
        return isinstance(pid, int) and pid != os.getpid() and _alive(pid)
    try:
        at = datetime.fromisoformat(str(mark.get("at")))
    except ValueError:
        return False
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return (datetime.now(UTC) - at).total_seconds() < WRITER_SILENT_SECONDS


def reply_state(message: Message, *, live: bool = False) -> ReplyState | None:
    """The state of an assistant reply (None for other messages).

    `live`: the reply is being written by this process now. A stored reply still
    marked streaming is being written when another process is writing it (see
    `written_elsewhere`); when nobody writes it, it was interrupted.
    """
    if message.role != "assistant" or message.is_compaction:
        return None
    meta = message.metadata
    status = meta.get("status")
    if status == "cancelled":
        return "cancelled"
    if status == "error":
        return "error"
    if status == "truncated":
        return "truncated"
    if meta.get("incomplete") or status == "streaming":
        return "writing" if live or written_elsewhere(message) else "interrupted"
    return "complete"


def reply_state_label(message: Message, state: ReplyState | None) -> str:
    """The words shown for a state ("" for a complete reply or another message)."""
    if state == "writing":
        if written_elsewhere(message):
            return "writing… in another window"
        return "writing…"
    if state == "cancelled":
        return "cancelled — partial reply" if message.text else "cancelled before any text"
    if state == "error":
        return f"error — {one_line(str(message.metadata.get('error') or 'reply failed'), 80)}"
    if state == "interrupted":
        return "incomplete — the reply was interrupted"
    if state == "truncated":
        return "truncated — the model's output limit cut it off"
    return ""


# -- Markdown as the words it shows ---------------------------------------------------
#
# Replies (and questions) are Markdown: a one-line preview read "## Plan **Sure!** Run
# `pip` … ```python" where the chat shows "Plan Sure! Run pip … python". Only the marks
# a reader never sees go: heading hashes, code fences, emphasis, inline code's
# backticks, a link's address (its text stays). A star or underscore inside a word or
# between spaces stays (`2*3*4`, `snake_case`), and so do lists and quotes.

_FENCE = re.compile(r"^[ \t]*(?:```|~~~)[^\n]*$", re.MULTILINE)
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+", re.MULTILINE)
_IMAGE_OR_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")
_STRONG = re.compile(r"(?<![\w*])(\*\*|__)(?=\S)(.+?)(?<=\S)\1(?![\w*])")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=\S)\*(?![\w*])")
_UNDERSCORE = re.compile(r"(?<![\w_])_(?=[^\s_])([^_\n]+?)(?<=\S)_(?![\w_])")
_CODE = re.compile(r"`([^`\n]+)`")


def plain(text: str) -> str:
    """`text` without the Markdown marks a reader of the rendered reply never sees."""
    if not any(mark in text for mark in "#`*_["):
        return text  # most texts: nothing to take out
    text = _FENCE.sub("", text)
    text = _HEADING.sub("", text)
    text = _IMAGE_OR_LINK.sub(r"\1", text)
    text = _CODE.sub(r"\1", text)
    text = _STRONG.sub(r"\2", text)
    text = _EMPHASIS.sub(r"\1", text)
    return _UNDERSCORE.sub(r"\1", text)
