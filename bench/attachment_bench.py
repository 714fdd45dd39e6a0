"""Benchmark: attaching a 5 MB image, and what five branches and a fork of it cost.

Measures, on a SQLite file (and on PostgreSQL with `--postgres URL`), through
the app's own path (`Workspace.attach_file` → `store.Attachments`):

- the floor: reading the file and hashing it (sha256), which any attach must do;
- attaching new content (read, check, hash, one INSERT of 5 MB), each run a
  different image so every run writes;
- attaching the same image again (read, hash, one existence check: no write);
- building the request that carries it (`to_openai_messages`: the data URL);
- then one image sent on five sibling branches and kept in a fork: rows in
  `attachments` (1) and what the database grew by, against 6 × 5 MB had the
  content been copied.

Figures, not assertions: run it on demand (`nice -n 10 python bench/attachment_bench.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chatui.core.config import Config  # noqa: E402
from chatui.core.convert import to_openai_messages  # noqa: E402
from chatui.core.workspace import Workspace  # noqa: E402
from store import Attachments, Message, SessionManager, Store, text_part  # noqa: E402
from store.schema import AttachmentRow  # noqa: E402

SIZE = 5 * 1024 * 1024


def image(path: Path, seed: int) -> Path:
    """A 5 MB file with a PNG header (content random: nothing compresses it)."""
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(SIZE - 8 - 4) + seed.to_bytes(4, "big"))
    return path


def p50(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:7.1f} ms"


def database_bytes(store: Store) -> int:
    return store.engine.size_bytes()


def run(location: str, label: str, runs: int, folder: Path) -> None:
    config = Config(model="demo", max_attachment_mb=20)
    with Store(location) as store:
        workspace = Workspace(store, config)
        files = [image(folder / f"photo-{i}.png", i) for i in range(runs)]
        floor, new, again, request = [], [], [], []
        for path in files:
            t = time.perf_counter()
            hashlib.sha256(path.read_bytes()).hexdigest()
            floor.append(time.perf_counter() - t)
        for path in files:
            t = time.perf_counter()
            attached = workspace.attach_file(path)
            new.append(time.perf_counter() - t)
        for path in files:
            t = time.perf_counter()
            workspace.attach_file(path)
            again.append(time.perf_counter() - t)
        load = Attachments(store).content
        question = Message("q", "user", [text_part("What is this?"), attached.part])
        for _ in range(runs):
            t = time.perf_counter()
            to_openai_messages("system", [question], load)
            request.append(time.perf_counter() - t)
        print(f"\n{label}: a 5 MB image, p50 of {runs} runs")
        print(f"  read + sha256 (the floor)          {p50(floor)}")
        print(f"  attach new content (stored)        {p50(new)}")
        print(f"  attach it again (already stored)   {p50(again)}")
        print(f"  build the request (data URL)       {p50(request)}")

        # One image on five sibling branches and in a fork of one of them.
        manager = SessionManager(store)
        photo = image(folder / "shared.png", 99_999)
        before_rows = len(store.rows(AttachmentRow.select(AttachmentRow.hash)))
        store.refresh_statistics()
        before = database_bytes(store)
        chat = manager.create("branches")
        session = manager.get_session(chat.id)
        asyncio.run(session.append_message(Message("root", "user", [text_part("hi")])))
        for n in range(5):
            part = workspace.attach_file(photo).part  # each branch attaches it anew
            asyncio.run(session.append_message(Message(f"q{n}", "user", [part]), "root"))
        asyncio.run(manager.fork(chat.id, "q2", "fork"))
        rows = len(store.rows(AttachmentRow.select(AttachmentRow.hash))) - before_rows
        grown = database_bytes(store) - before
        print(
            f"  5 branches + 1 fork of one image: {rows} row in attachments; the database "
            f"grew {grown / 1024 / 1024:.2f} MB (copied content would be "
            f"{6 * SIZE / 1024 / 1024:.0f} MB)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--postgres", help="also measure on this PostgreSQL URL (a fresh schema)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        run(str(folder / "bench.db"), "SQLite", args.runs, folder)
        if args.postgres:
            with fresh_schema(args.postgres) as url:
                run(url, "PostgreSQL", args.runs, folder)


@contextlib.contextmanager
def fresh_schema(server: str) -> Iterator[str]:
    """A URL whose tables live in a new schema of `server`, dropped afterwards."""
    import psycopg

    schema = f"bench_attach_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in server else "?"
    try:
        yield f"{server}{sep}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


if __name__ == "__main__":
    main()
