"""A tiny stdio MCP server (the official SDK's `MCPServer`) for the faults no real
server shows on demand: a crash mid-call, a call that never answers. It also
reports which environment variables it got, and offers a prompt and a resource.

Run as `python tests/mcp_faulty_server.py`.
"""

from __future__ import annotations

import os

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("faulty")


@server.tool(description="Echo the text back")
def echo(text: str) -> str:
    return text


@server.tool(description="Crash the server process in the middle of the call")
def crash() -> str:
    os._exit(3)


@server.tool(description="Never answer")
async def hang() -> str:
    await anyio.sleep(3600)
    return "late"


@server.tool(description="Names of the environment variables this server was started with")
def env_names() -> str:
    return " ".join(sorted(os.environ))


@server.tool(description="Text with terminal escape sequences in it ([/] is no markup)")
def escapes() -> str:
    return "red \x1b[31mtext\x1b[0m and a title \x1b]0;pwned\x07 bell\x07 done"


@server.prompt(description="Review some code")
def review(code: str) -> str:
    return f"Please review this code:\n{code}"


@server.resource("note://hello", description="A short note", mime_type="text/plain")
def hello() -> str:
    return "hello from a resource"


def serve_http() -> None:
    """Streamable HTTP on 127.0.0.1, a port the system picks (printed first); with
    EXPECT_TOKEN set, a request without `Authorization: Bearer <token>` gets a 401."""
    import socket
    import sys

    import uvicorn
    from starlette.middleware.base import BaseHTTPMiddleware
    from starlette.responses import PlainTextResponse

    app = server.streamable_http_app()
    expected = os.environ.get("EXPECT_TOKEN")

    async def check(request, call_next):  # type: ignore[no-untyped-def]
        if expected and request.headers.get("authorization") != f"Bearer {expected}":
            return PlainTextResponse("unauthorized", status_code=401)
        return await call_next(request)

    app.add_middleware(BaseHTTPMiddleware, dispatch=check)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    sys.stdout.flush()
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    import sys

    if "--http" in sys.argv:
        serve_http()
    else:
        server.run()
