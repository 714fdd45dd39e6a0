"""Streamed chunks built by pydantic's validator are the chunks the OpenAI client built."""

from __future__ import annotations

import openai._base_client as base_client
import pytest
from openai._models import construct_type
from openai.types.chat import ChatCompletionChunk

from chatui import llm
from chatui.llm.lean_chunks import install
from tests import llm_server as script

MODEL = "openai/test-model"
HI = [{"role": "user", "content": "hi"}]

HEAD = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000}
CHUNKS = [
    {
        **HEAD,
        "model": "m",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}],
    },
    {**HEAD, "model": "m", "choices": [{"index": 0, "delta": {"content": " ü"}, "logprobs": None}]},
    {
        **HEAD,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "f", "arguments": '{"a"'},
                        }
                    ]
                },
                "finish_reason": None,
            }
        ],
    },
    {**HEAD, "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]},
    {
        **HEAD,
        "model": "m",
        "choices": [],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    },
    # What llama.cpp's server adds (fields the types do not list) and reasoning deltas.
    {
        **HEAD,
        "model": "m",
        "system_fingerprint": "b1",
        "timings": {"predicted_ms": 1.5},
        "choices": [{"index": 0, "delta": {"reasoning_content": "hmm", "content": None}}],
    },
]


@pytest.mark.parametrize("data", CHUNKS)
def test_the_validator_builds_the_chunk_the_client_builds(data):
    lean = ChatCompletionChunk.model_validate(data)
    client = construct_type(type_=ChatCompletionChunk, value=data)
    assert lean == client
    for options in ({}, {"exclude_unset": True}, {"exclude_none": True}):
        assert lean.model_dump(**options) == client.model_dump(**options)
    # The fields given are the same (the validator also lists the extra ones, which
    # every dump includes either way).
    assert lean.model_fields_set & set(ChatCompletionChunk.model_fields) == (
        client.model_fields_set
    )
    for mine, theirs in zip(lean.choices, client.choices, strict=True):
        assert mine.model_fields_set == theirs.model_fields_set
        assert dict(mine.delta) == dict(theirs.delta)


@pytest.fixture
def counted(monkeypatch):
    """How many values the client's own lenient builder built."""
    calls: list[object] = []

    def counting(*, type_, value):
        calls.append(type_)
        return construct_type(type_=type_, value=value)

    monkeypatch.setattr(base_client, "construct_type", counting)
    assert install()
    return calls


async def test_a_stream_s_chunks_skip_the_client_s_builder(counted, llm_server, fake_key):
    """Issue 22: the client's builder cost ~0.1 ms of CPU a chunk in the model process."""
    reply = " ".join(f"w{i}" for i in range(40))
    llm_server.script(script.text(reply, usage=(9, 40)))
    chunks = [
        c async for c in llm.stream_completion(MODEL, HI, api_base=llm_server.base_url, timeout=5)
    ]
    assert "".join(c.text for c in chunks if isinstance(c, llm.TextChunk)) == reply
    assert chunks[-2:] == [llm.FinishChunk("stop"), llm.UsageChunk(9, 40, 0.0)]
    assert counted.count(ChatCompletionChunk) == 0  # was one a chunk: 43


async def test_a_chunk_the_validator_refuses_is_built_by_the_client_as_before(
    counted, llm_server, fake_key
):
    """A finish reason the types do not list is kept, as the lenient builder keeps it."""
    llm_server.script(script.text("odd end", finish_reason="end_of_turn"))
    chunks = [
        c async for c in llm.stream_completion(MODEL, HI, api_base=llm_server.base_url, timeout=5)
    ]
    assert "".join(c.text for c in chunks if isinstance(c, llm.TextChunk)) == "odd end"
    assert counted.count(ChatCompletionChunk) == 1  # that chunk alone
    assert [c for c in chunks if isinstance(c, llm.FinishChunk)]
