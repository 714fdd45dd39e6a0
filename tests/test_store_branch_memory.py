"""Memory per branch (issue 14): a block's writes belong to the message that made them.

A write on one branch is invisible on its siblings and its parent, at any
depth, and stays so through fork, compaction, export and import; shared
blocks keep one content but record who wrote; a write can be reverted.
Every test using `store` runs on SQLite and on PostgreSQL (conftest's BOTH_ENGINES).
"""

import pytest
from peewee import SqliteDatabase

from store import (
    BranchSite,
    ReadOnlyBlockError,
    Session,
    SessionManager,
    StaticProvider,
    Store,
    StoreContextProvider,
    TransferError,
    UnknownWriteError,
    document_entries,
    documents_from_entries,
    export_session,
    import_sessions,
)
from store.migrations import migrate
from store.schema import BlockWriteRow


def text(mid, role="user", words=None):
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": words or mid}]}


async def tree(session):
    """u1 ─ a1 ─ u2 ─ a2 ─ u3 ─ a3   (the main line)
             ├─ b2           (a sibling of a2)
    └─ c1                    (a sibling of a1)
    """
    parent = None
    for mid in ("u1", "a1", "u2", "a2", "u3", "a3"):
        role = "user" if mid.startswith("u") else "assistant"
        await session.append_message(text(mid, role), parent)
        parent = mid
    await session.append_message(text("b2", "assistant"), "u2")
    await session.append_message(text("c1", "assistant"), "u1")


def branchy(store, sid="chat"):
    manager = SessionManager(store).with_branch_memory().with_context("notes", max_tokens=500)
    manager.create("Branchy", id=sid)
    return manager, manager.get_session(sid)


async def seen(session, at):
    blocks = await session.load_context(at=at)
    return next(b.content for b in blocks if b.label == "notes")


async def test_a_write_on_a_branch_is_invisible_on_its_sibling_and_parent_at_any_depth(store):
    _, s = branchy(store)
    await tree(s)
    await s.replace_context_block("notes", "from a1", at="a1")
    await s.replace_context_block("notes", "from a3", at="a3")
    await s.append_context_block("notes", "and b2", at="b2")
    # The path a1 → a3 sees its own writes, newest last.
    assert await seen(s, "a1") == "from a1"
    assert await seen(s, "u2") == "from a1"
    assert await seen(s, "a2") == "from a1"
    assert await seen(s, "a3") == "from a3"
    # b2 appended to what its own path held (a1's), not to a3's.
    assert await seen(s, "b2") == "from a1\nand b2"
    # Parents and siblings see none of their descendants' writes.
    assert await seen(s, "u1") == ""
    assert await seen(s, "c1") == ""
    assert await seen(s, "u3") == "from a1"
    # An unknown message sees only writes made on no message.
    assert await seen(s, "nope") == ""


async def test_set_branch_moves_the_prompt_and_writes(store):
    _, s = branchy(store)
    await tree(s)
    s.set_branch("a3")
    await s.replace_context_block("notes", "on the main line")
    assert "on the main line" in await s.refresh_system_prompt()
    s.set_branch("b2")
    assert s.get_context_block("notes").content == ""
    assert "on the main line" not in await s.refresh_system_prompt()
    assert [w.message_id for w in s.block_history("notes")] == ["a3"]
    with pytest.raises(TypeError):
        s.set_branch(3)


async def test_without_a_branch_writes_land_on_the_latest_leaf(store):
    _, s = branchy(store)
    await tree(s)  # the latest leaf is c1
    await s.replace_context_block("notes", "latest")
    assert s.block_history("notes")[-1].message_id == "c1"
    assert await seen(s, "c1") == "latest"
    assert await seen(s, "a3") == ""
    # A new reply under a3 becomes the latest leaf: the cached content follows it.
    await s.append_message(text("a4", "assistant"), "a3")
    assert s.get_context_block("notes").content == ""


async def test_shared_blocks_keep_one_content_and_record_chat_and_message(store):
    shared = StoreContextProvider(store, "global", "facts")
    manager = SessionManager(store).with_branch_memory().with_context("facts", provider=shared)
    manager.create("One", id="one")
    manager.create("Two", id="two")
    one, two = manager.get_session("one"), manager.get_session("two")
    await tree(one)
    await one.replace_context_block("facts", "shared fact", at="b2")
    assert await two.load_context() and two.get_context_block("facts").content == "shared fact"
    assert (await one.load_context(at="c1"))[0].content == "shared fact"
    [write] = shared.history()
    assert (write.session_id, write.message_id, write.origin) == ("one", "b2", "model")


async def test_default_store_block_is_shared_across_branches_as_before(store):
    s = Session(store).for_session("plain").with_context("notes")
    await tree(s)
    await s.replace_context_block("notes", "everywhere", at="b2")
    assert await seen(s, "c1") == "everywhere"
    assert s.block_history("notes")[0].message_id == "b2"


async def test_user_writes_are_recorded_as_the_user(store):
    _, s = branchy(store)
    await tree(s)
    await s.replace_context_block("notes", "typed by hand", at="a2", origin="user")
    [write] = s.block_history("notes")
    assert (write.origin, write.message_id) == ("user", "a2")
    with pytest.raises(ValueError, match="origin"):
        await s.replace_context_block("notes", "x", at="a2", origin="sneaky")


async def test_revert_one_write_restores_what_the_branch_held(store):
    _, s = branchy(store)
    await tree(s)
    await s.replace_context_block("notes", "first", at="a1")
    await s.replace_context_block("notes", "wrong", at="a3")
    wrong = s.block_history("notes")[-1]
    reverted = s.revert_block_write("notes", wrong.seq)
    assert reverted.reverted and reverted.content == "wrong"
    assert await seen(s, "a3") == "first"
    assert [w.reverted for w in s.block_history("notes")] == [False, True]
    with pytest.raises(ValueError, match="reverted already"):
        s.revert_block_write("notes", wrong.seq)
    with pytest.raises(UnknownWriteError):
        s.revert_block_write("notes", 9999)
    with pytest.raises(TypeError):
        s.revert_block_write("notes", "1")


async def test_revert_needs_a_provider_with_history(store):
    s = Session(store).for_session("x").with_context("soul", provider=StaticProvider("hi"))
    assert s.block_history("soul") == []
    with pytest.raises(ReadOnlyBlockError):
        s.revert_block_write("soul", 1)


async def test_fork_copies_the_memory_of_the_path_it_copies(store):
    manager, s = branchy(store)
    await tree(s)
    await s.replace_context_block("notes", "main line", at="a3")
    await s.replace_context_block("notes", "side branch", at="b2")
    main = await manager.fork("chat", "a3", "Main")
    side = await manager.fork("chat", "b2", "Side")
    fm, fs = manager.get_session(main.id), manager.get_session(side.id)
    assert fm.get_context_block("notes").content == "main line"
    assert fs.get_context_block("notes").content == "side branch"
    assert [w.content for w in fm.block_history("notes")] == ["main line"]
    assert [w.content for w in fs.block_history("notes")] == ["side branch"]
    # The copied write sits on the copied message.
    leaf = fm.get_latest_leaf()
    assert fm.block_history("notes")[0].message_id == leaf.id


async def test_compaction_keeps_each_branch_its_memory(store):
    _, s = branchy(store)
    await tree(s)
    await s.replace_context_block("notes", "main", at="a2")
    await s.replace_context_block("notes", "side", at="b2")
    s.add_compaction("summary of the start", "u1", "a2")
    assert [m.id for m in s.get_history("a3")][0] != "u1"  # the overlay applies
    assert await seen(s, "a3") == "main"
    assert await seen(s, "b2") == "side"
    assert await seen(s, "c1") == ""


async def test_deleting_the_writing_message_keeps_the_write_on_its_branch(store):
    _, s = branchy(store)
    await tree(s)
    await s.replace_context_block("notes", "kept", at="a2")
    s.delete_messages(["a2"])
    assert s.block_history("notes")[0].message_id == "u2"
    assert await seen(s, "a3") == "kept"
    assert await seen(s, "b2") == "kept"  # now on b2's path too: its parent wrote it
    assert await seen(s, "c1") == ""


async def test_purge_removes_the_history(store):
    manager, s = branchy(store)
    await tree(s)
    await s.replace_context_block("notes", "gone soon", at="a1")
    manager.purge("chat")
    assert store.rows(BlockWriteRow.select()) == []


async def test_export_import_round_trips_the_writes(store, tmp_path):
    _, s = branchy(store)
    await tree(s)
    await s.replace_context_block("notes", "main", at="a3")
    await s.replace_context_block("notes", "side", at="b2", origin="user")
    await s.replace_context_block("notes", "oops", at="c1")
    s.revert_block_write("notes", s.block_history("notes")[-1].seq)
    doc = export_session(store, "chat")
    assert [w["content"] for w in doc["context"]["block_writes"]] == ["main", "side", "oops"]
    [copy] = import_sessions(store, doc, new_ids=True)  # beside the original, same engine
    with Store(tmp_path / "b.db") as b:  # and into another database under the same id
        [same] = import_sessions(b, doc)
        assert export_session(b, "chat") == doc
        for db, sid in ((b, same.session_id), (store, copy.session_id)):
            s = SessionManager(db).with_branch_memory().with_context("notes").get_session(sid)
            assert await seen(s, "a3") == "main"
            assert await seen(s, "b2") == "side"
            assert await seen(s, "c1") == ""
            assert await seen(s, "u1") == ""
            assert [w.origin for w in s.block_history("notes")] == ["model", "user", "model"]
            assert {w.session_id for w in s.block_history("notes")} == {sid}


async def test_jsonl_entries_carry_the_writes(store):
    _, s = branchy(store)
    await tree(s)
    await s.replace_context_block("notes", "main", at="a3")
    doc = export_session(store, "chat")
    entries = list(document_entries(doc))
    assert [e["content"] for e in entries if e["type"] == "block_write"] == ["main"]
    assert documents_from_entries(entries) == [doc]


async def test_an_export_without_writes_imports_its_blocks_for_every_branch(store, tmp_path):
    with Store(tmp_path / "a.db") as a:
        _, s = branchy(a)
        await tree(s)
        await s.replace_context_block("notes", "old content", at="a1")
        doc = export_session(a, "chat")
    del doc["context"]["block_writes"]  # as a file from before histories
    import_sessions(store, doc)
    s = SessionManager(store).with_branch_memory().with_context("notes").get_session("chat")
    assert await seen(s, "c1") == "old content"
    assert s.block_history("notes")[0].origin == "import"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"origin": "hacker"}, "origin"),
        ({"written_at": "yesterday"}, "written_at"),
        ({"reverted_at": 5}, "reverted_at"),
        ({"content": None}, "content"),
        ({"namespace": "someone-else"}, "does not belong"),
    ],
)
async def test_import_refuses_a_bad_write(store, tmp_path, change, problem):
    with Store(tmp_path / "a.db") as a:
        _, s = branchy(a)
        await tree(s)
        await s.replace_context_block("notes", "x", at="a1")
        doc = export_session(a, "chat")
    doc["context"]["block_writes"][0].update(change)
    with pytest.raises(TransferError, match=problem):
        import_sessions(store, doc)
    assert SessionManager(store).count() == 0


async def test_migration_turns_existing_content_into_a_write_for_every_branch(tmp_path):
    # SQLite only: PostgreSQL databases start at m001's baseline, empty.
    path = tmp_path / "old.db"
    db = SqliteDatabase(str(path))
    db.connect()
    migrate(db, str(path), upto="m007_cjk_and_emoji_search")
    db.execute_sql(
        "INSERT INTO context_blocks (namespace, label, content, updated_at) VALUES "
        "('chat', 'notes', 'remembered before', '2025-01-01T00:00:00+00:00')"
    )
    db.close()
    with Store(path) as store:
        _, s = branchy(store)
        await tree(s)
        assert await seen(s, "b2") == "remembered before"
        assert s.block_history("notes")[0].origin == "before history"


async def test_branch_site_reads_on_the_provider(store):
    provider = StoreContextProvider(store, "chat", "notes", branches=True)
    _, s = branchy(store)
    await tree(s)
    await provider.set_at("here", BranchSite("chat", "a2"))
    assert await provider.get_at(BranchSite("chat", "a3")) == "here"
    assert await provider.get_at(BranchSite("chat", "b2")) == ""
    assert await provider.get() == ""  # no branch: only writes on no message
    await provider.set("base")
    # A write on no message applies to every branch from then on (newest wins).
    assert await provider.get_at(BranchSite("chat", "b2")) == "base"
    assert await provider.get_at(BranchSite("chat", "a3")) == "base"
    with pytest.raises(TypeError):
        await provider.set_at(3, BranchSite("chat", "a2"))
    assert "branches=True" in repr(provider)
