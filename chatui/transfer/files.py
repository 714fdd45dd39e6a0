"""Export and import from inside the app (the command palette), on `chatui.transfer`.

The same code paths as `chatui export` / `chatui import`: an export is the
active branch as Markdown, the whole tree as chatui JSON or as one HTML page
(`html_page`: every branch, the active one shown first), written private
(0600) and whole; an import merges into chats already here and imports the readable
conversations of a file with a damaged one (`chatui.transfer.importing`).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from pathlib import Path

from store import SessionManager, Store, export_session

from ..core import paths
from . import ImportFormatError
from .exports import json_text, markdown_page, slug
from .importing import ImportReport, import_path

__all__ = [
    "ImportProblem",
    "ImportReport",
    "default_export_path",
    "export_chat",
    "import_file",
]


class ImportProblem(Exception):
    """An import that did not happen, with a one-line reason naming the file."""


def default_export_path(name: str, fmt: str, when: datetime | None = None) -> Path:
    """~/chatui-exports/2026-11-22-trip-planning.md"""
    stamp = (when or datetime.now()).strftime("%Y-%m-%d")
    return Path.home() / "chatui-exports" / f"{stamp}-{slug(name)}.{fmt}"


def export_chat(
    manager: SessionManager,
    session_id: str,
    target: Path,
    fmt: str,
    active_leaf: str | None = None,
    live: Collection[str] = (),
) -> Path:
    """Write one chat: `md` (the branch through `active_leaf`), `json` (the whole tree)
    or `html` (one self-contained page of the whole tree, showing `active_leaf`'s branch).

    `live`: ids of replies being written now, which the Markdown calls "writing…".

    Raises:
        OSError: the file cannot be written (nothing partial is left behind).
    """
    info = manager.get(session_id, include_deleted=True)
    if info is None:
        raise ValueError(f"no chat {session_id!r}")
    if fmt == "md":
        text = markdown_page(manager.store, info, active_leaf, live)
    elif fmt == "html":
        from .html_page import html_page  # Pygments and markdown-it: only when asked for

        text = html_page(manager.store, info, active_leaf)
    else:
        text = json_text(export_session(manager.store, session_id)) + "\n"
    target = target.expanduser()
    paths.write_private(target, text)
    return target


def import_file(
    store: Store,
    path: Path,
    source: str | None = None,
    *,
    new_ids: bool = False,
    dry_run: bool = False,
    strict: bool = False,
) -> ImportReport:
    """Import a ChatGPT, chatui, Pi or llm file (format guessed when not given).

    The one import path: `chatui import` calls it too. Chats already here are
    merged (new messages added); a bad conversation is listed in the report's
    `rejected` while the others are imported, unless `strict`.

    Raises:
        ImportProblem: the file cannot be read as chats, or nothing in it can be
            imported (or, `strict`, one conversation is bad); nothing was imported.
    """
    try:
        return import_path(store, path, source, new_ids=new_ids, dry_run=dry_run, strict=strict)
    except ImportFormatError as exc:
        raise ImportProblem(str(exc)) from exc
