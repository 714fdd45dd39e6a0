"""Any string typed into a search box: never an exception, and a search scoped to one
chat (or one namespace) never returns another's rows — even when the query is built to
break out of the scope (FTS column filters, the other chat's scope token, operators).
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatui import cli
from store import SessionManager, Store, StoreSearchProvider
from store.db import scope_token
from tests.conftest import postgres_schema

VOCAB = [
    "lisbon",
    "flight",
    "flights",
    "coffee",
    "black",
    "pool",
    "connection",
    "running",
    "AND",
    "OR",
    "NOT",
    "NEAR",
    "body",
    "scope",
]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def corpus(request, tmp_path_factory):
    """Three chats sharing words (one deleted) and two search namespaces, on each engine."""
    with contextlib.ExitStack() as stack:
        if request.param == "postgres":
            location = stack.enter_context(postgres_schema())
        else:
            location = str(tmp_path_factory.mktemp("search") / "search.db")
        _fill(location)
        yield location


def _fill(path: str) -> None:
    with Store(path) as store:
        manager = SessionManager(store)

        async def fill() -> None:
            for sid in ("alpha", "beta", "gone"):
                manager.create(sid, id=sid)
                for i, words in enumerate(
                    [
                        "flights to lisbon are cheap",
                        "black coffee AND OR NOT NEAR",
                        f"the connection pool keeps running {sid}",
                        'body : scope : "x"',
                        f"{scope_token('alpha')} {scope_token('beta')} tokens",
                    ]
                ):
                    await manager.append(
                        sid,
                        {
                            "id": f"{sid}-{i}",
                            "role": "user",
                            "parts": [{"type": "text", "text": words}],
                        },
                    )
            for ns in ("alpha/notes", "beta/notes"):
                await StoreSearchProvider(store, ns).set("k", "flights pool coffee " + ns)

        asyncio.run(fill())
        manager.delete("gone")


queries = st.one_of(
    st.text(max_size=60),
    st.lists(
        st.sampled_from(
            VOCAB
            + [
                '"',
                "*",
                "(",
                ")",
                ":",
                "^",
                "-",
                "+",
                "body:",
                "scope:",
                "{scope body}",
                "NEAR(",
                ",",
                "'",
                scope_token("beta"),
                f'"{scope_token("beta")}"',
                f"scope : {scope_token('beta')}",
                "\x00",
                "\u202e",
            ]
        ),
        max_size=8,
    ).map(" ".join),
    st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3).map(lambda w: " OR ".join(w)),
)

FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FUZZ
@given(query=queries)
def test_any_query_stays_in_its_chat(corpus, query):
    with Store(corpus) as store:
        manager = SessionManager(store)
        everywhere = manager.search(query, limit=100, include_deleted=False)
        assert all(h.session_id in ("alpha", "beta") for h in everywhere)  # deleted: hidden
        found = manager.search(query, limit=100)  # SPEC §5: deleted chats still resolve
        assert all(h.deleted == (h.session_id == "gone") for h in found)
        for sid in ("alpha", "beta"):
            session = manager.get_session(sid)
            scoped = session.search(query, limit=100)
            assert {h.session_id for h in scoped} <= {sid}
            assert {h.id for h in scoped} == {h.id for h in everywhere if h.session_id == sid}
            via_manager = manager.search(query, limit=100, session_id=sid)
            assert [h.id for h in via_manager] == [h.id for h in scoped]
        gone = manager.search(query, limit=100, session_id="gone")
        assert {h.session_id for h in gone} <= {"gone"}


@FUZZ
@given(query=queries)
def test_any_query_stays_in_its_namespace(corpus, query):
    with Store(corpus) as store:
        for ns in ("alpha/notes", "beta/notes"):
            hits = StoreSearchProvider(store, ns).find(query)
            assert all(content.endswith(ns) for _, content in hits)
            assert isinstance(asyncio.run(StoreSearchProvider(store, ns).search(query)), str)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=queries)
def test_any_query_in_the_session_search_tool_and_the_cli(corpus, query, capsys):
    with Store(corpus) as store:
        out = asyncio.run(SessionManager(store).tools()["session_search"](query=query))
        assert isinstance(out, str) and not out.startswith("Error:")
    for argv in (
        ["search", "--db", str(corpus), "--", query],
        ["search", "--db", str(corpus), "--session", "alpha", "--json", "--", query],
    ):
        code = cli.main(argv)
        printed, err = capsys.readouterr()
        assert code in (0, 1), err  # found or not found, never a crash or a usage error
        assert "Traceback" not in err
        if "--session" in argv and code == 0:
            import json

            assert {h["session_id"] for h in json.loads(printed)} == {"alpha"}


def test_the_corpus_really_matches_across_chats(corpus):
    """The property tests mean something: unscoped queries do hit both chats."""
    with Store(corpus) as store:
        manager = SessionManager(store)
        live = {"include_deleted": False}
        assert {h.session_id for h in manager.search("lisbon", **live)} == {"alpha", "beta"}
        assert {h.session_id for h in manager.search(scope_token("beta"), **live)} == {
            "alpha",
            "beta",
        }
        # beta's scope token, searched inside alpha, finds alpha's text, not beta's rows
        assert [
            h.id for h in manager.get_session("alpha").search(f"scope : {scope_token('beta')}")
        ] == []
        assert [h.id for h in manager.get_session("alpha").search(scope_token("beta"))] == [
            "alpha-4"
        ]
