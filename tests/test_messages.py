"""Message dataclass: validation, text, lossless round trips."""

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store import Message


def test_text_joins_text_parts_only():
    m = Message(
        "m1",
        "assistant",
        [
            {"type": "text", "text": "Hello"},
            {"type": "reasoning", "text": "hmm"},
            {"type": "tool-call", "tool_call_id": "c1", "tool_name": "x", "input": {}},
            {"type": "text", "text": "world"},
        ],
    )
    assert m.text == "Hello\nworld"
    assert len(m.tool_calls) == 1


def test_both_senders_rejected():
    with pytest.raises(ValueError, match="one sender"):
        Message("m1", "user", [], from_user_id="u", from_agent_id="a")
    with pytest.raises(ValueError, match="one sender"):  # "" is a sender to the table
        Message("m1", "user", [], from_user_id="u", from_agent_id="")


@pytest.mark.parametrize(
    "bad",
    [
        {"id": "", "role": "user", "parts": []},
        {"id": "x", "role": "robot", "parts": []},
        {"id": "x", "role": "user", "parts": "hello"},
        {"id": "x", "role": "user", "parts": [1]},
        {"role": "user", "parts": []},
        {"id": "x", "role": "user", "parts": [], "colour": "red"},
        {"id": "x", "role": "user", "parts": [], "created_at": "yesterday"},
    ],
)
def test_bad_mappings_rejected(bad):
    with pytest.raises(ValueError):
        Message.from_dict(bad)


def test_unknown_part_types_survive_round_trip():
    m = Message(
        "m1",
        "user",
        [{"type": "image-ish", "blob": [1, 2, {"x": None}]}],
        created_at=datetime(2026, 1, 2, tzinfo=UTC),
        metadata={"k": [1]},
        token_usage={"input": 1, "output": 2, "cost": 0.5},
    )
    again = Message.from_dict(m.to_dict())
    assert again == m


def test_not_json_serialisable_is_a_clear_error():
    m = Message("m1", "user", [{"type": "text", "text": "x", "obj": object()}])
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        m.to_json()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3)
    ),
    max_leaves=8,
)


@given(
    text=st.text(),
    extra=st.dictionaries(
        st.text(min_size=1).filter(lambda k: k not in ("type",)), json_values, max_size=3
    ),
    role=st.sampled_from(["user", "assistant", "tool", "system"]),
)
def test_round_trip_property(text, extra, role):
    m = Message("id-1", role, [{"type": "text", "text": text, **extra}])
    assert Message.from_dict(m.to_dict()) == m
