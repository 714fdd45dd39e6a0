"""The model process (`python -m chatui.llm.worker_main`): see `worker.StreamWorker`.

Reads one JSON request a line on stdin (`stream`, `cancel`), runs each
`stream` as a task of its own event loop, and writes each chunk as a line
(`wire`) on the stdout it was started with. Anything else that would print
to stdout (a library's banner) goes to stderr, which the app discards;
warnings travel as `log` lines. It exits when stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
from typing import Any

from . import stream_completion, warm_up
from .errors import LLMError, map_error, redact
from .warm_call import warm_call
from .wire import END, encode


class _Lines(logging.Handler):
    """Warnings and errors of the process, sent to the app's log as lines."""

    def __init__(self, out: int) -> None:
        super().__init__(logging.WARNING)
        self.out = out

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = redact(f"{record.name}: {record.getMessage()}")
            line = json.dumps({"t": "log", "level": record.levelno, "msg": message}) + "\n"
            os.write(self.out, line.encode())
        except Exception:  # logging must never end the process
            pass


class Worker:
    def __init__(self, out: int) -> None:
        self.out = out
        self.loop = asyncio.new_event_loop()
        self.tasks: dict[int, asyncio.Task[None]] = {}

    def write(self, line: bytes) -> None:
        view = memoryview(line)
        while view:
            view = view[os.write(self.out, view) :]

    def handle(self, request: dict[str, Any]) -> None:
        """On the loop: start or cancel a call."""
        number = int(request.get("id", -1))
        if request.get("op") == "cancel":
            task = self.tasks.get(number)
            if task is not None:
                task.cancel()
            return
        if request.get("op") != "stream":
            return
        env = request.get("env")
        if isinstance(env, dict):
            os.environ.clear()
            os.environ.update({str(k): str(v) for k, v in env.items()})
        task = self.loop.create_task(self.run(number, request.get("args") or {}))
        self.tasks[number] = task
        task.add_done_callback(lambda _: self.tasks.pop(number, None))

    async def run(self, number: int, args: dict[str, Any]) -> None:
        model = str(args.get("model", ""))
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
                self.write(encode(chunk, number))
        except asyncio.CancelledError:
            return  # the app stopped listening: nothing to say
        except LLMError as error:
            self.write(encode(error, number))
            return
        except Exception as exc:  # a bug here must not end the other calls
            self.write(encode(map_error(exc, model, api_base=args.get("api_base")), number))
            return
        self.write(encode(END, number))

    def read(self) -> None:
        """The stdin thread: requests to the loop; the end of stdin stops the process."""
        for line in sys.stdin.buffer:
            try:
                request = json.loads(line)
            except ValueError:
                continue
            if isinstance(request, dict):
                self.loop.call_soon_threadsafe(self.handle, request)
        # The app closed the pipe or died: nothing more will be asked. Exit now, even in
        # the middle of the warm-up: finishing LiteLLM's import (seconds of CPU) would
        # only compete with what runs next on the machine (the app started again).
        os._exit(0)


def main() -> None:
    out = os.dup(1)  # the app's pipe, for our lines only
    os.dup2(2, 1)  # print() anywhere else lands on stderr (discarded by the app)
    logging.basicConfig(level=logging.WARNING, handlers=[_Lines(out)])
    worker = Worker(out)
    threading.Thread(target=worker.read, name="requests", daemon=True).start()
    try:
        warm_up()  # LiteLLM and its tokenizer tables, before the first call needs them
        # The first call's own set-up (hundreds of ms), rehearsed on a loopback server.
        worker.loop.run_until_complete(warm_call())
    except Exception:
        logging.getLogger(__name__).warning("warming up LiteLLM failed", exc_info=True)
    worker.write(b'{"t": "ready"}\n')
    try:
        worker.loop.run_forever()
    finally:
        os._exit(0)  # daemon threads and LiteLLM's own: nothing left to wait for


if __name__ == "__main__":
    main()
