"""Reply jobs: a running turn belongs to its chat, not to the screen showing it.

A `ReplyJob` is an asyncio task that drains one turn of `ChatEngine` events.
The engine writes the reply to the store as it streams, so a job runs the
same whether its chat is on screen or not; whoever shows a chat subscribes
to `ReplyJobs` and draws the events of the chat it shows. Opening another
chat, the chat list or search never cancels anything; `cancel(chat)` does.

Design notes:
- One job per chat (a second send in the same chat is refused: its reply
  would race the first for the branch), at most `limit` chats at once.
- Listeners are called synchronously with each event, on the event loop.
  They must not block: the app's listener posts a Textual message.
- `live` holds the text of each reply being written: the engine's writer's
  own `LiveText`, by reference (never a copy), so a view opened mid-reply
  reads the stream where it is once, then draws the deltas that follow.
- The branch a reply is written on becomes the chat's branch, on screen or
  not, so returning shows it: a turn's messages are the chat's newest, and
  the newest leaf is the branch a chat opens on unless its `active_leaf`
  metadata names another; so a turn clears a stored `active_leaf` (one write,
  only when there is one) instead of writing each new leaf.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from store import EngineError, SessionManager, StoreError

from .events import (
    JobEnded,
    JobEvent,
    LiveText,
    MessageStored,
    Notice,
    ReplyFinished,
    ReplyStarted,
    TurnEvent,
    TurnKind,
)

__all__ = ["JobEnded", "JobEvent", "JobsFull", "ReplyJob", "ReplyJobs", "TurnKind"]

log = logging.getLogger(__name__)

STORAGE_ERRORS = (sqlite3.Error, StoreError, OSError, EngineError)
Listener: TypeAlias = Callable[[JobEvent], None]


class JobsFull(Exception):
    """`limit` chats are writing replies already."""


@dataclass
class ReplyJob:
    """One turn running in one chat."""

    session_id: str
    kind: TurnKind
    task: asyncio.Task[None] | None = None
    stored_leaf: str | None = None
    """The `active_leaf` the chat's metadata named when the turn started (cleared by
    the turn's first message: see the module's notes)."""
    live: dict[str, LiveText] = field(default_factory=dict)
    """Message id → its text so far (the writer's own), for replies being written now."""
    notes: list[tuple[str, str]] = field(default_factory=list)
    """Notices of this turn (drawn again when the chat is redrawn)."""
    stored_user: bool = False
    """The user's message of this turn is stored (the input box may be cleared)."""
    cancelled: bool = False

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()


class ReplyJobs:
    """The reply jobs of every chat; at most `limit` run at once."""

    def __init__(self, manager: SessionManager, limit: int = 3) -> None:
        self.manager = manager
        self.limit = limit
        self._jobs: dict[str, ReplyJob] = {}
        self._listeners: list[Listener] = []

    # -- watching -----------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` with every event of every job; returns the unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _emit(self, event: JobEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a listener's bug must not end another chat's reply
                log.exception("reply listener failed")

    # -- facts --------------------------------------------------------------------

    def job(self, session_id: str | None) -> ReplyJob | None:
        job = self._jobs.get(session_id) if session_id else None
        return job if job is not None and job.running else None

    def running(self, session_id: str | None) -> bool:
        return self.job(session_id) is not None

    @property
    def live_chats(self) -> set[str]:
        """Ids of the chats writing a reply now."""
        return {sid for sid, job in self._jobs.items() if job.running}

    def live_messages(self, session_id: str | None) -> dict[str, str]:
        """Message id → text so far, of the chat's replies being written now."""
        job = self.job(session_id)
        return {mid: live.text for mid, live in job.live.items()} if job else {}

    # -- starting and stopping ----------------------------------------------------

    def start(
        self,
        session_id: str,
        kind: TurnKind,
        events: AsyncGenerator[TurnEvent, None],
        *,
        stored_leaf: str | None = None,
    ) -> ReplyJob:
        """Run `events` (one engine turn) as the chat's job.

        `stored_leaf`: the `active_leaf` in the chat's metadata now, if any.

        Raises:
            JobsFull: `limit` chats are replying (the generator is closed unstarted).
            RuntimeError: this chat is replying already.
        """
        if self.running(session_id):
            raise RuntimeError(f"chat {session_id} is replying already")
        if len(self.live_chats) >= self.limit:
            raise JobsFull(
                f"{self.limit} chats are writing replies already (max_live_replies = "
                f"{self.limit}); wait for one, or press escape in its chat"
            )
        job = ReplyJob(session_id, kind, stored_leaf=stored_leaf)
        self._jobs[session_id] = job
        job.task = asyncio.get_running_loop().create_task(
            self._run(job, events), name=f"reply:{session_id}"
        )
        return job

    def cancel(self, session_id: str | None) -> bool:
        """Stop the chat's reply; what arrived is kept, marked cancelled."""
        job = self.job(session_id)
        if job is None or job.task is None:
            return False
        job.cancelled = True
        job.task.cancel()
        return True

    async def stop(self, session_id: str, timeout: float = 5.0) -> bool:
        """Cancel the chat's reply and wait until what arrived is stored (marked
        cancelled): done before the chat is deleted, so nothing writes to it after.
        False when it was not replying."""
        if not self.cancel(session_id):
            return False
        await self.wait(session_id, timeout=timeout)
        return True

    async def wait(self, session_id: str | None = None, timeout: float | None = None) -> None:
        """Until the chat's job (every job when None) has ended."""
        tasks = [
            j.task
            for sid, j in self._jobs.items()
            if j.task is not None and (session_id is None or sid == session_id)
        ]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)

    async def cancel_all(self, timeout: float = 5.0) -> int:
        """Cancel every job and wait for their partial replies to be stored."""
        live = [sid for sid in list(self._jobs) if self.cancel(sid)]
        await self.wait(timeout=timeout)
        return len(live)

    # -- running ------------------------------------------------------------------

    async def _run(self, job: ReplyJob, events: AsyncGenerator[TurnEvent, None]) -> None:
        outcome: Literal["finished", "cancelled", "failed"] = "finished"
        failure: tuple[str, str] | None = None
        storage = False
        advice: str | None = None
        try:
            # aclosing: a cancel landing between two events still closes the engine's
            # generator at once, so the partial reply is stored as cancelled.
            async with aclosing(events):
                async for event in events:
                    self._track(job, event)
                    self._emit(event)
        except asyncio.CancelledError:
            outcome = "cancelled"
        except STORAGE_ERRORS as exc:  # disk full, read-only, locked
            log.error("reply in %s could not be stored: %s", job.session_id, exc, exc_info=exc)
            outcome, storage = "failed", True
            failure = (str(exc), "Could not save to the database")  # main.STORAGE_TITLE
            advice = self.manager.store.failure_advice(exc)
        except Exception as exc:  # a bug: say so, keep the app running
            log.error("reply in %s failed", job.session_id, exc_info=exc)
            outcome = "failed"
            failure = (f"{type(exc).__name__}: {exc}", "Something went wrong (details in the log)")
        finally:
            job.live.clear()
            if self._jobs.get(job.session_id) is job:
                del self._jobs[job.session_id]
            self._emit(JobEnded(job.session_id, outcome, failure, storage, advice))

    def _track(self, job: ReplyJob, event: TurnEvent) -> None:
        match event:
            case MessageStored(message=message):
                job.stored_user = job.stored_user or message.role == "user"
                self._follow(job)
            case ReplyStarted(message=message, live=live):
                job.live[message.id] = live
                self._follow(job)
            case ReplyFinished(message=message):
                job.live.pop(message.id, None)
            case Notice(text=text, level=level):
                job.notes.append((text, level))

    def _follow(self, job: ReplyJob) -> None:
        """The turn's branch becomes the chat's: its messages are the newest, so a
        stored `active_leaf` (another branch) is cleared, once."""
        if job.stored_leaf is None:
            return
        job.stored_leaf = None
        try:
            self.manager.update_metadata(job.session_id, active_leaf=None)
        except Exception:  # the chat may have been deleted meanwhile: the reply goes on
            log.debug("could not clear %s's active leaf", job.session_id, exc_info=True)
