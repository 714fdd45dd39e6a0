"""Session lifecycle: status, soft delete, purge and fork of chat-scoped data, projects."""

import dataclasses

import pytest

from store import (
    InvalidStatusError,
    SessionInfo,
    StoreSearchProvider,
    StoreSkillProvider,
    UnknownProjectError,
    UnknownSessionError,
)
from store.providers import StoreContextProvider
from store.records import _FIELDS, SESSION_COLUMNS, SESSION_FIELDS, session_info
from store.schema import SessionRow
from tests.engine_helpers import sql


def msg(mid, text, role="user"):
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": text}]}


def test_status_moves_are_recorded_with_time_and_detail(manager):
    s = manager.create("chat")
    assert (s.status, s.status_detail) == ("active", "created")
    manager.set_status(s.id, "idle")
    waiting = manager.set_status(s.id, "awaiting_peer", "waiting for agent 'B'")
    assert (waiting.status, waiting.status_detail) == ("awaiting_peer", "waiting for agent 'B'")
    manager.set_status(s.id, "active")
    done = manager.set_status(s.id, "completed", "task finished")
    assert manager.set_status(s.id, "failed").status_detail is None
    history = manager.status_history(s.id)
    assert [(c.status, c.detail) for c in history] == [
        ("active", "created"),
        ("idle", None),
        ("awaiting_peer", "waiting for agent 'B'"),
        ("active", None),
        ("completed", "task finished"),
        ("failed", None),
    ]
    times = [c.changed_at for c in history]
    assert times == sorted(times) and all(t.tzinfo is not None for t in times)
    assert done.status == "completed"


@pytest.mark.parametrize(
    "status,detail", [("sleeping", None), ("", None), ("ACTIVE", None), (None, None), ("idle", 42)]
)
def test_invalid_status_is_refused_and_nothing_recorded(manager, status, detail):
    s = manager.create("chat")
    before = manager.status_history(s.id)
    with pytest.raises(ValueError):  # InvalidStatusError is a ValueError
        manager.set_status(s.id, status, detail)
    assert manager.status_history(s.id) == before
    assert manager.get(s.id).status == "active"


def test_invalid_status_error_class(manager):
    s = manager.create("chat")
    with pytest.raises(InvalidStatusError, match="expected one of"):
        manager.set_status(s.id, "sleeping")


def test_label_is_the_name(manager):
    s = manager.create("Trip planning")
    assert s.label == s.name == "Trip planning"
    assert manager.rename(s.id, "  Lisbon trip ").label == "Lisbon trip"


async def test_writes_into_a_deleted_session_are_refused(manager):
    s = manager.create("chat")
    await manager.append(s.id, msg("a", "kept"))
    session = manager.get_session(s.id)  # a Session handed out before the delete
    manager.delete(s.id)
    with pytest.raises(UnknownSessionError):
        await manager.append(s.id, msg("b", "into the bin"))
    with pytest.raises(UnknownSessionError, match="deleted"):
        await session.append_message(msg("c", "through an old handle"))
    with pytest.raises(UnknownSessionError):
        session.update_message(msg("a", "changed"))
    with pytest.raises(UnknownSessionError):
        await manager.upsert(s.id, msg("a", "changed"))
    with pytest.raises(UnknownSessionError):
        await manager.append_all(s.id, [msg("d", "x")])
    assert manager.get_message_count(s.id) == 1
    assert session.get_message("a").text == "kept"  # reads still work
    assert manager.search("kept", include_deleted=True)[0].id == "a"
    manager.restore(s.id)
    await session.append_message(msg("c", "after restore"))
    assert manager.get_message_count(s.id) == 2


@pytest.mark.parametrize(
    "bad",
    [
        {"id": "a/b"},
        {"id": ""},
        {"metadata": {"x": object()}},
        {"metadata": ["not", "a", "dict"]},
        {"metadata": {"x": float("inf")}},
    ],
)
def test_create_bad_input_creates_nothing(manager, bad):
    with pytest.raises(ValueError):
        manager.create("chat", **bad)
    assert manager.count(include_deleted=True) == 0


def test_update_metadata_validates(manager):
    s = manager.create("chat", metadata={"a": 1})
    assert manager.update_metadata(s.id, b=2, a=None).metadata == {"b": 2}
    with pytest.raises(ValueError):
        manager.update_metadata(s.id, c=object())
    assert manager.get(s.id).metadata == {"b": 2}


async def chat_scoped_data(store, sid):
    search = StoreSearchProvider(store, f"{sid}/notes")
    await search.set("k1", "the quarterly zebra report")
    await StoreSkillProvider(store, f"{sid}/skills").set("deploy", "Step 1.", "Deploy")
    await StoreContextProvider(store, f"{sid}/extra", "memo").set("a chat-scoped memo")
    await StoreContextProvider(store, sid, "memory").set("own namespace")


def namespaced_rows(store, prefix):
    counts = {}
    for table in ("context_blocks", "skills", "search_entries"):
        counts[table] = sql(
            store,
            f"SELECT count(*) FROM {table} WHERE namespace = ? OR namespace LIKE ?",
            (prefix, prefix + "/%"),
        )[0][0]
    return counts


async def test_purge_removes_chat_scoped_namespaces_only(manager):
    store = manager.store
    doomed = manager.create("doomed", id="abc")
    neighbour = manager.create("neighbour", id="abcd")  # shares a prefix, not a namespace
    await chat_scoped_data(store, doomed.id)
    await chat_scoped_data(store, neighbour.id)
    await StoreSearchProvider(store, "abc0").set("k", "zebra outside")  # just past the range
    manager.purge(doomed.id)
    assert namespaced_rows(store, "abc") == {"context_blocks": 0, "skills": 0, "search_entries": 0}
    assert namespaced_rows(store, "abcd") == {"context_blocks": 2, "skills": 1, "search_entries": 1}
    assert StoreSearchProvider(store, "abcd/notes").find("zebra")
    assert StoreSearchProvider(store, "abc0").find("zebra")
    assert store.integrity_check() == []


async def test_fork_copies_chat_scoped_namespaces(manager):
    store = manager.store
    s = manager.create("orig")
    await manager.append(s.id, msg("q", "question"))
    await chat_scoped_data(store, s.id)
    f = await manager.fork(s.id, "q", "fork")
    assert (
        namespaced_rows(store, f.id)
        == namespaced_rows(store, s.id)
        == {"context_blocks": 2, "skills": 1, "search_entries": 1}
    )
    assert StoreSearchProvider(store, f"{f.id}/notes").find("zebra") == [
        ("k1", "the quarterly zebra report")
    ]
    assert await StoreSkillProvider(store, f"{f.id}/skills").load("deploy") == "Step 1."
    # the copies are independent
    await StoreSearchProvider(store, f"{f.id}/notes").set("k1", "changed")
    assert StoreSearchProvider(store, f"{s.id}/notes").find("zebra")
    manager.purge(s.id)
    assert StoreSearchProvider(store, f"{f.id}/notes").find("changed")
    assert store.integrity_check() == []


def test_session_info_converter_matches_the_dataclass(manager):
    s = manager.create("chat", metadata={"k": [1]}, model="m")
    manager.delete(s.id)
    for row in manager.store.query(f"SELECT {SESSION_COLUMNS} FROM sessions"):
        fast = session_info(row)
        assert sorted(vars(fast)) == sorted(_FIELDS)  # every field, nothing more
        assert fast == dataclasses.replace(fast)  # replace() goes through __init__
        assert isinstance(fast, SessionInfo) and hash(fast.id)
        with pytest.raises(dataclasses.FrozenInstanceError):
            fast.name = "x"


def test_the_session_columns_are_the_models():
    """The columns a session row is read and written by come from the peewee model, and
    `SessionInfo` has a field for each, nothing more (a new column cannot be missed)."""
    assert SESSION_FIELDS == tuple(SessionRow._meta.sorted_fields)
    assert sorted(f.name for f in SESSION_FIELDS) == sorted(_FIELDS)


def test_projects_own_their_sessions(manager):
    p = manager.create_project("Website")
    other = manager.create_project("Other")
    a = manager.create("a", project_id=p.id)
    b = manager.create("b", project_id=p.id)
    loose = manager.create("ad hoc")
    assert [s.id for s in manager.project_sessions(p.id)] == [b.id, a.id]
    assert manager.move_to_project(loose.id, other.id).project_id == other.id
    assert manager.move_to_project(loose.id, None).project_id is None
    with pytest.raises(UnknownProjectError):
        manager.move_to_project(loose.id, "nope")
    assert manager.get(loose.id).project_id is None
    for call in (
        lambda: manager.project_sessions("nope"),
        lambda: manager.rename_project("nope", "x"),
        lambda: manager.archive_project("nope"),
        lambda: manager.restore_project("nope"),
    ):
        with pytest.raises(UnknownProjectError, match="nope"):
            call()
    with pytest.raises(ValueError):
        manager.rename_project(p.id, "  ")
    assert manager.get_project(p.id).name == "Website"
    assert manager.get_project("nope") is None


async def test_archiving_a_project_hides_it_and_its_sessions(manager):
    p = manager.create_project("Website")
    inside = manager.create("inside", project_id=p.id)
    await manager.append(inside.id, msg("m", "the zebra banner"))
    loose = manager.create("ad hoc")
    archived = manager.archive_project(p.id)
    assert manager.archive_project(p.id).archived_at == archived.archived_at
    assert [s.id for s in manager.list()] == [loose.id]
    assert {s.id for s in manager.list(include_archived=True)} == {inside.id, loose.id}
    assert [s.id for s in manager.list(project_id=p.id)] == [inside.id]
    assert [s.id for s in manager.project_sessions(p.id)] == [inside.id]
    assert manager.get(inside.id) is not None  # nothing deleted
    assert [h.session_id for h in manager.search("zebra")] == [inside.id]
    assert manager.list_projects() == []
    manager.restore_project(p.id)
    assert {s.id for s in manager.list()} == {inside.id, loose.id}
    assert [x.id for x in manager.list_projects()] == [p.id]
