"""Histories read in windows of rows (`storage.walk_path`): on every tree shape the
path the one-statement recursive walk gives, on both engines.

Each test runs with the real window sizes and with tiny ones (2 rows, growing to 8;
3 steps a climb), so short trees cross every seam a long chat would: several
windows, a scattered path handed to the recursive walk, a climb in several
statements.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import Session, storage
from store.block_writes import BranchSite, block_history, content_at, path_ids, record_write
from store.schema import MessageRow as M
from store.storage import StoreSessionProvider, walk_path


def msg(mid: str) -> dict:
    return {"id": mid, "role": "user", "parts": [{"type": "text", "text": f"text of {mid}"}]}


@pytest.fixture(params=["real", "tiny"])
def windows(request, monkeypatch) -> str:
    if request.param == "tiny":
        monkeypatch.setattr(storage, "_FIRST_WINDOW", 2)
        monkeypatch.setattr(storage, "_MAX_WINDOW", 8)
        monkeypatch.setattr(storage, "_CLIMB_STEPS", 3)
    return request.param


def recursive_walk(store, sid: str, leaf: str) -> list[tuple]:
    """The walk as it was: one recursive statement, root first."""
    return storage._CLIMB[True].rows(store, sid, leaf, 10**6)[::-1]


def chain_of(store, sid: str, leaf: str) -> list[str]:
    """The path by following the parent column in Python, stopping before a repeat."""
    parent = dict(store.rows(M.select(M.id, M.parent_id).where(M.session_id == sid)))
    path: list[str] = []
    at: str | None = leaf
    while at is not None and at in parent and at not in path:
        path.append(at)
        at = parent.get(at)
    return path[::-1]


def check_every_path(store, sid: str) -> None:
    provider = StoreSessionProvider(store, sid)
    for (mid,) in store.rows(M.select(M.id).where(M.session_id == sid)):
        expected = chain_of(store, sid, mid)
        rows = walk_path(store, sid, mid)
        assert [r[1] for r in rows] == expected
        assert [m.id for m in provider.get_history(mid)] == expected
        assert provider.get_path_length(mid) == len(expected)
        assert path_ids(store, sid, mid) == set(expected)
        assert [r[:3] for r in walk_path(store, sid, mid, full=False)] == [r[:3] for r in rows]


def reparent(store, sid: str, mid: str, parent: str | None) -> None:
    """What no API does: a parent link written by hand (a foreign tool, a corrupt file)."""
    store.run(M.update(parent_id=parent).where(M.session_id == sid, M.id == mid))


def test_branched_tree(store, windows):
    s = StoreSessionProvider(store, "branched")
    s.append_message(msg("q1"), None)
    s.append_message(msg("a1"), "q1")
    s.append_message(msg("a1b"), "q1")  # a regenerated reply
    s.append_message(msg("q2"), "a1")
    s.append_message(msg("a2"), "q2")
    s.append_message(msg("q2b"), "a1b")
    s.append_message(msg("r2"), None)  # a second root
    s.append_message(msg("a3"), "a2")
    assert [m.id for m in s.get_history("a3")] == ["q1", "a1", "q2", "a2", "a3"]
    assert [m.id for m in s.get_history("q2b")] == ["q1", "a1b", "q2b"]
    assert [m.id for m in s.get_history("r2")] == ["r2"]
    assert [m.id for m in s.get_history()] == ["q1", "a1", "q2", "a2", "a3"]
    check_every_path(store, "branched")


def test_deleted_messages_and_their_reparented_children(store, windows):
    s = StoreSessionProvider(store, "deleted")
    for i in range(12):
        s.append_message(msg(f"m{i}"), f"m{i - 1}" if i else None)
    s.append_message(msg("side"), "m3")
    s.delete_messages(["m5", "m6", "m0", "m11"])
    assert [m.id for m in s.get_history("m10")] == ["m1", "m2", "m3", "m4", "m7", "m8", "m9", "m10"]
    assert s.get_path_length("m10") == 8
    check_every_path(store, "deleted")


def test_a_path_longer_than_the_first_windows(store, windows):
    s = StoreSessionProvider(store, "long")
    parent = None
    for i in range(600):  # 256 + 512 rows with the real sizes
        parent = s.append_message(msg(f"m{i}"), parent).id
        if i % 7 == 3:
            s.append_message(msg(f"b{i}"), parent)  # a branch off the path
    history = s.get_history(parent)
    assert [m.id for m in history] == [f"m{i}" for i in range(600)]
    assert [m.text for m in history[:2]] == ["text of m0", "text of m1"]
    assert s.get_path_length(parent) == 600
    assert path_ids(store, "long", parent) == {f"m{i}" for i in range(600)}
    assert walk_path(store, "long", parent) == recursive_walk(store, "long", parent)


def test_a_path_scattered_among_branches_is_climbed(store, windows, monkeypatch):
    s = StoreSessionProvider(store, "scattered")
    parent = None
    for i in range(30):
        parent = s.append_message(msg(f"m{i}"), parent).id
        for j in range(12):  # many rows between a message and its parent
            s.append_message(msg(f"x{i}-{j}"), None)
    climbs = []
    real = storage._climbed
    monkeypatch.setattr(storage, "_climbed", lambda *a: climbs.append(a[2]) or real(*a))
    assert [m.id for m in s.get_history(parent)] == [f"m{i}" for i in range(30)]
    # Windows of 2, 4, 8 rows (tiny) or 256 (real): the last one mostly other branches.
    assert climbs == ["m26" if windows == "tiny" else "m9"]
    assert walk_path(store, "scattered", parent) == recursive_walk(store, "scattered", parent)


def test_a_parent_above_its_child(store, windows):
    s = StoreSessionProvider(store, "above")
    for mid in ("a", "b", "c", "d", "e"):
        s.append_message(msg(mid), None)
    reparent(store, "above", "a", "d")  # d was appended after a
    reparent(store, "above", "d", "b")
    assert [m.id for m in s.get_history("a")] == ["b", "d", "a"]
    check_every_path(store, "above")


@pytest.mark.parametrize("scattered", [False, True])
def test_a_parent_cycle_ends_the_path(store, windows, scattered):
    s = StoreSessionProvider(store, "cycle")
    for i in range(6):
        s.append_message(msg(f"m{i}"), f"m{i - 1}" if i else None)
        if scattered:
            for j in range(10):
                s.append_message(msg(f"x{i}-{j}"), None)
    reparent(store, "cycle", "m0", "m3")  # m3 → m2 → m1 → m0 → m3
    assert [m.id for m in s.get_history("m5")] == ["m0", "m1", "m2", "m3", "m4", "m5"]
    assert [m.id for m in s.get_history("m1")] == ["m2", "m3", "m0", "m1"]
    assert s.get_path_length("m5") == 6
    assert path_ids(store, "cycle", "m2") == {"m0", "m1", "m2", "m3"}
    check_every_path(store, "cycle")


def test_a_parent_deleted_between_two_windows(store, monkeypatch):
    monkeypatch.setattr(storage, "_FIRST_WINDOW", 2)
    s = StoreSessionProvider(store, "racing")
    for i in range(8):
        s.append_message(msg(f"m{i}"), f"m{i - 1}" if i else None)
    real = storage._windows
    reads = []

    def windows(size, full):
        prepared = real(size, full)

        class Racing:
            def rows(self, *args):
                rows = prepared.rows(*args)
                reads.append([r[1] for r in rows])
                if len(reads) == 1:  # another process deletes m5: m6 now hangs under m4
                    StoreSessionProvider(store, "racing").delete_messages(["m5"])
                return rows

        return Racing()

    monkeypatch.setattr(storage, "_windows", windows)
    history = s.get_history("m7")
    assert [m.id for m in history] == ["m0", "m1", "m2", "m3", "m4", "m6", "m7"]
    assert reads[:2] == [["m7", "m6"], []]  # m5 was gone when the walk looked for it


def test_an_unknown_leaf_has_no_path(store, windows):
    StoreSessionProvider(store, "one").append_message(msg("a"), None)
    assert walk_path(store, "one", "nope") == []
    assert walk_path(store, "other", "a") == []  # ids are per session
    assert path_ids(store, "one", "nope") == set()


ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 60), st.booleans()),
        st.tuples(st.just("delete"), st.integers(0, 60), st.booleans()),
        st.tuples(st.just("reparent"), st.integers(0, 60), st.integers(0, 60)),
    ),
    min_size=5,
    max_size=60,
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=ops)
def test_random_trees_walk_as_the_recursive_walk(store, windows, ops):
    sid = f"random-{uuid.uuid4().hex[:8]}"
    s = StoreSessionProvider(store, sid)
    ids: list[str] = []
    for n, (op, a, b) in enumerate(ops):
        if op == "append":
            parent = ids[a % len(ids)] if ids and b else None
            ids.append(s.append_message(msg(f"n{n}"), parent).id)
        elif op == "delete" and ids:
            s.delete_messages([ids.pop(a % len(ids))])
        elif op == "reparent" and ids:
            # Any message, no parent, or one that is not there (a dangling link).
            child, parent = ids[a % len(ids)], [*ids, None, "gone"][b % (len(ids) + 2)]
            if parent is None or child not in chain_of(store, sid, parent):  # cycles: above
                reparent(store, sid, child, parent)
    for mid in ids:
        assert walk_path(store, sid, mid) == recursive_walk(store, sid, mid)
    check_every_path(store, sid)


async def test_history_with_overlays_on_a_long_path(store, windows):
    session = Session(store).for_session("overlaid")
    for i in range(40):
        await session.append_message(msg(f"m{i}"))
    session.add_compaction("the middle", "m10", "m29")
    shown = session.get_history()
    assert [m.id for m in shown][:10] == [f"m{i}" for i in range(10)]
    assert len(shown) == 40 - 20 + 1 and shown[-1].id == "m39"
    assert len(session.get_raw_history("m39")) == 40


# -- a block's content on a path (`block_writes.content_at`): the path read only as far
# as the newest write on it needs (`storage.PathWalk`), the same answer as reading it all.


def write(store, mid: str | None, content: str, sid: str = "memo") -> None:
    with store.write():
        record_write(store, "ns", "notes", content, BranchSite(sid, mid))


def content_by_whole_path(store, sid: str, leaf: str) -> str | None:
    """The definition: the newest live write whose message is on the path (or none)."""
    on_path = set(chain_of(store, sid, leaf))
    for w in reversed(block_history(store, "ns", "notes")):
        if not w.reverted and (w.message_id is None or w.message_id in on_path):
            return w.content
    return None


def test_the_newest_write_on_the_path_wins_not_the_nearest(store, windows, monkeypatch):
    s = StoreSessionProvider(store, "memo")
    parent = None
    for i in range(300):
        parent = s.append_message(msg(f"m{i}"), parent).id
        if i % 10 == 5:
            s.append_message(msg(f"b{i}"), parent)  # a branch off the path
    write(store, "m298", "near the leaf")
    assert content_at(store, "ns", "notes", BranchSite("memo", "m299")) == "near the leaf"
    write(store, "m2", "near the root, newer")
    write(store, "b295", "on a branch, newest")
    reads = []
    real = storage._windows
    monkeypatch.setattr(storage, "_windows", lambda *a: reads.append(a) or real(*a))
    assert content_at(store, "ns", "notes", BranchSite("memo", "m299")) == "near the root, newer"
    assert content_at(store, "ns", "notes", BranchSite("memo", "b295")) == "on a branch, newest"
    assert content_at(store, "ns", "notes", BranchSite("memo", "m1")) is None
    write(store, None, "on no message")
    assert content_at(store, "ns", "notes", BranchSite("memo", "m1")) == "on no message"
    write(store, "m299", "at the leaf")
    reads.clear()
    assert content_at(store, "ns", "notes", BranchSite("memo", "m299")) == "at the leaf"
    assert len(reads) == 1  # the first window holds the answer: the rest is not read
    for leaf in ("m0", "m150", "m299", "b5", "b295", "nope"):
        expected = content_by_whole_path(store, "memo", leaf)
        assert content_at(store, "ns", "notes", BranchSite("memo", leaf)) == expected


def test_a_parent_stored_after_its_child(store, windows):
    """No API makes such a link (a parent is stored before its children; a delete
    moves children up to an older message); one written by hand is the one case
    where stopping early can miss a write: on the late parent, from below it."""
    s = StoreSessionProvider(store, "memo")
    for i in range(8):
        s.append_message(msg(f"m{i}"), f"m{i - 1}" if i else None)
    s.append_message(msg("late"), None)
    reparent(store, "memo", "m3", "late")  # m7 → … → m3 → late → m2 → m1 → m0
    reparent(store, "memo", "late", "m2")
    write(store, "m6", "older")
    write(store, "late", "on the late parent")
    assert content_at(store, "ns", "notes", BranchSite("memo", "late")) == "on the late parent"
    assert content_at(store, "ns", "notes", BranchSite("memo", "m7")) == "older"
    assert content_by_whole_path(store, "memo", "m7") == "on the late parent"
    assert path_ids(store, "memo", "m7") == {"m0", "m1", "m2", "late", "m3", "m4", "m5", "m6", "m7"}
