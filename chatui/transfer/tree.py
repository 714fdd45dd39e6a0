"""One chat's tree seen from one branch: the path shown, and what forks off it.

The whole tree is read in one query and walked in memory, so a chat of any
size costs one round trip. "Active" follows the app (`chatui.core.chat_state`):
the session's `metadata["active_leaf"]` when it names a message, else the
latest leaf.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from store import Message, SessionInfo, Store, StoredCompaction, StoreSessionProvider

__all__ = ["Fork", "PathView", "outline_lines", "path_view"]


@dataclass(frozen=True)
class Fork:
    """A message on the path that has siblings: other branches start beside it."""

    position: int
    """1-based place of the message on the path."""
    message_id: str
    siblings: tuple[str, ...]
    """Every sibling id in order, this one included."""

    @property
    def index(self) -> int:
        return self.siblings.index(self.message_id) + 1

    @property
    def others(self) -> tuple[str, ...]:
        return tuple(s for s in self.siblings if s != self.message_id)


@dataclass
class PathView:
    info: SessionInfo
    leaf: str | None
    path: list[Message]
    forks: list[Fork]
    total: int
    """Messages in the chat, all branches."""
    below: tuple[str, ...] = ()
    """Children of the last shown message (when the path stops above a fork)."""
    compactions: list[StoredCompaction] = field(default_factory=list)
    tree: list[Message] = field(default_factory=list)
    children: dict[str | None, list[str]] = field(default_factory=dict)


def _newest_leaf_under(
    start: str, children: dict[str | None, list[str]], order: dict[str, int]
) -> str:
    leaves, stack = [], [start]
    while stack:
        node = stack.pop()
        kids = children.get(node, [])
        if kids:
            stack.extend(kids)
        else:
            leaves.append(node)
    return max(leaves, key=order.__getitem__)


def path_view(store: Store, info: SessionInfo, through: str | None = None) -> PathView:
    """The branch through message `through` (default: the active one) down to its newest leaf.

    Raises:
        KeyError: `through` is not a message of this chat.
    """
    provider = StoreSessionProvider(store, info.id)
    tree = provider.get_tree()
    by_id = {m.id: m for m in tree}
    order = {m.id: i for i, m in enumerate(tree)}
    children: dict[str | None, list[str]] = {}
    for m in tree:
        children.setdefault(m.parent_id, []).append(m.id)
    if through is not None and through not in by_id:
        raise KeyError(through)
    hint = info.metadata.get("active_leaf")
    if through is not None:
        leaf: str | None = _newest_leaf_under(through, children, order)
    elif isinstance(hint, str) and hint in by_id:
        leaf = hint  # what the app shows when it opens this chat
    else:
        leaves = [m.id for m in tree if not children.get(m.id)]
        leaf = leaves[-1] if leaves else None
    path: list[Message] = []
    node = leaf
    while node is not None:
        path.append(by_id[node])
        node = by_id[node].parent_id
    path.reverse()
    forks = [
        Fork(i, m.id, tuple(children[m.parent_id]))
        for i, m in enumerate(path, 1)
        if len(children[m.parent_id]) > 1
    ]
    return PathView(
        info=info,
        leaf=leaf,
        path=path,
        forks=forks,
        total=len(tree),
        below=tuple(children.get(leaf, [])) if leaf else (),
        compactions=provider.get_compactions(),
        tree=tree,
        children=children,
    )


def outline_lines(view: PathView) -> list[tuple[str, bool, Message]]:
    """(connector prefix, on the shown path, message) for every message, file-tree style.

    A chain keeps its prefix; at a fork each child gets `├─ ` (the last `└─ `) and
    the lines under it continue with `│  ` (under the last, spaces), so every
    branch can be followed to its fork by eye. No recursion, however deep.
    """
    by_id = {m.id: m for m in view.tree}
    on_path = {m.id for m in view.path}
    rows: list[tuple[str, bool, Message]] = []
    roots = view.children.get(None, [])
    # (message, prefix of its own line, prefix of the lines below it)
    stack: list[tuple[str, str, str]] = []
    if len(roots) == 1:
        stack.append((roots[0], "", ""))
    else:
        for i, root in reversed(list(enumerate(roots))):
            last = i == len(roots) - 1
            stack.append((root, "└─ " if last else "├─ ", "   " if last else "│  "))
    while stack:
        node, head, rest = stack.pop()
        rows.append((head, node in on_path, by_id[node]))
        kids = view.children.get(node, [])
        if len(kids) == 1:
            stack.append((kids[0], rest, rest))
            continue
        for i, kid in reversed(list(enumerate(kids))):
            last = i == len(kids) - 1
            stack.append(
                (kid, rest + ("└─ " if last else "├─ "), rest + ("   " if last else "│  "))
            )
    return rows
