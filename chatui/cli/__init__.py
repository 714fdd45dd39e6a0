"""`chatui`'s command line: the commands for scripts, and the app when none is given."""

from .main import main

__all__ = ["main"]
