"""A 100 MB import beside streaming replies (issue 25): figures, not assertions.

Writes a chatui JSONL export of `--mb` MB (chats of 200 messages), starts `chatui
import` on it in a process of its own (the real CLI, as a person runs it), and while
it runs streams replies into the same database one after another through the app's
engine (LiteLLM's real client against the scripted server, itself in a process of
its own) with the app's own lock wait (10 s), writing every token as it comes (the
engine's strictest flushing), until the import has ended. A probe takes the write
lock twice a second meanwhile and times how long it waited.

It prints the import's size, time and exit, each reply's time against one streamed
before the import, whether every reply was stored whole and complete, the longest
wait for the write lock, and whether every imported message is there. Exits
non-zero when a reply was cut or failed, or the import did not finish whole.

Usage: python bench/contention_bench.py [--mb 100] [--words 200] [--keep DIR]
(the figures for the README: `nice -n 10 .venv/bin/python bench/contention_bench.py`)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from chatui.core.config import Config  # noqa: E402
from chatui.core.engine import ChatEngine  # noqa: E402
from chatui.core.events import Notice, ReplyFinished, TurnFailed  # noqa: E402
from chatui.core.wiring import build_manager  # noqa: E402
from store import Store, StoreSessionProvider, document_entries  # noqa: E402

CHATUI = str(Path(sys.executable).with_name("chatui"))
MESSAGES = 200  # a chat
FILLER = "lorem ipsum dolor sit amet, consectetur adipiscing elit sed do eiusmod tempor "

SERVE = """
import sys
sys.path.insert(0, {root!r})
from tests.llm_server import LLMServer, text
server = LLMServer().start()
server.default = text({reply!r}, delay={delay!r})
print(server.base_url, flush=True)
sys.stdin.read()  # until the bench closes the pipe
"""


def big_export(path: Path, megabytes: int) -> tuple[int, int]:
    """A chatui JSONL export of about `megabytes` MB; returns (chats, messages)."""
    chats = 0
    with path.open("w") as fh:
        while fh.tell() < megabytes * 1_000_000:
            sid = f"big{chats:05d}"
            messages, parent = [], None
            for m in range(MESSAGES):
                mid = f"{sid}-{m}"
                messages.append({
                    "id": mid, "parent_id": parent, "role": "user" if m % 2 == 0 else "assistant",
                    "parts": [{"type": "text", "text": f"chat {chats} message {m} " + FILLER * 5}],
                })  # fmt: skip
                parent = mid
            doc = {"format": "chatui", "version": 1,
                   "session": {"id": sid, "name": f"Big {chats}"}, "messages": messages}  # fmt: skip
            for entry in document_entries(doc):
                fh.write(json.dumps(entry) + "\n")
            chats += 1
    return chats, chats * MESSAGES


class LockProbe(threading.Thread):
    """Takes the write lock (BEGIN IMMEDIATE) twice a second and times each wait."""

    def __init__(self, db: Path) -> None:
        super().__init__(daemon=True)
        self.db = db
        self.waits: list[float] = []
        self.errors: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        conn = sqlite3.connect(self.db, timeout=30, isolation_level=None)
        while not self.stop.wait(0.5):
            started = time.perf_counter()
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("ROLLBACK")
                self.waits.append(time.perf_counter() - started)
            except sqlite3.OperationalError as exc:
                self.errors.append(str(exc))
        conn.close()


async def stream_one(engine: ChatEngine, store: Store, sid: str, words: str) -> dict:
    started = time.perf_counter()
    events = [e async for e in engine.send(sid, "stream while it imports")]
    took = time.perf_counter() - started
    reply = StoreSessionProvider(store, sid).get_latest_leaf()
    failed = [f"{e.title}: {e.detail}" for e in events if isinstance(e, TurnFailed)]
    locked = [e.text for e in events if isinstance(e, Notice) and "locked" in e.text.lower()]
    return {
        "took": took,
        "whole": reply is not None and reply.text == words,
        "complete": reply is not None and reply.metadata.get("status") == "complete",
        "finished": any(isinstance(e, ReplyFinished) for e in events),
        "problems": failed + locked,
    }


async def replies_during(
    db: Path, base_url: str, words: str, importer: subprocess.Popen[str], started: list[float]
) -> tuple[dict, list[dict]]:
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")
    config = Config(model="openai/test-model", api_base=base_url, max_retries=0)
    with Store(db) as store:  # the app's lock wait (10 s)
        engine = ChatEngine(build_manager(store, config), config, flush_interval=0.0)
        sid = engine.manager.create("streaming beside the import").id
        await stream_one(engine, store, sid, words)  # LiteLLM's first call loads it
        baseline = await stream_one(engine, store, sid, words)  # the import not yet started
        importer.stdin.close()  # type: ignore[union-attr]  # the go signal
        started.append(time.perf_counter())
        results = []
        while importer.poll() is None:
            results.append(await stream_one(engine, store, sid, words))
    return baseline, results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=100, help="the import's size (default 100)")
    parser.add_argument("--words", type=int, default=200, help="words a reply streams")
    parser.add_argument("--delay", type=float, default=0.01, help="seconds between tokens")
    parser.add_argument("--keep", type=Path, help="leave the file and database in DIR")
    args = parser.parse_args()

    folder = args.keep or Path(tempfile.mkdtemp(prefix="chatui-contention-"))
    folder.mkdir(parents=True, exist_ok=True)
    source, db = folder / "big.jsonl", folder / "chats.db"
    started = time.perf_counter()
    chats, messages = big_export(source, args.mb)
    size = source.stat().st_size
    print(
        f"file:      {size / 1e6:.1f} MB chatui JSONL, {chats:,} chats, {messages:,} messages "
        f"(written in {time.perf_counter() - started:.0f} s)",
        flush=True,
    )
    Store(db).close()
    words = " ".join(f"w{i}" for i in range(args.words))
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE.format(root=str(ROOT), reply=words, delay=args.delay)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert server.stdout is not None
    base_url = server.stdout.readline().strip()
    # The import waits for its standard input to close: the baseline reply goes first.
    importer = subprocess.Popen(
        ["sh", "-c", 'read _; exec "$0" "$@"', CHATUI, "import", str(source),
         "--from", "chatui", "--db", str(db)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=(folder / "import.err").open("w"),
        text=True,
    )  # fmt: skip
    probe = LockProbe(db)
    import_started: list[float] = []
    probe.start()
    baseline, results = asyncio.run(replies_during(db, base_url, words, importer, import_started))
    importer.wait()
    err = (folder / "import.err").read_text()
    import_took = time.perf_counter() - import_started[0]
    probe.stop.set()
    probe.join()
    assert server.stdin is not None
    server.stdin.close()
    server.wait(timeout=10)

    with Store(db) as store:
        stored = store.query("SELECT count(*) FROM messages")[0][0]
        problems = store.integrity_check()
    expected = messages + 2 * (len(results) + 2)
    whole = [r for r in results if r["whole"] and r["complete"] and r["finished"]]
    import_ok = importer.returncode == 0 and stored == expected and not problems
    took = [r["took"] for r in results]
    waits = probe.waits
    print(
        f"import:    exit {importer.returncode} in {import_took:.0f} s "
        f"({messages / import_took:,.0f} messages/s, batches of ≤500 with 0.1 s pauses)"
    )
    if importer.returncode:
        print(f"           {err.strip()[-500:]}")
    print(
        f"replies:   {len(results)} streamed during the import ({args.words} words each, "
        f"every token written): {len(whole)} stored whole and complete"
    )
    if took:
        print(
            f"           took p50 {statistics.median(took):.2f} s · max {max(took):.2f} s "
            f"(alone, before the import: {baseline['took']:.2f} s)"
        )
    for r in results:
        for problem in r["problems"]:
            print(f"           problem: {problem}")
    if waits:
        print(
            f"lock wait: {len(waits)} probes, p50 {statistics.median(waits) * 1000:.0f} ms · "
            f"max {max(waits) * 1000:.0f} ms; {len(probe.errors)} gave up"
        )
    print(
        f"stored:    {stored:,} messages (expected {expected:,}); integrity_check "
        + ("clean" if not problems else "; ".join(problems))
    )
    if args.keep is None:
        shutil.rmtree(folder, ignore_errors=True)
    ok = import_ok and results and len(whole) == len(results) and baseline["whole"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
