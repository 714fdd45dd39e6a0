"""Issue 23's table: each operation through chatui against the raw engine doing the
minimal work, on SQLite and PostgreSQL, both sides in the same run, with the load.

`--messages 100000` (the default; `1000000` on demand) in 1,000 branching chats:
the corpus of `store_bench.build_corpus`, cached with its PostgreSQL copy as
`search_bench` caches them (/tmp/chatui-bench-cache and a schema of the bench
server, `CHATUI_BENCH_POSTGRES_URL`). Rows, chatui against raw:

- global search, 20 best, the `search_bench` query mix, p50/p95 by hit-count
  band: `SessionManager.search(q, 20)` against `MATCH … ORDER BY bm25 LIMIT 20`
  with `snippet()` (sqlite3) or `@@ … ORDER BY ts_rank LIMIT 20` with
  `ts_headline()` (psycopg);
- append a message to a chat, under an explicit parent, as the app does
  (`Session.append_message` of a `SessionManager` session: the chat's
  `updated_at` follows) against the message row and its index row in one
  transaction (sqlite3) or one statement (psycopg), nothing read;
- history root → leaf of a corpus chat (`Session.get_history`) against a
  recursive walk and the chat's overlays (`store_bench.raw_history`);
- list 50 chats (`SessionManager.list(limit=50)`) against its statement;
- per-branch block read at the leaf of a 1,000-message path with 200 writes
  (`branch_memory_bench.build`; `Session.load_context(at=leaf)`) against one
  statement walking the path and picking the newest write on it;
- start-up: full UI ready ÷ a bare Textual app's first frame, measured by
  `app_bench.measure_startup` (in tmux, beside a CPU-bound process).

Library and raw samples alternate, so a burst of load on the shared machine
falls on both alike; in the search, append, history and list rows each side goes
first for every other sample (the second can find the pages the first read in the
server's cache). Figures, not assertions: `make bench`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import branch_memory_bench  # noqa: E402
import search_bench  # noqa: E402
from pg_bench import drop_schema, interleaved, postgres_schema  # noqa: E402
from store_bench import pct, raw_history, raw_list  # noqa: E402

from store import SessionManager, Store  # noqa: E402
from store.message_search import index_rowid, scope_number  # noqa: E402

Figures = tuple[float, float, float, float]  # chatui p50, p95, raw p50, p95 (ms)
GOALS = {
    "global search": "≤ 1.5×",
    "append a message": "≤ 1.5×",
    "history root → leaf": "keep (≈ 1×)",
    "list 50 chats": "≤ 2×",
    "per-branch block read": "≤ 1 ms",
}


def figures(lib_ms: list[float], raw_ms: list[float]) -> Figures:
    return pct(lib_ms, 50), pct(lib_ms, 95), pct(raw_ms, 50), pct(raw_ms, 95)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# -- append -------------------------------------------------------------------------------


def raw_append(conn: Any, session_id: str, scope: int) -> Callable[[int], None]:
    """Append message `i` under the previous one, the minimal correct work: its row
    and its index row, atomically; nothing read first (the ids are fresh)."""
    parent: list[str | None] = [None]
    postgres = not isinstance(conn, sqlite3.Connection)
    columns = "id, session_id, parent_id, role, content, created_at"

    def append(i: int) -> None:
        mid = f"r{i}"
        text = f"hello number {i}"
        stamp = "2026-11-01T00:00:00.000000+00:00"
        content = json.dumps(
            {
                "id": mid,
                "role": "user",
                "created_at": stamp,
                "parts": [{"type": "text", "text": text}],
            }
        )
        values = (mid, session_id, parent[0], "user", content, stamp)
        if postgres:  # autocommit: one statement is one transaction, one round trip
            conn.execute(
                f"WITH m AS (INSERT INTO messages ({columns}) VALUES (%s, %s, %s, %s, %s, %s) "
                "RETURNING seq) INSERT INTO messages_fts (rowid, body) "
                "SELECT (%s::bigint << 32) + m.seq, %s FROM m",
                (*values, scope, text),
            )
        else:
            conn.execute("BEGIN IMMEDIATE")
            seq = conn.execute(
                f"INSERT INTO messages ({columns}) VALUES (?, ?, ?, ?, ?, ?) RETURNING seq", values
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO messages_fts (rowid, body) VALUES (?, ?)",
                (index_rowid(scope, seq), text),
            )
            conn.execute("COMMIT")
        parent[0] = mid

    return append


async def time_appends(store: Store, raw: Any, n: int) -> Figures:
    """Appends through a `SessionManager` session (awaited in a running loop, as the
    app awaits them) and raw ones into a chat of their own, alternating."""
    manager = SessionManager(store)
    mine = manager.create("bench: chatui appends")
    theirs = manager.create("bench: raw appends")
    with store.write():
        scope = scope_number(store, theirs.id, create=True)
    assert scope is not None
    session = manager.get_session(mine.id)
    parent: list[str | None] = [None]
    raw = raw_append(raw, theirs.id, scope)

    async def lib(i: int) -> None:
        message = {
            "id": f"a{i}",
            "role": "user",
            "parts": [{"type": "text", "text": f"hello number {i}"}],
        }
        parent[0] = (await session.append_message(message, parent[0])).id

    lib_ms: list[float] = []
    raw_ms: list[float] = []
    for i in range(n + 20):  # the first 20 of each warm up, not counted
        if i % 2:  # each side first for every other sample, as `interleaved`
            t = time.perf_counter()
            raw(i)
            raw_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        await lib(i)
        lib_ms.append((time.perf_counter() - t) * 1000)
        if not i % 2:
            t = time.perf_counter()
            raw(i)
            raw_ms.append((time.perf_counter() - t) * 1000)
    for info in (mine, theirs):  # the cached corpus stays as built
        manager.purge(info.id)
    return figures(lib_ms[20:], raw_ms[20:])


# -- per-branch block read ------------------------------------------------------------------

# The newest live write of the block on the path root → leaf (or on no message).
# SQLite and PostgreSQL both plan this join step as one index lookup.
BRANCH_READ = """
WITH RECURSIVE path(id, parent_id) AS (
    SELECT id, parent_id FROM messages WHERE session_id = {p} AND id = {p}
    UNION ALL
    SELECT up.id, up.parent_id FROM path, LATERAL (
        SELECT id, parent_id FROM messages WHERE session_id = {p} AND id = path.parent_id LIMIT 1
    ) up
)
SELECT content FROM block_writes
WHERE namespace = {p} AND label = {p} AND reverted_at IS NULL
  AND (message_id IS NULL OR message_id IN (SELECT id FROM path))
ORDER BY seq DESC LIMIT 1
"""
BRANCH_READ_SQLITE = """
WITH RECURSIVE path(id, parent_id) AS (
    SELECT id, parent_id FROM messages WHERE session_id = ?1 AND id = ?2
    UNION ALL
    SELECT m.id, m.parent_id FROM messages m JOIN path ON m.session_id = ?1 AND m.id = path.parent_id
)
SELECT content FROM block_writes
WHERE namespace = ?3 AND label = ?4 AND reverted_at IS NULL
  AND (message_id IS NULL OR message_id IN (SELECT id FROM path))
ORDER BY seq DESC LIMIT 1
"""


async def time_branch_read(store: Store, raw: Any, runs: int) -> tuple[Figures, float]:
    """(chatui against one raw statement at the leaf, and the median of chatui's read
    of the same block shared, without branches)."""
    sid, leaf = await branch_memory_bench.build(store, 1000, 200)
    namespace, label = store.query(
        "SELECT namespace, label FROM block_writes WHERE session_id = "
        + ("%s" if store.engine_name == "postgres" else "?"),
        (sid,),
    )[0]
    branchy = SessionManager(store).with_branch_memory().with_context("scratchpad")
    shared = SessionManager(store).with_context("scratchpad")
    session, plain = branchy.get_session(sid), shared.get_session(sid)
    if isinstance(raw, sqlite3.Connection):
        sql, params = BRANCH_READ_SQLITE, (sid, leaf, namespace, label)
    else:
        sql, params = BRANCH_READ.format(p="%s"), (sid, leaf, sid, namespace, label)

    def raw_read() -> list[Any]:
        return list(raw.execute(sql, params).fetchall())

    expected = (await session.load_context(at=leaf))[0].content
    assert raw_read() == [(expected,)], (raw_read(), expected)
    lib_ms, raw_ms, shared_ms = [], [], []
    for _ in range(runs):
        t = time.perf_counter()
        await session.load_context(at=leaf)
        lib_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        raw_read()
        raw_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        await plain.load_context(at=leaf)
        shared_ms.append((time.perf_counter() - t) * 1000)
    return figures(lib_ms, raw_ms), pct(shared_ms, 50)


# -- one engine -----------------------------------------------------------------------------


def measure(
    store: Store,
    raw: Any,
    corpus: dict,
    queries: list[str],
    counts: dict[str, int],
    memory_store: Store,
    memory_raw: Any,
    n: int,
) -> dict[str, Any]:
    """{row: Figures} for one engine, plus the search bands and the shared block read."""
    out: dict[str, Any] = {}
    raw_search = (
        search_bench.raw_sqlite(raw)
        if isinstance(raw, sqlite3.Connection)
        else search_bench.raw_postgres(raw)
    )
    lib, base = search_bench.time_queries(store, raw_search, queries)
    out["bands"] = search_bench.by_band(lib, base, queries, counts)
    out["append a message"] = run(time_appends(store, raw, n))

    rng = random.Random(11)
    leaves = [rng.choice(corpus["leaves"]) for _ in range(n)]
    manager = SessionManager(store)
    sessions = {sid: manager.get_session(sid) for sid, _ in leaves}
    out["history root → leaf"] = both(
        lambda s: sessions[s[0]].get_history(s[1]), raw_history(raw), leaves
    )
    out["list 50 chats"] = both(lambda _: manager.list(limit=50), raw_list(raw), list(range(n)))
    out["per-branch block read"], out["shared"] = run(time_branch_read(memory_store, memory_raw, n))
    return out


def both(lib: Callable[[Any], object], raw: Callable[[Any], object], samples: list) -> Figures:
    for sample in samples:  # each side warm
        lib(sample)
        raw(sample)
    return figures(*interleaved(lib, raw, samples))


def run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coroutine)


# -- the table ------------------------------------------------------------------------------


def print_table(results: dict[str, dict[str, Any]], startup: str) -> None:
    engines = list(results)
    head = f"{'operation':<34}"
    for engine in engines:
        head += f" | {engine + ' chatui p50/p95':>24} {'raw p50/p95':>16} {'ratio':>6}"
    print(head + " | goal")

    def line(name: str, cells: list[Figures], goal: str) -> None:
        text = f"{name:<34}"
        for l50, l95, r50, r95 in cells:
            text += f" | {l50:11.3f} /{l95:10.3f} {r50:7.3f} /{r95:7.3f} {l50 / r50:5.2f}×"
        print(text + f" | {goal}")

    bands = {engine: {b[0]: b for b in results[engine]["bands"]} for engine in engines}
    for label in next(iter(bands.values())):
        cells = [bands[e][label][2:] for e in engines]
        count = bands[engines[0]][label][1]
        name = f"global search, {label} hits ({count})"
        line(name, cells, GOALS["global search"] + (" (p95 ≤ 50 ms)" if label == "> 50k" else ""))
    for op in ("append a message", "history root → leaf", "list 50 chats"):
        line(op, [results[e][op] for e in engines], GOALS[op])
    line(
        "per-branch block read (1,000/200)",
        [results[e]["per-branch block read"] for e in engines],
        GOALS["per-branch block read"],
    )
    shared = ", ".join(f"{e} {results[e]['shared']:.3f} ms" for e in engines)
    print(f"{'':<34}   (the same block read shared, without branches: {shared})")
    print(startup)


def startup_row(runs: int) -> str:
    """The start-up row, measured by `app_bench` (its own bench owns how)."""
    if runs <= 0:
        return "start-up: not measured (--startup-runs 0)"
    import app_bench

    measure_startup = getattr(app_bench, "measure_startup", None)
    if measure_startup is None:
        return "start-up: not measured (bench/app_bench.py has no measure_startup)"
    with app_bench.cpu_bound_beside():
        before = load()
        chatui, bare = measure_startup(runs)
    return (
        f"{'start-up (beside a CPU-bound process)':<34} | full UI ready {chatui:.0f} ms ÷ "
        f"bare Textual first frame {bare:.0f} ms = {chatui / bare:.2f}× (median of {runs}; "
        f"load {before}) | ≤ 1.3×"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=1_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--engines", default="sqlite,postgres")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/chatui-bench-cache"))
    parser.add_argument("--startup-runs", type=int, default=9, help="0: leave start-up out")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    path, corpus = search_bench.corpus_file(args.cache, args.messages, args.sessions)
    queries = search_bench.query_mix(corpus["vocab"], random.Random(11))
    with Store(path) as store:
        counts = search_bench.hit_counts(store, queries)
    started = load()
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if "sqlite" in engines:
            memory_path = Path(tmp) / "branch-memory.db"
            with Store(path) as store, Store(memory_path) as memory:
                raw = sqlite3.connect(path, isolation_level=None)
                raw.execute("PRAGMA synchronous=normal")  # as the library's connections
                memory_raw = sqlite3.connect(memory_path, isolation_level=None)
                results["SQLite"] = measure(
                    store, raw, corpus, queries, counts, memory, memory_raw, args.samples
                )
                raw.close()
                memory_raw.close()
        if "postgres" in engines:
            import psycopg

            url = search_bench.postgres_copy(path, args.messages, args.sessions)
            schema, memory_url = postgres_schema()
            try:
                with (
                    Store(url) as store,
                    psycopg.connect(url, autocommit=True) as raw,
                    Store(memory_url) as memory,
                    psycopg.connect(memory_url, autocommit=True) as memory_raw,
                ):
                    results["PostgreSQL"] = measure(
                        store, raw, corpus, queries, counts, memory, memory_raw, args.samples
                    )
            finally:
                drop_schema(schema)
    ended = load()
    startup = startup_row(args.startup_runs)
    print(
        f"\nchatui against the raw engine doing the minimal work: {args.messages:,} messages "
        f"in {args.sessions:,} chats; {os.cpu_count()} cores, load (1/5/15 min) {started} at "
        f"the start, {ended} at the end; figures in ms, ratio of the p50s"
    )
    print_table(results, startup)


if __name__ == "__main__":
    main()
