"""A rehearsal of the first model call, against a loopback server of its own.

Importing LiteLLM (`env.warm_up`) is not all a first call pays: LiteLLM's
and the OpenAI SDK's request path load and build the rest on first use
(their HTTP session, request models, the streaming wrapper, the cost and
logging hooks): measured, the first streamed call after the import took
0.4–0.7 s to its first chunk and the next ones about 10 ms. The model
process rehearses one streamed call to a server on 127.0.0.1 that it runs
for the purpose, so the user's first message does not pay for it. Nothing
leaves the machine: the rehearsal's address is the loopback server's, and
its key a placeholder.

What stays for the first real call is per address (the client LiteLLM
keeps for each `api_base`, a connection): tens of milliseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

__all__ = ["warm_call"]

_CHUNKS: list[dict[str, Any]] = [
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}},
]


def _body() -> bytes:
    lines = []
    for chunk in _CHUNKS:
        data = {"id": "warm-up", "object": "chat.completion.chunk", "created": 0}
        data.update(model="warm-up", **chunk)
        lines.append(f"data: {json.dumps(data)}\n\n")
    lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Any request: read it, answer with a short streamed completion, hang up."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip() or 0)
        if length:
            await reader.readexactly(length)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Connection: close\r\n\r\n" + _body()
        )
        await writer.drain()
    except (OSError, ValueError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def warm_call(timeout: float = 10.0) -> None:
    """Stream one completion from a loopback server through LiteLLM's OpenAI path, with
    the arguments `stream_completion` passes (and a placeholder key: a real one has no
    business even on a loopback server of ours).

    Raises:
        Exception: whatever LiteLLM raised (the caller logs it; real calls still work).
    """
    from . import _call_kwargs, ensure_loaded

    litellm = await ensure_loaded()
    server = await asyncio.start_server(_answer, "127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        kwargs = _call_kwargs("openai/warm-up", f"http://127.0.0.1:{port}/v1", timeout)
        kwargs.update(
            api_key="warm-up",
            messages=[{"role": "user", "content": "warm up"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        response = await litellm.acompletion(**kwargs)
        try:
            async for _ in response:
                pass
        finally:
            if hasattr(response, "aclose"):
                await response.aclose()
    finally:
        server.close()
        await server.wait_closed()
