"""Any sequence of append / regenerate / edit / fork / compact / delete on a
SessionManager keeps every message reachable — nothing that was shown is ever lost —
and `get_history` a valid root-to-leaf path.

A Hypothesis state machine drives the real store next to a tiny model of the tree
(parent links in append order) and checks, after every step, that the two agree:
every message stored once under the right parent, its raw path a chain from a root,
its shown path (compaction overlays applied) expanding back to exactly that chain,
"latest" the newest childless message, forks untouched by later edits, the search
index in step.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from store import SessionManager, Store, UnknownParentError
from store.messages import Message

PICK = st.integers(0, 10**6)


class TreeMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.folder = tempfile.mkdtemp(prefix="tree-fuzz-")
        self.store = Store(Path(self.folder) / "tree.db")
        self.manager = SessionManager(self.store)
        self.sid = self.manager.create("fuzzed").id
        self.session = self.manager.get_session(self.sid)
        self.loop = asyncio.new_event_loop()
        self.parent: dict[str, str | None] = {}
        self.role: dict[str, str] = {}
        self.order: list[str] = []  # append order of the messages still there
        self.count = 0
        self.forks: dict[str, list[tuple[str, str]]] = {}

    def teardown(self) -> None:
        self.store.close()
        self.loop.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- the model ---------------------------------------------------------------------

    def text(self, mid: str) -> str:
        return f"message {mid} says tok{mid}"

    def children(self, mid: str | None) -> list[str]:
        return [m for m in self.order if self.parent[m] == mid]

    def latest_leaf(self) -> str | None:
        for mid in reversed(self.order):
            if not self.children(mid):
                return mid
        return None

    def pick(self, index: int, role: str | None = None) -> str | None:
        pool = [m for m in self.order if role is None or self.role[m] == role]
        return pool[index % len(pool)] if pool else None

    def append(self, role: str, parent: str | None, *, latest: bool = False) -> None:
        self.count += 1
        mid = f"m{self.count}"
        expected = self.latest_leaf() if latest else parent
        message = Message(id=mid, role=role, parts=[{"type": "text", "text": self.text(mid)}])
        stored = self.loop.run_until_complete(
            self.manager.append(self.sid, message, *([] if latest else [parent]))
        )
        assert stored.parent_id == expected
        self.parent[mid], self.role[mid] = expected, role
        self.order.append(mid)

    # -- operations --------------------------------------------------------------------

    @rule(role=st.sampled_from(["user", "assistant"]))
    def append_to_latest(self, role: str) -> None:
        self.append(role, None, latest=True)

    @rule(role=st.sampled_from(["user", "assistant", "tool"]))
    def append_new_root(self, role: str) -> None:
        self.append(role, None)

    @precondition(lambda self: self.order)
    @rule(index=PICK, role=st.sampled_from(["user", "assistant"]))
    def append_under_any(self, index: int, role: str) -> None:
        self.append(role, self.pick(index))

    @precondition(lambda self: any(r == "assistant" for r in self.role.values()))
    @rule(index=PICK)
    def regenerate(self, index: int) -> None:
        """A new reply beside an old one: a sibling with the same parent."""
        old = self.pick(index, "assistant")
        assert old is not None
        self.append("assistant", self.parent[old])

    @precondition(lambda self: any(r == "user" for r in self.role.values()))
    @rule(index=PICK)
    def edit(self, index: int) -> None:
        """An edited question: a new user message beside the original."""
        old = self.pick(index, "user")
        assert old is not None
        self.append("user", self.parent[old])

    @rule()
    def append_under_a_stranger(self) -> None:
        before = self.session.get_tree()
        message = {"id": "stray", "role": "user", "parts": [{"type": "text", "text": "x"}]}
        with pytest.raises(UnknownParentError):
            self.loop.run_until_complete(self.manager.append(self.sid, message, "no-such-id"))
        assert self.session.get_tree() == before

    @precondition(lambda self: self.order)
    @rule(index=PICK)
    def fork(self, index: int) -> None:
        at = self.pick(index)
        assert at is not None
        info = self.loop.run_until_complete(self.manager.fork(self.sid, at, "fork"))
        copied = [(m.role, m.text) for m in self.manager.get_session(info.id).get_raw_history()]
        assert copied == [(m.role, m.text) for m in self.session.get_raw_history(at)]
        self.forks[info.id] = copied

    @precondition(lambda self: self.order)
    @rule(index=PICK, start=PICK, length=PICK)
    def compact(self, index: int, start: int, length: int) -> None:
        leaf = self.pick(index)
        path = self.session.get_raw_history(leaf)
        first = start % len(path)
        last = first + length % (len(path) - first)
        self.session.add_compaction(
            f"summary of {path[first].id}..{path[last].id}", path[first].id, path[last].id
        )

    @precondition(lambda self: self.order)
    @rule(index=PICK)
    def delete(self, index: int) -> None:
        """Deleting one message re-attaches its replies to its parent (nothing else goes)."""
        gone = self.pick(index)
        assert gone is not None
        self.manager.delete_messages(self.sid, [gone])
        for mid in self.order:
            if self.parent[mid] == gone:
                self.parent[mid] = self.parent[gone]
        self.order.remove(gone)
        del self.parent[gone], self.role[gone]

    # -- what must always hold ---------------------------------------------------------------

    @invariant()
    def every_message_stored_once_where_the_model_says(self) -> None:
        tree = self.session.get_tree()
        assert {m.id: (m.parent_id, m.role, m.text) for m in tree} == {
            m: (self.parent[m], self.role[m], self.text(m)) for m in self.order
        }
        seen: set[str] = set()
        for message in tree:  # parents before children
            assert message.parent_id is None or message.parent_id in seen
            seen.add(message.id)
        assert self.manager.get_message_count(self.sid) == len(self.order)

    @invariant()
    def every_message_is_reachable_and_its_path_is_whole(self) -> None:
        for mid in self.order:
            raw = self.session.get_raw_history(mid)
            assert raw[0].parent_id is None and raw[-1].id == mid
            for before, after in zip(raw, raw[1:], strict=False):
                assert after.parent_id == before.id
            assert self.session.get_path_length(mid) == len(raw)
            ids = [m.id for m in raw]
            expanded: list[str] = []
            for shown in self.session.get_history(mid):
                if shown.is_compaction:
                    meta = shown.metadata["compaction"]
                    start, end = (
                        ids.index(meta["from_message_id"]),
                        ids.index(meta["to_message_id"]),
                    )
                    assert shown.parent_id == raw[start].parent_id
                    assert meta["covered"] == end - start + 1
                    expanded.extend(ids[start : end + 1])
                else:
                    expanded.append(shown.id)
            assert expanded == ids  # the summary stands for them; none is lost

    @invariant()
    def latest_and_branches_follow_append_order(self) -> None:
        leaf = self.latest_leaf()
        found = self.session.get_latest_leaf()
        assert (found.id if found else None) == leaf
        if leaf is not None:
            assert self.session.get_history() == self.session.get_history(leaf)
        for mid in self.order:
            assert [m.id for m in self.session.get_branches(mid)] == self.children(mid)

    @invariant()
    def forks_are_untouched_by_later_changes(self) -> None:
        for sid, copied in self.forks.items():
            assert [
                (m.role, m.text) for m in self.manager.get_session(sid).get_raw_history()
            ] == copied

    @invariant()
    def search_index_in_step(self) -> None:
        assert self.store.integrity_check() == []
        for mid in self.order[-5:]:
            assert [h.id for h in self.session.search(f"tok{mid}")] == [mid]


TreeMachine.TestCase.settings = settings(max_examples=15, stateful_step_count=25, deadline=None)
TestTreeOperations = TreeMachine.TestCase
