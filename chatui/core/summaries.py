"""Compaction summaries written by a model through LiteLLM."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from .. import llm
from .config import Config, ModelOptions

__all__ = ["SUMMARY_SYSTEM_PROMPT", "Summarize", "make_summarizer", "summary_model"]

Summarize = Callable[[str], Awaitable[str]]

SUMMARY_SYSTEM_PROMPT = (
    "You write compact, faithful summaries of conversations so they can replace the "
    "original messages in a model's context. Keep facts, names, numbers, decisions and "
    "open questions. Use the sections you are asked for and nothing else."
)


def summary_model(config: Config, chat_model: str) -> str:
    """The model that writes summaries: `compaction_model` if set, else the chat's."""
    return config.compaction_model or chat_model


def make_summarizer(
    model: str, options: ModelOptions | None = None, *, timeout: float = llm.DEFAULT_TIMEOUT
) -> Summarize:
    """An `async (prompt) -> str` for `store.create_compact_function`.

    Raises (from the returned function):
        LLMError: the call failed or returned nothing; nothing is compacted.
    """
    api_base = options.api_base if options is not None else None

    async def summarize(prompt: str) -> str:
        return await llm.complete(
            model,
            [
                {"role": "system", "content": SUMMARY_SYSTEM_PROMPT},
                {"role": "user", "content": prompt},
            ],
            api_base=api_base,
            timeout=timeout,
        )

    return summarize
