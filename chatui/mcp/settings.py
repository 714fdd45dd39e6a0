"""The `[mcp.servers.NAME]` tables of the config file, read into typed settings.

```toml
[mcp.servers.time]
command = "mcp-server-time"            # or url = "http://…/mcp" (+ headers)
args = ["--local-timezone", "UTC"]
approval = "always"                    # ask | always | never
[mcp.servers.time.tools]
convert_time = "ask"                   # per tool, over the server's
```

Secrets never live in the file: a header or an `env` value may name an
environment variable as `${NAME}`, read when the server starts. A server
gets only the environment its table names (on top of the SDK's basics:
PATH, HOME, USER, SHELL, TERM, LOGNAME), never the app's API keys.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

__all__ = [
    "APPROVALS",
    "Approval",
    "McpServer",
    "expand",
    "parse_mcp",
]

Approval: TypeAlias = Literal["ask", "always", "never"]
APPROVALS: tuple[Approval, ...] = ("ask", "always", "never")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*(?:_[A-Za-z0-9-]+)*$")
"""Letters, digits, `-` and single `_`: `NAME__tool` splits back unambiguously."""
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_KNOWN = {
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "approval",
    "tools",
    "timeout",
    "start_timeout",
}
_KNOWN_NAMES = ", ".join(sorted(_KNOWN))


@dataclass(frozen=True)
class McpServer:
    """One MCP server the app starts (stdio) or connects to (streamable HTTP)."""

    name: str
    command: str | None = None
    """The program to run (stdio transport)."""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    """The only variables the server gets beyond the basics (`${NAME}` reads the app's)."""
    cwd: str | None = None
    url: str | None = None
    """A streamable HTTP endpoint (instead of `command`)."""
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    """Sent with every HTTP request (`${NAME}` reads the app's environment); never
    logged or stored."""
    approval: Approval = "ask"
    """Whether a call runs without asking: ask (the default), always, never."""
    tools: dict[str, Approval] = field(default_factory=dict)
    """Per-tool approval, over the server's."""
    timeout: float = 60.0
    """Seconds a call may take before it is given up (the model reads that it timed out)."""
    start_timeout: float = 30.0
    """Seconds a start (program launch and handshake) may take before it is tried again."""

    def approval_for(self, tool: str) -> Approval:
        return self.tools.get(tool, self.approval)

    @property
    def where(self) -> str:
        """What the server is, for people: its command or its URL (no secrets)."""
        if self.url:
            return self.url
        return " ".join([self.command or "", *self.args]).strip()


def expand(value: str) -> str:
    """`value` with each `${NAME}` replaced by the app's environment variable ("" if unset)."""
    return _VARIABLE.sub(lambda m: os.environ.get(m.group(1), ""), value)


def _strings(where: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"{where} must be a table of strings")
    return dict(value)


def _approval(where: str, value: Any) -> Approval:
    if value not in APPROVALS:
        raise ValueError(f"{where} must be one of {', '.join(APPROVALS)}, not {value!r}")
    return value  # checked above


def _server(name: str, data: Any) -> McpServer:
    where = f"mcp.servers.{name}"
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a table")
    if not _NAME.match(name) or len(name) > 30:
        raise ValueError(
            f"{where}: a server name is letters, digits, '-' and single '_' (at most 30)"
        )
    extra = sorted(set(data) - _KNOWN)
    if extra:
        raise ValueError(f"{where}: unknown setting {extra[0]!r} (known: {_KNOWN_NAMES})")
    command, url = data.get("command"), data.get("url")
    if (command is None) == (url is None):
        raise ValueError(f"{where} needs either command (a program to run) or url")
    if command is not None and (not isinstance(command, str) or not command.strip()):
        raise ValueError(f"{where}.command must be a program name")
    if url is not None and (not isinstance(url, str) or not re.match(r"^https?://", url)):
        raise ValueError(f"{where}.url must be an http:// or https:// URL")
    args = data.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError(f"{where}.args must be a list of strings")
    cwd = data.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ValueError(f"{where}.cwd must be a string")
    timeouts = {}
    for key, default in (("timeout", 60.0), ("start_timeout", 30.0)):
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ValueError(f"{where}.{key} must be a positive number of seconds")
        timeouts[key] = float(value)
    tools = data.get("tools", {})
    if not isinstance(tools, dict):
        raise ValueError(f"{where}.tools must be a table of tool = approval")
    return McpServer(
        name=name,
        command=command.strip() if command else None,
        args=tuple(args),
        env=_strings(f"{where}.env", data.get("env", {})),
        cwd=cwd,
        url=url,
        headers=_strings(f"{where}.headers", data.get("headers", {})),
        approval=_approval(f"{where}.approval", data.get("approval", "ask")),
        tools={
            str(tool): _approval(f"{where}.tools.{tool}", value) for tool, value in tools.items()
        },
        **timeouts,
    )


def parse_mcp(value: Any) -> tuple[McpServer, ...]:
    """The servers of an `[mcp]` table.

    Raises:
        ValueError: a setting is unknown or has the wrong type (the message says which).
    """
    if not isinstance(value, dict):
        raise ValueError("mcp must be a table ([mcp.servers.NAME])")
    extra = sorted(set(value) - {"servers"})
    if extra:
        raise ValueError(f"mcp: unknown setting {extra[0]!r} (known: servers)")
    servers = value.get("servers", {})
    if not isinstance(servers, dict):
        raise ValueError("mcp.servers must be a table of [mcp.servers.NAME] tables")
    return tuple(_server(name, data) for name, data in servers.items())
