"""`chatui`: the terminal app, and commands for scripts (search, list, show, export, import).

With no command it launches the app. The commands never import textual or
litellm, so they start fast and work in pipes, cron jobs and over SSH. What
they print is for people (control characters in messages neutralised) or,
with `--json`, plain JSON. Exit codes are part of the interface (see
`EXIT_CODES` and `chatui --help`).
"""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from store import (
    DatabaseFileError,
    DatabaseUnavailableError,
    EngineError,
    SchemaVersionError,
    SessionInfo,
    SessionManager,
    is_url,
    reply_state,
)
from store.search import query_problem

from .. import launch
from ..transfer.text import one_line
from .argv import app_options, find_command, reads_as_prompt
from .base import (
    DATABASE,
    EPILOG,
    EXIT_CODES,
    NOT_FOUND,
    OK,
    UNREACHABLE,
    USAGE,
    CliError,
    _day,
    _open,
    _out,
    _resolve,
    _resolve_message,
)

if TYPE_CHECKING:
    import argparse

    from ..core.config import Config

__all__ = ["EXIT_CODES", "CliError", "build_parser", "failure_of", "prompt_shortcut", "run"]


# -- commands ---------------------------------------------------------------------


def cmd_search(args: argparse.Namespace) -> int:
    from ..transfer.exports import json_text  # the commands' modules load when they run

    query = " ".join(args.query)
    with _open(args) as store:
        session_id = _resolve(store, args.session).id if args.session else None
        manager = SessionManager(store)
        hits = manager.search(query, args.limit, session_id=session_id, include_deleted=False)
        names = manager.names(h.session_id for h in hits)
    problem = query_problem(query)
    if problem:  # on stderr: the results on stdout stay what a script reads
        print(problem, file=sys.stderr)
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
    from ..transfer.exports import json_text

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
    from ..transfer.exports import json_text
    from ..transfer.markdown import render_markdown, state_note
    from ..transfer.tree import outline_lines, path_view

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
                    "messages": [{**_message_json(m), "state": reply_state(m)} for m in view.path],
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
        for prefix, shown, m in outline_lines(view):
            note = state_note(m)
            _out(
                f"{prefix}{'*' if shown else ' '} {one_line(m.id, 24)} {m.role}"
                f"{f' [{note[0]}]' if note else ''}: {one_line(m.text or _kinds(m), 70)}"
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


def _configured_db(config: Config | None = None) -> str | None:
    """The database when `--db` is not given: `CHATUI_DB`, else the config's `database`
    (None: the default file). `config`: the config as read already (read here if None)."""
    if os.environ.get("CHATUI_DB"):
        return os.environ["CHATUI_DB"]
    return (config or read_config()).database


def read_config() -> Config:
    """The config file, read; a bad one is a usage error (`CliError`, one line)."""
    from ..core.config import ConfigError, load_config

    try:
        return load_config()
    except ConfigError as exc:
        raise CliError(str(exc), USAGE) from exc


def _launch(args: argparse.Namespace) -> int:
    launch.pause()  # until the app's first screen is drawn (it resumes collection)
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
    import argparse

    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if not 1 <= number <= 10_000:
        raise argparse.ArgumentTypeError("must be between 1 and 10000")
    return number


def build_parser() -> argparse.ArgumentParser:
    """The `chatui` argument parser (its help text is the command reference)."""
    import argparse  # loaded with the parser: the app's start builds none (~2 ms)

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
    p.add_argument(
        "query",
        nargs="+",
        metavar="QUERY",
        help='words; "a phrase", prefix*, OR (a word starting with -: search -- -word)',
    )
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
    # The command groups' modules load with the parser: the app's start builds none.
    from .ask import add_ask_command
    from .db import add_db_commands
    from .transfer import add_transfer_commands

    add_ask_command(command)
    add_db_commands(command, _open)
    add_transfer_commands(command)
    return parser


def prompt_shortcut(argv: Sequence[str], commands: Collection[str]) -> list[str]:
    """`chatui "a question"` as `chatui ask "a question"`: when the first argument that
    is not an option is no command and reads as a prompt (`argv.reads_as_prompt`)."""
    args = list(argv)
    _, i = find_command(args)
    if i is not None and args[i] not in commands and reads_as_prompt(args[i]):
        return [*args[:i], "ask", *args[i:]]
    return args


def _command_names(parser: argparse.ArgumentParser) -> set[str]:
    import argparse

    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def run(argv: Sequence[str] | None = None) -> int:
    """Run `chatui` with `argv` (default: the process's); return the exit code."""
    if argv is None:
        argv = sys.argv[1:]
    app = app_options(list(argv))  # the app and its own options: no parser built
    args: Any
    if app is not None:
        from types import SimpleNamespace  # as argparse's Namespace, without argparse

        args = SimpleNamespace(**app, command=None)
    else:
        parser = build_parser()
        argv = prompt_shortcut(argv, _command_names(parser))
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help, --version, usage errors
            return exc.code if isinstance(exc.code, int) else USAGE
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")  # a C locale must not crash output
    try:
        if not args.db:
            args.db = _configured_db()
        if args.command is None:
            return _launch(args)
        launch.resume()  # paused by `chatui.launch` for the app's start only
        return int(args.run(args))
    except BrokenPipeError:  # `chatui list | head`
        sys.stdout = open(os.devnull, "w")  # silence the exit flush
        return OK
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        failure = failure_of(exc)
        if failure is None:
            raise
        message, code = failure
    print(f"chatui: error: {one_line(message)}", file=sys.stderr)
    return code


def failure_of(exc: BaseException) -> tuple[str, int] | None:
    """(one line, exit code) of a failure a command reports; None: a bug (raise it)."""
    if isinstance(exc, CliError):
        return str(exc), exc.code
    if isinstance(exc, DatabaseUnavailableError):  # a server that may come back: its own code
        return str(exc), UNREACHABLE
    if isinstance(exc, DatabaseFileError | SchemaVersionError):
        return str(exc), DATABASE
    if isinstance(exc, sqlite3.Error | EngineError):
        return f"database error: {_first_database_error(exc)}", DATABASE
    return None


def _first_database_error(exc: BaseException) -> BaseException:
    """The error that started it: a full disk makes SQLite roll back on its own, and
    peewee's rollback then fails with "no transaction is active", which says nothing."""
    while isinstance(exc.__context__, sqlite3.Error | EngineError):
        exc = exc.__context__
    return exc
