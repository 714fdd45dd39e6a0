"""Session messages: the tree, branches, history, updates, deletes, search (SPEC 3)."""

import pytest

from store import (
    LATEST,
    Message,
    Session,
    Store,
    UnknownMessageError,
    UnknownParentError,
)
from tests.engine_helpers import integrity_error


def msg(mid, text, role="user"):
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": text}]}


@pytest.fixture
def session(store):
    return Session.create(store).for_session("chat-1")


async def test_append_chains_to_latest_leaf(session):
    await session.append_message(msg("a", "hi"))
    await session.append_message(msg("b", "hello", "assistant"))
    stored = await session.append_message(msg("c", "how are you"))
    assert stored.parent_id == "b"
    assert [m.id for m in session.get_history()] == ["a", "b", "c"]
    assert session.get_path_length() == 3
    assert session.get_latest_leaf().id == "c"


async def test_append_returns_message_and_accepts_dataclass(session):
    m = Message("x", "user", [{"type": "text", "text": "hi"}])
    stored = await session.append_message(m)
    assert isinstance(stored, Message) and stored.text == "hi" and stored.created_at


async def test_branching_keeps_both_answers(session):
    await session.append_message(msg("q", "question"))
    await session.append_message(msg("a1", "first answer", "assistant"))
    await session.append_message(msg("a2", "second answer", "assistant"), "q")
    assert [m.id for m in session.get_branches("q")] == ["a1", "a2"]
    assert [m.id for m in session.get_history()] == ["q", "a2"]
    assert [m.id for m in session.get_history("a1")] == ["q", "a1"]
    assert session.get_branch_position("a1") == (1, 2)
    assert session.get_branch_position("a2") == (2, 2)


async def test_none_parent_makes_a_new_root(session):
    await session.append_message(msg("a", "one"))
    await session.append_message(msg("r", "two"), None)
    assert session.get_message("r").parent_id is None
    assert [m.id for m in session.get_history()] == ["r"]


async def test_appending_existing_id_is_a_noop(session):
    await session.append_message(msg("a", "one"))
    again = await session.append_message(msg("a", "changed"))
    assert again.text == "one"
    assert session.get_path_length() == 1


async def test_unknown_parent_is_refused_and_nothing_written(session):
    await session.append_message(msg("a", "one"))
    with pytest.raises(UnknownParentError):
        await session.append_message(msg("b", "two"), "nope")
    assert session.get_message("b") is None


async def test_both_senders_refused_and_nothing_written(session):
    with pytest.raises(ValueError):
        await session.append_message({**msg("a", "x"), "from_user_id": "u", "from_agent_id": "g"})
    assert session.get_latest_leaf() is None


async def test_unserialisable_parts_refused(session):
    with pytest.raises(ValueError):
        await session.append_message(
            {"id": "a", "role": "user", "parts": [{"type": "text", "text": {1, 2}}]}
        )
    assert session.get_latest_leaf() is None


async def test_database_check_backs_up_one_sender(store):

    with pytest.raises(integrity_error(store)):
        store.execute(
            "INSERT INTO messages (id, session_id, role, content, created_at, from_user_id, "
            "from_agent_id) VALUES ('x', 's', 'user', '{}', '2026', 'u', 'a')"
        )


async def test_sessions_never_see_each_other(store):
    one = Session(store).for_session("one")
    two = Session(store).for_session("two")
    await one.append_message(msg("a", "alpha"))
    await two.append_message(msg("a", "beta"))  # same id, other session: fine
    assert one.get_message("a").text == "alpha"
    assert two.get_message("a").text == "beta"
    await two.append_message(msg("b", "beta two"))
    assert one.get_latest_leaf().id == "a"
    assert [r.id for r in one.search("beta")] == []


async def test_default_session_id(store):
    s = Session(store)
    await s.append_message(msg("a", "x"))
    assert s.session_id == "default"


async def test_update_message_replaces_content_and_search(session):
    await session.append_message(msg("a", "the cat sat"))
    session.update_message(msg("a", "the dog ran"))
    assert session.get_message("a").text == "the dog ran"
    assert session.search("cat") == []
    assert [r.id for r in session.search("dog")] == ["a"]


async def test_update_unknown_message_raises(session):
    with pytest.raises(UnknownMessageError):
        session.update_message(msg("zzz", "x"))


async def test_delete_reattaches_children(session):
    await session.append_message(msg("a", "one"))
    await session.append_message(msg("b", "two", "assistant"))
    await session.append_message(msg("c", "three"))
    session.delete_messages(["b"])
    assert [m.id for m in session.get_history()] == ["a", "c"]
    assert session.search("two") == []


async def test_clear_removes_everything_of_the_session_only(store):
    s1 = Session(store).for_session("s1")
    s2 = Session(store).for_session("s2")
    await s1.append_message(msg("a", "apple"))
    await s2.append_message(msg("a", "apple"))
    s1.add_compaction("sum", "a", "a")
    s1.clear_messages()
    assert s1.get_latest_leaf() is None and s1.get_compactions() == []
    assert [r.session_id for r in s2.search("apple")] == ["s2"]
    assert store.integrity_check() == []


async def test_history_of_unknown_leaf_raises(session):
    with pytest.raises(UnknownMessageError):
        session.get_history("missing")


async def test_empty_session(session):
    assert session.get_history() == []
    assert session.get_latest_leaf() is None
    assert session.get_path_length() == 0


async def test_latest_means_most_recently_appended(session):
    await session.append_message(msg("q", "q"))
    await session.append_message(msg("a1", "a1", "assistant"))
    await session.append_message(msg("a2", "a2", "assistant"), "q")
    await session.append_message(msg("f", "follow", "user"), "a1")
    assert session.get_latest_leaf().id == "f"
    assert session.latest_leaf_under("q") == "f"
    assert session.latest_leaf_under("a2") == "a2"


async def test_get_tree_returns_every_branch(session):
    await session.append_message(msg("q", "q"))
    await session.append_message(msg("a1", "a1", "assistant"))
    await session.append_message(msg("a2", "a2", "assistant"), "q")
    tree = session.get_tree()
    assert [(m.id, m.parent_id) for m in tree] == [("q", None), ("a1", "q"), ("a2", "q")]


@pytest.mark.parametrize(
    "query",
    [
        '"',
        "AND (",
        "*",
        "NEAR(",
        "",
        "   ",
        "OR",
        "a:b",
        "\x00",
        "🎉",
        "(((",
        "NOT",
        '"unterminated',
    ],
)
async def test_search_never_raises(session, query):
    await session.append_message(msg("a", "AND the NEAR thing"))
    assert isinstance(session.search(query), list)


async def test_search_stems_and_ranks(session):
    await session.append_message(msg("a", "the connection failed while running tests"))
    await session.append_message(msg("b", "nothing to see"))
    hits = session.search("connecting")
    assert [h.id for h in hits] == ["a"]
    assert session.search("runs")[0].id == "a"
    assert hits[0].session_id == "chat-1"
    assert "connection" in [hits[0].snippet[a:b] for a, b in hits[0].matches]
    assert hits[0].content == "the connection failed while running tests"


async def test_search_finds_all_branches(session):
    await session.append_message(msg("q", "question"))
    await session.append_message(msg("a1", "old giraffe answer", "assistant"))
    await session.append_message(msg("a2", "new answer", "assistant"), "q")
    assert [h.id for h in session.search("giraffe")] == ["a1"]


async def test_search_limit(session):
    for i in range(5):
        await session.append_message(msg(f"m{i}", "banana"))
    assert len(session.search("banana", limit=3)) == 3


async def test_latest_sentinel_is_exported():
    assert repr(LATEST) == "LATEST"


async def test_row_size_enforced_never_rejected(tmp_path):
    with Store(tmp_path / "small.db", max_row_bytes=4096) as store:
        s = Session(store).for_session("s")
        big = {
            "id": "t",
            "role": "tool",
            "parts": [
                {
                    "type": "tool-result",
                    "tool_call_id": "c",
                    "tool_name": "grep",
                    "output": "x" * 50_000,
                }
            ],
        }
        stored = await s.append_message(big)
        assert len(stored.to_json().encode()) <= 4096
        assert "re-run the tool" in str(s.get_message("t").parts[0]["output"]).lower()


async def test_file_persists_across_reopen(tmp_path):
    path = tmp_path / "p.db"
    with Store(path) as store:
        await Session(store).for_session("s").append_message(msg("a", "persist me"))
    with Store(path) as store:
        s = Session(store).for_session("s")
        assert s.get_message("a").text == "persist me"
        assert s.search("persist")[0].id == "a"


def test_a_tree_row_shows_a_replys_words_not_its_markdown():
    """A reply's row read "## Plan **Sure!** Run `pip` … ```python": the marks its view
    never shows are left out of the row; a star or underscore that is not a mark stays."""
    from widgets.message_tree import preview

    def row(text: str) -> str:
        return preview(Message(id="r", role="assistant", parts=[{"type": "text", "text": text}]))

    reply = (
        "## Plan\n\n**Sure!** Run `pip install x` and read [the docs](https://x.org).\n"
        "```python\nprint(1)\n```"
    )
    assert row(reply) == "Plan Sure! Run pip install x and read the docs. print(1)"
    assert row("x**2 + y**2 and 2*3*4 in snake_case_names") == (
        "x**2 + y**2 and 2*3*4 in snake_case_names"
    )
    assert row("*stressed* and _this_ too") == "stressed and this too"
