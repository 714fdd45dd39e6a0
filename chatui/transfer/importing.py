"""One import path for the command line and the app: read, check, write or merge.

`import_path` reads a file with its format's importer, then:

- chats not in the database are written as new chats (one bulk transaction,
  `store.import_sessions`);
- chats already there (same chat id, or for other apps' files the same
  source id such as `chatgpt:<conversation id>`) are *merged*: messages are
  recognised by their ids (the source's own ids: ChatGPT node ids, Pi entry
  ids, llm response ids or message hashes), those not yet stored are added
  under their parents, nothing is duplicated, and the chat's active branch
  follows the newer file's;
- with `new_ids` every chat is written as a copy instead (no merging);
- a conversation that cannot be read or checked is rejected with its reason
  while the others are imported (a *partial* import), unless `strict` asks for
  all or nothing.

Chats are written in batches of whole chats, one transaction each (about
`BATCH_MESSAGES` messages), so a long import lets other writers in between: the
app streaming a reply into the same database never waits long for the lock. A
failure midway keeps the batches already written; importing the file again adds
the rest (it merges). `strict` checks every chat before the first write.
"""

from __future__ import annotations

import os
import select
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store import (
    Message,
    SessionManager,
    Store,
    StoreSessionProvider,
    TransferError,
    import_sessions,
)

from . import load_documents
from .common import ImportFormatError, Rejected, guess_format
from .text import one_line

__all__ = ["ChatResult", "ImportReport", "import_path"]


@dataclass(frozen=True)
class ChatResult:
    """What an import did to one chat."""

    session_id: str
    name: str
    source: str | None
    status: str
    """"imported" (a new chat), "updated" (messages added), "unchanged"."""
    messages: int
    """Messages written: the whole chat when imported, the new ones when updated."""


@dataclass
class ImportReport:
    """The outcome of importing one file."""

    path: Path
    source: str
    dry_run: bool = False
    chats: list[ChatResult] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for c in self.chats if c.status == status)

    @property
    def added(self) -> int:
        """Messages written (new chats' and merged ones')."""
        return sum(c.messages for c in self.chats)

    @property
    def partial(self) -> bool:
        """Some conversations were rejected while others were imported or already there."""
        return bool(self.rejected)

    def summary(self) -> str:
        """ "3 chats imported, 2 chats updated, 12 messages added, 1 unchanged, 1 rejected"."""

        def n(count: int, what: str) -> str:
            return f"{count} {what}{'' if count == 1 else 's'}"

        bits = [
            n(self.count(status), "chat") + f" {status}"
            for status in ("imported", "updated")
            if self.count(status)
        ]
        if self.added or not bits:
            bits.append(n(self.added, "message") + " added")
        if self.count("unchanged"):
            bits.append(f"{self.count('unchanged')} already there")
        if self.rejected:
            bits.append(f"{len(self.rejected)} rejected")
        return ", ".join(bits) + (" (dry run: nothing written)" if self.dry_run else "")


def import_path(
    store: Store,
    path: Path,
    source: str | None = None,
    *,
    new_ids: bool = False,
    dry_run: bool = False,
    strict: bool = False,
) -> ImportReport:
    """Import a ChatGPT, chatui, Pi or llm file into `store` (format guessed if not given).

    Raises:
        ImportFormatError: the file cannot be read at all, nothing in it could be
            imported, or (with `strict`) any conversation is bad; nothing written.
    """
    path = path.expanduser()
    try:
        return _import_any(store, path, source, new_ids, dry_run, strict)
    except ImportFormatError:
        raise
    except RecursionError:
        raise ImportFormatError(
            f"{path}: nested too deeply to read (JSON over ~1,000 levels deep): nothing imported"
        ) from None
    except (ValueError, OverflowError) as exc:
        # What a hostile value makes Python refuse while the file is read or checked:
        # an integer of over 4,300 digits, a lone surrogate, a time that overflows
        # when made UTC. The write is one transaction: nothing was kept.
        raise ImportFormatError(f"{path}: {one_line(str(exc), 300)}: nothing imported") from None


def _import_any(
    store: Store, path: Path, source: str | None, new_ids: bool, dry_run: bool, strict: bool
) -> ImportReport:
    if not path.exists():
        raise ImportFormatError(f"{path}: no such file")
    if path.is_dir() or path.is_file():
        return _import_path(store, path, source, new_ids, dry_run, strict)
    # A pipe (`import <(cat f)`, a FIFO) can be read once only, while an importer looks
    # at a file several times (its format, then its content): read it into a private
    # temporary file first, and name the pipe, not that file, in every message.
    folder = Path(tempfile.mkdtemp(prefix="chatui-import-"))
    try:
        spooled = _spool(path, folder / (path.name or "pipe"))
        try:
            report = _import_path(store, spooled, source, new_ids, dry_run, strict)
        except ImportFormatError as exc:
            raise ImportFormatError(str(exc).replace(str(spooled), str(path))) from exc
        report.path = path
        report.rejected = [
            Rejected(r.reason.replace(str(spooled), str(path))) for r in report.rejected
        ]
        return report
    finally:
        shutil.rmtree(folder, ignore_errors=True)


PIPE_WAIT = 30.0
"""Seconds to wait for a pipe's first byte: a FIFO nobody writes to is refused, not
waited on forever."""


def _spool(pipe: Path, target: Path) -> Path:
    """Copy what `pipe` (a FIFO, `/dev/fd/N`, a device) gives until its end into `target`."""
    try:
        fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO without writer: no hang
    except OSError as exc:
        raise ImportFormatError(f"{pipe}: cannot read: {exc.strerror or exc}") from exc
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLHUP)
            if not poller.poll(int(PIPE_WAIT * 1000)):
                raise ImportFormatError(
                    f"{pipe}: nothing was written to this pipe in {PIPE_WAIT:g} s "
                    "(is the program writing it running?)"
                )
        os.set_blocking(fd, True)
        with open(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
            while chunk := os.read(fd, 1 << 20):
                out.write(chunk)
    except OSError as exc:
        raise ImportFormatError(f"{pipe}: cannot read: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    return target


def _import_path(
    store: Store,
    path: Path,
    source: str | None,
    new_ids: bool,
    dry_run: bool,
    strict: bool,
) -> ImportReport:
    source = source or guess_format(path)
    if source is None:
        raise ImportFormatError(
            f"{path}: not a ChatGPT, chatui, Pi or llm file that chatui "
            "recognises (try `chatui import FILE --from …`)"
        )
    report = ImportReport(path=path, source=source, dry_run=dry_run)
    documents = load_documents(path, source, report.rejected)
    match_source = source != "chatui" and not new_ids
    _refuse(report, documents, strict)
    if strict and len(documents) > 1:  # all or nothing: every chat checked before any write
        documents = _checked(store, path, documents, report.rejected, new_ids, match_source)
        _refuse(report, documents, strict)
    for n, batch in enumerate(_batches(documents)):
        # One transaction a batch: the write lock is let go between batches, so a long
        # import never keeps another writer (the app streaming a reply) waiting long.
        if n and not dry_run:
            # SQLite hands the lock to no one in particular: a writer waiting for it
            # looks again every ≤100 ms, so a pause that long lets it in first.
            time.sleep(BATCH_PAUSE)
        with store.write():
            try:  # the usual case, every document good: checked once, by the write itself
                outcomes = import_sessions(
                    store, batch, new_ids=new_ids, match_source=match_source, dry_run=dry_run
                )
            except TransferError:  # nothing of this batch written; set the bad ones aside
                batch = _checked(store, path, batch, report.rejected, new_ids, match_source)
                outcomes = import_sessions(
                    store, batch, new_ids=new_ids, match_source=match_source, dry_run=dry_run
                )
            for outcome, doc in zip(outcomes, batch, strict=True):
                if outcome.imported:
                    report.chats.append(
                        ChatResult(
                            outcome.session_id, outcome.name, outcome.source, "imported",
                            outcome.messages,
                        )
                    )  # fmt: skip
                    continue
                added = _merge(store, outcome.session_id, doc, dry_run)
                report.chats.append(
                    ChatResult(
                        outcome.session_id, outcome.name, outcome.source,
                        "updated" if added else "unchanged", added,
                    )
                )  # fmt: skip
    if not report.chats:
        _refuse(report, [], strict)  # every conversation was bad: nothing imported
    return report


BATCH_MESSAGES = 500
"""Messages a write transaction of an import holds at most (whole chats: a bigger
chat is a batch of its own): a fraction of a second of the write lock."""
BATCH_PAUSE = 0.1
"""Seconds between batches, for a waiting writer to take the lock."""


def _batches(documents: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    batches: list[list[dict[str, Any]]] = [[]]
    size = 0
    for doc in documents:
        listed = doc.get("messages") if isinstance(doc, dict) else None
        count = len(listed) if isinstance(listed, list) else 1  # a bad one: refused later
        if batches[-1] and size + count > BATCH_MESSAGES:
            batches.append([])
            size = 0
        batches[-1].append(doc)
        size += count
    return [batch for batch in batches if batch]


def _refuse(report: ImportReport, documents: list[dict[str, Any]], strict: bool) -> None:
    """Raise when rejections mean no import: `strict`, or nothing left to import."""
    if report.rejected and (strict or not documents):
        reasons = "; ".join(r.reason for r in report.rejected[:5])
        more = len(report.rejected) - 5
        raise ImportFormatError(
            f"{reasons}{f' (and {more} more)' if more > 0 else ''}"
            + ("" if documents else " — nothing imported")
        )


def _checked(
    store: Store,
    path: Path,
    documents: list[dict[str, Any]],
    rejected: list[Rejected],
    new_ids: bool,
    match_source: bool,
) -> list[dict[str, Any]]:
    """The documents the store accepts; the others go to `rejected` with the store's reason.

    One dry run checks them all (the usual case: all good); only when it fails
    is each checked alone, to name the bad ones.
    """
    try:
        import_sessions(store, documents, new_ids=new_ids, match_source=match_source, dry_run=True)
        return documents
    except TransferError:
        pass
    good = []
    for doc in documents:
        try:
            import_sessions(store, [doc], new_ids=new_ids, match_source=match_source, dry_run=True)
        except TransferError as exc:
            session = doc.get("session") if isinstance(doc, dict) else None
            name = session.get("name") if isinstance(session, dict) else None
            rejected.append(Rejected(f"{path}: {f'{name!r}: ' if name else ''}{exc}"))
            continue
        good.append(doc)
    return good


def _merge(store: Store, session_id: str, doc: dict[str, Any], dry_run: bool) -> int:
    """Add the document's messages that `session_id` lacks; the count added.

    Messages arrive parents first (every importer and export orders them so),
    so each new one's parent is stored, or added just before it. A message
    whose parent is in neither place (the chat was edited here in a way the
    file does not know) is kept as a root rather than lost.
    """
    provider = StoreSessionProvider(store, session_id, keep_whole=True)
    stored = {m.id for m in provider.get_tree()}
    new = [m for m in doc.get("messages", []) if m.get("id") not in stored]
    if not new:
        return 0
    if dry_run:
        return len(new)
    known = set(stored)
    for raw in new:
        message = Message.from_dict({k: v for k, v in raw.items() if k != "parent_id"})
        parent = raw.get("parent_id")
        provider.append_message(message, parent if parent in known else None)
        known.add(message.id)
    leaf = doc.get("session", {}).get("metadata", {}).get("active_leaf")
    if isinstance(leaf, str) and leaf in known:
        # The newer file's current branch is the one the user was last on.
        SessionManager(store).update_metadata(session_id, active_leaf=leaf)
    return len(new)
