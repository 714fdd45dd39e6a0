"""A paste that carries ESC reaches the input whole (Textual's terminal parser cuts it).

Textual's `XTermParser` reads an ESC inside a bracketed paste as the start of a key
sequence; one it does not know is re-sent as keys, so `\\r` in the paste becomes
enter: the message was sent at once, cut at the `\\r`, and the paste's end marker
was lost. Terminals such as xterm, kitty and Alacritty remove ESC from pastes
themselves; tmux and others pass it through.

`PasteSafeParser` does what those terminals do, before Textual's parser sees the
text: inside a bracketed paste, escape sequences and lone ESCs are removed (the
paste's own end marker is kept). Everything outside a paste is passed on untouched
(only a paste's start marker cut in two waits for its end; a lone escape key never
waits). `ChatInput` then cleans the
pasted text (`\\r` → newline) as it inserts it.
"""

from __future__ import annotations

import os
import re
import selectors
from codecs import getincrementaldecoder
from collections.abc import Iterable
from typing import Any

from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

from store.text import ESCAPE_SEQUENCES

from .typed_ahead import as_typed, waiting

__all__ = ["PasteSafeDriver", "PasteSafeParser", "neutralise_pastes"]

PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"
_ANY_ESC = re.compile("\x1b")


def _unfinished_tail(text: str) -> int:
    """Where an escape cut by the end of a read begins in `text` (len(text): none):
    the paste's end marker in two, or a colour code whose end comes with the next read."""
    last = text.rfind("\x1b")
    if last < 0 or len(text) - last > 32 or ESCAPE_SEQUENCES.match(text, last):
        return len(text)
    return last


class PasteFilter:
    """Removes escapes from the inside of bracketed pastes, across reads."""

    def __init__(self) -> None:
        self.in_paste = False
        self._held = ""
        """The end of a paste read so far that may be its end marker's beginning."""
        self._tail = ""
        """The last characters passed on outside a paste (a start marker's beginning?)."""

    def __call__(self, data: str) -> str:
        out: list[str] = []
        data = self._held + data
        self._held = ""
        while data:
            if not self.in_paste:
                # Passed on as it comes (the parser waits for a sequence's end itself);
                # a start marker cut by the read is found with the read before's end.
                probe = self._tail + data
                start = probe.find(PASTE_START)
                if start < 0:
                    out.append(data)
                    self._tail = probe[-(len(PASTE_START) - 1) :]
                    break
                opened = start + len(PASTE_START) - len(self._tail)
                out.append(data[:opened])
                data = data[opened:]
                self._tail = ""
                self.in_paste = True
                continue
            end = data.find(PASTE_END)
            if end < 0:
                cut = _unfinished_tail(data)
                body, self._held = data[:cut], data[cut:]
                out.append(_ANY_ESC.sub("", ESCAPE_SEQUENCES.sub("", body)))
                break
            out.append(_ANY_ESC.sub("", ESCAPE_SEQUENCES.sub("", data[:end])))
            out.append(PASTE_END)
            data = data[end + len(PASTE_END) :]
            self.in_paste = False
        return "".join(out)


def neutralise_pastes(chunks: Iterable[str]) -> str:
    """The text Textual's parser gets for these reads (for tests and benches)."""
    paste_filter = PasteFilter()
    return "".join(paste_filter(chunk) for chunk in chunks)


class PasteSafeParser(XTermParser):
    """Textual's parser, fed through a `PasteFilter`."""

    def __init__(self, debug: bool = False) -> None:
        super().__init__(debug)
        self._paste_filter = PasteFilter()

    def feed(self, data: str) -> Iterable[Any]:
        if not data:  # the end of input
            return super().feed(data)
        filtered = self._paste_filter(data)
        # All of it held back (a paste's end marker cut in two): nothing to parse yet
        # ("" would tell Textual's parser the input ended).
        return super().feed(filtered) if filtered else ()


class PasteSafeDriver(LinuxDriver):
    """Textual's Linux/macOS driver with `PasteSafeParser` reading the terminal.

    `run_input_thread` is Textual's own (8.x), with the parser swapped: the driver
    builds its parser inside that method, with no other way to choose it. The keys
    typed before the driver took the terminal are read as typed (`typed_ahead`).
    """

    def run_input_thread(self) -> None:
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        fileno = self.fileno
        parser = PasteSafeParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        # Typed before the terminal was switched to raw mode: enter arrives as a newline.
        typed_before = waiting(fileno)

        def process(selector_events: list[tuple[Any, int]], final: bool = False) -> None:
            nonlocal typed_before
            for index, (_key, mask) in enumerate(selector_events):
                last = index == len(selector_events) - 1
                if mask & selectors.EVENT_READ:
                    raw, typed_before = as_typed(os.read(fileno, 1024 * 4), typed_before)
                    data = decode(raw, final=final and last)
                    if not data:
                        break
                    for event in parser.feed(data):
                        self.process_message(event)
            for event in parser.tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                process(selector.select(0.1))
            selector.unregister(self.fileno)
            process(selector.select(0.1), final=True)
        finally:
            selector.close()
            try:
                for _event in parser.feed(""):
                    pass
            except Exception:  # EOFError, ParseError: the terminal is gone, as in Textual
                pass
