"""Benchmark of memory per branch: what reading a block at a branch costs.

A chat of DEPTH messages on one line with a sibling reply every tenth message,
WRITES writes to its scratchpad spread over both; the figure is the time of
`Session.load_context(at=leaf)` (every block read at the leaf: one path walk
and one scan of the block's live writes) against the same read of a block
without branches. Figures, not assertions: `python bench/branch_memory_bench.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from store import SessionManager, Store  # noqa: E402


def text(mid: str, role: str) -> dict:
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": f"message {mid}"}]}


async def build(store: Store, depth: int, writes: int) -> tuple[str, str]:
    manager = SessionManager(store).with_branch_memory().with_context("scratchpad")
    info = manager.create("bench")
    session = manager.get_session(info.id)
    parent = None
    ids = []
    for i in range(depth):
        role = "user" if i % 2 == 0 else "assistant"
        await session.append_message(text(f"m{i}", role), parent)
        if i % 10 == 9:  # a sibling reply beside every tenth message
            await session.append_message(text(f"s{i}", "assistant"), parent)
        parent = f"m{i}"
        ids.append(parent)
    step = max(len(ids) // writes, 1)
    for n, mid in enumerate(ids[::step][:writes]):
        await session.replace_context_block("scratchpad", f"note {n} at {mid}", at=mid)
    return info.id, ids[-1]


def timed(fn, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "bench.db") as store:
        sid, leaf = asyncio.run(build(store, args.depth, args.writes))
        branchy = SessionManager(store).with_branch_memory().with_context("scratchpad")
        shared = SessionManager(store).with_context("scratchpad")
        session_b = branchy.get_session(sid)
        session_s = shared.get_session(sid)
        at_leaf = timed(lambda: asyncio.run(session_b.load_context(at=leaf)), args.runs)
        at_root = timed(lambda: asyncio.run(session_b.load_context(at="m0")), args.runs)
        plain = timed(lambda: asyncio.run(session_s.load_context(at=leaf)), args.runs)
        print(f"path of {args.depth} messages, {args.writes} writes to the block:")
        print(f"  per-branch read at the leaf   {at_leaf:7.2f} ms (median of {args.runs})")
        print(f"  per-branch read at the root   {at_root:7.2f} ms")
        print(f"  shared read (no branches)     {plain:7.2f} ms")


if __name__ == "__main__":
    main()
