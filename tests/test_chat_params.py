"""A chat's parameters (chatui.core.params): names checked against LiteLLM's list, values
by type and range, written and read back as TOML lines."""

from __future__ import annotations

import re

import pytest

from chatui import llm
from chatui.core.params import ParamsError, check_params, params_text, parse_params
from store import BranchSite, StoreContextProvider


@pytest.fixture(scope="module")
def known() -> frozenset[str]:
    llm.load_litellm()
    return llm.known_params()


def test_litellm_parameters_are_known(known):
    assert {"temperature", "max_tokens", "top_p", "seed", "stop"} <= known


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("temperature = 2.5", "temperature must be a number from 0 to 2"),
        ("temperature = 'hot'", "temperature must be a number"),
        ("top_p = -0.1", "top_p must be a number from 0 to 1"),
        ("max_tokens = 0", "max_tokens must be a whole number of at least 1"),
        ("max_tokens = 1.5", "max_tokens must be a whole number"),
        ("max_tokens = true", "max_tokens must be a whole number"),
        ("seed = 'x'", "seed must be a whole number"),
        ("stop = ['a', 'b', 'c', 'd', 'e']", "stop must be a string or a list of 1 to 4"),
        ("reasoning_effort = 'max'", "reasoning_effort must be one of"),
        ("logit_bias = 3", "logit_bias must be a table"),
        ("api_key = 'sk-secret'", "API keys come from the environment"),
        ("model = 'gpt-4o'", "picked with ctrl+l"),
        ("stream = false", "chatui always streams"),
        ("temprature = 0.2", "did you mean temperature"),
        ("wibble = 1", "unknown parameter 'wibble'"),
    ],
)
def test_bad_parameters_are_refused_with_the_reason(known, text, problem):
    with pytest.raises(ParamsError, match=re.escape(problem)):
        check_params(parse_params(text), known)


def test_text_that_is_not_toml_says_so():
    with pytest.raises(ParamsError, match="not `name = value` lines"):
        parse_params("temperature 0.2")


def test_parameters_round_trip_through_their_text(known):
    params = check_params(
        parse_params(
            'temperature = 1\nmax_tokens = 50\nstop = ["END", "\\n\\n"]\n'
            'extra_body = { "think" = false, "options" = { "num_ctx" = 4096 } }\n'
            "logprobs = true\ntop_k = 40\n"
        ),
        known,
    )
    assert params["temperature"] == 1.0 and isinstance(params["temperature"], float)
    assert parse_params(params_text(params)) == params
    assert parse_params(params_text({})) == {}


async def test_a_configured_text_is_the_default_until_a_chat_rewrites_it(store, manager):
    chat = manager.create("c")
    provider = StoreContextProvider(store, chat.id, "soul", branches=True, default="Config text.")
    site = BranchSite(chat.id, None)
    assert await provider.get_at(site) == "Config text."
    await provider.set_at("", site)  # an empty write is a real, empty content
    assert await provider.get_at(site) == ""
    await provider.set_at("Mine.", site)
    assert await provider.get_at(site) == "Mine."
    assert (
        await StoreContextProvider(store, "other", "soul", branches=True, default="d").get() == "d"
    )
