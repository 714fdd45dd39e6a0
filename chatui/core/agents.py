"""Agents at run time: each agent's memory blocks and engine, and the peer router.

An agent (seed 002) is a named configuration — model, soul, blocks, skills,
the peers it may message — kept in the database and synced from the config
file on start. A chat runs at most one agent; a chat without one runs the
config's defaults. Each agent gets its own `SessionManager` recipe (its soul
and blocks; its `global` blocks in its own namespace) and its own
`ChatEngine`; all share one store, one session registry and one
`PeerRouter`, so `message_agent` delivers into the target agent's session
and runs that agent's turn with its own model, memory and tools.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

from store import (
    AgentInfo,
    AgentSpec,
    PeerError,
    PeerRouter,
    SessionInfo,
    SessionManager,
    Store,
    Tool,
    message_agent_tool,
)

from .config import AgentConfig, BlockConfig, Config, parse_blocks
from .events import ReplyFinished, TurnFailed
from .wiring import GLOBAL_NAMESPACE, build_manager

_SESSION_NOTE = re.compile(r"\s*\(session [^)]*\)")

if TYPE_CHECKING:
    from .engine import ChatEngine, KeyChecker, Streamer

__all__ = ["AgentRuntime", "PeerMarks", "agent_blocks", "agent_namespace", "agent_spec"]

log = logging.getLogger(__name__)


@dataclass
class PeerMarks:
    """Messages of one chat that crossed to another chat (peer messages)."""

    labels: dict[str, str] = field(default_factory=dict)
    """Message id → "from B" / "asked B" (shown in the tree and the message header)."""
    targets: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Message id → (other chat, its message at the other end of the hop)."""


def agent_spec(agent: AgentConfig) -> AgentSpec:
    """What the store keeps of an agent from the config file."""
    return AgentSpec(
        name=agent.name,
        model=agent.model,
        soul=agent.soul,
        description=agent.description,
        config={
            "blocks": [asdict(b) for b in agent.blocks],
            "skills_dir": agent.skills_dir,
            "peers": list(agent.peers),
        },
    )


def agent_namespace(agent: AgentInfo | None) -> str:
    """Where an agent's `global` blocks live (the config's own for no agent)."""
    return f"{GLOBAL_NAMESPACE}-agent-{agent.id}" if agent else GLOBAL_NAMESPACE


def agent_blocks(agent: AgentInfo, config: Config) -> tuple[BlockConfig, ...]:
    """The agent's blocks (its own, else the config's), its soul first."""
    raw = agent.config.get("blocks") or []
    try:
        blocks = parse_blocks(raw, f"agents[{agent.name}].blocks") if raw else config.blocks
    except ValueError:
        log.warning("agent %s has unusable blocks; using the defaults", agent.name)
        blocks = config.blocks
    if not agent.soul:
        return blocks
    soul = BlockConfig("soul", kind="static", text=agent.soul)
    rest = tuple(b for b in blocks if b.label != "soul")
    return (soul, *rest)


class AgentRuntime:
    """The managers and engines of every agent, and the router between them."""

    def __init__(self, store: Store, config: Config) -> None:
        self.store = store
        self.config = config
        self.manager = build_manager(store, config)
        """Chats without an agent, and the registry every view lists and searches."""
        if config.agents:
            self.manager.sync_agents([agent_spec(a) for a in config.agents])
        self.router = PeerRouter(self.manager, self.run_turn)
        self._managers: dict[str | None, SessionManager] = {None: self.manager}
        self._engines: dict[str | None, ChatEngine] = {}
        self.enabled_tools: dict[str, frozenset[str]] = {}
        """Chat id → the tools its persona enables (chats without one are not here);
        filled from the chats' rows as they are read (`note_tools`)."""
        self._live: list[AgentInfo] | None = None
        self._names: dict[str, str] | None = None
        """The live agents as last read: every turn's tools name them (`reachable`), and
        they change only when the config is synced (at start) or the picker reads them."""
        self.tool_source: Callable[[str], dict[str, Tool]] | None = None
        """More tools for a chat, by session id (the workspace's MCP servers)."""
        self.streamer: Streamer | None = None
        """How engines stream model calls (None: in this process; the app sets its
        model process's)."""
        self.key_checker: KeyChecker | None = None
        """Who says whether a model's key is set (None: LiteLLM in this process; the
        app sets its model process's)."""
        self.counted: Callable[[str], None] | None = None
        """Told a model's name when a server's count, asked in the background, taught
        its figures (`ChatEngine.counted`; the workspace's `ModelFactsChanged`)."""

    # -- agents -------------------------------------------------------------------

    def agents(self) -> list[AgentInfo]:
        """Live agents, by name (read fresh)."""
        self._live = self.manager.list_agents()
        self._names = None
        return list(self._live)

    def _known(self) -> list[AgentInfo]:
        return self._live if self._live is not None else self.agents()

    def agent(self, agent_id: str | None) -> AgentInfo | None:
        if not agent_id:
            return None
        known = next((a for a in self._known() if a.id == agent_id), None)
        return known or self.manager.get_agent(agent_id)  # archived: not in the live list

    def has_agents(self) -> bool:
        """Agents exist (so chats may message each other and wait on a peer)."""
        return bool(self._known())

    def blocks_of(self, agent: AgentInfo | None) -> tuple[BlockConfig, ...]:
        """The blocks a chat running `agent` has (the config's for no agent)."""
        return agent_blocks(agent, self.config) if agent else self.config.blocks

    def names(self) -> dict[str, str]:
        """Agent id → name, archived ones included (for labels; read with the live list)."""
        if self._names is None:
            self._names = {a.id: a.name for a in self.manager.list_agents(include_archived=True)}
        return dict(self._names)

    # -- per-agent services -----------------------------------------------------------

    def manager_for_agent(self, agent_id: str | None) -> SessionManager:
        manager = self._managers.get(agent_id)
        if manager is None:
            agent = self.agent(agent_id)
            if agent is None:
                return self.manager
            manager = build_manager(
                self.store,
                self.config,
                agent_blocks(agent, self.config),
                skills_dir=agent.config.get("skills_dir"),
                global_namespace=agent_namespace(agent),
            )
            self._managers[agent_id] = manager
        return manager

    def manager_for(self, session_id: str) -> SessionManager:
        """The manager whose recipe gives this chat its agent's blocks."""
        info = self.manager.get(session_id, include_deleted=True)
        return self.manager_for_agent(info.agent_id if info else None)

    def note_tools(self, info: SessionInfo) -> None:
        """Remember the tools the chat's persona enables (its metadata's `tools`)."""
        tools = info.metadata.get("tools")
        if isinstance(tools, list):
            self.enabled_tools[info.id] = frozenset(t for t in tools if isinstance(t, str))

    def engine_for_agent(self, agent_id: str | None) -> ChatEngine:
        engine = self._engines.get(agent_id)
        if engine is None:
            from .engine import ChatEngine  # not on the first frame's import path

            agent = self.agent(agent_id)
            config = (
                self.config
                if agent is None or not agent.model
                else replace(self.config, model=agent.model)
            )
            engine = ChatEngine(
                self.manager_for_agent(agent_id),
                config,
                extra_tools=lambda session_id: self.extra_tools(session_id, agent_id),
                streamer=self.streamer,
                key_checker=self.key_checker,
                agent=agent,
                tool_filter=self.enabled_tools.get,
                counted=self._counted,
            )
            self._engines[agent_id] = engine
        return engine

    def _counted(self, model: str) -> None:
        if self.counted is not None:
            self.counted(model)

    def engine_for(self, session_id: str) -> ChatEngine:
        info = self.manager.get(session_id, include_deleted=True)
        return self.engine_for_agent(info.agent_id if info else None)

    # -- peers --------------------------------------------------------------------

    def reachable(self, agent_id: str | None) -> list[str]:
        """Names of the agents a chat running `agent_id` may message."""
        live = self._known()
        if agent_id is None:
            return [a.name for a in live]
        me = self.agent(agent_id)
        allowed = [p.lower() for p in (me.config.get("peers") or [])] if me else []
        return [
            a.name for a in live if a.id != agent_id and (not allowed or a.name.lower() in allowed)
        ]

    def extra_tools(self, session_id: str, agent_id: str | None) -> dict[str, Tool]:
        """The tools a chat has beyond its memory's: `message_agent`, and its MCP tools."""
        tools = self.peer_tools(session_id, agent_id)
        if self.tool_source is not None:
            tools.update(self.tool_source(session_id))
        return tools

    def peer_tools(self, session_id: str, agent_id: str | None) -> dict[str, Tool]:
        """`message_agent` for a chat running `agent_id` that can reach another agent."""
        names = self.reachable(agent_id)
        if not names:
            return {}
        return {"message_agent": message_agent_tool(self.router, session_id, names)}

    async def run_turn(self, session_id: str) -> str:
        """Run the session's agent on its newest message; its reply text (for the router).

        Raises:
            PeerError: the turn failed (the caller's tool result says why).
        """
        reply: str | None = None
        # aclosing: raising out of the loop must end the turn now (its status back to
        # idle), not whenever the abandoned generator is collected.
        async with aclosing(self.engine_for(session_id).respond(session_id)) as events:
            async for event in events:
                if isinstance(event, ReplyFinished) and event.status == "complete":
                    reply = event.message.text
                elif isinstance(event, TurnFailed):
                    detail = f": {event.detail}" if event.detail else ""
                    raise PeerError(f"{event.title}{detail}")
        if reply is None:
            raise PeerError("the agent finished without a reply")
        return reply

    def peer_marks(self, session_id: str) -> PeerMarks:
        """Where this chat's messages crossed to other chats, for the tree and `g`."""
        marks = PeerMarks()
        hops = self.router.hops(session_id)
        if not hops:
            return marks
        names = self.names()
        for hop in hops:
            if hop.to_session_id == session_id:
                sender = names.get(hop.from_agent_id or "", "a chat")
                marks.labels[hop.message_id] = f"from {sender}"
                if hop.from_message_id:
                    marks.targets[hop.message_id] = (hop.from_session_id, hop.from_message_id)
            elif hop.from_message_id:
                marks.labels[hop.from_message_id] = f"asked {names.get(hop.to_agent_id, '?')}"
                marks.targets[hop.from_message_id] = (
                    hop.to_session_id,
                    hop.reply_message_id or hop.message_id,
                )
        return marks

    def status_line(self, session_id: str) -> str:
        """ "waiting for <agent>" while a chat is blocked on a peer, else ""."""
        info = self.manager.get(session_id, include_deleted=True)
        if info is None or info.status != "awaiting_peer":
            return ""
        # The store's detail ends with the peer's session id: names read, ids do not.
        detail = _SESSION_NOTE.sub("", info.status_detail or "")
        return detail or "waiting for a peer"
