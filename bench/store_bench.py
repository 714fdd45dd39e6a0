"""Benchmark of the store library against plain sqlite3 on the same file.

Builds a corpus (100k messages in 1,000 branching sessions by default; `--messages
1000000` for 1M), then times append, get_history, session search, global search
and listing through the library and through the plain `sqlite3` module running
the same statements, and prints p50/p95 and the ratio. Both sides run each
operation over the same samples once before the timed pass, so both are
measured warm. Figures, not assertions: run it on demand (`make bench`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from store import Session, SessionManager, Store  # noqa: E402
from store.message_search import index_rowid, scope_range  # noqa: E402
from store.search import match_expression, scoped_expression  # noqa: E402
from store.text_prep import index_tokens  # noqa: E402

VOCAB_SIZE = 5_000


def words(rng: random.Random, vocab: list[str], n: int) -> str:
    # Zipf-ish: common words are common, rare words are rare, as in real chats.
    return " ".join(vocab[min(int(rng.paretovariate(1.1)) - 1, VOCAB_SIZE - 1)] for _ in range(n))


def build_corpus(path: Path, n_messages: int, n_sessions: int, seed: int = 7) -> dict:
    """Populate a fresh store file quickly with raw inserts (not what is measured)."""
    rng = random.Random(seed)
    vocab = [f"w{i}x{rng.randrange(10**6)}" for i in range(VOCAB_SIZE)]
    Store(path).close()  # create and migrate through the library
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=wal")
    con.execute("PRAGMA synchronous=off")
    per_session = n_messages // n_sessions
    leaves: list[tuple[str, str]] = []
    seq = 0
    stamp = "2026-10-01T00:00:00.000000+00:00"
    con.execute("BEGIN")
    for s in range(n_sessions):
        sid = f"session-{s:05d}"
        scope = con.execute("INSERT INTO search_scopes (session_id) VALUES (?)", (sid,)).lastrowid
        con.execute(
            "INSERT INTO sessions (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)",
            (sid, f"Chat {s}", stamp, f"2026-10-{1 + s % 28:02d}T00:00:{s % 60:02d}.{s:06d}+00:00"),
        )
        ids: list[str] = []
        for i in range(per_session):
            mid = f"m{i}"
            # mostly a chain, with a regenerate (sibling) every ~10 messages
            parent = None if i == 0 else (ids[-2] if i % 10 == 0 and i > 1 else ids[-1])
            role = "user" if i % 2 == 0 else "assistant"
            text = words(rng, vocab, rng.randint(8, 60))
            content = json.dumps(
                {
                    "id": mid,
                    "role": role,
                    "created_at": stamp,
                    "parts": [{"type": "text", "text": text}],
                }
            )
            seq += 1
            con.execute(
                "INSERT INTO messages (seq, id, session_id, parent_id, role, content, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (seq, mid, sid, parent, role, content, stamp),
            )
            con.execute(
                "INSERT INTO messages_fts (rowid, body) VALUES (?, ?)",
                (index_rowid(scope, seq), index_tokens(text)),
            )
            ids.append(mid)
        leaves.append((sid, ids[-1]))
        if s % 100 == 99:
            con.execute("COMMIT")
            con.execute("BEGIN")
    con.execute("COMMIT")
    con.execute("PRAGMA optimize")
    con.close()
    # query words: a mix of mid-frequency words (realistic search terms)
    queries = [vocab[rng.randrange(20, 400)] for _ in range(200)]
    return {"leaves": leaves, "queries": queries, "vocab": vocab}


def print_size(path: Path) -> None:
    """The store's file against a raw FTS5 store of the same messages: the JSON rows
    and a plain `fts5(body)` index of their text, nothing else (target ≤ 1.3×)."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("VACUUM")
    con.close()
    raw_path = path.with_suffix(".raw-fts5.db")
    raw_path.unlink(missing_ok=True)
    raw = sqlite3.connect(raw_path)
    raw.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, content TEXT)")
    raw.execute("CREATE VIRTUAL TABLE messages_fts USING fts5(body)")
    raw.execute("ATTACH DATABASE ? AS store", (str(path),))
    raw.execute("INSERT INTO messages SELECT seq, content FROM store.messages")
    raw.execute(
        "INSERT INTO messages_fts (rowid, body) "
        "SELECT seq, json_extract(content, '$.parts[0].text') FROM store.messages"
    )
    raw.commit()
    raw.execute("DETACH DATABASE store")
    raw.execute("VACUUM")
    raw.close()
    ours, theirs = path.stat().st_size, raw_path.stat().st_size
    print(
        f"database size: {ours / 2**20:.1f} MiB against {theirs / 2**20:.1f} MiB for a raw "
        f"FTS5 store of the same messages: {ours / theirs:.2f}× (target ≤ 1.3×)"
    )
    raw_path.unlink()


def timed(fn: Callable[[object], object], samples: list) -> list[float]:
    """Milliseconds of `fn(sample)` for each sample."""
    out = []
    for sample in samples:
        t = time.perf_counter()
        fn(sample)
        out.append((time.perf_counter() - t) * 1000)
    return out


def pct(samples: list[float], p: float) -> float:
    return statistics.quantiles(samples, n=100)[int(p) - 1] if len(samples) > 1 else samples[0]


def compare(
    name: str,
    lib: Callable[[object], object],
    raw: Callable[[object], object],
    samples: list,
    target: str,
    warm: bool = True,
) -> None:
    """Time the library and plain sqlite3 over the same samples and print one row.

    Both sides first run over the samples once untimed, so each is measured
    with the pages it needs in cache; otherwise whichever ran first would pay
    the cold reads for both.
    """
    if warm:
        for fn in (lib, raw):
            for sample in samples:
                fn(sample)
    lib_ms, raw_ms = timed(lib, samples), timed(raw, samples)
    l50, l95, r50 = pct(lib_ms, 50), pct(lib_ms, 95), pct(raw_ms, 50)
    print(
        f"{name:<16} {l50:8.3f} {l95:8.3f} {r50:10.3f} {pct(raw_ms, 95):10.3f} "
        f"{l50 / r50 if r50 else float('nan'):7.2f}x   {target}"
    )


# The recursive walk the library ran before it read histories in windows of rows
# (`storage.walk_path`), and the overlays a history applies: the minimal work of a
# history at raw driver speed.
HISTORY_SQL = """
    WITH RECURSIVE path(seq, parent_id, depth) AS (
        SELECT seq, parent_id, 0 FROM messages WHERE session_id = ?1 AND id = ?2
        UNION ALL
        SELECT m.seq, m.parent_id, path.depth + 1 FROM messages m
        JOIN path ON m.session_id = ?1 AND m.id = path.parent_id)
    SELECT m.seq, m.id, m.parent_id, m.role, m.content, m.created_at
    FROM path JOIN messages m ON m.seq = path.seq ORDER BY path.depth DESC"""
# PostgreSQL's planner hash-joins the whole chat at each step of that join (see
# `storage.ancestors`); a person writing it by hand for psycopg takes the lookup.
HISTORY_SQL_PG = """
    WITH RECURSIVE path(seq, parent_id, depth) AS (
        SELECT seq, parent_id, 0 FROM messages WHERE session_id = %(sid)s AND id = %(leaf)s
        UNION ALL
        SELECT up.seq, up.parent_id, path.depth + 1 FROM path, LATERAL (
            SELECT seq, parent_id FROM messages
            WHERE session_id = %(sid)s AND id = path.parent_id LIMIT 1) up)
    SELECT m.seq, m.id, m.parent_id, m.role, m.content, m.created_at
    FROM path JOIN messages m ON m.seq = path.seq ORDER BY path.depth DESC"""


def raw_history(conn: Any) -> Callable[[tuple[str, str]], None]:
    """The path root → leaf and the chat's overlays on a plain connection (sqlite3 or
    psycopg), the JSON decoded."""
    postgres = not isinstance(conn, sqlite3.Connection)
    mark = "%s" if postgres else "?"

    def history(sample: tuple[str, str]) -> None:
        sid, leaf = sample
        if postgres:
            rows = conn.execute(HISTORY_SQL_PG, {"sid": sid, "leaf": leaf}).fetchall()
        else:
            rows = conn.execute(HISTORY_SQL, (sid, leaf)).fetchall()
        conn.execute(f"SELECT * FROM compactions WHERE session_id = {mark}", (sid,)).fetchall()
        [json.loads(r[4]) for r in rows]

    return history


# The statement `SessionManager.list()` runs: live sessions outside archived
# projects, every column a SessionInfo carries.
LIST_SQL = (
    "SELECT id, name, parent_session_id, model, source, agent_id, project_id, status, "
    "metadata, input_tokens, output_tokens, cost, created_at, updated_at, deleted_at, "
    "status_detail FROM sessions WHERE deleted_at IS NULL AND (project_id IS NULL OR "
    "project_id NOT IN (SELECT id FROM projects WHERE archived_at IS NOT NULL)) "
    "ORDER BY updated_at DESC, rowid DESC LIMIT {mark} OFFSET {mark}"
)


def raw_list(conn: Any) -> Callable[[object], None]:
    """The first 50 chats of the list on a plain connection (sqlite3 or psycopg)."""
    sql = LIST_SQL.format(mark="?" if isinstance(conn, sqlite3.Connection) else "%s")

    def listing(_: object) -> None:
        conn.execute(sql, (50, 0)).fetchall()

    return listing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=1_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=None, help="where to build the corpus")
    args = parser.parse_args()
    folder = Path(args.dir or tempfile.mkdtemp(prefix="chatui-bench-"))
    path = folder / f"bench-{args.messages}.db"
    if path.exists():
        path.unlink()
    t0 = time.perf_counter()
    corpus = build_corpus(path, args.messages, args.sessions)
    print(
        f"corpus: {args.messages:,} messages in {args.sessions:,} sessions, built in "
        f"{time.perf_counter() - t0:.1f}s at {path}"
    )
    print_size(path)
    rng = random.Random(11)
    n = args.samples

    store = Store(path)
    manager = SessionManager(store)
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("PRAGMA synchronous=normal")
    raw.execute("PRAGMA busy_timeout=10000")

    print(
        f"\n{'operation':<16} {'lib p50':>8} {'lib p95':>8} {'sqlite3 p50':>10} "
        f"{'sqlite3 p95':>10} {'ratio':>8}   target (p50)"
    )

    # append: message + FTS row in one transaction, under an explicit parent
    session = Session(store).for_session("bench-append")
    loop = asyncio.new_event_loop()
    parent: list[str | None] = [None]
    lib_ids = iter(range(10**9))

    def lib_append(_: object) -> None:
        i = next(lib_ids)
        m = loop.run_until_complete(
            session.append_message(
                {
                    "id": f"a{i}",
                    "role": "user",
                    "parts": [{"type": "text", "text": f"hello number {i}"}],
                },
                parent[0],
            )
        )
        parent[0] = m.id

    raw_parent: list[str | None] = [None]
    raw_ids = iter(range(10**9))

    def raw_append(_: object) -> None:
        i = next(raw_ids)
        mid = f"r{i}"
        text = f"hello number {i}"
        content = json.dumps(
            {
                "id": mid,
                "role": "user",
                "parts": [{"type": "text", "text": text}],
                "created_at": "2026-11-01T00:00:00+00:00",
            }
        )
        raw.execute("BEGIN IMMEDIATE")
        raw.execute("SELECT 1 FROM messages WHERE session_id = ? AND id = ?", ("bench-raw", mid))
        if raw_parent[0]:
            raw.execute(
                "SELECT 1 FROM messages WHERE session_id = ? AND id = ?",
                ("bench-raw", raw_parent[0]),
            )
        cur = raw.execute(
            "INSERT INTO messages (id, session_id, parent_id, role, content, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (mid, "bench-raw", raw_parent[0], "user", content, "2026-11-01T00:00:00+00:00"),
        )
        found = raw.execute(
            "SELECT n FROM search_scopes WHERE session_id = ?", ("bench-raw",)
        ).fetchone()
        scope = (
            found[0]
            if found
            else raw.execute(
                "INSERT INTO search_scopes (session_id) VALUES (?)", ("bench-raw",)
            ).lastrowid
        )
        raw.execute(
            "INSERT INTO messages_fts (rowid, body) VALUES (?, ?)",
            (index_rowid(scope, cur.lastrowid), text),
        )
        raw.execute("COMMIT")
        raw_parent[0] = mid

    # Appends cannot be replayed (a repeated id is a no-op), so warm each side
    # with 20 fresh appends instead of a pass over the samples.
    timed(lib_append, list(range(20)))
    timed(raw_append, list(range(20)))
    compare("append", lib_append, raw_append, list(range(n * 5)), "≤ 0.25 ms, ≤ 3×", warm=False)

    leaves = [rng.choice(corpus["leaves"]) for _ in range(n)]
    sessions = {sid: Session(store).for_session(sid) for sid, _ in leaves}

    def lib_history(sample: tuple[str, str]) -> None:
        sid, leaf = sample
        sessions[sid].get_history(leaf)

    compare("get_history", lib_history, raw_history(raw), leaves, "≤ 1 ms, ≤ 2×")

    queries = corpus["queries"]
    pairs = [(rng.choice(corpus["leaves"])[0], q) for q in queries]

    def lib_session_search(sample: tuple[str, str]) -> None:
        sid, q = sample
        manager.search(q, 20, session_id=sid)

    def raw_session_search(sample: tuple[str, str]) -> None:
        # The library's statements: the session's number, its matches marked
        # (a rowid range), then the best messages; ranking is library work.
        sid, q = sample
        expr = scoped_expression("body", match_expression(q))
        found = raw.execute("SELECT n FROM search_scopes WHERE session_id = ?", (sid,)).fetchone()
        low, high = scope_range(found[0])
        marked = raw.execute(
            "SELECT rowid, highlight(messages_fts, 0, char(1), char(2)) FROM messages_fts "
            "WHERE messages_fts MATCH ? AND rowid >= ? AND rowid < ?",
            (expr, low, high),
        ).fetchall()
        seqs = [rowid & 0xFFFFFFFF for rowid, _ in marked[:20]]
        if seqs:
            rows = raw.execute(
                "SELECT seq, id, role, content, created_at, session_id FROM messages "
                f"WHERE seq IN ({','.join('?' * len(seqs))})",
                seqs,
            ).fetchall()
            [json.loads(r[3]) for r in rows]

    sql = (
        "SELECT m.id, m.role, m.content, m.created_at, m.session_id, "
        "snippet(messages_fts, 0, '[', ']', '…', 12), bm25(messages_fts) AS score "
        "FROM messages_fts f JOIN messages m ON m.seq = (f.rowid & 4294967295) "
        "WHERE messages_fts MATCH ? {extra} ORDER BY score LIMIT 20"
    )

    compare("session search", lib_session_search, raw_session_search, pairs, "≤ 1 ms, ≤ 2×")
    # Its cost follows the matches in that one session, not the history: say
    # how it splits, since bigger sessions have matches for more queries.
    split: dict[bool, list[float]] = {False: [], True: []}
    for sid, q in pairs:
        t = time.perf_counter()
        found = manager.search(q, 20, session_id=sid)
        split[bool(found)].append((time.perf_counter() - t) * 1000)
    print(
        "  session search p50 by outcome: "
        + ", ".join(
            f"{'some' if key else 'no'} matches {pct(v, 50):.3f} ms ({len(v)} queries)"
            for key, v in split.items()
            if v
        )
    )

    def lib_global_search(query: str) -> None:
        manager.search(query, 20)

    def raw_global_search(query: str) -> None:
        expr = scoped_expression("body", match_expression(query))
        rows = raw.execute(
            sql.format(
                extra="AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = m.session_id "
                "AND s.deleted_at IS NOT NULL)"
            ),
            (expr,),
        ).fetchall()
        [json.loads(r[2]) for r in rows]

    compare("global search", lib_global_search, raw_global_search, queries, "≤ 3 ms, ≤ 2×")

    def lib_list(_: object) -> None:
        manager.list(limit=50)

    compare("list (50)", lib_list, raw_list(raw), list(range(n)), "≤ 0.2 ms, ≤ 2×")
    loop.close()
    store.close()
    raw.close()


if __name__ == "__main__":
    main()
