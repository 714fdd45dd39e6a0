"""`chatui`'s command line: the commands for scripts, and the app when none is given.

`main` is the console script. It pauses garbage collection before anything else is
imported (`chatui.launch` says why), then loads the commands: this package's
`__init__` imports nothing else, so the pause comes first. `chatui ask` from the
console script goes to the warm ask process instead (`ask_client`), before the
commands (and the store) are imported at all.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `collections.abc` costs start-up time that `chatui ask` counts
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run `chatui` with `argv` (default: the process's); return the exit code."""
    from .. import launch

    launch.pause()
    if argv is None:  # the console script: `chatui ask` runs in the warm ask process
        import sys

        from .argv import find_command

        # The ask client loads only for a command (the app's start has none).
        if find_command(sys.argv[1:])[1] is not None:
            from .ask_client import run_remote, wants_daemon

            if wants_daemon(sys.argv[1:]):
                code = run_remote(sys.argv[1:])
                if code is not None:
                    return code
    from .. import compile_cache
    from ..core.paths import compile_cache_file

    compile_cache.install(compile_cache_file())  # until the first screen (`launch.resume`)
    try:
        from .commands import run

        return run(argv)
    finally:
        compile_cache.finish()  # a run that never got to `launch.resume` (`--help`)
