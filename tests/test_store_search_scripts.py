"""Search in every script (issue 13): CJK words inside sentences, emoji, and
Latin stemming/phrases unchanged; the text given back is the text written."""

from __future__ import annotations

import pytest

from store import Session, SessionManager, Store
from store.search import Term, match_expression, parse_query, tsquery_expression
from store.text_prep import SEPARATOR, prepare, query_tokens, restore, tokens


def msg(mid, text, role="user"):
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": text}]}


CHATS = {
    "zh-1": "这个组件很好用，我们明天再讨论。",
    "zh-2": "请把函数写得短一点",
    "zh-3": "组织和部件是两个词",  # 组 and 件 both present, never adjacent
    "ja-1": "私は東京に住んでいます",
    "emoji": "Party time 🎉 tonight",
    "en-1": "The connection was dropped while connecting",
    "en-2": "a kiwi pie for dessert",
    "en-3": "pie made of kiwi",
}


@pytest.fixture
async def corpus(store):
    session = Session(store).for_session("scripts")
    for mid, text in CHATS.items():
        await session.append_message(msg(mid, text))
    return session


def ids(hits):
    return sorted(h.id for h in hits)


async def test_a_two_character_cjk_word_inside_a_sentence_is_found(corpus, store):
    manager = SessionManager(store)
    for search in (corpus.search, manager.search):
        assert ids(search("组件")) == ["zh-1"]  # not zh-3: the characters must be adjacent
        assert ids(search("函数")) == ["zh-2"]
        assert ids(search("東京")) == ["ja-1"]
        assert ids(search("讨论")) == ["zh-1"]  # a word inside a longer run


async def test_an_emoji_is_found(corpus):
    (hit,) = corpus.search("🎉")
    assert hit.id == "emoji"
    assert hit.snippet == "Party time 🎉 tonight"  # the text as written
    assert [hit.snippet[a:b] for a, b in hit.matches] == ["🎉"]


async def test_latin_stemming_phrases_prefixes_and_or_still_work(corpus):
    assert ids(corpus.search("connect")) == ["en-1"]
    assert ids(corpus.search('"kiwi pie"')) == ["en-2"]
    assert ids(corpus.search("kiw*")) == ["en-2", "en-3"]
    assert ids(corpus.search("dessert OR 组件")) == ["en-2", "zh-1"]


async def test_cjk_snippets_read_as_written(corpus, store):
    for hits in (corpus.search("组件"), SessionManager(store).search("组件")):
        (hit,) = hits
        assert SEPARATOR not in hit.snippet and "这个组件很好用" in hit.snippet
        assert "".join(hit.snippet[a:b] for a, b in hit.matches) == "组件"


def test_preparation_round_trips_and_query_words_become_phrases():
    for text in CHATS.values():
        assert restore(prepare(text)) == text
    assert restore(prepare(f"x{SEPARATOR}y")) == "xy"  # a separator in text is dropped
    assert match_expression("组件") == '"组 件"'
    assert match_expression("🎉") == '"emoji1f389"'
    assert match_expression('"東京 に"') == '"東 京 に"'
    for odd in ("组件*", "🎉🎉", '"🎉', "OR 组", "件 OR", "\u2063", "emoji"):
        match_expression(odd)  # never raises; the store never raises either


def test_one_parse_two_renderings():
    query = '"big cats" OR dog* 组件 🎉 it\'s NOT (Café OR e-mail)'
    parsed = parse_query(query)
    assert match_expression(query) == (
        '("big cat" OR ("dog"* AND "组 件" AND "emoji1f389" AND ("it s" NOT ("cafe" OR "e mail"))))'
    )
    assert tsquery_expression(parsed) == (
        "(('big' <-> 'cat') | ('dog':* & ('组' <-> '件') & 'emoji1f389' & "
        "(('it' <-> 's') & !('cafe' | ('e' <-> 'mail')))))"
    )
    # A lexeme is always quoted, quotes and backslashes escaped: no operator survives.
    assert tsquery_expression(Term(("a'b\\",))) == "'a''b\\\\'"
    assert parse_query("") is parse_query(" !!! * ") is parse_query(None) is None


def test_index_terms_are_folded_and_stemmed_once_for_both_engines():
    assert tokens("Café CONNECTIONS running naïve ﬁle 组件🎉") == [
        "cafe",
        "connect",
        "run",
        "naiv",
        "file",
        "组",
        "件",
        "emoji1f389",
    ]
    # A prefix is folded, not stemmed: it matches the terms that begin with it.
    assert query_tokens("Deploym", prefix=True) == ["deploym"]
    assert query_tokens("Deploying") == ["deploy"]


async def test_odd_cjk_and_emoji_queries_never_raise(corpus):
    for odd in ("组件*", "🎉🎉", '"🎉', "OR 组", "件 OR", "\u2063", "👍🏽", "(组", "组件 NEAR"):
        corpus.search(odd)
    assert ids(corpus.search("(组件")) == ["zh-1"]  # searched as its plain words


async def test_an_old_index_is_rebuilt_by_the_migrations(tmp_path):
    path = tmp_path / "old.db"
    with Store(path) as store:
        await Session(store).for_session("s").append_message(msg("a", CHATS["zh-1"] + " 🎉 Café"))
        # What a database indexed by earlier code holds: the raw text, and no m007/m011.
        store.execute("UPDATE messages_fts SET body = ?", (CHATS["zh-1"] + " 🎉 Café",))
        store.execute(
            "DELETE FROM schema_migrations WHERE name IN "
            "('m007_cjk_and_emoji_search', 'm011_one_tokenisation')"
        )
        assert Session(store).for_session("s").search("组件") == []
    with Store(path) as store:
        session = Session(store).for_session("s")
        assert ids(session.search("组件")) == ids(session.search("🎉")) == ["a"]
        assert ids(session.search("cafe")) == ["a"]
        assert store.integrity_check() == []
