"""Real local servers' ways (issue 22), through LiteLLM's real client against the
scripted server in its strict llama-cpp-python mode (`LLMServer.llama_cpp_python`)."""

from __future__ import annotations

import pytest

from chatui.core.events import Compacted, Notice, ReplyFinished, TurnFailed
from chatui.llm.quirks import QUIRKS
from store import reply_state, reply_state_label
from tests import llm_server as script
from tests.test_engine import make_chat, of, run


@pytest.fixture(autouse=True)
def _fresh_quirks():
    QUIRKS.clear()
    yield
    QUIRKS.clear()


@pytest.fixture
def local(store, llm_server, fake_key):
    llm_server.llama_cpp_python(n_ctx=4096)  # streams without usage, as it does
    llm_server.default = script.text("ok")  # what the counts asked in the background get
    return make_chat(store, llm_server)


# -- tools ---------------------------------------------------------------------------


async def test_tools_go_with_tool_choice_auto_and_reach_the_prompt(local):
    local.server.script(script.text("plain"), script.text("again"))
    await run(local.engine.send(local.sid, "hello"))
    await run(local.engine.send(local.sid, "hello again"))
    assert all(r["tools"] and r["tool_choice"] == "auto" for r in local.server.requests)
    first = local.server.requests[0]
    # The strict server renders the tools only with a tool_choice: they cost tokens.
    without = script.count_tokens(script.render_prompt(first["messages"], None))
    assert local.server.prompt_tokens[0] > without + 100


async def test_a_tool_choice_broken_off_mid_stream_is_asked_whole_and_words_still_stream(local):
    """llama-cpp-python 0.3 (measured): when its model picks a tool the stream it began
    ends empty and its connection is gone; the client's next request there is reset.
    The call is asked whole on a new connection, the tool runs, and the answer in words
    that follows streams."""
    local.server.script(
        script.tool_calls(
            ("c1", "set_context", {"label": "memory", "content": "tea", "action": "append"})
        ),
        script.text("Saved."),
    )
    events = await run(local.engine.send(local.sid, "remember tea"))
    finished = of(events, ReplyFinished)
    assert [f.status for f in finished] == ["tool_calls", "complete"], of(events, TurnFailed)
    assert finished[-1].message.text == "Saved."
    assert "tea" in local.session.get_context_block("memory").content
    assert local.server.dropped == 1  # the whole call did meet the dropped connection
    assert [bool(r.get("stream")) for r in local.server.requests] == [True, False, True]
    assert local.server.requests[1]["messages"] == local.server.requests[0]["messages"]


async def test_a_server_refusing_streamed_tool_choice_is_called_whole_from_then_on(local):
    local.server.streamed_tool_choice = "refuse"
    local.server.script(
        script.tool_calls(
            ("c1", "set_context", {"label": "memory", "content": "tea", "action": "append"})
        ),
        script.text("Saved."),
        script.text("Still here."),
    )
    events = await run(local.engine.send(local.sid, "remember tea"))
    finished = of(events, ReplyFinished)
    assert [f.status for f in finished] == ["tool_calls", "complete"]
    assert finished[-1].message.text == "Saved."
    assert "tea" in local.session.get_context_block("memory").content
    streamed = [bool(r.get("stream")) for r in local.server.requests]
    # Refused once (streamed), then whole: the tool round and its answer.
    assert streamed == [True, False, False]
    await run(local.engine.send(local.sid, "and now?"))
    assert local.server.requests[-1].get("stream") is not True  # remembered, not re-learned
    assert len(local.server.requests) == 4


async def test_tool_choice_refusal_is_learned_per_server(store, llm_server, fake_key):
    from tests.llm_server import LLMServer

    other = LLMServer().start()  # an ordinary server streams tools as before
    try:
        llm_server.llama_cpp_python()
        strict = make_chat(store, llm_server)
        plain = make_chat(store, other)
        llm_server.script(script.text("a"), script.text("b"))
        other.script(script.text("c"))
        await run(strict.engine.send(strict.sid, "x"))
        await run(plain.engine.send(plain.sid, "y"))
        assert other.requests[-1]["stream"] is True
        assert other.requests[-1]["tool_choice"] == "auto"
    finally:
        other.stop()


# -- truncation ------------------------------------------------------------------------


async def test_a_reply_cut_by_the_length_limit_is_truncated_not_complete(local):
    local.server.script(script.text("The answer is forty", finish_reason="length"))
    local.server.script(script.text("x"))  # the fallback's whole call, if ever made
    events = await run(local.engine.send(local.sid, "what is it?"))
    finished = of(events, ReplyFinished)[-1]
    assert finished.status == "truncated"
    stored = local.session.get_message(finished.message.id)
    assert stored.text == "The answer is forty"
    assert reply_state(stored) == "truncated"
    assert "output limit" in reply_state_label(stored, "truncated")
    assert not of(events, TurnFailed)


async def test_a_whole_call_cut_by_the_length_limit_is_truncated_too(local):
    QUIRKS.learn_unstreamed_tools(local.server.base_url)
    local.server.script(script.text("Half of it", finish_reason="length"))
    events = await run(local.engine.send(local.sid, "go"))
    assert local.server.last.get("stream") is not True
    assert of(events, ReplyFinished)[-1].status == "truncated"


@pytest.mark.parametrize("chat_cap", [None, 300], ids=["default-cap", "chat-max-tokens"])
async def test_a_whole_call_after_an_empty_stream_has_the_streamed_calls_output_cap(
    local, chat_cap
):
    """A tool call asked whole after the stream broke off cannot be watched as it is
    written: it carries the chat's max_tokens, else `WHOLE_CALL_MAX_TOKENS` (it once
    had none, and SmolLM2 wrote tool arguments for 93 s of a 120 s timeout)."""
    from chatui.llm import WHOLE_CALL_MAX_TOKENS

    if chat_cap:
        local.manager.update_metadata(local.sid, params={"max_tokens": chat_cap})
    local.server.script(
        script.tool_calls(("set_context", {"label": "memory", "content": "tea"})),
        script.text("Saved."),
    )
    await run(local.engine.send(local.sid, "remember tea"))
    whole = [r for r in local.server.requests if r.get("stream") is not True]
    assert whole and whole[0]["max_tokens"] == (chat_cap or WHOLE_CALL_MAX_TOKENS)
    assert local.server.requests[0].get("max_tokens") == chat_cap  # the stream's as it was


async def test_a_tool_call_cut_by_the_output_cap_is_truncated_and_not_run(local):
    """The whole call's cap cuts a tool call in its arguments: llama-cpp-python then
    says `finish_reason: "tool_calls"` all the same (measured, a named tool choice,
    0.3.36), its `completion_tokens` the cap. The reply is shown truncated, the cut
    call is not run (no error sent back to the model for another round), and the
    notice says what to do."""
    local.server.honours_max_tokens = True
    local.manager.update_metadata(local.sid, params={"max_tokens": 12})
    memory = local.session.get_context_block("memory").content
    local.server.script(
        script.tool_calls(
            ("set_context", {"label": "memory", "content": "tea, " * 30, "action": "append"})
        )
    )
    events = await run(local.engine.send(local.sid, "remember tea"))
    finished = of(events, ReplyFinished)
    assert [f.status for f in finished] == ["truncated"], of(events, TurnFailed)
    assert reply_state(local.session.get_message(finished[0].message.id)) == "truncated"
    assert local.session.get_context_block("memory").content == memory  # not run
    notes = [n.text for n in of(events, Notice)]
    assert any("set_context" in n and "max_tokens" in n for n in notes), notes
    assert [r.get("stream") for r in local.server.requests[:2]] == [True, None]
    assert len([r for r in local.server.requests if r.get("max_tokens") != 1]) == 2


async def test_a_whole_text_reply_cut_by_the_output_cap_is_truncated(local):
    """A server that refuses streamed tool choices answers in words whole too: cut by
    the cap, the reply is truncated (and continuable) as a streamed one is."""
    QUIRKS.learn_unstreamed_tools(local.server.base_url)
    local.server.honours_max_tokens = True
    local.server.script(script.text("word " * 1500))
    events = await run(local.engine.send(local.sid, "go on and on"))
    finished = of(events, ReplyFinished)[-1]
    assert finished.status == "truncated"
    assert any("ctrl+g" in n.text for n in of(events, Notice))


# -- overflow ----------------------------------------------------------------------------


async def test_an_empty_200_on_overflow_teaches_the_window_and_says_what_to_do(local):
    from chatui.llm.windows import WINDOWS

    local.server.function_calling = False  # the default template: streams with tools
    local.server.script(script.text("Short answer."))
    await run(local.engine.send(local.sid, "first"))
    await local.engine._window_asked()  # the server's counts, asked in the background
    assert local.engine.window("openai/test-model").tokens is None  # nothing says it
    local.server.n_ctx = local.server.prompt_tokens[0] + 5  # the next request overflows
    asked = len(local.server.requests)
    events = await run(local.engine.send(local.sid, "a second, longer question " * 3))
    kinds = [r.get("stream") for r in local.server.requests[asked:]]
    assert kinds[:2] == [True, None]  # the empty 200, then asked whole
    window = WINDOWS.known("openai/test-model", local.config.options_for("openai/test-model"))
    assert window.tokens == local.server.n_ctx and window.source == "error"
    failed = of(events, TurnFailed)
    assert failed and failed[-1].kind == "context_length"
    # Nothing to compact in a two-turn chat: the hint does not send the user to
    # *Compact now*, which would only say so.
    assert "Compact now" not in failed[-1].hint, failed[-1].hint
    assert "new chat" in failed[-1].hint and "context_window" in failed[-1].hint
    # Pressing r does not send it again.
    sent = len(local.server.requests)
    leaf = local.session.get_latest_leaf()
    again = await run(local.engine.regenerate(local.sid, leaf.id))
    assert len(local.server.requests) == sent  # no loop of the same failure
    assert of(again, TurnFailed)[-1].kind == "context_length"
    assert "not sent again" in of(again, TurnFailed)[-1].detail


async def test_a_window_that_fills_as_a_tool_call_is_written_is_said_as_too_long(local):
    """Seen by hand with llama-cpp-python 0.3.36 (a 1,536 window, a 1,484-token
    prompt): the stream broke off as the model picked a tool, the whole call that
    followed failed with the server's "could not broadcast input array…" 500, and the
    app said *Cannot reach the endpoint* (the dropped connection before it, still
    in the error's context). It is the window that is full: said so, with what to do."""
    local.server.tool_call_room = local.server.n_ctx  # no room left for any tool call
    local.server.script(
        script.tool_calls(("c1", "set_context", {"label": "memory", "content": "tea"}))
    )
    events = await run(local.engine.send(local.sid, "remember tea"))
    assert local.server.dropped == 1  # the whole call met the dropped connection first
    failed = of(events, TurnFailed)
    assert failed and failed[-1].kind == "context_length", failed
    assert "Cannot reach" not in failed[-1].title
    assert "too long" in failed[-1].title and "new chat" in failed[-1].hint


async def test_an_overflow_compacts_and_the_answer_comes(store, llm_server, fake_key):
    llm_server.llama_cpp_python(n_ctx=100_000, function_calling=False)
    local = make_chat(store, llm_server)
    for i in range(6):
        llm_server.script(script.text(f"Answer {i}: " + "words " * 40))
        await run(local.engine.send(local.sid, f"question {i} " + "more " * 40))
        await local.engine._window_asked()  # the background counts, as a reader waits
    llm_server.n_ctx = llm_server.prompt_tokens[-1]  # the next request overflows
    llm_server.script(script.text("A summary of the early talk."), script.text("Fits now."))
    events = await run(local.engine.send(local.sid, "one more"))
    assert not of(events, TurnFailed)
    assert of(events, ReplyFinished)[-1].message.text == "Fits now."
    assert local.engine.window("openai/test-model").source == "error"


async def test_an_overflow_a_compaction_cannot_cure_says_why_not_compact_now(
    store, llm_server, fake_key
):
    """Compacted and sent again, the request still overflows (the latest messages are
    kept whole and fill the window): the hint says compacting was not enough, with the
    figures, and does not offer *Compact now*, which would do the same again (it once
    did: a loop of the same failure)."""
    llm_server.llama_cpp_python(n_ctx=100_000, function_calling=False)
    local = make_chat(store, llm_server)
    for i in range(4):
        llm_server.script(script.text(f"Answer {i}."))
        await run(local.engine.send(local.sid, f"question {i}"))
        await local.engine._window_asked()  # the background counts, as a reader waits
    llm_server.default = None  # from here on, only what is scripted
    llm_server.n_ctx = llm_server.prompt_tokens[-1] + 50  # what was short fits, no more
    big = " ".join(f"w{i}" for i in range(300))
    llm_server.script(script.text("A summary of the early talk."))
    events = await run(local.engine.send(local.sid, big))
    assert of(events, Compacted)
    failed = of(events, TurnFailed)
    assert failed and failed[-1].kind == "context_length", failed
    hint = failed[-1].hint
    assert "Compacting was not enough" in hint and "Compact now" not in hint, hint
    assert "ctrl+n" in hint and "context_window" in hint


# -- continue ------------------------------------------------------------------------------


async def test_continue_appends_to_the_same_reply_and_marks_where(local):
    local.server.script(script.text("The answer is forty", finish_reason="length"))
    events = await run(local.engine.send(local.sid, "what is it?"))
    cut = of(events, ReplyFinished)[-1].message
    await local.engine._window_asked()  # the server's counts, asked in the background
    local.server.script(script.text("-two, of course."))
    events = await run(local.engine.continue_reply(local.sid, cut.id))
    finished = of(events, ReplyFinished)[-1]
    assert finished.message.id == cut.id and finished.status == "complete"
    stored = local.session.get_message(cut.id)
    assert stored.text == "The answer is forty-two, of course."
    assert stored.metadata["continued"] == [len("The answer is forty")]
    assert reply_state(stored) == "complete"
    sent = local.server.last["messages"]
    assert sent[-2] == {"role": "assistant", "content": "The answer is forty"}
    assert sent[-1]["role"] == "user" and "Continue it exactly" in sent[-1]["content"]
    assert "tools" not in local.server.last
    # One reply, not a sibling: the path holds question and answer only.
    assert [m.role for m in local.session.get_history()] == ["user", "assistant"]


async def test_only_a_stopped_reply_with_text_can_be_continued(local):
    local.server.script(script.text("Complete."))
    events = await run(local.engine.send(local.sid, "hi"))
    done = of(events, ReplyFinished)[-1].message
    sent = len(local.server.requests)
    for target in (done.id, done.parent_id, "no-such-id"):
        failed = of(await run(local.engine.continue_reply(local.sid, target)), TurnFailed)
        assert failed and failed[0].kind == "bad_input"
    assert len(local.server.requests) == sent
    assert local.session.get_message(done.id).text == "Complete."


async def test_a_failed_continuation_keeps_the_reply_as_it_was(local):
    local.server.script(script.text("Half", finish_reason="length"))
    cut = of(await run(local.engine.send(local.sid, "go")), ReplyFinished)[-1].message
    await local.engine._window_asked()  # the background counts, which take scripted answers
    local.server.script(script.error(500, "the GPU caught fire"))
    events = await run(local.engine.continue_reply(local.sid, cut.id))
    assert of(events, TurnFailed)
    stored = local.session.get_message(cut.id)
    assert stored.text == "Half" and reply_state(stored) == "truncated"


# -- the window everywhere ------------------------------------------------------------------


async def test_the_engine_alone_asks_the_server_for_its_window_and_compacts(
    store, llm_server, fake_key
):
    """A library user with `ChatEngine` only (no workspace) gets the server's window, so
    auto-compaction runs (issue 22, 5)."""
    llm_server.model_info = {"max_model_len": 1000}  # as vLLM says it
    local = make_chat(store, llm_server, compact_at=0.5)
    for i in range(4):
        llm_server.script(script.text(f"Answer {i}: " + "words " * 60))
    llm_server.default = script.text("A summary of it all.")
    for i in range(4):
        events = await run(local.engine.send(local.sid, f"question {i} " + "more " * 60))
    assert local.engine.window("openai/test-model").tokens == 1000
    assert any(p.endswith("/models") for p in llm_server.info_requests)
    assert local.session.get_compactions()  # the engine compacted on its own
    assert sum(p.endswith("/models") for p in llm_server.info_requests) == 1  # asked once
    assert not of(events, TurnFailed)


# -- exact counts ---------------------------------------------------------------------------


async def test_a_server_with_tokenize_gives_an_exact_figure_within_2_percent(local):
    """The sidebar's figure after a turn is the server's tokenizer's count (each piece
    once, through `/tokenize`), within 2 % of the prompt tokens the server then counts;
    and the estimate, before the server counted, says it is one."""
    from chatui.llm.tokens import TOKENS

    TOKENS.clear()
    local.server.function_calling = True
    before = await local.engine.context_usage(local.sid)
    assert not before.exact  # nothing counted yet: an estimate, and it says so
    local.server.script(
        script.text("A fine answer with a few words in it."), script.text("More words here.")
    )
    await run(local.engine.send(local.sid, "Tell me something, please."))
    await local.engine._window_asked()  # the counts a reply asks in the background
    events = await run(local.engine.send(local.sid, "And something more?"))
    assert local.server.tokenize_requests  # the pieces were counted by the server
    measured = [e for e in events if type(e).__name__ == "ContextMeasured"][-1].measured
    assert measured.usage.exact
    # The next request, sent: the server's own count of it.
    local.server.script(script.text("ok"))
    await run(local.engine.send(local.sid, "x"))
    server_count = local.server.prompt_tokens[-1]
    user_x = 1 + 4  # the new question "x" and its message's overhead
    figure = measured.usage.tokens + user_x
    assert abs(figure - server_count) / server_count <= 0.02, (figure, server_count)


async def test_a_server_without_tokenize_stays_estimated_and_is_asked_once(
    store, llm_server, fake_key
):
    from chatui.llm.tokens import TOKENS

    TOKENS.clear()
    local = make_chat(store, llm_server)  # an ordinary server: /tokenize is a 404
    llm_server.script(script.text("One."), script.text("Two."))
    await run(local.engine.send(local.sid, "a"))
    events = await run(local.engine.send(local.sid, "b"))
    measured = [e for e in events if type(e).__name__ == "ContextMeasured"][-1].measured
    assert not measured.usage.exact and not measured.uncounted
    assert TOKENS.counts(llm_server.base_url) is False


@pytest.mark.parametrize("stream_usage", [True, False], ids=["usage", "no-stream-usage"])
async def test_tools_a_template_drops_are_reported_once_with_what_to_do(local, stream_usage):
    """The default template drops the tools: the server's prompt tokens are those of the
    request without them. Said once (a notice naming the flags), not every turn; for a
    server that streams without usage (llama-cpp-python), from its background count."""
    from chatui.core.events import Notice
    from chatui.llm.template_cost import TEMPLATES
    from chatui.llm.tokens import TOKENS

    TOKENS.clear()
    TEMPLATES.clear()
    local.server.stream_usage = stream_usage
    local.server.default = script.text("ok")  # the background counts' answers
    local.server.function_calling = False
    notices = []
    for i in range(4):
        local.server.script(script.text(f"Answer {i}."))
        events = await run(local.engine.send(local.sid, f"question {i}"))
        await local.engine._window_asked()  # a count asked in the background ends before
        # the next send (one still unanswered would give way to it, and be asked later)
        notices += [n.text for n in of(events, Notice) if "left the tools out" in n.text]
    assert len(notices) == 1
    assert "chatml-function-calling" in notices[0] and "--jinja" in notices[0]


@pytest.mark.parametrize("stream_usage", [True, False], ids=["usage", "no-stream-usage"])
async def test_tools_that_reach_the_prompt_are_not_reported(local, stream_usage):
    """Without usage in the stream (llama-cpp-python never sends it), LiteLLM's own
    count of the messages stood in and, having no tools in it, told a server started
    with chatml-function-calling to start with chatml-function-calling."""
    from chatui.core.events import Notice
    from chatui.llm.template_cost import TEMPLATES
    from chatui.llm.tokens import TOKENS

    TOKENS.clear()
    TEMPLATES.clear()
    local.server.stream_usage = stream_usage
    local.server.default = script.text("ok")  # the background counts' answers
    for i in range(3):
        local.server.script(script.text(f"Answer {i}."))
        events = await run(local.engine.send(local.sid, f"question {i}"))
        assert not [n for n in of(events, Notice) if "left the tools out" in n.text]


async def test_a_broken_stream_says_so_in_words_not_the_http_librarys(local):
    local.server.function_calling = False
    local.server.script(script.broken_stream("Hello there world"))
    events = await run(local.engine.send(local.sid, "hi"))
    failed = of(events, TurnFailed)[-1]
    assert failed.kind == "connection" and "broke mid-reply" in failed.title
    assert failed.detail == "The server closed the connection before the reply was complete."
    assert local.session.get_latest_leaf().text.startswith("Hello there")  # kept


def test_served_models_read_both_shapes_and_ignore_nonsense(llm_server):
    from chatui.llm.served import SERVED, _ids

    assert _ids({"data": [{"id": "a"}, {"id": "b"}, {"id": 3}, "x"]}) == ["a", "b"]
    assert _ids({"models": [{"name": "llama3.2:latest"}, {"name": " "}]}) == ["llama3.2:latest"]
    assert _ids([1, 2]) == [] and _ids({"data": "nope"}) == []
    SERVED.clear()
    llm_server.model_ids = ()  # an empty list: nothing learned, nothing broken
    assert SERVED.refresh(llm_server.base_url) is False
    assert SERVED.known(llm_server.base_url) == []
    assert SERVED.refresh("http://127.0.0.1:9/v1", timeout=0.5) is False  # nobody there
