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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from chatui import llm  # noqa: E402
from chatui.llm.worker import StreamWorker  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
import local_bench  # noqa: E402

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


def start_scripted(words: int, delay: float) -> tuple[subprocess.Popen[str], str]:
    """local_bench's scripted server, each reply's words told apart (w0 w1 …)."""
    return local_bench.start_scripted(words, delay, f"' '.join(f'w{{i}}' for i in range({words}))")


async def run(args: argparse.Namespace, base: str, python: str | None) -> None:
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    worker = StreamWorker(python, batch_seconds=args.batch)
    worker.start()
    while not worker.ready.is_set():
        await asyncio.sleep(0.05)
    process = worker._process
    assert process is not None
    messages = [{"role": "user", "content": "Say hello."}]
    # One send first: what the first call sets up is not the steady state.
    async for _ in worker.stream("openai/smollm2", messages, api_base=base, max_retries=0):
        pass
    chunks: list[int] = []
    model_cpu0 = cpu_seconds(process.pid)
    own_cpu0 = time.process_time()
    lines0 = worker.lines
    started = time.perf_counter()
    for _ in range(args.sends):
        n = 0
        text = ""
        async for chunk in worker.stream("openai/smollm2", messages, api_base=base, max_retries=0):
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
    )
    print(f"load: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
    print(f"model process CPU per send: {model_cpu / args.sends * 1000:.1f} ms")
    print(f"reading side (this process) CPU per send: {own_cpu / args.sends * 1000:.1f} ms")
    print(
        f"pipe lines per send: {lines / args.sends:.1f}; "
        f"chunks per send: {statistics.mean(chunks):.1f}; wall per send {wall / args.sends:.3f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=40)
    parser.add_argument("--words", type=int, default=24)
    parser.add_argument("--delay", type=float, default=0.03)
    parser.add_argument(
        "--batch", type=float, help="seconds between a call's text lines (default: the worker's)"
    )
    parser.add_argument("--profile", help="write a cProfile of the model process to this file")
    args = parser.parse_args()
    server, base = start_scripted(args.words, args.delay)
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
        asyncio.run(run(args, base, python))
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
