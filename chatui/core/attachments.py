"""Files and images attached to the next message: checked, stored once, shown in a tray.

Design notes:
- Content is stored when it is attached (`store.Attachments`: once per sha256),
  so the tray holds a reference and the check happens at once: a file that
  cannot be sent is refused with its reason before the person presses enter.
- What may be sent is decided here, not in the store (which keeps any type):
  images a vision model reads (PNG, JPEG, GIF, WebP) and UTF-8 text files;
  anything else is refused, naming its type.
- Whether the chat's model sees images is decided when the message is sent
  (`ChatEngine`): the model may change between attaching and sending.
- `attach_bytes` takes content from anywhere (an MCP resource, a clipboard):
  the same checks, the same tray.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from store import AttachmentError, Store

__all__ = ["AttachRefused", "Attached", "AttachmentDesk", "pasted_path"]

_SENDABLE = "images (PNG, JPEG, GIF, WebP) and text files"


class AttachRefused(Exception):
    """The file or content cannot be attached; the message names it and says why."""


@dataclass(frozen=True)
class Attached:
    """Content attached to the next message: its `attachment` part (content stored)."""

    part: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.part.get("name") or "")

    @property
    def mime(self) -> str:
        return str(self.part.get("mime") or "")

    @property
    def size(self) -> int:
        return int(self.part.get("size") or 0)

    @property
    def is_image(self) -> bool:
        return self.mime.startswith("image/")

    @property
    def tokens(self) -> int | None:
        """A text file's estimated tokens (None for an image)."""
        tokens = self.part.get("tokens")
        return tokens if isinstance(tokens, int) else None

    @property
    def label(self) -> str:
        """`notes.txt · 1.2 KB · 312 tokens`, `photo.png · image · 5.0 MB`."""
        from store import format_size

        if self.tokens is not None:
            return f"{self.name} · {format_size(self.size)} · {self.tokens:,} tokens"
        return f"{self.name} · image · {format_size(self.size)}"


class AttachmentDesk:
    """Checks and stores what is attached, for one store and size limit."""

    def __init__(self, store: Store, max_bytes: int) -> None:
        from store import Attachments

        self.attachments = Attachments(store, max_bytes=max_bytes)

    def file(self, path: str | os.PathLike[str]) -> Attached:
        """Attach a file (its type from its name, else its first bytes).

        Raises:
            AttachRefused: missing, a folder, unreadable, too large, of a type a model
                cannot take, or not what its name says (a damaged image).
        """
        try:
            name, mime, data = self.attachments.read_file(path)
        except AttachmentError as exc:
            raise AttachRefused(self._reason(exc)) from None
        return self.content(name, mime, data)

    def content(self, name: str, mime: str, data: bytes) -> Attached:
        """Attach content from elsewhere (an MCP resource) under `name`.

        Raises:
            AttachRefused: as `file`.
        """
        from store import attachment_kind

        if isinstance(mime, str) and attachment_kind(mime) == "other":
            raise AttachRefused(
                f"{name} is {mime or 'of an unknown type'}: chatui sends {_SENDABLE} to "
                "the model, so it cannot be attached"
            )
        try:
            return Attached(self.attachments.put(name, mime, data))
        except AttachmentError as exc:
            raise AttachRefused(self._reason(exc)) from None

    def _reason(self, exc: AttachmentError) -> str:
        text = str(exc)
        if "the limit for an attachment" in text:
            text += " (max_attachment_mb in the config)"
        return text


def pasted_path(text: str) -> Path | None:
    """The file a paste names, when the whole paste is one path to an existing file
    (as a terminal pastes a file dropped on it: maybe quoted, maybe `file://`, maybe
    with backslash-escaped spaces); None for anything else, which is typed as text.

    A bare word is never a path (pasting `notes` must type it, even with a file of
    that name here): a path has a `/` or starts with `~`.
    """
    text = text.strip()
    if not text or "\n" in text or len(text) > 4096:
        return None
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    if text.startswith("file://"):
        text = unquote(urlparse(text).path)
    elif "\\ " in text:
        text = text.replace("\\ ", " ")
    if "/" not in text and not text.startswith("~"):
        return None
    path = Path(text).expanduser()
    try:
        return path if path.is_file() else None
    except OSError:
        return None
