"""What every `chatui` command shares: exit codes, the one-line error, the database, output.

Kept apart from `chatui.cli.commands` so command groups in their own modules
(`chatui.cli.transfer`) use them without an import cycle.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from store import SessionInfo, SessionManager, Store, is_url

from ..core import paths
from ..transfer.text import one_line
from .exits import (  # the codes live apart: the ask client reads them
    BAD_INPUT,
    DATABASE,
    EXIT_CODES,
    INTERRUPTED,
    NOT_FOUND,
    OK,
    OUTPUT,
    PARTIAL,
    UNREACHABLE,
    USAGE,
)

if TYPE_CHECKING:
    import argparse  # the app's start imports no argparse (`run` builds no parser for it)

__all__ = [
    "BAD_INPUT",
    "DATABASE",
    "EPILOG",
    "EXIT_CODES",
    "INTERRUPTED",
    "NOT_FOUND",
    "OK",
    "OUTPUT",
    "PARTIAL",
    "UNREACHABLE",
    "USAGE",
    "CliError",
]

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
    # A file this process cannot write (a read-only mount, someone else's file) is
    # opened read-only: `list`, `search`, `show`, `export` and `db copy` from it work;
    # a command that writes gets the database's "read-only" error.
    read_only = existed and not create and not _writable(path)
    with Store(path, read_only=read_only) as store:
        if not existed:
            paths.make_private(path)
        yield store


def _writable(path: Path) -> bool:
    """Whether SQLite could write `path` and make its -wal/-shm files beside it."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


def _resolve(store: Store, text: str) -> SessionInfo:
    """A chat by id or unique id prefix (deleted chats included)."""
    _utf8(text, "chat id")
    found = SessionManager(store).find(text)
    if not found:
        raise CliError(f"no chat {one_line(text)!r} (see `chatui list`)", NOT_FOUND)
    if len(found) > 1:
        shown = ", ".join(info.id[:12] for info in found[:5])
        raise CliError(
            f"{one_line(text)!r} matches several chats ({shown}…); give more of the id", USAGE
        )
    return found[0]


def _utf8(text: str, what: str) -> None:
    """Refuse an argument that is not text (bytes a UTF-8 terminal cannot have typed)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        raise CliError(f"{one_line(text)!r}: not a {what} (not UTF-8 text)", USAGE) from None


def _resolve_message(store: Store, info: SessionInfo, text: str) -> str:
    _utf8(text, "message id")
    ids = SessionManager(store).find_messages(info.id, text)
    if not ids:
        raise CliError(f"no message {one_line(text)!r} in chat {info.id[:12]}", NOT_FOUND)
    if ids[0] != text and len(ids) > 1:
        raise CliError(f"{one_line(text)!r} matches several messages; give more of the id", USAGE)
    return ids[0]


@contextmanager
def _output(target: Path | None) -> Iterator[IO[str]]:
    """stdout, or `target`: a regular file (or a new one) is replaced whole or not at
    all, private (0600); a symlink is followed to what it names; a FIFO, a terminal or
    `/dev/stdout` is written through, as a shell's `>` would."""
    if target is None:
        yield sys.stdout
        return
    target = target.expanduser()
    if target.is_dir():
        raise CliError(f"{target}: is a folder (give a file name)", OUTPUT)
    if target.exists() and not target.is_file():  # a FIFO, a device: no rename over it
        try:
            with target.open("w", encoding="utf-8") as fh:
                yield fh
        except OSError as exc:
            raise CliError(f"{target}: cannot write: {exc.strerror or exc}", OUTPUT) from exc
        return
    if target.is_symlink():  # the link stays; the file it names gets the export
        target = Path(os.path.realpath(target))
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
