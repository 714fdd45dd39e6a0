"""simonw/llm's message store (0.32 and later): threads, turns, messages, parts.

Since 0.32 llm logs a content-addressed tree instead of `responses` rows
(migration `m023_message_store`):

- `messages(hash, parent_hash, role, provider_metadata)`: one row per message,
  shared by every conversation with the same prefix;
- `parts(id, message_hash, position, type, tool_name, text, payload)`: `type`
  is text | reasoning | tool_call | tool_result | attachment; `text` holds a
  text/reasoning part's text unless it borrows fragments, in which case the
  JSON `payload` has a `text_ref` list of literals and fragment ids; an
  attachment part's payload names a row of `attachments(id, type, path, url,
  content)`, a tool result's lists them under `attachments`;
- `threads(id, name, tip_message_hash, forked_from, datetime_utc)`: a
  conversation (its id is the old conversation id when `llm -c` continued
  one); a fork is a second thread pointing into the same tree;
- `turns(id, thread_id, parent_message_hash, tip_message_hash, model,
  input_tokens, output_tokens, duration_ms, datetime_utc, …)`: one model call;
  message rows carry no time, so a message gets the time of the first turn
  whose chain holds it.

A thread and the threads forked from it become one chat (forks are branches).
Message hashes are shared across conversations, so chatui ids are prefixed
with the chat's thread id.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from typing import Any

from .common import ImportFormatError, Node, Rejected, build_tree, iso_time

__all__ = ["NEW_TABLES", "Thread", "read_threads"]

NEW_TABLES = {"threads", "turns", "messages", "parts"}
"""Tables whose presence means the 0.32+ layout (they may be empty)."""

_MAX_DEPTH = 1_000_000  # a chain longer than this is a loop in a damaged file


class Thread:
    """One chat from the message store: its messages (tree order) and facts."""

    def __init__(
        self,
        thread_id: str,
        name: str | None,
        messages: list[dict[str, Any]],
        active_leaf: str | None,
        model: str | None,
    ) -> None:
        self.id = thread_id
        self.name = name
        self.messages = messages
        self.active_leaf = active_leaf
        self.model = model


def _root(threads: dict[str, dict[str, Any]], tid: str) -> str:
    seen = {tid}
    while (parent := threads[tid]["forked_from"]) in threads and parent not in seen:
        seen.add(parent)
        tid = parent
    return tid


def _int(value: Any) -> int:
    """A fragment number as the file gives it (-1, found nowhere, when it is not one)."""
    return value if isinstance(value, int) else -1


def _decode_text(payload: dict[str, Any], fragments: dict[int, str]) -> str:
    pieces = payload.get("text_ref")
    if isinstance(pieces, list):
        return "".join(
            str(p.get("literal", ""))
            if "literal" in p
            else fragments.get(_int(p.get("fragment")), "")
            for p in pieces
            if isinstance(p, dict)
        )
    return str(payload.get("text") or "")


def _file_part(row: tuple[Any, ...] | None, attachment_id: str) -> dict[str, Any]:
    """An llm attachment as a chatui `file` part (bytes as base64, else its url or path)."""
    if row is None:
        return {"type": "file", "media_type": "application/octet-stream", "url": attachment_id}
    media_type, path, url, content = row
    part: dict[str, Any] = {"type": "file", "media_type": media_type or "application/octet-stream"}
    if content:
        part["data"] = base64.b64encode(content).decode("ascii")
    elif url:
        part["url"] = url
    elif path:
        part["url"] = f"file://{path}"
    if path:
        part["filename"] = str(path).replace("\\", "/").rsplit("/", 1)[-1]
    return part


def _parts(
    rows: list[tuple[Any, ...]],
    fragments: dict[int, str],
    attachments: dict[str, tuple[Any, ...]],
) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for kind, tool_name, text, raw in rows:
        try:
            payload = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            payload = {}
        if not isinstance(payload, dict):
            payload = {}
        if kind in ("text", "reasoning"):
            body = text if text is not None else _decode_text(payload, fragments)
            if body:
                parts.append({"type": kind, "text": body})
        elif kind == "tool_call":
            parts.append(
                {
                    "type": "tool-call",
                    "tool_call_id": str(payload.get("tool_call_id") or ""),
                    "tool_name": str(tool_name or payload.get("name") or ""),
                    "input": payload.get("arguments", {}),
                }
            )
        elif kind == "tool_result":
            result: dict[str, Any] = {
                "type": "tool-result",
                "tool_call_id": str(payload.get("tool_call_id") or ""),
                "tool_name": str(tool_name or payload.get("name") or ""),
                "output": payload.get("output", text or ""),
            }
            if payload.get("exception"):
                result["is_error"] = True
            parts.append(result)
            for ref in payload.get("attachments") or []:
                if isinstance(ref, dict):
                    aid = str(ref.get("id"))
                    parts.append(_file_part(attachments.get(aid), aid))
        elif kind == "attachment":
            ref = payload.get("attachment")
            aid = str(ref.get("id")) if isinstance(ref, dict) else ""
            parts.append(_file_part(attachments.get(aid), aid))
        else:  # a part type from a later llm: kept as-is rather than lost
            parts.append({**payload, "type": f"llm-{kind}", **({"text": text} if text else {})})
    return parts


def _chain(parents: dict[str, str | None], tip: str | None, where: str) -> list[str]:
    """`tip` and its ancestors, tip first (hashes the file names but lacks are cut off)."""
    chain: list[str] = []
    seen: set[str] = set()
    node = tip
    while node is not None and node in parents:
        if node in seen or len(chain) > _MAX_DEPTH:
            raise ImportFormatError(f"{where}: message parent links form a cycle at {node!r}")
        seen.add(node)
        chain.append(node)
        node = parents[node]
    return chain


def read_threads(
    conn: sqlite3.Connection, tables: set[str], where: str, rejected: list[Rejected] | None = None
) -> list[Thread]:
    """Every thread family of a 0.32+ logs database as one chat each.

    A family whose chain is broken raises, or (with `rejected`) is noted and skipped.
    """
    parents: dict[str, str | None] = {}
    roles: dict[str, str] = {}
    order: dict[str, int] = {}
    for rowid, mhash, parent, role in conn.execute(
        "SELECT rowid, hash, parent_hash, role FROM messages ORDER BY rowid"
    ):
        parents[mhash] = parent
        roles[mhash] = str(role or "user")
        order[mhash] = rowid
    part_rows: dict[str, list[tuple[Any, ...]]] = {}
    for mhash, *rest in conn.execute(
        "SELECT message_hash, type, tool_name, text, payload FROM parts "
        "ORDER BY message_hash, position"
    ):
        part_rows.setdefault(mhash, []).append(tuple(rest))
    fragments: dict[int, str] = {}
    if "fragments" in tables:
        fragments = {r[0]: r[1] for r in conn.execute("SELECT id, content FROM fragments")}
    attachments: dict[str, tuple[Any, ...]] = {}
    if "attachments" in tables:
        attachments = {
            r[0]: r[1:]
            for r in conn.execute("SELECT id, type, path, url, content FROM attachments")
        }
    threads = {
        r[0]: {"name": r[1], "tip": r[2], "forked_from": r[3], "when": r[4]}
        for r in conn.execute(
            "SELECT id, name, tip_message_hash, forked_from, datetime_utc FROM threads "
            "ORDER BY datetime_utc, rowid"
        )
    }
    turns: dict[str, list[tuple[Any, ...]]] = {}
    for row in conn.execute(
        "SELECT thread_id, parent_message_hash, tip_message_hash, model, input_tokens, "
        "output_tokens, duration_ms, datetime_utc, id FROM turns ORDER BY datetime_utc, rowid"
    ):
        turns.setdefault(row[0], []).append(row[1:])
    families: dict[str, list[str]] = {}
    for tid in threads:
        families.setdefault(_root(threads, tid), []).append(tid)

    chats: list[Thread] = []
    for root, members in families.items():
        try:
            chats.append(
                _family(
                    root, members, threads, turns, parents, roles, order,
                    part_rows, fragments, attachments, where,
                )
            )  # fmt: skip
        except ImportFormatError as exc:
            if rejected is None:
                raise
            rejected.append(Rejected(str(exc)))
    return chats


def _family(
    root: str,
    members: list[str],
    threads: dict[str, dict[str, Any]],
    turns: dict[str, list[tuple[Any, ...]]],
    parents: dict[str, str | None],
    roles: dict[str, str],
    order: dict[str, int],
    part_rows: dict[str, list[tuple[Any, ...]]],
    fragments: dict[int, str],
    attachments: dict[str, tuple[Any, ...]],
    where: str,
) -> Thread:
    at = f"{where}: thread {root}"
    prefix = f"llm-{root}-"
    when: dict[str, str] = {}
    meta: dict[str, dict[str, Any]] = {}
    held: set[str] = set()
    latest_tip: str | None = None
    model: str | None = None
    for tid in members:
        for chain_start in [threads[tid]["tip"]] + [t[1] for t in turns.get(tid, [])]:
            held.update(_chain(parents, chain_start, at))
        for parent, tip, t_model, t_in, t_out, t_ms, t_when, turn_id in turns.get(tid, []):
            stamp = iso_time(t_when)
            latest_tip = tip if tip in parents else latest_tip
            model = t_model or model
            for mhash in _chain(parents, tip, at):
                if stamp and mhash not in when:
                    when[mhash] = stamp
                if mhash == parent:
                    break
            if tip in parents:  # usage and model belong to the turn's last message
                usage = {"input": t_in or 0, "output": t_out or 0}
                meta[tip] = {
                    "metadata": {
                        "llm": {
                            "turn_id": turn_id,
                            **({"model": t_model} if t_model else {}),
                            **({"duration_ms": t_ms} if t_ms is not None else {}),
                        }
                    },
                    **({"token_usage": usage} if any(usage.values()) else {}),
                }
    nodes = [
        Node(
            id=prefix + mhash,
            parent=prefix + parent_hash
            if (parent_hash := parents[mhash]) is not None and parent_hash in held
            else None,
            message={
                "role": roles[mhash],
                "parts": _parts(part_rows.get(mhash, []), fragments, attachments),
                "created_at": when.get(mhash),
                **meta.get(mhash, {}),
            },
            order=(order[mhash],),
        )
        for mhash in sorted(held, key=order.__getitem__)
    ]
    tip = latest_tip or threads[root]["tip"]
    active = prefix + tip if tip in held else None
    messages, active_leaf = build_tree(nodes, active, at)
    return Thread(root, threads[root]["name"], messages, active_leaf, model)
