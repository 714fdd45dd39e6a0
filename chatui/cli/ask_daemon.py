"""The ask process (`python -m chatui.cli.ask_daemon SOCKET`): `chatui ask`, kept warm.

See `chatui.cli.ask_client` for why and for the wire. One process per
`CHATUI_HOME`, started by the first `ask` that finds none. It listens first
(so that client connects at once and waits), then loads LiteLLM and rehearses
a first call (`llm.warm_up`, `warm_call`, as the app's model process does), and
runs each request as `chatui ask` would in process: the same parser, prompt,
turn and exit codes (`chatui.cli.ask`), printing into the connection. It keeps
the parser and each database open between turns; the workspace, the config
and the environment (keys) are the request's own. It exits
after `CHATUI_ASK_IDLE` seconds (default 600) without a request, when a client
runs newer code (`stale`), or when its socket file is taken away.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import io
import logging
import marshal
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from ..core import paths
from ..transfer.text import neutralise, one_line
from .ask import ask, error_line, open_database, request_from
from .ask_client import frame, stamp
from .base import USAGE
from .commands import (
    _command_names,
    _configured_db,
    build_parser,
    failure_of,
    prompt_shortcut,
    read_config,
)

log = logging.getLogger(__name__)

IDLE = float(os.environ.get("CHATUI_ASK_IDLE", "600"))
MAX_REQUEST = 64 * 1024 * 1024
"""The largest request read (the piped input is at most 8 MB, plus the environment)."""


class RemoteOutput:
    """A turn's words and lines, sent to the client as JSON lines."""

    def __init__(self, writer: asyncio.StreamWriter, tty: bool, as_json: bool) -> None:
        self.writer = writer
        self.tty = tty
        self.as_json = as_json

    def send(self, message: dict[str, Any]) -> None:
        if self.writer.is_closing():
            raise BrokenPipeError("the client went away")
        self.writer.write(frame(message))

    def text(self, delta: str) -> None:
        if self.as_json:
            return
        self.send({"t": "text", "text": neutralise(delta) if self.tty else delta})

    def notice(self, text: str) -> None:
        self.send({"t": "err", "text": f"chatui: {one_line(text)}\n"})

    def finish(self, result: dict[str, Any]) -> None:
        if self.as_json:
            from ..transfer.exports import json_text

            self.send({"t": "out", "text": json_text(result) + "\n"})
        line = error_line(result)
        if line:
            self.send({"t": "err", "text": line + "\n"})


class Daemon:
    def __init__(self, path: str) -> None:
        self.path = path
        self.stamp = stamp()
        self.active = 0
        self.last = time.monotonic()
        self.done = asyncio.Event()
        self.identity: tuple[int, int] | None = None
        self.parser = build_parser()
        self.commands = _command_names(self.parser)
        self.stores: dict[str, Any] = {}
        """Databases kept open across turns, by path or URL (opening one, checking its
        schema and closing it again would cost every turn milliseconds)."""
        self.closing = contextlib.ExitStack()

    @contextlib.contextmanager
    def opener(self, db: str | None) -> Iterator[Any]:
        """`chatui.cli.ask.open_database`, kept open; a database that failed is closed
        and opened again by the next turn."""
        key = db or str(paths.default_db())
        store = self.stores.get(key)
        if store is None:
            store = self.closing.enter_context(open_database(db))
            self.stores[key] = store
        try:
            yield store
        except BaseException as exc:
            if failure_of(exc) is not None or not isinstance(exc, Exception):
                raise
            self.stores.pop(key, None)  # a bug or a broken connection: start afresh
            raise

    async def serve(self) -> None:
        server = await self.listen()
        if server is None:
            return  # another ask process serves this socket
        watch = asyncio.create_task(self.watch())
        warm = asyncio.create_task(self.warm())
        try:
            await self.done.wait()
        finally:
            server.close()
            self.unlink()
            watch.cancel()
            while self.active:  # turns under way end first (they are being printed)
                await asyncio.sleep(0.05)
            warm.cancel()
            self.closing.close()

    async def listen(self) -> asyncio.AbstractServer | None:
        """Listen on the socket, unless a live process does (None). asyncio removes a
        socket file it finds, live or not; the lock makes "is anyone there?" and the
        bind one step, so two processes started at once never take it from each other."""
        import fcntl
        import socket

        folder = os.open(os.path.dirname(self.path), os.O_RDONLY)  # the lock: no file left
        try:
            fcntl.flock(folder, fcntl.LOCK_EX)
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(self.path)
                return None
            except OSError:
                pass
            finally:
                probe.close()
            server = await asyncio.start_unix_server(self.handle, self.path)
            os.chmod(self.path, 0o600)
            info = os.stat(self.path)
            self.identity = (info.st_dev, info.st_ino)
            return server
        finally:
            os.close(folder)  # and the lock with it

    def unlink(self) -> None:
        """Remove the socket file, if it is still ours (a newer process may own the path)."""
        with contextlib.suppress(OSError):
            info = os.stat(self.path)
            if (info.st_dev, info.st_ino) == self.identity:
                os.unlink(self.path)

    async def warm(self) -> None:
        """LiteLLM and a first call's set-up, before the first request needs them."""
        from ..llm import warm_up
        from ..llm.warm_call import warm_call

        try:
            await asyncio.to_thread(warm_up)
            await warm_call()
        except Exception:
            log.warning("warming up LiteLLM failed", exc_info=True)
        # What is loaded now (LiteLLM, the store, the engine) lives as long as the
        # process: frozen, out of the collector's sight, a full collection landing in a
        # turn walks what came after, not all of it (as the app does, `chatui.launch`).
        gc.freeze()

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(min(IDLE, 1.0))
            try:
                info = os.stat(self.path)
                ours = (info.st_dev, info.st_ino) == self.identity
            except OSError:
                ours = False
            if not ours:  # removed or replaced: nobody can reach us any more
                self.done.set()
                return
            if self.active == 0 and time.monotonic() - self.last > IDLE:
                self.done.set()
                return

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.active += 1
        try:
            size = int.from_bytes(await reader.readexactly(4), "big")
            if size > MAX_REQUEST:
                return
            request = marshal.loads(await reader.readexactly(size))
            if not isinstance(request, dict):
                return
            if request.get("stamp") != self.stamp:
                writer.write(frame({"t": "stale"}))
                await writer.drain()
                self.done.set()
                return
            out = RemoteOutput(writer, bool(request.get("tty")), False)
            turn = asyncio.create_task(self.run(request, out))
            gone = asyncio.create_task(reader.read(1))  # EOF: the client went away
            await asyncio.wait({turn, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not turn.done():
                turn.cancel()  # the reply is stopped and stored, marked cancelled
                with contextlib.suppress(asyncio.CancelledError, BrokenPipeError):
                    await turn
                return
            gone.cancel()
            code = turn.result()
            out.send({"t": "end", "code": code})
            await writer.drain()
        except (ConnectionError, BrokenPipeError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.exception("ask request failed")
        finally:
            self.active -= 1
            self.last = time.monotonic()
            writer.close()

    async def run(self, request: dict[str, Any], out: RemoteOutput) -> int:
        """One `chatui ask`, as `chatui.cli.commands.run` would run it; the exit code."""
        env = request.get("env")
        if isinstance(env, dict):  # keys come from the asking shell's environment
            os.environ.clear()
            os.environ.update({str(k): str(v) for k, v in env.items()})
        argv = [str(a) for a in request.get("argv") or []]
        parser, commands = self.parser, self.commands
        printed_out, printed_err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(printed_out), contextlib.redirect_stderr(printed_err):
                args = parser.parse_args(prompt_shortcut(argv, commands))
        except SystemExit as exc:  # usage errors (help is answered by the client's process)
            out.send({"t": "out", "text": printed_out.getvalue()})
            out.send({"t": "err", "text": printed_err.getvalue()})
            return exc.code if isinstance(exc.code, int) else USAGE
        out.as_json = bool(getattr(args, "json", False))
        try:
            config = None  # read once for the turn (the database's name and the turn's)
            if not args.db:
                config = read_config()
                args.db = _configured_db(config)
            elif "://" not in args.db:  # a path is the client's, relative to its folder
                args.db = os.path.join(str(request.get("cwd") or "."), os.path.expanduser(args.db))
            data = request.get("stdin")
            piped = io.BytesIO(data) if isinstance(data, bytes) else None
            ask_request = request_from(args, piped, str(request.get("cwd") or "/"))
            return await ask(ask_request, out, opener=self.opener, config=config)
        except Exception as exc:
            failure = failure_of(exc)
            if failure is None:
                if isinstance(exc, BrokenPipeError):
                    raise
                log.exception("ask failed")
                failure = (f"{type(exc).__name__}: {exc}", 12)
            message, code = failure
            out.send({"t": "err", "text": f"chatui: error: {one_line(message)}\n"})
            return code


def main() -> None:
    path = sys.argv[1]
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        asyncio.run(Daemon(path).serve())
    except OSError:  # another ask process took the socket first: it serves
        pass
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
