"""A chat's model parameters (temperature, max tokens, top_p, any LiteLLM parameter).

Stored in the chat's metadata (`params`), set by a person in the app or by a
persona, and passed with every request of the chat. They are written as
TOML lines (`temperature = 0.3`), read by `tomllib`; each is checked before
it is kept, so a bad value is a clear error naming the parameter and nothing
changes.

Design notes:
- Names: LiteLLM's own list of chat-completion parameters
  (`litellm.OPENAI_CHAT_COMPLETION_PARAMS`), plus the provider extras LiteLLM
  passes through (`top_k`, `extra_body`, ...), less what chatui sets itself
  (model, messages, tools, stream, timeout) or must never store (an API key
  lives in the environment, never in the database).
- The common ones have their types and ranges checked here; the others are
  passed as written (LiteLLM drops what a provider does not take).
"""

from __future__ import annotations

import difflib
import json
import math
import tomllib
from collections.abc import Collection, Mapping
from typing import Any

__all__ = [
    "EXTRA_PARAMS",
    "ParamsError",
    "RESERVED",
    "check_params",
    "params_of",
    "params_text",
    "parse_params",
]


class ParamsError(ValueError):
    """A parameter cannot be used; the message names it and says why."""


RESERVED: dict[str, str] = {
    "model": "the chat's model is picked with ctrl+l",
    "messages": "the messages are the chat's",
    "stream": "chatui always streams",
    "stream_options": "chatui always streams",
    "n": "one reply per request (regenerate for another)",
    "tools": "the tools are the chat's memory and search tools",
    "tool_choice": "the tools are the chat's",
    "functions": "the tools are the chat's",
    "function_call": "the tools are the chat's",
    "api_key": "API keys come from the environment, never from a chat",
    "api_base": "set api_base in the config file",
    "base_url": "set api_base in the config file",
    "api_version": "set it in the environment",
    "organization": "set it in the environment",
    "deployment_id": "set it in the config file",
    "timeout": "set request_timeout in the config file",
    "request_timeout": "set request_timeout in the config file",
    "max_retries": "set max_retries in the config file",
    "default_headers": "headers may carry keys: not stored with a chat",
    "extra_headers": "headers may carry keys: not stored with a chat",
}
"""Names a chat may not set, each with where it is set instead."""

EXTRA_PARAMS = frozenset(
    {"top_k", "min_p", "repetition_penalty", "extra_body", "num_ctx", "mirostat"}
)
"""Provider parameters LiteLLM passes through, beyond the OpenAI list."""

_NUMBER_RANGES: dict[str, tuple[float, float]] = {
    "temperature": (0.0, 2.0),
    "top_p": (0.0, 1.0),
    "presence_penalty": (-2.0, 2.0),
    "frequency_penalty": (-2.0, 2.0),
    "min_p": (0.0, 1.0),
    "repetition_penalty": (0.0, 10.0),
}
_POSITIVE_INTS = ("max_tokens", "max_completion_tokens", "top_k", "top_logprobs", "num_ctx")
_EFFORTS = ("none", "minimal", "low", "medium", "high")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_value(name: str, value: Any) -> Any:
    if name in _NUMBER_RANGES:
        low, high = _NUMBER_RANGES[name]
        if not _is_number(value) or not math.isfinite(value) or not low <= value <= high:
            raise ParamsError(f"{name} must be a number from {low:g} to {high:g}, not {value!r}")
        return float(value)
    if name in _POSITIVE_INTS:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ParamsError(f"{name} must be a whole number of at least 1, not {value!r}")
        return value
    if name == "seed" and (not isinstance(value, int) or isinstance(value, bool)):
        raise ParamsError(f"seed must be a whole number, not {value!r}")
    if name == "stop":
        if isinstance(value, str):
            return value
        if (
            not isinstance(value, list)
            or not 1 <= len(value) <= 4
            or not all(isinstance(v, str) and v for v in value)
        ):
            raise ParamsError("stop must be a string or a list of 1 to 4 strings")
        return value
    if name == "reasoning_effort" and value not in _EFFORTS:
        raise ParamsError(f"reasoning_effort must be one of {', '.join(_EFFORTS)}, not {value!r}")
    if name in ("logprobs", "parallel_tool_calls", "store") and not isinstance(value, bool):
        raise ParamsError(f"{name} must be true or false, not {value!r}")
    if name in ("logit_bias", "response_format", "extra_body", "thinking") and not isinstance(
        value, dict
    ):
        raise ParamsError(f"{name} must be a table ({{ key = value }}), not {value!r}")
    return value


def check_params(params: Mapping[str, Any], known: Collection[str] | None) -> dict[str, Any]:
    """The parameters, checked: names against `known` (LiteLLM's list, see
    `llm.known_params`; None: only the reserved names, as the config is read before
    LiteLLM is loaded), values by type and range.

    Raises:
        ParamsError: the first bad name or value (nothing is kept).
    """
    checked: dict[str, Any] = {}
    allowed = (set(known or ()) | EXTRA_PARAMS) - set(RESERVED)
    for name, value in params.items():
        if not isinstance(name, str) or not name:
            raise ParamsError("a parameter needs a name")
        if name in RESERVED:
            raise ParamsError(f"{name} cannot be set for a chat: {RESERVED[name]}")
        if known is not None and name not in allowed:
            close = difflib.get_close_matches(name, sorted(allowed), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ParamsError(f"unknown parameter {name!r}{hint}")
        checked[name] = _check_value(name, value)
    return checked


def parse_params(text: str) -> dict[str, Any]:
    """`name = value` lines (TOML) into a dict; empty text is no parameters.

    Raises:
        ParamsError: the text is not TOML (the message says where).
    """
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ParamsError(f"not `name = value` lines: {exc}") from None


def _toml(value: Any) -> str:
    if isinstance(value, dict):
        inner = ", ".join(f"{json.dumps(str(k))} = {_toml(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False)  # strings and numbers read back as TOML


def params_text(params: Mapping[str, Any]) -> str:
    """The parameters as the TOML lines `parse_params` reads back."""
    return "".join(f"{name} = {_toml(value)}\n" for name, value in params.items())


def params_of(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A chat's stored parameters (none when its metadata holds no table)."""
    value = metadata.get("params")
    return dict(value) if isinstance(value, dict) else {}
