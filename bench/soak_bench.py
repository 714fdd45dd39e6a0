"""Soak run: 100k appends through the library while another process searches.

The writer (this process) appends `--messages` messages through
`SessionManager.append` — the app's own write path: append + search index + session
touch in one `BEGIN IMMEDIATE` transaction — across `--sessions` chats, mostly chains
with a regenerated sibling now and then. Meanwhile `--searchers` separate processes
run cross-chat and chat-scoped searches, history reads and counts against the same
file without pause. At the end it reports append throughput and latency (p50, p99,
max), the searchers' work, every "database is locked" (or other) error, and proves
nothing was lost: each message exactly once, every parent present, the search index
consistent with the messages table (`Store.integrity_check`).

`--fuzz N` runs the input fuzzers instead (every import format and the store's
message shapes, N examples each, one format after another; `make soak ARGS="--fuzz
10000"`, or `--formats zip,pi` for some of them).

Figures, not assertions: run it on demand (`make soak`, `make soak ARGS="--messages
20000"`). Exits non-zero when anything was lost or any error was seen.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from store import SessionManager, Store  # noqa: E402

VOCAB = [
    f"{a}{b}"
    for a in ("sol", "mar", "ven", "ter", "lun", "jov", "nep", "plu")
    for b in ("ar", "is", "on", "um", "ex", "ix", "al", "or", "en", "us")
]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(rng.randint(8, 40)))


# -- the searcher process --------------------------------------------------------------------


def searcher(db: str, stop: str, seed: int, sessions: int) -> None:
    """Read from when `<stop>.go` exists until `stop` does; print one JSON line."""
    rng = random.Random(seed)
    kinds = ("search all chats", "search one chat", "history", "count")
    latencies: dict[str, list[float]] = {k: [] for k in kinds}
    errors: list[str] = []
    with Store(db) as store:
        manager = SessionManager(store)
        while not os.path.exists(stop + ".go"):
            time.sleep(0.001)
        while not os.path.exists(stop):
            kind = rng.choice(kinds)
            sid = f"soak-{rng.randrange(sessions):03d}"
            started = time.perf_counter()
            try:
                if kind == "search all chats":
                    manager.search(f"{rng.choice(VOCAB)} {rng.choice(VOCAB)}", limit=20)
                elif kind == "search one chat":
                    manager.search(rng.choice(VOCAB), limit=20, session_id=sid)
                elif kind == "history":
                    manager.get_history(sid)
                else:
                    store.query("SELECT count(*) FROM messages")
            except Exception as exc:  # reported, not raised: the run goes on
                errors.append(f"{type(exc).__name__}: {exc}")
            latencies[kind].append(time.perf_counter() - started)
    print(
        json.dumps(
            {
                "kinds": {
                    k: {
                        "n": len(v),
                        "p50_ms": percentile(v, 0.5) * 1000,
                        "p99_ms": percentile(v, 0.99) * 1000,
                    }
                    for k, v in latencies.items()
                },
                "errors": errors[:20],
                "error_count": len(errors),
            }
        ),
        flush=True,
    )


# -- the writer --------------------------------------------------------------------------------


async def write(
    db: Path, messages: int, sessions: int, seed: int
) -> tuple[list[float], list[str], dict[str, set[str]]]:
    rng = random.Random(seed)
    latencies: list[float] = []
    errors: list[str] = []
    written: dict[str, set[str]] = {}
    with Store(db) as store:
        manager = SessionManager(store)
        ids = [f"soak-{i:03d}" for i in range(sessions)]  # made before the searchers start
        last: dict[str, list[str]] = {sid: [] for sid in ids}
        started = time.perf_counter()
        for n in range(messages):
            sid = ids[n % sessions]
            mid = f"m{n:07d}"
            chain = last[sid]
            # mostly the latest leaf; every ~12th a regenerate beside the previous reply
            parent = chain[-2] if len(chain) > 2 and rng.randrange(12) == 0 else None
            message = {
                "id": mid,
                "role": "user" if n % 2 == 0 else "assistant",
                "parts": [{"type": "text", "text": sentence(rng)}],
            }
            t0 = time.perf_counter()
            try:
                if parent is None:
                    await manager.append(sid, message)
                else:
                    await manager.append(sid, message, parent)
                written.setdefault(sid, set()).add(mid)
                chain.append(mid)
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
            latencies.append(time.perf_counter() - t0)
            if (n + 1) % 10_000 == 0:
                rate = (n + 1) / (time.perf_counter() - started)
                print(f"  {n + 1:>9,} appended  ({rate:,.0f}/s)", file=sys.stderr, flush=True)
    return latencies, errors, written


def verify(db: Path, written: dict[str, set[str]]) -> list[str]:
    """Everything appended is there exactly once, in a whole tree, with a consistent index."""
    problems: list[str] = []
    with Store(db) as store:
        problems += store.integrity_check()
        for sid, expected in written.items():
            rows = store.query("SELECT id, parent_id FROM messages WHERE session_id = ?", (sid,))
            ids = [r[0] for r in rows]
            if len(ids) != len(set(ids)):
                problems.append(f"{sid}: duplicate messages")
            if set(ids) != expected:
                problems.append(
                    f"{sid}: {len(expected - set(ids))} missing, "
                    f"{len(set(ids) - expected)} unexpected"
                )
            present = set(ids)
            orphans = [mid for mid, parent in rows if parent is not None and parent not in present]
            if orphans:
                problems.append(f"{sid}: {len(orphans)} messages whose parent is gone")
        total = store.query("SELECT count(*) FROM messages")[0][0]
        indexed = store.query("SELECT count(*) FROM messages_fts")[0][0]
        expected_total = sum(len(v) for v in written.values())
        if total != expected_total or indexed != expected_total:
            problems.append(f"{total} messages and {indexed} index rows, expected {expected_total}")
        probe = next(iter(written))
        newest = max(written[probe])
        text = json.loads(
            store.query(
                "SELECT content FROM messages WHERE id = ? AND session_id = ?", (newest, probe)
            )[0][0]
        )
        word = text["parts"][0]["text"].split()[0]
        if newest not in {
            h.id for h in SessionManager(store).search(word, limit=10_000, session_id=probe)
        }:
            problems.append("the newest message is not found by search")
    return problems


FUZZERS = {
    "chatui-json": "test_chatui_json",
    "chatui-jsonl": "test_chatui_jsonl",
    "chatgpt": "test_chatgpt",
    "pi": "test_pi",
    "llm": "test_llm",
    "zip": "test_chatgpt_zip",
    "store-api": "test_store_api",
}
"""Each input format's fuzzer in tests/test_fuzz_import.py (the name the count file uses)."""


def fuzz_run(root: Path, fmt: str, examples: int, seed: int, counts: Path) -> tuple[int, str]:
    """One pytest run of one format's fuzzer; returns (exit code, its output)."""
    env = {
        **os.environ,
        "CHATUI_FUZZ_EXAMPLES": str(examples),
        "CHATUI_FUZZ_COUNT_FILE": str(counts),
    }
    test = f"{root / 'tests' / 'test_fuzz_import.py'}::{FUZZERS[fmt]}"
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
            test, f"--hypothesis-seed={seed}"]  # fmt: skip
    proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def fuzz(
    examples: int, formats: list[str], seed: int, chunk: int, until: float | None, keep: Path | None
) -> int:
    """Each format's fuzzer until it has run `examples` examples, in runs of at most
    `chunk` examples (each its own pytest process and Hypothesis seed), taking the
    formats in turn, so a run cut short by `until` leaves every format with about as
    many. The examples each really ran are counted by the tests themselves
    (CHATUI_FUZZ_COUNT_FILE); a run that failed is shown whole and its format stops."""
    root = Path(__file__).resolve().parent.parent
    folder = keep or Path(tempfile.mkdtemp(prefix="chatui-fuzz-"))
    folder.mkdir(parents=True, exist_ok=True)
    counts = folder / "counts"
    # A kept folder resumes: the examples its counts file holds are counted again.
    held = counts.read_text().split() if counts.exists() else []
    ran = {fmt: held.count(fmt) for fmt in formats}
    took = dict.fromkeys(formats, 0.0)
    failed: dict[str, str] = {}
    print(f"fuzz: {examples:,} examples per format, runs of {chunk:,}, seed {seed}", flush=True)
    n = 0

    def over() -> bool:  # `until` passed, or `touch FOLDER/stop`: no new run
        return (until is not None and time.time() >= until) or (folder / "stop").exists()

    while True:
        todo = [f for f in formats if ran[f] < examples and f not in failed]
        if not todo or over():
            break
        for fmt in todo:
            if over():
                break
            n += 1
            before = counts.read_text().split().count(fmt) if counts.exists() else 0
            started = time.perf_counter()
            code, output = fuzz_run(root, fmt, min(chunk, examples - ran[fmt]), seed + n, counts)
            took[fmt] += time.perf_counter() - started
            ran[fmt] += counts.read_text().split().count(fmt) - before if counts.exists() else 0
            verdict = "ok" if code == 0 else f"FAILED (exit {code})"
            print(
                f"  run {n:>3}  {fmt:<13} seed {seed + n}  {ran[fmt]:>7,} so far  "
                f"{took[fmt]:>6.0f} s  {verdict}  {time.strftime('%H:%M:%S')}",
                flush=True,
            )
            if code != 0:
                failed[fmt] = output
                (folder / f"failure-{fmt}.txt").write_text(output)
                print(output[-5000:], flush=True)
    held = counts.read_text().split() if counts.exists() else []
    print("\nexamples run, per format (imported and read back everywhere / refused):")
    for fmt in formats:
        verdict = "FAILED" if fmt in failed else "no failure, no traceback"
        shares = f"{held.count(fmt + ':imported'):>7,} / {held.count(fmt + ':refused'):>7,}"
        print(f"  {fmt:<14}{ran[fmt]:>8,}  ({shares})  {took[fmt]:>6.0f} s  {verdict}")
    print(f"formats failed: {len(failed)}")
    if keep is None:
        shutil.rmtree(folder, ignore_errors=True)
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--searchers", type=int, default=1)
    parser.add_argument(
        "--db",
        type=Path,
        help="database file (default: a temp file); with --fuzz: the folder to keep the "
        "example counts and failures in",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--searcher", nargs=2, metavar=("DB", "STOP"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--fuzz",
        type=int,
        metavar="N",
        help="instead: run the input fuzzers (tests/test_fuzz_import.py) N examples per "
        "format and report the examples run and any failure",
    )
    parser.add_argument(
        "--formats",
        default=",".join(FUZZERS),
        help=f"with --fuzz: the formats to fuzz, comma-separated (default: {','.join(FUZZERS)})",
    )
    parser.add_argument(
        "--fuzz-seed", type=int, default=1, help="with --fuzz: the first run's Hypothesis seed"
    )
    parser.add_argument(
        "--chunk", type=int, default=1000, help="with --fuzz: examples a pytest run takes"
    )
    parser.add_argument(
        "--until",
        metavar="HH:MM",
        help="with --fuzz: start no run after this time (UTC) and report what ran (so does "
        "a file named stop in the --db folder)",
    )
    args = parser.parse_args()
    if args.fuzz:
        formats = [f for f in args.formats.split(",") if f]
        unknown = [f for f in formats if f not in FUZZERS]
        if unknown:
            parser.error(f"unknown format(s): {', '.join(unknown)} (known: {', '.join(FUZZERS)})")
        until = None
        if args.until:
            hour, minute = map(int, args.until.split(":"))
            now = time.gmtime()
            until = (
                time.time() + ((hour * 60 + minute) - (now.tm_hour * 60 + now.tm_min)) % 1440 * 60
            )
        return fuzz(args.fuzz, formats, args.fuzz_seed, args.chunk, until, args.db)
    if args.searcher:
        searcher(args.searcher[0], args.searcher[1], args.seed, args.sessions)
        return 0

    folder = Path(tempfile.mkdtemp(prefix="chatui-soak-"))
    db = args.db or folder / "soak.db"
    with Store(db) as store:
        manager = SessionManager(store)
        for i in range(args.sessions):
            manager.create(f"Soak {i}", id=f"soak-{i:03d}")
    stop = folder / "stop"
    print(
        f"soak: {args.messages:,} appends over {args.sessions} chats, "
        f"{args.searchers} searching process(es), {db}",
        file=sys.stderr,
    )
    searchers = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--searcher",
                str(db),
                str(stop),
                "--seed",
                str(args.seed + i + 1),
                "--sessions",
                str(args.sessions),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(args.searchers)
    ]
    time.sleep(0.5)  # searchers open the file first, so every append races them
    (folder / "stop.go").touch()
    started = time.perf_counter()
    latencies, errors, written = asyncio.run(write(db, args.messages, args.sessions, args.seed))
    elapsed = time.perf_counter() - started
    stop.touch()
    reports = [json.loads(s.communicate()[0].strip().splitlines()[-1]) for s in searchers]
    problems = verify(db, written)
    size = db.stat().st_size

    appended = sum(len(v) for v in written.values())
    locked = [
        e for e in errors + [x for r in reports for x in r["errors"]] if "locked" in e.lower()
    ]
    print(f"\nappends:     {appended:,} in {elapsed:.1f} s = {appended / elapsed:,.0f}/s")
    print(
        f"latency:     p50 {percentile(latencies, 0.5) * 1000:.2f} ms · "
        f"p99 {percentile(latencies, 0.99) * 1000:.2f} ms · "
        f"max {max(latencies) * 1000:.1f} ms · mean "
        f"{statistics.fmean(latencies) * 1000:.2f} ms"
    )
    for i, r in enumerate(reports, 1):
        print(f"searcher {i}:  {r['error_count']} errors")
        for kind, k in r["kinds"].items():
            print(
                f"  {kind:<17}{k['n']:>9,} ({k['n'] / elapsed:,.0f}/s) · "
                f"p50 {k['p50_ms']:.2f} ms · p99 {k['p99_ms']:.2f} ms"
            )
    print(
        f"errors:      {len(errors)} in appends, "
        f"{sum(r['error_count'] for r in reports)} in reads, {len(locked)} 'locked'"
    )
    print(f"database:    {size / 1e6:.1f} MB")
    print(
        "lost:        nothing (each message once, trees whole, index consistent)"
        if not problems
        else "PROBLEMS:\n  " + "\n  ".join(problems)
    )
    for line in (errors + [x for r in reports for x in r["errors"]])[:10]:
        print(f"  error: {line}")
    if args.db is None:
        shutil.rmtree(folder, ignore_errors=True)
    return 0 if not problems and not errors and not any(r["error_count"] for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
