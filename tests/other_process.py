"""Another process on the app's database: a real Python child writing through the
store API, as a second chatui would (`tests/test_live_processes.py`, and
`bench/live_bench.py`'s figure of how soon the app shows it)."""

from __future__ import annotations

import asyncio
import sys
import time

__all__ = ["WRITER", "Writer"]

WRITER = r"""
import asyncio, sys
from store import SessionManager, Store, StoreContextProvider

store = Store(sys.argv[1])
manager = SessionManager(store)
for line in sys.stdin:
    command, _, arg = line.strip().partition(" ")
    if command == "message":
        msg = {"id": arg, "role": "user", "parts": [{"type": "text", "text": "from afar " + arg}]}
        asyncio.run(manager.append(sys.argv[2], msg))
    elif command == "memory":
        asyncio.run(StoreContextProvider(store, "global", "memory").set(arg))
    elif command == "chat":
        manager.create(arg)
    elif command == "reply":  # a reply streaming here, as the app's engine writes it
        from chatui.core.replies import ReplyWriter
        reply = ReplyWriter(manager.get_session(sys.argv[2]), "demo", 0.0)
        asyncio.run(reply.start(arg))
        reply.add_text("Half of the answer")
        reply.flush()
    elif command == "finish":
        reply.add_text(" and the rest.")
        reply.finish("complete")
    print("done", flush=True)
store.close()
"""


class Writer:
    """The other process: one command a line, "done" once it is committed."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, location: str, session_id: str) -> Writer:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            WRITER,
            location,
            session_id,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        return cls(proc)

    async def do(self, command: str) -> float:
        """Run one write in the other process; the time it was committed."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{command}\n".encode())
        await self.proc.stdin.drain()
        line = await asyncio.wait_for(self.proc.stdout.readline(), 60)
        assert line.strip() == b"done", line
        return time.monotonic()

    async def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await asyncio.wait_for(self.proc.wait(), 30)
