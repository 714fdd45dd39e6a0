"""SQLite and PostgreSQL side by side: the library against the raw driver on each.

For each size (`--sizes 100000,1000000`; messages in 1,000 branching sessions)
it builds the corpus once in a SQLite file (`store_bench.build_corpus`), copies
it into a fresh PostgreSQL schema with `chatui db copy`'s code
(`store.copy_database`, timed and printed), then times on both engines:

- append (message + search row in one transaction, explicit parent), with the
  default durability and with `durability="relaxed"` (no commit waits for the
  disk; the raw side sets `synchronous_commit = off` too),
- history of a 130-message path (`get_history` of a leaf),
- session search (p95 is the figure: it must stay flat as the history grows),
- global search,
- list (50 chats).

The raw side runs the statements the library ran — recorded from the
library's own call for the same sample, then replayed on a plain `sqlite3` /
`psycopg` connection (fetching every row and decoding the JSON columns, the
work the library cannot skip either). Append is hand-written per engine, as
its ids must be fresh. Library and raw samples alternate, so a burst of load on
the shared machine falls on both alike. Figures, not assertions: run it on demand (`make bench`).
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
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from store_bench import build_corpus, pct, timed  # noqa: E402

from store import Session, SessionManager, Store, copy_database  # noqa: E402
from store.engines.postgres import APPEND_IN_ONE  # noqa: E402
from store.message_search import index_rowid  # noqa: E402

SERVER = os.environ.get("CHATUI_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
TARGETS = {
    "append": "≤ 1 ms",
    "append, relaxed": "≤ 1 ms",
    "history (130)": "≤ 2 ms",
    "session search": "p95 ≤ 5 ms, flat",
    "global search": "≤ 10 ms at 1M",
    "list (50)": "≤ 1 ms",
}
Statement = tuple[str, Any]


# -- recording what the library runs ---------------------------------------------------


class Recorder:
    """Records every statement a store sends to its driver while `on`."""

    def __init__(self, store: Store) -> None:
        self.on = False
        self.statements: list[Statement] = []
        db = store.db
        real_sql = db.execute_sql

        def execute_sql(sql: str, params: Any = None, *args: Any, **kwargs: Any) -> Any:
            if self.on:
                self.statements.append((sql, params))
            return real_sql(sql, params, *args, **kwargs)

        db.execute_sql = execute_sql  # type: ignore[method-assign]
        if store.engine_name == "sqlite":  # its raw statements (FTS5) bypass peewee
            engine = store.engine
            real_raw = engine.execute

            def execute(conn: Any, sql: str, params: Any) -> Any:
                if self.on:
                    self.statements.append((sql, params))
                return real_raw(conn, sql, params)

            engine.execute = execute  # type: ignore[method-assign]

    def record(self, fn: Callable[[Any], object], sample: Any) -> list[Statement]:
        self.statements, self.on = [], True
        try:
            fn(sample)
        finally:
            self.on = False
        return self.statements


def replay(conn: Any, statements: list[Statement]) -> None:
    """Run recorded statements on a raw connection; fetch and decode like the library."""
    for sql, params in statements:
        cur = conn.execute(sql, params) if params else conn.execute(sql)
        if cur.description:
            for row in cur.fetchall():
                for cell in row:
                    if isinstance(cell, str) and cell.startswith('{"'):
                        json.loads(cell)


# -- raw appends (fresh ids each time, so not replayed) ----------------------------------
# The statements `StoreSessionProvider.append_message` sends with an explicit parent.
# SQLite: the message and its parent in one read, the row (returning its seq and the
# chat's search number), the search row, in one write transaction. PostgreSQL: one
# statement doing all of it (`APPEND_IN_ONE`), or, for a chat's first message, the
# SQLite way.

_READ = "SELECT seq, id, parent_id, role, content, created_at FROM messages "
_INSERT = (
    "INSERT INTO messages (id, session_id, parent_id, role, content, created_at) "
    "VALUES ({p}, {p}, {p}, 'user', {p}, '2026-11-01T00:00:00+00:00') "
    "RETURNING seq, (SELECT n FROM search_scopes WHERE session_id = {p})"
)


def raw_append_sqlite(conn: sqlite3.Connection, sid: str) -> Callable[[object], None]:
    parent: list[str | None] = [None]
    ids = iter(range(10**9))

    def append(_: object) -> None:
        mid = f"r{next(ids)}"
        content = json.dumps({"id": mid, "role": "user", "parts": [{"type": "text", "text": mid}]})
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            _READ + "WHERE session_id = ? AND id IN (?, ?)", (sid, mid, parent[0])
        ).fetchall()
        seq, scope = conn.execute(
            _INSERT.format(p="?"), (mid, sid, parent[0], content, sid)
        ).fetchone()
        if scope is None:
            scope = conn.execute(
                "INSERT INTO search_scopes (session_id) VALUES (?) RETURNING n", (sid,)
            ).fetchone()[0]
        conn.execute(
            "INSERT INTO messages_fts (rowid, body) VALUES (?, ?)", (index_rowid(scope, seq), mid)
        )
        conn.execute("COMMIT")
        parent[0] = mid

    return append


def raw_append_postgres(conn: Any, sid: str) -> Callable[[object], None]:
    parent: list[str | None] = [None]
    ids = iter(range(10**9))

    def append(_: object) -> None:
        mid = f"r{next(ids)}"
        content = json.dumps({"id": mid, "role": "user", "parts": [{"type": "text", "text": mid}]})
        row = {
            "id": mid,
            "session_id": sid,
            "parent_id": parent[0],
            "role": "user",
            "content": content,
            "created_at": "2026-11-01T00:00:00+00:00",
            "from_user_id": None,
            "from_agent_id": None,
            "delivered_to_session_id": None,
            "token_usage": None,
            "body": mid,
            "touched_at": None,
        }
        if conn.execute(APPEND_IN_ONE, row).fetchone() is not None:
            parent[0] = mid
            return
        with conn.transaction():  # the chat's first message numbers the chat
            conn.execute(
                _READ + "WHERE session_id = %s AND id IN (%s, %s)", (sid, mid, parent[0])
            ).fetchall()
            seq, scope = conn.execute(
                _INSERT.format(p="%s"), (mid, sid, parent[0], content, sid)
            ).fetchone()
            if scope is None:
                scope = conn.execute(
                    "INSERT INTO search_scopes (session_id) VALUES (%s) RETURNING n", (sid,)
                ).fetchone()[0]
            conn.execute(
                "INSERT INTO messages_fts (rowid, body) VALUES (%s, %s)",
                (index_rowid(scope, seq), mid),
            )
        parent[0] = mid

    return append


def time_appends(store: Store, raw: Any, session_id: str, n: int) -> tuple[float, ...]:
    """(lib p50, lib p95, raw p50, raw p95) of appends under an explicit parent."""
    loop = asyncio.new_event_loop()
    session = Session(store).for_session(session_id)
    parent: list[str | None] = [None]
    lib_ids = iter(range(10**9))

    def lib_append(_: object) -> None:
        i = next(lib_ids)
        message = {"id": f"a{i}", "role": "user", "parts": [{"type": "text", "text": f"a{i}"}]}
        parent[0] = loop.run_until_complete(session.append_message(message, parent[0])).id

    raw_sid = f"{session_id}-raw"
    raw_append = (
        raw_append_postgres(raw, raw_sid)
        if store.engine_name == "postgres"
        else raw_append_sqlite(raw, raw_sid)
    )
    interleaved(lib_append, raw_append, list(range(20)))
    lib_ms, raw_ms = interleaved(lib_append, raw_append, list(range(n * 2)))
    loop.close()
    return (pct(lib_ms, 50), pct(lib_ms, 95), pct(raw_ms, 50), pct(raw_ms, 95))


def interleaved(
    lib: Callable[[Any], object], raw: Callable[[Any], object], samples: list
) -> tuple[list[float], list[float]]:
    """Milliseconds of `lib(s)` and of `raw(s)` for each sample, one after the other:
    a burst of load on the shared machine then falls on both sides alike. Each
    goes first for every other sample (the second may find the first's pages cached)."""
    lib_ms: list[float] = []
    raw_ms: list[float] = []
    for i, sample in enumerate(samples):
        if i % 2 == 0:
            lib_ms += timed(lib, [sample])
            raw_ms += timed(raw, [sample])
        else:
            raw_ms += timed(raw, [sample])
            lib_ms += timed(lib, [sample])
    return lib_ms, raw_ms


# -- one engine ---------------------------------------------------------------------------


def measure(store: Store, raw: Any, corpus: dict, n: int, seed: int = 11) -> dict[str, tuple]:
    """{operation: (lib p50, lib p95, raw p50, raw p95)} in milliseconds."""
    rng = random.Random(seed)
    manager = SessionManager(store)
    recorder = Recorder(store)
    loop = asyncio.new_event_loop()
    out: dict[str, tuple] = {}

    def both(name: str, lib: Callable[[Any], object], samples: list) -> None:
        scripts = [recorder.record(lib, s) for s in samples]  # also warms the library
        for script in scripts:  # and the raw side
            replay(raw, script)
        lib_ms, raw_ms = interleaved(
            lambda i: lib(samples[i]),
            lambda i: replay(raw, scripts[i]),
            list(range(len(samples))),
        )
        out[name] = (pct(lib_ms, 50), pct(lib_ms, 95), pct(raw_ms, 50), pct(raw_ms, 95))

    out["append"] = time_appends(store, raw, "bench-append", n)

    # A 130-message path (a chat with a regenerated reply every tenth message).
    path_chat = Session(store).for_session("bench-path")
    leaf: str | None = None
    for i in range(144):  # 14 of them regenerated replies: 130 on the path
        parent_of = leaf if i % 10 or i == 0 else path_chat.get_history(leaf)[-2].id
        message = {"id": f"p{i}", "role": "user", "parts": [{"type": "text", "text": f"p{i}"}]}
        leaf = loop.run_until_complete(path_chat.append_message(message, parent_of)).id
    assert leaf is not None and len(path_chat.get_history(leaf)) == 130
    both("history (130)", lambda s: path_chat.get_history(s), [leaf] * n)
    pairs = [(rng.choice(corpus["leaves"])[0], q) for q in corpus["queries"][:n]]
    both("session search", lambda s: manager.search(s[1], 20, session_id=s[0]), pairs)
    both("global search", lambda q: manager.search(q, 20), corpus["queries"][:n])
    both("list (50)", lambda _: manager.list(limit=50), list(range(n)))
    loop.close()
    return out


def postgres_schema() -> tuple[str, str]:
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(SERVER, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in SERVER else "?"
    return schema, f"{SERVER}{sep}options=-csearch_path%3D{schema}"


def settle(url: str) -> None:
    """Let the server finish what a bulk copy leaves it to do before anything is timed.

    At 1M the copy leaves ~1 GB of dirty pages and tables autovacuum wants to
    visit; timed straight after it, a durable append waited 4 ms on WAL flushes
    competing with the checkpoint (the relaxed one, which waits for none, 0.7 ms).
    VACUUM sets the visibility map a long-lived database has; CHECKPOINT writes
    the dirty pages out (needs superuser or pg_checkpoint: skipped otherwise).
    """
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
        ]
        for table in tables:
            conn.execute(f'VACUUM (ANALYZE) "{table}"')
        try:
            conn.execute("CHECKPOINT")
        except psycopg.Error as exc:
            print(f"  (no CHECKPOINT: {exc})")


def drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(SERVER, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


def run_size(messages: int, sessions: int, n: int, folder: Path) -> dict[str, dict]:
    import psycopg

    path = folder / f"bench-{messages}.db"
    path.unlink(missing_ok=True)
    t0 = time.perf_counter()
    corpus = build_corpus(path, messages, sessions)
    print(f"\n{messages:,} messages in {sessions:,} sessions")
    print(f"  SQLite corpus built in {time.perf_counter() - t0:.1f} s")
    results: dict[str, dict] = {}
    schema, url = postgres_schema()
    try:
        t0 = time.perf_counter()
        with Store(path) as src, Store(url) as dst:  # before either side is measured
            copy_database(src, dst)  # it ANALYZEs what it wrote
        print(f"  PostgreSQL copy (store.copy_database) in {time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        settle(url)
        print(
            f"  PostgreSQL VACUUM and CHECKPOINT after the copy in {time.perf_counter() - t0:.1f} s"
        )
        with Store(path) as store:
            raw = sqlite3.connect(path, isolation_level=None)
            raw.execute("PRAGMA busy_timeout=10000")
            raw.execute("PRAGMA synchronous=normal")  # as the library's connections
            results["sqlite"] = measure(store, raw, corpus, n)
            raw.close()
        with Store(url) as store, psycopg.connect(url, autocommit=True) as raw:
            results["postgres"] = measure(store, raw, corpus, n)
        # durability="relaxed": no commit waits for the disk; the raw side likewise.
        with Store(path, durability="relaxed") as store:
            raw = sqlite3.connect(path, isolation_level=None)
            raw.execute("PRAGMA synchronous=normal")
            results["sqlite"]["append, relaxed"] = time_appends(store, raw, "bench-relaxed", n)
            raw.close()
        with (
            Store(url, durability="relaxed") as store,
            psycopg.connect(url, autocommit=True) as raw,
        ):
            raw.execute("SET synchronous_commit = off")
            results["postgres"]["append, relaxed"] = time_appends(store, raw, "bench-relaxed", n)
    finally:
        drop_schema(schema)
        path.unlink(missing_ok=True)
    print_table(results)
    return results


def print_table(results: dict[str, dict]) -> None:
    head = f"  {'operation':<15}"
    for engine in results:
        head += f" | {engine + ' lib p50/p95':>19} {'raw p50/p95':>15} {'ratio':>6}"
    print(head + " | target (PostgreSQL)")
    for op in TARGETS:
        line = f"  {op:<15}"
        for figures in results.values():
            l50, l95, r50, r95 = figures[op]
            ratio = l50 / r50 if r50 else float("nan")
            line += f" | {l50:8.3f} /{l95:8.3f} {r50:6.3f} /{r95:7.3f} {ratio:5.2f}x"
        print(line + f" | {TARGETS[op]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        default="20000,100000",
        help="comma-separated corpus sizes in messages (the issue's: 100000,1000000)",
    )
    parser.add_argument("--sessions", type=int, default=1_000)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--dir", type=Path, default=None, help="where to build the corpora")
    args = parser.parse_args()
    folder = Path(args.dir or tempfile.mkdtemp(prefix="chatui-pgbench-"))
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    print(f"PostgreSQL: {SERVER} (set CHATUI_BENCH_POSTGRES_URL to change)")
    print("figures in ms; ratio = library p50 / raw driver p50")
    by_size = {size: run_size(size, args.sessions, args.samples, folder) for size in sizes}
    if len(sizes) > 1:
        print("\nsession search p95 by size (flat is the goal):")
        for engine in ("sqlite", "postgres"):
            cells = ", ".join(
                f"{size:,}: {by_size[size][engine]['session search'][1]:.3f}" for size in sizes
            )
            print(f"  {engine:<9} {cells}")


if __name__ == "__main__":
    main()
