"""chatui.llm against the scripted OpenAI-compatible server, through the real LiteLLM client."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap

import pytest

from chatui import llm
from tests import llm_server as script
from tests.conftest import FAKE_OPENAI_KEY

MODEL = "openai/test-model"


async def collect(server, messages=None, **kwargs):
    kwargs.setdefault("timeout", 5)
    chunks = []
    async for chunk in llm.stream_completion(
        MODEL, messages or [{"role": "user", "content": "hi"}], api_base=server.base_url, **kwargs
    ):
        chunks.append(chunk)
    return chunks


async def failure(server, **kwargs) -> tuple[llm.LLMError, list]:
    chunks: list = []
    with pytest.raises(llm.LLMError) as info:
        async for chunk in llm.stream_completion(
            MODEL,
            [{"role": "user", "content": "hi"}],
            api_base=kwargs.pop("api_base") if "api_base" in kwargs else server.base_url,
            timeout=kwargs.pop("timeout", 5),
            **kwargs,
        ):
            chunks.append(chunk)
    return info.value, chunks


# -- streaming -----------------------------------------------------------------------


async def test_streamed_text_arrives_in_order_and_exactly(llm_server, fake_key):
    reply = "Hello there,  world!\n\n```python\nprint('x')\n```\n"
    llm_server.script(script.text(reply, usage=(31, 17)))
    chunks = await collect(llm_server)
    texts = [c.text for c in chunks if isinstance(c, llm.TextChunk)]
    assert len(texts) > 3  # word by word, not one blob
    assert "".join(texts) == reply
    usage = [c for c in chunks if isinstance(c, llm.UsageChunk)]
    assert usage == [llm.UsageChunk(31, 17, 0.0)]  # unknown model: cost 0, never raises


async def test_request_carries_messages_tools_and_the_key_per_call(llm_server, fake_key):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "set_context",
                "description": "x",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    llm_server.script(script.text("ok"))
    messages = [
        {"role": "system", "content": "SYSTEM PROMPT"},
        {"role": "user", "content": "question"},
    ]
    await collect(llm_server, messages, tools=tools)
    sent = llm_server.last
    assert sent["model"] == "test-model"
    assert sent["messages"] == messages
    assert sent["tools"][0]["function"]["name"] == "set_context"
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert llm_server.request_headers[-1]["authorization"] == f"Bearer {FAKE_OPENAI_KEY}"
    import litellm

    assert litellm.api_key is None and litellm.openai_key is None  # no credential globals


async def test_tool_call_arguments_split_across_chunks_are_assembled(llm_server, fake_key):
    args = {"label": "memory", "content": "The user likes tea.", "action": "append"}
    llm_server.script(
        script.tool_calls(
            ("call_a", "set_context", args), ("call_b", "session_search", {"query": "tea"})
        )
    )
    chunks = await collect(llm_server)
    calls = [c for c in chunks if isinstance(c, llm.ToolCallChunk)]
    assert [(c.id, c.name) for c in calls] == [
        ("call_a", "set_context"),
        ("call_b", "session_search"),
    ]
    assert json.loads(calls[0].arguments_json) == args
    assert json.loads(calls[1].arguments_json) == {"query": "tea"}
    assert isinstance(chunks[-1], llm.UsageChunk)


async def test_known_model_gets_a_cost_from_litellm_prices():
    assert llm.completion_cost("gpt-4o-mini", 1_000_000, 0) > 0
    assert llm.completion_cost("openai/no-such-model", 1000, 1000) == 0.0
    assert llm.completion_cost("demo", 1000, 1000) == 0.0


async def test_bare_model_name_to_custom_endpoint_is_sent_as_openai_compatible(
    llm_server, fake_key
):
    llm_server.script(script.text("fine"))
    chunks = []
    async for chunk in llm.stream_completion(
        "my-local-llama",
        [{"role": "user", "content": "x"}],
        api_base=llm_server.base_url,
        timeout=5,
    ):
        chunks.append(chunk)
    assert llm_server.last["model"] == "my-local-llama"
    assert "".join(c.text for c in chunks if isinstance(c, llm.TextChunk)) == "fine"


# -- errors ---------------------------------------------------------------------------


async def test_401_is_auth_with_env_var_hint_and_no_key_in_detail(llm_server, fake_key):
    llm_server.error(401, f"Incorrect API key provided: {FAKE_OPENAI_KEY}.", code="invalid_api_key")
    error, _ = await failure(llm_server)
    assert error.kind == "auth"
    assert "rejected" in error.title
    assert "OPENAI_API_KEY" in error.hint
    assert FAKE_OPENAI_KEY not in error.detail and FAKE_OPENAI_KEY not in str(error)
    assert "Incorrect API key" in error.detail


async def test_403_is_permission(llm_server, fake_key):
    llm_server.error(403, "You are not allowed to use this model", type="permission_error")
    error, _ = await failure(llm_server)
    assert error.kind == "permission"
    assert "ctrl+l" in error.hint


async def test_404_model_not_found(llm_server, fake_key):
    llm_server.error(404, "The model `test-model` does not exist", code="model_not_found")
    error, _ = await failure(llm_server)
    assert error.kind == "not_found"
    assert "test-model" in error.title
    assert "does not exist" in error.detail


async def test_429_is_retried_after_retry_after_then_succeeds(llm_server, fake_key):
    llm_server.script(
        script.error(429, "Rate limit reached", headers={"Retry-After": "0.3"}),
        script.text("made it"),
    )
    chunks = await collect(llm_server, max_retries=2)
    retries = [c for c in chunks if isinstance(c, llm.RetryChunk)]
    assert len(retries) == 1
    assert retries[0].delay == pytest.approx(0.3)
    assert retries[0].error.kind == "rate_limit"
    assert "".join(c.text for c in chunks if isinstance(c, llm.TextChunk)) == "made it"
    assert len(llm_server.requests) == 2
    waited = llm_server.request_times[1] - llm_server.request_times[0]
    assert waited >= 0.28  # Retry-After was honoured


async def test_429_retry_after_ms_header_is_understood(llm_server, fake_key):
    llm_server.script(
        script.error(429, "slow", headers={"retry-after-ms": "120"}), script.text("ok")
    )
    chunks = await collect(llm_server, max_retries=1)
    assert [c.delay for c in chunks if isinstance(c, llm.RetryChunk)] == [pytest.approx(0.12)]


async def test_429_exhausted_fails_after_max_retries(llm_server, fake_key):
    llm_server.script(
        *[
            script.error(429, "Rate limit reached", headers={"Retry-After": "0.05"})
            for _ in range(3)
        ]
    )
    error, chunks = await failure(llm_server, max_retries=2)
    assert error.kind == "rate_limit"
    assert len([c for c in chunks if isinstance(c, llm.RetryChunk)]) == 2
    assert len(llm_server.requests) == 3  # first try + 2 retries, no more
    assert error.retry_after == pytest.approx(0.05)


async def test_500_is_a_server_error_and_not_retried(llm_server, fake_key):
    llm_server.error(500, "The server had an error", type="server_error")
    error, _ = await failure(llm_server, max_retries=2)
    assert error.kind == "server"
    assert len(llm_server.requests) == 1


async def test_context_length_exceeded(llm_server, fake_key):
    llm_server.script(script.context_length_error())
    error, _ = await failure(llm_server)
    assert error.kind == "context_length"
    assert "compact" in error.hint.lower()


async def test_hang_before_first_byte_is_a_timeout(llm_server, fake_key):
    llm_server.script(script.hang(10))
    error, _ = await failure(llm_server, timeout=0.4)
    assert error.kind == "timeout"


async def test_hang_mid_stream_is_a_timeout_after_partial_text(llm_server, fake_key):
    llm_server.script(script.hang(10, text_before="Part of it"))
    error, chunks = await failure(llm_server, timeout=0.4)
    assert error.kind == "timeout" and error.partial
    assert "".join(c.text for c in chunks if isinstance(c, llm.TextChunk)) == "Part of it"


async def test_connection_refused_on_closed_port(fake_key):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    error, _ = await failure(None, api_base=f"http://127.0.0.1:{port}/v1")
    assert error.kind == "connection"
    assert f"127.0.0.1:{port}" in error.title


async def test_stream_cut_mid_token_is_connection_error_after_partial_text(llm_server, fake_key):
    llm_server.script(script.broken_stream("The answer is"))
    error, chunks = await failure(llm_server)
    assert error.kind in ("connection", "bad_response")
    assert error.partial
    assert "".join(c.text for c in chunks if isinstance(c, llm.TextChunk)) == "The answer is"
    assert not any(isinstance(c, llm.UsageChunk) for c in chunks)


async def test_malformed_chunks_are_bad_response(llm_server, fake_key):
    llm_server.script(script.malformed("{not json", text_before="Start"))
    error, chunks = await failure(llm_server)
    assert error.kind == "bad_response"
    assert "Traceback" not in error.detail


async def test_json_error_body_that_is_not_openai_shaped(llm_server, fake_key):
    llm_server.script(script.error(502, body="<html>Bad gateway</html>"))
    error, _ = await failure(llm_server)
    assert error.kind == "server"


# -- secrets ---------------------------------------------------------------------------


def test_redact_removes_key_shapes_and_env_key_values(monkeypatch):
    monkeypatch.setenv("MYPROVIDER_API_KEY", "plain-secret-value-42")
    text = (
        "key sk-proj-abcdefghijklmnop1234 and AIzaSyA1234567890abcdefghijklmnop "
        "Authorization: Bearer abc.def.ghi-123456 api_key=zzzzzzzzzz "
        "and plain-secret-value-42 gsk_abcdefghijklmnopqrstu"
    )
    cleaned = llm.redact(text)
    for secret in (
        "sk-proj-abcdefghijklmnop1234",
        "AIzaSyA1234567890abcdefghijklmnop",
        "abc.def.ghi-123456",
        "zzzzzzzzzz",
        "plain-secret-value-42",
        "gsk_abcdefghijklmnopqrstu",
    ):
        assert secret not in cleaned
    assert cleaned.count("[redacted]") >= 6
    assert llm.redact("nothing secret here") == "nothing secret here"


def test_map_error_never_raises_on_odd_exceptions():
    for exc in (ValueError("x"), RuntimeError(), KeyError("k"), json.JSONDecodeError("m", "d", 0)):
        error = llm.map_error(exc, MODEL)
        assert isinstance(error, llm.LLMError) and error.title


# -- model facts ---------------------------------------------------------------------------


def test_context_window_from_litellm_config_and_demo():
    from chatui.core.config import ModelOptions

    assert llm.context_window("gpt-4o-mini") == 128_000
    assert llm.context_window("demo") == llm.DEMO_CONTEXT_WINDOW == 32_768
    assert llm.context_window("openai/test-model") is None
    assert llm.context_window("openai/test-model", ModelOptions(context_window=4096)) == 4096
    assert llm.context_window("gpt-4o-mini", ModelOptions(context_window=1000)) == 1000


def test_key_problem_names_the_missing_env_var(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    problem = llm.key_problem("gpt-4o-mini")
    assert problem and "OPENAI_API_KEY" in problem
    assert "ANTHROPIC_API_KEY" in (llm.key_problem("anthropic/claude-3-5-haiku-latest") or "")
    assert llm.key_problem("demo") is None
    assert llm.key_problem("gpt-4o-mini", api_base="http://127.0.0.1:1234/v1") is None
    assert llm.key_problem("ollama/llama3") is None  # only an address, which has a default
    monkeypatch.setenv("OPENAI_API_KEY", "sk-whatever-123456")
    assert llm.key_problem("gpt-4o-mini") is None


async def test_local_endpoint_works_without_any_key(llm_server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm_server.script(script.text("local"))
    chunks = await collect(llm_server)
    assert "".join(c.text for c in chunks if isinstance(c, llm.TextChunk)) == "local"


# -- import hygiene and staying offline -------------------------------------------------


def _run(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout


def test_importing_llm_engine_and_demo_does_not_import_litellm():
    out = _run("""
        import sys
        import chatui.llm, chatui.llm.env, chatui.llm.errors, chatui.core.engine, chatui.llm.demo
        import chatui.core.convert, chatui.core.summaries, chatui.core.replies
        print(sorted(m for m in sys.modules if m.split('.')[0] == 'litellm'))
    """)
    assert out.strip() == "[]"


def test_warm_up_imports_litellm_without_touching_the_network():
    out = _run("""
        import socket, sys
        attempts = []
        real = socket.socket.connect
        def guard(self, address):
            attempts.append(address)
            raise OSError("network disabled in this test")
        socket.socket.connect = guard
        real_gai = socket.getaddrinfo
        def gai(host, *a, **k):
            attempts.append(host)
            raise OSError("dns disabled in this test")
        socket.getaddrinfo = gai
        from chatui import llm
        llm.warm_up()
        assert 'litellm' in sys.modules
        llm.context_window('gpt-4o-mini'); llm.key_problem('gpt-4o-mini')
        print(attempts)
    """)
    assert out.strip() == "[]"


async def test_reasoning_content_is_streamed_separately(llm_server, fake_key):
    llm_server.script(script.text("Answer.", reasoning="Let me think step by step."))
    chunks = await collect(llm_server)
    assert (
        "".join(c.text for c in chunks if isinstance(c, llm.ReasoningChunk))
        == "Let me think step by step."
    )
    assert "".join(c.text for c in chunks if isinstance(c, llm.TextChunk)) == "Answer."


def test_ensure_loaded_imports_litellm_without_blocking_the_event_loop():
    """A send before the warm-up finished must not freeze the UI for the import."""
    out = _run("""
        import asyncio, sys
        from chatui import llm

        async def main():
            ticks = 0
            async def ticker():
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1
            task = asyncio.create_task(ticker())
            assert not llm.is_loaded()
            await llm.ensure_loaded()
            task.cancel()
            print(llm.is_loaded(), ticks)

        asyncio.run(main())
    """)
    loaded, ticks = out.split()
    assert loaded == "True" and int(ticks) >= 5  # the loop kept running during the import
