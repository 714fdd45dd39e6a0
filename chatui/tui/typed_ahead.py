"""Enter typed before the app takes the terminal is enter, not a new line.

Keys typed straight after `chatui`, before Textual's driver switches the terminal to
raw mode (a few hundred ms after launch, longer on a loaded machine), wait in the
terminal's buffer, and the mode the shell left it in has already turned each enter
(a carriage return) into a newline there (`ICRNL`): read after the switch, that is
ctrl+j, the input's new line, and the question typed ahead stayed in the input with
an empty line under it, unsent. The bytes waiting when the driver's input thread
starts were typed before the switch: a newline among them is taken back to the
enter it was (in that mode ctrl+j and enter both arrive as a newline, and both end
a line in a shell).
"""

from __future__ import annotations

import array
import fcntl
import termios

__all__ = ["as_typed", "waiting"]


def waiting(fd: int) -> int:
    """How many bytes the terminal `fd` holds for reading now (0 when it cannot say)."""
    count = array.array("i", [0])
    try:
        fcntl.ioctl(fd, termios.FIONREAD, count, True)
    except OSError:
        return 0
    return max(count[0], 0)


def as_typed(data: bytes, typed_before: int) -> tuple[bytes, int]:
    """`data`, just read, whose first `typed_before` bytes were typed before the switch,
    with their newlines turned back into carriage returns; and how many of the bytes
    typed before are still to be read."""
    if typed_before <= 0:
        return data, 0
    head = data[:typed_before].replace(b"\n", b"\r")
    return head + data[typed_before:], max(typed_before - len(data), 0)
