"""The context window: asked of the server, else the config, else LiteLLM's table; an
error that names it teaches it (issue 10). Every source against the loopback server,
and every bad or slow answer."""

from __future__ import annotations

import time

import pytest

from chatui.core.config import Config, ModelOptions
from chatui.llm.windows import WindowBook, ask_server, window_from_error
from tests import llm_server as script

from .app_helpers import make_app, wait_until
from .test_live_chats import ready, send

MODEL = "openai/test-model"


def options(server, window: int | None = None) -> ModelOptions:
    return ModelOptions(api_base=server.base_url, context_window=window)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("context_length", 8192),
        ("max_model_len", 4096),
        ("context_window", 16384),
        ("meta", {"n_ctx_train": 2048}),
        ("meta", {"n_ctx": 1024, "n_ctx_train": 2048}),
    ],
)
def test_v1_models_fields(llm_server, field, value):
    llm_server.model_info = {field: value}
    expected = value if isinstance(value, int) else next(iter(value.values()))
    assert ask_server(llm_server.base_url, MODEL) == expected


def test_llama_cpp_props(llm_server):
    llm_server.props = {"default_generation_settings": {"n_ctx": 8192}}
    assert ask_server(llm_server.base_url, MODEL) == 8192
    llm_server.props = {"n_ctx": 4096}
    assert ask_server(llm_server.base_url, MODEL) == 4096
    assert "/props" in llm_server.info_requests


def test_ollama_api_show(llm_server):
    llm_server.ollama_show = {"model_info": {"llama.context_length": 131072}}
    assert ask_server(llm_server.base_url, MODEL) == 131072


@pytest.mark.parametrize(
    "answer",
    [
        {"context_length": -5},
        {"context_length": "8192"},
        {"context_length": True},
        {"context_length": 10**12},
        {"meta": "n_ctx=8192"},
        {"max_model_len": None},
    ],
)
def test_nonsense_figures_are_ignored(llm_server, answer):
    llm_server.model_info = answer
    llm_server.props = {"default_generation_settings": "x", "n_ctx": [1]}
    llm_server.ollama_show = {"model_info": ["llama.context_length", 5]}
    assert ask_server(llm_server.base_url, MODEL) is None


def test_a_body_that_is_not_json_is_ignored(llm_server):
    llm_server.props = b"<html>not json"
    llm_server.ollama_show = b"\xff\xfe garbage"
    assert ask_server(llm_server.base_url, MODEL) is None


def test_a_slow_server_is_given_up_quickly(llm_server):
    llm_server.model_info = {"context_length": 8192}
    llm_server.info_delay = 5
    started = time.monotonic()
    assert ask_server(llm_server.base_url, MODEL, timeout=0.3) is None
    assert time.monotonic() - started < 2.5


def test_nothing_listening_is_no_answer():
    assert ask_server("http://127.0.0.1:9/v1", MODEL, timeout=0.3) is None


def test_order_of_trust(llm_server):
    book = WindowBook()
    opts = options(llm_server, window=32000)
    assert (book.known(MODEL, opts).tokens, book.known(MODEL, opts).source) == (32000, "config")
    llm_server.model_info = {"context_length": 8192}
    assert book.detect(MODEL, llm_server.base_url)
    assert book.known(MODEL, opts).tokens == 8192 and book.known(MODEL, opts).source == "server"
    assert book.learn_from_error(MODEL, llm_server.base_url, "maximum context length is 4096")
    assert book.known(MODEL, opts).source == "error"
    assert not book.detect(MODEL, llm_server.base_url)  # the server's claim does not win back
    assert book.known(MODEL, opts).tokens == 4096
    assert book.should_ask(MODEL, llm_server.base_url)
    assert not book.should_ask(MODEL, llm_server.base_url)  # once per model and address
    assert not book.should_ask("demo", llm_server.base_url)
    assert not book.should_ask(MODEL, None)


@pytest.mark.parametrize(
    ("message", "window"),
    [
        ("This model's maximum context length is 8192 tokens. However, …", 8192),
        ("the request exceeds the available context size (n_ctx: 4096)", 4096),
        ('{"error": "prompt too long", "n_ctx": 2048, "n_prompt_tokens": 3000}', 2048),
        ("input is longer than the context window of 16,384 tokens", 16384),
        ("context length exceeded", None),
        ("maximum context length is 4 tokens", None),
        ("", None),
        ("n_ctx: 99999999999999", None),
    ],
)
def test_windows_named_in_errors(message, window):
    assert window_from_error(message) == window


async def test_the_sidebar_says_the_server_told_it(store, llm_server, fake_key):
    llm_server.model_info = {"context_length": 8192}
    config = Config(model=MODEL, api_base=llm_server.base_url, max_retries=0)
    app = make_app(store, config)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await app.workspace.settle()
        stats = lambda: app.main.sidebar.stats  # noqa: E731 - redrawn when the answer lands
        await wait_until(pilot, lambda: stats().window_source == "server")
        assert (stats().window, stats().window_source) == (8192, "server")
        gauge = app.main.sidebar.query_one("#conversation-gauge")
        assert "(server)" in gauge.figure


async def test_a_context_length_error_teaches_the_window(store, llm_server, fake_key):
    config = Config(model=MODEL, api_base=llm_server.base_url, max_retries=0)
    llm_server.script(script.context_length_error())
    app = make_app(store, config)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await app.workspace.settle()
        await send(pilot, "Hello")
        await wait_until(pilot, lambda: len(llm_server.requests) >= 1 and not app.main.generating)
        await pilot.pause(0.2)
        stats = app.main.sidebar.stats
        assert (stats.window, stats.window_source) == (8192, "error")
        assert app.main.sidebar.stats.window == 8192


def test_a_model_the_table_does_not_know_is_looked_up_once(monkeypatch):
    """Issue 22: every measure of the next request (several a send) asked LiteLLM's
    model table for the window of a model it does not know (any local one), a row of
    failed look-ups each time; asked once now. A known model is still read."""
    from chatui.llm.env import load_litellm
    from chatui.llm.windows import table_window

    litellm = load_litellm()
    asked: list[str] = []
    original = litellm.get_model_info

    def counting(model, *args, **kwargs):
        asked.append(model)
        return original(model, *args, **kwargs)

    monkeypatch.setattr(litellm, "get_model_info", counting)
    for _ in range(3):
        assert table_window("openai/no-such-window-model") is None
        assert table_window("gpt-4o-mini") == 128000
    assert asked.count("openai/no-such-window-model") == 1  # was 3
    assert asked.count("gpt-4o-mini") == 3
