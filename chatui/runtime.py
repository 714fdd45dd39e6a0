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

__all__ = ["CHECKOUT", "code_stamp", "private_folder"]

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
