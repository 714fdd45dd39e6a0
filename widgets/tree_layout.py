"""The rows of a message tree, laid out like `git log --graph`: lanes, forks, folds.

Pure data, no Textual: `lay_out` turns a chat's messages into display rows
that `MessageTree` draws one line each (only the lines on screen).

Shape: the active path runs down lane 0 as one line of descent. Where a
message has other children (a regenerated reply, an edited question), each
alternative forks off to the right (`├─`) right under it, its whole branch
drawn in the new lane, and the active path continues below. Nothing is
folded at a branch point: every sibling shows at once. What folds is a long
linear run — messages with one child and nothing to mark — drawn as one
"… N messages" row until it is unfolded; runs are keyed by their first
message id, so a fold stays put across redraws, branch switches and restarts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from store import Message, ReplyState, reply_state

__all__ = [
    "FOLD_MIN",
    "TreeEntry",
    "TreeLayout",
    "TreeRow",
    "lay_out",
    "status_label",
    "status_of",
]

FOLD_MIN = 5
"""Shortest linear run that folds (shorter ones are cheaper to show than to hide)."""
KEEP_NEAR_LEAF = 3
"""Messages just above the active leaf that never fold: where the user is reading."""


def status_of(message: Message, *, live: bool = False) -> ReplyState | None:
    """The state of a reply that did not finish (writing, cancelled, error,
    interrupted) in the shared vocabulary (`store.reply_state`); None for a complete
    reply or a message that is not a reply. `live`: this process is writing it now."""
    state = reply_state(message, live=live)
    return None if state == "complete" else state


def status_label(message: Message, *, live: bool = False) -> str | None:
    """The word the tree shows for a reply's state (the state's own name)."""
    return status_of(message, live=live)


@dataclass
class TreeEntry:
    """What one message's row stands for."""

    message_id: str
    role: str
    on_path: bool
    """On the active path (root → active leaf)."""
    alternate: bool
    """The head of a branch that is not on the active path."""
    position: tuple[int, int]
    """(1-based index among siblings, number of siblings)."""
    status: str | None = None
    """writing, cancelled, error or interrupted; None for a finished message."""
    hop: str | None = None
    """A cross-session marker ("asked researcher"), if any."""
    model: str | None = None
    """The reply's model when it differs from the chat's."""

    @property
    def incomplete(self) -> bool:
        return self.status in ("writing", "interrupted")


@dataclass(frozen=True)
class TreeRow:
    """One line of the tree: a message, or a folded run of messages."""

    kind: Literal["message", "fold"]
    message_id: str
    """The message; for a fold, the first message of the run (the fold's key)."""
    lanes: str
    """The connector cells drawn before the row's glyph ("│ ├─" …)."""
    on_path: bool
    run: str | None = None
    """The key of the unfolded run this message belongs to (space folds it again)."""
    hidden: tuple[str, ...] = ()
    """A fold's messages, in order."""


@dataclass
class TreeLayout:
    """Every row of one chat's tree, and where each message is."""

    rows: list[TreeRow] = field(default_factory=list)
    entries: dict[str, TreeEntry] = field(default_factory=dict)
    row_of: dict[str, int] = field(default_factory=dict)
    """Message id → its row (a folded message → its fold's row)."""
    parent: dict[str, str | None] = field(default_factory=dict)
    children: dict[str | None, list[str]] = field(default_factory=dict)
    runs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Run key → the messages of every foldable run (folded or not)."""
    active_leaf: str | None = None


# A work item: ("row", id, lanes, run key) draws a message, ("fold", key, lanes, "")
# a folded run, ("chain", first id, head lanes, lanes) a branch from that message down.
_Work = tuple[str, str, str, str]


def lay_out(
    messages: Sequence[Message],
    active_leaf: str | None,
    *,
    hops: Mapping[str, str] | None = None,
    unfolded: Collection[str] = (),
    pinned: Collection[str] = (),
    chat_model: str | None = None,
    live: Collection[str] = (),
) -> TreeLayout:
    """Lay a chat's messages (any order, parents known) out as rows.

    Args:
        messages: every message of every branch.
        active_leaf: the leaf of the branch on screen (None: the newest branch shows).
        hops: message id → peer marker ("asked researcher").
        unfolded: run keys the user opened.
        pinned: messages that must stay visible (a search hit).
        chat_model: the chat's model; replies by another model name theirs.
        live: replies being written now (the others still marked streaming were cut off).

    No recursion: a 10,000-message chain or a 1,000-way fork lays out the same.
    """
    hops = hops or {}
    by_id = {m.id: m for m in messages}
    children: dict[str | None, list[str]] = defaultdict(list)
    parent: dict[str, str | None] = {}
    for m in messages:
        p = m.parent_id if m.parent_id in by_id else None
        parent[m.id] = p
        children[p].append(m.id)
    path: set[str] = set()
    leaf = active_leaf if active_leaf in by_id else None
    node = leaf
    while node is not None:
        path.add(node)
        node = parent[node]
    near_leaf: set[str] = set()
    node = leaf
    for _ in range(KEEP_NEAR_LEAF + 1):
        if node is None:
            break
        near_leaf.add(node)
        node = parent[node]

    layout = TreeLayout(parent=parent, children=dict(children), active_leaf=leaf)

    def continuation(kids: list[str]) -> str | None:
        on_path = [k for k in kids if k in path]
        return on_path[0] if on_path else (kids[-1] if kids else None)

    def entry(mid: str, siblings: list[str], alternate: bool) -> TreeEntry:
        m = by_id[mid]
        model = m.metadata.get("model") if m.role == "assistant" else None
        return TreeEntry(
            mid,
            m.role,
            mid in path,
            alternate,
            (siblings.index(mid) + 1, len(siblings)),
            status_label(m, live=mid in live),
            hops.get(mid),
            model if isinstance(model, str) and model and model != chat_model else None,
        )

    def marked(mid: str) -> bool:
        """A message worth its own row whatever the folding."""
        return (
            len(children.get(mid, ())) > 1
            or len(siblings_of.get(mid, ())) > 1
            or mid in near_leaf
            or mid in hops
            or mid in pinned
            or status_label(by_id[mid], live=mid in live) is not None
        )

    rows = layout.rows
    stack: list[_Work] = []
    roots = children.get(None, [])
    first = continuation(roots)
    if first is not None:
        stack.append(("chain", first, "", ""))
    stack.extend(("chain", r, "├─", "│ ") for r in reversed(roots) if r != first)
    siblings_of: dict[str, list[str]] = {r: roots for r in roots}

    while stack:
        kind, mid, head, lanes = stack.pop()
        if kind == "row":
            # For a row, the last field is the key of the unfolded run it is in.
            layout.row_of[mid] = len(rows)
            rows.append(TreeRow("message", mid, head, mid in path, lanes or None))
            continue
        if kind == "fold":
            hidden = layout.runs[mid]
            for h in hidden:
                layout.row_of[h] = len(rows)
            rows.append(TreeRow("fold", mid, head, mid in path, hidden=hidden))
            continue
        # A chain: follow the continuation down, then push its rows (and the forks
        # under each message) in reverse so they pop in reading order.
        chain: list[str] = []
        current: str | None = mid
        while current is not None:
            chain.append(current)
            kids = children.get(current, [])
            nxt = continuation(kids)
            for kid in kids:
                siblings_of[kid] = kids
            current = nxt
        for i, cid in enumerate(chain):
            alternate = i == 0 and head != ""
            layout.entries[cid] = entry(cid, siblings_of[cid], alternate)
        items: list[_Work] = []
        i = 0
        while i < len(chain):
            cid = chain[i]
            row_lanes = head if i == 0 else lanes
            if 0 < i < len(chain) - 1 and not marked(cid):
                j = i
                while j < len(chain) - 1 and not marked(chain[j]):
                    j += 1
                run = tuple(chain[i:j])
                if len(run) >= FOLD_MIN:
                    layout.runs[run[0]] = run
                    if run[0] in unfolded:
                        for rid in run:
                            items.append(("row", rid, lanes, run[0]))
                    else:
                        items.append(("fold", run[0], lanes, ""))
                    i = j
                    continue
            items.append(("row", cid, row_lanes, ""))
            kids = children.get(cid, [])
            nxt = chain[i + 1] if i + 1 < len(chain) else None
            for alt in kids:
                if alt != nxt:
                    items.append(("chain", alt, lanes + "├─", lanes + "│ "))
            i += 1
        stack.extend(reversed(items))
    return layout
