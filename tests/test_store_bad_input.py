"""Issue 2's bad-input list, on every entry point: a clear error, and nothing changed.

(Unknown parent, read-only and over-budget writes, unknown blocks, unknown
session ids and foreign or newer files have their tests beside the feature,
in test_tree, test_context, test_tools, test_manager and test_migrations.)
"""

import pytest

from store import (
    Session,
    SessionManager,
    StoreSearchProvider,
    UnknownMessageError,
)
from store.providers.history import HistorySearchProvider
from tests.engine_helpers import integrity_error

NASTY_QUERIES = [
    '"',
    'say "hi',
    "AND (",
    "(",
    ")",
    "*",
    "**",
    "kiwi*",
    "NEAR(",
    "NEAR(a b",
    "NOT",
    "OR",
    "a OR",
    "AND",
    "-",
    "^kiwi",
    "col:kiwi",
    "scope:x",
    "body : kiwi",
    "'",
    ";",
    "\\",
    "\x00",
    "🎉",
    "kiwi AND (",
    "",
    "   ",
    "+",
    "{a b}",
]


def msg(mid, text, role="user"):
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": text}]}


def snapshot(store):
    return [
        store.query(f"SELECT * FROM {t} ORDER BY 1")
        for t in ("messages", "sessions", "search_entries", "compactions")
    ]


@pytest.fixture
async def corpus(store):
    manager = SessionManager(store)
    chat = manager.create("chat")
    await manager.append(chat.id, msg("m", 'kiwi AND (NEAR the "quoted" * thing'))
    kb = StoreSearchProvider(store, "kb")
    await kb.set("k", "kiwi NEAR( notes")
    return manager, chat, kb


@pytest.mark.parametrize("query", NASTY_QUERIES)
async def test_search_syntax_never_raises_anywhere(store, corpus, query):
    manager, chat, kb = corpus
    before = snapshot(store)
    assert isinstance(manager.search(query), list)
    assert isinstance(manager.search(query, session_id=chat.id), list)
    assert isinstance(manager.get_session(chat.id).search(query), list)
    assert isinstance(kb.find(query), list)
    assert isinstance(await kb.search(query), str)
    assert isinstance(await HistorySearchProvider(store).search(query), str)
    out = await manager.tools()["session_search"](query=query)
    assert isinstance(out, str) and not out.startswith("Error:")
    assert snapshot(store) == before


async def test_operators_are_searched_as_words(store, corpus):
    manager, chat, kb = corpus
    assert [h.id for h in manager.search("AND (")] == ["m"]
    assert [h.id for h in manager.search('"quoted')] == ["m"]
    assert [k for k, _ in kb.find("NEAR(")] == ["k"]


async def test_both_senders_refused_on_update_and_in_sql(store):
    s = Session(store).for_session("s")
    await s.append_message({**msg("a", "hi"), "from_user_id": "u1"})
    before = snapshot(store)
    with pytest.raises(ValueError, match="one sender"):
        s.update_message({**msg("a", "hi"), "from_user_id": "u1", "from_agent_id": "g1"})
    with pytest.raises(integrity_error(store), match="(?i)check"):
        store.execute("UPDATE messages SET from_agent_id = 'g1' WHERE id = 'a'")
    assert snapshot(store) == before
    assert s.get_message("a").from_user_id == "u1" and s.get_message("a").from_agent_id is None


@pytest.mark.parametrize(
    "parts",
    [
        [{"type": "text", "text": {1, 2}}],
        [{"type": "tool-call", "tool_call_id": "c", "tool_name": "t", "input": object()}],
        [{"type": "tool-result", "tool_call_id": "c", "tool_name": "t", "output": float("nan")}],
        [{"type": "text", "text": b"bytes"}],
    ],
)
async def test_unserialisable_parts_refused_everywhere(store, parts):
    manager = SessionManager(store)
    chat = manager.create("chat")
    await manager.append(chat.id, msg("a", "original"))
    bad = {"id": "a", "role": "user", "parts": parts}
    before = snapshot(store)
    with pytest.raises(ValueError, match="not JSON-serialisable|must be a string"):
        manager.get_session(chat.id).update_message(bad)
    with pytest.raises(ValueError, match="not JSON-serialisable|must be a string"):
        await manager.upsert(chat.id, bad)
    with pytest.raises(ValueError, match="not JSON-serialisable|must be a string"):
        await manager.append_all(chat.id, [msg("ok", "fine"), {**bad, "id": "b"}])
    with pytest.raises(ValueError, match="not JSON-serialisable|must be a string"):
        await manager.append(chat.id, {**bad, "id": "c"})
    assert snapshot(store) == before


async def test_update_or_history_of_unknown_message_changes_nothing(store):
    s = Session(store).for_session("s")
    await s.append_message(msg("a", "hi"))
    before = snapshot(store)
    with pytest.raises(UnknownMessageError, match="ghost"):
        s.update_message(msg("ghost", "x"))
    with pytest.raises(UnknownMessageError):
        s.get_history("ghost")
    with pytest.raises(UnknownMessageError):
        s.latest_leaf_under("ghost")
    s.delete_messages(["ghost"])  # deleting what is not there is a no-op
    assert snapshot(store) == before


@pytest.mark.parametrize("parent", [123, 4.5, ["a"], object()])
async def test_parent_of_the_wrong_type_is_refused(store, parent):
    s = Session(store).for_session("s")
    await s.append_message(msg("a", "hi"))
    before = snapshot(store)
    with pytest.raises(TypeError):
        await s.append_message(msg("b", "x"), parent)
    assert snapshot(store) == before
