"""chatui.core.convert: stored history → OpenAI messages providers accept."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from chatui.core.convert import SUMMARY_LABEL, to_openai_messages
from store import Message


def user(mid: str, text: str) -> Message:
    return Message(id=mid, role="user", parts=[{"type": "text", "text": text}])


def assistant(mid: str, text: str = "", calls=(), **metadata) -> Message:
    parts = [{"type": "text", "text": text}] if text else []
    parts += [
        {"type": "tool-call", "tool_call_id": cid, "tool_name": name, "input": args}
        for cid, name, args in calls
    ]
    return Message(id=mid, role="assistant", parts=parts, metadata=metadata)


def tool(mid: str, *results) -> Message:
    return Message(
        id=mid,
        role="tool",
        parts=[
            {"type": "tool-result", "tool_call_id": cid, "tool_name": name, "output": out}
            for cid, name, out in results
        ],
    )


def test_text_and_system_prompt():
    out = to_openai_messages("SYS", [user("u1", "hi"), assistant("a1", "hello")])
    assert out == [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]


def test_tool_round_becomes_tool_calls_and_one_tool_message_per_result():
    history = [
        user("u1", "remember tea and search"),
        assistant(
            "a1",
            "On it.",
            [
                ("c1", "set_context", {"label": "memory", "content": "tea"}),
                ("c2", "session_search", {"query": "tea"}),
            ],
        ),
        tool("t1", ("c1", "set_context", "Saved."), ("c2", "session_search", {"hits": 0})),
        assistant("a2", "Done."),
    ]
    out = to_openai_messages("", history)
    assert out[1] == {
        "role": "assistant",
        "content": "On it.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {
                    "name": "set_context",
                    "arguments": '{"label": "memory", "content": "tea"}',
                },
            },
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "session_search", "arguments": '{"query": "tea"}'},
            },
        ],
    }
    assert out[2] == {"role": "tool", "tool_call_id": "c1", "content": "Saved."}
    assert out[3] == {"role": "tool", "tool_call_id": "c2", "content": '{"hits": 0}'}
    assert out[4] == {"role": "assistant", "content": "Done."}


def test_call_without_result_is_dropped_and_its_text_kept():
    """A cancelled tool round: the call was stored, its results never were."""
    history = [
        user("u1", "x"),
        assistant("a1", "Let me look.", [("c1", "session_search", {})]),
        user("u2", "never mind"),
    ]
    out = to_openai_messages("", history)
    assert out[1] == {"role": "assistant", "content": "Let me look."}
    assert all("tool_calls" not in m for m in out)


def test_result_without_call_is_dropped():
    history = [
        user("u1", "x"),
        tool("t1", ("ghost", "set_context", "Saved.")),
        assistant("a1", "ok"),
    ]
    out = to_openai_messages("", history)
    assert [m["role"] for m in out] == ["user", "assistant"]


def test_partial_results_keep_only_answered_calls():
    history = [
        user("u1", "x"),
        assistant("a1", "", [("c1", "a", {}), ("c2", "b", {})]),
        tool("t1", ("c1", "a", "one")),
    ]
    out = to_openai_messages("", history)
    assert [c["id"] for c in out[1]["tool_calls"]] == ["c1"]
    assert out[1]["content"] == ""  # never missing: llama.cpp templates need the key
    assert out[2]["tool_call_id"] == "c1" and len(out) == 3


def test_compaction_summary_goes_in_labelled_and_reasoning_is_not_sent():
    summary = Message(
        id="compaction_abc", role="assistant", parts=[{"type": "text", "text": "## Topic\nTea"}]
    )
    thinking = Message(
        id="a2",
        role="assistant",
        parts=[
            {"type": "reasoning", "text": "secret thoughts"},
            {"type": "text", "text": "Answer"},
        ],
    )
    out = to_openai_messages("", [user("u1", "start"), summary, user("u2", "q"), thinking])
    assert out[1] == {"role": "assistant", "content": f"{SUMMARY_LABEL}\n\n## Topic\nTea"}
    assert out[3] == {"role": "assistant", "content": "Answer"}
    assert "secret thoughts" not in str(out)


def test_partial_reply_is_sent_as_its_text_and_empty_failed_reply_is_skipped():
    history = [
        user("u1", "q"),
        assistant("a1", "half an ans", status="cancelled", incomplete=True),
        user("u2", "again"),
        assistant("a2", "", status="error", incomplete=True),
        user("u3", "third"),
    ]
    out = to_openai_messages("", history)
    assert [m["role"] for m in out] == ["user", "assistant", "user", "user"]
    assert out[1]["content"] == "half an ans"


def test_invalid_json_arguments_are_sent_as_the_model_wrote_them():
    history = [
        user("u1", "x"),
        assistant("a1", "", [("c1", "set_context", "{not json")]),
        tool("t1", ("c1", "set_context", "Error: arguments are not valid JSON")),
    ]
    out = to_openai_messages("", history)
    assert out[1]["tool_calls"][0]["function"]["arguments"] == "{not json"


call_ids = st.sampled_from(["c1", "c2", "c3"])


@st.composite
def histories(draw):
    messages = []
    for i in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "tool"]))
        if kind == "user":
            messages.append(user(f"m{i}", draw(st.text(max_size=5))))
        elif kind == "assistant":
            messages.append(assistant(f"m{i}", draw(st.text(max_size=5))))
        elif kind == "calls":
            ids = draw(st.lists(call_ids, min_size=1, max_size=3, unique=True))
            messages.append(assistant(f"m{i}", "", [(c, "t", {}) for c in ids]))
        else:
            ids = draw(st.lists(call_ids, min_size=1, max_size=3, unique=True))
            messages.append(tool(f"m{i}", *[(c, "t", "out") for c in ids]))
    return messages


@given(histories())
def test_every_sent_call_has_exactly_one_result_right_after_it(history):
    out = to_openai_messages("s", history)
    for index, message in enumerate(out):
        if message["role"] == "assistant" and message.get("tool_calls"):
            wanted = [c["id"] for c in message["tool_calls"]]
            following = []
            for after in out[index + 1 :]:
                if after["role"] != "tool":
                    break
                following.append(after["tool_call_id"])
            assert sorted(following) == sorted(wanted)
        if message["role"] == "tool":
            before = out[index - 1]
            assert before["role"] in ("assistant", "tool")
        if message["role"] == "assistant":
            assert message.get("content") or message.get("tool_calls")
