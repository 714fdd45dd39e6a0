"""Stored messages → the OpenAI chat format LiteLLM takes.

Invariant: every `tool_calls` entry sent has exactly one `tool` message
answering it, right after its assistant message, and every `tool` message
answers a call sent before it. Providers reject anything else, and a
cancelled or failed tool round leaves such orphans in the tree, so they are
dropped here rather than sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from store import Message, StoreError, as_text

__all__ = ["SUMMARY_LABEL", "ContentLoader", "attachment_content", "to_openai_messages"]

SUMMARY_LABEL = "[Summary of the earlier conversation]"

ContentLoader = Callable[[dict[str, Any]], bytes]
"""An attachment part → its content (`store.Attachments.content`)."""


def attachment_content(part: dict[str, Any], load: ContentLoader | None) -> list[dict[str, Any]]:
    """An attachment as OpenAI content parts: an image as an `image_url` data URL, a
    text file as a text part headed by its name; anything else (or content the store
    no longer has) as a line saying what was not sent, so the model knows."""
    from store import attachment_kind, data_url  # loaded with the first attachment

    name, mime = str(part.get("name") or "attachment"), str(part.get("mime") or "")
    kind = attachment_kind(mime)
    if kind == "other" or load is None:
        return [{"type": "text", "text": f"[Attached file {name} ({mime}): not sent]"}]
    try:
        data = load(part)
    except StoreError:
        return [{"type": "text", "text": f"[Attached file {name}: its content is missing]"}]
    if kind == "image":
        return [{"type": "image_url", "image_url": {"url": data_url(mime, data)}}]
    text = data.decode("utf-8", errors="replace")
    return [{"type": "text", "text": f"[Attached file {name}]\n{text}"}]


def _arguments(value: Any) -> str:
    """Tool-call input as the JSON string OpenAI expects."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value if value is not None else {}, ensure_ascii=False)
    except (TypeError, ValueError):
        return json.dumps(str(value))


def to_openai_messages(
    system_prompt: str, history: list[Message], load: ContentLoader | None = None
) -> list[dict[str, Any]]:
    """The messages for one model call: the system prompt, then the history.

    Text parts become `content`; a user message with attachments gets a list of
    content parts instead (its text, then each attachment: `attachment_content`,
    reading the bytes with `load`); assistant tool-call parts become `tool_calls`;
    a `tool` message becomes one OpenAI `tool` message per result; a
    compaction overlay is sent as assistant text labelled as a summary;
    reasoning parts are not sent; partial replies are sent as the text they
    have. Tool calls without results (and results without calls) are dropped.
    """
    out: list[dict[str, Any]] = []
    if system_prompt:
        out.append({"role": "system", "content": system_prompt})
    answered = _answered_calls(history)
    pending: set[str] = set()  # calls sent and not yet answered, of the last assistant message
    for index, message in enumerate(history):
        if message.role == "tool" and not message.is_compaction:
            for part in message.tool_results:
                call_id = str(part.get("tool_call_id") or "")
                if call_id in pending:
                    out.append(
                        {
                            "role": "tool",
                            "tool_call_id": call_id,
                            "content": as_text(part.get("output"), indent=None),
                        }
                    )
                    pending.discard(call_id)
            continue
        pending = set()
        if message.is_compaction:
            out.append({"role": "assistant", "content": f"{SUMMARY_LABEL}\n\n{message.text}"})
            continue
        text = message.text
        if message.role == "assistant":
            # Always a string: llama.cpp's chat templates (chatml-function-calling) fail on
            # a tool-call message without `content`, and LiteLLM drops a None.
            entry: dict[str, Any] = {"role": "assistant", "content": text or ""}
            calls = [
                p
                for p in message.tool_calls
                if str(p.get("tool_call_id") or "") in answered.get(index, set())
            ]
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": str(p["tool_call_id"]),
                        "type": "function",
                        "function": {
                            "name": str(p.get("tool_name") or ""),
                            "arguments": _arguments(p.get("input")),
                        },
                    }
                    for p in calls
                ]
                pending = {c["id"] for c in entry["tool_calls"]}
            if not entry["content"] and "tool_calls" not in entry:
                continue  # an empty reply (failed before any text) says nothing
            out.append(entry)
        elif message.role == "user" and message.attachments:
            content = [{"type": "text", "text": text}] if text else []
            for part in message.attachments:
                content.extend(attachment_content(part, load))
            out.append({"role": "user", "content": content})
        elif message.role in ("user", "system"):
            if text or message.role == "user":
                out.append({"role": message.role, "content": text})
    return out


def _answered_calls(history: list[Message]) -> dict[int, set[str]]:
    """For each assistant message (by index), the call ids a following tool message answers.

    Only the tool message(s) directly after the assistant message count, as
    OpenAI requires the results to follow their calls at once.
    """
    answered: dict[int, set[str]] = {}
    for index, message in enumerate(history):
        if message.role != "assistant" or message.is_compaction or not message.tool_calls:
            continue
        ids = {str(p.get("tool_call_id") or "") for p in message.tool_calls}
        results: set[str] = set()
        follow = index + 1
        while (
            follow < len(history)
            and history[follow].role == "tool"
            and not history[follow].is_compaction
        ):
            results |= {str(p.get("tool_call_id") or "") for p in history[follow].tool_results}
            follow += 1
        answered[index] = ids & results
    return answered
