"""LiteLLM's success logging after a stream runs only when a callback of LiteLLM's listens."""

from __future__ import annotations

import asyncio

import pytest

from chatui import llm
from tests import llm_server as script

MODEL = "openai/test-model"
HI = [{"role": "user", "content": "hi"}]


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
