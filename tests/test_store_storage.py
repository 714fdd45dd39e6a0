"""Storage: opening, atomic writes, query counts, lossless rows, ranking (SPEC 1–3, 5)."""

from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import Message, Session, SessionManager, Store
from store import storage as storage_module
from tests.engine_helpers import is_postgres, sql

PARTS = [
    {"type": "text", "text": "hello"},
    {"type": "reasoning", "text": "thinking"},
    {"type": "tool-call", "tool_call_id": "c1", "tool_name": "grep", "input": {"q": [1, None]}},
    {
        "type": "tool-result",
        "tool_call_id": "c1",
        "tool_name": "grep",
        "output": "x",
        "is_error": True,
    },
    {"type": "file", "media_type": "image/png", "data": "iVBORw0KGgo=", "filename": "a.png"},
    {"type": "made-up", "anything": {"nested": [True, 1.5]}},
]


def msg(mid, text, role="user"):
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": text}]}


def test_memory_store_and_pragmas(tmp_path):
    with Store(":memory:") as mem:
        assert mem.integrity_check() == []
    with Store(tmp_path / "p.db", busy_timeout=2.5) as db:
        assert db.query("PRAGMA busy_timeout")[0][0] == 2500
        assert db.query("PRAGMA foreign_keys")[0][0] == 1
    with pytest.raises(ValueError):
        Store(":memory:", max_row_bytes=10)


async def test_every_part_shape_round_trips_through_the_store(store):
    s = Session(store).for_session("parts")
    when = datetime(2026, 3, 4, 5, 6, 7, 890, tzinfo=UTC)
    original = Message(
        "m1",
        "assistant",
        [dict(p) for p in PARTS],
        created_at=when,
        metadata={"k": {"v": [1]}},
        from_agent_id="agent-1",
        delivered_to_session_id="other",
        token_usage={"input": 3, "output": 4, "cost": 0.01},
    )
    returned = await s.append_message(original)
    stored = s.get_message("m1")
    assert stored == returned == original
    assert s.get_history() == [original] and s.get_tree() == [original]
    returned.parts[0]["text"] = "mutated"  # the returned copy shares nothing with the row
    assert s.get_message("m1").parts[0]["text"] == "hello"
    assert original.parts[0]["text"] == "hello"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=20),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
    max_leaves=6,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    parts=st.lists(
        st.fixed_dictionaries(
            {"type": st.text(max_size=10)},
            optional={"text": st.text(max_size=50), "output": json_values, "input": json_values},
        ),
        max_size=4,
    ),
    role=st.sampled_from(["user", "assistant", "tool", "system"]),
    metadata=st.dictionaries(st.text(max_size=5), json_values, max_size=2),
)
async def test_stored_messages_read_back_equal(store, parts, role, metadata):
    s = Session(store).for_session("prop")
    s.clear_messages()
    m = Message("p", role, parts, created_at=datetime(2026, 1, 1, tzinfo=UTC), metadata=metadata)
    await s.append_message(m)
    assert s.get_message("p") == m
    assert s.get_history() == [m]


def count_queries(store):
    """The statements `store` runs from now on (raw and built), on either engine;
    `stop_counting(store)` ends it."""
    statements = []
    real_execute, real_sql = store.execute, store.db.execute_sql

    def execute(sql, params=()):
        statements.append(sql)
        return real_execute(sql, params)

    def execute_sql(sql, params=None, *args, **kwargs):
        statements.append(sql)
        return real_sql(sql, params, *args, **kwargs)

    store.db.execute_sql = execute_sql
    if store.engine_name != "postgres":  # there raw statements go through execute_sql too
        store.execute = execute
    return statements


def stop_counting(store):
    del store.db.execute_sql
    store.__dict__.pop("execute", None)


async def test_history_loads_in_a_few_queries_not_one_a_message(store):
    s = Session(store).for_session("deep")
    for i in range(300):
        await s.append_message(msg(f"m{i}", f"message {i}"))
    s.add_compaction("summary", "m10", "m20")
    counts = {}
    for leaf in ("m4", "m299"):
        statements = count_queries(store)
        history = s.get_history(leaf)
        stop_counting(store)
        counts[leaf] = len(statements)
        assert history[-1].id == leaf
    # The path in windows of rows doubling in size (256, 512…), never a statement a
    # message: one window for m4, two for m299; then the overlays.
    assert (counts["m4"], counts["m299"]) == (2, 3)
    statements = count_queries(store)
    assert len(s.get_history()) == 300 - 11 + 1  # latest leaf: one more query
    assert s.get_path_length("m299") == 300
    assert len(s.get_tree()) == 300
    stop_counting(store)
    assert 1 <= len(statements) <= 7  # latest leaf, 2 + 2 windows, overlays, tree


async def test_listing_is_one_query(store):
    manager = SessionManager(store)
    for i in range(30):
        manager.create(f"chat {i}")
    statements = count_queries(store)
    assert len(manager.list()) == 30
    stop_counting(store)
    assert len(statements) == 1


async def test_append_and_its_index_row_are_one_transaction(store, monkeypatch):
    s = Session(store).for_session("atomic")
    await s.append_message(msg("a", "first"))

    def broken(message):
        raise RuntimeError("disk full while indexing")

    monkeypatch.setattr(storage_module, "index_body", broken)
    with pytest.raises(RuntimeError):
        await s.append_message(msg("b", "second"))
    monkeypatch.undo()
    assert s.get_message("b") is None
    assert [m.id for m in s.get_history()] == ["a"]
    assert store.integrity_check() == []


async def test_a_failed_fork_leaves_nothing(store, monkeypatch):
    manager = SessionManager(store)
    s = manager.create("orig")
    await manager.append_all(s.id, [msg("q", "question"), msg("a", "answer", "assistant")])

    def broken(*args):
        raise RuntimeError("interrupted")

    monkeypatch.setattr("store.manager.copy_namespaces", broken)
    with pytest.raises(RuntimeError):
        await manager.fork(s.id, "a", "fork")
    assert [x.id for x in manager.list()] == [s.id]
    assert store.query("SELECT count(*) FROM messages")[0][0] == 2
    assert store.integrity_check() == []


async def test_fork_keeps_overlays_on_the_path(store):
    manager = SessionManager(store)
    s = manager.create("orig")
    await manager.append_all(s.id, [msg(f"m{i}", f"text {i}") for i in range(5)])
    manager.get_session(s.id).add_compaction("summary of 1-2", "m1", "m2")
    f = await manager.fork(s.id, "m3", "fork")
    history = manager.get_history(f.id)
    assert [m.text for m in history] == ["text 0", "summary of 1-2", "text 3"]
    assert manager.get_message_count(f.id) == 4


async def test_manager_delegates_and_bumps_updated_at(store):
    manager = SessionManager(store)
    s = manager.create("chat")
    stamps = [manager.get(s.id).updated_at]
    await manager.append_all(s.id, [msg("a", "one"), msg("b", "two", "assistant")])
    stamps.append(manager.get(s.id).updated_at)
    await manager.upsert(s.id, msg("b", "TWO", "assistant"))
    stamps.append(manager.get(s.id).updated_at)
    manager.delete_messages(s.id, ["b"])
    stamps.append(manager.get(s.id).updated_at)
    assert [m.id for m in manager.get_history(s.id)] == ["a"]
    manager.clear_messages(s.id)
    stamps.append(manager.get(s.id).updated_at)
    assert manager.get_message_count(s.id) == 0
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)


async def test_search_ranks_better_matches_first(store):
    s = Session(store).for_session("rank")
    await s.append_message(
        msg(
            "weak",
            "a long message that mentions kiwi once among many "
            "other words about fruit and markets and weather",
        )
    )
    await s.append_message(msg("strong", "kiwi kiwi kiwi"))
    await s.append_message(msg("none", "nothing here"))
    hits = s.search("kiwi")
    assert [h.id for h in hits] == ["strong", "weak"]
    assert hits[0].rank <= hits[1].rank
    assert [h.id for h in s.search('"mentions kiwi"')] == ["weak"]  # phrases work
    assert {h.id for h in s.search("kiw*")} == {"strong", "weak"}  # and prefixes
    assert {h.id for h in s.search("kiwi OR nothing")} == {"strong", "weak", "none"}


async def test_row_limit_applies_to_updates_too(tmp_path):
    with Store(tmp_path / "small.db", max_row_bytes=4096) as db:
        s = Session(db).for_session("s")
        await s.append_message(msg("t", "small"))
        s.update_message(
            {
                "id": "t",
                "role": "tool",
                "parts": [
                    {
                        "type": "tool-result",
                        "tool_call_id": "c",
                        "tool_name": "cat",
                        "output": "y" * 20_000,
                    }
                ],
            }
        )
        stored = s.get_message("t")
        assert len(stored.to_json().encode()) <= 4096 and stored.metadata["shrunk"] is True


async def test_a_sessions_index_rows_are_one_rowid_range(store):
    from store.message_search import scope_number, scope_range

    manager = SessionManager(store)
    a, b = manager.create("a"), manager.create("b")
    for i in range(3):  # interleaved appends
        await manager.append(a.id, msg(f"a{i}", f"banana {i}"))
        await manager.append(b.id, msg(f"b{i}", f"banana {i}"))
    for info in (a, b):
        low, high = scope_range(scope_number(store, info.id))
        rowids = sql(
            store,
            "SELECT rowid FROM messages_fts WHERE "
            + ("tsv @@ 'banana'::tsquery" if is_postgres(store) else "messages_fts MATCH 'banana'")
            + " AND rowid >= ? AND rowid < ?",
            (low, high),
        )
        assert len(rowids) == 3
        assert [h.session_id for h in manager.search("banana", session_id=info.id)] == [info.id] * 3
    assert len(manager.search("banana")) == 6
    # a row filed under the wrong session is reported
    store.execute(
        "UPDATE messages_fts SET rowid = rowid + (1 << 40) WHERE rowid = "
        "(SELECT max(rowid) FROM messages_fts)"
    )
    assert store.integrity_check() != []


async def test_search_in_an_unknown_or_recreated_session(store):
    manager = SessionManager(store)
    assert manager.search("apple", session_id="never") == []
    s = manager.create("chat", id="same-id")
    await manager.append(s.id, msg("a", "apple pie"))
    manager.purge(s.id)
    assert manager.search("apple") == []
    again = manager.create("chat again", id="same-id")
    await manager.append(again.id, msg("a", "apple crumble"))
    assert [h.content for h in manager.search("apple", session_id="same-id")] == ["apple crumble"]
    assert store.integrity_check() == []


def test_session_snippets_keep_matches_in_a_window():
    from store.message_search import snippet as _snippet
    from store.message_search import unmark

    words = [f"w{i}" for i in range(40)]
    words[20] = "\x01kiwi\x02"
    text, spans = unmark(_snippet(" ".join(words)))
    assert text.startswith("…w17 w18 w19 kiwi w21") and text.endswith("…")
    assert len(text.strip("…").split()) == 12
    assert [text[a:b] for a, b in spans] == ["kiwi"]
    assert unmark(_snippet("\x01kiwi\x02 pie")) == ("kiwi pie", ((0, 4),))
    long_phrase = " ".join(["\x01start"] + ["x"] * 20 + ["end\x02"])
    text, spans = unmark(_snippet(long_phrase))
    assert len(spans) == 1 and text[spans[0][0] :].startswith("start")  # cut, still closed


async def test_session_search_ignores_the_mark_characters_in_text(store):
    s = Session(store).for_session("marks")
    await s.append_message(msg("a", "odd \x01 kiwi \x02 text"))
    (hit,) = s.search("kiwi")
    assert [hit.snippet[a:b] for a, b in hit.matches] == ["kiwi"]


async def test_search_results_give_the_text_as_written(store):
    s = Session(store).for_session("plain")
    await s.append_message(msg("a", "see [note] about kiwi fruit"))
    await s.append_message(msg("b", "kiwi"))
    manager = SessionManager(store)
    for hits in (s.search("kiwi"), manager.search("kiwi")):
        by_id = {h.id: h for h in hits}
        assert by_id["a"].snippet == "see [note] about kiwi fruit"  # no marks added
        assert [by_id["a"].snippet[x:y] for x, y in by_id["a"].matches] == ["kiwi"]
        assert by_id["b"].snippet == "kiwi" and by_id["b"].matches == ((0, 4),)


async def test_session_search_tool_gives_the_model_the_text_as_written(store):
    from store.tools import session_search_tool

    s = Session(store).for_session("tool")
    await s.append_message(msg("a", "the kiwi harvest"))
    text = await session_search_tool(store).fn(query="kiwi")
    assert "the kiwi harvest" in text and "[kiwi]" not in text
