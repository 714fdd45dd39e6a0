"""`McpHub`: every configured MCP server, and the tools each chat gets from them.

- Tools join a chat's tools as `SERVER__tool` (`qualified`): a server name
  holds no `__`, so the name splits back, and two servers' tools never collide.
- Per chat, in its metadata: the servers turned off (`mcp_off`) and the tools
  the user allowed for good (`mcp_allowed`, answered `a` in the dialog). Read
  once per chat and kept, so a turn costs no extra read.
- Approval (`ask`, `always`, `never`, per server and per tool): an `ask` call
  waits for the person: the hub emits a `ToolApproval` with a future the
  screen answers (`y` once, `a` always here, `n` refuse with a reason). A
  refusal, like every failure, is a tool result the model reads.
- A call is text in, text out (`store.Tool`): the engine stores it as a tool
  message on the branch, like the memory tools' results.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from store import SessionManager, Tool

if TYPE_CHECKING:  # the app builds a hub at start-up; a server's connection loads with it
    from .connection import PromptInfo, ResourceInfo, ServerConnection
    from .settings import Approval, McpServer

__all__ = [
    "Answer",
    "McpHub",
    "McpTool",
    "ServerStatus",
    "ToolApproval",
    "ToolsChanged",
    "qualified",
]

log = logging.getLogger(__name__)

OFF_KEY = "mcp_off"
"""Chat metadata: names of the servers turned off in this chat."""
ALLOWED_KEY = "mcp_allowed"
"""Chat metadata: qualified names of the tools allowed for good in this chat."""


def qualified(server: str, tool: str) -> str:
    """`server__tool`, as OpenAI-style tool names allow (64 characters of [A-Za-z0-9_-])."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"{server}__{tool}")[:64]


@dataclass(frozen=True)
class ToolsChanged:
    """A server started, stopped or changed its tools: the facts (gauge, F2) change."""

    server: str


Decision: TypeAlias = Literal["once", "always", "refuse"]


@dataclass(frozen=True)
class Answer:
    """The person's answer to a `ToolApproval`."""

    decision: Decision
    reason: str = ""
    """Why a call was refused (the model reads it)."""


@dataclass(eq=False)
class ToolApproval:
    """A call waiting for the person: answer it with `answer(Answer(...))`."""

    session_id: str
    server: str
    tool: str
    name: str
    """The qualified name the model called."""
    arguments: dict[str, Any]
    future: asyncio.Future[Answer] = field(repr=False)

    @property
    def arguments_text(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False, indent=2)

    def answer(self, answer: Answer) -> None:
        if not self.future.done():
            self.future.set_result(answer)


@dataclass(frozen=True)
class ServerStatus:
    """A server as the palette lists it."""

    name: str
    where: str
    state: str
    problem: str
    tools: tuple[str, ...]
    enabled: bool
    """On in the chat asked about."""


class McpTool(Tool):
    """A `store.Tool` run by an MCP server: the server checks the arguments against
    its own schema (which may use more JSON Schema than `store`'s flat check knows)."""

    async def __call__(self, /, **arguments: Any) -> str:
        result = await self.fn(**arguments)
        return str(result)


Emit: TypeAlias = Callable[[ToolsChanged | ToolApproval], None]


class McpHub:
    """The app's MCP servers and the per-chat rules for their tools."""

    def __init__(
        self,
        servers: tuple[McpServer, ...],
        manager: SessionManager,
        *,
        emit: Emit = lambda _e: None,
        log_dir: Path | None = None,
    ) -> None:
        self.manager = manager
        self.emit = emit
        """Where `ToolsChanged` and `ToolApproval` go (the workspace's listeners)."""
        self.connections: dict[str, ServerConnection] = {}
        if servers:  # with none configured (the usual start) the SDK's glue stays unloaded
            from .connection import ServerConnection

            self.connections = {
                s.name: ServerConnection(s, on_change=self._changed, log_dir=log_dir)
                for s in servers
            }
        self._chats: dict[str, tuple[set[str], set[str]]] = {}
        """Session id → (servers off, tools allowed for good), as its metadata holds them."""
        self.started = False

    def __bool__(self) -> bool:
        return bool(self.connections)

    # -- life -----------------------------------------------------------------------

    def start(self) -> None:
        """Start every server in the background (after the first frame: never waited for)."""
        if self.started:
            return
        self.started = True
        for connection in self.connections.values():
            connection.start()

    async def stop(self) -> None:
        await asyncio.gather(*(c.stop() for c in self.connections.values()))

    async def wait_ready(self, timeout: float = 30.0) -> bool:
        """Until every server is ready (tests and benchmarks; the app never waits)."""
        results = await asyncio.gather(*(c.wait_ready(timeout) for c in self.connections.values()))
        return all(results)

    def _changed(self, connection: ServerConnection) -> None:
        self.emit(ToolsChanged(connection.name))

    # -- per chat -------------------------------------------------------------------

    def _chat(self, session_id: str) -> tuple[set[str], set[str]]:
        found = self._chats.get(session_id)
        if found is None:
            info = self.manager.get(session_id, include_deleted=True)
            metadata = info.metadata if info is not None else {}
            off = metadata.get(OFF_KEY) or []
            allowed = metadata.get(ALLOWED_KEY) or []
            found = (
                {str(s) for s in off if isinstance(s, str)},
                {str(t) for t in allowed if isinstance(t, str)},
            )
            self._chats[session_id] = found
        return found

    def enabled(self, session_id: str | None, server: str) -> bool:
        if session_id is None:
            return True
        return server not in self._chat(session_id)[0]

    def set_enabled(self, session_id: str, server: str, on: bool) -> None:
        """Turn a server on or off in a chat (kept in the chat's metadata)."""
        off, _allowed = self._chat(session_id)
        if on:
            off.discard(server)
        else:
            off.add(server)
        self.manager.update_metadata(session_id, **{OFF_KEY: sorted(off)})

    def _allow(self, session_id: str, name: str) -> None:
        _off, allowed = self._chat(session_id)
        allowed.add(name)
        self.manager.update_metadata(session_id, **{ALLOWED_KEY: sorted(allowed)})

    def forget(self, session_id: str) -> None:
        """Read the chat's switches again on next use (another process changed them)."""
        self._chats.pop(session_id, None)

    def statuses(self, session_id: str | None) -> list[ServerStatus]:
        return [
            ServerStatus(
                c.name,
                c.server.where,
                c.state,
                c.problem,
                tuple(qualified(c.name, t.name) for t in c.tools),
                self.enabled(session_id, c.name),
            )
            for c in self.connections.values()
        ]

    # -- tools ------------------------------------------------------------------------

    def tools_for(self, session_id: str | None) -> dict[str, Tool]:
        """The tools of the servers ready now and on in the chat (None: a new chat)."""
        tools: dict[str, Tool] = {}
        if not self.connections:
            return tools
        for connection in self.connections.values():
            if connection.state != "ready" or not self.enabled(session_id, connection.name):
                continue
            for info in connection.tools:
                name = qualified(connection.name, info.name)
                tools[name] = McpTool(
                    name,
                    info.description or f"{info.name} (MCP server {connection.name})",
                    info.parameters or {"type": "object", "properties": {}},
                    self._caller(session_id or "", connection, info.name, name),
                )
        return tools

    def _caller(
        self, session_id: str, connection: ServerConnection, tool: str, name: str
    ) -> Callable[..., Any]:
        async def call(**arguments: Any) -> str:
            approval = self.approval(session_id, connection.server, tool, name)
            if approval == "never":
                return (
                    f"Error: the user does not allow {name} (approval = never in the "
                    f"config of the MCP server {connection.name!r}). Do not call it again."
                )
            if approval == "ask":
                answer = await self.ask(session_id, connection.name, tool, name, arguments)
                if answer.decision == "refuse":
                    reason = f" Their reason: {answer.reason}" if answer.reason.strip() else ""
                    return f"Error: the user refused this call of {name}.{reason}"
                if answer.decision == "always":
                    self._allow(session_id, name)
            return await connection.call(tool, arguments)

        return call

    def approval(self, session_id: str, server: McpServer, tool: str, name: str) -> Approval:
        """What a call of `tool` needs: the config's rule, unless the user allowed it for
        good in this chat (a `never` in the config stays never)."""
        rule = server.approval_for(tool)
        if rule == "ask" and session_id and name in self._chat(session_id)[1]:
            return "always"
        return rule

    async def ask(
        self, session_id: str, server: str, tool: str, name: str, arguments: dict[str, Any]
    ) -> Answer:
        """Ask the person (through whoever listens) and wait; cancelled with the reply."""
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        request = ToolApproval(session_id, server, tool, name, dict(arguments), future)
        self.emit(request)
        try:
            return await future
        finally:
            if not future.done():
                future.cancel()

    # -- prompts and resources ----------------------------------------------------------

    def prompts(self, session_id: str | None) -> list[tuple[str, PromptInfo]]:
        """(server, prompt) of every ready server on in the chat."""
        return [
            (c.name, p)
            for c in self.connections.values()
            if c.state == "ready" and self.enabled(session_id, c.name)
            for p in c.prompts
        ]

    def resources(self, session_id: str | None) -> list[tuple[str, ResourceInfo]]:
        return [
            (c.name, r)
            for c in self.connections.values()
            if c.state == "ready" and self.enabled(session_id, c.name)
            for r in c.resources
        ]

    async def get_prompt(self, server: str, name: str, arguments: dict[str, str]) -> str:
        """Raises: RuntimeError (unknown server, not running, refused: says which)."""
        connection = self.connections.get(server)
        if connection is None:
            raise RuntimeError(f"no MCP server named {server!r}")
        return await connection.get_prompt(name, arguments)

    async def read_resource(self, server: str, uri: str) -> tuple[str, bytes]:
        """Raises: RuntimeError (unknown server, not running, refused: says which)."""
        connection = self.connections.get(server)
        if connection is None:
            raise RuntimeError(f"no MCP server named {server!r}")
        return await connection.read_resource(uri)
