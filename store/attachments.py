"""Attachments: file and image content stored once, by its sha256, for messages to name.

Design notes and invariants:
- Content lives in the `attachments` table under its sha256 (64 lowercase hex
  digits) and nowhere else. A message holds an `attachment` part (name, mime,
  size, hash: `messages.attachment_part`), so a branch, a regenerated reply
  or a fork copies a reference of ~150 bytes, never the content; storing the
  same bytes again (another branch, another chat, another name) writes nothing.
- The name and the type belong to the part, not to the content: the same
  bytes may be `notes.txt` in one chat and `copy.md` in another.
- Every check happens before anything is written: a file that is missing,
  unreadable, a folder, over the size limit, an image whose first bytes are
  not its format's, or "text" that is not UTF-8 raises `AttachmentError`
  naming it, and the store is unchanged.
- The store keeps any type a caller gives (a library may attach a PDF);
  `attachment_kind` says what a chat model can take (images and text), so
  the app refuses the rest with a reason.
- Content is never deleted with a chat: other chats may share it.
  `prune()` removes what no stored message names.
"""

from __future__ import annotations

import base64
import hashlib
import json
import mimetypes
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, TypeAlias

from peewee import fn

from .clock import iso, now
from .db import Store
from .errors import AttachmentError, UnknownAttachmentError
from .messages import Message, attachment_part
from .schema import AttachmentRow as A  # short: the queries below read as SQL
from .schema import MessageRow
from .text import one_line
from .tokens import estimate_string_tokens

__all__ = [
    "DEFAULT_MAX_ATTACHMENT_BYTES",
    "AttachmentInfo",
    "AttachmentKind",
    "Attachments",
    "attachment_kind",
    "data_url",
    "format_size",
    "guess_mime",
]

DEFAULT_MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024
"""20 MiB: the largest image the big vision APIs take in one request."""

AttachmentKind: TypeAlias = Literal["image", "text", "other"]

# The image formats vision models accept, and the first bytes each file starts with.
_IMAGE_HEADERS: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),  # and "WEBP" at offset 8 (checked below)
}
_IMAGE_NAMES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WebP"}
# Types that are text although not text/*: sent to a model as text.
_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/ld+json",
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/toml",
        "application/yaml",
        "application/x-yaml",
        "application/x-sh",
        "application/x-shellscript",
        "application/sql",
        "application/x-sql",
        "application/x-tex",
        "application/x-latex",
        "application/x-python",
        "application/x-httpd-php",
        "application/csv",
        "image/svg+xml",
    }
)
_HASH_DIGITS = frozenset("0123456789abcdef")


def attachment_kind(mime: str) -> AttachmentKind:
    """What a chat model can take of content of type `mime`: "image" (PNG, JPEG,
    GIF, WebP: an image part), "text" (a text part) or "other" (neither)."""
    mime = mime.split(";")[0].strip().lower()
    if mime in _IMAGE_HEADERS:
        return "image"
    if mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith(("+json", "+xml")):
        return "text"
    return "other"


def guess_mime(name: str, data: bytes) -> str:
    """The type of a file from its name, else from its first bytes (an image
    format's header; UTF-8 without NUL bytes is text/plain), else
    application/octet-stream."""
    guessed, _ = mimetypes.guess_type(name, strict=False)
    if guessed:
        return guessed
    for mime in _IMAGE_HEADERS:
        if _image_header_ok(mime, data):
            return mime
    if b"\x00" not in data[:8192]:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return "text/plain"
    return "application/octet-stream"


def format_size(size: int) -> str:
    """A byte count as people read it: 512 B, 14.2 KB, 5.0 MB (powers of 1024)."""
    if size < 1024:
        return f"{size} B"
    for unit in ("KB", "MB", "GB"):
        size_f = size / 1024
        if size_f < 1024 or unit == "GB":
            return f"{size_f:.1f} {unit}"
        size = int(size_f)
    raise AssertionError("unreachable")


def data_url(mime: str, data: bytes) -> str:
    """`data:<mime>;base64,…`: how an image travels in an OpenAI-style request."""
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _image_header_ok(mime: str, data: bytes) -> bool:
    if not any(data.startswith(h) for h in _IMAGE_HEADERS[mime]):
        return False
    return mime != "image/webp" or data[8:12] == b"WEBP"


def _is_hash(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HASH_DIGITS


@dataclass(frozen=True)
class AttachmentInfo:
    """Stored content's hash, size and when it was first stored."""

    hash: str
    size: int
    created_at: datetime


class Attachments:
    """The attachment content of one `Store`.

    Args:
        store: the database.
        max_bytes: the largest content accepted (`AttachmentError` above it).
    """

    def __init__(self, store: Store, *, max_bytes: int = DEFAULT_MAX_ATTACHMENT_BYTES) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        self.store = store
        self.max_bytes = max_bytes

    # -- writing ---------------------------------------------------------------

    def put(self, name: str, mime: str, data: bytes) -> dict[str, Any]:
        """Store `data` (once: the same bytes stored before are not written again) and
        return the `attachment` part a message holds to name it (a text file's part
        also says its estimated `tokens`).

        Raises:
            AttachmentError: an empty name, a malformed type, content over
                `max_bytes`, an image whose header is not its type's, text that
                is not UTF-8. Nothing was stored.
        """
        name = self._check(name, mime, data)
        mime = mime.strip().lower()
        digest = hashlib.sha256(data).hexdigest()
        self._store(digest, bytes(data))
        tokens = None
        if attachment_kind(mime) == "text":  # what the context gauge counts for it
            tokens = estimate_string_tokens(bytes(data).decode("utf-8"))
        return attachment_part(name, mime, len(data), digest, tokens)

    def put_file(self, path: str | os.PathLike[str], *, mime: str | None = None) -> dict[str, Any]:
        """Read a file and `put` it under its base name; `mime` guessed when None
        (`guess_mime`). The size is checked before the file is read.

        Raises:
            AttachmentError: the file is missing, a folder, unreadable, or fails a
                check of `put`; the message names the file.
        """
        name, guessed, data = self.read_file(path)
        return self.put(name, mime or guessed, data)

    def read_file(self, path: str | os.PathLike[str]) -> tuple[str, str, bytes]:
        """A file's base name, guessed type and content, for a caller that decides on
        the type before storing (`put`); the size is checked before it is read.

        Raises:
            AttachmentError: the file is missing, a folder, unreadable or too large.
        """
        p = Path(path).expanduser()
        try:
            if p.is_dir():
                raise AttachmentError(f"{p} is a folder, not a file")
            size = p.stat().st_size
            if size > self.max_bytes:
                raise AttachmentError(self._too_large(p.name, size))
            with p.open("rb") as f:
                data = f.read(self.max_bytes + 1)  # a file growing meanwhile stays bounded
        except FileNotFoundError:
            raise AttachmentError(f"{p}: no such file") from None
        except PermissionError:
            raise AttachmentError(f"{p}: cannot read it (permission denied)") from None
        except OSError as exc:
            raise AttachmentError(f"{p}: cannot read it ({exc.strerror or exc})") from None
        if len(data) > self.max_bytes:
            raise AttachmentError(self._too_large(p.name, len(data)))
        return p.name, guess_mime(p.name, data), data

    def _check(self, name: str, mime: str, data: bytes) -> str:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise AttachmentError(f"attachment content must be bytes, not {type(data).__name__}")
        shown = one_line(name) if isinstance(name, str) else ""
        if not shown.strip():
            raise AttachmentError("an attachment needs a name")
        if (
            not isinstance(mime, str)
            or mime.count("/") != 1
            or not all(mime.split("/"))
            or one_line(mime) != mime
        ):
            raise AttachmentError(f"{shown}: {mime!r} is not a media type (type/subtype)")
        if len(data) > self.max_bytes:
            raise AttachmentError(self._too_large(shown, len(data)))
        mime = mime.strip().lower()
        kind = attachment_kind(mime)
        if kind == "image" and not _image_header_ok(mime, bytes(data[:12])):
            raise AttachmentError(
                f"{shown}: not a {_IMAGE_NAMES[mime]} image (its first bytes are not a "
                f"{_IMAGE_NAMES[mime]} header; the file may be damaged or misnamed)"
            )
        if kind == "text":
            try:
                bytes(data).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise AttachmentError(
                    f"{shown}: not UTF-8 text (byte {exc.start} cannot be read)"
                ) from None
        return shown

    def _too_large(self, name: str, size: int) -> str:
        return (
            f"{name} is {format_size(size)}; the limit for an attachment is "
            f"{format_size(self.max_bytes)}"
        )

    def _store(self, digest: str, data: bytes) -> None:
        with self.store.write():
            if self.store.rows(A.select(A.hash).where(A.hash == digest)):
                return  # stored once: the bytes are not sent to the database again
            self.store.run(
                A.insert(hash=digest, size=len(data), content=data, created_at=iso(now()))
            )

    # -- reading ---------------------------------------------------------------

    def get(self, hash: str) -> bytes:
        """The content stored under `hash`.

        Raises:
            UnknownAttachmentError: nothing stored under it (a part from another
                store, or content pruned).
        """
        rows = self.store.rows(A.select(A.content).where(A.hash == hash)) if _is_hash(hash) else []
        if not rows:
            raise UnknownAttachmentError(f"no attachment content with hash {hash!r}")
        return bytes(rows[0][0])

    def content(self, part: dict[str, Any]) -> bytes:
        """The content an `attachment` part names (`get(part["hash"])`)."""
        return self.get(str(part.get("hash") or ""))

    def info(self, hash: str) -> AttachmentInfo | None:
        """Hash, size and first-stored time of stored content, or None."""
        if not _is_hash(hash):
            return None
        rows = self.store.rows(A.select(A.hash, A.size, A.created_at).where(A.hash == hash))
        if not rows:
            return None
        digest, size, created = rows[0]
        return AttachmentInfo(digest, int(size), datetime.fromisoformat(created))

    def stored(self, hashes: Iterable[str]) -> set[str]:
        """Which of `hashes` have content in this store."""
        wanted = sorted({h for h in hashes if _is_hash(h)})
        found: set[str] = set()
        for start in range(0, len(wanted), 500):
            query = A.select(A.hash).where(A.hash.in_(wanted[start : start + 500]))
            found.update(row[0] for row in self.store.rows(query))
        return found

    def totals(self) -> tuple[int, int]:
        """(how many contents are stored, their bytes in all)."""
        count, size = self.store.rows(A.select(fn.COUNT(A.hash), fn.COALESCE(fn.SUM(A.size), 0)))[0]
        return int(count), int(size)

    def prune(self) -> int:
        """Delete content that no stored message names (chats purged); how many.

        Reads every message holding an attachment part, so it is for
        maintenance, not for each delete.
        """
        with self.store.write():
            named: set[str] = set()
            query = MessageRow.select(MessageRow.content).where(
                MessageRow.content.contains('"type":"attachment"')
            )
            for (content,) in self.store.rows(query):
                message = Message.from_stored(json.loads(content), None, iso(now()))
                named.update(str(p.get("hash")) for p in message.attachments)
            orphans = [h for (h,) in self.store.rows(A.select(A.hash)) if h not in named]
            for start in range(0, len(orphans), 500):
                self.store.run(A.delete().where(A.hash.in_(orphans[start : start + 500])))
        return len(orphans)
