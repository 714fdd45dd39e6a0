"""Unfinished replies keep their state; Pi v1 compactions cut where Pi's migration does.

Issue 13 items 4 and 5. Statuses are checked through the widgets' own readers
(`status_of`, `status_label`), so "the app shows them" is what is tested.
"""

from __future__ import annotations

import json

import pytest

from chatui.transfer import load_documents
from store import Message, StoreSessionProvider, import_sessions
from tests.test_import_chatgpt import msg, node
from tests.test_import_pi import write_jsonl
from widgets.message_view import status_of
from widgets.tree_layout import status_label


def by_id(doc):
    return {m["id"]: m for m in doc["messages"]}


def shown(raw):
    message = Message.from_dict({k: v for k, v in raw.items() if k != "parent_id"})
    return status_of(message), status_label(message)


# -- ChatGPT ------------------------------------------------------------------------


def chatgpt_forks():
    """A question answered twice: once stopped before any text (in_progress, empty),
    once interrupted midway (finish_details interrupted), then regenerated fine."""
    empty = msg("a1", "assistant", [""], 2)
    empty["status"] = "in_progress"
    empty["end_turn"] = None
    cut = msg("a2", "assistant", ["Half an ans"], 3, finish_details={"type": "interrupted"})
    cut["end_turn"] = None
    done = msg("a3", "assistant", ["A whole answer."], 4, finish_details={"type": "stop"})
    mapping = {
        "root": node("root", None, ["u1"]),
        "u1": node("u1", "root", ["a1", "a2", "a3"], msg("u1", "user", ["Explain"], 1)),
        "a1": node("a1", "u1", [], empty),
        "a2": node("a2", "u1", [], cut),
        "a3": node("a3", "u1", [], done),
    }
    return {"title": "Forks", "create_time": 1.7e9, "mapping": mapping, "current_node": "a3",
            "conversation_id": "forks", "id": "forks"}  # fmt: skip


def test_chatgpt_unfinished_replies_are_kept_and_marked(store, tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([chatgpt_forks()]))
    [doc] = load_documents(path, "chatgpt")
    messages = by_id(doc)
    assert set(messages) == {"u1", "a1", "a2", "a3"}  # the empty fork is not dropped
    assert messages["a1"]["parts"] == [] and messages["a1"]["parent_id"] == "u1"
    assert shown(messages["a1"]) == ("interrupted", "interrupted")
    assert shown(messages["a2"]) == ("interrupted", "interrupted")
    assert shown(messages["a3"]) == (None, None)
    assert messages["a2"]["metadata"]["chatgpt"]["finish"] == "interrupted"
    [outcome] = import_sessions(store, [doc], match_source=True)
    stored = StoreSessionProvider(store, outcome.session_id).get_tree()
    assert sorted(m.id for m in stored if m.parent_id == "u1") == ["a1", "a2", "a3"]


# -- Pi -----------------------------------------------------------------------------


def pi_reply(eid, parent, second, stop, text="", error=None):
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": text}] if text else [],
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "stopReason": stop,
        "timestamp": 1736071200000 + second * 1000,
    }
    if error:
        message["errorMessage"] = error
    return {"type": "message", "id": eid, "parentId": parent,
            "timestamp": f"2025-01-05T10:00:{second:02d}.000Z", "message": message}  # fmt: skip


def test_pi_aborted_and_error_replies(tmp_path):
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-01-05T10:00:00Z"}
    user = {"type": "message", "id": "u1", "parentId": None, "timestamp": "2025-01-05T10:00:01Z",
            "message": {"role": "user", "content": "Go", "timestamp": 1736071201000}}  # fmt: skip
    entries = [
        header,
        user,
        pi_reply("a1", "u1", 2, "aborted", "Start of"),
        pi_reply("a2", "u1", 3, "error", error="529 overloaded"),
        pi_reply("a3", "u1", 4, "stop", "Done."),
    ]
    [doc] = load_documents(write_jsonl(tmp_path / "s.jsonl", entries), "pi")
    messages = by_id(doc)
    assert shown(messages["a1"]) == ("cancelled", "cancelled")
    assert shown(messages["a2"]) == ("error", "error")
    assert messages["a2"]["metadata"]["error"] == "529 overloaded"
    assert messages["a2"]["metadata"]["pi"]["stop_reason"] == "error"
    assert shown(messages["a3"]) == (None, None)


def v1_session(first_kept_index):
    """A version-1 file: no ids; the compaction keeps entries from `first_kept_index`
    (an index into the file's entries, header at 0, as Pi wrote it)."""
    lines = [{"type": "session", "id": "v1s", "timestamp": "2024-06-01T09:00:00.000Z"}]
    for i in range(6):
        role = "user" if i % 2 == 0 else "assistant"
        content = f"m{i}" if role == "user" else [{"type": "text", "text": f"m{i}"}]
        lines.append({"type": "message", "timestamp": f"2024-06-01T09:00:0{i + 1}.000Z",
                      "message": {"role": role, "content": content}})  # fmt: skip
    lines.append({"type": "compaction", "timestamp": "2024-06-01T09:01:00.000Z",
                  "summary": "Talked about m0..m3", "firstKeptEntryIndex": first_kept_index,
                  "tokensBefore": 1000})  # fmt: skip
    return lines


def migrate_v1_like_pi(lines):
    """What Pi's migrateV1ToV2 (then v2→v3) writes for the same file."""
    out, previous = [], None
    for i, entry in enumerate(lines):
        entry = dict(entry)
        if entry["type"] == "session":
            entry["version"] = 3
            out.append(entry)
            continue
        entry["id"], entry["parentId"] = f"id{i:06d}", previous
        previous = entry["id"]
        if entry["type"] == "compaction":
            index = entry.pop("firstKeptEntryIndex")
            if 0 < index < len(lines):
                entry["firstKeptEntryId"] = f"id{index:06d}"
        out.append(entry)
    return out


def covered_texts(doc):
    messages = by_id(doc)
    order = [m["id"] for m in doc["messages"]]
    result = []
    for c in doc["compactions"]:
        first, last = order.index(c["from_message_id"]), order.index(c["to_message_id"])
        result.append([_text(messages[mid]) for mid in order[first : last + 1]])
    return result


def _text(m):
    return "".join(p.get("text", "") for p in m["parts"])


def test_pi_v1_compaction_cuts_where_the_v3_migration_does(tmp_path):
    v1 = v1_session(5)  # entry 5 is m4: m0..m3 are summarised
    old = load_documents(write_jsonl(tmp_path / "v1.jsonl", v1), "pi")[0]
    new = load_documents(write_jsonl(tmp_path / "v3.jsonl", migrate_v1_like_pi(v1)), "pi")[0]
    assert covered_texts(old) == covered_texts(new) == [["m0", "m1", "m2", "m3"]]


@pytest.mark.parametrize("index", [0, 99, "3"])
def test_pi_v1_compaction_with_a_bad_index_still_imports(tmp_path, index):
    """An index naming the header, nothing, or not a number: Pi drops it (no cut
    point), and chatui summarises what came before the compaction, as for v3."""
    v1 = v1_session(index)
    [doc] = load_documents(write_jsonl(tmp_path / "v1.jsonl", v1), "pi")
    assert len(doc["messages"]) == 6
    assert covered_texts(doc) == [["m0", "m1", "m2", "m3", "m4", "m5"]]
