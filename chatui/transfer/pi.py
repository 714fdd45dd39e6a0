"""Import Pi coding agent sessions (`~/.pi/agent/sessions/**/<time>_<uuid>.jsonl`).

A session file is JSON Lines: a `session` header (id, cwd, timestamp,
version), then entries linked into a tree by `id`/`parentId`. `message`
entries carry the conversation (user, assistant with text/thinking/toolCall
blocks, toolResult, bashExecution, custom); `custom_message` and
`branch_summary` entries also reach the model. `label`, `session_info`,
`model_change`, `thinking_level_change`, `custom` and `compaction` entries
are tree nodes too but not messages: they are skipped (their children move
up) and what they say is kept — labels as message metadata, the latest
name as the chat name, compactions as chatui compaction overlays. Pi's
current leaf is the file's last entry. Version 1 files (no ids) are one
linear chain.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .common import (
    ImportFormatError,
    Node,
    Rejected,
    build_tree,
    collect,
    epoch_time,
    guess_format,
    hint,
    iso_time,
    make_document,
    preview_name,
    read_text,
    text_part,
)
from .text import one_line

__all__ = ["load_pi"]


def load_pi(path: Path, rejected: list[Rejected] | None = None) -> list[dict[str, Any]]:
    """A Pi session file, or every `*.jsonl` session under a folder, as documents.

    Args:
        rejected: when given, a broken session file of a folder is noted here and
            skipped (a single file is all there is: it still raises).

    Raises:
        ImportFormatError: not JSONL, no session header, or a broken tree.
    """
    if path.is_dir():
        files = sorted(path.rglob("*.jsonl"))
        if not files:
            raise ImportFormatError(f"{path}: no Pi session files (*.jsonl) in this folder")
        return collect(((f, str(f)) for f in files), lambda f, _where: _session(f), rejected)
    return [_session(path)]


def _lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    entries: list[tuple[int, dict[str, Any]]] = []
    for n, line in enumerate(read_text(path, "Pi session").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            if not entries:
                raise ImportFormatError(
                    f"{path}: not a Pi session file: line {n} is not a JSON object"
                    + hint(guess_format(path), path, "pi")
                ) from None
            raise ImportFormatError(
                f"{path}: line {n} is not valid JSON ({exc.msg}); is the file truncated?"
            ) from None
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            raise ImportFormatError(
                f"{path}: {'not a Pi session file: ' if not entries else ''}line {n} is not a "
                "Pi entry (no 'type')" + hint(guess_format(path), path, "pi")
            )
        entries.append((n, entry))
    return entries


def _session(path: Path) -> dict[str, Any]:
    lines = _lines(path)
    header = lines[0][1]
    if header["type"] != "session" or not isinstance(header.get("id"), str) or "format" in header:
        raise ImportFormatError(
            f"{path}: not a Pi session file: the first line is not a "
            "session header" + hint(guess_format(path), path, "pi")
        )
    version = header.get("version") or 1
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= 1000:
        raise ImportFormatError(
            f"{path}: not a Pi session file chatui can read: the header's version is "
            f"{one_line(repr(version), 40)} (a whole number such as 3 is expected)"
        )
    nodes: list[Node] = []
    labels: dict[str, str] = {}
    parents: dict[str, str | None] = {}
    compactions: list[tuple[int, dict[str, Any]]] = []
    name: str | None = None
    previous: str | None = None
    for n, entry in lines[1:]:
        where = f"{path}: line {n}"
        if version < 2:  # v1: no ids, one chain in file order
            entry = {**entry, "id": f"line-{n}", "parentId": previous}
            if entry["type"] == "compaction":
                entry = _v1_compaction(entry, lines)
        eid, parent = entry.get("id"), entry.get("parentId")
        if not isinstance(eid, str) or not eid:
            raise ImportFormatError(f"{where}: the entry has no id")
        if parent is not None and not isinstance(parent, str):
            raise ImportFormatError(f"{where}: parentId is not an entry id")
        kind = entry["type"]
        if kind == "session":
            raise ImportFormatError(f"{where}: a second session header")
        message = None
        if kind == "message":
            if not isinstance(entry.get("message"), dict):
                raise ImportFormatError(f"{where}: a message entry without a message")
            message = _message(entry["message"], entry)
        elif kind == "custom_message":
            message = _custom(entry, entry)
        elif kind == "branch_summary" and isinstance(entry.get("summary"), str):
            message = {
                "role": "user",
                "parts": [text_part(entry["summary"])],
                "created_at": iso_time(entry.get("timestamp")),
                "metadata": {"pi": {"type": "branch_summary", "from_id": entry.get("fromId")}},
            }
        elif kind == "label" and isinstance(entry.get("targetId"), str):
            if entry.get("label"):
                labels[entry["targetId"]] = str(entry["label"])
            else:
                labels.pop(entry["targetId"], None)
        elif (
            kind == "session_info" and isinstance(entry.get("name"), str) and entry["name"].strip()
        ):
            name = entry["name"].strip()
        elif kind == "compaction":
            compactions.append((n, entry))
        nodes.append(Node(eid, parent, message, (n,)))
        parents[eid] = parent
        previous = eid
    messages, active = build_tree(nodes, previous, str(path))
    kept = {m["id"]: m for m in messages}
    stray: dict[str, str] = {}
    for target, label in labels.items():
        if target in kept:
            kept[target]["metadata"] = {**kept[target].get("metadata", {}), "label": label}
        else:
            stray[target] = label  # a label on a non-message entry
    first_user = next(
        (
            p["text"]
            for m in messages
            if m["role"] == "user"
            for p in m["parts"]
            if p.get("type") == "text"
        ),
        "",
    )
    pi_meta: dict[str, Any] = {"session_id": header["id"], "version": version}
    for key, out in (("cwd", "cwd"), ("parentSession", "parent_session")):
        if isinstance(header.get(key), str) and header[key]:
            pi_meta[out] = header[key]
    if stray:
        pi_meta["labels"] = stray
    times = [m["created_at"] for m in messages if m.get("created_at")]
    created = iso_time(header.get("timestamp")) or (min(times) if times else None)
    return make_document(
        source=f"pi:{header['id']}",
        name=name or preview_name(first_user, "Pi session"),
        created_at=created,
        updated_at=max(times) if times else created,
        messages=messages,
        active_leaf=active,
        metadata={"pi": pi_meta},
        compactions=_compactions(compactions, parents, kept),
    )


def _v1_compaction(
    entry: dict[str, Any], lines: list[tuple[int, dict[str, Any]]]
) -> dict[str, Any]:
    """A v1 compaction's `firstKeptEntryIndex` as the `firstKeptEntryId` v2 would give it.

    Pi's own v1→v2 migration (`migrateV1ToV2`) indexes the file's entries with
    the session header at 0 and blank lines left out — the list `_lines`
    returns — and drops an index that names the header or nothing.
    """
    index = entry.get("firstKeptEntryIndex")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 < index < len(lines):
        return entry
    target_line, target = lines[index]
    if target.get("type") == "session":
        return entry
    return {**entry, "firstKeptEntryId": f"line-{target_line}"}


def _compactions(
    entries: list[tuple[int, dict[str, Any]]],
    parents: dict[str, str | None],
    kept: dict[str, dict[str, Any]],
) -> list[dict[str, Any]]:
    """Pi compactions summarise the path before `firstKeptEntryId`: chatui overlays."""
    result = []
    for _, entry in entries:
        path: list[str] = []
        node: str | None = entry["id"]
        while node is not None:
            path.append(node)
            node = parents.get(node)
        path.reverse()
        first_kept = entry.get("firstKeptEntryId")
        cut = path.index(first_kept) if first_kept in path else len(path) - 1
        covered = [eid for eid in path[:cut] if eid in kept]
        summary = entry.get("summary")
        if covered and isinstance(summary, str) and summary.strip():
            result.append(
                {
                    "id": None,
                    "summary": summary,
                    "from_message_id": covered[0],
                    "to_message_id": covered[-1],
                    "created_at": iso_time(entry.get("timestamp")),
                }
            )
    return result


def _content_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [text_part(content)] if content else []
    parts: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(text_part(block["text"]))
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            parts.append({"type": "reasoning", "text": block["thinking"]})
        elif kind == "toolCall":
            parts.append(
                {
                    "type": "tool-call",
                    "tool_call_id": str(block.get("id", "")),
                    "tool_name": str(block.get("name", "")),
                    "input": block.get("arguments", {}),
                }
            )
        elif kind == "image":
            parts.append(
                {
                    "type": "file",
                    "media_type": block.get("mimeType", "image/*"),
                    "data": block.get("data", ""),
                }
            )
        else:
            parts.append({"type": f"pi-{kind}", "data": block})
    return parts


def _when(message: dict[str, Any], entry: dict[str, Any]) -> str | None:
    stamp = message.get("timestamp")
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        return epoch_time(stamp / 1000)  # Pi message times are Unix milliseconds
    return iso_time(entry.get("timestamp"))


def _custom(message: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "user",
        "parts": _content_parts(message.get("content")),
        "created_at": _when(message, entry),
        "metadata": {
            "pi": {
                "type": "custom",
                "custom_type": message.get("customType"),
                "display": bool(message.get("display", True)),
            }
        },
    }


def _reply_status(m: dict[str, Any]) -> dict[str, Any]:
    """Pi's stop reason as the metadata the app writes on a reply that did not finish.

    `aborted` (the user pressed escape) is the app's `cancelled`; `error` its
    `error`, with the message; both are `incomplete`, so the app shows them so.
    """
    stop = m.get("stopReason")
    if stop == "aborted":
        return {"status": "cancelled", "incomplete": True}
    if stop == "error":
        return {
            "status": "error",
            "incomplete": True,
            "error": str(m.get("errorMessage") or "the provider reported an error"),
            "error_kind": "unknown",
        }
    return {}


def _message(m: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    role = m.get("role")
    created = _when(m, entry)
    if role == "user":
        return {"role": "user", "parts": _content_parts(m.get("content")), "created_at": created}
    if role == "assistant":
        pi: dict[str, Any] = {k: m[k] for k in ("provider", "model", "api") if m.get(k)}
        if m.get("stopReason"):
            pi["stop_reason"] = m["stopReason"]
        if m.get("errorMessage"):
            pi["error"] = m["errorMessage"]
        result: dict[str, Any] = {
            "role": "assistant",
            "parts": _content_parts(m.get("content")),
            "created_at": created,
            "metadata": {"pi": pi, **_reply_status(m)},
        }
        usage = m.get("usage")
        if isinstance(usage, dict):
            cost = usage.get("cost")
            result["token_usage"] = {
                "input": usage.get("input", 0),
                "output": usage.get("output", 0),
                "cost": cost.get("total", 0) if isinstance(cost, dict) else 0,
            }
        return result
    if role == "toolResult":
        blocks = _content_parts(m.get("content"))
        output = "\n".join(p["text"] for p in blocks if p.get("type") == "text")
        part: dict[str, Any] = {
            "type": "tool-result",
            "tool_call_id": str(m.get("toolCallId", "")),
            "tool_name": str(m.get("toolName", "")),
            "output": output,
        }
        if m.get("isError"):
            part["is_error"] = True
        return {
            "role": "tool",
            "created_at": created,
            "parts": [part] + [p for p in blocks if p.get("type") != "text"],
        }
    if role == "bashExecution":
        text = f"```\n$ {m.get('command', '')}\n{m.get('output', '')}\n```"
        return {
            "role": "user",
            "parts": [text_part(text)],
            "created_at": created,
            "metadata": {"pi": {"type": "bash", "exit_code": m.get("exitCode")}},
        }
    if role == "custom":
        return _custom(m, entry)
    summary = m.get("summary")
    parts = [text_part(summary)] if isinstance(summary, str) else _content_parts(m.get("content"))
    return {
        "role": "user",
        "parts": parts,
        "created_at": created,
        "metadata": {"pi": {"role": role}},
    }
