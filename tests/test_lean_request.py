"""The chat-completion body without the OpenAI client's type walk is the body it would send."""

from __future__ import annotations

import datetime
from typing import Annotated

import pytest
from openai._utils import PropertyInfo
from typing_extensions import TypedDict

from chatui.llm import warm_up
from chatui.llm.lean_request import install, reshapes

BODIES = [
    {
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": [{"type": "text", "text": "What is this?"}]},
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "set_context", "arguments": '{"a": 1}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
        ],
        "model": "smollm2",
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "set_context",
                    "description": "Write a block.",
                    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
                },
            }
        ],
        "tool_choice": "auto",
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 24,
        "temperature": 0.0,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "x", "schema": {"type": "object"}},
        },
    },
    {"messages": [{"role": "user", "content": "hi"}], "model": "m", "stream": False, "seed": 3},
]


@pytest.fixture(scope="module")
def lean():
    warm_up()  # installs it, as the model process's warm-up does
    import openai.resources.chat.completions.completions as completions

    assert install()
    assert getattr(completions.async_maybe_transform, "chatui_lean", False)
    return completions.async_maybe_transform


def _kind(body):
    from openai.types.chat import completion_create_params as params

    if body.get("stream"):
        return params.CompletionCreateParamsStreaming
    return params.CompletionCreateParamsNonStreaming


@pytest.mark.parametrize("body", BODIES)
async def test_the_lean_body_is_the_client_s_own(lean, body):
    import openai
    from openai._utils._transform import async_maybe_transform

    sent = {**body, "user": openai.omit, "seed": body.get("seed", openai.NOT_GIVEN)}
    assert await lean(sent, _kind(body)) == await async_maybe_transform(sent, _kind(body))
    assert "user" not in await lean(sent, _kind(body))


async def test_what_is_not_plain_json_goes_through_the_client_s_transform(lean):
    from openai._utils._transform import async_maybe_transform

    body = {"messages": ({"role": "user", "content": "hi"},), "model": "m", "stream": True}
    shaped = await lean(body, _kind(body))
    assert shaped == await async_maybe_transform(body, _kind(body))
    assert shaped["messages"] == [{"role": "user", "content": "hi"}]  # the tuple: a list
    dated = {**body, "metadata": {"when": datetime.date(2024, 1, 2)}}
    assert await lean(dated, _kind(body)) == await async_maybe_transform(dated, _kind(body))


class Plain(TypedDict):
    text: str


class Aliased(TypedDict):
    text: Annotated[str, PropertyInfo(alias="content")]


class Formatted(TypedDict):
    when: Annotated[datetime.date, PropertyInfo(format="iso8601")]


class Outer(TypedDict):
    parts: list[Plain | Aliased]


def test_an_alias_or_a_format_anywhere_keeps_the_client_s_transform():
    assert not reshapes(Plain)
    assert reshapes(Aliased)
    assert reshapes(Formatted)
    assert reshapes(Outer)
