"""Markdown streamed to a terminal by rich, for `chatui ask` (no Textual app).

A reply is rendered as it arrives. Rich's `Live` can only redraw what is still
on the screen, so a long reply drawn whole in one `Live` would leave copies of
its top behind as it scrolls. Instead every finished block (up to the last
blank line outside a code fence) is printed once, for good, and only the block
being written is live; it is printed for good when the reply ends.

The text given must already be safe to print (the caller neutralises control
characters: model output is untrusted).
"""

from __future__ import annotations

import re
import time
from typing import IO

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown

__all__ = ["MarkdownStream", "split_finished"]

REDRAW_EVERY = 0.05
"""Seconds between redraws of the block being written (words arrive faster)."""

_FENCE = re.compile(r"^\s{0,3}(```|~~~)", re.M)


def split_finished(text: str) -> int:
    """Where the finished blocks of `text` end: after its last blank line that is not
    inside a code fence (0: nothing finished yet)."""
    end = 0
    start = 0
    while True:
        found = text.find("\n\n", start)
        if found < 0:
            return end
        if len(_FENCE.findall(text, 0, found)) % 2 == 0:
            end = found + 2
        start = found + 1


class MarkdownStream:
    """Feed it text as it arrives (`add`), then `close()`."""

    def __init__(self, stream: IO[str]) -> None:
        self.console = Console(file=stream, soft_wrap=False)
        self._pending = ""
        self._live: Live | None = None
        self._drawn = 0.0

    def add(self, text: str) -> None:
        self._pending += text
        cut = split_finished(self._pending)
        if cut:
            done, self._pending = self._pending[:cut], self._pending[cut:]
            self._print(done)
        now = time.monotonic()
        if now - self._drawn >= REDRAW_EVERY:
            self._drawn = now
            self._draw()

    def _print(self, text: str) -> None:
        if text.strip():
            self.console.print(Markdown(text))  # above the live block while one is shown

    def _draw(self) -> None:
        if self._live is None:
            if not self._pending.strip():
                return
            self._live = Live(
                console=self.console,
                auto_refresh=False,
                transient=True,
                vertical_overflow="visible",
            )
            self._live.start()
        self._live.update(Markdown(self._pending), refresh=True)

    def close(self) -> None:
        """Print what is still being written, for good."""
        if self._live is not None:
            self._live.stop()
            self._live = None
        self._print(self._pending)
        self._pending = ""
