"""Running the tools a model asks for: any arguments give a result, never an exception."""

from __future__ import annotations

import asyncio
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatui.core.config import Config
from chatui.core.replies import run_tools
from chatui.core.wiring import build_manager

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
arguments = st.one_of(
    st.fixed_dictionaries(  # well-formed writes, some over the block's budget
        {
            "label": st.sampled_from(["memory", "scratchpad"]),
            "content": st.text(max_size=60) | st.just("word " * 2000),
        },
        optional={"action": st.sampled_from(["replace", "append"])},
    ),
    st.fixed_dictionaries(
        {"query": st.text(max_size=20)}, optional={"limit": st.integers(-5, 100)}
    ),
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "label": st.sampled_from(["memory", "scratchpad", "soul", "nope", ""]) | json_values,
            "content": st.text(max_size=60) | st.just("x " * 3000) | json_values,
            "action": st.sampled_from(["replace", "append", "delete"]) | json_values,
            "metadata": json_values,
            "extra": json_values,
        },
    ),
    st.text(max_size=30),  # raw, usually invalid, JSON text
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(["set_context", "session_search", "load_context", "rm -rf"]),
    args=arguments,
)
def test_any_tool_arguments_give_one_result_and_no_partial_write(store, name, args):
    config = Config()
    manager = build_manager(store, config)
    sid = manager.create("fuzz").id
    session = manager.get_session(sid)
    before = {b.label: b.content for b in asyncio.run(session.load_context())}
    raw = args if isinstance(args, str) else json.dumps(args)

    async def go():
        await manager.append(
            sid, {"id": "u", "role": "user", "parts": [{"type": "text", "text": "x"}]}
        )
        tools = dict(await session.tools())
        tools.update(manager.tools())
        return await run_tools(
            session,
            tools,
            [{"type": "tool-call", "tool_call_id": "c1", "tool_name": name, "input": raw}],
            "u",
        )

    run = asyncio.run(go())
    results = run.message.tool_results
    assert len(results) == 1 and results[0]["tool_call_id"] == "c1"
    assert isinstance(results[0]["output"], str)
    after = {b.label: b.content for b in asyncio.run(session.load_context())}
    if results[0].get("is_error"):
        assert after == before  # a refused write changed nothing
        assert run.changed_labels == []
    else:
        changed = {label for label in after if after[label] != before[label]}
        assert changed <= set(run.changed_labels)
    for block in session.get_context_blocks():
        if block.max_tokens:
            assert block.tokens <= block.max_tokens
