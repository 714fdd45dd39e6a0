"""Backup and restore keep everything: random trees survive export → import → export."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import (
    Attachments,
    SessionManager,
    Store,
    StoreContextProvider,
    StoreSearchProvider,
    StoreSessionProvider,
    StoreSkillProvider,
    TransferError,
    document_entries,
    documents_from_entries,
    export_session,
    export_sessions,
    import_sessions,
    load_export,
)

# Text with the awkward bits: controls, escapes, emoji, RTL, quotes.
texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)


@st.composite
def parts(draw):
    kind = draw(
        st.sampled_from(["text", "reasoning", "tool-call", "tool-result", "attachment", "odd"])
    )
    if kind == "attachment":  # stored by `build` (the same bytes twice: one content)
        data = draw(st.sampled_from([b"", b"shared bytes", b"\xff\x00 binary"]) | st.binary())
        return {
            "type": "attachment-to-store",
            "name": draw(st.text("ab.", min_size=1)),
            "data": data,
        }
    if kind in ("text", "reasoning"):
        return {"type": kind, "text": draw(texts)}
    if kind == "tool-call":
        return {
            "type": kind,
            "tool_call_id": draw(texts),
            "tool_name": "t",
            "input": draw(json_values),
        }
    if kind == "tool-result":
        return {
            "type": kind,
            "tool_call_id": draw(texts),
            "tool_name": "t",
            "output": draw(json_values),
            "is_error": draw(st.booleans()),
        }
    return {"type": "x-unknown", "payload": draw(json_values)}


@st.composite
def chats(draw):
    """A random tree: each message's parent is any earlier message, or none (a new root)."""
    n = draw(st.integers(0, 14))
    messages = []
    for i in range(n):
        parent = draw(st.none() | st.integers(0, i - 1)) if i else None
        sender = draw(st.sampled_from([{}, {"from_user_id": "u1"}, {"from_agent_id": "a1"}]))
        messages.append(
            {
                "id": f"m{i}-{draw(st.text('abc-_%', max_size=3))}",
                "role": draw(st.sampled_from(["user", "assistant", "tool", "system"])),
                "parts": draw(st.lists(parts(), max_size=3)),
                "metadata": draw(st.dictionaries(texts, json_values, max_size=2)),
                "token_usage": draw(
                    st.none()
                    | st.fixed_dictionaries(
                        {
                            "input": st.integers(0, 999),
                            "output": st.integers(0, 999),
                            "cost": st.floats(0, 1),
                        }
                    )
                ),
                "parent": parent,
                **sender,
            }
        )
    return {
        "name": draw(texts),
        "model": draw(st.none() | texts),
        "metadata": draw(st.dictionaries(texts, json_values, max_size=2)),
        "messages": messages,
        "blocks": draw(
            st.dictionaries(st.text("abcxyz", min_size=1, max_size=5), texts, max_size=2)
        ),
        "entries": draw(st.dictionaries(st.text("pqr", min_size=1, max_size=4), texts, max_size=2)),
        "compact": draw(st.booleans()),
        "usage": draw(st.integers(0, 500)),
        "deleted": draw(st.booleans()),
    }


def build(store: Store, chat: dict) -> str:
    manager = SessionManager(store)
    info = manager.create(chat["name"], model=chat["model"], metadata=chat["metadata"])
    provider = StoreSessionProvider(store, info.id)
    attachments = Attachments(store)
    ids: list[str] = []
    for m in chat["messages"]:
        body = {k: v for k, v in m.items() if k != "parent"}
        body["parts"] = [
            attachments.put(p["name"], "application/octet-stream", p["data"])
            if p["type"] == "attachment-to-store"
            else p
            for p in body["parts"]
        ]
        parent = ids[m["parent"]] if m["parent"] is not None else None
        ids.append(provider.append_message(body, parent).id)
    if chat["compact"] and ids:
        path = [x.id for x in provider.get_history(ids[-1])]
        provider.add_compaction("summary of the start", path[0], path[-1])
    for label, content in chat["blocks"].items():
        asyncio.run(StoreContextProvider(store, info.id, label).set(content))
    for key, content in chat["entries"].items():
        asyncio.run(StoreSearchProvider(store, f"{info.id}/notes").set(key, content))
    asyncio.run(StoreSkillProvider(store, info.id).set("howto", "Steps", "How to"))
    manager.add_usage(info.id, chat["usage"], chat["usage"] // 2, chat["usage"] / 1000)
    if chat["deleted"]:
        manager.delete(info.id)
    return info.id


def as_json(doc) -> str:
    return json.dumps(doc, ensure_ascii=False, sort_keys=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chats())
def test_export_import_export_is_identical(chat):
    with Store(":memory:") as source, Store(":memory:") as target:
        sid = build(source, chat)
        doc = json.loads(json.dumps(export_session(source, sid)))  # through real JSON
        [outcome] = import_sessions(target, doc)
        assert outcome.imported and outcome.session_id == sid
        assert as_json(export_session(target, sid)) == as_json(doc)
        # Latest-leaf and branch order survive too, because append order does.
        a, b = StoreSessionProvider(source, sid), StoreSessionProvider(target, sid)
        assert a.get_latest_leaf() == b.get_latest_leaf()
        assert [m.id for m in a.get_tree()] == [m.id for m in b.get_tree()]
        assert (
            source.query("SELECT count(*) FROM search_entries")[0][0]
            == target.query("SELECT count(*) FROM search_entries")[0][0]
        )
        assert target.integrity_check() == []
        # Restoring twice changes nothing.
        [again] = import_sessions(target, doc)
        assert not again.imported and again.reason == "already imported"


@settings(max_examples=30, deadline=None)
@given(chats())
def test_jsonl_carries_the_same_documents(chat):
    with Store(":memory:") as source:
        sid = build(source, chat)
        doc = export_session(source, sid)
        lines = [json.dumps(e, ensure_ascii=False) for e in document_entries(doc)]
        assert all("\n" not in line for line in lines)
        back = documents_from_entries(json.loads(line) for line in lines)
        assert [as_json(d) for d in back] == [as_json(json.loads(json.dumps(doc)))]


@settings(max_examples=30, deadline=None)
@given(chats())
def test_new_ids_make_a_copy_beside_the_original(chat):
    with Store(":memory:") as store:
        sid = build(store, chat)
        doc = export_session(store, sid)
        [copy] = import_sessions(store, doc, new_ids=True)
        assert copy.imported and copy.session_id != sid
        copied = as_json(export_session(store, copy.session_id)).replace(copy.session_id, sid)
        original = as_json(doc)
        # Compaction ids are store-wide, so the copy's are new; nothing else differs.
        for c_old, c_new in zip(
            doc["compactions"], export_session(store, copy.session_id)["compactions"], strict=True
        ):
            copied = copied.replace(c_new["id"], c_old["id"])
        assert copied == original


def test_export_holds_the_whole_session(store):
    chat = {
        "name": "Everything",
        "model": "gpt-4o",
        "metadata": {"pinned": True},
        "messages": [
            {
                "id": "q",
                "role": "user",
                "parts": [{"type": "text", "text": "hi"}],
                "metadata": {},
                "token_usage": None,
                "parent": None,
                "from_user_id": "ana",
            },
            {
                "id": "a",
                "role": "assistant",
                "parts": [{"type": "text", "text": "yo"}],
                "metadata": {"k": 1},
                "token_usage": {"input": 1, "output": 2, "cost": 0.5},
                "parent": 0,
            },
            {
                "id": "b",
                "role": "assistant",
                "parts": [{"type": "text", "text": "hey"}],
                "metadata": {},
                "token_usage": None,
                "parent": 0,
            },
        ],
        "blocks": {"scratchpad": "notes"},
        "entries": {"k1": "entry"},
        "compact": True,
        "usage": 100,
        "deleted": False,
    }
    sid = build(store, chat)
    asyncio.run(StoreContextProvider(store, "global", "memory").set("shared fact"))
    doc = export_session(store, sid)
    assert doc["format"] == "chatui" and doc["version"] == 1
    s = doc["session"]
    assert (s["name"], s["model"], s["metadata"]) == ("Everything", "gpt-4o", {"pinned": True})
    assert (s["input_tokens"], s["output_tokens"], s["cost"]) == (100, 50, 0.1)
    assert [(m["id"], m["parent_id"]) for m in doc["messages"]] == [
        ("q", None),
        ("a", "q"),
        ("b", "q"),
    ]
    assert doc["messages"][0]["from_user_id"] == "ana"
    assert doc["messages"][1]["token_usage"] == {"input": 1, "output": 2, "cost": 0.5}
    assert set(doc["messages"][0]) == {
        "id",
        "parent_id",
        "role",
        "parts",
        "created_at",
        "metadata",
        "from_user_id",
        "from_agent_id",
        "delivered_to_session_id",
        "token_usage",
    }
    [comp] = doc["compactions"]
    assert (comp["from_message_id"], comp["to_message_id"]) == ("q", "b")
    ctx = doc["context"]
    assert [(b["label"], b["content"]) for b in ctx["blocks"]] == [("scratchpad", "notes")]
    assert [(e["namespace"], e["key"]) for e in ctx["search_entries"]] == [(f"{sid}/notes", "k1")]
    assert [k["key"] for k in ctx["skills"]] == ["howto"]
    assert "shared fact" not in json.dumps(doc)  # the global block belongs to no chat


def test_all_sessions_skip_deleted_unless_asked(store):
    manager = SessionManager(store)
    kept, gone = manager.create("kept"), manager.create("gone")
    manager.delete(gone.id)
    assert [d["session"]["id"] for d in export_sessions(store)] == [kept.id]
    assert len(export_sessions(store, include_deleted=True)) == 2


def bad(doc_change):
    doc = {
        "format": "chatui",
        "version": 1,
        "session": {"id": "s1", "name": "x"},
        "messages": [
            {"id": "a", "parent_id": None, "role": "user", "parts": []},
            {"id": "b", "parent_id": "a", "role": "assistant", "parts": []},
        ],
    }
    doc_change(doc)
    return doc


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda d: d.update(format="other"), "not a chatui export"),
        (lambda d: d.update(version=99), "newer chatui"),
        (lambda d: d["messages"][0].update(parent_id="b"), "cycle"),
        (lambda d: d["messages"][1].update(parent_id="zz"), "missing parent"),
        (lambda d: d["messages"].append({"id": "a", "role": "user", "parts": []}), "used twice"),
        (lambda d: d["messages"][0].update(role="wizard"), "role"),
        (lambda d: d["messages"][0].update(from_user_id="u", from_agent_id="g"), "one sender"),
        (lambda d: d["session"].update(status="sleeping"), "status"),
        (lambda d: d["session"].update(created_at="yesterday"), "ISO 8601"),
        (
            lambda d: d.update(
                compactions=[{"summary": "s", "from_message_id": "b", "to_message_id": "a"}]
            ),
            "not on the path",
        ),
        (
            lambda d: d.update(
                context={
                    "blocks": [{"namespace": "global", "label": "memory", "content": "overwrite"}]
                }
            ),
            "does not belong",
        ),
    ],
)
def test_bad_documents_import_nothing(store, change, expected):
    good = bad(lambda d: d["session"].update(id="good"))
    with pytest.raises(TransferError, match=expected):
        import_sessions(store, [good, bad(change)])
    assert store.query("SELECT count(*) FROM sessions")[0][0] == 0
    assert store.query("SELECT count(*) FROM messages")[0][0] == 0


def test_a_failure_while_writing_rolls_everything_back(store, monkeypatch):
    import store.storage as storage

    docs = [bad(lambda d, i=i: d["session"].update(id=f"s{i}")) for i in range(3)]
    calls = []
    original = storage.index_body  # the bulk insert imports use (store.storage)

    def failing(message):
        calls.append(message.id)
        if len(calls) == 5:  # the third chat's first message
            raise OSError("disk full")
        return original(message)

    monkeypatch.setattr(storage, "index_body", failing)
    with pytest.raises(OSError):
        import_sessions(store, docs)
    assert len(calls) == 5
    assert store.query("SELECT count(*) FROM sessions")[0][0] == 0
    assert store.query("SELECT count(*) FROM messages")[0][0] == 0
    assert store.integrity_check() == []


def test_load_export_reads_json_and_jsonl(store, tmp_path):
    sid = SessionManager(store).create("file").id
    doc = export_session(store, sid)
    (tmp_path / "one.json").write_text(json.dumps(doc))
    (tmp_path / "many.json").write_text(json.dumps([doc, doc]))
    (tmp_path / "lines.jsonl").write_text(
        "\n".join(json.dumps(e) for e in document_entries(doc)) + "\n"
    )
    for name, count in (("one.json", 1), ("many.json", 2), ("lines.jsonl", 1)):
        assert len(load_export(tmp_path / name)) == count
    (tmp_path / "cut.json").write_text(json.dumps(doc, indent=2)[:200])
    with pytest.raises(TransferError, match=r"cut.json: not valid JSON .*truncated"):
        load_export(tmp_path / "cut.json")
    (tmp_path / "cut.jsonl").write_text(
        "\n".join(json.dumps(e) for e in document_entries(doc)) + '\n{"type": "mess'
    )
    with pytest.raises(TransferError, match=r"line \d+ is not valid JSON"):
        load_export(tmp_path / "cut.jsonl")
