"""Export and import from inside the app (the command palette), on `chatui.porting`.

The same code paths as `chatui export` / `chatui import`: an export is the
active branch as Markdown or the whole tree as chatui JSON, written private
(0600) and whole; an import checks everything first and writes all or nothing.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from store import (
    ImportOutcome,
    SessionManager,
    Store,
    TransferError,
    export_session,
    import_sessions,
)

from . import paths
from .porting import ImportFormatError, load_documents
from .porting.common import guess_format
from .porting.exports import json_text, markdown_page, slug

__all__ = ["ImportProblem", "default_export_path", "export_chat", "import_file"]


class ImportProblem(Exception):
    """An import that did not happen, with a one-line reason naming the file."""


def default_export_path(name: str, fmt: str, when: datetime | None = None) -> Path:
    """~/chatui-exports/2026-11-22-trip-planning.md"""
    stamp = (when or datetime.now()).strftime("%Y-%m-%d")
    return Path.home() / "chatui-exports" / f"{stamp}-{slug(name)}.{fmt}"


def export_chat(
    manager: SessionManager, session_id: str, target: Path, fmt: str, active_leaf: str | None = None
) -> Path:
    """Write one chat: `md` (the branch through `active_leaf`) or `json` (the whole tree).

    Raises:
        OSError: the file cannot be written (nothing partial is left behind).
    """
    info = manager.get(session_id, include_deleted=True)
    if info is None:
        raise ValueError(f"no chat {session_id!r}")
    if fmt == "md":
        text = markdown_page(manager.store, info, active_leaf)
    else:
        text = json_text(export_session(manager.store, session_id)) + "\n"
    target = target.expanduser()
    paths.write_private(target, text)
    return target


def import_file(store: Store, path: Path, source: str | None = None) -> list[ImportOutcome]:
    """Import a ChatGPT, chatui, Pi or llm file (format guessed when not given).

    Raises:
        ImportProblem: the file cannot be read as chats; nothing was imported.
    """
    path = path.expanduser()
    if not path.exists():
        raise ImportProblem(f"{path}: no such file")
    source = source or guess_format(path)
    if source is None:
        raise ImportProblem(
            f"{path}: not a ChatGPT, chatui, Pi or llm file that chatui "
            "recognises (try `chatui import FILE --from …`)"
        )
    try:
        documents = load_documents(path, source)
        return import_sessions(store, documents, match_source=source != "chatui")
    except (ImportFormatError, TransferError) as exc:
        raise ImportProblem(str(exc)) from exc
