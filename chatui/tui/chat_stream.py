"""`ChatStream`: the stream of the chat on screen, between the workspace and its pane.

It hears the events of the chat the pane shows, as the workspace's listener
calls it (on the event loop, synchronously): a delta's text goes at once into
its reply's `ReplyStream` (the reply's view joins and draws it — one batching,
there); every other event goes through the first-frame policy (`FirstFrame`),
whose releases the pane draws, each as one batch. The stream runs the
policy's hold timer and tells it when the first words' frame is drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from textual.timer import Timer

from widgets import ReplyStream

from ..core.events import JobEvent, ReplyDelta, ReplyStarted
from .first_frame import FirstFrame, Release

__all__ = ["ChatStream"]


class ChatStream:
    """The live replies of the chat on screen and when its events are drawn."""

    def __init__(
        self,
        *,
        draw: Callable[[Release], None],
        set_timer: Callable[[float, Callable[[], None]], Timer],
    ) -> None:
        self._draw = draw
        """Hands a release to the pane (which posts it to itself, to draw in order)."""
        self._set_timer = set_timer
        self._policy = FirstFrame()
        self._hold: Timer | None = None
        self._replies: dict[str, ReplyStream] = {}

    def heard(self, event: JobEvent) -> None:
        """An event of the chat on screen: texts to their streams, the rest to the policy."""
        if isinstance(event, ReplyStarted):
            self._replies.setdefault(event.message.id, ReplyStream())
        elif isinstance(event, ReplyDelta) and event.kind == "text":
            reply = self._replies.get(event.message_id)
            if reply is not None:
                reply.write(event.text)
        self._release(self._policy.heard(event))

    def reply(self, message_id: str) -> ReplyStream | None:
        """Where the text of a reply being written goes (its view draws from it)."""
        return self._replies.get(message_id)

    def ended(self, message_id: str) -> None:
        """The reply is stored in its final form: its view shows that, not the stream."""
        self._replies.pop(message_id, None)

    def opened(self, live: Mapping[str, str]) -> dict[str, ReplyStream]:
        """The chat is drawn again with these replies being written (their text so far in
        `live`, read in the same step): each gets a fresh stream for what follows."""
        self._replies = {mid: ReplyStream() for mid in live}
        return dict(self._replies)

    def reset(self) -> None:
        """Another chat is on screen: nothing held or streaming is drawn into it."""
        self._policy.reset()
        if self._hold is not None:
            self._hold.stop()
            self._hold = None
        self._replies.clear()

    def frame_drawn(self) -> None:
        """The frame that shows a reply's first words is on the terminal."""
        self._release(self._policy.drawn())

    def _release(self, release: Release | None) -> None:
        if self._policy.holding and self._hold is None:
            self._hold = self._set_timer(self._policy.hold, self._expired)
        elif not self._policy.holding and self._hold is not None:
            self._hold.stop()
            self._hold = None
        if release is not None:
            self._draw(release)

    def _expired(self) -> None:
        self._hold = None
        self._release(self._policy.expired())
