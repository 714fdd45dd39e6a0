"""Import simonw/llm's `logs.db` (find it with `llm logs path`).

`conversations(id, name, model)` and `responses(id, model, prompt, system,
response, conversation_id, datetime_utc, input_tokens, output_tokens, …)`:
each conversation becomes a chat, each response a user prompt and the
assistant's reply, chained in time order. Newer databases also log tool
calls (`tool_calls`, on the response that made them) and tool results
(`tool_results`, on the response whose prompt sent them back); those become
tool-call parts and tool messages. The file is opened read-only.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from .common import (
    ImportFormatError,
    Rejected,
    guess_format,
    hint,
    iso_time,
    make_document,
    preview_name,
    text_part,
)
from .llm_threads import NEW_TABLES, Thread, read_threads

__all__ = ["load_llm"]

_NEEDED = {"id", "prompt", "response", "conversation_id", "datetime_utc"}
_OPTIONAL = ("model", "system", "input_tokens", "output_tokens", "duration_ms")


def load_llm(path: Path, rejected: list[Rejected] | None = None) -> list[dict[str, Any]]:
    """Every conversation in an llm logs database as a chatui export document.

    Args:
        rejected: when given, a thread whose message chain is broken is noted
            here and skipped.

    Raises:
        ImportFormatError: missing, not SQLite, or without llm's tables.
    """
    try:
        with path.open("rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if head != b"SQLite format 3\x00":
        raise ImportFormatError(
            f"{path}: not an llm logs database (not a SQLite file)"
            + hint(guess_format(path), path, "llm")
        )
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ImportFormatError(f"{path}: cannot open: {exc}") from exc
    try:
        return _read(conn, path, rejected)
    except sqlite3.DatabaseError as exc:
        raise ImportFormatError(f"{path}: cannot read as an llm logs database: {exc}") from exc
    finally:
        conn.close()


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _read(
    conn: sqlite3.Connection, path: Path, rejected: list[Rejected] | None
) -> list[dict[str, Any]]:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    new_layout = NEW_TABLES <= tables
    if "responses" not in tables and not new_layout:
        raise ImportFormatError(
            f"{path}: not an llm logs database (no 'responses' or 'threads' table)"
        )
    old = _read_responses(conn, path, tables) if "responses" in tables else []
    if not new_layout:
        return old
    by_id = {doc["session"]["metadata"]["llm"]["conversation_id"]: doc for doc in old}
    for thread in read_threads(conn, tables, str(path), rejected):
        if thread.id in by_id:
            _continue(by_id[thread.id], thread)
        elif thread.messages:
            doc = _thread_document(thread)
            by_id[thread.id] = doc
            old.append(doc)
    return old


def _read_responses(conn: sqlite3.Connection, path: Path, tables: set[str]) -> list[dict[str, Any]]:
    have = _columns(conn, "responses")
    missing = _NEEDED - have
    if missing:
        raise ImportFormatError(
            f"{path}: the responses table lacks {', '.join(sorted(missing))}"
            " (not an llm logs database?)"
        )
    picked = sorted(_NEEDED) + [c for c in _OPTIONAL if c in have]
    rows = [
        dict(zip(picked, r, strict=True))
        for r in conn.execute(
            f"SELECT {', '.join(picked)} FROM responses ORDER BY datetime_utc, rowid"
        )
    ]
    names: dict[str, tuple[Any, Any]] = {}
    if "conversations" in tables:
        names = {
            r[0]: (r[1], r[2]) for r in conn.execute("SELECT id, name, model FROM conversations")
        }
    calls = _by_response(conn, tables, "tool_calls", "name, arguments, tool_call_id")
    results = _by_response(conn, tables, "tool_results", "name, output, tool_call_id")
    chats: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        chats.setdefault(str(row["conversation_id"] or row["id"]), []).append(row)
    return [
        _conversation(cid, responses, names.get(cid, (None, None)), calls, results)
        for cid, responses in chats.items()
    ]


def _by_response(
    conn: sqlite3.Connection, tables: set[str], table: str, columns: str
) -> dict[str, list[tuple[Any, ...]]]:
    found: dict[str, list[tuple[Any, ...]]] = {}
    if table in tables:
        for row in conn.execute(f"SELECT response_id, {columns} FROM {table} ORDER BY id"):
            found.setdefault(row[0], []).append(row[1:])
    return found


def _arguments(raw: Any) -> Any:
    """llm keeps tool arguments as JSON text; chatui parts hold the object."""
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return raw


def _conversation(
    cid: str,
    responses: list[dict[str, Any]],
    info: tuple[Any, Any],
    calls: dict[str, list[tuple[Any, ...]]],
    results: dict[str, list[tuple[Any, ...]]],
) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    system = None

    def add(
        mid: str, role: str, parts: list[dict[str, Any]], when: str | None, **extra: Any
    ) -> None:
        messages.append(
            {
                "id": mid,
                "parent_id": messages[-1]["id"] if messages else None,
                "role": role,
                "parts": parts,
                "created_at": when,
                **extra,
            }
        )

    for r in responses:
        rid, when = str(r["id"]), iso_time(r["datetime_utc"])
        if r.get("system") and r["system"] != system:
            add(f"{rid}-system", "system", [text_part(r["system"])], when)
        system = r.get("system") or system
        if rid in results:
            add(
                f"{rid}-tools",
                "tool",
                [
                    {
                        "type": "tool-result",
                        "tool_call_id": str(call_id or ""),
                        "tool_name": str(name or ""),
                        "output": output or "",
                    }
                    for name, output, call_id in results[rid]
                ],
                when,
            )
        if r["prompt"] or rid not in results:
            add(f"{rid}-prompt", "user", [text_part(r["prompt"] or "")], when)
        parts = [text_part(r["response"])] if r["response"] else []
        parts += [
            {
                "type": "tool-call",
                "tool_call_id": str(call_id or ""),
                "tool_name": str(name or ""),
                "input": _arguments(arguments),
            }
            for name, arguments, call_id in calls.get(rid, [])
        ]
        usage = {"input": r.get("input_tokens") or 0, "output": r.get("output_tokens") or 0}
        llm_meta = {k: r[k] for k in ("model", "duration_ms") if r.get(k) is not None}
        add(
            f"{rid}-response",
            "assistant",
            parts,
            when,
            metadata={"llm": {"response_id": rid, **llm_meta}},
            **({"token_usage": usage} if any(usage.values()) else {}),
        )
    name, model = info
    first_prompt = next((str(r["prompt"]) for r in responses if r["prompt"]), "")
    times = [m["created_at"] for m in messages if m["created_at"]]
    meta: dict[str, Any] = {"conversation_id": cid}
    if model:
        meta["model"] = model
    return make_document(
        source=f"llm:{cid}",
        name=str(name).strip()
        if name and str(name).strip()
        else preview_name(first_prompt, "llm conversation"),
        created_at=min(times) if times else None,
        updated_at=max(times) if times else None,
        messages=messages,
        active_leaf=messages[-1]["id"] if messages else None,
        metadata={"llm": meta},
    )


def _text(message: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in message["parts"] if p.get("type") == "text")


def _thread_document(thread: Thread) -> dict[str, Any]:
    times = [m["created_at"] for m in thread.messages if m["created_at"]]
    first_prompt = next((_text(m) for m in thread.messages if m["role"] == "user"), "")
    meta: dict[str, Any] = {"conversation_id": thread.id, "thread_id": thread.id}
    if thread.model:
        meta["model"] = thread.model
    name = str(thread.name or "").strip()
    return make_document(
        source=f"llm:{thread.id}",
        name=name or preview_name(first_prompt, "llm conversation"),
        created_at=min(times) if times else None,
        updated_at=max(times) if times else None,
        messages=thread.messages,
        active_leaf=thread.active_leaf,
        metadata={"llm": meta},
    )


def _continue(doc: dict[str, Any], thread: Thread) -> None:
    """Add a 0.32+ thread to the chat of the old conversation it continues.

    The thread's chain replays the old conversation's messages (llm rebuilds
    them from `responses`), so a new message that matches the old chain at its
    depth by role and text is that old message; the rest hang below the last
    match.
    """
    old = doc["messages"]
    chain = [m for m in old]  # the old layout is one chain, in order
    mapped: dict[str, int] = {}  # new id -> index in `chain`
    added: list[dict[str, Any]] = []
    renamed: dict[str, str] = {}
    for m in thread.messages:
        parent = m["parent_id"]
        at = 0 if parent is None else (mapped[parent] + 1 if parent in mapped else None)
        if (
            at is not None
            and at < len(chain)
            and chain[at]["role"] == m["role"]
            and _text(chain[at]) == _text(m)
        ):
            mapped[m["id"]] = at
            renamed[m["id"]] = chain[at]["id"]
            continue
        added.append({**m, "parent_id": renamed.get(parent, parent) if parent else None})
    old.extend(added)
    session = doc["session"]
    if thread.active_leaf is not None:
        session["metadata"]["active_leaf"] = renamed.get(thread.active_leaf, thread.active_leaf)
    session["metadata"]["llm"]["thread_id"] = thread.id
    times = [m["created_at"] for m in added if m["created_at"]]
    if times:
        session["updated_at"] = max([*times, session["updated_at"] or times[0]])
