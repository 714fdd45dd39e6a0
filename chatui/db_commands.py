"""`chatui db …`: commands about the database itself (`db info`).

Kept out of `cli.py`, which only wires them in with `add_db_commands`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import asdict

from store import Store, database_info

__all__ = ["add_db_commands"]

OpenStore = Callable[[argparse.Namespace], AbstractContextManager[Store]]


def add_db_commands(command: Callable[..., argparse.ArgumentParser], open_store: OpenStore) -> None:
    """Add `db` and its subcommands through the CLI's `command` helper."""
    p = command(
        "db",
        _usage,
        "The database itself: `db info` shows engine, schema version, counts and size.",
        "chatui db info --json",
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


def _usage(args: argparse.Namespace) -> int:
    print("usage: chatui db info [--json]  (see chatui db --help)", file=sys.stderr)
    return 2


def cmd_db_info(args: argparse.Namespace) -> int:
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
