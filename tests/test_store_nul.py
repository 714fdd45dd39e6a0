"""NUL (U+0000) in any string: stored and read back exactly, on both engines.

PostgreSQL's text cannot hold NUL; SQLite's can. A model's reply, a memory it
writes, a chat title or an imported file may carry one, so nothing may be
refused or lost: the PostgreSQL connection escapes it (`store.engines.pg_text`)
and both engines give identical reads, exports and copies. U+FFFF, the escape
character itself, must survive too, next to NUL and to the digits of the codes.
"""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatui.cli import main
from store import (
    SessionManager,
    Store,
    StoreContextProvider,
    StorePromptCache,
    StoreSearchProvider,
    StoreSessionProvider,
    StoreSkillProvider,
    export_session,
    import_sessions,
    load_export,
)
from store.engines.pg_text import escape, unescape

from .test_db_copy import export_all, table_rows

# The escape's own characters are over-represented: NUL, U+FFFF and the code digits.
_AWKWARD = st.sampled_from(["\x00", "\uffff", "0", "1", "/"])
_ANY = st.characters(codec="utf-8", exclude_categories=["Cs"])
nul_texts = st.text(_AWKWARD | _ANY, max_size=12)
nul_ids = st.text(st.sampled_from(["\x00", "\uffff", "0", "1", "a", "-"]), min_size=1, max_size=8)
_unique = itertools.count()


def msg(mid: str, text: str, role: str = "user") -> dict:
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": text}]}


@given(text=nul_texts)
def test_the_escape_is_reversible_and_leaves_plain_text_alone(text):
    assert unescape(escape(text)) == text
    assert "\x00" not in escape(text)
    if "\x00" not in text and "\uffff" not in text:
        assert escape(text) is text


@given(a=nul_texts, b=nul_texts)
def test_the_escape_keeps_prefixes_and_equality(a, b):
    # Namespace ranges and unique keys compare escaped strings.
    assert (escape(a) == escape(b)) == (a == b)
    assert escape(a + b).startswith(escape(a))


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(name=nul_texts, sid=nul_ids, mid=nul_ids, text=nul_texts, extra=nul_texts)
async def test_every_field_round_trips(store, name, sid, mid, text, extra):
    manager = SessionManager(store)
    # "s<n>-" is prefix-free (a digit is never "-"): "21"+"0" and "2"+"10" collided.
    session_id = f"s{next(_unique)}-{sid}"
    info = manager.create(name, id=session_id, model=extra, metadata={extra: text})
    provider = StoreSessionProvider(store, session_id)
    first = provider.append_message(msg(mid, text), None)
    reply = provider.append_message(msg(mid + "\x00r", extra, "assistant"), mid)
    provider.add_compaction(text + extra, mid, reply.id)
    await StoreContextProvider(store, session_id, "memory").set(text)
    await StoreSearchProvider(store, f"{session_id}/notes").set("k" + extra, text)
    await StoreSkillProvider(store, session_id).set("k" + extra, text, extra)
    await StorePromptCache(store, session_id).set(text + "\x00")
    manager.set_status(session_id, "idle", extra)

    again = manager.get(session_id)
    assert again is not None and again.id == info.id == session_id
    assert (again.name, again.model, again.metadata) == (name, extra, {extra: text})
    assert again.status_detail == extra
    history = provider.get_history(reply.id)
    assert [(m.id, m.parent_id, m.text) for m in history] == [
        (mid, None, text),
        (mid + "\x00r", mid, extra),
    ]
    assert first.text == text
    assert [c.summary for c in provider.get_compactions()] == [text + extra]
    assert await StoreContextProvider(store, session_id, "memory").get() == text
    assert StoreSearchProvider(store, f"{session_id}/notes").entries() == [("k" + extra, text)]
    assert await StoreSkillProvider(store, session_id).load("k" + extra) == text
    assert await StorePromptCache(store, session_id).get() == text + "\x00"
    document = export_session(store, session_id)
    assert document["session"]["name"] == name
    assert [m["id"] for m in document["messages"]] == [mid, mid + "\x00r"]
    # Searching for any of it never raises.
    for query in (text, name, "\x00", "\uffff0"):
        manager.search(query)
        provider.search_messages(query)
    assert store.integrity_check() == []


async def populate_with_nuls(store: Store) -> str:
    """A chat whose every kind of string holds NUL and U+FFFF; its id."""
    manager = SessionManager(store)
    project = manager.create_project("pro\x00ject")
    # an agent's name refuses control characters; its soul and description do not
    agent = manager.create_agent("Agent", soul="so\x00ul", description="de\uffff0sc")
    chat = manager.create(
        "ti\x00tle \uffff1", id="chat\x00one", project_id=project.id, agent_id=agent.id
    )
    provider = StoreSessionProvider(store, chat.id)
    provider.append_message(msg("q\x001", "a model's \x00 reply \uffff0 \uffff"), None)
    provider.append_message(msg("a\x001", "answer\x00", "assistant"), "q\x001")
    provider.add_compaction("sum\x00mary", "q\x001", "a\x001")
    await StoreContextProvider(store, chat.id, "memory").set("remembers \x00 this")
    await StoreSearchProvider(store, f"{chat.id}/notes").set("k\x00ey", "con\x00tent")
    await StoreSkillProvider(store, chat.id).set("sk\x00ill", "st\x00eps", "de\x00sc")
    await StorePromptCache(store, chat.id).set("You are \x00 here.")
    manager.set_status(chat.id, "idle", "de\x00tail")
    return chat.id


@pytest.fixture
async def nul_source(tmp_path) -> str:
    path = str(tmp_path / "nul.db")
    with Store(path) as store:
        await populate_with_nuls(store)
    return path


async def test_export_and_import_round_trip(store, tmp_path):
    """Export → import → export on this engine and into the other: identical documents."""
    chat_id = await populate_with_nuls(store)
    document = export_session(store, chat_id)
    assert document["session"]["name"] == "ti\x00tle \uffff1"
    path = tmp_path / "export.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with Store(str(tmp_path / "other.db")) as other:
        [outcome] = import_sessions(other, load_export(path))
        assert outcome.session_id == chat_id
        assert export_session(other, chat_id) == document
    # and back into this engine as a copy beside the original
    [copy] = import_sessions(store, load_export(path), new_ids=True)
    again = export_session(store, copy.session_id)
    assert [m["parts"] for m in again["messages"]] == [m["parts"] for m in document["messages"]]
    assert store.integrity_check() == []


def test_db_copy_sqlite_to_postgresql_and_back(nul_source, tmp_path, capsys, pg_url):
    back = str(tmp_path / "back.db")
    assert main(["db", "copy", nul_source, pg_url]) == 0
    assert main(["db", "copy", pg_url, back]) == 0
    original = export_all(nul_source, capsys)
    assert "ti\\u0000tle" in original  # the NULs are in the export (as JSON writes them)
    assert export_all(pg_url, capsys) == original
    assert export_all(back, capsys) == original
    with Store(nul_source) as a, Store(back) as b, Store(pg_url) as pg:
        assert table_rows(a) == table_rows(b) == table_rows(pg)
        assert pg.integrity_check() == [] and b.integrity_check() == []
        # the server holds escapes, never NUL, and reads give the original back
        raw = pg.connection().pgconn.exec_(b"SELECT name FROM sessions").get_value(0, 0)
        assert raw == "ti\uffff0tle \uffff11".encode()
        assert SessionManager(pg).get("chat\x00one").name == "ti\x00tle \uffff1"
