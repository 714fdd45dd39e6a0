"""Keys typed while the app starts reach what gets the focus, in the order typed
(`chatui.tui.early_keys`; end to end: tests/test_tmux.py, keys typed before launch)."""

from __future__ import annotations

import functools

from textual import events
from textual.app import App, ComposeResult
from textual.widgets import Input, Static

from chatui.tui.early_keys import EarlyKeys

from .app_helpers import wait_until


class Starting(App[None]):
    """Nothing focusable at first, as the app before its input is composed; keys that
    reach the screen are lost here (the mechanism must not need the screen's help)."""

    def __init__(self) -> None:
        super().__init__()
        self.early = EarlyKeys(self, functools.partial(App.on_event, self))

    def compose(self) -> ComposeResult:
        yield Static("starting")

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded and self.early.hold(event):
            return
        await super().on_event(event)


def key(character: str) -> events.Key:
    return events.Key(character, character)


async def test_keys_read_before_the_focus_wait_for_it_and_keep_their_order():
    app = Starting()
    async with app.run_test() as pilot:
        assert app.focused is None
        for c in "ab":
            app.post_message(key(c))
        await pilot.pause()
        assert len(app.early.held) == 2  # nothing to take them yet: kept, not lost
        box = Input(id="box")
        await app.screen.mount(box)
        box.focus()
        for c in "cd":
            app.post_message(key(c))  # behind the held ones, though the focus is set
        await wait_until(pilot, lambda: box.value == "abcd")
        assert app.early.over and not app.early.held
        app.post_message(key("e"))  # from now on straight to the focus
        await wait_until(pilot, lambda: box.value == "abcde")


async def test_with_the_focus_there_first_nothing_is_held():
    app = Starting()
    async with app.run_test() as pilot:
        box = Input(id="box")
        await app.screen.mount(box)
        box.focus()
        await pilot.pause()
        app.post_message(key("x"))
        await wait_until(pilot, lambda: box.value == "x")
        assert app.early.over
        box.blur()  # later, no focus: keys are Textual's again (not held)
        await pilot.pause()
        app.post_message(key("y"))
        await pilot.pause()
        assert not app.early.held
