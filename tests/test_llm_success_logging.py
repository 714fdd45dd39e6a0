"""LiteLLM's success logging after a stream runs only when a callback of LiteLLM's listens."""

from __future__ import annotations

import asyncio

import pytest

from chatui import llm
from tests import llm_server as script
from tests.app_helpers import spy

MODEL = "openai/test-model"
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(autouse=True)
def callbacks_restored(monkeypatch):
    """LiteLLM's callback lists as they were after each test: a call moves a callback
    set in `litellm.callbacks` into its other lists, where it would go on listening."""
    from chatui.llm.env import load_litellm

    litellm = load_litellm()
    for name in ("success_callback", "_async_success_callback", "failure_callback"):
        monkeypatch.setattr(litellm, name, list(getattr(litellm, name)))
    monkeypatch.setattr(litellm, "_async_failure_callback", list(litellm._async_failure_callback))


@pytest.fixture
def dispatched(monkeypatch):
    """The streams whose success logging LiteLLM dispatched."""
    from chatui.llm.env import load_litellm

    load_litellm()
    from litellm.litellm_core_utils.litellm_logging import Logging

    calls: list[object] = []
    original = Logging.dispatch_success_handlers

    async def counting(self, *args, **kwargs):
        calls.append(self)
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(Logging, "dispatch_success_handlers", counting)
    return calls


async def settled() -> None:
    """Until LiteLLM's background tasks (a stream's logging) have run."""
    while len(asyncio.all_tasks()) > 1:
        await asyncio.sleep(0)


async def stream(server) -> list[llm.Chunk]:
    return [c async for c in llm.stream_completion(MODEL, HI, api_base=server.base_url, timeout=5)]


async def test_success_logging_runs_only_for_a_listening_callback(
    dispatched, llm_server, fake_key, monkeypatch
):
    """Issue 22: with no callback set (chatui sets none) it priced each reply and built
    a payload for nobody, ~3-4 ms of CPU a call in the model process; a program that sets
    a LiteLLM callback still gets its event. The usage and chatui's own price stay."""
    from litellm.integrations.custom_logger import CustomLogger

    from chatui.llm.env import load_litellm

    llm_server.script(script.text("first reply", usage=(5, 2)), script.text("second", usage=(5, 1)))
    chunks = await stream(llm_server)
    assert chunks[-2:] == [llm.FinishChunk("stop"), llm.UsageChunk(5, 2, 0.0)]

    async with asyncio.timeout(20):  # a guard; the condition is the tasks' end
        await settled()
    assert dispatched == []  # was one: a price and a payload for nobody

    heard = asyncio.Event()

    class Listener(CustomLogger):
        async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
            heard.set()

    monkeypatch.setattr(load_litellm(), "callbacks", [Listener()])
    chunks = await stream(llm_server)
    assert chunks[-1] == llm.UsageChunk(5, 1, 0.0)
    async with asyncio.timeout(20):
        await heard.wait()
    assert len(dispatched) == 1


@pytest.fixture
def priced(monkeypatch):
    """The calls of LiteLLM's own pricing of a call (the price it keeps for itself)."""
    from chatui.llm.env import load_litellm, warm_up

    litellm = load_litellm()
    warm_up()  # what the model process runs before its first call
    return spy(monkeypatch, litellm, "response_cost_calculator", lambda *a, **k: k.get("model"))


async def test_litellm_prices_a_call_only_for_a_listening_callback(
    priced, llm_server, fake_key, monkeypatch
):
    """Issue 22: LiteLLM priced every call twice for itself (when it arrived, when its
    stream ended), read by nothing of chatui's: for a model its table does not know (a
    local one) a row of failed look-ups, ~3 ms of CPU a send in the model process. A
    program that sets a LiteLLM callback or budget still gets it priced."""
    from chatui.llm.env import load_litellm

    llm_server.script(script.text("first reply", usage=(5, 2)), script.text("second", usage=(5, 1)))
    chunks = await stream(llm_server)
    assert chunks[-2:] == [llm.FinishChunk("stop"), llm.UsageChunk(5, 2, 0.0)]
    async with asyncio.timeout(20):  # a guard; the condition is the tasks' end
        await settled()
    assert priced == []  # was two a call

    monkeypatch.setattr(load_litellm(), "max_budget", 100.0)
    chunks = await stream(llm_server)
    assert chunks[-1] == llm.UsageChunk(5, 1, 0.0)
    async with asyncio.timeout(20):
        await settled()
    assert priced  # a budget reads the price: priced again


def test_a_model_without_a_price_is_looked_up_once(monkeypatch):
    """chatui's own price of a reply: a model LiteLLM's table has no price for (any local
    model) was looked up, and refused, after every reply; a priced one still is priced."""
    from chatui.llm.env import load_litellm

    litellm = load_litellm()
    asked: list[str] = []
    original = litellm.cost_per_token

    def counting(*args, **kwargs):
        asked.append(kwargs["model"])
        return original(*args, **kwargs)

    monkeypatch.setattr(litellm, "cost_per_token", counting)
    for _ in range(3):
        assert llm.completion_cost("openai/no-such-model-here", 100, 10) == 0.0
        assert llm.completion_cost("gpt-4o-mini", 100, 10) > 0
    assert asked.count("openai/no-such-model-here") == 1  # was 3
    assert asked.count("gpt-4o-mini") == 3


@pytest.fixture
def assembled(monkeypatch):
    """The replies LiteLLM assembled again from a stream's chunks (`stream_chunk_builder`)."""
    from chatui.llm.env import load_litellm

    litellm = load_litellm()
    return spy(monkeypatch, litellm, "stream_chunk_builder", lambda *a, **k: k.get("messages"))


@pytest.mark.parametrize("server_usage", [True, False])
async def test_a_stream_is_left_after_its_usage_while_nothing_reads_the_rest(
    assembled, llm_server, fake_key, monkeypatch, server_usage
):
    """Issue 22: after a stream's usage chunk LiteLLM assembled the whole reply a second
    time (for a server without usage, its messages tokenised again), deep-copied it and
    assembled it once more for a cache that is not set: about a third of a short reply's
    CPU in the model process. The chunks are the same; with a budget or a cache set,
    LiteLLM's step after the usage runs as before."""
    from chatui.llm.env import load_litellm

    litellm = load_litellm()
    llm_server.stream_usage = server_usage
    llm_server.script(*(script.text("two words", usage=(5, 2)) for _ in range(3)))
    chunks = await stream(llm_server)
    stand_in = llm.litellm_count(MODEL, HI)
    prompt = 5 if server_usage else stand_in
    assert chunks == [
        llm.TextChunk("two"),
        llm.TextChunk(" words"),
        llm.FinishChunk("stop"),
        llm.UsageChunk(prompt, chunks[-1].output_tokens, 0.0),
    ]
    assert chunks[-1].output_tokens == 2 or not server_usage
    # Was 2: once for the usage, once again for nobody; with the server's usage, none
    # (`lean_usage`: its counts are the ones the builder takes).
    first = 0 if server_usage else 1
    assert len(assembled) == first

    monkeypatch.setattr(litellm, "max_budget", 100.0)
    assert await stream(llm_server) == chunks
    assert len(assembled) == first + 2  # a budget reads the rest: assembled twice, as before
    monkeypatch.setattr(litellm, "max_budget", 0.0)

    monkeypatch.setattr(litellm, "cache", litellm.Cache(type="local"))
    assert await stream(llm_server) == chunks
    assert len(assembled) == first + 4  # a cache stores the reply: as before


def test_only_one_reported_usage_with_both_counts_ends_a_stream_early():
    """`lean_usage.reported`: the server's usage when LiteLLM's builder would take it
    as is; anything its own rules would weigh (several events, a missing count, a usage
    kept in a chunk's hidden parameters) is left to them."""
    from litellm.types.utils import ModelResponseStream, Usage

    from chatui.llm.lean_usage import reported

    def chunk(usage=None, hidden=None):
        made = ModelResponseStream()
        if usage is not None:
            made.usage = usage
        if hidden is not None:
            made._hidden_params["usage"] = hidden
        return made

    usage = Usage(prompt_tokens=7, completion_tokens=3)
    assert reported([chunk(), chunk(usage), chunk()]) is usage
    assert reported([chunk(), chunk()]) is None
    assert reported([chunk(usage), chunk(Usage(prompt_tokens=7, completion_tokens=4))]) is None
    assert reported([chunk(hidden=usage), chunk(usage)]) is None
    no_count = Usage(prompt_tokens=7, completion_tokens=3)
    no_count.completion_tokens = None
    assert reported([chunk(no_count)]) is None
