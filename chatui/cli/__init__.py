"""`chatui`'s command line: the commands for scripts, and the app when none is given.

`main` is the console script. It pauses garbage collection before anything else is
imported (`chatui.launch` says why), then loads the commands: this package's
`__init__` imports nothing else, so the pause comes first.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run `chatui` with `argv` (default: the process's); return the exit code."""
    from .. import launch

    launch.pause()
    from .commands import run

    return run(argv)
