"""Import ChatGPT's data export (`conversations.json`, or the export's zip).

A conversation's `mapping` is a tree: {node_id: {id, message|null, parent,
children}}; regenerations and edits are sibling nodes, `current_node` is the
leaf the user last saw. Every branch is kept with its parent links. Nodes
without a visible message (the null root, hidden system and context nodes,
empty placeholders) are skipped and their children re-attached above.
"""

from __future__ import annotations

import json
import zipfile
import zlib
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
    make_document,
    read_text,
    text_part,
)

__all__ = ["load_chatgpt"]

ROLES = {"user", "assistant", "system", "tool"}
# Content types that are settings or scaffolding, not conversation.
HIDDEN_CONTENT = {"user_editable_context", "model_editable_context"}


def _looks_zipped(path: Path) -> bool:
    """Starts like a zip (a truncated download keeps the start, loses the index)."""
    try:
        with path.open("rb") as fh:
            return fh.read(4) in (b"PK\x03\x04", b"PK\x05\x06")
    except OSError:
        return False


MAX_UNZIPPED = 2 * 1024**3
"""Bytes a zip entry may expand to: ChatGPT's biggest exports hold a few hundred MB."""
MAX_RATIO = 200
"""How many times its compressed size an entry may expand to: JSON compresses 5-20×;
a zip bomb (a small file that expands to gigabytes) does 1000× and more."""


def _unzipped(path: Path, archive: zipfile.ZipFile, name: str) -> str:
    """The text of one entry, read only if its size is plausible, and stopped at the
    size the zip's directory states (which a bomb may understate)."""
    info = archive.getinfo(name)
    limit = min(MAX_UNZIPPED, max(info.compress_size, 1) * MAX_RATIO + 1024**2)
    if info.file_size > limit:
        raise ImportFormatError(
            f"{path}: {name} would expand to {info.file_size:,} bytes from "
            f"{info.compress_size:,} (over the {MAX_RATIO}× or {MAX_UNZIPPED:,}-byte limit): "
            "not unpacked (a zip bomb?)"
        )
    with archive.open(info) as fh:
        data = fh.read(info.file_size + 1)
    if len(data) > info.file_size:  # the directory lied about the size
        raise ImportFormatError(f"{path}: {name} is larger than its zip directory says")
    return data.decode("utf-8-sig")


def _read(path: Path) -> Any:
    if not path.is_dir() and _looks_zipped(path) and not zipfile.is_zipfile(path):
        raise ImportFormatError(
            f"{path}: a damaged zip (its directory at the end is missing: a cut-off "
            "download?); download the export again"
        )
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as archive:
                names = sorted(
                    n
                    for n in archive.namelist()
                    if Path(n).name.startswith("conversations") and n.endswith(".json")
                )
                if not names:
                    raise ImportFormatError(
                        f"{path}: the zip holds no conversations.json (is this ChatGPT's export?)"
                    )
                texts = [(f"{path}:{n}", _unzipped(path, archive, n)) for n in names]
        except (
            zipfile.BadZipFile,
            zlib.error,
            EOFError,
            OSError,
            UnicodeDecodeError,
            RuntimeError,  # an encrypted entry
            NotImplementedError,  # a compression method zipfile does not know
        ) as exc:
            raise ImportFormatError(
                f"{path}: a damaged zip (cannot read {getattr(exc, 'filename', None) or 'it'}: "
                f"{exc}); download the export again"
            ) from exc
    else:
        texts = [(str(path), read_text(path, "ChatGPT export"))]
    data: list[Any] = []
    for where, text in texts:
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            extra = exc.msg == "Extra data"
            raise ImportFormatError(
                f"{where}: not a ChatGPT export: "
                + (
                    "more than one JSON value (JSON Lines?)"
                    if extra
                    else f"not valid JSON ({exc.msg}: line {exc.lineno}, column {exc.colno}); "
                    "is the file truncated?"
                )
                + hint(guess_format(path), path, "chatgpt")
            ) from None
        if isinstance(loaded, dict) and "mapping" in loaded:
            loaded = [loaded]  # one conversation on its own
        if not isinstance(loaded, list):
            raise ImportFormatError(
                f"{where}: not a ChatGPT export: expected a list of conversations, found "
                f"a JSON {type(loaded).__name__}" + hint(guess_format(path), path, "chatgpt")
            )
        data.extend(loaded)
    return data


def load_chatgpt(path: Path, rejected: list[Rejected] | None = None) -> list[dict[str, Any]]:
    """Every conversation of a ChatGPT export as a chatui export document.

    Args:
        rejected: when given, a broken conversation is noted here and skipped.

    Raises:
        ImportFormatError: not JSON, not a list of conversations, a damaged zip, or
            (without `rejected`) a conversation whose tree is broken (missing
            parent, cycle, unknown current node).
    """
    return collect(
        ((conv, f"{path}: conversation {i + 1}") for i, conv in enumerate(_read(path))),
        lambda conv, where: _conversation(conv, where, path),
        rejected,
    )


def _conversation(conv: Any, where: str, path: Path) -> dict[str, Any]:
    if not isinstance(conv, dict) or not isinstance(conv.get("mapping"), dict):
        raise ImportFormatError(
            f"{where}: not a ChatGPT conversation (no 'mapping')"
            + hint(guess_format(path), path, "chatgpt")
        )
    cid = conv.get("conversation_id") or conv.get("id")
    if not isinstance(cid, str) or not cid:
        raise ImportFormatError(f"{where}: the conversation has no id")
    where = f"{where} ({cid})"
    created = epoch_time(conv.get("create_time"))
    nodes = []
    position: dict[str, int] = {}
    for node in conv["mapping"].values():
        if isinstance(node, dict):
            children = node.get("children")
            for i, child in enumerate(children if isinstance(children, list) else []):
                if isinstance(child, str):
                    position.setdefault(child, i)
    for index, (key, node) in enumerate(conv["mapping"].items()):
        if not isinstance(node, dict):
            raise ImportFormatError(f"{where}: mapping[{key!r}] is not an object")
        parent = node.get("parent")
        if parent is not None and not isinstance(parent, str):
            raise ImportFormatError(f"{where}: mapping[{key!r}].parent is not a node id")
        raw = node.get("message")
        if raw is not None and not isinstance(raw, dict):
            raise ImportFormatError(f"{where}: mapping[{key!r}].message is not an object")
        message = _message(raw, parent, created) if raw else None
        # Siblings in creation order: ChatGPT's children lists are, and the times say
        # so across the gap left by a skipped node.
        when = raw.get("create_time") if raw else None
        when = when if isinstance(when, int | float) and not isinstance(when, bool) else 1e18
        nodes.append(Node(key, parent, message, (when, position.get(key, 1 << 30), index)))
    current = conv.get("current_node")
    if current is not None and not isinstance(current, str):
        raise ImportFormatError(f"{where}: current_node is not a node id")
    messages, active = build_tree(nodes, current, where)
    model = conv.get("default_model_slug")
    metadata: dict[str, Any] = {"chatgpt": {"conversation_id": cid}}
    if isinstance(model, str) and model:
        metadata["chatgpt"]["model"] = model
    title = conv.get("title")
    return make_document(
        source=f"chatgpt:{cid}",
        name=title.strip() if isinstance(title, str) and title.strip() else "Untitled",
        created_at=created,
        updated_at=epoch_time(conv.get("update_time")) or created,
        messages=messages,
        active_leaf=active,
        metadata=metadata,
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _parts(content: dict[str, Any]) -> list[dict[str, Any]]:
    """chatui parts for one ChatGPT `content` (text kept, other parts noted as-is)."""
    kind = content.get("content_type", "text")
    kind = kind if isinstance(kind, str) else "unknown"  # a list there is no content type
    parts: list[dict[str, Any]] = []
    if kind in ("text", "multimodal_text"):
        listed = content.get("parts")
        for part in listed if isinstance(listed, list) else []:
            if isinstance(part, str):
                if part:
                    parts.append(text_part(part))
            elif isinstance(part, dict):
                pointer = part.get("asset_pointer")
                if isinstance(pointer, str):
                    # The image itself is not in conversations.json; keep where it was.
                    parts.append(
                        {
                            "type": "file",
                            "media_type": "image/*",
                            "url": pointer,
                            "filename": pointer.rsplit("/", 1)[-1],
                        }
                    )
                elif isinstance(part.get("text"), str) and part["text"]:
                    parts.append(text_part(part["text"]))
                else:
                    parts.append(
                        {"type": f"chatgpt-{part.get('content_type', 'part')}", "data": part}
                    )
    elif kind == "code":
        if _text(content.get("text")):
            fence = f"```{_text(content.get('language')).replace('unknown', '')}"
            parts.append(text_part(f"{fence}\n{content['text']}\n```"))
    elif kind == "thoughts":
        for thought in content.get("thoughts") or []:
            if isinstance(thought, dict) and _text(thought.get("content")):
                summary = _text(thought.get("summary"))
                body = f"{summary}\n{thought['content']}" if summary else thought["content"]
                parts.append({"type": "reasoning", "text": body})
    elif kind == "reasoning_recap":
        if _text(content.get("content")):
            parts.append({"type": "reasoning", "text": content["content"]})
    elif kind == "tether_quote":
        quote = _text(content.get("text"))
        if quote:
            source = " ".join(
                x for x in (_text(content.get("title")), _text(content.get("url"))) if x
            )
            parts.append(
                text_part(
                    "> " + quote.replace("\n", "\n> ") + (f"\n\n— {source}" if source else "")
                )
            )
    elif kind in ("execution_output", "system_error", "tether_browsing_display"):
        body = _text(content.get("text")) or _text(content.get("result"))
        if body:
            parts.append(text_part(body))
    elif kind not in HIDDEN_CONTENT:
        body = _text(content.get("text"))
        parts.append(text_part(body) if body else {"type": f"chatgpt-{kind}", "data": content})
    return parts


def _dict(value: Any) -> dict[str, Any]:
    """`value` when it is an object, else an empty one (exports hold nulls and lists)."""
    return value if isinstance(value, dict) else {}


def _message(
    raw: dict[str, Any], parent: str | None, fallback_time: str | None
) -> dict[str, Any] | None:
    """A chatui message dict, or None for a node the ChatGPT UI does not show."""
    meta = _dict(raw.get("metadata"))
    if meta.get("is_visually_hidden_from_conversation") or meta.get("is_user_system_message"):
        return None
    author = _dict(raw.get("author"))
    role = author.get("role") if isinstance(author.get("role"), str) else "unknown"
    content = _dict(raw.get("content"))
    parts = _parts(content)
    finish = meta.get("finish_details")
    finish_type = finish.get("type") if isinstance(finish, dict) else None
    # A reply that never finished (stopped, cut off, still running when exported)
    # keeps that state, even empty: it is a real branch, and dropping it would
    # fold its siblings together.
    unfinished = role == "assistant" and (
        raw.get("status") == "in_progress" or finish_type == "interrupted"
    )
    if not parts and not unfinished:
        return None
    extra: dict[str, Any] = {}
    if role not in ROLES:
        extra["role"] = role
        role = "assistant"
    if role == "system" and not any(p.get("type") == "text" for p in parts):
        return None
    name = author.get("name")
    recipient = raw.get("recipient")
    text = "\n".join(p["text"] for p in parts if p.get("type") == "text")
    if role == "assistant" and isinstance(recipient, str) and recipient not in ("all", ""):
        # The assistant addressing a tool (browser, python, …) is a tool call.
        raw_text = _text(content.get("text")) or text
        parts = [p for p in parts if p.get("type") == "reasoning"] + [
            {
                "type": "tool-call",
                "tool_call_id": raw.get("id") or "",
                "tool_name": recipient,
                "input": raw_text,
            }
        ]
    elif role == "tool":
        # Tool output answers the call made by the node above it.
        parts = [
            {
                "type": "tool-result",
                "tool_call_id": parent or "",
                "tool_name": name if isinstance(name, str) and name else "tool",
                "output": text,
            }
        ] + [p for p in parts if p.get("type") != "text"]
    if isinstance(meta.get("model_slug"), str):
        extra["model"] = meta["model_slug"]
    if isinstance(name, str) and name and role != "tool":
        extra["author_name"] = name
    message: dict[str, Any] = {
        "role": role,
        "parts": parts,
        "created_at": epoch_time(raw.get("create_time")) or fallback_time,
    }
    if unfinished:
        extra["status"] = raw.get("status")
        if finish_type:
            extra["finish"] = finish_type
    if extra:
        message["metadata"] = {"chatgpt": extra}
    if unfinished:
        # What the app leaves on a reply cut off mid-stream: shown "interrupted".
        message["metadata"]["incomplete"] = True
    return message
