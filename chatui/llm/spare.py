"""The spare: a warm model process kept for the app's next launch.

LiteLLM takes seconds of CPU to import (about five on the 2-core development
machine), and the app's first reply waits for its model process to load it: a
question sent in the first seconds after `chatui` starts sat under "starting the
model…". So when an app goes (quit, or its terminal killed), its model process
does not exit: with its calls cancelled and the app's environment dropped, it
waits on a socket as the spare, and the next app to start adopts it instead of
starting its own, ready at once. One app at a time: a second app running
meanwhile starts a process of its own, and of two spares the later one exits.

- The socket is in the user's private folder (`chatui.runtime`), named after the
  code the process runs: an app adopts only a spare of its own code (an upgrade
  or an edit starts afresh; the old spare exits when its time is up).
- A spare waits `CHATUI_SPARE_SECONDS` (default 600) for an app, then exits;
  `0` keeps none (the model process exits with its app, as the test suite runs).
- Adopting is one connection and one line: the spare says it is ready (and its
  pid); anything else, or silence for `ADOPT_WAIT` seconds, and the app starts
  its own process. The app's environment (API keys) goes with its first call,
  as it does to a process of its own when it changed; over the socket only.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys

from ..runtime import code_stamp, socket_path

__all__ = [
    "ADOPT_WAIT",
    "adopt",
    "current_stamp",
    "spare_path",
    "spare_seconds",
    "wait_for_adopter",
]

ADOPT_WAIT = 2.0
"""Seconds an app waits for a spare's "ready" line before starting its own process."""

_CODE = ("chatui/llm",)
"""The model process runs `chatui.llm` (and LiteLLM): a change there is other code."""

_KEPT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "XDG_RUNTIME_DIR")
"""What a spare keeps of its last app's environment while it waits (no keys)."""


def spare_seconds() -> float:
    """How long a spare waits for an app (0: no spare)."""
    try:
        return max(float(os.environ.get("CHATUI_SPARE_SECONDS", "600")), 0.0)
    except ValueError:
        return 600.0


def spare_path(stamp: str | None = None) -> str | None:
    """The spare's socket for this code (`stamp`: `code_stamp` of the model process's
    modules, as the process read it when it started); None where no private folder
    can be had."""
    return socket_path("model", stamp if stamp is not None else current_stamp())


def current_stamp() -> str:
    """The code a model process started now runs: this Python, this checkout's
    `chatui.llm` as it is on disk."""
    return f"{sys.executable}:{code_stamp(_CODE)}"


def adopt(wait: float = ADOPT_WAIT) -> tuple[socket.socket, int] | None:
    """Connect to a waiting spare: its socket (ready for requests) and pid, or None."""
    if not spare_seconds():
        return None
    path = spare_path()
    if path is None:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(wait)
        sock.connect(path)
        line = _read_line(sock)
        hello = json.loads(line) if line else None
        if not isinstance(hello, dict) or hello.get("t") != "ready":
            raise ValueError("not a spare's greeting")
        pid = int(hello.get("pid", 0))
        sock.settimeout(None)
    except (OSError, ValueError, TypeError):
        sock.close()
        return None
    return sock, pid


def _read_line(sock: socket.socket) -> bytes:
    """The greeting, byte by byte: nothing after it may be taken from the socket (the
    app's reading thread reads the rest)."""
    line = bytearray()
    while len(line) < 4096:
        byte = sock.recv(1)
        if not byte or byte == b"\n":
            break
        line += byte
    return bytes(line)


def wait_for_adopter(stamp: str, seconds: float) -> socket.socket | None:
    """As the spare: wait up to `seconds` for an app; its connection, or None (time is
    up, another spare of this code already waits, or no socket can be had)."""
    path = spare_path(stamp)
    if path is None or seconds <= 0:
        return None
    _drop_environment()
    listening = _listen(path)
    if listening is None:
        return None
    listener, identity = listening
    try:
        listener.settimeout(seconds)
        connection, _ = listener.accept()
    except OSError:  # time is up
        return None
    finally:
        _unlink_if_ours(path, identity)
        listener.close()
    connection.settimeout(None)
    return connection


def _listen(path: str) -> tuple[socket.socket, tuple[int, int]] | None:
    """Listen at `path` (and the socket file's identity), unless a live spare does
    (None). The folder's lock makes "is anyone there?" and the bind one step."""
    import fcntl

    folder = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
            return None  # a spare of this code waits already
        except OSError:
            pass
        finally:
            probe.close()
        # Bound and listening under another name first: the socket's name appears only
        # once an app can connect (a connection between bind and listen is refused).
        fresh = f"{path}.{os.getpid()}"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(fresh)
            listener.bind(fresh)
            os.chmod(fresh, 0o600)
            listener.listen(1)
            os.replace(fresh, path)  # over a dead spare's, if one is left
            info = os.stat(path)
        except OSError:
            listener.close()
            with contextlib.suppress(OSError):
                os.unlink(fresh)
            return None
        return listener, (info.st_dev, info.st_ino)
    finally:
        os.close(folder)


def _unlink_if_ours(path: str, identity: tuple[int, int]) -> None:
    """Remove the socket's name, unless another spare's socket has it by now."""
    with contextlib.suppress(OSError):
        info = os.stat(path)
        if (info.st_dev, info.st_ino) == identity:
            os.unlink(path)


def _drop_environment() -> None:
    """The last app's keys leave the environment: the next app sends its own."""
    kept = {name: os.environ[name] for name in _KEPT_ENV if name in os.environ}
    kept.update({k: v for k, v in os.environ.items() if k.startswith("LITELLM_")})
    os.environ.clear()
    os.environ.update(kept)
