"""Compaction function, overlay precedence, token estimation, micro-compaction (SPEC 4, 6)."""

import math

import pytest

from store import (
    Message,
    Session,
    create_compact_function,
    estimate_message_tokens,
    estimate_string_tokens,
    truncate_older_messages,
)
from store.compaction import COMPACTION_SECTIONS

SUMMARY = "## Topic\nT\n## Key Points\nK\n## Current State\nC\n## Open Items\nO"


def msg(mid, text, role="user"):
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": text}]}


def call(mid, call_id):
    return {
        "id": mid,
        "role": "assistant",
        "parts": [
            {
                "type": "tool-call",
                "tool_call_id": call_id,
                "tool_name": "grep",
                "input": {"pattern": "x"},
            }
        ],
    }


def result(mid, call_id, output="found it"):
    return {
        "id": mid,
        "role": "tool",
        "parts": [
            {"type": "tool-result", "tool_call_id": call_id, "tool_name": "grep", "output": output}
        ],
    }


class Summariser:
    def __init__(self, text=SUMMARY):
        self.prompts = []
        self.text = text

    async def __call__(self, prompt):
        self.prompts.append(prompt)
        return self.text


async def fill(session, n, words=20):
    for i in range(n):
        await session.append_message(
            msg(f"m{i}", f"message {i} " + "word " * words, "user" if i % 2 == 0 else "assistant")
        )


async def test_head_and_tail_are_kept_and_the_middle_summarised(store):
    summarise = Summariser()
    s = (
        Session(store)
        .for_session("c")
        .on_compaction(
            create_compact_function(
                summarise, protect_head=2, tail_token_budget=60, min_tail_messages=2
            )
        )
    )
    await fill(s, 10, words=20)  # ~30 tokens each: two fit the tail budget
    stored = await s.compact()
    assert (stored.from_message_id, stored.to_message_id) == ("m2", "m7")
    history = s.get_history()
    assert [m.id for m in history][:2] == ["m0", "m1"]
    assert history[2].is_compaction and history[2].text == SUMMARY.strip()
    assert [m.id for m in history][3:] == ["m8", "m9"]
    prompt = summarise.prompts[0]
    for section in COMPACTION_SECTIONS:
        assert f"## {section}" in prompt
    assert "message 2 " in prompt and "message 7 " in prompt
    assert "message 1 " not in prompt and "message 8 " not in prompt


async def test_min_tail_messages_wins_over_the_budget(store):
    s = (
        Session(store)
        .for_session("c")
        .on_compaction(
            create_compact_function(
                Summariser(), protect_head=1, tail_token_budget=1, min_tail_messages=3
            )
        )
    )
    await fill(s, 8)
    stored = await s.compact()
    assert stored.to_message_id == "m4"
    assert [m.id for m in s.get_history()][-3:] == ["m5", "m6", "m7"]


async def test_tool_call_and_result_are_never_split(store):
    s = (
        Session(store)
        .for_session("t")
        .on_compaction(
            create_compact_function(
                Summariser(), protect_head=2, tail_token_budget=1, min_tail_messages=1
            )
        )
    )
    await s.append_message(msg("u0", "start"))
    await s.append_message(call("c1", "call-1"))  # head ends after this one...
    await s.append_message(result("r1", "call-1"))  # ...and its result follows
    await s.append_message(msg("u1", "more " * 30))
    await s.append_message(call("c2", "call-2"))
    await s.append_message(result("r2", "call-2"))  # tail of 1 would split c2/r2
    stored = await s.compact()
    # The head is protected: it grows over r1 instead of giving c1 up.
    assert stored.from_message_id == "u1"
    assert stored.to_message_id == "u1"  # tail moved back so c2 stays with r2
    ids = [m.id for m in s.get_history()]
    assert ids[:3] == ["u0", "c1", "r1"] and ids[-2:] == ["c2", "r2"]


async def test_protected_head_ending_on_a_tool_call_keeps_all_its_results(store):
    s = (
        Session(store)
        .for_session("t")
        .on_compaction(
            create_compact_function(
                Summariser(), protect_head=2, tail_token_budget=1, min_tail_messages=1
            )
        )
    )
    await s.append_message(msg("u0", "start"))
    await s.append_message(call("c1", "call-1"))
    await s.append_message(result("r1", "call-1"))
    await s.append_message(msg("u1", "more " * 30))
    await s.append_message(msg("u2", "more " * 30))
    await s.append_message(msg("u3", "the end"))
    stored = await s.compact()
    assert stored.from_message_id == "u1"  # the third message is never compacted
    assert stored.to_message_id == "u2"
    assert [m.id for m in s.get_history()][:3] == ["u0", "c1", "r1"]


async def test_an_earlier_summary_is_updated_not_replaced(store):
    summarise = Summariser("## Topic\nfirst summary")
    s = (
        Session(store)
        .for_session("i")
        .on_compaction(
            create_compact_function(
                summarise, protect_head=1, tail_token_budget=40, min_tail_messages=2
            )
        )
    )
    await fill(s, 8)
    first = await s.compact()
    summarise.text = "## Topic\nsecond summary"
    for i in range(8, 14):
        await s.append_message(msg(f"m{i}", f"message {i} " + "word " * 20))
    second = await s.compact()
    assert "<previous-summary>\n## Topic\nfirst summary" in summarise.prompts[1]
    assert second.from_message_id == first.from_message_id == "m1"  # it covers the first
    history = s.get_history()
    overlays = [m for m in history if m.is_compaction]
    assert [m.text for m in overlays] == ["## Topic\nsecond summary"]
    assert len(s.get_compactions()) == 2 and len(s.get_raw_history()) == 14


async def test_nothing_to_compact_returns_none_and_stores_nothing(store):
    summarise = Summariser()
    s = (
        Session(store)
        .for_session("n")
        .on_compaction(create_compact_function(summarise, protect_head=3))
    )
    await fill(s, 4, words=2)
    assert await s.compact() is None
    assert s.get_compactions() == [] and summarise.prompts == []


async def test_empty_summary_stores_nothing(store):
    s = (
        Session(store)
        .for_session("e")
        .on_compaction(
            create_compact_function(Summariser("   "), protect_head=1, tail_token_budget=1)
        )
    )
    await fill(s, 6)
    with pytest.raises(ValueError, match="empty summary"):
        await s.compact()
    assert s.get_compactions() == []


async def test_a_newer_overlay_supersedes_an_older_one_it_overlaps(store):
    s = Session(store).for_session("o")
    await fill(s, 6, words=1)
    s.add_compaction("old: 1-2", "m1", "m2")
    assert [m.text for m in s.get_history() if m.is_compaction] == ["old: 1-2"]
    s.add_compaction("new: 1-4", "m1", "m4")
    history = s.get_history()
    assert [m.id for m in history if not m.is_compaction] == ["m0", "m5"]
    assert [m.text for m in history if m.is_compaction] == ["new: 1-4"]
    assert history[1].metadata["compaction"]["covered"] == 4
    assert len(s.get_raw_history()) == 6


def test_string_token_formula():
    assert estimate_string_tokens("") == 0
    assert estimate_string_tokens("abcd") == 2  # 1 word × 1.3 beats 4/4
    text = "x" * 100
    assert estimate_string_tokens(text) == 25
    words = "a " * 40
    assert estimate_string_tokens(words) == math.ceil(max(len(words) / 4, 40 * 1.3))


def test_message_token_estimate_counts_every_kind_of_part():
    m = Message(
        "m",
        "assistant",
        [
            {"type": "text", "text": "x" * 40},
            {"type": "reasoning", "text": "y" * 40},
            {"type": "tool-call", "tool_call_id": "c", "tool_name": "t", "input": {"q": "z" * 30}},
            {"type": "file", "media_type": "image/png", "data": "A" * 4000},
        ],
    )
    r = Message(
        "r",
        "tool",
        [{"type": "tool-result", "tool_call_id": "c", "tool_name": "t", "output": "w" * 80}],
    )
    expected = 4 + 10 + 10 + estimate_string_tokens('{"q": "' + "z" * 30 + '"}') + 4 + 20
    assert estimate_message_tokens([m, r]) == expected
    assert estimate_message_tokens([]) == 0


def test_truncate_older_messages_shortens_copies_only():
    long_text = "t" * 5000
    messages = [
        Message("a", "user", [{"type": "text", "text": long_text}]),
        Message(
            "b",
            "tool",
            [
                {
                    "type": "tool-result",
                    "tool_call_id": "c",
                    "tool_name": "x",
                    "output": {"rows": ["r" * 3000]},
                }
            ],
        ),
        Message("c", "assistant", [{"type": "text", "text": long_text}]),
        Message("d", "user", [{"type": "text", "text": "short"}]),
    ]
    out = truncate_older_messages(messages, keep_recent=2, max_chars=100)
    assert (
        len(out[0].parts[0]["text"]) < 200
        and "truncated 4,900 characters" in out[0].parts[0]["text"]
    )
    assert "truncated" in out[1].parts[0]["output"]
    assert out[2].parts[0]["text"] == long_text  # the recent ones are untouched
    assert out[3] == messages[3]
    assert messages[0].parts[0]["text"] == long_text  # originals never change
    assert messages[1].parts[0]["output"] == {"rows": ["r" * 3000]}
    assert truncate_older_messages(messages, keep_recent=10) == messages
