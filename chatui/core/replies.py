"""Writing a streaming reply to the store, and running the tools it asks for.

Invariant: from the moment a reply starts, the database holds it. The
assistant message is stored empty and marked incomplete, then rewritten
with the text so far at most every `flush_interval` seconds, and once more
when it ends with its final status. A process killed mid-reply leaves the
text up to the last flush, still marked incomplete.

The text streamed so far is one `LiveText` (`ReplyWriter.live`): the writer
stores it, and the reply job hands the same object to a view opened
mid-reply. Nothing else keeps a copy.

A database server that stops answering mid-reply (PostgreSQL stopped,
restarting, the network gone: `Store.unreachable`) does not end the reply:
the text streams on into `live`, the writes wait (`Outage`: a probe off the
event loop, on a doubling delay up to `RETRY_MAX` seconds), and the first
write once the server answers stores everything. The engine says so on
screen (`ReplyWriter.outage_note`) and waits for the server before the
reply's final write (`ChatEngine._finish`). A cancel or a quit during the
outage cannot store the text: it is logged, with its length.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from store import Message, Session, Store, Tool, tool_call_part, tool_result_part, writer_mark

from ..llm.errors import known_secrets, redact_known
from .events import LiveText, ReplyStatus

__all__ = [
    "DB_BACK_NOTE",
    "DB_DOWN_NOTE",
    "Outage",
    "ReplyWriter",
    "ToolRun",
    "new_id",
    "run_tools",
]

log = logging.getLogger(__name__)

RETRY_FIRST = 0.25
"""Seconds before the first look at a database that stopped answering."""
RETRY_MAX = 2.0
"""The longest wait between two looks (the delay doubles up to it): a server back
is written to within ~2 s, and a down one costs a connection attempt every 2 s."""
DB_DOWN_NOTE = (
    "The database is unreachable ({where}). The reply goes on and is kept in memory; "
    "it is saved when the database answers again (chatui keeps trying). Do not quit "
    "until then: what is not saved is lost."
)
DB_BACK_NOTE = "The database answers again: the reply is saved."
STRIKES = 3
"""Writes that fail "unreachable" while the server answers a look, before the failure
is taken for what it is (raised): a fault the store misreads as a server away must
end the turn, not keep it waiting for ever."""


def new_id() -> str:
    """A fresh message id."""
    return uuid.uuid4().hex


class Outage:
    """The database stopped answering while a reply was written: when to look again.

    A look is `Store.answers()` run in a thread: a server that does not answer at
    all may take its whole connect timeout, which the event loop must not wait for.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self.delay = RETRY_FIRST
        self._next = time.monotonic() + self.delay
        self._probe: asyncio.Future[bool] | None = None
        self.since = time.monotonic()
        self.answered = False
        """The last look found the server answering (a write follows it)."""
        self.strikes = 0
        """Writes that failed right after a look found the server answering."""

    def failed(self) -> None:
        """A write failed again: the next look waits longer (up to `RETRY_MAX`)."""
        self.delay = min(self.delay * 2, RETRY_MAX)
        self._next = time.monotonic() + self.delay

    def back(self) -> bool:
        """A look found the server answering (write now); starts a look when one is due.
        Never blocks."""
        probe = self._probe
        if probe is not None and probe.done():
            self._probe = None
            if not probe.cancelled() and probe.exception() is None and probe.result():
                self.answered = True
                return True
            self.failed()
        if self._probe is None and time.monotonic() >= self._next:
            self._probe = asyncio.ensure_future(asyncio.to_thread(self.store.answers))
        return False

    async def wait(self) -> None:
        """Until a look finds the server answering (asleep between looks)."""
        while not self.back():
            if self._probe is not None:
                await asyncio.wait({self._probe})
            else:
                await asyncio.sleep(max(self._next - time.monotonic(), 0.01))


class ReplyWriter:
    """One assistant message being streamed into the store."""

    def __init__(self, session: Session, model: str, flush_interval: float) -> None:
        self.session = session
        self.model = model
        self.flush_interval = flush_interval
        self.id = new_id()
        self.live = LiveText()
        """The reply's text so far (shared with whoever draws it, never copied)."""
        self.reasoning: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.usage: dict[str, Any] | None = None
        self.finish_reason: str | None = None
        """Why the model stopped, as it said ("length": its output limit cut it off)."""
        self._last_flush = 0.0
        self._dirty = False
        self.started = False
        self.finished = False
        self._requested_at: float | None = None
        self._stored: Message | None = None
        """The reply as `start` stored it (its row's time and parent)."""
        self.first_token: float | None = None
        """Seconds from the request to the first text, reasoning or tool call."""
        self._secrets = known_secrets()
        """Keys an endpoint may echo back inside a reply: never stored or indexed."""
        self.marks: dict[str, Any] = {}
        """Metadata kept through every write (`continued`: where continuations begin)."""
        self.outage: Outage | None = None
        """The database stopped answering: what streamed since is in memory only."""
        self._said_down = False
        self.final: Message | None = None
        """The reply as `finish` stored it."""

    async def start(self, parent_id: str) -> Message:
        """Store the empty reply (status streaming, incomplete) under `parent_id`."""
        message = Message(
            id=self.id,
            role="assistant",
            parts=[],
            metadata=self._streaming_metadata(),
        )
        stored = await self.session.append_message(message, parent_id)
        self._stored = stored
        self.started = True
        self._last_flush = time.monotonic()
        if self._requested_at is None:
            self._requested_at = self._last_flush
        return stored

    def resume(self, message: Message) -> None:
        """Write into a stored reply instead of a new one: what it holds stays, what
        streams is appended, and where the continuation begins is marked
        (`metadata["continued"]`: the text offsets, one per continuation)."""
        self.id = message.id
        self.live = LiveText(message.text)
        self.reasoning = [
            str(p.get("text") or "") for p in message.parts if p.get("type") == "reasoning"
        ]
        previous = message.metadata.get("continued")
        starts = (
            [int(x) for x in previous if isinstance(x, int)] if isinstance(previous, list) else []
        )
        self.marks["continued"] = [*starts, len(message.text)]
        self._stored = message
        self.started = True
        self._last_flush = time.monotonic()
        if self._requested_at is None:
            self._requested_at = self._last_flush
        self.flush()  # marked writing again: a redraw shows it live, a crash interrupted

    @property
    def stored_final(self) -> Message:
        """The reply as `finish` stored it."""
        assert self.final is not None
        return self.final

    @property
    def stored(self) -> Message:
        """The reply as `start` (or `resume`) found it in the store."""
        assert self._stored is not None
        return self._stored

    def requested(self) -> None:
        """The model call was made now (the request may leave before `start`)."""
        self._requested_at = time.monotonic()

    def _arrived(self) -> None:
        if self.first_token is None and self._requested_at is not None:
            self.first_token = time.monotonic() - self._requested_at

    def reset(self) -> None:
        """Forget what streamed (before a retry into the same message)."""
        if "continued" in self.marks:  # keep what the continued reply held before
            text = self.live.text[: self.marks["continued"][-1]]
            self.live.clear()
            self.live.append(text)
            self.calls.clear()
            self.usage = None
            self.finish_reason = None
            return
        self.live.clear()
        self.reasoning.clear()
        self.calls.clear()
        self.usage = None
        self.finish_reason = None

    @property
    def has_content(self) -> bool:
        return bool(self.live or self.reasoning or self.calls)

    @property
    def has_new_content(self) -> bool:
        """Something arrived in this call (a continuation starts with what was there)."""
        if "continued" in self.marks:
            return len(self.live.text) > self.marks["continued"][-1] or bool(self.calls)
        return self.has_content

    def add_text(self, text: str) -> None:
        self._arrived()
        self.live.append(text)
        self._dirty = True

    def add_reasoning(self, text: str) -> None:
        self._arrived()
        self.reasoning.append(text)
        self._dirty = True

    def add_call(self, call_id: str, name: str, arguments_json: str) -> None:
        self._arrived()
        try:
            arguments: Any = json.loads(arguments_json) if arguments_json.strip() else {}
        except ValueError:
            arguments = arguments_json  # kept as sent; the tool answers with an Error
        self.calls.append(tool_call_part(call_id, name, arguments))
        self._dirty = True

    def _message(self, metadata: dict[str, Any]) -> Message:
        parts: list[dict[str, Any]] = []
        if self.reasoning:
            parts.append(
                {"type": "reasoning", "text": redact_known("".join(self.reasoning), self._secrets)}
            )
        if self.live:
            parts.append({"type": "text", "text": redact_known(self.live.text, self._secrets)})
        parts.extend(self.calls)
        return Message(
            id=self.id,
            role="assistant",
            parts=parts,
            metadata={**metadata, **self.marks},
            token_usage=self.usage,
        )

    def _streaming_metadata(self) -> dict[str, Any]:
        # The writer mark lets another app on this database show the reply as being
        # written here (not "interrupted") while this process lives.
        return {
            "model": self.model,
            "status": "streaming",
            "incomplete": True,
            "writer": writer_mark(),
        }

    def maybe_flush(self) -> None:
        """Write the text so far if `flush_interval` has passed since the last write
        (during an outage: once a look finds the database answering)."""
        if self.outage is not None:
            if self.outage.back():
                self.flush()
        elif self._dirty and time.monotonic() - self._last_flush >= self.flush_interval:
            self.flush()

    def flush(self) -> None:
        # Not final: the next flush or `finish` supersedes it, so its commit need not
        # wait for the database's disk (`Store`'s durability "final").
        try:
            self.session.update_message(
                self._message(self._streaming_metadata()),
                final=False,
            )
        except Exception as exc:
            if not self.kept(exc):
                raise
            return
        self._last_flush = time.monotonic()
        self._dirty = False
        self.outage = None

    def kept(self, exc: BaseException) -> bool:
        """`exc` (from a write of this reply) says the database is unreachable: the
        reply stays in memory and is written when it answers again (True). False for
        any other failure: the caller's to raise."""
        store = self.session.store
        if store is None or not store.unreachable(exc):
            return False
        outage = self.outage
        if outage is None:
            log.warning("the database is unreachable; reply %s is kept in memory: %s", self.id, exc)
            self.outage = Outage(store)
            return True
        if outage.answered:
            outage.strikes += 1
            if outage.strikes >= STRIKES:  # the server answers, the write still fails
                log.error("reply %s: writes fail with the server answering: %s", self.id, exc)
                return False
        outage.answered = False
        outage.failed()
        return True

    def outage_note(self) -> tuple[str, Literal["info", "warning"]] | None:
        """(text, level) of a notice to show, once when the database stops answering
        and once when the reply is saved again; None otherwise."""
        if self.outage is not None and not self._said_down:
            self._said_down = True
            return DB_DOWN_NOTE.format(where=self.outage.store.path), "warning"
        if self.outage is None and self._said_down:
            self._said_down = False
            return DB_BACK_NOTE, "info"
        return None

    def finish(
        self, status: ReplyStatus, *, error: str | None = None, error_kind: str | None = None
    ) -> Message:
        """Store the reply in its final form and return it as stored."""
        metadata: dict[str, Any] = {"model": self.model, "status": status}
        if self.first_token is not None:  # compare shows it beside the reply's siblings
            metadata["first_token_s"] = round(self.first_token, 3)
        if status in ("cancelled", "error", "truncated"):
            metadata["incomplete"] = True
        if error:
            metadata["error"] = error
            metadata["error_kind"] = error_kind or "unknown"
        final = self._message(metadata)
        self.session.update_message(final)
        self._dirty = False
        self.finished = True
        self.outage = None
        # As a read would give it back (no read: one statement less per turn): the row
        # keeps the time and the parent `start` stored.
        assert self._stored is not None
        self.final = replace(
            final, created_at=self._stored.created_at, parent_id=self._stored.parent_id
        )
        return self.final

    def cancel(self) -> None:
        """Store what streamed, marked cancelled, unless the reply already ended.

        With the database unreachable nothing can be stored: that is logged (the
        stored reply keeps its last flush, marked incomplete) and the cancel goes on.
        """
        if self.started and not self.finished:
            try:
                self.finish("cancelled")
            except Exception as exc:
                store = self.session.store
                if store is None or not store.unreachable(exc):
                    raise
                log.error(
                    "reply %s cancelled with the database unreachable: its last %d "
                    "characters were not saved",
                    self.id,
                    len(self.live.text),
                )


@dataclass
class ToolRun:
    """What running one round of tool calls produced."""

    message: Message
    changed_labels: list[str] = field(default_factory=list)


async def run_tools(
    session: Session, tools: dict[str, Tool], calls: list[dict[str, Any]], parent_id: str
) -> ToolRun:
    """Run each call, store ONE `tool` message with every result under `parent_id`.

    A tool never raises for model input (they answer `Error: …`); an
    unknown tool or an unexpected failure becomes an error result too, so
    every call gets exactly one result.
    """
    parts: list[dict[str, Any]] = []
    changed: list[str] = []
    try:
        for call in calls:
            parts.append(await _run_one(tools, call, changed))
    except asyncio.CancelledError:
        # Stopped (esc) while a tool ran — an MCP server may take its time: every call
        # still gets its one result, so the branch reads whole and can be continued.
        for call in calls[len(parts) :]:
            parts.append(
                tool_result_part(
                    str(call.get("tool_call_id") or ""),
                    str(call.get("tool_name") or ""),
                    "Error: the user stopped this call before it finished.",
                    True,
                )
            )
        await session.append_message(Message(id=new_id(), role="tool", parts=parts), parent_id)
        raise
    message = Message(id=new_id(), role="tool", parts=parts)
    stored = await session.append_message(message, parent_id)
    return ToolRun(stored, changed)


async def _run_one(
    tools: dict[str, Tool], call: dict[str, Any], changed: list[str]
) -> dict[str, Any]:
    """One call's result part (`changed`: memory labels a `set_context` wrote)."""
    name = str(call.get("tool_name") or "")
    tool = tools.get(name)
    if tool is None:
        output = f"Error: unknown tool {name!r}; available: {', '.join(sorted(tools)) or 'none'}"
    else:
        arguments = call.get("input")
        try:
            output = await tool.call_json(
                arguments if isinstance(arguments, str | dict) else json.dumps(arguments)
            )
        except Exception as exc:  # tools promise not to raise; a bug must not end the turn
            log.warning("tool %s raised", name, exc_info=True)
            output = f"Error: {name} failed: {exc}"
    is_error = output.startswith("Error:")
    arguments = call.get("input")
    if isinstance(arguments, str):  # a caller may hand over the raw JSON text
        try:
            arguments = json.loads(arguments)
        except ValueError:
            arguments = None
    if name == "set_context" and not is_error and isinstance(arguments, dict):
        label = arguments.get("label")
        if isinstance(label, str) and label not in changed:
            changed.append(label)
    return tool_result_part(str(call.get("tool_call_id") or ""), name, output, is_error)
