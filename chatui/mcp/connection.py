"""One MCP server, kept connected: started in the background, restarted when it dies.

The official SDK (`mcp`) does the protocol; this module keeps one `mcp.Client`
alive per configured server and turns whatever happens to a call into text
the model reads:

- A connection is one asyncio task (`_run`) that opens the transport (a
  subprocess over stdio, or streamable HTTP), lists the server's tools,
  prompts and resources, and holds the session until the server dies or the
  app stops. A start that fails (a missing program, a refused connection, a
  handshake that never ends) is retried with a growing pause, so a server
  installed or started later joins without a restart of the app.
- Nothing waits for a server: `tools` is whatever was listed by now (empty
  while it starts), so the first frame and every measure of the context are
  as fast with servers as without.
- A call never raises for what the server does: a timeout, a crash mid-call,
  an error result all come back as `Error: …` text (`store.Tool`'s promise),
  and a crash restarts the server. Cancelling the caller (esc on the reply)
  cancels the call.
- The SDK is imported on the first start, in a thread: it costs about a
  second of CPU, which must not be spent on the event loop before the first
  frame (nor on it at all).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import importlib
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO, TypeAlias, cast

from store.text import clean

from ..core.logs import redact
from .settings import McpServer, expand

if TYPE_CHECKING:
    from mcp import Client

__all__ = ["PromptInfo", "ResourceInfo", "ServerConnection", "ServerState", "ToolInfo"]

log = logging.getLogger(__name__)

ServerState: TypeAlias = Literal["starting", "ready", "failed", "stopped"]

RETRY_SECONDS = (1.0, 2.0, 5.0, 10.0, 30.0)
"""Pauses before each new start of a server that failed or died (the last repeats)."""
MAX_RESULT_CHARS = 100_000
"""A tool result longer than this is cut (a log or a file dump would fill the window)."""


@dataclass(frozen=True)
class ToolInfo:
    """A tool as the server lists it."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class PromptInfo:
    """A prompt template the server offers (its arguments by name: required or not)."""

    name: str
    description: str
    arguments: tuple[tuple[str, bool], ...]


@dataclass(frozen=True)
class ResourceInfo:
    uri: str
    name: str
    description: str
    mime_type: str


_sdk_loaded: asyncio.Future[None] | None = None


async def load_sdk() -> None:
    """Import the SDK once, in a thread (about a second of CPU)."""
    global _sdk_loaded
    if _sdk_loaded is None:
        _sdk_loaded = asyncio.ensure_future(asyncio.to_thread(_import_sdk))
    await asyncio.shield(_sdk_loaded)


_SDK_MODULES = ("mcp", "mcp.client.stdio", "mcp.client.streamable_http", "mcp.shared._httpx_utils")


def _import_sdk() -> None:
    for module in _SDK_MODULES:
        importlib.import_module(module)


class ServerConnection:
    """One configured server, its session and what it offers."""

    def __init__(
        self,
        server: McpServer,
        *,
        on_change: Callable[[ServerConnection], None] = lambda _c: None,
        log_dir: Path | None = None,
    ) -> None:
        self.server = server
        self.name = server.name
        self.state: ServerState = "starting"
        self.problem = ""
        """Why the server is not ready (one line, secrets removed)."""
        self.tools: tuple[ToolInfo, ...] = ()
        self.prompts: tuple[PromptInfo, ...] = ()
        self.resources: tuple[ResourceInfo, ...] = ()
        self.starts = 0
        """How many times the server was started (1 + restarts)."""
        self._on_change = on_change
        self._log_dir = log_dir
        self._client: Client | None = None
        self._dead = asyncio.Event()
        self._up = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self._secrets: list[str] = []

    # -- life -----------------------------------------------------------------------

    def start(self) -> None:
        """Start connecting in the background (no wait)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"mcp:{self.name}"
            )

    async def stop(self) -> None:
        """Close the session (a subprocess is ended by the SDK) and stop restarting."""
        self._stopping = True
        self._dead.set()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._set("stopped", "")

    async def wait_ready(self, timeout: float) -> bool:
        """Until the server is ready (True) or `timeout` passed (tests, benchmarks)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.state != "ready" and loop.time() < deadline:
            await asyncio.sleep(0.02)
        return self.state == "ready"

    def _set(self, state: ServerState, problem: str) -> None:
        changed = (state, problem) != (self.state, self.problem)
        self.state, self.problem = state, problem
        if changed:
            self._on_change(self)

    async def _run(self) -> None:
        failures = 0
        while not self._stopping:
            self._dead = asyncio.Event()
            self._up = asyncio.Event()
            self.starts += 1
            self._set("starting", "")
            loop = asyncio.get_running_loop()
            session = loop.create_task(self._session(), name=f"mcp-session:{self.name}")
            up = loop.create_task(self._up.wait())
            try:
                await asyncio.wait(
                    {session, up},
                    timeout=self.server.start_timeout,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if not up.done() and not session.done():  # a handshake that never ends
                    session.cancel()
                    self.problem = f"did not start within {self.server.start_timeout:g} s"
                with contextlib.suppress(asyncio.CancelledError):
                    await session  # until the server dies, or at once if it never started
            except asyncio.CancelledError:
                session.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await session
                raise
            finally:
                up.cancel()
                self._client = None
                self.tools = ()
            if self._stopping:
                break
            failures = 0 if self._up.is_set() else failures + 1
            pause = RETRY_SECONDS[min(failures, len(RETRY_SECONDS) - 1)]
            problem = self.problem or "stopped"
            log.info("MCP server %s: %s; starting again in %gs", self.name, problem, pause)
            self._set("failed", problem)
            await asyncio.sleep(pause)

    async def _session(self) -> None:
        await load_sdk()
        from mcp import Client

        try:
            async with Client(self._transport(), client_info=_client_info()) as client:
                await self._list(client)
                self._client = client
                self._set("ready", "")
                self._up.set()
                await self._dead.wait()  # a call saw it go, or its output ended
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # anyio wraps failures in exception groups
            self.problem = self._describe(exc)
            log.info("MCP server %s ended: %s", self.name, self.problem)

    async def _list(self, client: Client) -> None:
        caps = client.server_capabilities
        tools = await client.list_tools()
        self.tools = tuple(
            ToolInfo(t.name, clean(t.description or ""), dict(t.input_schema or {}))
            for t in tools.tools
        )
        prompts: tuple[PromptInfo, ...] = ()
        if caps is not None and caps.prompts is not None:
            with contextlib.suppress(Exception):  # optional: a failure costs only the list
                listed = await client.list_prompts()
                prompts = tuple(
                    PromptInfo(
                        p.name,
                        clean(p.description or ""),
                        tuple((a.name, bool(a.required)) for a in p.arguments or ()),
                    )
                    for p in listed.prompts
                )
        resources: tuple[ResourceInfo, ...] = ()
        if caps is not None and caps.resources is not None:
            with contextlib.suppress(Exception):
                found = await client.list_resources()
                resources = tuple(
                    ResourceInfo(
                        str(r.uri), clean(r.name), clean(r.description or ""), r.mime_type or ""
                    )
                    for r in found.resources
                )
        self.prompts, self.resources = prompts, resources

    def _transport(self) -> Any:
        server = self.server
        if server.url:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            headers = {k: expand(v) for k, v in server.headers.items()}
            self._secrets = [v for v in headers.values() if len(v) >= 4]
            http = create_mcp_http_client(headers=headers)
            return _watched(
                _owning(streamable_http_client(server.url, http_client=http), http), self._dead
            )
        from mcp.client.stdio import StdioServerParameters, stdio_client

        env = {k: expand(v) for k, v in server.env.items()}
        self._secrets = [v for v in env.values() if len(v) >= 6]
        params = StdioServerParameters(
            command=server.command or "", args=list(server.args), env=env, cwd=server.cwd
        )
        return _watched(stdio_client(params, errlog=self._errlog()), self._dead)

    def _errlog(self) -> TextIO:
        """Where the server's stderr goes: a private file beside the app's log (never the
        terminal the app draws on)."""
        if self._log_dir is not None:
            try:
                self._log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
                path = self._log_dir / f"mcp-{self.name}.log"
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                return cast(TextIO, os.fdopen(fd, "a", encoding="utf-8"))
            except OSError:
                log.warning("cannot open the log of MCP server %s", self.name, exc_info=True)
        return open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - the SDK owns it

    def _describe(self, exc: BaseException) -> str:
        """One line for people and the model, with the server's secrets removed."""
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        if (
            isinstance(exc, FileNotFoundError)
            and self.server.cwd
            and (exc.filename == self.server.cwd or not Path(self.server.cwd).is_dir())
        ):
            text = f"its folder (cwd = {self.server.cwd!r}) does not exist"
        elif isinstance(exc, FileNotFoundError):
            text = f"{self.server.command!r} was not found (is it installed and on PATH?)"
        elif isinstance(exc, TimeoutError):
            text = "timed out"
        else:
            text = str(exc) or type(exc).__name__
        for secret in self._secrets:
            text = text.replace(secret, "[redacted]")
        return redact(" ".join(text.split()))[:300]

    # -- use --------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """Call `tool`; the result as text, or `Error: …` (never raises but for a cancel)."""
        client = self._client
        if client is None or self.state != "ready":
            why = f": {self.problem}" if self.problem else ""
            return f"Error: the MCP server {self.name!r} is not running ({self.state}{why})."
        from mcp import MCPError

        try:
            async with asyncio.timeout(self.server.timeout):
                result = await client.call_tool(tool, arguments)
        except TimeoutError:
            return (
                f"Error: {self.name} did not answer {tool} within {self.server.timeout:g} s "
                "(the call was given up)."
            )
        except MCPError as exc:
            if exc.code == -32000:  # CONNECTION_CLOSED: the server died under the call
                self._dead.set()
                return (
                    f"Error: the MCP server {self.name!r} stopped during the call; "
                    "it is being started again."
                )
            return f"Error: {self._describe(exc)}"
        except Exception as exc:
            log.warning("MCP call %s.%s failed", self.name, tool, exc_info=True)
            self._dead.set()
            return f"Error: {self.name} failed: {self._describe(exc)}"
        return result_text(result)

    async def _ask(self, request: Callable[[Any], Awaitable[Any]]) -> Any:
        """One request to the running server within its timeout.

        Raises:
            RuntimeError: the server is not running or refused (the message says why).
        """
        client = self._client
        if client is None:
            raise RuntimeError(f"the MCP server {self.name!r} is not running")
        try:
            async with asyncio.timeout(self.server.timeout):
                return await request(client)
        except Exception as exc:
            raise RuntimeError(self._describe(exc)) from None

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> str:
        """The prompt's messages as one text (to put in the input box).

        Raises:
            RuntimeError: the server is not running or refused (the message says why).
        """
        got = await self._ask(lambda client: client.get_prompt(name, arguments))
        return clean("\n\n".join(_content_text(m.content) for m in got.messages))

    async def read_resource(self, uri: str) -> tuple[str, bytes]:
        """(mime type, bytes) of a resource.

        Raises:
            RuntimeError: the server is not running or refused (the message says why).
        """
        got = await self._ask(lambda client: client.read_resource(uri))
        for item in got.contents:
            mime = getattr(item, "mime_type", None) or "text/plain"
            text = getattr(item, "text", None)
            if text is not None:
                return mime, str(text).encode("utf-8")
            blob = getattr(item, "blob", None)
            if blob is not None:
                return mime, base64.b64decode(blob)
        raise RuntimeError(f"the resource {uri} is empty")


def result_text(result: Any) -> str:
    """A `CallToolResult` as the text the model reads: its text parts (other parts
    named), control characters removed, cut at `MAX_RESULT_CHARS`; `Error: …` when
    the server says the call failed."""
    text = "\n".join(_content_text(part) for part in result.content or ())
    if not text.strip() and result.structured_content is not None:
        import json

        text = json.dumps(result.structured_content, ensure_ascii=False)
    text = clean(text)
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n[… cut: the result had {len(text):,} characters]"
    if result.is_error:
        return "Error: " + (text or "the tool failed")
    return text


def _content_text(part: Any) -> str:
    kind = getattr(part, "type", "")
    if kind == "text":
        return str(part.text)
    if kind == "image":
        return f"[image: {part.mime_type}, {len(part.data) * 3 // 4:,} bytes]"
    if kind == "audio":
        return f"[audio: {part.mime_type}]"
    if kind == "resource":
        inner = part.resource
        text = getattr(inner, "text", None)
        return str(text) if text is not None else f"[resource: {inner.uri}]"
    if kind == "resource_link":
        return f"[resource: {part.uri}]"
    return f"[{kind or 'unknown'} content]"


def _client_info() -> Any:
    from mcp import Implementation

    return Implementation(name="chatui", version="0.1.0")


@contextlib.asynccontextmanager
async def _owning(transport: Any, http: Any) -> Any:
    """The HTTP transport, closing the httpx client it was given when it ends."""
    async with http, transport as streams:
        yield streams


@contextlib.asynccontextmanager
async def _watched(transport: Any, dead: asyncio.Event) -> Any:
    """The transport, with `dead` set when its incoming stream ends: a stdio server
    that exits between calls is started again before the next call needs it (the
    2026 protocol has no ping to ask an idle server with)."""
    async with transport as (read, write):
        yield _EndWatch(read, dead), write


class _EndWatch:
    """A receive stream that sets an event when it ends (everything else passes through)."""

    def __init__(self, inner: Any, ended: asyncio.Event) -> None:
        self._inner = inner
        self._ended = ended

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def __aenter__(self) -> _EndWatch:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    def __aiter__(self) -> _EndWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except BaseException:
            self._ended.set()
            raise

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except BaseException:
            self._ended.set()
            raise
