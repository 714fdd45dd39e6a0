"""What a server was found to refuse, learned once per server and remembered.

Local servers differ from OpenAI's API in ways no table lists; chatui learns
them from the server's own answers, the way a context window is learned from
a context-length error (`windows.WindowBook`):

- llama-cpp-python renders tools into the prompt only with a `tool_choice`,
  and refuses to *stream* an automatic tool choice ("Automatic streaming tool
  choice is not supported"): calls with tools to that server are then made
  without streaming (the reply arrives whole).

- A template with no place for tools drops them: the prompt tokens the server
  reports are those of the request without its tools. Said once per server.

Kept per process (the model process keeps its own), per server: the
`api_base`, or the provider for hosted models.
"""

from __future__ import annotations

import re
import threading

__all__ = ["QUIRKS", "ServerQuirks", "refuses_streamed_tools"]

_STREAMED_TOOLS_REFUSED = re.compile(r"streaming tool choice is not supported", re.IGNORECASE)


def refuses_streamed_tools(message: str) -> bool:
    """True when an error says the server cannot stream a tool choice."""
    return bool(_STREAMED_TOOLS_REFUSED.search(message or ""))


class ServerQuirks:
    """Servers' learned refusals; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._unstreamed_tools: set[str] = set()
        self._dropped_told: set[str] = set()
        self._held: dict[str, str] = {}

    def streams_tools(self, server: str) -> bool:
        """False once `server` refused to stream a tool choice."""
        with self._lock:
            return server not in self._unstreamed_tools

    def learn_unstreamed_tools(self, server: str) -> None:
        with self._lock:
            self._unstreamed_tools.add(server)

    def told_dropped_tools(self, server: str) -> bool:
        with self._lock:
            return server in self._dropped_told

    def tell_dropped_tools(self, server: str) -> bool:
        """True the first time only: a server's dropped tools are reported once a run."""
        with self._lock:
            if server in self._dropped_told:
                return False
            self._dropped_told.add(server)
            return True

    def hold_notice(self, server: str, text: str) -> None:
        """A notice found in the background (a probe), said after the next turn."""
        with self._lock:
            self._held[server] = text

    def take_notice(self, server: str) -> str | None:
        with self._lock:
            return self._held.pop(server, None)

    def clear(self) -> None:
        with self._lock:
            self._unstreamed_tools.clear()
            self._dropped_told.clear()
            self._held.clear()


QUIRKS = ServerQuirks()
"""The process's learned refusals."""
