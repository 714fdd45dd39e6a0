"""What every importer shares: the error type, tree rebuilding, the document shape.

Invariants the importers rely on:
- Source nodes that are not chat messages (a hidden system node, a Pi label
  entry) are skipped and their children re-attached to the nearest kept
  ancestor, so the tree stays connected and every branch survives.
- Messages are ordered parents first, siblings in the source's order, and so
  that the source's current leaf is appended last whenever that does not
  reorder siblings: then chatui's "latest leaf" is the source's current
  one. It is also recorded as `metadata["active_leaf"]` on the session.
- An imported session's id is derived from its `source` (`chatgpt:<id>`), so
  importing the same file twice finds the chats already there.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from store import EXPORT_FORMAT, EXPORT_VERSION, text_part

__all__ = [
    "ImportFormatError",
    "Rejected",
    "collect",
    "Node",
    "build_tree",
    "epoch_time",
    "guess_format",
    "hint",
    "iso_time",
    "make_document",
    "preview_name",
    "read_text",
    "session_id_for",
    "text_part",
]

_SQLITE_MAGIC = b"SQLite format 3\x00"


class ImportFormatError(ValueError):
    """A file cannot be imported as the format asked for; one line naming the file."""


@dataclass(frozen=True)
class Rejected:
    """One conversation of a file that could not be imported, and why (one line)."""

    reason: str


def collect(
    items: Iterable[tuple[Any, str]],
    convert: Any,
    rejected: list[Rejected] | None,
) -> list[dict[str, Any]]:
    """`convert(item, where)` for each item; a bad one raises, or is noted in `rejected`.

    With `rejected` given (a partial import), one damaged conversation no longer
    costs the rest of the file.
    """
    documents: list[dict[str, Any]] = []
    for item, where in items:
        try:
            try:
                documents.append(convert(item, where))
            except (TypeError, AttributeError, KeyError) as exc:
                # A value of a shape the importer did not expect (a number where a
                # list belongs…): this conversation cannot be read, the others can.
                raise ImportFormatError(f"{where}: unexpected shape ({exc})") from exc
        except ImportFormatError as exc:
            if rejected is None:
                raise
            rejected.append(Rejected(str(exc)))
    return documents


@dataclass
class Node:
    """One node of a source tree, before it becomes a chatui message."""

    id: str
    parent: str | None
    message: dict[str, Any] | None
    """A chatui message dict without `id`/`parent_id`; None: skip the node, keep its children."""
    order: tuple[Any, ...] = ()
    """Sort key among siblings (the source's order)."""


def session_id_for(source: str) -> str:
    """A stable session id for an imported chat (the same file gives the same ids)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"chatui-import:{source}").hex


def epoch_time(value: Any) -> str | None:
    """A Unix time in seconds (ChatGPT) as ISO 8601, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(value, UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def iso_time(value: Any) -> str | None:
    """An ISO 8601 string (naive means UTC) normalised, or None when it is not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).isoformat()


def preview_name(text: str, default: str, width: int = 60) -> str:
    """A chat name from its first words."""
    words = " ".join(text.split())
    if not words:
        return default
    return words if len(words) <= width else words[: width - 1].rstrip() + "…"


def read_text(path: Path, what: str) -> str:
    """A file's UTF-8 text, or an ImportFormatError naming the file."""
    try:
        if path.is_dir():
            raise ImportFormatError(f"{path}: is a folder, not a {what} file")
        raw = path.read_bytes()
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if raw.startswith(_SQLITE_MAGIC):
        raise ImportFormatError(
            f"{path}: not a {what} file: it is a SQLite database{hint(guess_format(path), path)}"
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{path}: not a {what} file: not UTF-8 text") from exc
    if not text.strip():
        raise ImportFormatError(f"{path}: the file is empty")
    return text


def guess_format(path: Path) -> str | None:
    """Which `--from` a file looks like (for hints in error messages), or None."""
    try:
        with path.open("rb") as fh:
            head = fh.read(65536)
    except OSError:
        return None
    if head.startswith(_SQLITE_MAGIC):
        return "llm"
    if head.startswith(b"PK"):
        return "chatgpt"  # the ChatGPT export archive is a zip
    text = head.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    first_line = text.split("\n", 1)[0]
    try:
        first = json.loads(first_line)
    except json.JSONDecodeError:
        first = None
    if isinstance(first, dict) and first.get("type") == "session":
        return "chatui" if first.get("format") == EXPORT_FORMAT else "pi"
    if text.startswith("["):
        return "chatgpt" if '"mapping"' in text else ("chatui" if '"format"' in text else None)
    if text.startswith("{"):
        return (
            "chatui"
            if f'"format": "{EXPORT_FORMAT}"' in text or '"format":"chatui"' in text
            else ("chatgpt" if '"mapping"' in text else None)
        )
    return None


def hint(guess: str | None, path: Path, asked: str | None = None) -> str:
    """`; it looks like … (use --from X)` when the file looks like another format."""
    names = {
        "chatgpt": "a ChatGPT export",
        "chatui": "a chatui export",
        "pi": "a Pi session file",
        "llm": "an llm logs database",
    }
    if guess is None or guess == asked:
        return ""
    return f"; it looks like {names[guess]} (use --from {guess})"


def _check_links(nodes: dict[str, Node], where: str) -> None:
    for node in nodes.values():
        if node.parent is not None and node.parent not in nodes:
            raise ImportFormatError(
                f"{where}: {node.id!r} has parent {node.parent!r}, "
                "which is not in the file (missing parent)"
            )
    done: set[str] = set()
    for start in nodes:
        trail: list[str] = []
        on_trail: set[str] = set()
        step: str | None = start
        while step is not None and step not in done:
            if step in on_trail:
                loop = trail[trail.index(step) :] + [step]
                raise ImportFormatError(f"{where}: parent links form a cycle ({' → '.join(loop)})")
            trail.append(step)
            on_trail.add(step)
            step = nodes[step].parent
        done.update(trail)


def build_tree(
    nodes: Iterable[Node], active: str | None, where: str
) -> tuple[list[dict[str, Any]], str | None]:
    """Chatui messages (with `id` and `parent_id`) from source nodes, and the active leaf.

    Raises:
        ImportFormatError: an id used twice, a missing parent, or a cycle.
    """
    by_id: dict[str, Node] = {}
    for node in nodes:
        if node.id in by_id:
            raise ImportFormatError(f"{where}: the id {node.id!r} is used twice")
        by_id[node.id] = node
    _check_links(by_id, where)
    if active is not None and active not in by_id:
        raise ImportFormatError(f"{where}: the current node {active!r} is not in the file")

    def kept_ancestor(node_id: str | None) -> str | None:
        while node_id is not None and by_id[node_id].message is None:
            node_id = by_id[node_id].parent
        return node_id

    children: dict[str | None, list[Node]] = {}
    for node in by_id.values():
        if node.message is not None:
            children.setdefault(kept_ancestor(node.parent), []).append(node)
    for siblings in children.values():
        siblings.sort(key=lambda n: n.order)
    active_leaf = kept_ancestor(active) if active is not None else None
    on_path: set[str] = set()
    step = active_leaf
    while step is not None:
        on_path.add(step)
        step = kept_ancestor(by_id[step].parent)

    # Each level in sibling order; the branch holding the active leaf is descended
    # last, so (unless the active leaf has younger siblings) it is appended last.
    ordered: list[Node] = []
    level = children.get(None, [])
    while level:
        descend: Node | None = None
        for node in level:
            ordered.append(node)
            if node.id in on_path:
                descend = node
                continue
            stack = list(reversed(children.get(node.id, [])))
            while stack:
                below = stack.pop()
                ordered.append(below)
                stack.extend(reversed(children.get(below.id, [])))
        level = children.get(descend.id, []) if descend is not None else []
    messages = []
    for node in ordered:
        assert node.message is not None
        messages.append({**node.message, "id": node.id, "parent_id": kept_ancestor(node.parent)})
    return messages, active_leaf


def make_document(
    *,
    source: str,
    name: str,
    created_at: str | None,
    updated_at: str | None,
    messages: list[dict[str, Any]],
    active_leaf: str | None,
    metadata: dict[str, Any] | None = None,
    compactions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A chatui export document for an imported chat."""
    meta = dict(metadata or {})
    if active_leaf is not None:
        meta["active_leaf"] = active_leaf
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "session": {
            "id": session_id_for(source),
            "name": name,
            "source": source,
            "status": "idle",
            "metadata": meta,
            "created_at": created_at,
            "updated_at": updated_at or created_at,
        },
        "project": None,
        "messages": messages,
        "compactions": compactions or [],
        "context": {},
    }
