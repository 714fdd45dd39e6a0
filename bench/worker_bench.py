"""The model process's CPU per send and the lines it writes to the app (issue 22).

`local_bench.py` measures the whole app, where the model process's CPU is read
from /proc in 10 ms ticks over a few sends. This runs the model process alone
(`StreamWorker`, no Textual) for many sends against the scripted test server
(in a process of its own, its CPU not counted), so the figures per send are
averages over enough ticks to mean something:

- the model process's CPU per send (/proc, over all sends);
- the reading side's CPU per send (this process: the pipe's reading thread and
  the loop handing chunks over, as the app's process pays them);
- the lines (messages) per send on the pipe and the chunks the stream yields.

    nice -n 10 .venv/bin/python bench/worker_bench.py --sends 40

`--profile FILE` writes a cProfile of the model process over the sends (a
wrapper starts it under the profiler and dumps when the app closes its stdin).
`--words`, `--delay`: the scripted reply (default: 24 words 30 ms apart, as
local_bench's `--scripted`); `--delay 0` sends the whole reply in one burst.
`--app-request`: each send carries what the app's first send of a new chat does
(its system prompt and tools, from the engine) after `--history` exchanges, not a
bare question. `--no-usage`: the server streams no usage, as llama-cpp-python's
does (LiteLLM then counts the tokens itself, in the model process).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from chatui import llm  # noqa: E402
from chatui.llm.worker import StreamWorker  # noqa: E402

PROFILED = """\
import cProfile, os, sys
sys.argv = ["chatui.llm.worker_main"]
import time
profile = cProfile.Profile(time.process_time)
real_exit = os._exit
def _exit(code):
    profile.disable()
    profile.dump_stats({out!r})
    real_exit(code)
os._exit = _exit
from chatui.llm import worker_main
write = worker_main.Worker.write
def profiled_write(self, line):
    write(self, line)
    if line.startswith(b'{{"t": "ready"'):
        profile.enable()  # the sends only, not the warm-up
worker_main.Worker.write = profiled_write
worker_main.main()
"""


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_scripted(
    words: int, delay: float, usage: bool = True
) -> tuple[subprocess.Popen[str], str]:
    """local_bench's scripted server, each reply's words told apart (w0 w1 …); without
    usage in its streams when `usage` is False (llama-cpp-python's server)."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from tests.llm_server import LLMServer, text;"
        "s = LLMServer(('smollm2',)).start();"
        f"s.stream_usage = {usage};"
        f"s.default = text(' '.join(f'w{{i}}' for i in range({words})), delay={delay},"
        f" usage=(40, {words}));"
        "print(s.base_url, flush=True); sys.stdin.read()"
    )
    server = subprocess.Popen(
        [sys.executable, "-c", code, str(ROOT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def app_request(history: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The messages and tools of the app's send in a new chat after `history` exchanges:
    its system prompt and tools as the engine builds them."""
    from chatui.core.config import Config
    from chatui.core.convert import to_openai_messages
    from chatui.core.engine import ChatEngine
    from chatui.core.wiring import build_manager
    from store import Message, Store

    async def build() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        with tempfile.TemporaryDirectory() as home:
            store = Store(Path(home) / "bench.db")
            config = Config(model="openai/smollm2", api_base="http://127.0.0.1:9/v1")
            manager = build_manager(store, config)
            engine = ChatEngine(manager, config)
            session = manager.get_session(manager.create("bench").id)
            tools = await engine.tools_for(session)
            measured = await engine.measure(session, None, "openai/smollm2")
            store.close()
        reply = " ".join(["earlier"] * 24)
        past = [
            Message(id=f"h{i}{role[0]}", role=role, parts=[{"type": "text", "text": text}])
            for i in range(history)
            for role, text in (("user", f"Question {i}?"), ("assistant", reply))
        ]
        question = Message(id="q", role="user", parts=[{"type": "text", "text": "Say hello."}])
        messages = to_openai_messages(measured.request.system_prompt, [*past, question])
        return messages, [tool.to_openai() for tool in tools.values()]

    return asyncio.run(build())


async def run(
    args: argparse.Namespace,
    base: str,
    python: str | None,
    request: tuple[list[dict[str, Any]], list[dict[str, Any]] | None],
) -> None:
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    worker = StreamWorker(python, batch_seconds=args.batch)
    worker.start()
    while not worker.ready.is_set():
        await asyncio.sleep(0.05)
    process = worker._process
    assert process is not None
    messages, tools = request
    call = {"tools": tools, "api_base": base, "max_retries": 0}
    # One send first: what the first call sets up is not the steady state.
    async for _ in worker.stream("openai/smollm2", messages, **call):
        pass
    chunks: list[int] = []
    model_cpu0 = cpu_seconds(process.pid)
    own_cpu0 = time.process_time()
    lines0 = worker.lines
    started = time.perf_counter()
    for _ in range(args.sends):
        n = 0
        text = ""
        async for chunk in worker.stream("openai/smollm2", messages, **call):
            n += 1
            if isinstance(chunk, llm.TextChunk):
                text += chunk.text
        assert text.split() == [f"w{i}" for i in range(args.words)], text
        chunks.append(n)
    wall = time.perf_counter() - started
    model_cpu = cpu_seconds(process.pid) - model_cpu0
    own_cpu = time.process_time() - own_cpu0
    lines = worker.lines - lines0
    worker.close()
    print(
        f"sends: {args.sends}, scripted reply: {args.words} words {args.delay * 1000:.0f} ms apart"
        f"{'' if args.usage else ', no usage streamed'}; request: "
        + (
            f"the app's ({len(messages)} messages, {len(tools or [])} tools)"
            if args.app_request
            else "one question"
        )
    )
    print(f"load: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
    print(f"model process CPU per send: {model_cpu / args.sends * 1000:.1f} ms")
    print(f"reading side (this process) CPU per send: {own_cpu / args.sends * 1000:.1f} ms")
    print(
        f"pipe lines per send: {lines / args.sends:.1f}; "
        f"chunks per send: {statistics.mean(chunks):.1f}; wall per send {wall / args.sends:.3f} s"
    )


def main() -> None:
    # No warm model process left behind for the next run to adopt (chatui.llm.spare):
    # each run starts its own, as it measured before spares.
    os.environ.setdefault("CHATUI_SPARE_SECONDS", "0")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=40)
    parser.add_argument("--words", type=int, default=24)
    parser.add_argument("--delay", type=float, default=0.03)
    parser.add_argument(
        "--batch", type=float, help="seconds between a call's text lines (default: the worker's)"
    )
    parser.add_argument("--profile", help="write a cProfile of the model process to this file")
    parser.add_argument(
        "--app-request", action="store_true", help="the app's system prompt and tools"
    )
    parser.add_argument("--history", type=int, default=0, help="exchanges before the question")
    parser.add_argument(
        "--no-usage", dest="usage", action="store_false", help="streams without usage"
    )
    args = parser.parse_args()
    request: tuple[list[dict[str, Any]], list[dict[str, Any]] | None] = (
        app_request(args.history)
        if args.app_request
        else ([{"role": "user", "content": "Say hello."}], None)
    )
    server, base = start_scripted(args.words, args.delay, args.usage)
    python = None
    folder = tempfile.mkdtemp()
    if args.profile:
        wrapper = Path(folder) / "python"
        script = Path(folder) / "profiled.py"
        script.write_text(PROFILED.format(out=str(Path(args.profile).resolve())))
        wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {script}\n")
        wrapper.chmod(0o755)
        python = str(wrapper)
    try:
        asyncio.run(run(args, base, python, request))
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
