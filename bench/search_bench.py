"""Global search on both engines against the raw engine doing the minimal work, by
how many messages a query matches (issue 23).

For each size (`--sizes 100000,1000000`; messages in 1,000 branching sessions)
the corpus is built once (`store_bench.build_corpus`) and cached under
`--cache` (default /tmp/chatui-bench-cache), with its PostgreSQL copy in a
schema of the bench server (`CHATUI_BENCH_POSTGRES_URL`) kept for the next run.
The query mix: 150 mid-frequency words (what people search for), 20 of the
most common words, 10 two-letter prefixes (`w1*`: what search-as-you-type
meets first), 10 pairs and 10 ORs, and the single most common word. Each
query's matches are counted, and the figures are given per hit-count band.

- library: `SessionManager.search(q, limit=20)` (live chats, snippets cut);
- raw SQLite: `MATCH … ORDER BY bm25 LIMIT 20` joined to `messages` with
  `snippet()` and the JSON decoded; raw PostgreSQL (psycopg): `@@ … ORDER BY
  ts_rank DESC LIMIT 20` joined to `messages` with `ts_headline()` on the 20.

Library and raw samples alternate, so load falls on both alike; the load
average is printed with each table. It also times a pasted 5,000-word query
(issue 25: 2-12.5 s before terms were capped at 64). Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from store_bench import build_corpus, pct  # noqa: E402

from store import SessionManager, Store, copy_database  # noqa: E402
from store.search import fts5_expression, parse_query, tsquery_expression  # noqa: E402

SERVER = os.environ.get("CHATUI_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
BANDS = [(0, 1_000, "< 1k"), (1_000, 10_000, "1k-10k"), (10_000, 50_000, "10k-50k")]
BANDS.append((50_000, 10**12, "> 50k"))
CORPUS_VERSION = "v11"  # the index format (m011): a cached corpus of another is rebuilt


def query_mix(vocab: list[str], rng: random.Random) -> list[str]:
    mid = [vocab[rng.randrange(20, 400)] for _ in range(150)]
    common = [vocab[i] for i in range(20)]
    prefixes = [f"w{d}*" for d in range(1, 10)] + ["w1*"]
    pairs = [f"{vocab[rng.randrange(0, 20)]} {vocab[rng.randrange(20, 400)]}" for _ in range(10)]
    ors = [f"{vocab[rng.randrange(20, 400)]} OR {vocab[rng.randrange(0, 400)]}" for _ in range(10)]
    return mid + common + prefixes + pairs + ors + [vocab[0]]


def corpus_file(cache: Path, messages: int, sessions: int) -> tuple[Path, dict]:
    path = cache / f"search-{CORPUS_VERSION}-{messages}-{sessions}.db"
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        return path, json.loads(meta.read_text())
    path.unlink(missing_ok=True)
    started = time.perf_counter()
    corpus = build_corpus(path, messages, sessions)
    print(f"corpus: {messages:,} messages built in {time.perf_counter() - started:.0f}s")
    meta.write_text(json.dumps(corpus))
    return path, corpus


def postgres_copy(path: Path, messages: int, sessions: int) -> str:
    import psycopg

    schema = f"bench_search_{CORPUS_VERSION}_{messages}_{sessions}"
    sep = "&" if "?" in SERVER else "?"
    url = f"{SERVER}{sep}options=-csearch_path%3D{schema}"
    with psycopg.connect(SERVER, autocommit=True) as admin:
        done = admin.execute(
            "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = 'bench_done'", (schema,)
        ).fetchone()
        if done:
            return url
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.execute(f'CREATE SCHEMA "{schema}"')
    started = time.perf_counter()
    with Store(path) as source, Store(url) as target:
        copy_database(source, target)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE messages_fts")
        conn.execute("VACUUM ANALYZE messages")
        conn.execute("CREATE TABLE bench_done (at text)")
    print(f"PostgreSQL copy: {time.perf_counter() - started:.0f}s (schema {schema}, kept)")
    return url


def raw_sqlite(conn: sqlite3.Connection):  # noqa: ANN201 - a bench closure
    sql = (
        "SELECT m.id, m.role, m.content, m.created_at, m.session_id, "
        "snippet(messages_fts, 0, '[', ']', '…', 12), bm25(messages_fts) AS score "
        "FROM messages_fts f JOIN messages m ON m.seq = (f.rowid & 4294967295) "
        "WHERE messages_fts MATCH ? ORDER BY score LIMIT 20"
    )

    def search(query: str) -> None:
        parsed = parse_query(query)
        assert parsed is not None
        rows = conn.execute(sql, (f"body : ({fts5_expression(parsed)})",)).fetchall()
        [json.loads(r[2]) for r in rows]

    return search


def raw_postgres(conn: Any):  # noqa: ANN201
    sql = (
        "SELECT m.id, m.role, m.content, m.created_at, m.session_id, "
        "ts_headline('simple', t.body, t.q, 'StartSel=[, StopSel=]'), t.score FROM ("
        " SELECT f.rowid, f.body, q.q, ts_rank(f.tsv, q.q) AS score"
        " FROM (SELECT %s::tsquery AS q) q JOIN messages_fts f ON f.tsv @@ q.q"
        " ORDER BY score DESC LIMIT 20"
        ") t JOIN messages m ON m.seq = (t.rowid & 4294967295) ORDER BY t.score DESC"
    )

    def search(query: str) -> None:
        parsed = parse_query(query)
        assert parsed is not None
        rows = conn.execute(sql, (tsquery_expression(parsed),)).fetchall()
        [json.loads(r[2]) for r in rows]

    return search


def time_queries(
    store: Store, raw: Any, queries: list[str]
) -> tuple[dict[str, float], dict[str, float]]:
    """Milliseconds of each query through the library (`SessionManager.search(q, 20)`)
    and through `raw`, warm, library and raw alternating, each first for every other
    query: the second reads pages the first just brought into the server's cache
    (at 1M, where the corpus outgrows PostgreSQL's 128 MB shared_buffers, a rare
    word cost whichever side went first ~2 ms more at load 7)."""
    manager = SessionManager(store)

    def lib_search(q: str) -> None:
        manager.search(q, 20, include_deleted=False)

    for q in queries:  # warm both
        lib_search(q)
        raw(q)
    lib: dict[str, float] = {}
    base: dict[str, float] = {}
    for i, q in enumerate(queries):
        sides = [(lib_search, lib), (raw, base)]
        for search, out in sides if i % 2 == 0 else sides[::-1]:
            t = time.perf_counter()
            search(q)
            out[q] = (time.perf_counter() - t) * 1000
    return lib, base


def by_band(
    lib: dict[str, float], base: dict[str, float], queries: list[str], counts: dict[str, int]
) -> list[tuple[str, int, float, float, float, float]]:
    """(band, queries, library p50, p95, raw p50, p95) per hit-count band, then "all"."""
    out = []
    for low, high, label in [*BANDS, (0, 10**12, "all")]:
        picked = [q for q in queries if low <= counts[q] < high]
        if picked:
            ours = [lib[q] for q in picked]
            theirs = [base[q] for q in picked]
            out.append(
                (label, len(picked), pct(ours, 50), pct(ours, 95), pct(theirs, 50), pct(theirs, 95))
            )
    return out


def measure(name: str, store: Store, raw: Any, queries: list[str], counts: dict) -> None:
    lib, base = time_queries(store, raw, queries)
    load = os.getloadavg()[0]
    print(f"\n{name}: global search, 20 best, load {load:.1f}")
    print(
        f"  {'hits':<8} {'queries':>7} {'chatui p50':>10} {'p95':>8} {'raw p50':>9} {'p95':>8} "
        f"{'ratio p50':>9} {'ratio p95':>9}"
    )
    for label, n, o50, o95, t50, t95 in by_band(lib, base, queries, counts):
        print(
            f"  {label:<8} {n:>7} {o50:10.2f} {o95:8.2f} {t50:9.2f} {t95:8.2f} "
            f"{o50 / t50:8.2f}× {o95 / t95:8.2f}×"
        )
    top = queries[-1]
    print(
        f"  most common word ({counts[top]:,} hits): chatui {lib[top]:.2f} ms, "
        f"raw {base[top]:.2f} ms; two-letter prefixes: chatui p95 "
        f"{pct([lib[q] for q in queries if q.endswith('*')], 95):.2f} ms"
    )
    rng = random.Random(5)
    vocab = sorted({w for q in queries for w in q.replace("*", "").split() if w != "OR"})
    pasted = " ".join(rng.choice(vocab) for _ in range(5000))
    t = time.perf_counter()
    SessionManager(store).search(pasted, 20, include_deleted=False)
    print(f"  a pasted 5,000-word query: {(time.perf_counter() - t) * 1000:.1f} ms (64 searched)")


def hit_counts(store: Store, queries: list[str]) -> dict[str, int]:
    """How many messages each query matches (the same on both engines: the parity test)."""
    counts = {}
    for q in set(queries):
        parsed = parse_query(q)
        assert parsed is not None
        counts[q] = len(store.engine.match_rowids(parsed))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000", help="comma-separated message counts")
    parser.add_argument("--sessions", type=int, default=1_000)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/chatui-bench-cache"))
    parser.add_argument("--engines", default="sqlite,postgres", help="which to measure")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    for size in (int(s) for s in args.sizes.split(",")):
        path, corpus = corpus_file(args.cache, size, args.sessions)
        queries = query_mix(corpus["vocab"], random.Random(11))
        with Store(path) as store:
            counts = hit_counts(store, queries)
            if "sqlite" in args.engines:
                conn = sqlite3.connect(path)
                measure(f"SQLite, {size:,} messages", store, raw_sqlite(conn), queries, counts)
                conn.close()
        if "postgres" not in args.engines:
            continue
        import psycopg

        url = postgres_copy(path, size, args.sessions)
        with Store(url) as store, psycopg.connect(url, autocommit=True) as conn:
            measure(f"PostgreSQL, {size:,} messages", store, raw_postgres(conn), queries, counts)


if __name__ == "__main__":
    main()
