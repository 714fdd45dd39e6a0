"""The LiteLLM boundary: streaming completions and the facts of a model.

Design notes:
- LiteLLM is imported lazily through `env.load_litellm()` (offline, and
  never at module top), so importing this module is cheap.
- Credentials are read by LiteLLM from the environment; no `litellm.*`
  credential global is ever set.
- Everything raised is an `LLMError` (see `errors`): readable, secrets
  removed. Rate limits are retried here, bounded and announced, and only
  while nothing has streamed, so a retry never duplicates text.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import uuid
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from . import lean_usage
from .chunks import (
    Chunk,
    ChunkStream,
    FinishChunk,
    ReasoningChunk,
    RetryChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from .env import (
    DEFAULT_TIMEOUT,
    DEMO_CONTEXT_WINDOW,
    DEMO_MODEL,
    DEMO_PROVIDER,
    ensure_loaded,
    is_demo,
    is_loaded,
    load_litellm,
    provider_of,
    warm_up,
)
from .errors import ErrorKind, LLMError, connection_dropped, map_error, redact, redact_known
from .lean_costs import listening
from .quirks import QUIRKS, refuses_streamed_tools
from .windows import table_window

if TYPE_CHECKING:
    from ..core.config import ModelOptions

__all__ = [
    "DEFAULT_TIMEOUT",
    "DEMO_CONTEXT_WINDOW",
    "DEMO_MODEL",
    "Chunk",
    "ChunkStream",
    "ErrorKind",
    "FinishChunk",
    "LLMError",
    "ReasoningChunk",
    "RetryChunk",
    "TextChunk",
    "ToolCallChunk",
    "UsageChunk",
    "WHOLE_CALL_MAX_TOKENS",
    "complete",
    "completion_cost",
    "context_window",
    "ensure_loaded",
    "in_model_table",
    "is_demo",
    "is_loaded",
    "key_problem",
    "key_problem_loaded",
    "known_params",
    "litellm_model",
    "litellm_count",
    "map_error",
    "prompt_tokens",
    "redact",
    "redact_known",
    "stream_completion",
    "supports_vision",
    "warm_up",
]

log = logging.getLogger(__name__)

MAX_RETRY_WAIT = 60.0
"""A Retry-After longer than this is not waited for (the turn fails with the hint)."""

WHOLE_CALL_MAX_TOKENS = 1024
"""The output cap of a call made without streaming when the chat sets none: nothing of
it shows until it ends and it cannot be watched, so it must not run to the window's end
(SmolLM2 once wrote tool arguments for 93 s of a 120 s timeout). Cut there, it ends
with `finish_reason: "length"`, shown as a truncated reply."""

# -- model facts ------------------------------------------------------------------


def litellm_model(model: str, api_base: str | None = None) -> str:
    """The name LiteLLM is called with: `demo` maps to the custom provider, and a
    bare name sent to a custom `api_base` is treated as OpenAI-compatible."""
    if is_demo(model):
        return f"{DEMO_PROVIDER}/{DEMO_MODEL}"
    if api_base:
        try:
            load_litellm().get_llm_provider(model=model)
        except Exception:
            return f"openai/{model}"
    return model


def context_window(model: str, options: ModelOptions | None = None) -> int | None:
    """The model's input window in tokens (config override first), None when unknown."""
    if options is not None and options.context_window:
        return options.context_window
    if is_demo(model):
        return DEMO_CONTEXT_WINDOW
    return table_window(model)


def supports_vision(model: str, options: ModelOptions | None = None) -> bool:
    """The model takes image parts: the config's `vision` first, then LiteLLM's table
    (a model it does not know: no). The demo model takes them (it ignores them)."""
    if options is not None and options.vision is not None:
        return options.vision
    if is_demo(model):
        return True
    try:
        return bool(load_litellm().supports_vision(model=model))
    except Exception:
        return False


def in_model_table(model: str) -> bool:
    """LiteLLM's model table knows `model` (what it says of vision, windows and prices
    is then its own, not a guess)."""
    if is_demo(model):
        return True
    try:
        load_litellm().get_model_info(model=model)
    except Exception:
        return False
    return True


_UNPRICED: set[str] = set()
"""Models LiteLLM's price table has no price for (it does not change while we run)."""


def completion_cost(model: str, input_tokens: int, output_tokens: int) -> float:
    """USD for a call from LiteLLM's price table; 0.0 when the model has no price.

    A model without a price is asked about once: the table's refusal is a row of
    failed look-ups through its fallbacks (~1 ms of CPU, every reply of a local model)."""
    if is_demo(model) or (input_tokens <= 0 and output_tokens <= 0) or model in _UNPRICED:
        return 0.0
    try:
        prompt, completion = load_litellm().cost_per_token(
            model=model, prompt_tokens=int(input_tokens), completion_tokens=int(output_tokens)
        )
        total = float(prompt) + float(completion)
    except Exception:
        if len(_UNPRICED) < 1000:
            _UNPRICED.add(model)
        return 0.0
    return total if total >= 0 and total == total else 0.0


def key_problem(model: str, api_base: str | None = None) -> str | None:
    """A sentence naming the missing environment variable, or None when the model can run.

    Uses LiteLLM's `validate_environment`. A custom `api_base` (a local server,
    a proxy) is trusted to need no key of ours.
    """
    if is_demo(model) or api_base:
        return None
    try:
        result = load_litellm().validate_environment(model=model)
    except Exception:
        return None
    missing = [str(k) for k in result.get("missing_keys") or []]
    secret = [k for k in missing if not k.endswith("_API_BASE") and not k.endswith("_VERSION")]
    if not secret:
        return None  # only an address is missing: providers like ollama have a local default
    names = " and ".join(missing)
    return (
        f"{model} needs {names} in your environment. Set it and restart chatui "
        f"(for example: export {secret[0]}=...), or pick the offline demo model with ctrl+l."
    )


async def key_problem_loaded(model: str, api_base: str | None = None) -> str | None:
    """`key_problem`, LiteLLM imported first off the event loop if it is not yet (a
    send before the warm-up has finished)."""
    await ensure_loaded()
    return key_problem(model, api_base)


def known_params() -> frozenset[str]:
    """The chat-completion parameters LiteLLM knows (its OpenAI list; call after
    `ensure_loaded`)."""
    return frozenset(getattr(load_litellm(), "OPENAI_CHAT_COMPLETION_PARAMS", ()))


# -- calls ------------------------------------------------------------------------


def _call_kwargs(model: str, api_base: str | None, timeout: float) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model": litellm_model(model, api_base),
        "timeout": timeout,
        # Retries are ours (bounded, reported, only before anything streamed); the
        # OpenAI SDK would otherwise retry silently underneath.
        "max_retries": 0,
        "drop_params": True,
        # LiteLLM 1.106 imports its MCP gateway (an uninstalled extra) whenever tools
        # are passed; we never use MCP tools.
        "_skip_mcp_handler": True,
    }
    if api_base and not is_demo(model):
        kwargs["api_base"] = api_base
        if not os.environ.get("OPENAI_API_KEY") and provider_of(kwargs["model"]) == "openai":
            # Local OpenAI-compatible servers take any key, but the SDK insists on one.
            kwargs["api_key"] = "no-key-needed"
    return kwargs


def _backoff(attempt: int, retry_after: float | None) -> float:
    if retry_after is not None:
        return retry_after
    return min(MAX_RETRY_WAIT, 2.0 ** (attempt - 1) + random.uniform(0, 0.25))


async def stream_completion(
    model: str,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    api_base: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_retries: int = 2,
    params: dict[str, Any] | None = None,
) -> AsyncGenerator[Chunk, None]:
    """Stream one model call as chunks.

    `params`: the chat's parameters (temperature, max_tokens, ...; checked by
    `chatui.core.params`), sent with the request; never over what is set here.

    A 429 is retried (after Retry-After, else exponential backoff) up to
    `max_retries` times, each announced with a `RetryChunk`, but only while
    nothing has streamed yet. Tool calls are assembled and yielded when
    complete; then why the model stopped (`FinishChunk`); usage comes last.

    Tools go with `tool_choice: "auto"` (llama-cpp-python renders them into the
    prompt only then). A server that refuses to stream a tool choice is called
    without streaming, from then on (`quirks`). A stream that brings nothing at
    all (llama-cpp-python's empty 200 for a prompt longer than its window) is
    asked once more without streaming, whose answer says what went wrong.

    Raises:
        LLMError: anything that went wrong, already readable.
    """
    litellm = await ensure_loaded()
    kwargs = _call_kwargs(model, api_base, timeout)
    kwargs["messages"] = messages
    for name, value in (params or {}).items():
        kwargs.setdefault(name, value)
    if tools:
        kwargs.update(tools=tools, tool_choice="auto")
    server = api_base or provider_of(kwargs["model"])
    attempt = 0
    while True:
        progress = _Progress()
        try:
            if tools and not QUIRKS.streams_tools(server):
                async for chunk in _whole_call(litellm, kwargs, model):
                    yield chunk
                return
            async for chunk in _streamed_call(litellm, kwargs, model, progress):
                yield chunk
            if not progress.anything:
                # An empty 200: the same request, not streamed, gets the real answer
                # (or the error the stream could not carry: "maximum context length").
                log.info("%s streamed nothing; asking once without streaming", model)
                async for chunk in _whole_call_after_empty_stream(litellm, kwargs, model):
                    yield chunk
            return
        except LLMError:
            raise
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except Exception as exc:  # the provider boundary: nothing escapes unmapped
            error = map_error(exc, model, api_base=api_base, partial=progress.streamed)
            if tools and not progress.streamed and refuses_streamed_tools(error.detail):
                QUIRKS.learn_unstreamed_tools(server)
                log.info("%s refuses to stream tool choices; calling it whole", server)
                continue
            if error.kind != "rate_limit" or progress.streamed or attempt >= max_retries:
                raise error from None
            attempt += 1
            delay = _backoff(attempt, error.retry_after)
            if delay > MAX_RETRY_WAIT:
                raise error from None
            yield RetryChunk(attempt, max_retries, delay, error)
            await asyncio.sleep(delay)


class _Progress:
    """What one streamed call brought so far (for retries and the empty-200 check)."""

    streamed = False
    """Text, reasoning or a tool call arrived (a retry would duplicate it)."""
    anything = False
    """Anything arrived: content, a finish reason or usage."""


async def _streamed_call(
    litellm: Any, kwargs: dict[str, Any], model: str, progress: _Progress
) -> AsyncGenerator[Chunk, None]:
    response: Any = None
    try:
        response = await litellm.acompletion(
            **kwargs, stream=True, stream_options={"include_usage": True}
        )
        _skip_success_logging(litellm, response)
        ends_at_usage = not _bookkeeping_read(litellm, response)
        if ends_at_usage:
            lean_usage.install(response)  # its usage as the server reported it, when it did
        calls: dict[int, dict[str, str]] = {}
        finish: str | None = None
        usage: Any = None
        async for chunk in response:
            if getattr(chunk, "usage", None):
                usage = chunk.usage
            for choice in getattr(chunk, "choices", None) or []:
                delta = getattr(choice, "delta", None)
                if delta is not None:
                    reasoning = getattr(delta, "reasoning_content", None)
                    if reasoning:
                        progress.streamed = True
                        yield ReasoningChunk(str(reasoning))
                    content = getattr(delta, "content", None)
                    if content:
                        progress.streamed = True
                        yield TextChunk(str(content))
                    for call in getattr(delta, "tool_calls", None) or []:
                        progress.streamed = True
                        _merge_call(calls, call)
                if getattr(choice, "finish_reason", None):
                    finish = choice.finish_reason
            if ends_at_usage and getattr(response, "sent_stream_usage", False) is True:
                break  # its last chunk: what follows is LiteLLM's bookkeeping, for nobody
        progress.anything = progress.streamed or usage is not None
        if not progress.anything:
            return  # the caller asks again without streaming
        # LiteLLM's OpenAI path synthesises a finish for streams that end cleanly;
        # this guards providers whose wrappers do not.
        if finish is None and not calls and usage is None:
            raise LLMError(
                "bad_response",
                f"{model}'s reply stopped before it finished",
                "The stream ended without saying it was done.",
                "The partial reply is kept. Press ctrl+r to regenerate.",
                partial=progress.streamed,
            )
        for chunk in _ending(calls, finish, usage, kwargs["model"]):
            yield chunk
    finally:
        if response is not None and hasattr(response, "aclose"):
            try:
                await response.aclose()
            except Exception:
                pass


def _bookkeeping_read(litellm: Any, stream: Any) -> bool:
    """Whether anything reads what LiteLLM's stream does after its usage chunk: a
    callback or budget (its success logging), a cache (the reply stored), a proxy's
    deferred hook. That step assembles the whole reply again (`stream_chunk_builder`,
    in a thread; for a server that streams no usage, with the messages tokenised
    again), deep-copies it and schedules a task that assembles it once more for a
    cache (`litellm.cache`: none is set, nothing is stored). With nothing reading
    it, the stream is left after its usage chunk (and closed, as any stream is):
    the chunks chatui gets are the same."""
    if listening(litellm) or getattr(litellm, "cache", None) is not None:
        return True
    logging_obj = getattr(stream, "logging_obj", None)
    return getattr(logging_obj, "_on_deferred_stream_complete", None) is not None


async def _no_success_logging(*args: Any, **kwargs: Any) -> None:
    """What a stream's success logging does when nobody listens."""


def _skip_success_logging(litellm: Any, stream: Any) -> None:
    """Skip the success logging LiteLLM runs when a stream ends, when no callback of
    LiteLLM's is set (chatui sets none): it prices the reply for its callbacks and
    builds their payload, a few ms of CPU a call (for a model its table does not know,
    several failed look-ups), for nobody. chatui prices the reply itself (`_ending`);
    the usage at the stream's end is built before, and stays."""
    if listening(litellm):
        return
    logging_obj = getattr(stream, "logging_obj", None)
    if logging_obj is not None and hasattr(logging_obj, "dispatch_success_handlers"):
        logging_obj.dispatch_success_handlers = _no_success_logging


async def _whole_call_after_empty_stream(
    litellm: Any, kwargs: dict[str, Any], model: str
) -> AsyncGenerator[Chunk, None]:
    """The whole call that follows an empty stream, sent again once if the server
    dropped its connection.

    llama-cpp-python breaks off a stream it has begun when its model picks a tool
    (an error inside the stream: a 200 and no event) and closes that connection.
    The client keeps it for the next request until it notices, so the whole call
    can go out on a connection already gone; that call was never answered, and the
    second one goes on a new connection.
    """
    try:
        async for chunk in _whole_call(litellm, kwargs, model):
            yield chunk  # only after the whole answer is in: nothing repeats below
        return
    except Exception as exc:
        if not connection_dropped(exc):
            raise
        log.info("%s dropped the connection after an empty stream; asking again", model)
    # Asked outside the handler: an error of this call must not carry the dropped
    # connection as its context (`map_error` would read it as "cannot reach").
    async for chunk in _whole_call(litellm, kwargs, model):
        yield chunk


async def _whole_call(
    litellm: Any, kwargs: dict[str, Any], model: str
) -> AsyncGenerator[Chunk, None]:
    """The call made without streaming, its answer yielded as the same chunks; capped
    by the chat's max_tokens, else `WHOLE_CALL_MAX_TOKENS`."""
    if not kwargs.get("max_tokens") and not kwargs.get("max_completion_tokens"):
        kwargs = {**kwargs, "max_tokens": WHOLE_CALL_MAX_TOKENS}
    response = await litellm.acompletion(**kwargs)
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise LLMError(
            "bad_response",
            f"{model} sent a reply with no answer in it",
            hint="Press ctrl+r to try again.",
        )
    choice = choices[0]
    message = getattr(choice, "message", None)
    reasoning = getattr(message, "reasoning_content", None)
    if reasoning:
        yield ReasoningChunk(str(reasoning))
    content = getattr(message, "content", None)
    if content:
        yield TextChunk(str(content))
    calls: dict[int, dict[str, str]] = {}
    for index, call in enumerate(getattr(message, "tool_calls", None) or []):
        function = getattr(call, "function", None)
        calls[index] = {
            "id": str(getattr(call, "id", "") or ""),
            "name": str(getattr(function, "name", "") or ""),
            "arguments": str(getattr(function, "arguments", "") or ""),
        }
    finish = getattr(choice, "finish_reason", None)
    usage = getattr(response, "usage", None)
    cap = kwargs.get("max_tokens") or kwargs.get("max_completion_tokens")
    if cap and int(getattr(usage, "completion_tokens", 0) or 0) >= int(cap):
        finish = "length"  # llama-cpp-python says "tool_calls" of a call its cap cut off
    for chunk in _ending(calls, finish, usage, kwargs["model"]):
        yield chunk


def _ending(
    calls: dict[int, dict[str, str]], finish: str | None, usage: Any, priced_as: str
) -> list[Chunk]:
    """What closes a call: its tool calls, why it stopped, its usage."""
    chunks: list[Chunk] = [
        ToolCallChunk(
            call["id"] or f"call_{uuid.uuid4().hex[:12]}",
            call["name"],
            call["arguments"] or "{}",
        )
        for _, call in sorted(calls.items())
    ]
    if finish:
        chunks.append(FinishChunk(str(finish)))
    if usage is not None:
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        chunks.append(
            UsageChunk(prompt, completion, completion_cost(priced_as, prompt, completion))
        )
    return chunks


def _merge_call(calls: dict[int, dict[str, str]], delta: Any) -> None:
    """Fold one streamed tool-call delta (OpenAI format) into the calls by index."""
    index = getattr(delta, "index", None)
    if index is None:
        index = len(calls)
    call = calls.setdefault(int(index), {"id": "", "name": "", "arguments": ""})
    if getattr(delta, "id", None):
        call["id"] = str(delta.id)
    function = getattr(delta, "function", None)
    if function is not None:
        if getattr(function, "name", None):
            call["name"] = str(function.name)
        if getattr(function, "arguments", None):
            call["arguments"] += str(function.arguments)


async def prompt_tokens(
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    api_base: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> int | None:
    """The server's count of a request's prompt: one non-streamed call of one token
    (tools with `tool_choice: "auto"`, as a turn sends them); None when it failed or
    reported no usage."""
    litellm = await ensure_loaded()
    kwargs = _call_kwargs(model, api_base, timeout)
    if tools:
        kwargs.update(tools=tools, tool_choice="auto")
    try:
        response = await litellm.acompletion(messages=messages, max_tokens=1, **kwargs)
        return int(response.usage.prompt_tokens) or None
    except Exception as exc:  # a count is an optimisation: the figure stays as it was
        log.debug("counting a prompt at %s failed: %s", api_base, redact(str(exc)))
        return None


def litellm_count(model: str, messages: list[dict[str, Any]]) -> int | None:
    """LiteLLM's own count of `messages`: what it puts in a streamed reply's usage when
    the server sent none (llama-cpp-python's streams). A figure equal to it is not the
    server's (blocking: a thread)."""
    try:
        return int(load_litellm().token_counter(model=model, messages=messages))
    except Exception:
        return None


async def complete(
    model: str,
    messages: list[dict[str, Any]],
    *,
    api_base: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> str:
    """One non-streamed call returning the reply text (for summaries).

    Raises:
        LLMError: the call failed or returned no text.
    """
    litellm = await ensure_loaded()
    kwargs = _call_kwargs(model, api_base, timeout)
    try:
        response = await litellm.acompletion(messages=messages, **kwargs)
        text = response.choices[0].message.content
    except Exception as exc:
        raise map_error(exc, model, api_base=api_base) from None
    if not isinstance(text, str) or not text.strip():
        raise LLMError(
            "bad_response",
            f"{model} returned an empty reply",
            hint="Try again, or set compaction_model in the config.",
        )
    return text
