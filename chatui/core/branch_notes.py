"""What we tried: a short note on a branch the user left for a sibling.

Design notes:
- A note is an overlay, like a compaction summary: it lives in the chat's
  metadata (`branch_notes`, keyed by the first message of the branch left
  behind), never in a message, so nothing is rewritten and export/import
  and fork carry it with the chat's row.
- The compaction model writes it (`summaries.summary_model`), from the
  branch's messages below the branch point.
- A branch with no reply under the branch point has nothing to say; a
  branch already noted up to the same leaf is not noted again.
- The config's `branch_notes` decides: "off" (default), "ask", "always".

No UI here: the main screen asks, then calls `write_note`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from store import Message, Session, SessionManager, clean, one_line

from .config import Config
from .summaries import make_summarizer, summary_model

__all__ = [
    "BranchNote",
    "LeftBranch",
    "left_branch",
    "notes_by_shown",
    "write_note",
    "stored_notes",
]

NOTE_PROMPT = (
    "Below is one branch of a conversation that the user has just left for another "
    "branch. In two or three plain sentences, say what was tried on it and how it turned "
    "out, so that someone choosing between branches knows what is there. No headings.\n\n"
)
NOTE_CHARS = 20_000
"""Most characters of the branch sent to the note writer (the newest are cut)."""


@dataclass(frozen=True)
class BranchNote:
    """A note on a branch: the sibling it starts at, where it forks, what it says."""

    left_id: str
    at: str | None
    """The branch point: the parent of `left_id` (None for a root)."""
    leaf_id: str
    """The leaf the branch had when noted."""
    summary: str
    model: str
    created_at: str


@dataclass(frozen=True)
class LeftBranch:
    """The part of the old path below the point where it and the new one part."""

    left_id: str
    at: str | None
    leaf_id: str
    messages: list[Message]


def stored_notes(metadata: dict[str, Any]) -> dict[str, BranchNote]:
    """The notes a chat's metadata holds, by the id of the branch's first message
    (entries that are not note-shaped are skipped)."""
    raw = metadata.get("branch_notes")
    notes: dict[str, BranchNote] = {}
    if not isinstance(raw, dict):
        return notes
    for left_id, data in raw.items():
        if not isinstance(data, dict) or not isinstance(data.get("summary"), str):
            continue
        notes[left_id] = BranchNote(
            left_id=left_id,
            at=data.get("at") if isinstance(data.get("at"), str) else None,
            leaf_id=str(data.get("leaf_id", "")),
            summary=data["summary"],
            model=str(data.get("model", "")),
            created_at=str(data.get("created_at", "")),
        )
    return notes


def left_branch(
    session: Session, old_leaf: str | None, new_leaf: str | None, notes: dict[str, BranchNote]
) -> LeftBranch | None:
    """What was left when the shown branch moved from `old_leaf` to `new_leaf`;
    None when there is nothing to note (no reply left behind, or noted already)."""
    if old_leaf is None or new_leaf is None or old_leaf == new_leaf:
        return None
    old = session.get_raw_history(old_leaf)
    new_ids = {m.id for m in session.get_raw_history(new_leaf)}
    below = [m for m in old if m.id not in new_ids]
    if not below or not any(m.role == "assistant" for m in below):
        return None  # moving down the same path, or a branch with no reply
    first = below[0]
    noted = notes.get(first.id)
    if noted is not None and noted.leaf_id == old_leaf:
        return None
    return LeftBranch(first.id, first.parent_id, old_leaf, below)


def _transcript(messages: list[Message]) -> str:
    lines = []
    for m in messages:
        text = m.text.strip()
        if m.tool_calls:
            calls = ", ".join(str(c.get("tool_name")) for c in m.tool_calls)
            text = f"{text}\n(called {calls})".strip()
        if text:
            lines.append(f"{m.role}: {text}")
    return "\n\n".join(lines)[:NOTE_CHARS]


async def write_note(
    manager: SessionManager, config: Config, session_id: str, chat_model: str, left: LeftBranch
) -> BranchNote:
    """Have the compaction model write the note and store it in the chat's metadata.

    Raises:
        LLMError: the model could not write it (nothing is stored).
    """
    model = summary_model(config, chat_model)
    summarize = make_summarizer(model, config.options_for(model), timeout=config.request_timeout)
    summary = one_line(clean(await summarize(NOTE_PROMPT + _transcript(left.messages))), 600)
    stamp = datetime.now(UTC).isoformat()
    note = BranchNote(left.left_id, left.at, left.leaf_id, summary, model, stamp)
    info = manager.get(session_id, include_deleted=True)
    current = dict(info.metadata.get("branch_notes") or {}) if info else {}
    current[note.left_id] = {
        "at": note.at,
        "leaf_id": note.leaf_id,
        "summary": note.summary,
        "model": note.model,
        "created_at": note.created_at,
    }
    manager.update_metadata(session_id, branch_notes=current)
    return note


def notes_by_shown(
    history: list[Message],
    positions: dict[str, tuple[int, int]],
    notes: dict[str, BranchNote],
) -> dict[str, list[tuple[str, str]]]:
    """For each shown message with siblings: (title, text) of its siblings' notes."""
    if not notes:
        return {}
    shown: dict[str, list[tuple[str, str]]] = {}
    by_point: dict[str | None, list[BranchNote]] = {}
    for note in notes.values():
        by_point.setdefault(note.at, []).append(note)
    for m in history:
        if m.id not in positions:
            continue
        for note in by_point.get(m.parent_id, []):
            if note.left_id != m.id:
                index, count = positions.get(note.left_id, (0, 0))
                which = f"‹{index}/{count}›" if index else "another branch"
                title = f"What we tried on {which} (note by {one_line(note.model, 24)})"
                shown.setdefault(m.id, []).append((title, note.summary))
    return shown
