"""The open chat: which branch is active, and everything the panes draw from it.

No UI here. The active leaf is kept in the session's metadata
(`active_leaf`), so a restart — or another process — reopens the branch the
user was on. Switching branches never changes a message.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from store import (
    Message,
    Session,
    SessionInfo,
    SessionManager,
    UnknownMessageError,
    apply_compactions,
)

from .branch_notes import notes_by_shown, stored_notes

__all__ = ["ChatSnapshot", "ChatState"]


@dataclass
class ChatSnapshot:
    """One consistent reading of a chat, enough to draw every pane."""

    info: SessionInfo
    tree: list[Message]
    """Every message of every branch, in append order."""
    active_leaf: str | None
    history: list[Message]
    """Root → active leaf, with compaction summaries in place of what they cover."""
    positions: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Message id → (1-based index among its siblings, sibling count)."""
    covered: dict[str, list[Message]] = field(default_factory=dict)
    """Summary message id → the original messages it stands for."""

    @property
    def compactions(self) -> int:
        return sum(1 for m in self.history if m.is_compaction)

    @property
    def notes(self) -> dict[str, list[tuple[str, str]]]:
        """Shown message id → (title, text) of the notes on its siblings' branches."""
        return notes_by_shown(self.history, self.positions, stored_notes(self.info.metadata))

    def grow(self, message: Message) -> bool:
        """Take in a message stored since this reading (a reply job's), with no read:
        a newer version of a message replaces it; a message that answers the shown leaf
        extends the path shown (and the tree, when new). False when it does not follow
        the shown path (a sibling branch: read the chat again)."""
        known = next((i for i, m in enumerate(self.tree) if m.id == message.id), None)
        if known is not None:
            self.tree[known] = message
            if any(m.id == message.id for m in self.history):
                self.history = [message if m.id == message.id else m for m in self.history]
                return True
        if message.parent_id != self.active_leaf:
            return False
        if known is None:
            self.tree.append(message)
        self.history.append(message)
        self.active_leaf = message.id
        return True


class ChatState:
    """One chat of a `SessionManager` and the branch the user is looking at."""

    def __init__(self, manager: SessionManager, session_id: str) -> None:
        self.manager = manager
        self.session_id = session_id
        self.session: Session = manager.get_session(session_id)
        self._active: str | None = None

    @property
    def info(self) -> SessionInfo:
        info = self.manager.get(self.session_id, include_deleted=True)
        if info is None:
            raise UnknownMessageError(f"chat {self.session_id!r} no longer exists")
        return info

    # -- the active branch --------------------------------------------------------

    def _leaf_of(self, tree: list[Message], wanted: str | None) -> str | None:
        parents = {m.parent_id for m in tree}
        ids = {m.id for m in tree}
        if wanted in ids:
            return wanted
        leaves = [m.id for m in tree if m.id not in parents]
        return leaves[-1] if leaves else None

    @property
    def active_leaf(self) -> str | None:
        """The leaf of the branch shown (from metadata; the latest leaf by default)."""
        if self._active is None:
            wanted = self.info.metadata.get("active_leaf")
            if isinstance(wanted, str) and self.session.get_message(wanted) is not None:
                self._active = wanted
            else:
                latest = self.session.get_latest_leaf()
                self._active = latest.id if latest else None
        return self._active

    def set_active(self, leaf_id: str | None) -> None:
        """Make `leaf_id` the active leaf and remember it (metadata, one small write)."""
        if leaf_id == self._active:
            return
        self._active = leaf_id
        self.manager.update_metadata(self.session_id, active_leaf=leaf_id)

    def adopt(self, leaf_id: str) -> None:
        """Take `leaf_id` as the active leaf that someone else has stored (a reply job)."""
        self._active = leaf_id

    def follow_growth(self) -> None:
        """Someone else wrote to the chat: a shown branch that grew shows its new end.

        The leaf is not written back (the writer stored its own `active_leaf`).
        """
        if self._active is not None:
            self._active = self.session.latest_leaf_under(self._active)

    def select(self, message_id: str) -> str:
        """Show the branch through `message_id`; returns the new active leaf.

        A message already on the shown path keeps the current leaf (the user is
        looking at it, not asking for another branch).
        """
        leaf = self.active_leaf
        if leaf is not None:
            on_path = {m.id for m in self.session.get_raw_history(leaf)}
            if message_id in on_path:
                return leaf
        new_leaf = self.session.latest_leaf_under(message_id)
        self.set_active(new_leaf)
        return new_leaf

    def sibling(self, message_id: str, step: int) -> str | None:
        """The sibling `step` places away (no wrap-around), or None at either end."""
        message = self.session.get_message(message_id)
        if message is None:
            raise UnknownMessageError(f"no message {message_id!r}")
        siblings = (
            self.session.get_branches(message.parent_id)
            if message.parent_id
            else [m for m in self.session.get_tree() if m.parent_id is None]
        )
        ids = [m.id for m in siblings]
        index = ids.index(message_id) + step
        if not 0 <= index < len(ids):
            return None
        return ids[index]

    def switch_sibling(self, message_id: str, step: int) -> str | None:
        """Move to the previous/next sibling's branch; returns that sibling's id or None."""
        target = self.sibling(message_id, step)
        if target is None:
            return None
        self.set_active(self.session.latest_leaf_under(target))
        return target

    # -- reading ------------------------------------------------------------------

    def snapshot(self) -> ChatSnapshot:
        """Everything the panes show, from one read of the tree (plus compactions)."""
        info = self.info  # the one read of the session row a redraw makes
        tree = self.session.get_tree()
        wanted = self._active if self._active is not None else info.metadata.get("active_leaf")
        leaf = self._leaf_of(tree, wanted if isinstance(wanted, str) else None)
        self._active = leaf
        by_id = {m.id: m for m in tree}
        raw: list[Message] = []
        node = leaf
        while node is not None and node in by_id:
            raw.append(by_id[node])
            node = by_id[node].parent_id
        raw.reverse()
        compactions = self.session.get_compactions() if raw else []
        history = apply_compactions(raw, compactions) if compactions else raw
        children: dict[str | None, list[str]] = defaultdict(list)
        for m in tree:
            children[m.parent_id].append(m.id)
        positions = {}
        for kids in children.values():
            if len(kids) > 1:
                for i, kid in enumerate(kids, 1):
                    positions[kid] = (i, len(kids))
        covered: dict[str, list[Message]] = {}
        if compactions:
            index = {m.id: i for i, m in enumerate(raw)}
            for m in history:
                if m.is_compaction:
                    meta = m.metadata.get("compaction", {})
                    start = index.get(meta.get("from_message_id"))
                    end = index.get(meta.get("to_message_id"))
                    if start is not None and end is not None:
                        covered[m.id] = raw[start : end + 1]
        return ChatSnapshot(info, tree, leaf, history, positions, covered)
