"""The sidebar's figure against the prompt tokens the server counts (issue 22): the
chat template's own tokens learned from the server's usage (`TemplateCosts`), exact
figures where only counted pieces changed, and LiteLLM's tokenizer for OpenAI's
hosted models. Through LiteLLM's real client against the scripted server, whose
toy tokenizer counts the prompt as its ChatML template renders it."""

from __future__ import annotations

import pytest

from chatui.core.events import ContextMeasured, ReplyDelta, UsageRecorded
from chatui.llm.template_cost import TEMPLATES, Piece, TemplateCosts
from chatui.llm.tokens import TOKENS
from store import Message
from tests import llm_server as script
from tests.test_engine import make_chat, of, run


@pytest.fixture(autouse=True)
def _fresh_books():
    from chatui.llm.quirks import QUIRKS

    for book in (TOKENS, TEMPLATES, QUIRKS):
        book.clear()
    yield
    for book in (TOKENS, TEMPLATES, QUIRKS):
        book.clear()


@pytest.fixture
def local(store, llm_server, fake_key):
    llm_server.llama_cpp_python(n_ctx=8192)  # streams without usage, as it does
    llm_server.default = script.text("ok")  # what the background counts get back
    return make_chat(store, llm_server)


async def next_figure(chat, question: str):
    """The figure of the request `question` would send now (the sidebar's figure with
    the question on top), counted by the server where it counts."""
    model = chat.engine.model_for(chat.sid)
    history = [
        *chat.session.get_history(None),
        Message(id="next", role="user", parts=[{"type": "text", "text": question}]),
    ]
    measured = await chat.engine.measure(chat.session, None, model, history=history)
    if await chat.engine.count_tokens(model, measured):
        measured = await chat.engine.measure(chat.session, None, model, history=history)
    return measured.usage


async def turn(chat, question: str, *replies) -> list:
    chat.server.script(*(replies or [script.text("A short answer to that.")]))
    events = await run(chat.engine.send(chat.sid, question))
    await chat.engine._window_asked()  # the server's counts asked in the background
    return events


def server_count(chat) -> int:
    """The server's prompt tokens for the last request (a turn of one call: its request)."""
    return chat.server.prompt_tokens[-1]


# -- a server with /tokenize -------------------------------------------------------------


@pytest.mark.parametrize("renders_tools", [True, False], ids=["tools", "tools-dropped"])
async def test_the_figure_is_the_servers_count_once_two_requests_taught_the_template(
    local, renders_tools
):
    """Counted pieces miss the template (its tokens around each message, the tools as
    it renders them or not at all): once the server counted one request the figure is
    close, and from the third on (two counts with different message counts) it is the
    server's count."""
    local.server.function_calling = renders_tools
    errors = []
    for i, question in enumerate(["Hello there.", "Tell me more, please.", "And then?", "Ok."]):
        usage = await next_figure(local, question)
        await turn(local, question)
        errors.append(usage.tokens - server_count(local))
        if i:
            assert usage.exact
    assert abs(errors[1]) / local.server.prompt_tokens[1] <= 0.02, errors
    assert errors[2:] == [0, 0], errors


async def test_a_server_streaming_without_usage_is_asked_once_for_its_counts(local):
    """llama-cpp-python streams no usage: after the first reply the engine asks, once
    and in the background, for the prompt tokens of two small requests with the chat's
    tools (not streamed, one token each); from then on the figure is the server's count."""
    local.server.function_calling = False  # the default template: it streams
    local.server.default = script.text("ok")  # what the probes get back
    errors = []
    for question in ["Hello there.", "Tell me more, please.", "And then?"]:
        usage = await next_figure(local, question)
        await turn(local, question)
        await local.engine._window_asked()  # the background questions answered
        errors.append((usage.tokens - server_count(local), usage.exact))
    probes = [r for r in local.server.requests if r.get("max_tokens") == 1]
    assert len(probes) == 2 and all(not r.get("stream") and r["tools"] for r in probes)
    assert errors[1:] == [(0, True), (0, True)], errors
    assert not errors[0][1]  # before: nothing taught, and the sidebar says so
    await turn(local, "Once more.")
    assert len([r for r in local.server.requests if r.get("max_tokens") == 1]) == 2  # once


async def test_a_new_chat_on_a_taught_server_starts_exact(local, store):
    for question in ("One question.", "Another question here."):
        await turn(local, question)
    other = make_chat(store, local.server)
    usage = await next_figure(other, "A first question in a new chat.")
    await turn(other, "A first question in a new chat.")
    assert usage.exact and usage.tokens == server_count(other)


async def test_a_memory_write_is_estimated_until_the_server_counted_the_chat(local):
    """The model writes memory (a tool round): the template renders the tool call its own
    way (its name, its arguments as a string), which no count of its arguments says, so
    the figure the turn ends with is an estimate (it once said exact and was 28 tokens
    under). The server streams no usage: it is asked in the background for the chat's
    count, and the figure is then exact again: the next request's count."""
    for question in ("One question.", "Another question here."):
        await turn(local, question)
    local.server.script(
        script.tool_calls(
            ("c1", "set_context", {"label": "memory", "content": "Likes tea.", "action": "append"})
        ),
        script.text("Saved."),
    )
    events = await run(local.engine.send(local.sid, "Remember that I like tea."))
    assert "tea" in local.session.get_context_block("memory").content
    assert not of(events, ContextMeasured)[-1].measured.usage.exact
    asked = len(local.server.requests)
    await local.engine._window_asked()
    assert [r.get("max_tokens") for r in local.server.requests[asked:]] == [1]  # the count
    usage = await next_figure(local, "What do I like?")
    await turn(local, "What do I like?")
    assert usage.exact and usage.tokens == server_count(local)


async def test_the_figure_shown_after_a_turn_is_the_one_the_next_request_confirms(local):
    """What the sidebar shows at the end of a turn (`ContextMeasured`) plus the next
    question's tokens and its message's cost is what the server counts next."""
    for question in ("One question.", "Another question here."):
        await turn(local, question)
    events = await turn(local, "A third one.")
    shown = of(events, ContextMeasured)[-1].measured.usage
    assert shown.exact and shown.template != 0  # the template's share is learned
    await turn(local, "x")
    per_message = round(TEMPLATES.per_message(_key(local)))
    assert per_message == 3  # the toy ChatML: <|im_start|>, the role, <|im_end|>
    assert shown.tokens + script.count_tokens("x") + per_message == server_count(local)


def _key(chat) -> str:
    from chatui.llm.template_cost import server_key

    tools = chat.server.requests[-1].get("tools") or []
    names = [t["function"]["name"] for t in tools]
    return server_key(chat.config.api_base, chat.config.model, names)


async def test_a_bos_the_tokenize_route_adds_to_every_text_is_counted_once(local):
    """llama-cpp-python's `/extras/tokenize` adds a BOS to each text it is given (for a
    model that takes one); the prompt has one. The route's tokens for the empty text
    are taken off each piece, so the pieces alone are not one token a piece over."""
    local.server.tokenize_bos = True
    await next_figure(local, "Hello there.")
    assert {"content": ""} in local.server.tokenize_requests  # asked once, when found
    await turn(local, "Hello there.")
    system = local.server.requests[-1]["messages"][0]["content"]
    assert TOKENS.known(local.server.base_url, system) == script.count_tokens(system)
    assert TOKENS.known(local.server.base_url, "Hello there.") == 3


async def test_vllms_tokenize_route_counts_too(local):
    """vLLM's `/tokenize` takes {"prompt"} (asked without special tokens); the other
    routes answer 400/404 there. Its counts make the figure exact as llama.cpp's do."""
    local.server.tokenize_shape = "vllm"
    errors = []
    for question in ["Hello there.", "Tell me more, please.", "And then?"]:
        usage = await next_figure(local, question)
        await turn(local, question)
        errors.append(usage.tokens - server_count(local))
    assert local.server.tokenize_requests
    assert all(
        set(r) == {"prompt", "add_special_tokens"} and r["add_special_tokens"] is False
        for r in local.server.tokenize_requests
    )
    assert TOKENS.counts(local.server.base_url) is True
    assert errors[2] == 0, errors


# -- a server that counts but has no /tokenize (Ollama) ---------------------------------


async def test_usage_makes_the_figure_exact_where_only_the_reply_was_added(
    store, llm_server, fake_key
):
    """Ollama reports its counts (usage) but has no tokenize route: before any request
    the figure is an estimate; after one, the sidebar's figure is the server's count of
    that request plus the reply as the server counted it (`completion_tokens`): exact."""
    llm_server.counted_usage = True
    chat = make_chat(store, llm_server)
    before = await next_figure(chat, "Hello there, how are you today?")
    assert not before.exact
    events = await turn(chat, "Hello there, how are you today?", script.text("Fine, thanks."))
    shown = of(events, ContextMeasured)[-1].measured.usage
    assert shown.exact
    assert TOKENS.counts(llm_server.base_url) is False  # no route: nothing tokenized
    await turn(chat, "x")
    # The template's 3 tokens a message are not learned where pieces are estimates:
    # 4 are assumed for each of the two messages added (the reply and the question).
    expected = shown.tokens + script.count_tokens("x") + 4
    assert abs(expected - server_count(chat)) <= 2, (expected, server_count(chat))


async def test_a_changed_prompt_on_a_server_without_tokenize_is_an_estimate_again(
    store, llm_server, fake_key
):
    llm_server.counted_usage = True
    chat = make_chat(store, llm_server)
    await turn(chat, "Hello.", script.text("Hi."))
    chat.session.set_branch(chat.session.get_latest_leaf().id)
    await chat.session.append_context_block("memory", "The user likes tea and long walks.")
    usage = await next_figure(chat, "What do I like?")
    assert not usage.exact  # the prompt changed and nobody counted the new one


async def test_a_stand_in_usage_figure_is_not_learned(store, llm_server, fake_key):
    """A server (or proxy) reporting a prompt count that cannot be the request's (12
    tokens for a prompt of hundreds) teaches nothing: the figure stays the pieces'."""
    chat = make_chat(store, llm_server)
    events = await turn(chat, "Hello.", script.text("Hi.", usage=(12, 7)))
    assert of(events, UsageRecorded)[-1].input_tokens == 12
    shown = of(events, ContextMeasured)[-1].measured.usage
    assert shown.template == 0 and shown.tokens > 200 and not shown.exact


# -- the book on its own -----------------------------------------------------------------


def pieces(*specs: tuple[str, int, bool]) -> list[Piece]:
    return [Piece.of(text, tokens, counted) for text, tokens, counted in specs]


def test_an_anchor_adds_what_changed_and_is_exact_only_if_that_was_counted():
    book = TemplateCosts()
    sent = pieces(("prompt", 100, False), ("question", 10, False))
    assert book.learn("k", "chat", sent, 1, 130)
    reply = pieces(("prompt", 100, False), ("question", 10, False), ("reply", 7, True))
    assert book.figure("k", "chat", reply, 2) == (130 + 7 + 4, True)
    rewritten = pieces(("prompt v2", 110, False), ("question", 10, False), ("reply", 7, True))
    assert book.figure("k", "chat", rewritten, 2) == (130 + 10 + 7 + 4, False)
    other_branch = pieces(("prompt", 100, False), ("another question", 30, False))
    assert book.figure("k", "chat", other_branch, 1) == (130 + 20, False)
    assert book.figure("k", "other chat", reply, 2) is None  # estimates teach no server fit


def test_a_fit_needs_counted_pieces_and_two_message_counts_for_its_slope():
    book = TemplateCosts()
    book.learn("k", "a", pieces(("p", 100, True), ("q", 10, True)), 1, 100 + 10 + 5 + 3)
    assert book.per_message("k") == 4  # one count: the default slope
    book.learn("k", "b", pieces(("p", 100, True), ("q", 10, True), ("r", 5, True)), 3, 133)
    # rest 8 at one message, 18 at three: 5 a message, 3 besides.
    assert book.per_message("k") == 5
    new = pieces(("p", 100, True), ("z", 20, True))
    assert book.figure("k", "c", new, 1) == (100 + 20 + 5 + 3, True)
    assert book.figure("other", "c", new, 1) is None


def test_counts_that_cannot_be_the_requests_are_refused():
    book = TemplateCosts()
    sent = pieces(("prompt", 300, True), ("tools", 500, True))
    assert not book.learn("k", "c", sent, 1, 12)  # a stand-in figure
    assert not book.learn("k", "c", sent, 1, 5000)  # more than twice the whole
    # Only what a server's cache did not hold: under the counted pieces without tools.
    assert not book.learn("k", "c", sent, 1, 250, optional=500)
    assert book.learn("k", "c", sent, 1, 310, optional=500)  # the tools left out: plausible
    assert book.figure("k", "c", sent, 1) == (310, True)


# -- LiteLLM's tokenizer for OpenAI's hosted models --------------------------------------


async def test_an_openai_hosted_model_is_counted_by_litellms_tokenizer(store, fake_key):
    """No server to ask: LiteLLM's tokenizer for the model (tiktoken's encoding shipped
    inside LiteLLM, nothing downloaded) counts each piece."""
    from chatui.core.config import Config
    from chatui.core.engine import ChatEngine
    from chatui.core.wiring import build_manager
    from chatui.llm.env import load_litellm
    from chatui.llm.tokens import counting_key

    litellm = load_litellm()
    config = Config(model="gpt-4o")
    manager = build_manager(store, config)
    engine = ChatEngine(manager, config, flush_interval=0.0)
    sid = manager.create("hosted").id
    assert counting_key(None, "gpt-4o") == "litellm:gpt-4o"
    assert counting_key(None, "anthropic/claude-sonnet-4-5") is None  # no public tokenizer
    session = manager.get_session(sid)
    measured = await engine.measure(session, None, "gpt-4o")
    assert not measured.usage.exact and measured.uncounted
    assert await engine.count_tokens("gpt-4o", measured)
    measured = await engine.measure(session, None, "gpt-4o")
    assert not measured.uncounted  # every piece counted here, without a network
    # Exact once OpenAI's usage for a request taught the template's share; not before.
    assert not measured.usage.exact
    prompt = measured.request.system_prompt
    assert measured.usage.prompt == litellm.token_counter(model="gpt-4o", text=prompt)


def test_a_tokenizer_that_cannot_be_had_offline_leaves_estimates(monkeypatch):
    import chatui.llm.tokens as tokens

    class Offline:
        def token_counter(self, **kwargs):
            raise OSError("the encoding file is not here and there is no network")

    monkeypatch.setattr(tokens, "load_litellm", Offline)
    book = tokens.TokenBook()
    assert not book.count("litellm:gpt-4o", ["Hello"])
    assert book.counts("litellm:gpt-4o") is False
    assert book.missing("litellm:gpt-4o", ["Hello"]) == []  # never asked again


# -- the counts give way to the user --------------------------------------------------


async def until(condition, what: str) -> None:
    """Until `condition()` holds (a guard of 20 s says what never came)."""
    import asyncio

    try:
        async with asyncio.timeout(20):
            while not condition():
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"never: {what}") from None


async def test_a_background_count_gives_way_to_the_users_next_message(local, store):
    """Issue 22: llama-cpp-python answers one request at a time, and the count asked in
    the background after a reply (a whole call with the tools) held the server when the
    user sent next: the reply waited behind it. A turn now cancels its server's counts
    not yet answered (a count queued behind the server's lock is then dropped by it, as
    here), and they are asked again after the next reply."""
    import asyncio
    import threading

    local = make_chat(store, local.server, request_timeout=60.0)  # no count times out
    local.server.function_calling = False  # the default template: it streams
    gate = threading.Event()
    local.server.count_gate = gate  # the server is busy: the count waits at its lock
    try:
        await run(local.engine.send(local.sid, "Hello there."))
        await until(
            lambda: any(r.get("max_tokens") == 1 for r in local.server.requests),
            "the background count reached the server",
        )
        local.server.script(script.text("The next reply."))
        try:
            async with asyncio.timeout(20):
                events = await run(local.engine.send(local.sid, "And the next one?"))
        except TimeoutError:
            raise AssertionError("the user's turn waited for the background count") from None
        assert of(events, UsageRecorded)  # the user's turn ran meanwhile
    finally:
        gate.set()
    await until(lambda: local.server.counts, "the count at the server came to an end")
    assert local.server.counts[0] == "dropped"  # was "answered": its client had stayed

    await local.engine._window_asked()  # asked again after the second reply
    assert local.server.counts == ["dropped", "answered", "answered"]
    usage = await next_figure(local, "Ok.")
    await turn(local, "Ok.")
    assert usage.exact and usage.tokens == server_count(local)


async def test_a_background_count_waits_for_the_turns_on_its_server(local, store):
    """A count asked while another chat's reply streams from the same server waits for
    that reply's end: sent at once, it would queue behind the reply and then hold the
    server when the user sends next."""
    import time

    local.server.function_calling = False
    other = make_chat(store, local.server)
    local.server.script(script.hang(30, text_before="Still writing"))
    streaming = other.engine.send(other.sid, "Write a long story.")
    async for event in streaming:
        if isinstance(event, ReplyDelta):
            break  # the other chat's reply is streaming
    local.server.script(script.text("A short answer to that."))
    await run(local.engine.send(local.sid, "Hello there."))
    await until(lambda: local.engine._counting, "a count asked in the background")
    ended = time.monotonic()
    await streaming.aclose()  # the other reply stops: the server is free
    await local.engine._window_asked()
    server = local.server
    counts = [
        t
        for r, t in zip(server.requests, server.request_times, strict=True)
        if r.get("max_tokens") == 1
    ]
    assert len(counts) == 2 and min(counts) > ended


async def test_a_probe_its_server_could_not_count_claims_no_exact_figure(local, monkeypatch):
    """A one-request-at-a-time server busy with a reply may not answer a tokenize
    request in time: the probe's second request then teaches no per-message cost. The
    figures after it were marked exact with the default guess and drifted from the
    server's count by a few tokens a turn (-3.8 % after 8 turns on SmolLM2). A figure
    is exact only where the template's cost of each added message was learned."""
    ask = TOKENS._ask
    refused: list[str] = []

    def busy(api_base: str, text: str, timeout: float):
        if text == "Hello." and not refused:  # the probe's second request's reply
            refused.append(text)
            return None
        return ask(api_base, text, timeout)

    monkeypatch.setattr(TOKENS, "_ask", busy)
    local.server.function_calling = False
    questions = ["Hello there.", "Tell me more, please.", "And then?", "Ok.", "Why so?"]
    shown = []
    for question in questions:
        usage = await next_figure(local, question)
        await turn(local, question)
        shown.append((usage.tokens - server_count(local), usage.exact))
    assert refused
    assert all(error == 0 for error, exact in shown if exact), shown
    assert shown[-2:] == [(0, True), (0, True)], shown


async def test_a_probe_cancelled_before_it_began_is_asked_again(local, recwarn):
    """A turn starting right after a reply (before the background probe's task took its
    first step) cancelled it unrun: it was never marked given up, so the server's
    template was never probed again, and its coroutine was left unawaited."""
    import asyncio
    import gc

    from chatui.core.traffic import TRAFFIC
    from chatui.llm.template_cost import server_key

    local.server.function_calling = False
    await run(local.engine.send(local.sid, "Hello there."))
    await local.engine._window_asked()
    TEMPLATES.clear()  # as on a new server: the next reply's end probes it
    engine, api_base = local.engine, local.config.api_base
    session = local.session
    model = engine.model_for(local.sid)
    tools = await engine.tools_for(session)
    measured = await engine.measure(session, None, model)
    engine._teach_template(model, api_base, tools, local.sid, measured, [])
    TRAFFIC.turn_started(api_base)  # the user sends at once: nothing ran yet
    TRAFFIC.turn_ended(api_base)
    await asyncio.gather(*engine._counting, return_exceptions=True)
    key = server_key(api_base, model, list(tools))
    assert TEMPLATES.should_probe(key)  # given up: the next reply's end asks again
    gc.collect()
    assert not [w for w in recwarn if "never awaited" in str(w.message)]
