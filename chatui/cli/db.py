"""`chatui db …`: commands about the database itself (`db info`, `db copy`).

Kept out of `cli.py`, which only wires them in with `add_db_commands`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack
from dataclasses import asdict
from pathlib import Path

from store import (
    DatabaseUnavailableError,
    EngineError,
    Store,
    StoreError,
    is_url,
    redact_url,
    redact_urls_in,
)

from .base import DATABASE, UNREACHABLE, CliError

__all__ = ["add_db_commands"]

OpenStore = Callable[..., AbstractContextManager[Store]]


def add_db_commands(command: Callable[..., argparse.ArgumentParser], open_store: OpenStore) -> None:
    """Add `db` and its subcommands through the CLI's `command` helper."""
    p = command(
        "db",
        _usage,
        "The database itself: `db info` shows engine, schema version, counts and size; "
        "`db copy SRC DST` copies a whole history into another database.",
        "chatui db info --json\n  chatui db copy ~/chat.db postgresql://me@server/chatui",
    )
    sub = p.add_subparsers(dest="db_command", metavar="SUBCOMMAND")
    info = sub.add_parser(
        "info",
        help="engine, schema version, row counts and size",
        description="Show the database's engine, schema version, row counts and size.",
    )
    info.add_argument(
        "--db", metavar="PATH", default=argparse.SUPPRESS, help="database file or URL"
    )
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(run=cmd_db_info, open_store=open_store)
    copy = sub.add_parser(
        "copy",
        help="copy every chat, agent, project and memory into another database",
        description=(
            "Copy the whole database SRC into DST (a SQLite file or a PostgreSQL URL), "
            "all or nothing: on any failure DST is left as it was. DST must be new or "
            "empty unless --replace is given."
        ),
    )
    copy.add_argument("src", metavar="SRC", help="database file or URL to copy from")
    copy.add_argument("dst", metavar="DST", help="database file or URL to copy into")
    copy.add_argument(
        "--replace",
        action="store_true",
        help="clear a DST that holds chats instead of refusing it (in the same transaction)",
    )
    copy.add_argument("--json", action="store_true", help="print the rows copied as JSON")
    copy.set_defaults(run=cmd_db_copy, open_store=open_store)


def _usage(args: argparse.Namespace) -> int:
    print(
        "usage: chatui db info [--json] | chatui db copy SRC DST [--replace]  "
        "(see chatui db --help)",
        file=sys.stderr,
    )
    return 2


def cmd_db_info(args: argparse.Namespace) -> int:
    from store import database_info  # loaded by the command, not by every start

    with args.open_store(args) as store:
        info = database_info(store)
    if args.json:
        print(json.dumps(asdict(info), indent=2, sort_keys=True))
        return 0
    for line in _lines(info):
        print(line)
    return 0


def _lines(info: object) -> Iterator[str]:
    data = asdict(info)  # type: ignore[call-overload]
    yield f"engine:          {data['engine']}"
    yield f"database:        {data['location']}"
    yield f"schema version:  {data['schema_version']} ({data['last_migration']})"
    yield f"size:            {data['size_bytes']:,} bytes"
    for table, count in sorted(data["counts"].items()):
        yield f"{table + ':':<17}{count:,}"


def cmd_db_copy(args: argparse.Namespace) -> int:
    from store import CopyError, copy_database  # loaded by the command, not by every start

    created = _new_file(args.dst)
    try:
        with ExitStack() as stack:
            src = _enter("source", stack, args.open_store(argparse.Namespace(db=args.src)))
            dst = _enter(
                "destination",
                stack,
                args.open_store(argparse.Namespace(db=args.dst), create=True),
            )
            try:
                report = copy_database(src, dst, replace=args.replace)
            except CopyError as exc:
                raise CliError(str(exc), DATABASE) from exc
            except EngineError as exc:  # a dropped server, a full disk: nothing kept
                raise CliError(
                    f"copy failed, {redact_url(args.dst)} left as it was: "
                    f"{redact_urls_in(str(exc))}",
                    DATABASE,
                ) from exc
    except BaseException:
        if created is not None:  # a file made for the copy goes with the failed copy
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(created + suffix).unlink(missing_ok=True)
        raise
    if args.json:
        print(json.dumps({"copied": report.counts, "replaced": report.replaced}, indent=2))
        return 0
    total = sum(report.counts.values())
    print(f"copied {total:,} rows from {redact_url(args.src)} to {redact_url(args.dst)}")
    for table, count in report.counts.items():
        if count:
            print(f"  {table + ':':<17}{count:,}")
    return 0


def _new_file(target: str) -> str | None:
    """The file path `target` names when no file is there yet (None for a URL)."""
    if is_url(target):
        return None
    path = Path(target).expanduser()
    return None if path.exists() else str(path)


def _enter(which: str, stack: ExitStack, opening: AbstractContextManager[Store]) -> Store:
    """Open one side of a copy; its errors say which side they are about."""
    try:
        return stack.enter_context(opening)
    except CliError as exc:
        raise CliError(f"{which}: {exc}", exc.code) from exc
    except DatabaseUnavailableError as exc:  # a server that may come back: its own code
        raise CliError(f"{which}: {exc}", UNREACHABLE) from exc
    except StoreError as exc:
        raise CliError(f"{which}: {exc}", DATABASE) from exc
