"""The `chatui` command's entry point: garbage collection waits before any import.

`chatui.cli` imports the store (peewee and ~40 modules) before it knows whether it
runs a command or the app; the collector walked those imports dozens of times
(`startup` says why that is wasted). Collection is paused here, first: the app
resumes it after its first screen, `cli.main` before any other command runs.
"""

from __future__ import annotations

__all__ = ["main"]


def main() -> int:
    """Run `chatui` (the console script)."""
    from . import startup

    startup.pause()
    from .cli import main as cli_main

    return cli_main()
