"""Export and import of whole sessions in chatui's JSON shape (backup and restore).

Design notes and invariants:
- A document holds one session and everything it owns: every message of
  every branch in append order (parents before children, and "latest" means
  the same after a restore), compaction overlays, and the context stored
  under the session's namespaces (its id, and `<id>/…`). Shared namespaces
  (a `global` memory block) belong to no session and are not in it.
- `export → import → export` gives an equal document: ids, timestamps and
  append order are kept. With `new_ids=True` only the session id (and the
  namespaces and compaction ids derived from it) change.
- Import checks every document before writing anything, then writes all of
  them in one transaction: a bad document imports nothing.
- A session whose id is already stored is skipped ("already imported"), so
  restoring the same backup twice changes nothing.
- JSONL is the same shape one entry a line: a `session` header, then its
  `message`, `compaction`, `block`, `search_entry`, `skill`, `prompt` and
  `loaded_skill` and `block_write` entries, each naming its `session_id`.
- A block's writes (its history, what memory per branch reads) go with it,
  in the order they were made; a block that comes without any (a file from
  before histories) gets its content as one write on no message.
- The content its messages' `attachment` parts name goes with it, once per
  hash, base64 under `attachments` (JSONL: `attachment` entries, before the
  messages), only when there is some. An import checks each content against
  its hash and size, and refuses a part whose content is neither in the
  file nor already in the store; content already stored is not written again.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from os import PathLike
from pathlib import Path
from typing import Any

from peewee import SQL, Model

from .block_writes import ORIGINS
from .clock import iso as _iso
from .clock import now
from .db import Store
from .errors import StoreError, UnknownSessionError
from .manager import STATUSES, SessionManager
from .messages import MAX_COUNT, Message
from .namespaces import index_entry, owned_by
from .records import insert_session, record_status
from .schema import (
    AttachmentRow,
    BlockWriteRow,
    CompactionRow,
    ContextBlockRow,
    EntryIndexRow,
    LoadedSkillRow,
    ProjectRow,
    PromptRow,
    SearchEntryRow,
    SessionRow,
    SkillRow,
)
from .storage import StoreSessionProvider, insert_messages
from .utf8 import require_utf8

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "ImportOutcome",
    "TransferError",
    "document_entries",
    "documents_from_entries",
    "export_session",
    "export_sessions",
    "import_sessions",
    "load_export",
]

EXPORT_FORMAT = "chatui"
EXPORT_VERSION = 1

# (JSONL entry type, key under "context", columns in export order)
_CONTEXT: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("block", "blocks", ("namespace", "label", "content", "updated_at")),
    ("search_entry", "search_entries", ("namespace", "key", "content", "updated_at")),
    ("skill", "skills", ("namespace", "key", "content", "description", "updated_at")),
    ("prompt", "prompts", ("namespace", "prompt", "updated_at")),
    ("loaded_skill", "loaded_skills", ("namespace", "label", "key", "tool_call_id", "message_id")),
    (
        "block_write",
        "block_writes",
        ("namespace", "label", "content", "message_id", "origin", "written_at", "reverted_at"),
    ),
)
_TABLES: dict[str, type[Model]] = {
    "blocks": ContextBlockRow,
    "search_entries": SearchEntryRow,
    "skills": SkillRow,
    "prompts": PromptRow,
    "loaded_skills": LoadedSkillRow,
    "block_writes": BlockWriteRow,
}
_ORDER = {
    "blocks": ("namespace", "label"),
    "search_entries": ("namespace", "key"),
    "skills": ("namespace", "key"),
    "prompts": ("namespace",),
    "loaded_skills": ("namespace", "label", "key"),
    "block_writes": ("seq",),  # the order of writes is what a branch's content means
}
# Columns a document must give as strings (the others may be null).
_REQUIRED = {"namespace", "label", "key", "content", "prompt"}


class TransferError(StoreError, ValueError):
    """A document or file cannot be imported; the message says where and why."""


@dataclass(frozen=True)
class ImportOutcome:
    """What happened to one document of an import."""

    session_id: str
    """The session's id in this store (new when imported with `new_ids`)."""
    original_id: str
    """The session's id in the document."""
    name: str
    source: str | None
    messages: int
    imported: bool
    """False: skipped, because the session (or, with `match_source`, its source) is stored."""
    reason: str = ""


# -- export ----------------------------------------------------------------------


def _plain(obj: Any, first: tuple[str, ...] = (), skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """A dataclass as a JSON-ready dict (times as ISO 8601), the `first` keys leading."""
    names = [*first, *(f for f in obj.__dataclass_fields__ if f not in first and f not in skip)]
    values = {name: getattr(obj, name) for name in names}
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in values.items()}


def export_session(store: Store, session_id: str) -> dict[str, Any]:
    """The whole session as a JSON-ready document (deleted sessions too).

    Raises:
        UnknownSessionError: no session with that id.
    """
    with store.snapshot():  # what one moment held, on both engines
        info = SessionManager(store).get(session_id, include_deleted=True)
        if info is None:
            raise UnknownSessionError(f"no session {session_id!r}")
        provider = StoreSessionProvider(store, session_id)
        messages = [_plain(m, ("id", "parent_id")) for m in provider.get_tree()]
        compactions = [_plain(c, skip=("session_id",)) for c in provider.get_compactions()]
        context: dict[str, list[dict[str, Any]]] = {}
        for _, key, columns in _CONTEXT:
            table = _TABLES[key]
            fields = table._meta.fields
            rows = store.rows(
                table.select(*(fields[c] for c in columns))
                .where(owned_by(fields["namespace"], session_id))
                .order_by(*(fields[c] for c in _ORDER[key]))
            )
            context[key] = [dict(zip(columns, row, strict=True)) for row in rows]
        project = None
        if info.project_id:
            P = ProjectRow
            rows = store.rows(
                P.select(P.id, P.name, P.created_at, P.archived_at).where(P.id == info.project_id)
            )
            if rows:
                project = dict(
                    zip(("id", "name", "created_at", "archived_at"), rows[0], strict=True)
                )
        attachments = _export_attachments(store, messages)
    document = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "session": _plain(info),
        "project": project,
        "messages": messages,
        "compactions": compactions,
        "context": context,
    }
    if attachments:  # a document without any keeps the shape it always had
        document["attachments"] = attachments
    return document


def _export_attachments(store: Store, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The content the messages' attachment parts name, once per hash, base64."""
    hashes = sorted(
        {
            str(part.get("hash"))
            for m in messages
            for part in m["parts"]
            if isinstance(part, dict) and part.get("type") == "attachment"
        }
    )
    A = AttachmentRow
    out = []
    for start in range(0, len(hashes), _BATCH):
        query = (
            A.select(A.hash, A.size, A.created_at, A.content)
            .where(A.hash.in_(hashes[start : start + _BATCH]))
            .order_by(A.hash)
        )
        for digest, size, created_at, content in store.rows(query):
            data = base64.b64encode(bytes(content)).decode("ascii")
            out.append({"hash": digest, "size": int(size), "created_at": created_at, "data": data})
    return out


def export_sessions(
    store: Store, session_ids: Iterable[str] | None = None, *, include_deleted: bool = False
) -> list[dict[str, Any]]:
    """Documents for those sessions, or every session oldest first when None."""
    if session_ids is None:
        S = SessionRow
        query = S.select(S.id).order_by(S.created_at, SQL("rowid"))  # rowid: see the baseline
        if not include_deleted:
            query = query.where(S.deleted_at.is_null())
        session_ids = [r[0] for r in store.rows(query)]
    return [export_session(store, sid) for sid in session_ids]


def document_entries(document: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """One document as JSONL entries: the session header first, then one entry per item."""
    sid = document["session"]["id"]
    yield {
        "type": "session",
        "format": document.get("format", EXPORT_FORMAT),
        "version": document.get("version", EXPORT_VERSION),
        "session": document["session"],
        "project": document.get("project"),
    }
    for attachment in document.get("attachments", []):
        yield {"type": "attachment", "session_id": sid, **attachment}
    for message in document.get("messages", []):
        yield {"type": "message", "session_id": sid, **message}
    for compaction in document.get("compactions", []):
        yield {"type": "compaction", "session_id": sid, **compaction}
    context = document.get("context") or {}
    for kind, key, _ in _CONTEXT:
        for item in context.get(key, []):
            yield {"type": kind, "session_id": sid, **item}


def documents_from_entries(entries: Iterable[Any]) -> list[dict[str, Any]]:
    """Regroup JSONL entries (parsed) into documents.

    Raises:
        TransferError: an entry without a known `type`, or one before any header
            or naming another session than its header.
    """
    kinds = {kind: key for kind, key, _ in _CONTEXT}
    docs: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for n, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            raise TransferError(f"entry {n} is not a chatui export entry (it has no 'type')")
        kind = entry["type"]
        if kind == "session":
            current = {
                "format": entry.get("format"),
                "version": entry.get("version"),
                "session": entry.get("session"),
                "project": entry.get("project"),
                "messages": [],
                "compactions": [],
                "context": {key: [] for _, key, _ in _CONTEXT},
            }
            docs.append(current)
            continue
        if current is None:
            # repr: the type is the file's, and may hold a newline or an escape
            raise TransferError(f"entry {n} ({kind!r}) comes before any session header")
        session = current["session"]
        owner = session.get("id") if isinstance(session, dict) else None
        if entry.get("session_id") != owner:
            raise TransferError(
                f"entry {n} ({kind!r}) names session {entry.get('session_id')!r}"
                f" but follows the header of {owner!r}"
            )
        body = {k: v for k, v in entry.items() if k not in ("type", "session_id")}
        if kind in ("message", "compaction"):
            current[kind + "s"].append(body)
        elif kind == "attachment":
            current.setdefault("attachments", []).append(body)
        elif kind in kinds:
            current["context"][kinds[kind]].append(body)
        else:
            raise TransferError(f"entry {n} has an unknown type {kind!r}")
    return docs


def load_export(path: str | PathLike[str]) -> list[dict[str, Any]]:
    """Read a chatui export file: JSON (one document or a list) or JSONL.

    Returns the documents unchecked (`import_sessions` checks them).

    Raises:
        TransferError: unreadable, not UTF-8, not JSON/JSONL, or not export-shaped;
            the message names the file.
    """
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise TransferError(f"{p}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise TransferError(f"{p}: not UTF-8 text (is this an export file?)") from exc
    if not text.strip():
        raise TransferError(f"{p}: the file is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as whole:
        entries = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError as exc:
                if not entries:  # not JSONL either: report the document's own error
                    raise TransferError(
                        f"{p}: not valid JSON ({whole.msg}: line {whole.lineno}, column "
                        f"{whole.colno}); is the file truncated?"
                    ) from None
                raise TransferError(
                    f"{p}: line {n} is not valid JSON ({exc.msg}); is the file truncated?"
                ) from None
        try:
            return documents_from_entries(entries)
        except TransferError as exc:
            raise TransferError(f"{p}: {exc}") from None
    if isinstance(data, dict) and data.get("type") == "session":
        return documents_from_entries([data])  # a one-line JSONL file
    if isinstance(data, dict):
        return [data]
    if isinstance(data, list):
        return data
    raise TransferError(f"{p}: not a chatui export (the file holds a {type(data).__name__})")


# -- checking ------------------------------------------------------------------------


@dataclass
class _Checked:
    session: dict[str, Any]
    project: dict[str, Any] | None
    messages: list[tuple[Message, str | None]]
    compactions: list[dict[str, Any]]
    context: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    attachments: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    """hash → (content, created_at) of the content the document carries."""
    named: dict[str, str] = field(default_factory=dict)
    """hash → where the first attachment part naming it is (for an error)."""

    @property
    def id(self) -> str:
        return self.session["id"]


def _fail(where: str, problem: str) -> TransferError:
    return TransferError(f"{where}: {problem}")


def _str(data: Mapping[str, Any], key: str, where: str, *, optional: bool = False) -> Any:
    value = data.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or (not optional and key.endswith("id") and not value):
        raise _fail(where, f"{key!r} must be a {'' if optional else 'non-empty '}string")
    return value


def _when(value: Any, where: str, key: str, *, optional: bool = False) -> datetime | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _fail(where, f"{key!r} must be an ISO 8601 time")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise _fail(where, f"{key!r} is not an ISO 8601 time: {value!r}") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _stamp(value: Any, where: str, key: str) -> str:
    """A stored timestamp kept as written (so a re-export is identical), or now."""
    if value is None:
        return _iso(now())
    _when(value, where, key)
    return value


def _count(value: Any, where: str, key: str, kind: type = int) -> Any:
    if value is None:
        return kind(0)
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not 0 <= value <= MAX_COUNT  # NaN too: no comparison holds for it
        or (kind is int and not isinstance(value, int))
    ):
        raise _fail(where, f"{key!r} must be a non-negative {kind.__name__} (at most 2^63-1)")
    return kind(value)


def _check_session(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _fail(where, "'session' must be an object")
    s = {"id": _str(raw, "id", where), "name": _str(raw, "name", where)}
    for key in ("parent_session_id", "model", "source", "agent_id", "project_id", "status_detail"):
        s[key] = _str(raw, key, where, optional=True)
    status = raw.get("status", "active")
    if not isinstance(status, str) or status not in STATUSES:
        raise _fail(where, f"status {status!r} is not one of {', '.join(sorted(STATUSES))}")
    metadata = raw.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise _fail(where, "'metadata' must be an object")
    try:
        require_utf8(json.dumps(metadata, ensure_ascii=False, allow_nan=False), "it")
    except (TypeError, ValueError) as exc:
        raise _fail(where, f"'metadata' is not plain JSON: {exc}") from exc
    s.update(
        status=status,
        metadata=metadata,
        input_tokens=_count(raw.get("input_tokens"), where, "input_tokens"),
        output_tokens=_count(raw.get("output_tokens"), where, "output_tokens"),
        cost=_count(raw.get("cost"), where, "cost", float),
    )
    s["created_at"] = _when(raw.get("created_at"), where, "created_at", optional=True) or now()
    s["updated_at"] = (
        _when(raw.get("updated_at"), where, "updated_at", optional=True) or s["created_at"]
    )
    s["deleted_at"] = _when(raw.get("deleted_at"), where, "deleted_at", optional=True)
    return s


def _tree_order(
    items: list[tuple[Message, str | None]], where: str
) -> list[tuple[Message, str | None]]:
    """Parents before children, keeping the document's order otherwise.

    Raises:
        TransferError: a parent that is not in the document, or a cycle.
    """
    parents = {m.id: parent for m, parent in items}
    for m, parent in items:
        if parent is not None and parent not in parents:
            raise _fail(
                where,
                f"message {m.id!r} has parent {parent!r}, which is not in the "
                "file (missing parent)",
            )
    placed: set[str] = set()
    waiting: dict[str, list[tuple[Message, str | None]]] = {}
    ordered: list[tuple[Message, str | None]] = []
    for item in items:
        parent = item[1]
        if parent is not None and parent not in placed:
            waiting.setdefault(parent, []).append(item)
            continue
        stack = [item]
        while stack:
            node = stack.pop()
            ordered.append(node)
            placed.add(node[0].id)
            stack.extend(reversed(waiting.pop(node[0].id, [])))
    if len(ordered) < len(items):
        # Every unplaced message has an unplaced parent, so walking up must loop.
        walk = next(m.id for m, _ in items if m.id not in placed)
        seen: list[str] = []
        while walk not in seen:
            seen.append(walk)
            walk = parents[walk] or walk
        loop = seen[seen.index(walk) :] + [walk]
        raise _fail(where, f"parent links form a cycle ({' → '.join(loop)})")
    return ordered


def _check_messages(raw: Any, where: str) -> list[tuple[Message, str | None]]:
    if not isinstance(raw, list):
        raise _fail(where, "'messages' must be a list")
    items: list[tuple[Message, str | None]] = []
    seen: set[str] = set()
    for i, data in enumerate(raw):
        at = f"{where}: messages[{i}]"
        if not isinstance(data, dict):
            raise TransferError(f"{at}: a message must be an object")
        parent = data.get("parent_id")
        if parent is not None and not isinstance(parent, str):
            raise TransferError(f"{at}: 'parent_id' must be a string or null")
        body = {k: v for k, v in data.items() if k != "parent_id" and v is not None}
        try:
            message = Message.from_dict(body)
            message.to_json()
        except ValueError as exc:
            raise TransferError(f"{at}: {exc}") from exc
        if message.id in seen:
            raise TransferError(f"{at}: the id {message.id!r} is used twice")
        seen.add(message.id)
        items.append((message, parent))
    return _tree_order(items, where)


def _check_attachments(raw: Any, where: str) -> dict[str, tuple[bytes, str]]:
    if not isinstance(raw, list):
        raise _fail(where, "'attachments' must be a list")
    checked: dict[str, tuple[bytes, str]] = {}
    for i, data in enumerate(raw):
        at = f"{where}: attachments[{i}]"
        if not isinstance(data, dict):
            raise TransferError(f"{at}: an attachment must be an object")
        digest = _str(data, "hash", at)
        encoded = _str(data, "data", at)
        try:
            content = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise TransferError(f"{at}: 'data' is not base64") from None
        if hashlib.sha256(content).hexdigest() != digest:
            raise TransferError(
                f"{at}: the content does not match its hash {digest!r} (the file is damaged)"
            )
        if data.get("size") is not None and data.get("size") != len(content):
            raise TransferError(
                f"{at}: 'size' is {data.get('size')!r} but the content holds {len(content)} bytes"
            )
        checked[digest] = (content, _stamp(data.get("created_at"), at, "created_at"))
    return checked


def _named_attachments(messages: list[tuple[Message, str | None]], where: str) -> dict[str, str]:
    """hash → where the first part naming it is; a part without a valid hash fails."""
    named: dict[str, str] = {}
    for message, _ in messages:
        for part in message.attachments:
            digest = part.get("hash")
            if not isinstance(digest, str) or len(digest) != 64 or digest.strip("0123456789abcdef"):
                raise TransferError(
                    f"{where}: message {message.id!r}: an attachment part needs a 'hash' "
                    "(64 lowercase hex digits)"
                )
            named.setdefault(digest, f"{where}: message {message.id!r}")
    return named


def _check_compactions(
    raw: Any, where: str, messages: list[tuple[Message, str | None]]
) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise _fail(where, "'compactions' must be a list")
    parents = {m.id: parent for m, parent in messages}
    checked = []
    for i, data in enumerate(raw):
        at = f"{where}: compactions[{i}]"
        if not isinstance(data, dict):
            raise TransferError(f"{at}: a compaction must be an object")
        summary = data.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            raise TransferError(f"{at}: 'summary' must be a non-empty string")
        ends = [_str(data, key, at) for key in ("from_message_id", "to_message_id")]
        for end in ends:
            if end not in parents:
                raise TransferError(f"{at}: message {end!r} is not in the file")
        node: str | None = ends[1]
        while node is not None and node != ends[0]:
            node = parents[node]
        if node is None:
            raise TransferError(f"{at}: {ends[0]!r} is not on the path to {ends[1]!r}")
        checked.append(
            {
                "id": _str(data, "id", at, optional=True),
                "summary": summary,
                "from": ends[0],
                "to": ends[1],
                "created_at": _when(data.get("created_at"), at, "created_at", optional=True)
                or now(),
            }
        )
    return checked


def _check_context(raw: Any, where: str, session_id: str) -> dict[str, list[dict[str, Any]]]:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise _fail(where, "'context' must be an object")
    context: dict[str, list[dict[str, Any]]] = {}
    for _, key, columns in _CONTEXT:
        items = raw.get(key, [])
        if not isinstance(items, list):
            raise _fail(where, f"context {key!r} must be a list")
        context[key] = []
        for i, data in enumerate(items):
            at = f"{where}: context.{key}[{i}]"
            if not isinstance(data, dict):
                raise TransferError(f"{at}: must be an object")
            row = {
                c: _str(data, c, at, optional=c not in _REQUIRED)
                for c in columns
                if c != "updated_at"
            }
            namespace = row["namespace"]
            # A document may only write its own session's storage, never a shared
            # namespace such as the global memory block.
            if namespace != session_id and not namespace.startswith(session_id + "/"):
                raise TransferError(
                    f"{at}: namespace {namespace!r} does not belong to session {session_id!r}"
                )
            if "updated_at" in columns:
                row["updated_at"] = _stamp(data.get("updated_at"), at, "updated_at")
            if key == "block_writes":
                row["written_at"] = _stamp(data.get("written_at"), at, "written_at")
                if row["reverted_at"] is not None:
                    _when(row["reverted_at"], at, "reverted_at")
                if row["origin"] is None:
                    row["origin"] = "import"
                if row["origin"] not in ORIGINS:
                    raise TransferError(
                        f"{at}: origin {row['origin']!r} is not one of {', '.join(ORIGINS)}"
                    )
            context[key].append(row)
    return context


def _check_project(raw: Any, where: str) -> dict[str, Any] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _fail(where, "'project' must be an object or null")
    at = f"{where}: project"
    archived = raw.get("archived_at")
    return {
        "id": _str(raw, "id", at),
        "name": _str(raw, "name", at),
        "created_at": _stamp(raw.get("created_at"), at, "created_at"),
        "archived_at": _stamp(archived, at, "archived_at") if archived else None,
    }


def _check(doc: Any, where: str) -> _Checked:
    if not isinstance(doc, dict):
        raise _fail(where, "not a chatui export document (expected an object)")
    if doc.get("format") != EXPORT_FORMAT:
        raise _fail(
            where,
            f"not a chatui export (format is {doc.get('format')!r}, expected {EXPORT_FORMAT!r})",
        )
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _fail(where, f"the export format version {version!r} is not valid")
    if version > EXPORT_VERSION:
        raise _fail(
            where,
            f"written by a newer chatui (export format version {version}; "
            f"this one reads up to {EXPORT_VERSION})",
        )
    session = _check_session(doc.get("session"), where)
    where = f"{where} (session {session['id']})"
    messages = _check_messages(doc.get("messages", []), where)
    return _Checked(
        session=session,
        project=_check_project(doc.get("project"), where),
        messages=messages,
        compactions=_check_compactions(doc.get("compactions", []), where, messages),
        context=_check_context(doc.get("context"), where, session["id"]),
        attachments=_check_attachments(doc.get("attachments", []), where),
        named=_named_attachments(messages, where),
    )


# -- import ----------------------------------------------------------------------------


def import_sessions(
    store: Store,
    documents: Mapping[str, Any] | Iterable[Mapping[str, Any]],
    *,
    new_ids: bool = False,
    match_source: bool = False,
    dry_run: bool = False,
) -> list[ImportOutcome]:
    """Restore export documents into `store`, all or nothing.

    Args:
        documents: one document or several (as `export_session` / `load_export` give).
        new_ids: give every imported session a new id (a copy beside the original);
            otherwise a document whose session id is stored is skipped.
        match_source: also skip a document whose `session.source` names a stored
            session (importers of other apps' files set a stable source).
        dry_run: check and report, write nothing.

    Raises:
        TransferError: a document is not valid; nothing was written.
    """
    docs = [documents] if isinstance(documents, Mapping) else list(documents)
    checked = [
        _check(doc, f"document {i + 1}" if len(docs) > 1 else "document")
        for i, doc in enumerate(docs)
    ]
    outcomes: list[ImportOutcome] = []
    with store.write():
        targets: dict[str, str] = {}  # document's session id → id written
        sources: dict[str, str] = {}  # source → id written, within this import
        plan: list[tuple[_Checked, str]] = []
        # Looked up in batches, not one query a document: a scan of `source`
        # (no index) per document made a 10,000-chat import quadratic.
        stored_ids = {} if new_ids else _stored(store, SessionRow.id, [c.id for c in checked])
        stored_sources = (
            _stored(store, SessionRow.source, [c.session["source"] for c in checked])
            if match_source
            else {}
        )
        for c in checked:
            source = c.session["source"]
            found, reason = None, "already imported"
            if not new_ids:
                found = targets.get(c.id) or (c.id if c.id in stored_ids else None)
            if found is None and match_source and source:
                found = sources.get(source) or stored_sources.get(source)
                reason += f" (source {source})"
            target = found or (uuid.uuid4().hex if new_ids else c.id)
            if found is None:
                targets[c.id] = target
                if source:
                    sources[source] = target
                plan.append((c, target))
            outcomes.append(
                ImportOutcome(
                    session_id=target,
                    original_id=c.id,
                    name=c.session["name"],
                    source=source,
                    messages=len(c.messages),
                    imported=found is None,
                    reason="" if found is None else reason,
                )
            )
        _check_attachment_content(store, checked)
        if not dry_run:
            # Skipped documents' content too: a caller merging a newer export into a
            # chat already here (`chatui import`) appends messages that name it.
            for c in checked:
                _write_attachments(store, c)
            for c, target in plan:
                _write(store, c, target, targets)
            if sum(len(c.messages) for c, _ in plan) >= BULK_MESSAGES:
                store.refresh_statistics()
    return outcomes


BULK_MESSAGES = 1_000
"""An import writing this many messages refreshes the planner's statistics."""
_BATCH = 500  # values in one IN (…) list: far below every engine's parameter limit


def _stored(store: Store, column: Any, values: list[str | None]) -> dict[str, str]:
    """Stored sessions whose `column` is one of `values`: value → id of the oldest."""
    wanted = sorted({v for v in values if v})
    found: dict[str, str] = {}
    for start in range(0, len(wanted), _BATCH):
        query = (
            SessionRow.select(column, SessionRow.id)
            .where(column.in_(wanted[start : start + _BATCH]))
            .order_by(SessionRow.created_at.desc(), SessionRow.id.desc())
        )
        found.update(store.rows(query))  # oldest last: it wins
    return found


def _check_attachment_content(store: Store, docs: list[_Checked]) -> None:
    """Every attachment part names content the file carries or the store holds.

    Raises:
        TransferError: the first part whose content is in neither.
    """
    carried = {digest for c in docs for digest in c.attachments}
    missing: dict[str, str] = {}
    for c in docs:
        for digest, where in c.named.items():
            if digest not in carried:
                missing.setdefault(digest, where)
    if missing:
        from .attachments import Attachments

        for digest in sorted(set(missing) - Attachments(store).stored(missing)):
            raise TransferError(
                f"{missing[digest]}: names an attachment ({digest[:12]}…) whose content is "
                "neither in the file nor in this database"
            )


def _write_attachments(store: Store, c: _Checked) -> None:
    """The document's content, each hash written once (content stored is not sent again)."""
    from .attachments import Attachments

    already = Attachments(store).stored(c.attachments)
    for digest, (content, created_at) in c.attachments.items():
        if digest not in already:
            store.run(
                AttachmentRow.insert(
                    hash=digest, size=len(content), content=content, created_at=created_at
                ).on_conflict_ignore()
            )


def _write(store: Store, c: _Checked, target: str, targets: Mapping[str, str]) -> None:
    s = c.session

    def namespace(ns: str) -> str:
        return target + ns[len(c.id) :]

    if c.project is not None:
        p = c.project
        store.run(
            ProjectRow.insert(
                id=p["id"], name=p["name"], created_at=p["created_at"], archived_at=p["archived_at"]
            ).on_conflict_ignore()
        )
    insert_session(
        store,
        target,
        s["name"],
        parent_session_id=targets.get(s["parent_session_id"], s["parent_session_id"]),
        model=s["model"],
        source=s["source"],
        agent_id=s["agent_id"],
        project_id=s["project_id"],
        status=s["status"],
        status_detail=s.get("status_detail"),
        metadata=json.dumps(s["metadata"]),
        input_tokens=s["input_tokens"],
        output_tokens=s["output_tokens"],
        cost=s["cost"],
        created_at=_iso(s["created_at"]),
        updated_at=_iso(s["updated_at"]),
        deleted_at=_iso(s["deleted_at"]) if s["deleted_at"] else None,
    )
    record_status(store, target, s["status"], "imported", _iso(now()))
    insert_messages(store, target, c.messages)
    for comp in c.compactions:
        cid = comp["id"]
        if (
            not cid
            or target != c.id
            or store.rows(CompactionRow.select(CompactionRow.id).where(CompactionRow.id == cid))
        ):
            cid = uuid.uuid4().hex  # compaction ids are unique store-wide
        store.run(
            CompactionRow.insert(
                id=cid,
                session_id=target,
                summary=comp["summary"],
                from_message_id=comp["from"],
                to_message_id=comp["to"],
                created_at=_iso(comp["created_at"]),
            )
        )
    for _, key, columns in _CONTEXT:
        if key == "block_writes":
            _write_block_writes(store, c, target, namespace)
            continue
        for item in c.context[key]:
            row = {**item, "namespace": namespace(item["namespace"])}
            table = _TABLES[key]
            values = {table._meta.fields[col]: row[col] for col in columns}
            if key == "search_entries":  # keyed rows with a search index beside them
                E = SearchEntryRow
                old = E.select(E.rowid).where(E.namespace == row["namespace"], E.key == row["key"])
                for (rowid,) in store.rows(old):
                    store.run(EntryIndexRow.delete().where(EntryIndexRow.rowid == rowid))
                    store.run(E.delete().where(E.rowid == rowid))
                rowid = store.run(E.insert(values))
                index_entry(store, int(rowid), row["namespace"], row["content"])
                continue
            keys = [table._meta.fields[c] for c in _ORDER[key]]
            rest = [f for f in values if f not in keys]
            insert = table.insert(values)
            store.run(
                insert.on_conflict(conflict_target=keys, preserve=rest)
                if rest
                else insert.on_conflict_ignore()
            )


def _write_block_writes(
    store: Store, c: _Checked, target: str, namespace: Callable[[str], str]
) -> None:
    """The document's block writes, in order, as writes of `target`; a block without
    any gets one from its content (on no message: every branch sees it)."""
    written: set[tuple[str, str]] = set()
    for item in c.context["block_writes"]:
        ns = namespace(item["namespace"])
        written.add((ns, item["label"]))
        store.run(
            BlockWriteRow.insert(
                namespace=ns,
                label=item["label"],
                content=item["content"],
                session_id=target,
                message_id=item["message_id"],
                origin=item["origin"],
                written_at=item["written_at"],
                reverted_at=item["reverted_at"],
            )
        )
    for block in c.context["blocks"]:
        ns = namespace(block["namespace"])
        if (ns, block["label"]) not in written:
            store.run(
                BlockWriteRow.insert(
                    namespace=ns,
                    label=block["label"],
                    content=block["content"],
                    session_id=target,
                    origin="import",
                    written_at=block["updated_at"],
                )
            )
