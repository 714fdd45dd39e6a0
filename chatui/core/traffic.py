"""The user's turns before the engine's own questions, on each model server (issue 22).

Where a server reports no usage when it streams (llama-cpp-python), the engine
asks it in the background for the prompt tokens of small requests (a template's
cost, a chat's count: `ChatEngine._teach_template`), each a whole call with the
chat's tools. Such a server answers one request at a time: a count asked while a
reply streams waits behind it and then holds the server, and a count still
running when the user sends delays the user's reply by its whole prompt.

So a count waits until no turn is in flight on its server (`quiet`), and a turn
that starts cancels the counts of its server not yet answered (`turn_started`):
its request goes first. A count given up this way is asked again after a later
reply (what it would teach is still missing then). A count the server has
already begun still ends there (llama-cpp-python finishes a whole call whose
client left); one that waited for the server's lock is dropped by it.

One book for the process: every engine (one per agent) may use the same server.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

__all__ = ["TRAFFIC", "Traffic"]


class Traffic:
    """Turns in flight and background counts, by server (`api_base`)."""

    def __init__(self) -> None:
        self._turns: Counter[str] = Counter()
        self._counts: dict[str, set[asyncio.Task[Any]]] = {}
        self._waiting: dict[str, list[asyncio.Future[None]]] = {}

    def turn_started(self, server: str | None) -> None:
        """A turn on `server` begins: its counts not yet answered give way."""
        if not server:
            return
        self._turns[server] += 1
        for task in list(self._counts.get(server, ())):
            task.cancel()

    def turn_ended(self, server: str | None) -> None:
        if not server or self._turns[server] <= 0:
            return
        self._turns[server] -= 1
        if self._turns[server]:
            return
        del self._turns[server]
        for waiter in self._waiting.pop(server, []):
            if not waiter.done():
                waiter.set_result(None)

    def busy(self, server: str) -> bool:
        """A turn is in flight on `server`."""
        return self._turns[server] > 0

    async def quiet(self, server: str) -> None:
        """Until no turn is in flight on `server`."""
        while self._turns[server] > 0:
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.setdefault(server, []).append(waiter)
            await waiter

    def add_count(self, server: str, task: asyncio.Task[Any]) -> None:
        """`task` asks `server` in the background: cancelled when a turn starts there."""
        tasks = self._counts.setdefault(server, set())
        tasks.add(task)

        def done(finished: asyncio.Task[Any]) -> None:
            tasks.discard(finished)
            if not tasks and self._counts.get(server) is tasks:
                del self._counts[server]

        task.add_done_callback(done)


TRAFFIC = Traffic()
"""The process's book: the engines of every agent share it."""
