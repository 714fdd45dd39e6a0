"""Import and export at scale: 10,000 ChatGPT conversations in, every chat out.

Prints three figures (no assertions; run on demand):

- the time `chatui import conversations.json --from chatgpt` takes for N
  generated conversations (ChatGPT's export shape: a null root, a hidden
  system node, questions, answers, one regenerated answer each), target < 30 s
  at 10,000;
- the time a re-import of the same file takes (every chat "already there",
  messages checked by id for the merge);
- the peak memory (max RSS of a child process) of `chatui export --all` as
  JSON and as Markdown, for the code under `--code` (default: this tree), so
  an older tree can be measured the same way: `--code /path/to/old/checkout`.

Usage: python bench/import_bench.py [--chats 10000] [--code PATH] [--keep DIR]
(`--keep DIR` leaves the database there; `--db DB` measures only the exports of DB)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_700_000_000.0


def conversation(i: int) -> dict:
    """One ChatGPT conversation: 4 exchanges, the second answer regenerated once."""

    def node(nid, parent, children, role=None, text="", t=0.0):
        message = None
        if role:
            message = {
                "id": nid,
                "author": {"role": role, "name": None, "metadata": {}},
                "create_time": T0 + i * 100 + t,
                "content": {"content_type": "text", "parts": [text]},
                "status": "finished_successfully",
                "metadata": {"model_slug": "gpt-4o"} if role == "assistant" else {},
                "recipient": "all",
            }
        return {"id": nid, "message": message, "parent": parent, "children": children}

    p = f"c{i}-"
    words = f"conversation {i} about lists, loops and the occasional dictionary " * 4
    mapping = {f"{p}root": node(f"{p}root", None, [f"{p}u0"])}
    parent = f"{p}root"
    for turn in range(4):
        u, a = f"{p}u{turn}", f"{p}a{turn}"
        children = [a, f"{p}r{turn}"] if turn == 1 else [a]
        mapping[u] = node(u, parent, children, "user", f"Question {turn}: {words}", turn * 2)
        nxt = [f"{p}u{turn + 1}"] if turn < 3 else []
        mapping[a] = node(a, u, nxt, "assistant", f"Answer {turn}: {words * 3}", turn * 2 + 1)
        if turn == 1:
            mapping[f"{p}r{turn}"] = node(f"{p}r{turn}", u, [], "assistant", "Regenerated", 3.5)
        parent = a
    return {
        "title": f"Chat {i}",
        "create_time": T0 + i * 100,
        "update_time": T0 + i * 100 + 8,
        "mapping": mapping,
        "current_node": f"{p}a3",
        "conversation_id": f"conv-{i}",
        "id": f"conv-{i}",
    }


class Run(NamedTuple):
    seconds: float  # wall clock, as the user waits
    cpu: float  # the child's user + system CPU seconds: what a busy machine does not inflate
    peak: int  # max RSS, MiB
    heap: int  # Python heap peak, MiB (exports only)

    def figures(self) -> str:
        load = os.getloadavg()[0]
        return f"{self.seconds:6.1f} s   (cpu {self.cpu:.1f} s, load {load:.1f}; RSS {self.peak}"


def run_cli(code: Path, home: Path, *argv: str) -> Run:
    """Run `chatui` from `code` in a child: wall and CPU seconds, max RSS, Python heap peak."""
    # Max RSS counts SQLite's memory-mapped database pages too, so the Python
    # heap's own peak (tracemalloc) is printed beside it: that is what streaming
    # changes (measured for exports only: it slows an import threefold).
    script = (
        "import resource, sys, tracemalloc\n"
        "if 'export' in sys.argv:\n"  # tracemalloc slows an import threefold: not timed there
        "    tracemalloc.start()\n"
        "from chatui.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "sys.stdout.flush()\n"
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "heap = tracemalloc.get_traced_memory()[1]\n"
        "sys.stderr.write(f'PEAK {peak} {heap}\\n')\n"
        "sys.exit(code)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(code), "CHATUI_HOME": str(home)}
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-c", script, *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    peak, heap = next(
        (
            (int(line.split()[1]), int(line.split()[2]))
            for line in done.stderr.splitlines()
            if line.startswith("PEAK")
        ),
        (0, 0),
    )
    if done.returncode not in (0, 6):
        raise SystemExit(f"chatui {' '.join(argv)} failed ({done.returncode}): {done.stderr}")
    return Run(seconds, cpu, peak // 1024, heap // 2**20)  # ru_maxrss is KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chats", type=int, default=10_000)
    parser.add_argument("--code", type=Path, default=ROOT, help="the chatui tree to measure")
    parser.add_argument("--keep", type=Path, help="build the database in this folder and keep it")
    parser.add_argument("--db", type=Path, help="measure only the exports of this database")
    args = parser.parse_args()
    if args.db is not None:
        exports(args.code, args.db.parent, args.db)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        source = folder / "conversations.json"
        source.write_text(json.dumps([conversation(i) for i in range(args.chats)]))
        db = folder / "chats.db"
        size = source.stat().st_size / 2**20
        print(f"{args.chats} ChatGPT conversations, {size:.0f} MiB, code: {args.code}")
        run = run_cli(
            args.code, folder, "import", str(source), "--from", "chatgpt", "--db", str(db)
        )
        print(f"import:           {run.figures()} MiB; target < 30 s)")
        run = run_cli(
            args.code, folder, "import", str(source), "--from", "chatgpt", "--db", str(db)
        )
        print(f"re-import (none new): {run.figures()} MiB)")
        exports(args.code, folder, db)


def exports(code: Path, folder: Path, db: Path) -> None:
    for fmt in ("json", "md"):
        run = run_cli(  # to stdout: the case that joined every chat
            code, folder, "--db", str(db), "export", "--all", "--format", fmt
        )
        print(f"export --all {fmt:<4}: {run.figures()}, heap {run.heap} MiB) ({code})")


if __name__ == "__main__":
    main()
