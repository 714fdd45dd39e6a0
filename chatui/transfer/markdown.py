"""Markdown of one branch of a chat, saying what else the tree holds.

Markdown shows one path (a reader follows one conversation), so the header
counts the branches not shown and where they fork: nothing is dropped
silently. JSON is the lossless format. Control characters are neutralised:
a Markdown file is as likely to be `cat`-ed as opened in an editor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any

from store import Message, format_size, reply_state, reply_state_label

from .text import neutralise, one_line
from .tree import PathView

__all__ = ["fenced", "render_markdown", "state_note", "when"]

ROLE_NAMES = {"user": "User", "assistant": "Assistant", "tool": "Tool", "system": "System"}


def when(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if value else "—"


def _short(value: Any, width: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return one_line(text, width)


# Tools whose input is code in that language (ChatGPT's code interpreter is "python").
_LANGUAGES = {"python": "python", "bash": "bash", "shell": "bash", "sql": "sql"}


def fenced(value: Any, language: str = "") -> str:
    """`value` whole in a fenced block: text as it is, anything else as indented JSON.

    The fence is longer than any backtick run inside, so code holding ``` stays
    one block; nothing is cut (JSON is the format for scripts, but a reader
    of the Markdown should still see the code that ran).
    """
    if isinstance(value, str):
        body = value
    else:
        body, language = json.dumps(value, ensure_ascii=False, indent=2), "json"
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{body.rstrip(chr(10))}\n{fence}"


def state_note(message: Message, live: Collection[str] = ()) -> tuple[str, str] | None:
    """(state word, its words in full) of a reply that is not simply complete, in the
    vocabulary of the chat pane and the tree (`store.reply_state`); None otherwise.

    `live`: ids of replies being written now by this process. A reader of the
    file must see a cancelled, failed or cut-off reply for what it is, not as
    an answer the model finished.
    """
    state = reply_state(message, live=message.id in live)
    if state is None or state == "complete":
        return None
    return state, reply_state_label(message, state)


def _body(message: Message) -> str:
    chunks = []
    for part in message.parts:
        kind = part.get("type")
        if kind == "text":
            chunks.append(str(part.get("text", "")))
        elif kind == "reasoning":
            chunks.append(
                f"<details><summary>Reasoning</summary>\n\n{part.get('text', '')}\n\n</details>"
            )
        elif kind == "tool-call":
            name = str(part.get("tool_name") or "")
            chunks.append(
                f"**Tool call** `{_short(name, 60)}`\n\n"
                + fenced(part.get("input"), _LANGUAGES.get(name.lower(), ""))
            )
        elif kind == "tool-result":
            label = "Tool error" if part.get("is_error") else "Tool result"
            chunks.append(
                f"**{label}** `{_short(part.get('tool_name'), 60)}`\n\n"
                + fenced(part.get("output"), "text")
            )
        elif kind == "attachment":  # named, never inlined: the content is in the store
            chunks.append(
                f"*[attachment: {_short(part.get('name'), 80)} · {_short(part.get('mime'), 40)}"
                f" · {format_size(int(part.get('size') or 0))}]*"
            )
        elif kind == "file":
            chunks.append(f"*[file: {_short(part.get('filename') or part.get('media_type'))}]*")
        else:
            chunks.append(f"*[{_short(kind, 40)} part]*")
    return "\n\n".join(chunks) if chunks else "*(empty)*"


APP_SOURCE = "chatui"
"""The `source` of chats made in the app (`Workspace.create_chat`): nothing was imported."""


def render_markdown(
    view: PathView,
    *,
    show_ids: bool = False,
    through: str | None = None,
    live: Collection[str] = (),
) -> str:
    """The path of `view` as Markdown; `show_ids` adds message ids (for `chatui show`);
    `live`: ids of replies this process is writing now (shown "writing…")."""
    info = view.info
    lines = [
        f"# {one_line(info.name) or 'Untitled'}",
        "",
        f"- **Chat:** `{info.id}`",
        f"- **Created:** {when(info.created_at)} · **Updated:** {when(info.updated_at)}",
    ]
    if info.model:
        lines.append(f"- **Model:** {one_line(info.model)}")
    if info.source and info.source != APP_SOURCE:
        lines.append(f"- **Imported from:** {one_line(info.source)}")
    if info.deleted_at:
        lines.append(f"- **Deleted:** {when(info.deleted_at)} (restorable in the app)")
    which = f"the branch through `{through}`" if through else "the active branch"
    lines.append(f"- **Messages:** {len(view.path)} shown of {view.total} ({which})")
    leaves = sum(1 for m in view.tree if not view.children.get(m.id))
    hidden = leaves - (0 if view.below else 1)
    if hidden > 0:
        at = "; ".join(
            f"message {f.position} (‹{f.index}/{len(f.siblings)}›: {len(f.others)} "
            f"other{'s' if len(f.others) > 1 else ''})"
            for f in view.forks
        )
        lines.append(
            f"- **Other branches:** {hidden} not shown"
            + (f", forking at {at}" if at else "")
            + ". Export as JSON to keep every branch."
        )
    if view.below:
        lines.append(
            f"- **Continues below:** the last message shown has {len(view.below)} "
            "replies (branches)"
        )
    if view.compactions:
        lines.append(
            f"- **Compactions:** {len(view.compactions)} summar"
            f"{'ies' if len(view.compactions) > 1 else 'y'}; every original message "
            "is still shown below"
        )
    lines += ["", "---", ""]
    forks = {f.position: f for f in view.forks}
    for i, message in enumerate(view.path, 1):
        fork = forks.get(i)
        head = f"## {i} · {ROLE_NAMES.get(message.role, message.role)}"
        if fork:
            head += f" ‹{fork.index}/{len(fork.siblings)}›"
        note = state_note(message, live)
        if note:
            head += f" · {note[0]}"
        head += f" · {when(message.created_at)}"
        if show_ids:
            head += f" · `{message.id}`"
        lines += [head, ""]
        if note:
            lines += [f"> *{note[1]}*", ""]
        if fork and show_ids:
            lines += ["*Other branches here: " + ", ".join(f"`{o}`" for o in fork.others) + "*", ""]
        lines += [_body(message), ""]
    if view.compactions:
        lines += ["---", "", "## Compaction summaries", ""]
        for c in view.compactions:
            lines += [
                f"<details><summary>{when(c.created_at)}: messages `{c.from_message_id}`"
                f" … `{c.to_message_id}`</summary>",
                "",
                c.summary,
                "",
                "</details>",
                "",
            ]
    return neutralise("\n".join(lines)).rstrip() + "\n"
