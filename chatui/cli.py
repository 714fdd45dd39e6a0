"""`chatui`: the terminal app, and commands for scripts (search, list, show, export, import).

With no command it launches the app. The commands never import textual or
litellm, so they start fast and work in pipes, cron jobs and over SSH. What
they print is for people (control characters in messages neutralised) or,
with `--json`, plain JSON. Exit codes are part of the interface (see
`EXIT_CODES` and `chatui --help`).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from store import (
    DatabaseFileError,
    SchemaVersionError,
    SessionInfo,
    SessionManager,
    Store,
    TransferError,
    document_entries,
    export_session,
    import_sessions,
    is_url,
)

from . import paths
from .db_commands import add_db_commands
from .porting import IMPORTERS, ImportFormatError, load_documents
from .porting.exports import json_text, markdown_page, slug
from .porting.markdown import render_markdown
from .porting.text import json_safe, one_line
from .porting.tree import outline, path_view

__all__ = ["EXIT_CODES", "CliError", "build_parser", "main"]

OK, NOT_FOUND, USAGE, BAD_INPUT, DATABASE, OUTPUT = 0, 1, 2, 3, 4, 5
EXIT_CODES = {
    OK: "success (also an import whose chats were all there already)",
    NOT_FOUND: "not found: no chat or message with that id, or a search without results",
    USAGE: "usage error: a bad option or argument, or an ambiguous id prefix",
    BAD_INPUT: "bad input file: unreadable, another format, a broken tree (nothing imported)",
    DATABASE: "database error: not a chatui database, written by a newer chatui, locked",
    OUTPUT: "the output file or folder cannot be written",
}
EPILOG = "exit codes:\n" + "\n".join(f"  {code}  {text}" for code, text in EXIT_CODES.items())


class CliError(Exception):
    """A failure to report in one line, with the exit code it maps to."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


# -- small helpers --------------------------------------------------------------


def _out(text: str = "") -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _day(info_time: Any) -> str:
    return info_time.strftime("%Y-%m-%d %H:%M") if info_time else "-"


@contextmanager
def _open(args: argparse.Namespace, *, create: bool = False) -> Iterator[Store]:
    """The database of `--db` (default: the user's), with errors mapped to exit codes."""
    if args.db and is_url(args.db):  # a server: no file to look for or create
        with Store(args.db) as store:
            yield store
        return
    path = Path(args.db).expanduser() if args.db else paths.default_db()
    if args.db and not create and not path.exists():
        raise CliError(f"{path}: no database there", DATABASE)
    existed = path.exists()
    if create and not existed and getattr(args, "dry_run", False):
        with Store(":memory:") as scratch:  # a dry run into no database writes no file
            yield scratch
        return
    if not existed:
        try:
            paths.ensure_private_dir(path.parent)
            paths.create_private_file(path)  # before SQLite: its -wal/-shm copy this mode
        except OSError as exc:
            raise CliError(f"{path}: cannot create the database: {exc.strerror}", DATABASE) from exc
    with Store(path) as store:
        if not existed:
            paths.make_private(path)
        yield store


def _resolve(store: Store, text: str) -> SessionInfo:
    """A chat by id or unique id prefix (deleted chats included)."""
    found = SessionManager(store).find(text)
    if not found:
        raise CliError(f"no chat {one_line(text)!r} (see `chatui list`)", NOT_FOUND)
    if len(found) > 1:
        shown = ", ".join(info.id[:12] for info in found[:5])
        raise CliError(
            f"{one_line(text)!r} matches several chats ({shown}…); give more of the id", USAGE
        )
    return found[0]


def _resolve_message(store: Store, info: SessionInfo, text: str) -> str:
    ids = SessionManager(store).find_messages(info.id, text)
    if not ids:
        raise CliError(f"no message {one_line(text)!r} in chat {info.id[:12]}", NOT_FOUND)
    if ids[0] != text and len(ids) > 1:
        raise CliError(f"{one_line(text)!r} matches several messages; give more of the id", USAGE)
    return ids[0]


@contextmanager
def _output(target: Path | None) -> Iterator[IO[str]]:
    """stdout, or a private file written whole or not at all."""
    if target is None:
        yield sys.stdout
        return
    target = target.expanduser()
    if target.is_dir():
        raise CliError(f"{target}: is a folder (give a file name)", OUTPUT)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".chatui-export-", dir=target.parent)
    except OSError as exc:
        raise CliError(f"{target}: cannot write: {exc.strerror or exc}", OUTPUT) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
        os.chmod(tmp, 0o600)  # chats are personal
        os.replace(tmp, target)
    except OSError as exc:
        raise CliError(f"{target}: cannot write: {exc.strerror or exc}", OUTPUT) from exc
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# -- commands ---------------------------------------------------------------------


def cmd_search(args: argparse.Namespace) -> int:
    query = " ".join(args.query)
    with _open(args) as store:
        session_id = _resolve(store, args.session).id if args.session else None
        manager = SessionManager(store)
        hits = manager.search(query, args.limit, session_id=session_id, include_deleted=False)
        names = manager.names(h.session_id for h in hits)
    if args.json:
        _out(
            json_text(
                [
                    {
                        "session_id": h.session_id,
                        "session_name": names.get(h.session_id),
                        "message_id": h.id,
                        "role": h.role,
                        "created_at": h.created_at.isoformat() if h.created_at else None,
                        "snippet": h.snippet,
                        "text": h.content,
                        "rank": h.rank,
                    }
                    for h in hits
                ]
            )
        )
    else:
        for h in hits:
            _out(
                f"{one_line(names.get(h.session_id, '?'), 50)}  {_day(h.created_at)}  "
                f"{h.role}  {h.session_id[:8]}/{one_line(h.id, 40)}"
            )
            _out(f"    {one_line(h.marked_snippet() or h.content, 200)}")
        if not hits:
            print(f"No messages match {one_line(query)!r}.", file=sys.stderr)
    return OK if hits else NOT_FOUND


def cmd_list(args: argparse.Namespace) -> int:
    with _open(args) as store:
        manager = SessionManager(store)
        infos = manager.list(deleted_only=args.deleted, limit=args.limit)
        counts = manager.message_counts(info.id for info in infos)
    if args.json:
        _out(
            json_text(
                [
                    {
                        "id": i.id,
                        "name": i.name,
                        "model": i.model,
                        "status": i.status,
                        "source": i.source,
                        "messages": counts.get(i.id, 0),
                        "parent_session_id": i.parent_session_id,
                        "project_id": i.project_id,
                        "created_at": i.created_at.isoformat(),
                        "updated_at": i.updated_at.isoformat(),
                        "deleted_at": i.deleted_at.isoformat() if i.deleted_at else None,
                        "input_tokens": i.input_tokens,
                        "output_tokens": i.output_tokens,
                        "cost": i.cost,
                    }
                    for i in infos
                ]
            )
        )
        return OK
    if not infos:
        print("No deleted chats." if args.deleted else "No chats yet.", file=sys.stderr)
        return OK
    _out(f"{'ID':<10}{'UPDATED (UTC)':<18}{'MSGS':>6}  {'MODEL':<20}{'STATUS':<10}NAME")
    for i in infos:
        _out(
            f"{i.id[:8]:<10}{_day(i.updated_at):<18}{counts.get(i.id, 0):>6}  "
            f"{one_line(i.model or '-', 19):<20}{i.status:<10}{one_line(i.name, 60)}"
        )
    return OK


def cmd_show(args: argparse.Namespace) -> int:
    with _open(args) as store:
        info = _resolve(store, args.id)
        through = _resolve_message(store, info, args.branch) if args.branch else None
        view = path_view(store, info, through)
    if args.json:
        _out(
            json_text(
                {
                    "session": _session_json(info),
                    "leaf": view.leaf,
                    "total": view.total,
                    "messages": [_message_json(m) for m in view.path],
                    "forks": [
                        {
                            "position": f.position,
                            "message_id": f.message_id,
                            "siblings": list(f.siblings),
                        }
                        for f in view.forks
                    ],
                    "below": list(view.below),
                }
            )
        )
    elif args.tree:
        _out(f"{one_line(info.name)}  ({info.id}; * marks the branch `show` prints)")
        for depth, branch, shown, m in outline(view):
            indent = "  " * (depth - 1) + ("├ " if branch else "│ ") if depth else ""
            _out(
                f"{indent}{'*' if shown else ' '} {one_line(m.id, 24)} {m.role}: "
                f"{one_line(m.text or _kinds(m), 70)}"
            )
    else:
        _out(render_markdown(view, show_ids=True, through=through))
    return OK


def _kinds(message: Any) -> str:
    return "[" + ", ".join(str(p.get("type")) for p in message.parts) + "]"


def _message_json(message: Any) -> dict[str, Any]:
    """Every field, null when unset (the shape of `export --format json`)."""
    data = {"id": message.id, "parent_id": message.parent_id}
    data.update({k: getattr(message, k) for k in message.__dataclass_fields__ if k not in data})
    data["created_at"] = message.created_at.isoformat() if message.created_at else None
    return data


def _session_json(info: SessionInfo) -> dict[str, Any]:
    data = {k: getattr(info, k) for k in info.__dataclass_fields__}
    for key in ("created_at", "updated_at", "deleted_at"):
        data[key] = data[key].isoformat() if data[key] else None
    return data


def cmd_export(args: argparse.Namespace) -> int:
    if bool(args.id) == args.all:
        raise CliError("give one chat id, or --all", USAGE)
    if args.branch and args.all:
        raise CliError("--branch goes with one chat id, not --all", USAGE)
    with _open(args) as store:
        if args.all:
            ids = [
                info.id
                for info in SessionManager(store).list(oldest_first=True, include_archived=True)
            ]
        else:
            ids = [_resolve(store, args.id).id]
        if args.format == "md":
            _export_markdown(store, args, ids)
        elif args.format == "json":
            docs = [export_session(store, sid) for sid in ids]
            with _output(args.output) as fh:
                fh.write(json_text(docs if args.all else docs[0]) + "\n")
        else:
            with _output(args.output) as fh:
                for sid in ids:  # one chat in memory at a time
                    for entry in document_entries(export_session(store, sid)):
                        fh.write(
                            json_safe(json.dumps(entry, ensure_ascii=False, separators=(",", ":")))
                            + "\n"
                        )
    if args.output is not None:
        print(
            f"Exported {len(ids)} chat{'s' if len(ids) != 1 else ''} to {args.output}",
            file=sys.stderr,
        )
    return OK


def _export_markdown(store: Store, args: argparse.Namespace, ids: list[str]) -> None:
    manager = SessionManager(store)

    def page(sid: str) -> str:
        info = manager.get(sid, include_deleted=True)
        assert info is not None
        through = _resolve_message(store, info, args.branch) if args.branch else None
        return markdown_page(store, info, through)

    if not args.all or args.output is None:
        with _output(args.output) as fh:
            fh.write("\n---\n\n".join(page(sid) for sid in ids))
        return
    folder = args.output.expanduser()
    if folder.exists() and not folder.is_dir():
        raise CliError(
            f"{folder}: is a file; --all --format md writes one file per chat into a folder", OUTPUT
        )
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise CliError(f"{folder}: cannot create: {exc.strerror or exc}", OUTPUT) from exc
    for sid in ids:
        info = manager.get(sid, include_deleted=True)
        assert info is not None
        name = f"{info.created_at:%Y-%m-%d}-{slug(info.name)}-{sid[:8]}.md"
        with _output(folder / name) as fh:
            fh.write(page(sid))


def cmd_import(args: argparse.Namespace) -> int:
    path = Path(args.file).expanduser()
    if not path.exists():
        raise CliError(f"{path}: no such file", BAD_INPUT)
    try:
        docs = load_documents(path, args.source)
    except ImportFormatError as exc:
        raise CliError(str(exc), BAD_INPUT) from exc
    with _open(args, create=True) as store:
        try:
            outcomes = import_sessions(
                store,
                docs,
                new_ids=args.new_ids,
                dry_run=args.dry_run,
                match_source=args.source != "chatui" and not args.new_ids,
            )
        except TransferError as exc:
            raise CliError(f"{path}: {exc}", BAD_INPUT) from exc
    done = [o for o in outcomes if o.imported]
    if args.json:
        _out(
            json_text(
                {
                    "file": str(path),
                    "from": args.source,
                    "dry_run": args.dry_run,
                    "imported": len(done),
                    "skipped": len(outcomes) - len(done),
                    "chats": [
                        {
                            "session_id": o.session_id,
                            "original_id": o.original_id,
                            "name": o.name,
                            "source": o.source,
                            "messages": o.messages,
                            "status": "imported" if o.imported else "skipped",
                            "reason": o.reason,
                        }
                        for o in outcomes
                    ],
                }
            )
        )
        return OK
    verb = "would import" if args.dry_run else "imported"
    for o in outcomes:
        what = f"({o.messages} messages)" if o.imported else f"— {o.reason}"
        _out(
            f"{verb if o.imported else 'skipped':<13}{o.session_id[:8]}  "
            f"{one_line(o.name, 60)} {what}"
        )
    messages = sum(o.messages for o in done)
    _out(
        f"{len(outcomes)} chat{'s' if len(outcomes) != 1 else ''} in {path.name}: {len(done)} "
        f"{verb} ({messages} messages), {len(outcomes) - len(done)} already there"
        + (" (dry run: nothing written)" if args.dry_run else "")
        + "."
    )
    return OK


def _launch(args: argparse.Namespace) -> int:
    try:
        from chatui.tui.app import run  # lazy: textual loads only for the app
    except ModuleNotFoundError as exc:
        if exc.name != "chatui.tui.app":
            raise
        raise CliError(
            "the terminal app is not in this build; see `chatui --help` for the commands", NOT_FOUND
        ) from exc
    db = (args.db if is_url(args.db) else Path(args.db).expanduser()) if args.db else None
    return int(run(db_path=db, model=args.model, theme=args.theme) or 0)


# -- parser -------------------------------------------------------------------------


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if not 1 <= number <= 10_000:
        raise argparse.ArgumentTypeError("must be between 1 and 10000")
    return number


def build_parser() -> argparse.ArgumentParser:
    """The `chatui` argument parser (its help text is the command reference)."""
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="chatui",
        formatter_class=raw,
        epilog=EPILOG,
        description="A terminal chat app for LLMs. With no command, opens the app.",
    )
    parser.add_argument(
        "--db",
        metavar="PATH",
        help="database file (default: in the user data folder; CHATUI_HOME moves it)",
    )
    parser.add_argument(
        "--model", metavar="NAME", help="model for new chats (a LiteLLM name, or demo)"
    )
    parser.add_argument("--theme", metavar="NAME", help="colour theme")
    parser.add_argument("--version", action="version", version="%(prog)s 0.1.0")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--db",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="database file (default: the user's)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")

    def command(
        name: str, fn: Callable[[argparse.Namespace], int], summary: str, example: str
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(
            name,
            parents=[common],
            help=summary,
            description=summary,
            formatter_class=raw,
            epilog=f"example:\n  {example}\n\n{EPILOG}",
        )
        p.set_defaults(run=fn)
        return p

    p = command(
        "search",
        cmd_search,
        "Search every chat (all branches) for words.",
        'chatui search "connection pool" --limit 5',
    )
    p.add_argument("query", nargs="+", metavar="QUERY", help='words; "a phrase", prefix*, OR')
    p.add_argument(
        "--limit", type=_positive, default=20, metavar="N", help="most hits (default 20)"
    )
    p.add_argument("--session", metavar="ID", help="only this chat (id or unique prefix)")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = command("list", cmd_list, "List chats, most recently updated first.", "chatui list --json")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--deleted", action="store_true", help="list deleted chats instead")
    p.add_argument("--limit", type=_positive, metavar="N", help="at most N chats")

    p = command(
        "show",
        cmd_show,
        "Show a chat: the active branch, with the others marked.",
        "chatui show 3f2a --branch a17c",
    )
    p.add_argument("id", metavar="ID", help="chat id or unique prefix")
    p.add_argument(
        "--branch",
        metavar="MESSAGE",
        help="show the branch through this message "
        "(down to its newest reply) instead of the active one",
    )
    p.add_argument("--tree", action="store_true", help="print the whole tree as an outline")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = command(
        "export",
        cmd_export,
        "Export chats: Markdown (one branch), JSON or JSONL (the whole tree).",
        "chatui export --all --format jsonl -o backup.jsonl",
    )
    p.add_argument("id", nargs="?", metavar="ID", help="chat id or unique prefix")
    p.add_argument("--all", action="store_true", help="every chat (not deleted ones)")
    p.add_argument(
        "--format",
        choices=("md", "json", "jsonl"),
        default="json",
        help="md: the active branch; json/jsonl: everything (default json)",
    )
    p.add_argument("--branch", metavar="MESSAGE", help="md: the branch through this message")
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="PATH",
        help="write here instead of stdout (with --all --format md: a folder)",
    )

    add_db_commands(command, _open)

    p = command(
        "import",
        cmd_import,
        "Import chats from a file, keeping every branch.",
        "chatui import conversations.json --from chatgpt",
    )
    p.add_argument("file", metavar="FILE", help="the file (Pi: a session file or folder)")
    p.add_argument(
        "--from",
        dest="source",
        required=True,
        choices=tuple(IMPORTERS),
        help="chatgpt: conversations.json or the export zip; chatui: a chatui "
        "export; pi: Pi session JSONL; llm: llm's logs.db",
    )
    p.add_argument(
        "--new-ids",
        action="store_true",
        help="import as copies with new chat ids (default: skip chats already here)",
    )
    p.add_argument("--dry-run", action="store_true", help="check and report; write nothing")
    p.add_argument("--json", action="store_true", help="print JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `chatui` with `argv` (default: the process's); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else USAGE
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")  # a C locale must not crash output
    try:
        if args.command is None:
            return _launch(args)
        return int(args.run(args))
    except CliError as exc:
        message, code = str(exc), exc.code
    except (DatabaseFileError, SchemaVersionError) as exc:
        message, code = str(exc), DATABASE
    except sqlite3.Error as exc:
        message, code = f"database error: {exc}", DATABASE
    except BrokenPipeError:  # `chatui list | head`
        sys.stdout = open(os.devnull, "w")  # silence the exit flush
        return OK
    except KeyboardInterrupt:
        return 130
    print(f"chatui: error: {one_line(message)}", file=sys.stderr)
    return code
