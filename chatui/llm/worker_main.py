"""The model process (`python -m chatui.llm.worker_main`): see `worker.StreamWorker`.

Reads one JSON request a line on stdin (`stream`, `cancel`), runs each
`stream` as a task of its own event loop, and writes its chunks as lines
(`wire`) on the stdout it was started with. Anything else that would print
to stdout (a library's banner) goes to stderr, which the app discards;
warnings travel as `log` lines. When stdin closes (the app is gone), it
exits, or, warm, waits as the spare for the next app (`spare`): then the
same requests come over the adopting app's socket, and its lines go there.

A call's text goes out at most every `BATCH_SECONDS` (`_Outbox`): a local
model streams a token every few milliseconds, and every line costs the app a
wake-up, a decoded chunk and an event, where its reply's view draws at most
every `widgets.message_view.FLUSH_SECONDS` (100 ms) anyway. The first text,
and text after a quiet spell, goes at once; what comes sooner waits for the
slot and goes as one chunk. Anything
else (a tool call, why the model stopped, usage, an error, the end) goes at
once, with the text before it, in one write.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import sys
import threading
from typing import IO, Any

from . import key_problem, spare, stream_completion, warm_up
from .chunks import Chunk, ReasoningChunk, TextChunk
from .env import warm_tokenizers
from .errors import LLMError, map_error, redact
from .warm_call import warm_call
from .wire import END, encode


class _Lines(logging.Handler):
    """Warnings and errors of the process, sent to the app's log as lines."""

    def __init__(self, worker: Worker) -> None:
        super().__init__(logging.WARNING)
        self.worker = worker

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = redact(f"{record.name}: {record.getMessage()}")
            line = json.dumps({"t": "log", "level": record.levelno, "msg": message}) + "\n"
            self.worker.write(line.encode())
        except Exception:  # logging must never end the process
            pass


BATCH_SECONDS = 0.05
"""The least time between two lines of a call's text (no more than the reply's view
waits between two draws, `widgets.message_view.FLUSH_SECONDS`, so the view's slots
are never missed). A request may set its own (`batch`, seconds)."""


class _Outbox:
    """One call's lines: text and reasoning joined per `every` seconds, the first at once."""

    def __init__(self, worker: Worker, number: int, every: float) -> None:
        self.worker = worker
        self.number = number
        self.every = every
        self.waiting: list[Chunk] = []
        self.sent_at = float("-inf")
        self.timer: asyncio.TimerHandle | None = None

    def add(self, chunk: Chunk) -> None:
        if not isinstance(chunk, TextChunk | ReasoningChunk):
            self.send(encode(chunk, self.number))
            return
        loop = self.worker.loop
        if not self.waiting and loop.time() - self.sent_at >= self.every:
            self.send(encode(chunk, self.number))
            return
        self.waiting.append(chunk)
        if self.timer is None:
            self.timer = loop.call_at(self.sent_at + self.every, self.send)

    def send(self, *lines: bytes) -> None:
        """What waits, joined, then `lines`: one write."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        out = [encode(chunk, self.number) for chunk in _joined(self.waiting)]
        self.waiting.clear()
        out.extend(lines)
        if out:
            self.worker.write(b"".join(out))
            self.sent_at = self.worker.loop.time()

    def drop(self) -> None:
        """The app stopped listening: nothing more goes out."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.waiting.clear()


def _joined(chunks: list[Chunk]) -> list[Chunk]:
    """Neighbouring text chunks as one, and reasoning chunks as one (order kept)."""
    out: list[Chunk] = []
    for chunk in chunks:
        last = out[-1] if out else None
        if isinstance(chunk, TextChunk) and isinstance(last, TextChunk):
            out[-1] = TextChunk(last.text + chunk.text)
        elif isinstance(chunk, ReasoningChunk) and isinstance(last, ReasoningChunk):
            out[-1] = ReasoningChunk(last.text + chunk.text)
        else:
            out.append(chunk)
    return out


class Worker:
    def __init__(self, out: int) -> None:
        self.out: int | None = out
        """Where lines go: the app's pipe, an adopting app's socket; None while no app
        listens (between apps, as the spare)."""
        self.loop = asyncio.new_event_loop()
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.warm = False
        """LiteLLM is loaded and a first call rehearsed: worth keeping as the spare."""
        self.stamp = spare.current_stamp()
        """The code this process runs, as it was when it started."""
        self._connection: socket.socket | None = None

    def write(self, line: bytes) -> None:
        out = self.out
        if out is None:
            return
        view = memoryview(line)
        try:
            while view:
                view = view[os.write(out, view) :]
        except OSError:  # the app went away: what it would read has nowhere to go
            pass

    def handle(self, request: dict[str, Any]) -> None:
        """On the loop: start or cancel a call."""
        number = int(request.get("id", -1))
        if request.get("op") == "cancel":
            task = self.tasks.get(number)
            if task is not None:
                task.cancel()
            return
        if request.get("op") not in ("stream", "key"):
            return
        env = request.get("env")
        if isinstance(env, dict):
            os.environ.clear()
            os.environ.update({str(k): str(v) for k, v in env.items()})
        if request.get("op") == "key":
            self.answer_key(number, request.get("args") or {})
            return
        task = self.loop.create_task(self.run(number, request.get("args") or {}))
        self.tasks[number] = task
        task.add_done_callback(lambda _: self.tasks.pop(number, None))

    def answer_key(self, number: int, args: dict[str, Any]) -> None:
        """Whether the model's key is set (`key_problem`, LiteLLM loaded here), for an
        app still importing LiteLLM itself."""
        try:
            api_base = args.get("api_base")
            problem = key_problem(str(args.get("model", "")), str(api_base) if api_base else None)
        except Exception as exc:  # the app's own check is the fallback: say why
            self.write(encode(map_error(exc, str(args.get("model", ""))), number))
            return
        self.write(json.dumps({"t": "key", "id": number, "problem": problem}).encode() + b"\n")

    async def run(self, number: int, args: dict[str, Any]) -> None:
        model = str(args.get("model", ""))
        batch = args.get("batch")
        outbox = _Outbox(self, number, float(batch) if batch is not None else BATCH_SECONDS)
        try:
            async for chunk in stream_completion(
                model,
                list(args.get("messages") or []),
                tools=args.get("tools"),
                api_base=args.get("api_base"),
                timeout=float(args.get("timeout") or 120.0),
                max_retries=int(args.get("max_retries") or 0),
                params=args.get("params") if isinstance(args.get("params"), dict) else None,
            ):
                outbox.add(chunk)
        except asyncio.CancelledError:
            outbox.drop()
            return  # the app stopped listening: nothing to say
        except LLMError as error:
            outbox.send(encode(error, number))  # the text before it first
            return
        except Exception as exc:  # a bug here must not end the other calls
            outbox.send(encode(map_error(exc, model, api_base=args.get("api_base")), number))
            return
        outbox.send(encode(END, number))

    def read(self) -> None:
        """The requests thread: requests to the loop. When the app goes, the process
        waits as the spare for the next app (`spare`), or exits."""
        source: IO[bytes] = sys.stdin.buffer
        while True:
            for line in source:
                try:
                    request = json.loads(line)
                except ValueError:
                    continue
                if isinstance(request, dict):
                    self.loop.call_soon_threadsafe(self.handle, request)
            # The app closed the pipe or died: nothing more will be asked. In the middle
            # of the warm-up, exit now: finishing LiteLLM's import (seconds of CPU) would
            # only compete with what runs next on the machine (the app again). Warm, its
            # calls stop and it waits as the spare for the next app.
            self.out = None
            self._close_connection()
            if not self.warm:
                os._exit(0)
            asyncio.run_coroutine_threadsafe(self._cancel_all(), self.loop).result()
            connection = spare.wait_for_adopter(self.stamp, spare.spare_seconds())
            if connection is None:
                os._exit(0)
            self._connection = connection
            source = connection.makefile("rb")
            self.out = connection.fileno()
            self.write(json.dumps({"t": "ready", "pid": os.getpid()}).encode() + b"\n")

    async def _cancel_all(self) -> None:
        """The app that asked is gone: its calls stop, and none of their lines can reach
        the next app (whose calls are numbered from 1 again)."""
        tasks = list(self.tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _close_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(OSError):
                connection.close()


def main() -> None:
    out = os.dup(1)  # the app's pipe, for our lines only
    os.dup2(2, 1)  # print() anywhere else lands on stderr (discarded by the app)
    worker = Worker(out)
    logging.basicConfig(level=logging.WARNING, handlers=[_Lines(worker)])
    threading.Thread(target=worker.read, name="requests", daemon=True).start()
    try:
        warm_up(tokenizers=False)  # LiteLLM, before the first call needs it
        # The first call's own set-up (hundreds of ms), rehearsed on a loopback server.
        worker.loop.run_until_complete(warm_call())
        worker.warm = True
    except Exception:
        logging.getLogger(__name__).warning("warming up LiteLLM failed", exc_info=True)
    worker.write(b'{"t": "ready"}\n')
    # The tokenizer tables only a stream whose server sent no usage needs, at its end
    # (gpt-4o's, ~0.4 s of CPU): loaded after "ready", so a message sent during the
    # warm-up (the first one after launch) gets its first words that much sooner.
    threading.Thread(target=warm_tokenizers, name="tokenizers", daemon=True).start()
    try:
        worker.loop.run_forever()
    finally:
        os._exit(0)  # daemon threads and LiteLLM's own: nothing left to wait for


if __name__ == "__main__":
    main()
