"""`chatui ask`'s thin client: the turn runs in a warm background process.

Importing LiteLLM takes seconds, the store and the engine a good part of one:
a one-shot command that loaded them itself would print its first word long
after `curl` to the same server. So `chatui ask` from the console script
imports almost nothing (this module: `os`, `sys`, then the C socket module and
`marshal`), hands its arguments, piped input and environment to the ask process
(`chatui.cli.ask_daemon`) over a unix socket, and prints what comes back as it
comes. The ask process keeps LiteLLM, the store and the engine loaded; it is
started by the first `ask` that finds none, and exits after `CHATUI_ASK_IDLE`
seconds (default 600) without a request.

Design notes:
- Everything but the printing happens in the ask process, with the same code
  as `chatui ask` in process (`chatui.cli.ask`): parsing (so usage errors
  read the same; `--help` runs in process), the prompt, the turn, exit codes. What it sends is a
  message per event: `text` (a piece of the reply), `err`/`out` (lines for
  stderr/stdout, formatted there), `end` (the exit code), `stale` (the ask
  process runs older code than this client: it exits, and a new one starts).
- A terminal gets Markdown rendered here (`chatui.tui.shell_markdown`, rich);
  its import runs in a thread while the request travels.
- The wire is length-prefixed `marshal` (`frame`), not JSON: the client must not
  import `json` (and `re` with it) before its first word; both ends are the same
  Python, and the socket only this user can reach.
- The socket lives in `$XDG_RUNTIME_DIR/chatui-UID/` (else `/tmp/chatui-UID/`), a
  folder only the user can enter (checked before use: anything else and `ask`
  runs in process), one per `CHATUI_HOME`. The environment travels over it
  because API keys come from the environment; it is never written anywhere.
- The reader going away (`| head`) or ctrl+c closes the socket: the ask process
  cancels the reply, which is stored as far as it came, marked cancelled.
- `CHATUI_ASK_DAEMON=0` runs `ask` in process (nothing left running after it).
"""

from __future__ import annotations

import _socket  # the C module: `socket` would import enum, selectors, ...
import os
import sys

from ..runtime import CHECKOUT, code_stamp
from ..runtime import socket_path as runtime_socket
from .argv import find_command, reads_as_prompt

# No `typing`, `json`, `socket` or `hashlib` here: each costs milliseconds at start-up,
# and this module's start-up is the figure (`bench/ask_bench.py`).
TYPE_CHECKING = False  # mypy reads the block below; Python never imports it
if TYPE_CHECKING:
    import threading

    from ..tui.shell_markdown import MarkdownStream

__all__ = ["run_remote", "socket_path", "stamp", "wants_daemon"]

MAX_STDIN = 8 * 1024 * 1024  # as chatui.cli.ask.MAX_STDIN: one byte more says "too large"
CONNECT_WAIT = 20.0
"""Seconds to wait for a starting ask process to listen (it binds before loading)."""
_PACKAGES = ("chatui/cli", "chatui/core", "chatui/llm", "chatui/transfer", "store")


def wants_daemon(args: list[str]) -> bool:
    """`args` ask a question (`ask …`, or `"a question"`) and the warm process may run it."""
    if os.environ.get("CHATUI_ASK_DAEMON", "1") == "0":
        return False
    options, i = find_command(args)
    if i is None or any(o in ("-h", "--help", "--version") for o in options):
        return False
    if args[i] == "ask" or reads_as_prompt(args[i]):
        return not any(a in ("-h", "--help") for a in args[i:])
    return False


def stamp() -> str:
    """The code the ask process must run: the newest change to the modules it loads
    (an upgrade or an edit restarts it)."""
    return code_stamp(_PACKAGES)


def socket_path() -> str | None:
    """The ask process's socket for this `CHATUI_HOME`, in a folder only this user can
    enter (None: no such folder can be had; `ask` runs in process)."""
    home = (
        os.path.abspath(os.environ.get("CHATUI_HOME", "")) if os.environ.get("CHATUI_HOME") else ""
    )
    return runtime_socket("ask", home)  # CHATUI_HOME travels with each request too


def _connect(path: str) -> _socket.socket | None:
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def _start(path: str) -> None:
    """Start the ask process for `path` (it detaches; a second one started by a racing
    client finds the socket taken and exits)."""
    import subprocess

    env = dict(os.environ)
    root = CHECKOUT
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    subprocess.Popen(
        # -P: `-m` would put the working folder first on the path, and a folder holding
        # another chatui (a checkout) would run its ask process instead of this one.
        [sys.executable, "-P", "-m", "chatui.cli.ask_daemon", path],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,  # ctrl+c in this terminal is this command's, not its
        close_fds=True,
    )


def _connect_or_start(path: str) -> _socket.socket | None:
    import time

    sock = _connect(path)
    if sock is not None:
        return sock
    _start(path)
    deadline = time.monotonic() + CONNECT_WAIT
    while time.monotonic() < deadline:
        time.sleep(0.01)
        sock = _connect(path)
        if sock is not None:
            return sock
    return None


def _piped() -> bytes | None:
    stream = sys.stdin
    if stream is None or stream.closed or stream.isatty():
        return None
    return stream.buffer.read(MAX_STDIN + 1)


class _Printer:
    """What the ask process sends, printed: plain text, or Markdown on a terminal."""

    def __init__(self, tty: bool) -> None:
        self.out = sys.stdout.buffer
        self.last = b"\n"
        self.markdown: MarkdownStream | None = None
        self._loading: threading.Thread | None = None
        if tty:
            import threading

            # rich loads while the request travels, not after the first word.
            self._loading = threading.Thread(target=self._load, daemon=True)
            self._loading.start()

    def _load(self) -> None:
        from ..tui.shell_markdown import MarkdownStream

        self.markdown = MarkdownStream(sys.stdout)

    def text(self, text: str) -> None:
        if self._loading is not None:
            self._loading.join()
            assert self.markdown is not None
            self.markdown.add(text)
            return
        data = text.encode("utf-8", "backslashreplace")
        self.out.write(data)
        self.out.flush()
        self.last = data[-1:] or self.last

    def finish(self) -> None:
        if self._loading is not None:
            self._loading.join()
            assert self.markdown is not None
            self.markdown.close()
        elif self.last != b"\n":
            self.out.write(b"\n")
        self.out.flush()


def run_remote(args: list[str]) -> int | None:
    """Run `chatui ARGS` (an ask) in the ask process; its exit code, or None when no ask
    process can be had (the caller runs it in process; nothing was read or sent)."""
    path = socket_path()
    if path is None:
        return None
    sock = _connect_or_start(path)
    if sock is None:
        return None
    piped = _piped()
    code = _ask(sock, args, piped)
    if code == "stale":  # the ask process ran older code and is leaving: start anew
        import time

        deadline = time.monotonic() + 5
        while os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.01)
        sock = _connect_or_start(path)
        code = _ask(sock, args, piped) if sock is not None else "stale"
        if code == "stale":
            print("chatui: error: the ask process could not be started", file=sys.stderr)
            return 12
    return int(code)


def frame(value: dict[str, object]) -> bytes:
    """One message of the ask socket: its length (4 bytes, big-endian), then `value`
    in `marshal` (a built-in module: nothing to import; both ends run one Python)."""
    import marshal

    data = marshal.dumps(value)
    return len(data).to_bytes(4, "big") + data


def _ask(sock: _socket.socket, args: list[str], piped: bytes | None) -> int | str:
    tty = sys.stdout.isatty()
    request = {
        "argv": list(args),
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "stdin": piped,
        "tty": tty,
        "stamp": stamp(),
    }
    try:
        sock.sendall(frame(request))
    except OSError:  # it was leaving (idle): start anew
        sock.close()
        return "stale"
    printer = _Printer(tty)
    try:
        return _relay(sock, printer)
    except BrokenPipeError:  # the reader went away: the ask process cancels the reply
        sys.stdout = open(os.devnull, "w")  # silence the exit flush
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        sock.close()


def _relay(sock: _socket.socket, printer: _Printer) -> int | str:
    """Print what arrives until `end`; its code (or "stale")."""
    import marshal

    pending = b""
    while True:
        data = sock.recv(65536)
        if not data:
            printer.finish()
            print(
                "chatui: error: the ask process stopped before the turn ended "
                "(what arrived is stored); try again",
                file=sys.stderr,
            )
            return 12
        pending += data
        while len(pending) >= 4:
            size = int.from_bytes(pending[:4], "big")
            if len(pending) < 4 + size:
                break
            message = marshal.loads(pending[4 : 4 + size])
            pending = pending[4 + size :]
            kind = message.get("t")
            if kind == "text":
                printer.text(message["text"])
            elif kind == "out":
                sys.stdout.write(message["text"])
                sys.stdout.flush()
            elif kind == "err":
                sys.stderr.write(message["text"])
                sys.stderr.flush()
            elif kind == "end":
                printer.finish()
                return int(message["code"])
            elif kind == "stale":
                return "stale"
