"""The offline demo model: its answers, and a whole chat through LiteLLM's real path."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatui.core.config import Config
from chatui.core.engine import ChatEngine
from chatui.core.events import MemoryChanged, ReplyDelta, ReplyFinished, TurnFailed, UsageRecorded
from chatui.core.wiring import build_manager
from chatui.llm import demo
from store.compaction import build_summary_prompt
from store.messages import Message

SET_CONTEXT = {
    "type": "function",
    "function": {
        "name": "set_context",
        "parameters": {
            "type": "object",
            "properties": {"label": {"type": "string", "enum": ["memory", "scratchpad"]}},
        },
    },
}
SEARCH = {"type": "function", "function": {"name": "session_search", "parameters": {}}}
TOOLS = [SET_CONTEXT, SEARCH]


def ask(text: str, tools=TOOLS, system: str = "") -> demo.DemoReply:
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": text}
    ]
    return demo.plan_reply(messages, tools)


@pytest.mark.parametrize(
    "said, fact",
    [
        ("Please remember that I like green tea", "The user likes green tea."),
        ("remember my birthday is in May", "The user's birthday is in May."),
        ("Hi, my name is Ada Lovelace.", "The user's name is Ada Lovelace."),
        ("note: the deploy is on Friday", "The deploy is on Friday."),
    ],
)
def test_remembering_calls_set_context_on_memory(said, fact):
    reply = ask(said)
    assert reply.tool_name == "set_context"
    assert reply.arguments == {"label": "memory", "content": fact, "action": "append"}


def test_without_the_tool_it_answers_in_text():
    reply = ask("remember that I like tea", tools=[])
    assert reply.tool_name is None and reply.text


@pytest.mark.parametrize(
    "said, query",
    [
        ("search for kubernetes", "kubernetes"),
        ("Search my past chats for the holiday plan?", "the holiday plan"),
        ("what did we say about pricing?", "pricing"),
    ],
)
def test_searching_calls_session_search(said, query):
    reply = ask(said)
    assert reply.tool_name == "session_search" and reply.arguments == {"query": query}


def test_code_requests_get_markdown_with_a_fenced_block():
    reply = ask("Can you write some rust code for me?")
    assert "```rust\n" in reply.text and reply.text.count("```") == 2


def test_compaction_prompt_gets_the_four_sections():
    history = [
        Message(id="1", role="user", parts=[{"type": "text", "text": "plan a trip"}]),
        Message(id="2", role="assistant", parts=[{"type": "text", "text": "sure"}]),
    ]
    reply = demo.plan_reply(
        [{"role": "user", "content": build_summary_prompt(history, "old summary")}]
    )
    for section in ("## Topic", "## Key Points", "## Current State", "## Open Items"):
        assert section in reply.text
    assert "plan a trip" in reply.text and "old summary" in reply.text


def test_recall_reads_the_memory_block_from_the_system_prompt():
    banner = "═" * 46
    system = (
        f"{banner}\nSOUL [readonly]\n{banner}\nBe kind.\n\n"
        f"{banner}\nMEMORY (facts) [writable]\n{banner}\nThe user likes tea."
    )
    assert "The user likes tea." in ask("what do you remember about me?", system=system).text


def test_a_question_about_the_user_is_answered_from_memory():
    """ "remember that my favourite colour is green", then "what is my favourite colour?"
    got "You wrote 5 words": the first thing a user tries after a memory write."""
    banner = "═" * 46
    system = (
        f"{banner}\nMEMORY (facts) [writable]\n{banner}\n"
        "The user's favourite colour is green.\nThe user lives in Lyon."
    )
    reply = ask("What is my favourite colour?", system=system).text
    assert "> The user's favourite colour is green." in reply and "Lyon" not in reply
    assert "nothing about your dog's name" in ask("what's my dog's name", system=system).text
    assert "My memory block is empty" in ask("what is my name?").text  # _RECALL's, as before


def test_after_a_tool_result_it_confirms_in_words():
    messages = [
        {"role": "user", "content": "remember that I like tea"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": "set_context",
                        "arguments": json.dumps(
                            {"label": "memory", "content": "The user likes tea."}
                        ),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Appended to 'memory'."},
    ]
    reply = demo.plan_reply(messages, TOOLS)
    assert reply.tool_name is None and "The user likes tea." in reply.text
    messages[-1]["content"] = "Error: 'memory' would hold 2000 tokens; its limit is 1100"
    assert "did not work" in demo.plan_reply(messages, TOOLS).text


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300), st.lists(st.sampled_from([SET_CONTEXT, SEARCH, {}, {"x": 1}])))
def test_any_input_gets_an_answer_never_an_exception(text, tools):
    reply = demo.plan_reply([{"role": "user", "content": text}], tools)
    assert reply.text or reply.tool_name
    if reply.arguments is not None:
        json.dumps(reply.arguments)
    assert "".join(demo._pieces(reply.text)) == reply.text


def test_odd_message_shapes_do_not_break_it():
    assert demo.plan_reply([]).text
    assert demo.plan_reply([{"role": "user", "content": None}]).text
    assert demo.plan_reply([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]).text
    assert demo.plan_reply([{"content": "no role"}], None).text


def test_attached_files_are_named_not_mangled_into_keywords():
    """A file sent with a question: the demo says what arrived (name, lines, first
    line), not "mostly about *notes.md]*, *[attached*" from the part's header."""
    from chatui.core.convert import attachment_content

    part = {"name": "notes.md", "mime": "text/markdown"}
    text = attachment_content(part, lambda _: b"line one\nsecret plans: none\n")
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    content = [{"type": "text", "text": "what is in this file?"}, *text, image]
    reply = demo.plan_reply([{"role": "user", "content": content}], TOOLS).text
    assert "**notes.md**, 2 lines, beginning *line one*" in reply
    assert "an image, which I cannot see" in reply
    assert "[" not in reply and "mostly about" not in reply
    empty = attachment_content({"name": "e.txt", "mime": "text/plain"}, lambda _: b"")
    assert "**e.txt**, 0 lines, empty" in demo.plan_reply([{"role": "user", "content": empty}]).text


def test_keywords_leave_brackets_out():
    reply = ask("[bracketed] (parenthesised) sentences", tools=None).text
    assert "*bracketed*" in reply and "*parenthesised*" in reply


def test_delay_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(demo.DEMO_DELAY_ENV, raising=False)
    assert demo._delay(None) == demo.DEFAULT_DELAY
    monkeypatch.setenv(demo.DEMO_DELAY_ENV, "0")
    assert demo._delay(None) == 0
    monkeypatch.setenv(demo.DEMO_DELAY_ENV, "fast please")
    assert demo._delay(None) == demo.DEFAULT_DELAY


# -- a whole chat -------------------------------------------------------------------------


@pytest.fixture
def demo_chat(store, monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(demo.DEMO_DELAY_ENV, "0")
    config = Config()  # the default model is demo
    manager = build_manager(store, config)
    engine = ChatEngine(manager, config, flush_interval=0.0)
    return engine, manager, manager.create("demo chat").id


async def test_demo_streams_and_remembers_through_litellm(demo_chat):
    engine, manager, sid = demo_chat
    events = [e async for e in engine.send(sid, "hello")]
    assert of_type(events, TurnFailed) == []
    deltas = of_type(events, ReplyDelta)
    assert len(deltas) > 10
    final = of_type(events, ReplyFinished)[0].message
    assert final.text == "".join(d.text for d in deltas) and "demo model" in final.text
    assert final.metadata["model"] == "demo"
    usage = of_type(events, UsageRecorded)[0]
    assert usage.input_tokens > 0 and usage.output_tokens > 0 and usage.cost == 0.0

    events = [e async for e in engine.send(sid, "remember that I like green tea")]
    assert of_type(events, MemoryChanged)[0].labels == ("memory",)
    session = manager.get_session(sid)
    assert "The user likes green tea." in session.get_context_block("memory").content
    statuses = [e.status for e in of_type(events, ReplyFinished)]
    assert statuses == ["tool_calls", "complete"]
    assert "saved" in of_type(events, ReplyFinished)[-1].message.text

    events = [e async for e in engine.send(sid, "what do you remember?")]
    assert "green tea" in of_type(events, ReplyFinished)[0].message.text


async def test_demo_searches_past_chats(demo_chat):
    engine, manager, sid = demo_chat
    other = manager.create("older chat").id
    await manager.append(
        other,
        {"id": "o1", "role": "user", "parts": [{"type": "text", "text": "the zeppelin project"}]},
    )
    events = [e async for e in engine.send(sid, "search for zeppelin")]
    final = of_type(events, ReplyFinished)[-1].message
    assert "zeppelin" in final.text and "older chat" in final.text


async def test_demo_writes_compaction_summaries(demo_chat):
    engine, manager, sid = demo_chat
    for i in range(8):
        _ = [e async for e in engine.send(sid, f"topic number {i} is interesting")]
    compaction = await engine.compact(sid)
    assert compaction is not None and "## Open Items" in compaction.summary


def of_type(events, kind):
    return [e for e in events if isinstance(e, kind)]


async def test_the_demos_count_holds_the_tools_as_the_sidebars_estimate_does(demo_chat):
    """The demo counts the tools it was sent, as a server that renders them does: its
    count of a first request once fell to half the sidebar's estimate of it (the tools
    left out), and the context gauge went down when the first message was sent."""
    engine, manager, sid = demo_chat
    session = manager.get_session(sid)
    before = (await engine.measure(session, None, "demo")).usage
    assert before.tools > 100
    events = [e async for e in engine.send(sid, "hello")]
    counted = of_type(events, UsageRecorded)[0].input_tokens
    assert counted >= before.prompt + before.tools
