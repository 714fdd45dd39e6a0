"""Keys typed while the app starts, handed on in the order they were typed.

Textual hands a key to whatever has the focus when the key is handled. Keys typed
straight after `chatui` (or waiting in the terminal already) are read in its first
milliseconds: the first ones, before anything had the focus, went to the screen
(whose `on_key` types them into the input), the next ones, once the input had the
focus, to the input. Each widget works through its own queue, so the input could
type the later keys first: "artWhere does the river st" (two launches in twelve in
tmux). Here a key read while nothing has the focus waits, and so does every key read
after it, until something has the focus; then all are handed on, in order, as
Textual hands on any key. Once the focus is there first, nothing is held again.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from textual import events
from textual.app import App

__all__ = ["EarlyKeys"]

LOOK_EVERY = 0.01
"""Seconds between looks for the focus while keys are held."""
GIVE_UP = 3.0
"""Seconds after which held keys are handed on with no focus (to the screen)."""


class EarlyKeys:
    """The keys an app read before anything had the focus (`hold`), until it has."""

    def __init__(self, app: App[Any], hand_on: Callable[[events.Key], Awaitable[None]]) -> None:
        self.app = app
        self.hand_on = hand_on
        """How the app hands on a key (Textual's own `App.on_event`)."""
        self.held: list[events.Key] = []
        self.over = False
        """The focus was there before any key: from then on keys go straight on."""
        self._since = 0.0

    def hold(self, event: events.Key) -> bool:
        """Keep `event` for later (True), or let the app hand it on now (False)."""
        if self.over:
            return False
        if not self.held and self.app.focused is not None:
            self.over = True
            return False
        self.held.append(event)
        if len(self.held) == 1:
            self._since = time.monotonic()
            self.app.set_timer(LOOK_EVERY, self._release, name="early keys")
        return True

    async def _release(self) -> None:
        if self.app.focused is None and time.monotonic() - self._since < GIVE_UP:
            self.app.set_timer(LOOK_EVERY, self._release, name="early keys")
            return
        # Handed on within one message of the app's: no key read meanwhile gets ahead.
        held, self.held = self.held, []
        self.over = True
        for key in held:
            await self.hand_on(key)
