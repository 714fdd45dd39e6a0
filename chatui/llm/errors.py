"""Errors from LiteLLM and providers, made readable, with secrets removed.

Everything LiteLLM or a provider raises becomes an `LLMError` with a `kind`
from a closed set, a one-line title and a hint saying what to do. Every text
that may reach the screen, a log or the database goes through `redact()`.
"""

from __future__ import annotations

import json
import logging
import os
import re
from datetime import UTC, datetime
from typing import Literal, TypeAlias

from store import redact_urls_in

from .env import key_env_name, provider_of

__all__ = [
    "ErrorKind",
    "LLMError",
    "known_secrets",
    "map_error",
    "redact",
    "redact_known",
    "retry_after_of",
]

log = logging.getLogger(__name__)

ErrorKind: TypeAlias = Literal[
    "auth",
    "permission",
    "not_found",
    "rate_limit",
    "timeout",
    "connection",
    "context_length",
    "server",
    "bad_response",
    "bad_request",
    "cancelled",
    "unknown",
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

    def __init__(
        self,
        kind: ErrorKind,
        title: str,
        detail: str = "",
        hint: str = "",
        retry_after: float | None = None,
        *,
        partial: bool = False,
    ) -> None:
        title = redact(title)  # titles and hints may name the api_base: its password goes
        super().__init__(title)
        self.kind = kind
        self.title = title
        self.detail = redact(detail)
        self.hint = redact(hint)
        self.retry_after = retry_after
        self.partial = partial

    def __str__(self) -> str:
        return f"{self.title}: {self.detail}" if self.detail else self.title

    def __repr__(self) -> str:
        return f"LLMError({self.kind!r}, {self.title!r})"


_KEY_PATTERNS = [
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),  # OpenAI, Anthropic (sk-ant-…), DeepSeek
    re.compile(r"\b(?:pk|rk|gsk|xai|hf|pplx|csk|ghp|gho|ghu|github_pat)[_-][A-Za-z0-9_\-]{12,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"),  # Google
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),  # AWS access key id
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-~+/=]{8,}"),
    re.compile(
        r"(?i)((?:api[_-]?key|x-api-key|authorization|access[_-]?token|secret)"
        r"[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{6,}"
    ),
]
_SECRET_ENV = re.compile(
    r"(?:_API_KEY|_KEY|_TOKEN|_SECRET|_SECRET_ACCESS_KEY|_PASSWORD)$", re.IGNORECASE
)


def known_secrets() -> list[str]:
    """The values of the environment's secrets (`*_API_KEY`, `*_TOKEN`, `*_SECRET` …),
    longest first: a secret that begins another must not leave the other's tail."""
    return sorted(
        (v for k, v in os.environ.items() if _SECRET_ENV.search(k) and len(v) >= 6),
        key=len,
        reverse=True,
    )


def redact_known(text: str, secrets: list[str] | None = None) -> str:
    """`text` with the environment's secret values (`known_secrets()`) replaced by
    `[redacted]`, and nothing else touched: for a model's reply, where a pattern
    (`api_key = …` in code) would damage what the model wrote."""
    for value in known_secrets() if secrets is None else secrets:
        if value in text:
            text = text.replace(value, "[redacted]")
    return text


def redact(text: str) -> str:
    """`text` with anything that looks like an API key, or is a key from the
    environment (`*_API_KEY`, `*_TOKEN`, `*_SECRET` …), replaced by `[redacted]`,
    and the password of any URL (`http://user:pass@host`, an api_base) by `***`."""
    if not text:
        return text
    text = redact_known(redact_urls_in(text))
    for pattern in _KEY_PATTERNS:
        if pattern.groups:
            text = pattern.sub(lambda m: m.group(1) + "[redacted]", text)
        else:
            text = pattern.sub("[redacted]", text)
    return text


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


def retry_after_of(exc: BaseException) -> float | None:
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
            from email.utils import parsedate_to_datetime  # rare: off the start-up path

            when = parsedate_to_datetime(value)
            return max(0.0, (when - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    node: BaseException | None = exc
    while node is not None and node not in seen and len(seen) < 12:
        seen.append(node)
        original = getattr(node, "original_exception", None)
        node = (
            original
            if isinstance(original, BaseException)
            else (node.__cause__ or node.__context__)
        )
    return seen


def connection_dropped(exc: BaseException) -> bool:
    """True when the server closed the connection under a request before answering
    it: a reset, or aiohttp's / httpx's "server disconnected" (not a refused
    connection, not a timeout). A request that meets it was never answered, so
    sending it once more, on a new connection, repeats nothing."""
    return any(
        isinstance(e, ConnectionResetError)
        or type(e).__name__ in ("ServerDisconnectedError", "RemoteProtocolError")
        for e in _chain(exc)
    )


def _is_timeout(exc: BaseException) -> bool:
    names = {type(e).__name__ for e in _chain(exc)}
    return bool(
        names
        & {
            "Timeout",
            "APITimeoutError",
            "ReadTimeout",
            "ConnectTimeout",
            "TimeoutError",
            "ServerTimeoutError",
            "PoolTimeout",
            "WriteTimeout",
        }
    )


def _is_malformed(exc: BaseException) -> bool:
    return (
        any(isinstance(e, json.JSONDecodeError | UnicodeDecodeError) for e in _chain(exc))
        or "Expecting value" in str(exc)
        or "Expecting property name" in str(exc)
    )


_TRANSPORT_TEXT = re.compile(
    r"TransferEncodingError|ClientPayloadError|payload is not completed|"
    r"RemoteProtocolError|incomplete chunked read|peer closed connection|"
    r"ServerDisconnected|Connection reset|<\w+Error",
    re.IGNORECASE,
)


_WINDOW_FILLED = re.compile(
    r"could not broadcast input array from shape \(\d+,?\) into shape \(0,?\)"
)
"""llama-cpp-python 0.3's 500 when its window fills as the model writes (its logits
buffer has no row left): the request fitted, the reply did not."""


_NO_PROVIDER = "LLM Provider NOT provided"
"""LiteLLM's words when a model name maps to none of its providers (`nosuch/model`)."""


def _is_transport_text(detail: str) -> bool:
    """True for aiohttp's or httpx's description of a broken body (not for a person)."""
    return bool(_TRANSPORT_TEXT.search(detail or ""))


def map_error(
    exc: BaseException, model: str, *, api_base: str | None = None, partial: bool = False
) -> LLMError:
    """Turn anything LiteLLM or a provider raised into an `LLMError`."""
    if isinstance(exc, LLMError):
        return exc
    api_base = redact(api_base) if api_base else api_base
    where = f"the endpoint at {api_base}" if api_base else provider_of(model)
    pick = "pick another model with ctrl+l"
    detail = _provider_message(exc)
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    names = {type(e).__name__ for e in _chain(exc)}

    def err(kind: ErrorKind, title: str, hint: str, retry_after: float | None = None) -> LLMError:
        return LLMError(kind, title, detail, hint, retry_after, partial=partial)

    if name == "MidStreamFallbackError" or (partial and status in (None, 500, 503)):
        if _is_timeout(exc):
            return err(
                "timeout",
                f"{model} stopped answering mid-reply",
                "The partial reply is kept. Press ctrl+r to regenerate, or raise "
                "request_timeout in the config.",
            )
        if _is_malformed(exc):
            return err(
                "bad_response",
                f"{model} sent a reply chatui could not read",
                "The partial reply is kept. Press ctrl+r to regenerate.",
            )
        if _is_transport_text(detail):  # the HTTP library's words, not the server's
            detail = "The server closed the connection before the reply was complete."
        return err(
            "connection",
            f"The connection to {where} broke mid-reply",
            "The partial reply is kept. Press ctrl+r to regenerate.",
        )
    if "ContextWindowExceededError" in names or _WINDOW_FILLED.search(detail or ""):
        return err(
            "context_length",
            f"The conversation is too long for {model}",
            "Compact the chat (command palette: compact now), start a new chat, "
            "or pick a model with a larger context window with ctrl+l.",
        )
    if name == "AuthenticationError" or status == 401:
        env = key_env_name(model)
        if re.fullmatch(r"\w+", env) and not os.environ.get(env):  # none sent: missing
            return err(
                "auth",
                f"No API key for {provider_of(model)}: {env} is not set",
                f"Set {env} in your environment and restart, or {pick}.",
            )
        if api_base:
            hint = (
                f"Check the key {api_base} expects (chatui sends {env} from your "
                f"environment), or {pick}."
            )
        else:
            hint = f"Set {env} in your environment and restart, or {pick}."
        return err("auth", f"The API key for {provider_of(model)} was rejected", hint)
    if name == "PermissionDeniedError" or status == 403:
        return err(
            "permission",
            f"Your key may not use {model}",
            f"Check the model's access on your {provider_of(model)} account, or {pick}.",
        )
    if _NO_PROVIDER in str(exc):
        # LiteLLM's own refusal, before any request: its text is a page of advice on
        # its API ("Pass model as E.g. For 'Huggingface' …"), and no provider refused.
        detail = f"LiteLLM has no provider for the name {model!r}."
        return err(
            "not_found",
            f"chatui does not know how to reach {model}",
            "Name it as LiteLLM spells it, provider first (openai/gpt-4o-mini, "
            f'anthropic/…, ollama_chat/…), or give it an api_base under [models."{model}"] '
            f"in the config for an OpenAI-compatible server; or {pick}.",
        )
    if name == "NotFoundError" or status == 404:
        return err(
            "not_found",
            f"{where} does not know the model {model}",
            f"Check the model name (as LiteLLM spells it), or {pick}.",
        )
    if name == "RateLimitError" or status == 429:
        wait = retry_after_of(exc)
        after = f" It asked to wait {wait:.0f}s." if wait else ""
        return err(
            "rate_limit",
            f"{where} is rate-limiting requests",
            f"Wait a moment and press ctrl+r to try again.{after} Or {pick}.",
            wait,
        )
    if _is_timeout(exc) or status == 408:
        return err(
            "timeout",
            f"{model} did not answer in time",
            "Press ctrl+r to try again, or raise request_timeout in the config.",
        )
    if name == "APIConnectionError" or names & {
        "ConnectError",
        "ClientConnectorError",
        "ConnectionRefusedError",
        "RemoteProtocolError",
        "ServerDisconnectedError",
        "ReadError",
    }:
        if _is_malformed(exc):
            return err(
                "bad_response",
                f"{model} sent a reply chatui could not read",
                "Press ctrl+r to try again.",
            )
        return err(
            "connection",
            f"Cannot reach {where}",
            "Check your network (or that the local server is running) and press ctrl+r.",
        )
    if name in ("InternalServerError", "ServiceUnavailableError", "BadGatewayError") or (
        isinstance(status, int) and status >= 500
    ):
        return err(
            "server",
            f"{where} had a server error",
            f"This is on the provider's side. Press ctrl+r to try again, or {pick}.",
        )
    if name in (
        "BadRequestError",
        "UnsupportedParamsError",
        "UnprocessableEntityError",
        "ContentPolicyViolationError",
    ) or status in (400, 422):
        return err(
            "bad_request",
            f"{where} refused the request",
            f"The provider's message says why. Edit the message, or {pick}.",
        )
    if name in ("APIResponseValidationError", "JSONDecodeError") or _is_malformed(exc):
        return err(
            "bad_response",
            f"{model} sent a reply chatui could not read",
            "Press ctrl+r to try again.",
        )
    log.debug("unmapped LLM error %s", name)
    return err(
        "unknown", f"The call to {model} failed ({name})", f"Press ctrl+r to try again, or {pick}."
    )
