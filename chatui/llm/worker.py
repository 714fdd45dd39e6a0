"""Model calls in a process of their own, so a streaming reply never stalls the screen.

LiteLLM and the OpenAI SDK spend about a millisecond of CPU on every
streamed chunk (pydantic models, LiteLLM's wrappers). Three replies at 300
tokens/s each would keep the app's event loop busy nearly all the time,
and a burst (a fast local server) would delay the first token's frame by
the whole burst. `StreamWorker` runs `stream_completion` in a child
process (`python -m chatui.llm.worker_main`) that imports LiteLLM there,
on the other core; the app receives finished chunks as JSON lines (`wire`;
a call's text joined per `worker_main.BATCH_SECONDS`, the first at once), and
does only its own work: storing and drawing.

Design notes:
- One worker per app process, started early (`start()`) so LiteLLM is
  loaded before the first send; restarted on the next call if it died.
- `stream()` has `stream_completion`'s signature and contract: chunks,
  then the end, or an `LLMError`. Closing the generator cancels the call
  in the worker. A worker that dies mid-reply ends the call with an
  `LLMError` ("connection"): the engine keeps what arrived, as for any
  provider failure.
- The reading thread hands lines to the loop that asked
  (`call_soon_threadsafe`, once per call and read), so one worker serves any
  event loop; text queued together is read as one chunk.
- The environment is sent with a call when it changed since the last one:
  keys come from the environment, and a key exported after launch (or a
  test's variable) must reach the call. It travels over the pipe only,
  never to a file or a log.
- When the app ends, however it ends (a killed terminal included), the
  process's stdin closes: it exits, or stays warm as the spare for the next
  app (`spare`), which adopts it over a socket instead of starting its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import IO, Any

from . import spare
from .chunks import Chunk, ChunkStream, ReasoningChunk, TextChunk
from .env import DEFAULT_TIMEOUT
from .errors import LLMError, redact
from .wire import decode

__all__ = ["StreamWorker", "shared_worker"]

log = logging.getLogger(__name__)

MAX_FAILED_STARTS = 2


@dataclass
class _Call:
    """One call in flight: what the reading thread hands over, drained by `stream()`."""

    loop: asyncio.AbstractEventLoop
    process: subprocess.Popen[bytes] | _Adopted | None = None
    items: deque[Chunk | LLMError | None] = field(default_factory=deque)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    number: int = 0
    ended: bool = False
    streamed: bool = False
    answer: str | None = None
    """A `key` request's answer (`StreamWorker.key_problem`)."""

    def push(self, *items: Chunk | LLMError | None) -> None:
        """On the call's loop: queue `items` (None: the call ended)."""
        self.items.extend(items)
        self.ready.set()


_let_go: list[subprocess.Popen[bytes]] = []
"""Model processes let go to wait as the spare: kept, so that no warning says they were
dropped while running."""


class _Adopted:
    """A spare model process (`spare`) reached over its socket, with the surface of
    `Popen` the worker uses: requests to `stdin`, lines from `stdout`."""

    def __init__(self, connection: socket.socket, pid: int) -> None:
        self._connection = connection
        self.pid = pid
        self.stdin: IO[bytes] | None = connection.makefile("wb")
        self.stdout: IO[bytes] | None = connection.makefile("rb")
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        """Let it go (it waits as the spare again); no exit code: it lives on."""
        self.kill()
        return None

    def kill(self) -> None:
        if self.returncode is None:
            self.returncode = 0
            with contextlib.suppress(OSError):
                self._connection.shutdown(socket.SHUT_RDWR)
            self._connection.close()


class StreamWorker:
    """The model process and the calls running in it."""

    def __init__(self, python: str | None = None, batch_seconds: float | None = None) -> None:
        self.python = python or sys.executable
        self.batch_seconds = batch_seconds
        """The least time between two lines of a call's text (None: the model process's
        `BATCH_SECONDS`)."""
        self.lines = 0
        """Lines read from the model process (its messages)."""
        self._process: subprocess.Popen[bytes] | _Adopted | None = None
        self._calls: dict[int, _Call] = {}
        self._next = 0
        self._lock = threading.Lock()
        self._sent_env: dict[str, str] | None = None
        self.ready = threading.Event()
        """Set once the running process has loaded LiteLLM (calls are quick from then on)."""
        self.failed_starts = 0
        self.broken = False
        """The process failed to start `MAX_FAILED_STARTS` times: calls run in this
        process instead (slower to draw, never lost)."""

    # -- the process ------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start the worker now (it loads LiteLLM at once); no-op while it runs.

        Raises:
            LLMError: the process could not be started.
        """
        with self._lock:
            if self.running:
                return
            if self.python == sys.executable and self._adopt():
                return
            try:
                process = subprocess.Popen(
                    # -P: `-m` would put the working folder first on the path, and a
                    # folder holding another `chatui` (a checkout) would run its code.
                    [self.python, "-P", "-m", "chatui.llm.worker_main"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    # Its stderr would scribble over the terminal UI; it sends its
                    # warnings as lines instead (logged here).
                    stderr=subprocess.DEVNULL,
                    env=self._child_env(),
                    start_new_session=True,  # ctrl+c in the terminal is the app's to handle
                )
            except OSError as exc:
                self._start_failed()
                raise LLMError(
                    "unknown",
                    "The model process could not be started",
                    str(exc),
                    "Check that Python can run from this folder, then press ctrl+r.",
                ) from None
            self.ready.clear()
            self._attach(process, dict(os.environ))

    def _adopt(self) -> bool:
        """Take the spare left warm by an app that ended (True), ready at once."""
        found = spare.adopt()
        if found is None:
            return False
        self._attach(_Adopted(*found), None)  # no environment held: the first call sends it
        self.ready.set()
        return True

    def _attach(
        self, process: subprocess.Popen[bytes] | _Adopted, sent_env: dict[str, str] | None
    ) -> None:
        """Make `process` the worker's and read its lines on a thread of their own."""
        self._process = process
        self._sent_env = sent_env
        assert process.stdout is not None
        threading.Thread(
            target=self._read, args=(process, process.stdout), name="model-worker", daemon=True
        ).start()

    @staticmethod
    def _child_env() -> dict[str, str]:
        env = dict(os.environ)
        # The child imports this package: the checkout it runs from must win.
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        return env

    def close(self) -> None:
        """Let the worker go (calls in flight end with an error): it exits, or, warm,
        stays as the spare for the next app (`spare`)."""
        with self._lock:
            process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
        if isinstance(process, subprocess.Popen) and self.ready.is_set() and spare.spare_seconds():
            _let_go.append(process)  # it decides: the spare, or its exit (reaped by init)
            return
        try:
            process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            process.kill()

    def _send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False).encode() + b"\n"
        with self._lock:
            process = self._process
            if process is None or process.stdin is None:
                raise BrokenPipeError("the model process is not running")
            process.stdin.write(line)
            process.stdin.flush()

    def _read(self, process: subprocess.Popen[bytes] | _Adopted, out: IO[bytes]) -> None:
        """The reading thread: the lines of each read to the loop of their call (one
        hand-over per call and read), until the pipe ends."""
        rest = b""
        while True:
            data = out.read1(1 << 16)  # type: ignore[attr-defined]  # what the pipe holds
            lines = (rest + data).split(b"\n")
            rest = lines.pop() if data else b""
            batches: dict[int, list[Chunk | LLMError | None]] = {}
            for line in lines:
                if line.strip():
                    self._line(line, batches)
            for number, items in batches.items():
                call = self._calls.get(number)
                if call is not None:
                    self._hand_over(call, *items)
            if not data:
                break
        code = process.wait()
        with self._lock:
            if self._process is process:
                self._process = None
                if not self.ready.is_set():
                    self._start_failed()
        for call in list(self._calls.values()):
            if call.process is process and not call.ended:
                self._hand_over(call, self._died(code, call.streamed))

    def _line(self, line: bytes, batches: dict[int, list[Chunk | LLMError | None]]) -> None:
        """One line from the model process: a call's item goes to its batch."""
        self.lines += 1
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            log.warning("the model process sent a line chatui cannot read")
            return
        if data.get("t") == "ready":
            self.ready.set()
            return
        if data.get("t") == "log":
            log.log(int(data.get("level", logging.WARNING)), "model process: %s", data["msg"])
            return
        number = data.get("id", -1)
        call = self._calls.get(number)
        if call is None:
            return  # cancelled meanwhile: its remaining lines are dropped
        if data.get("t") == "key":
            problem = data.get("problem")
            call.answer = str(problem) if problem else None
            batches.setdefault(number, []).append(None)
            return
        try:
            item = None if data.get("t") == "end" else decode(data)
        except (KeyError, ValueError, TypeError):
            item = LLMError(
                "bad_response",
                "The model process sent a reply chatui could not read",
                hint="What arrived is kept. Press ctrl+r to regenerate.",
                partial=call.streamed,
            )
        batches.setdefault(number, []).append(item)

    def _start_failed(self) -> None:
        self.failed_starts += 1
        if self.failed_starts >= MAX_FAILED_STARTS and not self.broken:
            self.broken = True
            log.warning(
                "the model process failed to start %d times; model calls run in the app",
                self.failed_starts,
            )

    @staticmethod
    def _hand_over(call: _Call, *items: Chunk | LLMError | None) -> None:
        with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
            call.loop.call_soon_threadsafe(call.push, *items)

    @staticmethod
    def _died(code: int | None, partial: bool) -> LLMError:
        how = f" (exit code {code})" if code is not None else ""
        return LLMError(
            "connection",
            "The model process stopped",
            f"chatui's model process ended unexpectedly{how}.",
            "What arrived is kept. Press ctrl+r to try again (a new process starts).",
            partial=partial,
        )

    # -- calls ------------------------------------------------------------------

    def stream(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        api_base: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = 2,
        params: dict[str, Any] | None = None,
    ) -> ChunkStream:
        """`stream_completion`, run in the worker: its chunks as they come (the view
        they are drawn in joins what arrives together: one batching, there).

        The request is written to the worker before this returns, not on the first
        `anext()`: the caller can store and draw what can wait while the request
        travels. Close the stream (`aclose()`) when done with it, read to the end or
        not: closing early cancels the call in the worker.

        Raises (while iterating):
            LLMError: anything that went wrong, already readable.
        """
        if self.broken:
            from . import stream_completion

            return stream_completion(
                model,
                messages,
                tools=tools,
                api_base=api_base,
                timeout=timeout,
                max_retries=max_retries,
                params=params,
            )
        args = {
            "model": model,
            "messages": messages,
            "tools": tools,
            "api_base": api_base,
            "timeout": timeout,
            "max_retries": max_retries,
            "params": params,
        }
        if self.batch_seconds is not None:
            args["batch"] = self.batch_seconds
        return _Stream(self, self._begin("stream", args))

    async def key_problem(self, model: str, api_base: str | None) -> str | None:
        """`llm.key_problem`, answered by the model process, where LiteLLM is loaded
        while the app may still be importing its own (a spare's: seconds sooner).

        Raises:
            LLMError: the process could not answer.
        """
        call = self._begin("key", {"model": model, "api_base": api_base})
        try:
            await call.ready.wait()
            item = call.items.popleft()
        finally:
            call.ended = True
            self._end(call)
        if isinstance(item, LLMError):
            raise item
        return call.answer

    def _begin(self, op: str, args: dict[str, Any]) -> _Call:
        """Register a call and write its request; a failure to send is the call's error."""
        call = _Call(asyncio.get_running_loop())
        with self._lock:
            self._next += 1
            call.number = self._next
        request: dict[str, Any] = {"op": op, "id": call.number, "args": args}
        self._calls[call.number] = call
        try:
            self.start()
            call.process = self._process
            if dict(os.environ) != self._sent_env:
                self._sent_env = dict(os.environ)
                request["env"] = self._sent_env
            self._send(request)
        except LLMError as error:
            call.push(error)
        except (OSError, ValueError) as exc:
            call.push(
                LLMError(
                    "connection",
                    "The model process is not answering",
                    redact(str(exc)),
                    "Press ctrl+r to try again (a new process starts).",
                )
            )
        return call

    def _end(self, call: _Call) -> None:
        """Forget a call; one closed before its end is cancelled in the worker."""
        if self._calls.pop(call.number, None) is None:
            return
        if not call.ended:
            call.ended = True
            with contextlib.suppress(OSError, ValueError):
                self._send({"op": "cancel", "id": call.number})


class _Stream:
    """The chunks of one call in the worker (`StreamWorker.stream`), as an async
    iterator with `aclose()`: a class, not an async generator, because the request
    is already out when it is made, and closing a generator that never started
    would not run its clean-up (the call would go on in the worker)."""

    def __init__(self, worker: StreamWorker, call: _Call) -> None:
        self._worker = worker
        self._call = call

    def __aiter__(self) -> _Stream:
        return self

    async def __anext__(self) -> Chunk:
        call = self._call
        if call.ended:
            raise StopAsyncIteration
        try:
            await call.ready.wait()
        except BaseException:  # cancelled while waiting: the caller closes, or we do
            self._worker._end(call)
            raise
        item = _joined(call.items)
        if not call.items:
            call.ready.clear()
        if item is None:
            call.ended = True
            self._worker._end(call)
            raise StopAsyncIteration
        if isinstance(item, LLMError):
            call.ended = True
            self._worker._end(call)
            raise item
        call.streamed = True
        return item

    async def aclose(self) -> None:
        self._worker._end(self._call)


def _joined(items: deque[Chunk | LLMError | None]) -> Chunk | LLMError | None:
    """The first item, with the text (or reasoning) chunks right behind it joined to it:
    what waited together is handled as one chunk."""
    item = items.popleft()
    if isinstance(item, TextChunk):
        parts = [item.text]
        while items and isinstance(items[0], TextChunk):
            parts.append(items.popleft().text)  # type: ignore[union-attr]
        return TextChunk("".join(parts)) if len(parts) > 1 else item
    if isinstance(item, ReasoningChunk):
        parts = [item.text]
        while items and isinstance(items[0], ReasoningChunk):
            parts.append(items.popleft().text)  # type: ignore[union-attr]
        return ReasoningChunk("".join(parts)) if len(parts) > 1 else item
    return item


_shared: StreamWorker | None = None


def shared_worker() -> StreamWorker:
    """The process's one worker (created on first use; it starts on its first call)."""
    global _shared
    if _shared is None:
        _shared = StreamWorker()
    return _shared
