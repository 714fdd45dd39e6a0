"""The LiteLLM boundary: streaming completions, errors a person can read, model facts.

Design notes:
- LiteLLM takes about two seconds to import and, by default, fetches price
  tables from the internet while importing. It is imported lazily (never at
  module top) after the environment is set so it stays offline;
  `warm_up()` pays the import cost in the background.
- Credentials are passed per call or read by LiteLLM from the environment;
  no `litellm.*` credential global is ever set, and every text that may end
  up on screen or in the database goes through `redact()`.
- Everything LiteLLM or a provider raises becomes an `LLMError` with a
  `kind` from a closed set, a one-line title and a hint saying what to do.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import re
import threading
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

if TYPE_CHECKING:
    from .config import ModelOptions

__all__ = [
    "DEMO_CONTEXT_WINDOW",
    "DEMO_MODEL",
    "Chunk",
    "ErrorKind",
    "LLMError",
    "ReasoningChunk",
    "RetryChunk",
    "TextChunk",
    "ToolCallChunk",
    "UsageChunk",
    "complete",
    "completion_cost",
    "context_window",
    "is_demo",
    "key_problem",
    "litellm_model",
    "map_error",
    "redact",
    "stream_completion",
    "warm_up",
]

log = logging.getLogger(__name__)

DEMO_MODEL = "demo"
"""What the user types (`--model demo`) for the offline demo model."""
DEMO_PROVIDER = "chatui-demo"
DEMO_CONTEXT_WINDOW = 32_768
DEFAULT_TIMEOUT = 120.0
MAX_RETRY_WAIT = 60.0
"""A Retry-After longer than this is not waited for (the turn fails with the hint)."""

# Keep LiteLLM offline and quiet: local price tables, no remote header/blog fetches,
# and no `.env` loaded from whatever folder the app was started in.
_OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
    "LITELLM_LOCAL_BLOG_POSTS": "True",
    "LITELLM_MODE": "PRODUCTION",
}


def _prepare_environment() -> None:
    for name, value in _OFFLINE_ENV.items():
        os.environ.setdefault(name, value)


_prepare_environment()

_import_lock = threading.Lock()
_litellm_module: Any = None


def _litellm() -> Any:
    """The `litellm` module, imported on first use and set up for chatui."""
    global _litellm_module
    if _litellm_module is not None:
        return _litellm_module
    with _import_lock:
        if _litellm_module is None:
            _prepare_environment()
            import litellm

            # Presentation, not credentials: LiteLLM prints "Give Feedback" banners to
            # stdout on every error, which would scribble over a terminal UI.
            litellm.suppress_debug_info = True
            if hasattr(litellm, "telemetry"):
                litellm.telemetry = False
            logging.getLogger("LiteLLM").setLevel(logging.CRITICAL)
            from .demo import register

            register(litellm)
            _litellm_module = litellm
    return _litellm_module


def warm_up() -> None:
    """Import LiteLLM now (call it from a background thread after the first frame)."""
    _litellm()


# -- chunks ------------------------------------------------------------------------


@dataclass(frozen=True)
class TextChunk:
    """Reply text, in the order it arrived."""

    text: str


@dataclass(frozen=True)
class ReasoningChunk:
    """Reasoning ("thinking") text, for models that stream it."""

    text: str


@dataclass(frozen=True)
class ToolCallChunk:
    """One complete tool call (emitted once its arguments have fully arrived)."""

    id: str
    name: str
    arguments_json: str


@dataclass(frozen=True)
class UsageChunk:
    """Tokens of the call and its cost in USD (0.0 when LiteLLM has no price)."""

    input_tokens: int
    output_tokens: int
    cost: float


@dataclass(frozen=True)
class RetryChunk:
    """The provider said "too many requests"; the call is retried after `delay` seconds."""

    attempt: int
    max_retries: int
    delay: float
    error: LLMError


Chunk: TypeAlias = TextChunk | ReasoningChunk | ToolCallChunk | UsageChunk | RetryChunk

# -- errors -----------------------------------------------------------------------

ErrorKind: TypeAlias = Literal[
    "auth", "permission", "not_found", "rate_limit", "timeout", "connection",
    "context_length", "server", "bad_response", "bad_request", "cancelled", "unknown",
]


class LLMError(Exception):
    """A model call failed; everything here is safe to show (secrets removed).

    Attributes:
        kind: what went wrong, from `ErrorKind`.
        title: one short line ("The API key for openai was rejected").
        detail: what the provider said.
        hint: what the user can do about it.
        retry_after: seconds the provider asked us to wait (rate limits), if any.
        partial: True when part of a reply had already streamed.
    """

    def __init__(self, kind: ErrorKind, title: str, detail: str = "", hint: str = "",
                 retry_after: float | None = None, *, partial: bool = False) -> None:
        super().__init__(title)
        self.kind = kind
        self.title = title
        self.detail = redact(detail)
        self.hint = hint
        self.retry_after = retry_after
        self.partial = partial

    def __str__(self) -> str:
        return f"{self.title}: {self.detail}" if self.detail else self.title

    def __repr__(self) -> str:
        return f"LLMError({self.kind!r}, {self.title!r})"


_KEY_PATTERNS = [
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),           # OpenAI, Anthropic (sk-ant-…), DeepSeek
    re.compile(r"\b(?:gsk|xai|hf|pplx|csk|ghp|gho|github_pat)[_-][A-Za-z0-9_\-]{12,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"),         # Google
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),              # AWS access key id
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-~+/=]{8,}"),
    re.compile(r"(?i)((?:api[_-]?key|x-api-key|authorization|access[_-]?token|secret)"
               r"[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{6,}"),
]
_SECRET_ENV = re.compile(r"(?:_API_KEY|_KEY|_TOKEN|_SECRET|_SECRET_ACCESS_KEY|_PASSWORD)$")


def redact(text: str) -> str:
    """`text` with anything that looks like an API key, or is a key from the
    environment (`*_API_KEY`, `*_TOKEN`, `*_SECRET` …), replaced by `[redacted]`."""
    if not text:
        return text
    for name, value in os.environ.items():
        if _SECRET_ENV.search(name) and len(value) >= 6 and value in text:
            text = text.replace(value, "[redacted]")
    for pattern in _KEY_PATTERNS:
        if pattern.groups:
            text = pattern.sub(lambda m: m.group(1) + "[redacted]", text)
        else:
            text = pattern.sub("[redacted]", text)
    return text


def _provider(model: str) -> str:
    if is_demo(model):
        return DEMO_PROVIDER
    if "/" in model:
        return model.split("/", 1)[0]
    try:
        return str(_litellm().get_llm_provider(model=model)[1])
    except Exception:
        return "the provider"


def _key_env_name(model: str) -> str:
    provider = _provider(model)
    known = {"gemini": "GEMINI_API_KEY", "together_ai": "TOGETHERAI_API_KEY",
             "vertex_ai": "GOOGLE_APPLICATION_CREDENTIALS",
             "bedrock": "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY"}
    return known.get(provider, f"{re.sub(r'[^A-Za-z0-9]', '_', provider).upper()}_API_KEY")


_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*)?(?:\w+Error:\s*)?(?:\w+Exception\s*-\s*)?")


def _provider_message(exc: BaseException) -> str:
    """What the provider itself said, without LiteLLM's class-name prefixes."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error") if isinstance(body.get("error"), dict) else body
        message = inner.get("message") if isinstance(inner, dict) else None
        if isinstance(message, str) and message.strip():
            return message.strip()
    text = str(getattr(exc, "message", None) or exc)
    previous = None
    while previous != text:
        previous = text
        text = _PREFIX.sub("", text, count=1).strip()
    text = text.split(" Original exception:")[0].split("\nReceived Model Group")[0]
    return text.strip()[:800]


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        value = headers.get("retry-after-ms")
        if value is not None:
            return max(0.0, float(value) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = parsedate_to_datetime(value)
            from datetime import UTC, datetime

            return max(0.0, (when - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    node: BaseException | None = exc
    while node is not None and node not in seen and len(seen) < 12:
        seen.append(node)
        original = getattr(node, "original_exception", None)
        node = original if isinstance(original, BaseException) else (
            node.__cause__ or node.__context__)
    return seen


def _is_timeout(exc: BaseException) -> bool:
    names = {type(e).__name__ for e in _chain(exc)}
    return bool(names & {"Timeout", "APITimeoutError", "ReadTimeout", "ConnectTimeout",
                         "TimeoutError", "ServerTimeoutError", "PoolTimeout", "WriteTimeout"})


def _is_malformed(exc: BaseException) -> bool:
    return any(isinstance(e, json.JSONDecodeError | UnicodeDecodeError) for e in _chain(exc)) \
        or "Expecting value" in str(exc) or "Expecting property name" in str(exc)


def map_error(exc: BaseException, model: str, *, api_base: str | None = None,
              partial: bool = False) -> LLMError:
    """Turn anything LiteLLM or a provider raised into an `LLMError`."""
    if isinstance(exc, LLMError):
        return exc
    where = f"the endpoint at {api_base}" if api_base else _provider(model)
    pick = "pick another model with ctrl+l"
    detail = _provider_message(exc)
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    names = {type(e).__name__ for e in _chain(exc)}

    def err(kind: ErrorKind, title: str, hint: str, retry_after: float | None = None
            ) -> LLMError:
        return LLMError(kind, title, detail, hint, retry_after, partial=partial)

    if name == "MidStreamFallbackError" or (partial and status in (None, 500, 503)):
        if _is_timeout(exc):
            return err("timeout", f"{model} stopped answering mid-reply",
                       "The partial reply is kept. Press r to regenerate, or raise "
                       "request_timeout in the config.")
        if _is_malformed(exc):
            return err("bad_response", f"{model} sent a reply chatui could not read",
                       "The partial reply is kept. Press r to regenerate.")
        return err("connection", f"The connection to {where} broke mid-reply",
                   "The partial reply is kept. Press r to regenerate.")
    if "ContextWindowExceededError" in names:
        return err("context_length", f"The conversation is too long for {model}",
                   "Compact the chat (command palette: compact now), start a new chat, "
                   "or pick a model with a larger context window with ctrl+l.")
    if name == "AuthenticationError" or status == 401:
        env = _key_env_name(model)
        if api_base:
            hint = (f"Check the key {api_base} expects (chatui sends {env} from your "
                    f"environment), or {pick}.")
        else:
            hint = f"Set {env} in your environment and restart, or {pick}."
        return err("auth", f"The API key for {_provider(model)} was rejected", hint)
    if name == "PermissionDeniedError" or status == 403:
        return err("permission", f"Your key may not use {model}",
                   f"Check the model's access on your {_provider(model)} account, or {pick}.")
    if name == "NotFoundError" or status == 404:
        return err("not_found", f"{where} does not know the model {model}",
                   f"Check the model name (as LiteLLM spells it), or {pick}.")
    if name == "RateLimitError" or status == 429:
        wait = _retry_after(exc)
        after = f" It asked to wait {wait:.0f}s." if wait else ""
        return err("rate_limit", f"{where} is rate-limiting requests",
                   f"Wait a moment and press r to try again.{after} Or {pick}.", wait)
    if _is_timeout(exc) or status == 408:
        return err("timeout", f"{model} did not answer in time",
                   "Press r to try again, or raise request_timeout in the config.")
    if name == "APIConnectionError" or names & {"ConnectError", "ClientConnectorError",
                                                 "ConnectionRefusedError", "RemoteProtocolError",
                                                 "ServerDisconnectedError", "ReadError"}:
        if _is_malformed(exc):
            return err("bad_response", f"{model} sent a reply chatui could not read",
                       "Press r to try again.")
        return err("connection", f"Cannot reach {where}",
                   "Check your network (or that the local server is running) and press r.")
    if name in ("InternalServerError", "ServiceUnavailableError", "BadGatewayError") or (
            isinstance(status, int) and status >= 500):
        return err("server", f"{where} had a server error",
                   f"This is on the provider's side. Press r to try again, or {pick}.")
    if name in ("BadRequestError", "UnsupportedParamsError", "UnprocessableEntityError",
                "ContentPolicyViolationError") or status in (400, 422):
        return err("bad_request", f"{where} refused the request",
                   f"The provider's message says why. Edit the message, or {pick}.")
    if name in ("APIResponseValidationError", "JSONDecodeError") or _is_malformed(exc):
        return err("bad_response", f"{model} sent a reply chatui could not read",
                   "Press r to try again.")
    log.debug("unmapped LLM error %s", name)
    return err("unknown", f"The call to {model} failed ({name})",
               f"Press r to try again, or {pick}.")


# -- model facts ------------------------------------------------------------------


def is_demo(model: str) -> bool:
    return model in (DEMO_MODEL, f"{DEMO_PROVIDER}/{DEMO_MODEL}")


def litellm_model(model: str, api_base: str | None = None) -> str:
    """The name LiteLLM is called with: `demo` maps to the custom provider, and a
    bare name sent to a custom `api_base` is treated as OpenAI-compatible."""
    if is_demo(model):
        return f"{DEMO_PROVIDER}/{DEMO_MODEL}"
    if api_base:
        try:
            _litellm().get_llm_provider(model=model)
        except Exception:
            return f"openai/{model}"
    return model


def context_window(model: str, options: ModelOptions | None = None) -> int | None:
    """The model's input window in tokens (config override first), None when unknown."""
    if options is not None and options.context_window:
        return options.context_window
    if is_demo(model):
        return DEMO_CONTEXT_WINDOW
    try:
        info = _litellm().get_model_info(model)
    except Exception:
        return None
    for key in ("max_input_tokens", "max_tokens"):
        value = info.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return None


def completion_cost(model: str, input_tokens: int, output_tokens: int) -> float:
    """USD for a call from LiteLLM's price table; 0.0 when the model has no price."""
    if is_demo(model) or (input_tokens <= 0 and output_tokens <= 0):
        return 0.0
    try:
        prompt, completion = _litellm().cost_per_token(
            model=model, prompt_tokens=int(input_tokens), completion_tokens=int(output_tokens))
        total = float(prompt) + float(completion)
    except Exception:
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
        result = _litellm().validate_environment(model=model)
    except Exception:
        return None
    missing = [str(k) for k in result.get("missing_keys") or []]
    secret = [k for k in missing if not k.endswith("_API_BASE") and not k.endswith("_VERSION")]
    if not secret:
        return None  # only an address is missing: providers like ollama have a local default
    names = " and ".join(missing)
    return (f"{model} needs {names} in your environment. Set it and restart chatui "
            f"(for example: export {secret[0]}=...), or pick the offline demo model with ctrl+l.")


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
        if not os.environ.get("OPENAI_API_KEY") and _provider(kwargs["model"]) == "openai":
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
) -> AsyncIterator[Chunk]:
    """Stream one model call as chunks.

    A 429 is retried (after Retry-After, else exponential backoff) up to
    `max_retries` times, each announced with a `RetryChunk`, but only while
    nothing has streamed yet. Tool calls are assembled and yielded when
    complete; usage comes last.

    Raises:
        LLMError: anything that went wrong, already readable.
    """
    litellm = _litellm()
    kwargs = _call_kwargs(model, api_base, timeout)
    kwargs.update(messages=messages, stream=True, stream_options={"include_usage": True})
    if tools:
        kwargs["tools"] = tools
    attempt = 0
    while True:
        streamed = False
        response: Any = None
        try:
            response = await litellm.acompletion(**kwargs)
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
                            streamed = True
                            yield ReasoningChunk(str(reasoning))
                        content = getattr(delta, "content", None)
                        if content:
                            streamed = True
                            yield TextChunk(str(content))
                        for call in getattr(delta, "tool_calls", None) or []:
                            streamed = True
                            _merge_call(calls, call)
                    if getattr(choice, "finish_reason", None):
                        finish = choice.finish_reason
            # LiteLLM's OpenAI path synthesises a finish for streams that end cleanly;
            # this guards providers whose wrappers do not.
            if finish is None and not calls and usage is None:
                raise LLMError("bad_response", f"{model}'s reply stopped before it finished",
                               "The stream ended without saying it was done.",
                               "The partial reply is kept. Press r to regenerate.",
                               partial=streamed)
            for index in sorted(calls):
                call = calls[index]
                yield ToolCallChunk(call["id"] or f"call_{uuid.uuid4().hex[:12]}",
                                    call["name"], call["arguments"] or "{}")
            if usage is not None:
                prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
                completion = int(getattr(usage, "completion_tokens", 0) or 0)
                yield UsageChunk(prompt, completion,
                                 completion_cost(kwargs["model"], prompt, completion))
            return
        except LLMError:
            raise
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except Exception as exc:  # the provider boundary: nothing escapes unmapped
            error = map_error(exc, model, api_base=api_base, partial=streamed)
            if error.kind != "rate_limit" or streamed or attempt >= max_retries:
                raise error from None
            attempt += 1
            delay = _backoff(attempt, error.retry_after)
            if delay > MAX_RETRY_WAIT:
                raise error from None
            yield RetryChunk(attempt, max_retries, delay, error)
            await asyncio.sleep(delay)
        finally:
            if response is not None and hasattr(response, "aclose"):
                try:
                    await response.aclose()
                except Exception:
                    pass


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


async def complete(model: str, messages: list[dict[str, Any]], *, api_base: str | None = None,
                   timeout: float = DEFAULT_TIMEOUT) -> str:
    """One non-streamed call returning the reply text (for summaries).

    Raises:
        LLMError: the call failed or returned no text.
    """
    litellm = _litellm()
    kwargs = _call_kwargs(model, api_base, timeout)
    try:
        response = await litellm.acompletion(messages=messages, **kwargs)
        text = response.choices[0].message.content
    except Exception as exc:
        raise map_error(exc, model, api_base=api_base) from None
    if not isinstance(text, str) or not text.strip():
        raise LLMError("bad_response", f"{model} returned an empty reply",
                       hint="Try again, or set compaction_model in the config.")
    return text
