"""`chatui export` and `chatui import`: the commands that move chats in and out.

Both stream: an export writes one chat at a time (a JSON list is written
element by element, the same text `json_text` gives for the whole list), so
`export --all` holds one chat in memory, not every chat. An import goes
through `chatui.transfer.files.import_file`, the path the app's palette uses.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

from store import SessionManager, Store

from ..transfer import IMPORTERS
from ..transfer.text import json_safe, one_line
from .base import (
    BAD_INPUT,
    OK,
    OUTPUT,
    PARTIAL,
    USAGE,
    CliError,
    _open,
    _out,
    _output,
    _resolve,
    _resolve_message,
)

# Exporters and importers load when their command runs: `chatui` with no command
# (the app) builds this parser on every start.

__all__ = ["add_transfer_commands", "cmd_export", "cmd_import"]


def cmd_export(args: argparse.Namespace) -> int:
    from store import document_entries, export_session

    from ..transfer.exports import json_text

    if bool(args.id) == args.all:
        raise CliError("give one chat id, or --all", USAGE)
    if args.branch and args.all:
        raise CliError("--branch goes with one chat id, not --all", USAGE)
    # One snapshot for the whole export: a chat written meanwhile is in it whole or
    # not at all, and `--all` is the history of one moment (on both engines).
    with _open(args) as store, store.snapshot():
        if args.all:
            ids = [
                info.id
                for info in SessionManager(store).list(oldest_first=True, include_archived=True)
            ]
        else:
            ids = [_resolve(store, args.id).id]
        if args.format in ("md", "html"):
            _export_pages(store, args, ids)
        elif args.format == "json":
            with _output(args.output) as fh:
                if args.all:
                    _write_json_list(fh, store, ids)
                else:
                    fh.write(json_text(export_session(store, ids[0])) + "\n")
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


def _export_pages(store: Store, args: argparse.Namespace, ids: list[str]) -> None:
    """Markdown (the branch) or HTML (the whole tree, one page per chat)."""
    from ..transfer.exports import markdown_page, slug
    from ..transfer.html_page import html_page

    manager = SessionManager(store)
    fmt = args.format

    def page(sid: str) -> str:
        info = manager.get(sid, include_deleted=True)
        assert info is not None
        through = _resolve_message(store, info, args.branch) if args.branch else None
        if fmt == "html":
            return html_page(store, info, through)
        return markdown_page(store, info, through)

    if fmt == "html" and args.all and args.output is None:
        raise CliError("--all --format html writes one page per chat: give -o FOLDER", USAGE)
    if not args.all or args.output is None:
        with _output(args.output) as fh:
            for i, sid in enumerate(ids):  # one page in memory at a time
                fh.write(("\n---\n\n" if i else "") + page(sid))
        return
    folder = args.output.expanduser()
    if folder.exists() and not folder.is_dir():
        raise CliError(
            f"{folder}: is a file; --all --format {fmt} writes one file per chat into a folder",
            OUTPUT,
        )
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise CliError(f"{folder}: cannot create: {exc.strerror or exc}", OUTPUT) from exc
    for sid in ids:
        info = manager.get(sid, include_deleted=True)
        assert info is not None
        name = f"{info.created_at:%Y-%m-%d}-{slug(info.name)}-{sid[:8]}.{fmt}"
        with _output(folder / name) as fh:
            fh.write(page(sid))


def _write_json_list(fh: IO[str], store: Store, ids: list[str]) -> None:
    """`json_text(list_of_documents)`, written one document at a time."""
    from store import export_session

    from ..transfer.exports import json_text

    if not ids:
        fh.write("[]\n")
        return
    fh.write("[\n")
    for i, sid in enumerate(ids):
        text = json_text(export_session(store, sid))
        fh.write((",\n" if i else "") + "  " + text.replace("\n", "\n  "))
    fh.write("\n]\n")


def cmd_import(args: argparse.Namespace) -> int:
    from ..transfer.exports import json_text
    from ..transfer.files import ImportProblem, import_file

    path = Path(args.file).expanduser()
    with _open(args, create=True) as store:
        try:
            report = import_file(
                store,
                path,
                args.source,
                new_ids=args.new_ids,
                dry_run=args.dry_run,
                strict=args.strict,
            )
        except ImportProblem as exc:
            raise CliError(str(exc), BAD_INPUT) from exc
    code = PARTIAL if report.partial else OK
    if args.json:
        _out(
            json_text(
                {
                    "file": str(path),
                    "from": args.source,
                    "dry_run": args.dry_run,
                    "imported": report.count("imported"),
                    "updated": report.count("updated"),
                    "unchanged": report.count("unchanged"),
                    "skipped": report.count("unchanged"),  # the name before merging
                    "messages_added": report.added,
                    "rejected": [r.reason for r in report.rejected],
                    "chats": [
                        {
                            "session_id": c.session_id,
                            "name": c.name,
                            "source": c.source,
                            "messages": c.messages,
                            "status": c.status,
                            "reason": "" if c.status == "imported" else "already imported",
                        }
                        for c in report.chats
                    ],
                }
            )
        )
        return code
    verbs = {"imported": "imported", "updated": "updated", "unchanged": "unchanged"}
    if args.dry_run:
        verbs = {"imported": "would import", "updated": "would update", "unchanged": "unchanged"}
    for c in report.chats:
        what = {
            "imported": f"({c.messages} messages)",
            "updated": f"(+{c.messages} messages)",
            "unchanged": "— already there, nothing new",
        }[c.status]
        _out(f"{verbs[c.status]:<13}{c.session_id[:8]}  {one_line(c.name, 60)} {what}")
    for r in report.rejected:
        print(f"chatui: rejected: {one_line(r.reason, 300)}", file=sys.stderr)
    total = len(report.chats) + len(report.rejected)
    _out(f"{total} chat{'s' if total != 1 else ''} in {path.name}: {report.summary()}.")
    return code


def add_transfer_commands(
    command: Callable[..., argparse.ArgumentParser],
) -> None:
    """Add `export` and `import` to the parser `command` builds subcommands for."""
    p = command(
        "export",
        cmd_export,
        "Export chats: Markdown (one branch), JSON or JSONL (the whole tree), or a "
        "self-contained HTML page (every branch, the tree as a graph).",
        "chatui export --all --format jsonl -o backup.jsonl",
    )
    p.add_argument("id", nargs="?", metavar="ID", help="chat id or unique prefix")
    p.add_argument("--all", action="store_true", help="every chat (not deleted ones)")
    p.add_argument(
        "--format",
        choices=("md", "json", "jsonl", "html"),
        default="json",
        help="md: the active branch; json/jsonl: everything (default json); html: one "
        "page per chat, every branch, nothing loaded from the network",
    )
    p.add_argument(
        "--branch",
        metavar="MESSAGE",
        help="md: the branch through this message; html: the branch shown first",
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="PATH",
        help="write here instead of stdout (with --all --format md or html: a folder)",
    )

    p = command(
        "import",
        cmd_import,
        "Import chats from a file, keeping every branch; a re-import merges new messages.",
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
        help="import as copies with new chat ids (default: merge into chats already here)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="all or nothing: one bad conversation rejects the file (default: import the "
        "readable ones, list the others, exit 6)",
    )
    p.add_argument("--dry-run", action="store_true", help="check and report; write nothing")
    p.add_argument("--json", action="store_true", help="print JSON")
