"""Peer messages: one agent's session asks another agent and gets its reply (seed 002).

No model runs here: the application injects `run_turn(session_id) -> reply`,
which runs the target agent's turn on its session (its own tools, memory and
model) and returns the reply text.

Design notes and invariants:
- Each (caller session, target agent) pair has one target session, created
  on first contact in the caller's project and remembered in `peer_links`;
  a deleted or purged one is replaced by a fresh session.
- A delivery is a user-role message in the target session with
  `from_agent_id` = the caller's agent and `delivered_to_session_id` = the
  target session, written in one transaction with its `peer_hops` row, so
  the hop is queryable from both sides (`PeerRouter.hops(session_id)`).
- While it waits, the caller is `awaiting_peer` (the detail names the
  target); its previous status comes back afterwards, whether the peer
  answered, failed or was cancelled.
- Loops are refused, never run: the agents waiting up the call stack travel
  in a context variable (it follows awaits and tasks the turn starts), and
  an agent already in that chain, or a chain longer than `max_depth`, gets
  `PeerLoopError` before anything is delivered.
- Turns on one target session never overlap (a lock per session).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from peewee import SQL

from .agents import AgentInfo
from .clock import iso, now
from .errors import PeerError, PeerLoopError, StoreError, UnknownAgentError, UnknownSessionError
from .manager import SessionInfo, SessionManager
from .messages import LATEST, Message, text_part
from .schema import PeerHopRow, PeerLinkRow
from .tools import Tool

__all__ = ["PeerHop", "PeerRouter", "RunTurn", "message_agent_tool"]

log = logging.getLogger(__name__)

RunTurn = Callable[[str], Awaitable[str]]
"""`async run_turn(session_id) -> reply text`: run the agent of that session once."""

HopState = Literal["delivered", "replied", "failed"]

# Agent ids (or "session:<id>" for a caller without an agent) waiting for a
# reply further up this call stack.
_CHAIN: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "store_peer_chain", default=()
)

H = PeerHopRow
_HOP_COLUMNS = (
    H.id,
    H.from_session_id,
    H.from_agent_id,
    H.from_message_id,
    H.to_session_id,
    H.to_agent_id,
    H.message_id,
    H.reply_message_id,
    H.wait,
    H.state,
    H.error,
    H.created_at,
    H.finished_at,
)


@dataclass(frozen=True)
class PeerHop:
    """One delivery from a caller session to a target agent's session."""

    id: str
    from_session_id: str
    from_agent_id: str | None
    from_message_id: str | None
    """The caller's newest message when it asked (normally the tool call)."""
    to_session_id: str
    to_agent_id: str
    message_id: str
    """The delivered user-role message in the target session."""
    reply_message_id: str | None
    """The target session's newest message once it replied."""
    wait: bool
    state: HopState
    error: str | None
    created_at: datetime
    finished_at: datetime | None

    def direction(self, session_id: str) -> Literal["out", "in"]:
        """ "out" when `session_id` sent this hop, "in" when it received it."""
        return "out" if session_id == self.from_session_id else "in"


def _hop(r: tuple[Any, ...]) -> PeerHop:
    return PeerHop(
        r[0],
        r[1],
        r[2],
        r[3],
        r[4],
        r[5],
        r[6],
        r[7],
        bool(r[8]),
        r[9],
        r[10],
        datetime.fromisoformat(r[11]),
        datetime.fromisoformat(r[12]) if r[12] else None,
    )


class PeerRouter:
    """Delivers peer messages between agents' sessions of one `SessionManager`.

    Args:
        manager: the sessions and agents.
        run_turn: runs the target agent's turn on a session, returns the reply.
        max_depth: most agents that may wait on each other in one chain.
        timeout: seconds a waiting caller gives a peer's turn (None: no limit).
    """

    def __init__(
        self,
        manager: SessionManager,
        run_turn: RunTurn,
        *,
        max_depth: int = 4,
        timeout: float | None = None,
    ) -> None:
        if max_depth < 1:
            raise ValueError("max_depth must be at least 1")
        self.manager = manager
        self.store = manager.store
        self.run_turn = run_turn
        self.max_depth = max_depth
        self.timeout = timeout
        self._locks: dict[str, asyncio.Lock] = {}
        self._waiting: dict[str, tuple[int, str, str | None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    # -- lookups ------------------------------------------------------------------

    def agent(self, name_or_id: str) -> AgentInfo:
        """The live agent with that name (any case) or id.

        Raises:
            UnknownAgentError: none, or it is archived.
        """
        found = self.manager.get_agent_by_name(name_or_id) or self.manager.get_agent(name_or_id)
        if found is None:
            raise UnknownAgentError(f"no agent {name_or_id!r}")
        if found.archived_at is not None:
            raise UnknownAgentError(f"agent {found.name!r} is archived")
        return found

    def peer_session(self, caller_session_id: str, agent: str) -> SessionInfo:
        """The target agent's session for this caller, created on first contact.

        It is in the caller's project, runs the target agent (and its model),
        and its metadata records the caller (`metadata["peer"]`).
        """
        caller = self.manager._require(caller_session_id)
        target = self.agent(agent)
        with self.store.write():  # one writer decides, so two processes never both create
            rows = self.store.rows(
                PeerLinkRow.select(PeerLinkRow.session_id).where(
                    PeerLinkRow.caller_session_id == caller.id, PeerLinkRow.agent_id == target.id
                )
            )
            if rows:
                linked = self.manager.get(rows[0][0])
                if linked is not None:
                    return linked
            info = self.manager.create(
                f"{target.name} ← {caller.name or caller.id[:8]}",
                model=target.model,
                source="peer",
                agent_id=target.id,
                project_id=caller.project_id,
                metadata={
                    "peer": {"caller_session_id": caller.id, "caller_agent_id": caller.agent_id}
                },
            )
            self.store.run(
                PeerLinkRow.insert(
                    caller_session_id=caller.id,
                    agent_id=target.id,
                    session_id=info.id,
                    created_at=iso(now()),
                ).on_conflict(
                    conflict_target=[PeerLinkRow.caller_session_id, PeerLinkRow.agent_id],
                    preserve=[PeerLinkRow.session_id, PeerLinkRow.created_at],
                )
            )
        return info

    def hops(self, session_id: str) -> list[PeerHop]:
        """Every hop sent from or delivered into the session, oldest first."""
        rows = self.store.rows(
            H.select(*_HOP_COLUMNS)
            .where((H.from_session_id == session_id) | (H.to_session_id == session_id))
            # SQLite's implicit rowid breaks created_at ties in insertion order.
            .order_by(H.created_at, SQL("rowid"))
        )
        return [_hop(r) for r in rows]

    def hop(self, hop_id: str) -> PeerHop | None:
        """One hop by id, or None."""
        rows = self.store.rows(H.select(*_HOP_COLUMNS).where(H.id == hop_id))
        return _hop(rows[0]) if rows else None

    @property
    def pending(self) -> int:
        """Fire-and-forget turns still running."""
        return len(self._tasks)

    # -- sending ------------------------------------------------------------------

    async def send(
        self, caller_session_id: str, agent: str, text: str, *, wait: bool = True
    ) -> str:
        """Deliver `text` from the caller's agent to `agent`; return its reply.

        With `wait=False` the target's turn runs in the background and a note
        saying so is returned at once; the reply lands in the target session.

        Raises:
            UnknownSessionError: the caller session is unknown or deleted.
            UnknownAgentError: no such live agent.
            PeerLoopError: the agent is already waiting in this chain, or the
                chain is too deep (nothing delivered).
            PeerError: the peer's turn failed or timed out (the hop is marked
                failed; the caller's status is restored).
            ValueError: `text` is empty.
        """
        if not isinstance(text, str) or not text.strip():
            raise ValueError("a peer message needs some text")
        caller = self.manager._require(caller_session_id)
        target = self.agent(agent)
        chain = self._chain_with(caller, target)
        session = self.peer_session(caller.id, target.name)
        hop = self._deliver(caller, target, session.id, text, wait)
        if not wait:
            self._start_background(hop, target, chain)
            return (
                f"Delivered to {target.name}. You are not waiting for the reply: it will "
                f"land in {target.name}'s session ({session.id})."
            )
        self._enter_wait(caller.id, f"waiting for agent {target.name!r} (session {session.id})")
        try:
            return await self._run(hop, target, chain)
        finally:
            self._leave_wait(caller.id)

    def _chain_with(self, caller: SessionInfo, target: AgentInfo) -> tuple[str, ...]:
        me = caller.agent_id or f"session:{caller.id}"
        chain = _CHAIN.get()
        chain = chain if chain and chain[-1] == me else (*chain, me)
        if target.id in chain:
            raise PeerLoopError(
                f"agent {target.name!r} is already waiting for a reply in this chain of "
                "messages; answer it instead of messaging it again"
            )
        if len(chain) > self.max_depth:
            raise PeerLoopError(
                f"too many agents are already waiting on each other ({len(chain)}; the "
                f"limit is {self.max_depth}); answer with what you have"
            )
        return chain

    def _deliver(
        self, caller: SessionInfo, target: AgentInfo, session_id: str, text: str, wait: bool
    ) -> PeerHop:
        hop_id = uuid.uuid4().hex
        leaf = self.manager.get_session(caller.id).get_latest_leaf()
        message = Message(
            id=f"peer-{hop_id}",
            role="user",
            parts=[text_part(text)],
            from_agent_id=caller.agent_id,
            delivered_to_session_id=session_id,
            metadata={
                "peer": {
                    "hop_id": hop_id,
                    "from_session_id": caller.id,
                    "from_message_id": leaf.id if leaf else None,
                    "from_agent_id": caller.agent_id,
                }
            },
        )
        provider = self.manager.get_session(session_id).provider
        with self.store.write():  # the message and its hop row, or neither
            provider.append_message(message, LATEST)
            self.store.run(
                H.insert(
                    id=hop_id,
                    from_session_id=caller.id,
                    from_agent_id=caller.agent_id,
                    from_message_id=leaf.id if leaf else None,
                    to_session_id=session_id,
                    to_agent_id=target.id,
                    message_id=message.id,
                    wait=1 if wait else 0,
                    state="delivered",
                    created_at=iso(now()),
                )
            )
        hop = self.hop(hop_id)
        assert hop is not None
        return hop

    async def _run(self, hop: PeerHop, target: AgentInfo, chain: tuple[str, ...]) -> str:
        token = _CHAIN.set(chain)
        try:
            lock = self._locks.setdefault(hop.to_session_id, asyncio.Lock())
            async with lock:
                turn = self.run_turn(hop.to_session_id)
                reply = await (asyncio.wait_for(turn, self.timeout) if self.timeout else turn)
            if not isinstance(reply, str):
                raise TypeError(f"run_turn returned {type(reply).__name__}, not a string")
        except asyncio.CancelledError:
            self._finish(hop, "failed", "cancelled")
            raise
        except Exception as exc:
            reason = "timed out" if isinstance(exc, TimeoutError) else str(exc) or repr(exc)
            self._finish(hop, "failed", reason)
            raise PeerError(f"agent {target.name!r} could not answer: {reason}") from exc
        finally:
            _CHAIN.reset(token)
        self._finish(hop, "replied", None)
        return reply

    def _finish(self, hop: PeerHop, state: HopState, error: str | None) -> None:
        reply_id = None
        if state == "replied":
            leaf = self.manager.get_session(hop.to_session_id).get_latest_leaf()
            reply_id = leaf.id if leaf is not None and leaf.id != hop.message_id else None
        with self.store.write():
            self.store.run(
                H.update(
                    state=state, error=error, reply_message_id=reply_id, finished_at=iso(now())
                ).where(H.id == hop.id)
            )

    def _start_background(self, hop: PeerHop, target: AgentInfo, chain: tuple[str, ...]) -> None:
        async def run() -> None:
            try:
                await self._run(hop, target, chain)
            except PeerError as exc:  # recorded on the hop; nobody is waiting to hear it
                log.warning("fire-and-forget message to %s failed: %s", target.name, exc)

        task = asyncio.get_running_loop().create_task(run(), name=f"peer-{hop.id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait for every fire-and-forget turn (including ones they start)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- caller status ----------------------------------------------------------------

    def _enter_wait(self, session_id: str, detail: str) -> None:
        # Parallel calls from one caller share one awaiting_peer spell: the
        # first saves the status to come back to, the last restores it.
        count, status, previous = self._waiting.get(session_id, (0, "", None))
        if count == 0:
            info = self.manager._require(session_id)
            status, previous = info.status, info.status_detail
        self._waiting[session_id] = (count + 1, status, previous)
        self.manager.set_status(session_id, "awaiting_peer", detail)

    def _leave_wait(self, session_id: str) -> None:
        count, status, previous = self._waiting[session_id]
        if count > 1:
            self._waiting[session_id] = (count - 1, status, previous)
            return
        del self._waiting[session_id]
        try:
            self.manager.set_status(session_id, status, previous)
        except UnknownSessionError:
            log.info("session %s was purged while it waited for a peer", session_id)


def message_agent_tool(
    router: PeerRouter, caller_session_id: str, allowed_agents: Sequence[str]
) -> Tool:
    """The `message_agent(agent, text, wait=true)` tool for one caller session.

    Args:
        allowed_agents: names of the agents this caller may message (the enum
            the model picks from).

    Raises:
        ValueError: `allowed_agents` is empty.
    """
    names = [a for a in dict.fromkeys(allowed_agents) if isinstance(a, str) and a.strip()]
    if not names:
        raise ValueError("message_agent needs at least one agent the caller may message")
    lines = []
    for name in names:
        info = router.manager.get_agent_by_name(name)
        about = f": {info.description}" if info is not None and info.description else ""
        lines.append(f"- {name}{about}")

    async def message_agent(agent: str, text: str, wait: bool = True) -> str:
        if not isinstance(wait, bool):  # models send null or "false"; refuse before any write
            return "Error: wait must be true or false"
        try:
            reply = await router.send(caller_session_id, agent, text, wait=wait)
        except (StoreError, ValueError) as exc:
            return f"Error: {exc}"
        return reply if reply.strip() else f"({agent} replied with an empty message)"

    return Tool(
        name="message_agent",
        description=(
            "Send a message to another agent and get its answer. It runs in its own "
            "session with its own memory and tools, and sees only what you write, so "
            "include the context it needs. With wait=false the message is delivered and "
            "you continue at once; the answer stays in that agent's session.\nAgents:\n"
            + "\n".join(lines)
        ),
        parameters={
            "type": "object",
            "properties": {
                "agent": {"type": "string", "enum": names, "description": "Who to ask."},
                "text": {"type": "string", "description": "The message, self-contained."},
                "wait": {
                    "type": "boolean",
                    "default": True,
                    "description": "Wait for the reply (default true).",
                },
            },
            "required": ["agent", "text"],
        },
        fn=message_agent,
    )
