"""`MessageTree`: a chat's whole message tree, with the active path marked.

Layout: the active path reads top to bottom as one flat list (a chain of
single replies does not indent). Where a message has other children — a
regenerated reply, an edited question — those alternatives hang under it as
collapsed nodes marked ⎇, each continuing its own branch inside. Nothing a
regenerate or edit left behind is out of sight: it is one keypress away.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.message import Message as TextualMessage
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from store import Message, reply_state, reply_state_label

from .sanitize import one_line

__all__ = ["MessageTree", "TreeEntry", "preview"]

ROLE_TAGS = {"user": "you", "assistant": "ai", "tool": "tool", "system": "sys"}


def preview(message: Message, width: int = 60) -> str:
    """A one-line summary of a message for lists and trees."""
    text = message.text[: width * 8]  # enough to fill the line after whitespace collapses
    if not text.strip():
        calls = [p.get("tool_name", "?") for p in message.tool_calls]
        results = message.tool_results
        if calls:
            text = "called " + ", ".join(str(c) for c in calls)
        elif results:
            text = "; ".join(f"{r.get('tool_name', '?')} → {r.get('output', '')}" for r in results)
        elif (state := reply_state(message)) in ("error", "cancelled"):
            text = f"({reply_state_label(message, state)})"  # failed with no text: say so
        elif message.metadata.get("incomplete"):
            text = "(no text yet)"
        else:
            text = "(empty)"
    return one_line(text, width)


@dataclass
class TreeEntry:
    """What a tree node stands for."""

    message_id: str
    role: str
    on_path: bool
    """On the active path (root → active leaf)."""
    alternate: bool
    """The head of a branch that is not on the active path."""
    position: tuple[int, int]
    """(1-based index among siblings, number of siblings)."""
    incomplete: bool = False
    hop: str | None = None
    """A cross-session marker ("from agent B", "to agent B"), if any."""


_Work = tuple[str, TreeNode[TreeEntry], str, list[str]]


class _Layout:
    """The shape of one chat's tree: children, the active path, and how to label nodes."""

    def __init__(
        self, messages: Sequence[Message], active_leaf: str | None, hops: dict[str, str]
    ) -> None:
        self.by_id = {m.id: m for m in messages}
        self.hops = hops
        self.children: dict[str | None, list[str]] = defaultdict(list)
        for m in messages:
            parent = m.parent_id if m.parent_id in self.by_id else None
            self.children[parent].append(m.id)
        self.path: set[str] = set()
        node = active_leaf if active_leaf in self.by_id else None
        self.active_leaf = node
        while node is not None:
            self.path.add(node)
            parent = self.by_id[node].parent_id
            node = parent if parent in self.by_id else None

    def continuation(self, kids: list[str]) -> str | None:
        """The child a branch continues with: the one on the active path, else the newest."""
        on_path = [k for k in kids if k in self.path]
        return on_path[0] if on_path else (kids[-1] if kids else None)

    def top_chain(self) -> list[tuple[str, list[str]]]:
        """(message, its siblings) from the first root along the continuation."""
        chain = []
        siblings = self.children[None]
        current = self.continuation(siblings)
        while current is not None:
            chain.append((current, siblings))
            siblings = self.children[current]
            current = self.continuation(siblings)
        return chain

    def entry(self, mid: str, siblings: list[str], alternate: bool) -> TreeEntry:
        m = self.by_id[mid]
        return TreeEntry(
            mid,
            m.role,
            mid in self.path,
            alternate,
            (siblings.index(mid) + 1, len(siblings)),
            bool(m.metadata.get("incomplete")),
            self.hops.get(mid),
        )


class MessageTree(Tree[TreeEntry]):
    """The message tree of one chat; select a node to make its branch active."""

    DEFAULT_CSS = """
    MessageTree {
        width: 36;
        overflow-x: hidden;
        border-right: vkey $foreground 10%;
        background: $surface;
        padding: 0 0 0 1;
    }
    MessageTree > .message-tree--user { color: $accent; text-style: bold; }
    MessageTree > .message-tree--assistant { color: $primary; text-style: bold; }
    MessageTree > .message-tree--tool { color: $text-muted; }
    MessageTree > .message-tree--system { color: $text-muted; }
    MessageTree > .message-tree--off-path { color: $text-muted; }
    MessageTree > .message-tree--branch { color: $warning; text-style: bold; }
    MessageTree > .message-tree--leaf { text-style: bold underline; }
    MessageTree > .message-tree--hop { color: $secondary; text-style: italic; }
    """

    COMPONENT_CLASSES = {
        "message-tree--user",
        "message-tree--assistant",
        "message-tree--tool",
        "message-tree--system",
        "message-tree--off-path",
        "message-tree--branch",
        "message-tree--leaf",
        "message-tree--hop",
    }

    BINDINGS = [
        Binding("r", "message('regenerate')", "Regenerate", id="tree.regenerate"),
        Binding("e", "message('edit')", "Edit", id="tree.edit"),
        Binding("f", "message('fork')", "Fork", id="tree.fork"),
        Binding("c", "message('copy')", "Copy", id="tree.copy"),
        Binding("g", "message('goto')", "Go to peer chat", id="tree.goto", show=False),
        Binding("left", "message('previous')", "Prev branch", id="tree.previous", show=False),
        Binding("right", "message('next')", "Next branch", id="tree.next", show=False),
    ]

    class BranchSelected(TextualMessage):
        """The user chose a message: show the branch through it."""

        def __init__(self, message_id: str) -> None:
            super().__init__()
            self.message_id = message_id

    class ActionRequested(TextualMessage):
        """A key asked for an action on a message (regenerate, edit, fork, copy,
        previous, next)."""

        def __init__(self, message_id: str, action: str) -> None:
            super().__init__()
            self.message_id = message_id
            self.action = action

    def __init__(
        self,
        *,
        window: int = 300,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__("chat", name=name, id=id, classes=classes)
        self.show_root = False
        self.guide_depth = 2
        self.active_leaf: str | None = None
        self.window = window
        """Most messages of the active branch built at once (earlier ones on demand)."""
        self._message_nodes: dict[str, TreeNode[TreeEntry]] = {}
        self._deferred: dict[int, list[tuple[str, list[str]]]] = {}
        self._layout = _Layout([], None, {})

    # -- building -------------------------------------------------------------

    def show(
        self,
        messages: Sequence[Message],
        active_leaf: str | None,
        hops: dict[str, str] | None = None,
    ) -> None:
        """Rebuild from every message of the chat (append order) and the active leaf.

        A very long branch keeps its newest `window` messages in view; the earlier
        ones wait under one "earlier messages" node, built when it is expanded.
        """
        layout = _Layout(messages, active_leaf, hops or {})
        self.active_leaf = layout.active_leaf
        self.clear()
        self._message_nodes = {}
        self._deferred = {}
        self._layout = layout
        chain = layout.top_chain()
        start = max(len(chain) - self.window, 0)
        if start:
            earlier = self.root.add(
                Text(f"… {start:,} earlier messages (space to expand)"),
                data=None,
                allow_expand=True,
            )
            self._deferred[earlier.id] = chain[:start]
        self._lay_chain(self.root, chain[start:])
        roots = layout.children[None]
        first = chain[0][0] if chain else None
        self._drain([("alt", self.root, r, roots) for r in reversed(roots) if r != first])
        if self.active_leaf and self.active_leaf in self._message_nodes:
            self.select_message(self.active_leaf)

    def _add(
        self, container: TreeNode[TreeEntry], mid: str, siblings: list[str], alternate: bool
    ) -> TreeNode[TreeEntry]:
        tree_node = container.add(
            Text(preview(self._layout.by_id[mid])),
            data=self._layout.entry(mid, siblings, alternate),
            allow_expand=False,
        )
        if container.data is not None:
            container.allow_expand = True  # a message with branches under it
        self._message_nodes[mid] = tree_node
        return tree_node

    def _lay_chain(
        self, container: TreeNode[TreeEntry], chain: list[tuple[str, list[str]]]
    ) -> None:
        """Lay a stretch of the active branch flat into `container`, with its alternatives."""
        layout = self._layout
        for mid, siblings in chain:
            tree_node = self._add(container, mid, siblings, False)
            kids = layout.children[mid]
            cont = layout.continuation(kids)
            self._drain([("alt", tree_node, a, kids) for a in reversed(kids) if a != cont])

    def _drain(self, stack: list[_Work]) -> None:
        """Build work items last-in first-out: ("chain", container, first id, its siblings)
        lays a chain flat into the container; ("alt", …) adds an alternative's head node
        that holds the rest of its branch. No recursion, however deep the tree."""
        layout = self._layout
        while stack:
            kind, container, mid, siblings = stack.pop()
            if kind == "alt":
                head = self._add(container, mid, siblings, True)
                kids = layout.children[mid]
                cont = layout.continuation(kids)
                items: list[_Work] = [("alt", head, a, kids) for a in kids if a != cont]
                if cont is not None:
                    items.append(("chain", head, cont, kids))
                stack.extend(reversed(items))
                continue
            current: str | None = mid
            while current is not None:
                tree_node = self._add(container, current, siblings, False)
                kids = layout.children[current]
                cont = layout.continuation(kids)
                # Alternatives hang under the message they branch from.
                stack.extend(("alt", tree_node, a, kids) for a in reversed(kids) if a != cont)
                current, siblings = cont, kids

    def _build_deferred(self, tree_node: TreeNode[TreeEntry]) -> bool:
        chain = self._deferred.pop(tree_node.id, None)
        if chain is None:
            return False
        self._lay_chain(tree_node, chain)
        tree_node.set_label(Text(f"… {len(chain):,} earlier messages"))
        return True

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[TreeEntry]) -> None:
        self._build_deferred(event.node)

    def select_message(self, message_id: str, *, scroll: bool = True) -> None:
        """Move the cursor to a message's node, expanding the branches that hide it."""
        tree_node = self._message_nodes.get(message_id)
        if tree_node is None and self._deferred:
            for node_id in list(self._deferred):
                deferred = next((n for n in self.root.children if n.id == node_id), None)
                if deferred is not None:
                    self._build_deferred(deferred)
            tree_node = self._message_nodes.get(message_id)
        if tree_node is None:
            return
        parent = tree_node.parent
        while parent is not None:
            parent.expand()
            parent = parent.parent
        # A node gets its line once the tree has laid out the expansion.
        self.call_after_refresh(self._move_to, tree_node, scroll)

    def _move_to(self, tree_node: TreeNode[TreeEntry], scroll: bool) -> None:
        self.move_cursor(tree_node, animate=False)
        if scroll:
            self.scroll_to_node(tree_node, animate=False)

    def node_for(self, message_id: str) -> TreeNode[TreeEntry] | None:
        return self._message_nodes.get(message_id)

    @property
    def message_ids(self) -> list[str]:
        """Every message shown, in display order (expanded or not)."""
        return list(self._message_nodes)

    # -- rendering ------------------------------------------------------------

    def get_label_width(self, node: TreeNode[TreeEntry]) -> int:
        # Tree renders every label to size its virtual width; previews are cut to the
        # pane (no horizontal scrolling), so the plain length is enough and far cheaper.
        return node.label.cell_len + 16

    def render_label(self, node: TreeNode[TreeEntry], base_style: Style, style: Style) -> Text:
        data = node.data
        if data is None:
            return super().render_label(node, base_style, style)
        cls = self.get_component_rich_style
        text = Text(no_wrap=True, overflow="ellipsis")
        # Every row reserves the expander's two cells so previews line up.
        text.append(("▼ " if node.is_expanded else "▶ ") if node.allow_expand else "  ", base_style)
        if data.alternate:
            text.append("⎇ ", cls("message-tree--branch"))
        tag = ROLE_TAGS.get(data.role, data.role)
        text.append(
            f"{tag:<4}",
            cls(f"message-tree--{data.role}", partial=True)
            if data.role in ROLE_TAGS
            else base_style,
        )
        if data.position[1] > 1:
            text.append(f"‹{data.position[0]}/{data.position[1]}›", cls("message-tree--branch"))
        text.append(" ")
        if data.hop:
            text.append(f"⇄ {data.hop} ", cls("message-tree--hop"))
        label = node.label.copy()
        if not data.on_path:
            label.stylize(cls("message-tree--off-path"))
        if data.message_id == self.active_leaf:
            label.stylize(cls("message-tree--leaf"))
        if data.incomplete:
            label.append(" …", cls("message-tree--off-path"))
        text.append_text(label)
        text.stylize(style)
        return text

    # -- input ----------------------------------------------------------------

    def on_tree_node_selected(self, event: Tree.NodeSelected[TreeEntry]) -> None:
        event.stop()
        if event.node.data is not None:
            self.post_message(self.BranchSelected(event.node.data.message_id))

    def action_message(self, action: str) -> None:
        node = self.cursor_node
        if node is not None and node.data is not None:
            self.post_message(self.ActionRequested(node.data.message_id, action))
