"""Getting LiteLLM: an offline environment, a lazy import, the demo provider, provider names.

LiteLLM takes about two seconds to import and, by default, fetches price
tables from the internet while importing. The environment below keeps it
offline; the import happens on first use (or in `warm_up()`, which the app
runs in a background thread after its first frame), never at module top.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import warnings
from typing import Any

from .demo_names import DEMO_CONTEXT_WINDOW, DEMO_MODEL, DEMO_PROVIDER

__all__ = [
    "DEFAULT_TIMEOUT",
    "DEMO_CONTEXT_WINDOW",
    "DEMO_MODEL",
    "DEMO_PROVIDER",
    "ensure_loaded",
    "is_demo",
    "is_loaded",
    "key_env_name",
    "load_litellm",
    "provider_key_env",
    "provider_of",
    "warm_tokenizers",
    "warm_up",
]


DEFAULT_TIMEOUT = 120.0

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


def load_litellm() -> Any:
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
            # LiteLLM 1.106 trips pydantic deprecation warnings on every streamed chunk;
            # they are LiteLLM's to fix and would only scribble on the terminal.
            warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"litellm(\.|$)")
            from .demo import register

            register(litellm)
            _litellm_module = litellm
    return _litellm_module


def warm_up(*, tokenizers: bool = True) -> None:
    """Import LiteLLM now (call it from a background thread after the first frame).

    Also loads what LiteLLM would otherwise load on the first request — the OpenAI
    client's resources and, with `tokenizers`, the tokenizer tables it counts tokens
    with (`warm_tokenizers`; about a second in all): done here, not on the UI thread
    later.
    """
    load_litellm()
    try:  # the OpenAI client's resources (~0.6 s) load lazily on the first request
        import openai.resources  # noqa: F401
    except Exception:
        logging.getLogger(__name__).debug("openai.resources warm-up failed", exc_info=True)
    try:  # its per-call type walk of the request body, when it changes nothing
        from .lean_request import install

        install()
    except Exception:
        logging.getLogger(__name__).warning("the lean request body is not used", exc_info=True)
    try:  # its Python walk of every streamed chunk's types, when its validator agrees
        from .lean_chunks import install as install_chunks

        install_chunks()
    except Exception:
        logging.getLogger(__name__).warning("the lean chunk builder is not used", exc_info=True)
    try:  # its own pricing of every call, which nothing of chatui's reads
        from .lean_costs import install as install_costs

        install_costs()
    except Exception:
        logging.getLogger(__name__).warning("LiteLLM's pricing is kept", exc_info=True)
    if tokenizers:
        warm_tokenizers()


def warm_tokenizers() -> None:
    """Load the tokenizer tables LiteLLM counts with: gpt-4o's o200k (~0.4 s of CPU;
    cl100k comes with LiteLLM's import). Never raises: counting loads what it needs."""
    for model in ("gpt-4o", "gpt-3.5-turbo"):  # o200k and cl100k encodings
        try:
            load_litellm().token_counter(model=model, text="warm up")
        except Exception:  # counting is an optimisation; never fail the warm-up
            logging.getLogger(__name__).debug(
                "tokenizer warm-up for %s failed", model, exc_info=True
            )


def is_loaded() -> bool:
    """True once LiteLLM is imported (model facts are then cheap to ask for)."""
    return _litellm_module is not None


async def ensure_loaded() -> Any:
    """The `litellm` module, importing it in a worker thread if needed.

    The event loop keeps running meanwhile (a UI stays responsive when the
    user sends before the background warm-up has finished).
    """
    if _litellm_module is not None:
        return _litellm_module
    return await asyncio.to_thread(load_litellm)


def is_demo(model: str) -> bool:
    """True for the offline demo model, as typed or as LiteLLM sees it."""
    return model in (DEMO_MODEL, f"{DEMO_PROVIDER}/{DEMO_MODEL}")


def provider_of(model: str) -> str:
    """LiteLLM's provider for a model name (`openai`, `anthropic`, …)."""
    if is_demo(model):
        return DEMO_PROVIDER
    if "/" in model:
        return model.split("/", 1)[0]
    try:
        return str(load_litellm().get_llm_provider(model=model)[1])
    except Exception:
        return "the provider"


def key_env_name(model: str) -> str:
    """The environment variable that holds the key for a model's provider."""
    return provider_key_env(provider_of(model))


def provider_key_env(provider: str) -> str:
    """The environment variable that holds a provider's key (`OPENAI_API_KEY`, …)."""
    known = {
        "gemini": "GEMINI_API_KEY",
        "together_ai": "TOGETHERAI_API_KEY",
        "vertex_ai": "GOOGLE_APPLICATION_CREDENTIALS",
        "bedrock": "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY",
    }
    return known.get(provider, f"{re.sub(r'[^A-Za-z0-9]', '_', provider).upper()}_API_KEY")
