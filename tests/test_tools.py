"""Memory tools: presence, schemas, effects and bad model input (SPEC 3 tools table)."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import (
    Session,
    SessionManager,
    StaticProvider,
    Store,
    StoreSearchProvider,
    StoreSkillProvider,
)


def memory_session(store, sid="s", max_tokens=50):
    return (
        Session(store)
        .for_session(sid)
        .with_context("soul", provider=StaticProvider("Be kind."))
        .with_context("memory", description="Facts", max_tokens=max_tokens)
    )


async def test_readonly_only_brings_no_tools(store):
    s = Session(store).with_context("soul", provider=StaticProvider("x"))
    assert await s.tools() == {}


async def test_set_context_schema_and_openai_shape(store):
    tools = await memory_session(store).tools()
    assert set(tools) == {"set_context"}
    spec = tools["set_context"].to_openai()
    assert spec["type"] == "function"
    fn = spec["function"]
    assert fn["name"] == "set_context"
    assert fn["parameters"]["properties"]["label"]["enum"] == ["memory"]
    assert fn["parameters"]["required"] == ["label", "content"]
    json.dumps(spec)  # serialisable as LiteLLM sends it


async def test_set_context_replace_append_and_durable(store):
    s = memory_session(store)
    tool = (await s.tools())["set_context"]
    assert not (await tool(label="memory", content="Likes tea.")).startswith("Error")
    out = await tool(label="memory", content="Lives in Oslo.", action="append")
    assert "tokens used" in out
    assert memory_session(store).get_context_block("memory").content == "Likes tea.\nLives in Oslo."


async def test_tool_write_does_not_change_frozen_prompt(store):
    s = memory_session(store)
    frozen = await s.freeze_system_prompt()
    await (await s.tools())["set_context"](label="memory", content="New fact.")
    assert await s.freeze_system_prompt() == frozen
    assert "New fact." in await s.refresh_system_prompt()


@pytest.mark.parametrize(
    "args,needle",
    [
        ({"label": "soul", "content": "x"}, "must be one of"),
        ({"label": "ghost", "content": "x"}, "must be one of"),
        ({"content": "x"}, "missing required"),
        ({"label": "memory"}, "missing required"),
        ({"label": "memory", "content": 42}, "must be string"),
        ({"label": "memory", "content": "x", "action": "delete"}, "must be one of"),
        ({"label": "memory", "content": "x", "bogus": 1}, "unknown argument"),
        ({"label": "memory", "content": "word " * 500}, "limit"),
        ({"label": ["memory"], "content": "x"}, "must be string"),
    ],
)
async def test_bad_arguments_give_error_and_write_nothing(store, args, needle):
    s = memory_session(store)
    await s.replace_context_block("memory", "original")
    out = await (await s.tools())["set_context"](**args)
    assert out.startswith("Error:") and needle in out
    assert memory_session(store).get_context_block("memory").content == "original"


async def test_call_json_handles_garbage(store):
    tool = (await memory_session(store).tools())["set_context"]
    assert (await tool.call_json("{not json")).startswith("Error:")
    assert (await tool.call_json("[1,2]")).startswith("Error:")
    assert (await tool.call_json('{"label":"memory","content":"ok"}')).startswith("Replaced")


async def test_skill_tools_load_unload_and_set(store):
    skills = StoreSkillProvider(store, "skills-ns")
    await skills.set("deploy", "Step 1. Step 2.", "Deploy checklist")
    s = Session(store).for_session("sk").with_context("skills", provider=skills)
    tools = await s.tools()
    assert {"load_context", "unload_context", "set_context"} <= set(tools)
    doc = await tools["load_context"](label="skills", key="deploy")
    assert doc == "Step 1. Step 2."
    # the runtime stores the call and its result as messages
    await s.append_message(
        {
            "id": "a",
            "role": "assistant",
            "parts": [
                {
                    "type": "tool-call",
                    "tool_call_id": "c1",
                    "tool_name": "load_context",
                    "input": {"label": "skills", "key": "deploy"},
                }
            ],
        }
    )
    await s.append_message(
        {
            "id": "t",
            "role": "tool",
            "parts": [
                {
                    "type": "tool-result",
                    "tool_call_id": "c1",
                    "tool_name": "load_context",
                    "output": doc,
                }
            ],
        }
    )
    out = await tools["unload_context"](label="skills", key="deploy")
    assert out.startswith("Unloaded")
    assert "unloaded" in s.get_message("t").parts[0]["output"]
    assert (await tools["unload_context"](label="skills", key="deploy")).startswith("Error:")
    assert (await tools["load_context"](label="skills", key="deploy")) == "Step 1. Step 2."
    assert (await tools["load_context"](label="skills", key="nope")).startswith("Error:")
    saved = await tools["set_context"](
        label="skills", content="New doc", metadata={"title": "My Runbook"}
    )
    assert "my-runbook" in saved
    assert await skills.load("my-runbook") == "New doc"


async def test_search_tool(store):
    kb = StoreSearchProvider(store, "kb")
    await kb.set("a", "the connection pool is exhausted on fridays")
    s = Session(store).for_session("kb").with_context("knowledge", provider=kb)
    tools = await s.tools()
    assert {"search_context", "set_context"} <= set(tools)
    out = await tools["search_context"](label="knowledge", query="connecting")
    assert "fridays" in out
    assert not (await tools["search_context"](label="knowledge", query='"(')).startswith("Error:")


async def test_session_search_tool(store):
    manager = SessionManager(store)
    one = manager.create("Trip planning")
    await manager.append(
        one.id,
        {"id": "m", "role": "user", "parts": [{"type": "text", "text": "flights to Lisbon"}]},
    )
    tool = manager.tools()["session_search"]
    assert tool.to_openai()["function"]["name"] == "session_search"
    out = await tool(query="lisbon")
    assert "Trip planning" in out and "Lisbon" in out
    assert (await tool(query="x", limit="ten")).startswith("Error:")
    assert (await tool(query="x", limit=0)).startswith("Error:")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    args=st.dictionaries(
        st.sampled_from(["label", "content", "action", "metadata", "extra"]),
        st.none()
        | st.integers()
        | st.text(max_size=300)
        | st.lists(st.integers(), max_size=2)
        | st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
    )
)
async def test_any_model_arguments_error_or_valid_write(tmp_path_factory, args):
    with Store(tmp_path_factory.mktemp("h") / "h.db") as store:
        s = memory_session(store, max_tokens=40)
        await s.replace_context_block("memory", "base")
        out = await (await s.tools())["set_context"](**args)
        content = memory_session(store).get_context_block("memory").content
        if out.startswith("Error:"):
            assert content == "base"
        else:
            assert args["label"] == "memory" and args["content"] in content
