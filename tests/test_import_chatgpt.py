"""Importing ChatGPT's conversations.json keeps every branch as a real tree."""

from __future__ import annotations

import json
import zipfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatui.transfer import ImportFormatError, load_documents
from store import SessionManager, Store, import_sessions
from tests.engine_helpers import sql

T0 = 1_700_000_000.0


def node(nid, parent, children, message=None):
    return {"id": nid, "message": message, "parent": parent, "children": children}


def msg(nid, role, parts, t, *, content_type="text", recipient="all", name=None, **meta):
    return {
        "id": nid,
        "author": {"role": role, "name": name, "metadata": {}},
        "create_time": T0 + t,
        "update_time": None,
        "content": {"content_type": content_type, "parts": parts},
        "status": "finished_successfully",
        "end_turn": True,
        "weight": 1.0,
        "metadata": meta,
        "recipient": recipient,
    }


def branching_conversation(current="a3"):
    """A conversation as ChatGPT exports it: a null root, hidden system and context
    nodes, a regenerated answer (a1/a2), an edited question (u2/u2b), an image, and
    a python tool round trip."""
    code = msg("call", "assistant", [], 7, recipient="python", model_slug="gpt-4o")
    code["content"] = {"content_type": "code", "language": "python", "text": "print(2 ** 10)"}
    out = msg("out", "tool", [], 8, name="python")
    out["content"] = {"content_type": "execution_output", "text": "1024"}
    context = msg("ctx", "user", [], 0)
    context["content"] = {
        "content_type": "user_editable_context",
        "user_profile": "I write Python",
        "user_instructions": "",
    }
    mapping = {
        "root": node("root", None, ["sys"]),
        "sys": node(
            "sys",
            "root",
            ["ctx"],
            msg("sys", "system", [""], 0, is_visually_hidden_from_conversation=True),
        ),
        "ctx": node("ctx", "sys", ["u1"], context),
        "u1": node("u1", "ctx", ["a1", "a2"], msg("u1", "user", ["How do I reverse a list?"], 1)),
        "a1": node(
            "a1", "u1", [], msg("a1", "assistant", ["Use reversed(xs)."], 2, model_slug="gpt-4o")
        ),
        "a2": node(
            "a2",
            "u1",
            ["u2", "u2b"],
            msg("a2", "assistant", ["Use xs[::-1]."], 3, model_slug="gpt-4o"),
        ),
        "u2": node("u2", "a2", ["a3x"], msg("u2", "user", ["And strings?"], 4)),
        "a3x": node("a3x", "u2", [], msg("a3x", "assistant", ["Same slicing."], 5)),
        "u2b": node("u2b", "a2", ["img"], msg("u2b", "user", ["And tuples?"], 6)),
        "img": node(
            "img",
            "u2b",
            ["call"],
            msg(
                "img",
                "user",
                [
                    {
                        "content_type": "image_asset_pointer",
                        "asset_pointer": "file-service://file-abc",
                        "size_bytes": 1024,
                        "width": 64,
                        "height": 64,
                    },
                    "What about this one?",
                ],
                6.5,
                content_type="multimodal_text",
            ),
        ),
        "call": node("call", "img", ["out"], code),
        "out": node("out", "call", ["a3"], out),
        "a3": node(
            "a3", "out", [], msg("a3", "assistant", ["2 ** 10 is 1024."], 9, model_slug="gpt-4o")
        ),
    }
    return {
        "title": "Reversing things",
        "create_time": T0,
        "update_time": T0 + 9,
        "mapping": mapping,
        "current_node": current,
        "conversation_id": "conv-1",
        "id": "conv-1",
        "default_model_slug": "gpt-4o",
        "is_archived": False,
    }


# The tree once hidden nodes are dropped: children of a skipped node move up.
EXPECTED_PARENTS = {
    "u1": None,
    "a1": "u1",
    "a2": "u1",
    "u2": "a2",
    "a3x": "u2",
    "u2b": "a2",
    "img": "u2b",
    "call": "img",
    "out": "call",
    "a3": "out",
}


def write_export(tmp_path, conversations, name="conversations.json"):
    path = tmp_path / name
    path.write_text(json.dumps(conversations), encoding="utf-8")
    return path


def import_file(store, path, source="chatgpt"):
    return import_sessions(store, load_documents(path, source), match_source=True)


def parents_of(store, session_id):
    return dict(
        sql(store, "SELECT id, parent_id FROM messages WHERE session_id = ?", (session_id,))
    )


def test_branches_are_kept_exactly(store, tmp_path):
    path = write_export(tmp_path, [branching_conversation()])
    [outcome] = import_file(store, path)
    assert outcome.imported and outcome.messages == len(EXPECTED_PARENTS)
    assert parents_of(store, outcome.session_id) == EXPECTED_PARENTS
    info = SessionManager(store).get(outcome.session_id)
    assert info.name == "Reversing things" and info.source == "chatgpt:conv-1"
    assert info.created_at.timestamp() == T0 and info.updated_at.timestamp() == T0 + 9
    assert info.metadata["active_leaf"] == "a3"
    # The current node is appended last, so it is also the store's latest leaf.
    session = SessionManager(store).get_session(outcome.session_id)
    assert session.get_latest_leaf().id == "a3"
    # Siblings keep ChatGPT's order (a1 was the first answer, u2 the first question).
    assert [m.id for m in session.get_branches("u1")] == ["a1", "a2"]
    assert [m.id for m in session.get_branches("a2")] == ["u2", "u2b"]


def test_an_earlier_current_node_is_recorded_as_the_active_leaf(store, tmp_path):
    path = write_export(tmp_path, [branching_conversation(current="a1")])
    [outcome] = import_file(store, path)
    info = SessionManager(store).get(outcome.session_id)
    assert info.metadata["active_leaf"] == "a1"
    session = SessionManager(store).get_session(outcome.session_id)
    assert [m.id for m in session.get_branches("u1")] == ["a1", "a2"]  # order kept anyway
    assert [m.id for m in session.get_history("a1")] == ["u1", "a1"]


def test_roles_parts_and_times_are_mapped(store, tmp_path):
    path = write_export(tmp_path, [branching_conversation()])
    [outcome] = import_file(store, path)
    session = SessionManager(store).get_session(outcome.session_id)
    u1 = session.get_message("u1")
    assert u1.role == "user" and u1.text == "How do I reverse a list?"
    assert u1.created_at.timestamp() == T0 + 1
    assert session.get_message("a1").metadata == {"chatgpt": {"model": "gpt-4o"}}
    img = session.get_message("img")
    assert img.parts[0] == {
        "type": "file",
        "media_type": "image/*",
        "url": "file-service://file-abc",
        "filename": "file-abc",
    }
    assert img.text == "What about this one?"
    call = session.get_message("call")
    assert call.tool_calls == [
        {
            "type": "tool-call",
            "tool_call_id": "call",
            "tool_name": "python",
            "input": "print(2 ** 10)",
        }
    ]
    out = session.get_message("out")
    assert out.role == "tool"
    assert out.tool_results == [
        {"type": "tool-result", "tool_call_id": "call", "tool_name": "python", "output": "1024"}
    ]
    assert session.get_message("sys") is None and session.get_message("ctx") is None
    assert session.get_message("root") is None


def test_reimport_does_not_duplicate(store, tmp_path):
    path = write_export(tmp_path, [branching_conversation()])
    first = import_file(store, path)
    again = import_file(store, path)
    assert [o.imported for o in first] == [True]
    assert [o.imported for o in again] == [False]
    assert again[0].session_id == first[0].session_id
    assert store.query("SELECT count(*) FROM sessions")[0][0] == 1
    assert store.query("SELECT count(*) FROM messages")[0][0] == len(EXPECTED_PARENTS)


def test_reads_the_export_zip(store, tmp_path):
    archive = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("conversations.json", json.dumps([branching_conversation()]))
        zf.writestr("chat.html", "<html></html>")
    [outcome] = import_file(store, archive)
    assert parents_of(store, outcome.session_id) == EXPECTED_PARENTS


def test_several_conversations_and_untitled(store, tmp_path):
    second = branching_conversation()
    second.update(conversation_id="conv-2", id="conv-2", title=None)
    path = write_export(tmp_path, [branching_conversation(), second])
    outcomes = import_file(store, path)
    assert [o.name for o in outcomes] == ["Reversing things", "Untitled"]
    assert len({o.session_id for o in outcomes}) == 2


@pytest.mark.parametrize(
    "breakage, expected",
    [
        (lambda c: c["mapping"]["u1"].update(parent="a3"), "cycle"),
        (lambda c: c["mapping"]["a2"].update(parent="nowhere"), "missing parent"),
        (lambda c: c.update(current_node="ghost"), "current node 'ghost'"),
        (lambda c: c.pop("mapping"), "no 'mapping'"),
        (lambda c: c["mapping"].update(bad=["not", "a", "node"]), "not an object"),
    ],
)
def test_broken_trees_are_refused(store, tmp_path, breakage, expected):
    conv = branching_conversation()
    breakage(conv)
    path = write_export(tmp_path, [conv])
    with pytest.raises(ImportFormatError, match=expected) as info:
        load_documents(path, "chatgpt")
    assert str(path) in str(info.value) and "\n" not in str(info.value)


@st.composite
def mappings(draw):
    """A random ChatGPT mapping: a null root, then nodes under any earlier node; some
    nodes are hidden (skipped on import), and any node may be the current one."""
    n = draw(st.integers(1, 25))
    mapping = {"root": node("root", None, [])}
    ids = ["root"]
    hidden = set()
    for i in range(n):
        nid = f"n{i}"
        parent = draw(st.sampled_from(ids))
        if draw(st.integers(0, 4)) == 0:
            hidden.add(nid)
            message = msg(nid, "system", [""], i, is_visually_hidden_from_conversation=True)
        else:
            message = msg(nid, draw(st.sampled_from(["user", "assistant"])), [f"text {i}"], i)
        mapping[nid] = node(nid, parent, [], message)
        mapping[parent]["children"].append(nid)
        ids.append(nid)
    current = draw(st.sampled_from(ids[1:]))
    return mapping, hidden | {"root"}, current


def kept_parent(mapping, skipped, nid):
    parent = mapping[nid]["parent"]
    while parent is not None and parent in skipped:
        parent = mapping[parent]["parent"]
    return parent


@settings(max_examples=40, deadline=None)
@given(mappings())
def test_any_tree_is_kept_exactly(tmp_path_factory, generated):
    mapping, skipped, current = generated
    conv = {
        "title": "t",
        "create_time": T0,
        "update_time": T0,
        "mapping": mapping,
        "current_node": current,
        "conversation_id": "c",
    }
    path = write_export(tmp_path_factory.mktemp("gpt"), [conv])
    with Store(":memory:") as store:
        [outcome] = import_file(store, path)
        expected = {
            nid: kept_parent(mapping, skipped, nid) for nid in mapping if nid not in skipped
        }
        assert parents_of(store, outcome.session_id) == expected
        session = SessionManager(store).get_session(outcome.session_id)
        # Siblings keep ChatGPT's order.
        for nid in expected:
            kids = [m.id for m in session.get_branches(nid)]
            assert kids == [k for k in expected if expected[k] == nid]
        active = current if current not in skipped else kept_parent(mapping, skipped, current)
        info = SessionManager(store).get(outcome.session_id)
        assert info.metadata.get("active_leaf") == active
        # The current leaf is appended last (so it is also the latest leaf) whenever
        # that keeps sibling order: it has no children and no younger siblings.
        siblings = [k for k in expected if expected[k] == expected.get(active)]
        if active is not None and not session.get_branches(active) and siblings[-1] == active:
            assert session.get_latest_leaf().id == active
