"""Import chatui's own export (JSON or JSONL): a lossless restore."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from store import EXPORT_FORMAT, TransferError, load_export

from .common import ImportFormatError, guess_format, hint

__all__ = ["load_chatui"]


def load_chatui(path: Path) -> list[dict[str, Any]]:
    """The documents of a chatui export file (checked in full when imported).

    Raises:
        ImportFormatError: unreadable, not JSON/JSONL, or not a chatui export.
    """
    try:
        docs = load_export(path)
    except TransferError as exc:
        raise ImportFormatError(f"{exc}{hint(guess_format(path), path, 'chatui')}") from None
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT:
            found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            raise ImportFormatError(
                f"{path}: not a chatui export (document {i + 1} has format {found!r})"
                + hint(guess_format(path), path, "chatui")
            )
    return docs
