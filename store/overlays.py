"""Compaction overlays applied to a path at read time.

Invariants: inputs are never mutated; an overlay applies only when both of
its ends lie on the path in order (so overlays on one branch never hide
messages of another); a newer overlay that overlaps an older one wins.
"""

from __future__ import annotations

from .messages import COMPACTION_PREFIX, Message, StoredCompaction, text_part

__all__ = ["apply_compactions", "summary_message"]


def summary_message(compaction: StoredCompaction, parent_id: str | None, covered: int) -> Message:
    """The synthetic assistant message that stands for a compacted range."""
    return Message(
        id=COMPACTION_PREFIX + compaction.id,
        role="assistant",
        parts=[text_part(compaction.summary)],
        created_at=compaction.created_at,
        metadata={
            "compaction": {
                "id": compaction.id,
                "from_message_id": compaction.from_message_id,
                "to_message_id": compaction.to_message_id,
                "covered": covered,
            }
        },
        parent_id=parent_id,
    )


def _ranges(
    path: list[Message], compactions: list[StoredCompaction]
) -> list[tuple[int, int, StoredCompaction]]:
    index = {m.id: i for i, m in enumerate(path)}
    chosen: list[tuple[int, int, StoredCompaction]] = []
    for c in sorted(compactions, key=lambda c: c.created_at, reverse=True):
        start, end = index.get(c.from_message_id), index.get(c.to_message_id)
        if start is None or end is None or end < start:
            continue
        if any(start <= e and s <= end for s, e, _ in chosen):
            continue  # an older overlay under a newer one
        chosen.append((start, end, c))
    return sorted(chosen, key=lambda r: r[0])


def apply_compactions(path: list[Message], compactions: list[StoredCompaction]) -> list[Message]:
    """`path` with each applicable overlay's range replaced by its summary message."""
    result: list[Message] = []
    cursor = 0
    for start, end, c in _ranges(path, compactions):
        result.extend(path[cursor:start])
        result.append(summary_message(c, path[start].parent_id, end - start + 1))
        cursor = end + 1
    result.extend(path[cursor:])
    return result
