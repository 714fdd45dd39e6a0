"""Pastes that carry ESC reach the input whole: the parser filter (every way a read can
cut a paste) and the input's cleaning of what is pasted (Pilot)."""

from __future__ import annotations

from textual import events

from chatui.core.config import Config
from chatui.tui.paste_guard import PasteSafeParser

from .app_helpers import make_app, wait_until

PASTED = "first line\x1b[31m red\x1b[0m\rsecond line\rthird"
WIRE = f"ab\x1b[200~{PASTED}\x1b[201~x"


def parse(*chunks: str) -> list[str]:
    parser = PasteSafeParser()
    return [
        event.text if isinstance(event, events.Paste) else event.character
        for chunk in chunks
        for event in parser.feed(chunk)
    ]


def test_a_paste_with_escapes_is_one_paste_however_the_reads_cut_it():
    expected = ["a", "b", "first line red\rsecond line\rthird", "x"]
    assert parse(WIRE) == expected
    for first in range(1, len(WIRE)):
        for second in range(first + 1, len(WIRE)):
            chunks = (WIRE[:first], WIRE[first:second], WIRE[second:])
            assert parse(*chunks) == expected, chunks


def test_keys_and_a_lone_escape_outside_pastes_pass_untouched():
    parser = PasteSafeParser()
    keys = [e.key for e in parser.feed("q\x1b[A") if isinstance(e, events.Key)]
    assert keys == ["q", "up"]
    assert [e.key for e in parser.feed("\x1b")] == []  # a lone escape: the parser waits


async def test_a_pasted_text_is_cleaned_into_the_input_and_not_sent(store):
    app = make_app(store, Config(model="demo"), warm_llm=False)
    async with app.run_test(size=(100, 30)) as pilot:
        chat_input = app.main.chat_input
        await wait_until(pilot, lambda: chat_input.has_focus)
        app.post_message(events.Paste(PASTED))  # as the driver sends it
        await wait_until(pilot, lambda: "third" in chat_input.text)
        assert chat_input.text == "first line red\nsecond line\nthird"
        assert app.main.chat is None  # nothing was sent


def test_keys_typed_before_the_terminal_was_raw_read_enter_as_enter():
    """The terminal's cooked mode turned enter into a newline in what waited: those
    bytes, however the reads cut them, have their newlines read as enter again; bytes
    typed after the switch (a real ctrl+j) are left alone."""
    from chatui.tui.typed_ahead import as_typed

    assert as_typed(b"hi\nthere\n", 9) == (b"hi\rthere\r", 0)
    first, left = as_typed(b"hi\nth", 9)  # the first read holds part of them
    assert (first, left) == (b"hi\rth", 4)
    assert as_typed(b"ere\n\n", left) == (b"ere\r\n", 0)  # the last newline came later
    assert as_typed(b"a\nb", 0) == (b"a\nb", 0)  # nothing was waiting
