"""SessionManager: lifecycle, fork, usage, status, projects, search (SPEC 5)."""

import pytest

from store import (
    InvalidStatusError,
    StaticProvider,
    UnknownParentError,
    UnknownProjectError,
    UnknownSessionError,
)


def msg(mid, text, role="user"):
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": text}]}


async def test_create_get_list_order(manager):
    a = manager.create("A", model="gpt", source="cli", metadata={"k": 1})
    b = manager.create("B")
    assert a.status == "active" and a.model == "gpt" and a.metadata == {"k": 1}
    assert [s.id for s in manager.list()] == [b.id, a.id]
    await manager.append(a.id, msg("m", "bump"))
    assert [s.id for s in manager.list()] == [a.id, b.id]
    assert manager.get("nope") is None


async def test_rename_delete_restore_purge(manager):
    s = manager.create("Old")
    await manager.append(s.id, msg("m", "keep me findable"))
    assert manager.rename(s.id, "New").name == "New"
    manager.delete(s.id)
    assert manager.get(s.id) is None
    assert manager.get(s.id, include_deleted=True).deleted_at is not None
    assert manager.list() == []
    assert [x.id for x in manager.list(include_deleted=True)] == [s.id]
    assert manager.search("findable", include_deleted=False) == []
    (hit,) = manager.search("findable")  # SPEC §5: search still resolves, marked
    assert hit.session_id == s.id and hit.deleted
    (scoped,) = manager.search("findable", session_id=s.id)
    assert scoped.deleted
    assert manager.get_message_count(s.id) == 1  # messages kept
    with pytest.raises(UnknownSessionError):
        await manager.append(s.id, msg("n", "into a deleted chat"))
    manager.restore(s.id)
    assert manager.get(s.id).deleted_at is None
    manager.purge(s.id)
    assert manager.get(s.id, include_deleted=True) is None
    assert manager.store.query("SELECT count(*) FROM messages")[0][0] == 0
    assert manager.store.integrity_check() == []


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.rename("missing", "x"),
        lambda m: m.delete("missing"),
        lambda m: m.restore("missing"),
        lambda m: m.purge("missing"),
        lambda m: m.get_session("missing"),
        lambda m: m.get_message_count("missing"),
        lambda m: m.set_status("missing", "idle"),
        lambda m: m.add_usage("missing", 1, 1, 0.1),
    ],
)
def test_unknown_session_id_raises(manager, call):
    with pytest.raises(UnknownSessionError, match="missing"):
        call(manager)


async def test_append_all_chains_and_upsert(manager):
    s = manager.create("chat")
    stored = await manager.append_all(
        s.id, [msg("a", "1"), msg("b", "2", "assistant"), msg("c", "3")]
    )
    assert [m.parent_id for m in stored] == [None, "a", "b"]
    await manager.upsert(s.id, msg("b", "two", "assistant"))
    assert manager.get_history(s.id)[1].text == "two"
    await manager.upsert(s.id, msg("d", "4", "assistant"))
    assert manager.get_message_count(s.id) == 4
    assert [m.id for m in manager.get_branches(s.id, "a")] == ["b"]


async def test_append_all_validates_everything_first(manager):
    s = manager.create("chat")
    with pytest.raises(ValueError):
        await manager.append_all(s.id, [msg("a", "1"), {"id": "b", "role": "nobody", "parts": []}])
    assert manager.get_message_count(s.id) == 0


async def test_fork_copies_path_with_new_ids(manager):
    s = manager.create("orig", model="m")
    await manager.append_all(s.id, [msg("q", "question"), msg("a1", "answer one", "assistant")])
    await manager.append(s.id, msg("a2", "answer two", "assistant"), "q")
    f = await manager.fork(s.id, "a1", "forked")
    assert f.parent_session_id == s.id and f.name == "forked" and f.model == "m"
    history = manager.get_history(f.id)
    assert [m.text for m in history] == ["question", "answer one"]
    assert all(m.id not in ("q", "a1") for m in history)
    assert history[1].parent_id == history[0].id
    assert manager.get_message_count(s.id) == 3  # the source is untouched
    assert f.metadata["forked_from"] == {"session_id": s.id, "message_id": "a1"}


async def test_fork_at_unknown_message_creates_nothing(manager):
    s = manager.create("orig")
    await manager.append(s.id, msg("q", "x"))
    with pytest.raises(KeyError):
        await manager.fork(s.id, "nope", "f")
    assert len(manager.list()) == 1


def test_usage_and_status(manager):
    s = manager.create("x")
    manager.add_usage(s.id, 10, 5, 0.01)
    info = manager.add_usage(s.id, 1, 2, 0.02)
    assert (info.input_tokens, info.output_tokens) == (11, 7)
    assert info.cost == pytest.approx(0.03)
    with pytest.raises(ValueError):
        manager.add_usage(s.id, -1, 0, 0)
    assert manager.set_status(s.id, "awaiting_peer").status == "awaiting_peer"
    manager.set_status(s.id, "idle")
    with pytest.raises(InvalidStatusError):
        manager.set_status(s.id, "sleeping")
    assert manager.get(s.id).status == "idle"
    assert [c.status for c in manager.status_history(s.id)] == ["active", "awaiting_peer", "idle"]


async def test_cross_session_search_carries_session_id(manager):
    a = manager.create("a")
    b = manager.create("b")
    await manager.append(a.id, msg("1", "deployment on friday"))
    await manager.append(b.id, msg("1", "the friday deployment went fine"))
    hits = manager.search("deployment friday")
    assert {h.session_id for h in hits} == {a.id, b.id}
    assert [h.session_id for h in manager.search("deployment", session_id=a.id)] == [a.id]


async def test_templates_apply_to_every_session(manager):
    manager.with_context("soul", provider=StaticProvider("You are helpful.")).with_context(
        "memory", max_tokens=100
    ).with_cached_prompt()
    a = manager.create("a")
    b = manager.create("b")
    sa, sb = manager.get_session(a.id), manager.get_session(b.id)
    assert sa is manager.get_session(a.id)  # cached
    await sa.replace_context_block("memory", "a only")
    assert sb.get_context_block("memory").content == ""
    assert "You are helpful." in await sb.freeze_system_prompt()


async def test_searchable_history_block(manager):
    manager.with_searchable_history("history")
    a = manager.create("a")
    await manager.append(a.id, msg("1", "the zebra project"))
    b = manager.create("b")
    session = manager.get_session(b.id)
    assert "[searchable]" in await session.freeze_system_prompt()
    out = await (await session.tools())["search_context"](label="history", query="zebra")
    assert "zebra" in out


def test_projects(manager):
    p = manager.create_project("Website")
    s = manager.create("in project", project_id=p.id)
    manager.create("ad hoc")
    assert [x.id for x in manager.list(project_id=p.id)] == [s.id]
    assert manager.rename_project(p.id, "Site").name == "Site"
    assert [x.name for x in manager.list_projects()] == ["Site"]
    manager.archive_project(p.id)
    assert manager.list_projects() == []
    assert manager.list_projects(include_archived=True)[0].archived_at is not None
    with pytest.raises(UnknownProjectError):
        manager.create("x", project_id="nope")
    with pytest.raises(ValueError):
        manager.create_project("  ")


async def test_query_helpers_counts_models_names_and_prefixes(manager):
    a = manager.create("Alpha", model="gpt-x")
    b = manager.create("Beta", model="claude-y")
    empty = manager.create("Empty")
    await manager.append_all(a.id, [msg("a1", "one"), msg("a2", "two", "assistant")])
    await manager.append(b.id, msg("b1", "three"))
    assert manager.message_counts() == {a.id: 2, b.id: 1}
    assert manager.message_counts([b.id, empty.id]) == {b.id: 1}
    assert manager.message_counts([]) == {}
    assert manager.models_used() == ["claude-y", "gpt-x"]  # most recently updated first
    manager.delete(b.id)
    assert manager.names([a.id, b.id, "missing"]) == {a.id: "Alpha", b.id: "Beta"}
    # an exact id wins; a prefix finds deleted chats too; "" finds nothing
    assert [s.id for s in manager.find(a.id)] == [a.id]
    assert [s.id for s in manager.find(b.id[:10])] == [b.id]
    assert manager.find("") == [] and manager.find("no-such-id") == []
    assert manager.find_messages(a.id, "a") == ["a1", "a2"]
    assert manager.find_messages(a.id, "a2") == ["a2"]
    assert manager.find_messages(a.id, "b1") == []  # another chat's message
    assert [s.id for s in manager.list(oldest_first=True)] == [a.id, empty.id]


async def test_an_append_under_a_named_parent_reads_nothing_first_and_refuses_as_before(manager):
    # The engines write such an append without reading (`Engine.append_in_one`);
    # when they write nothing, the general path says why.
    info = manager.create("appends")
    session = manager.get_session(info.id)
    before = manager.get(info.id).updated_at
    first = {"id": "a", "role": "user", "parts": [{"type": "text", "text": "first"}]}
    stored = await session.append_message(first, None)  # the chat's first: its search number
    first["parts"][0]["text"] = "changed by the caller"
    assert stored.text == "first" and stored.parent_id is None
    await session.append_message(msg("b", "second"), "a")
    assert manager.get(info.id).updated_at > before
    again = await session.append_message(msg("b", "not stored"), "a")
    assert again.text == "second"  # an id stored already: the stored message
    with pytest.raises(UnknownParentError):
        await session.append_message(msg("c", "orphan"), "nope")
    assert [m.id for m in session.get_history("b")] == ["a", "b"]
    assert session.get_message("a").text == "first"
    assert [r.id for r in manager.search("second")] == ["b"]
    manager.delete(info.id)
    with pytest.raises(UnknownSessionError):
        await session.append_message(msg("d", "too late"), "b")
    assert manager.get_message_count(info.id) == 2
