"""Where chatui's warm background processes meet their clients, and which code they run.

Two processes stay warm between commands: `chatui ask`'s (`chatui.cli.ask_daemon`)
and the app's spare model process (`chatui.llm.spare`). Each listens on a unix
socket in `$XDG_RUNTIME_DIR/chatui-UID/` (else `/tmp/chatui-UID/`), a folder only
the user can enter, checked before every use; and each is used only by a client
running the same code (`code_stamp`): an upgrade or an edit starts a new one.

Imports nothing but `os` at the top: `chatui ask`'s client loads this before its
first word.
"""

from __future__ import annotations

import os

__all__ = ["CHECKOUT", "code_stamp", "private_folder", "socket_path"]

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The folder holding this `chatui` (a child process must run this code, not another
checkout's: it goes first on the child's PYTHONPATH)."""


def private_folder() -> str | None:
    """This user's folder for chatui's sockets (None: none that only the user can enter
    can be had; the caller goes without a warm process)."""
    base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    folder = os.path.join(base, f"chatui-{os.getuid()}")
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        info = os.lstat(folder)
    except OSError:
        return None
    import stat

    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return folder


def socket_path(kind: str, key: str) -> str | None:
    """The socket of a warm process of `kind` ("ask", "model") for `key` (its home, its
    code), in the private folder; None where none can be had."""
    from binascii import crc32

    folder = private_folder()
    if folder is None:
        return None
    # A short name (a clash would only share one process: each request carries its own
    # environment), and a path a socket can have: sun_path holds 108 bytes.
    name = f"{kind}-{crc32(key.encode('utf-8', 'surrogateescape')):08x}.sock"
    path = os.path.join(folder, name)
    return path if len(path.encode()) < 100 else None


def code_stamp(packages: tuple[str, ...]) -> str:
    """The code a warm process runs: this checkout and the newest change to the modules
    of `packages` (folders under the checkout, as "chatui/llm")."""
    newest = 0
    for package in packages:
        try:
            with os.scandir(os.path.join(CHECKOUT, package)) as entries:
                for entry in entries:
                    if entry.name.endswith(".py"):
                        newest = max(newest, entry.stat().st_mtime_ns)
        except OSError:
            continue
    return f"{CHECKOUT}:{newest}"
