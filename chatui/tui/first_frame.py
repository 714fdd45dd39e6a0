"""`FirstFrame`: when a sent question and its reply's first words reach the screen.

Measured (README, "Performance"): a reply sent at once arrives ~10 ms after
enter; drawing the question first cost a frame the words then waited behind.
So the question waits for its reply's first words and both are drawn in one
frame; a model that thinks gets its question drawn after `QUESTION_HOLD`.
And whatever is heard right behind a reply's first words (the rest of a reply
that came at once, its end, the tree and sidebar they redraw) waits until the
frame that shows those words is drawn: Textual draws when the screen's queue
is empty, and queued behind them, the first words waited for the whole reply.

The policy sees the events of the chat on screen in order and answers with
`Release`s: the events to draw now, as one batch (one frame). It never
touches the screen: the pane runs the hold's timer (`expired`), says when
the first words' frame is drawn (`drawn`), and draws each release inside one
`App.batch_update()` — a batch opened and closed by one coroutine, so a frame
can never stay suspended (no backstop timer).

Delta texts never wait here: they go straight to their reply's stream (the
view draws them); the policy only needs to know a reply's words came.

A reply's usage waits for the event after it: the engine always follows it with its
reply's end (`ReplyFinished`, after the server's usage is checked: ~20 ms with a
local server) or the job's end, and drawn alone it was a frame of its own for the
sidebar's spend line, with the turn's end the next frame (issue 22).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.events import (
    JobEnded,
    JobEvent,
    MessageStored,
    ReplyDelta,
    ReplyFinished,
    TurnFailed,
    UsageRecorded,
)

__all__ = ["QUESTION_HOLD", "FirstFrame", "Release"]

QUESTION_HOLD = 0.04
"""Seconds a sent question waits for its reply's first words before it is drawn alone:
a reply sent at once arrives ~10 ms after enter (up to ~30 under load), and drawing the
question first cost a frame (6-15 ms) the words then waited behind, plus the update
grid's next slot. A model that thinks pays this once, before its question shows."""


@dataclass(frozen=True)
class Release:
    """Events to draw now, in order, as one batch."""

    events: tuple[JobEvent, ...]
    first_words: bool = False
    """The batch shows a reply's first words: call `FirstFrame.drawn` once the frame
    that shows them is on the terminal (what came behind them waits until then)."""


class FirstFrame:
    """The first-frame policy of the chat on screen (see the module's notes)."""

    def __init__(self, hold: float | None = None) -> None:
        self.hold = QUESTION_HOLD if hold is None else hold
        """Seconds a question waits for its words (the caller runs the timer)."""
        self._question: list[JobEvent] | None = None
        self._behind: list[JobEvent] | None = None
        self._worded: set[str] = set()
        self._usage: list[JobEvent] = []
        """A usage heard with nothing held: drawn with the event after it."""

    @property
    def holding(self) -> bool:
        """A sent question is held for its words: run a timer of `hold` seconds that
        calls `expired` (stop it when a release comes first)."""
        return self._question is not None

    @property
    def waiting(self) -> bool:
        """Events wait behind a reply's first words until their frame is drawn."""
        return self._behind is not None

    def heard(self, event: JobEvent) -> Release | None:
        """An event of the chat on screen; what to draw now (None: nothing yet)."""
        if isinstance(event, ReplyDelta) and (
            event.kind != "text" or event.message_id in self._worded
        ):
            return None  # its text went to the reply's stream: nothing to draw here
        usage, self._usage = self._usage, []
        if isinstance(event, UsageRecorded) and self._question is None and self._behind is None:
            self._usage = [*usage, event]  # drawn with what follows it
            return None
        release = self._heard(event)
        if not usage:
            return release
        if release is not None:
            return Release((*usage, *release.events), first_words=release.first_words)
        held = self._question if self._question is not None else self._behind
        if held is None:  # nothing drawn yet, nothing held: it waits on
            self._usage = usage
        else:
            held[:0] = usage
        return None

    def _heard(self, event: JobEvent) -> Release | None:
        first = False
        if isinstance(event, ReplyDelta):  # a reply's first words (`heard`)
            self._worded.add(event.message_id)
            first = True
        elif isinstance(event, ReplyFinished):
            self._worded.discard(event.message.id)
        if self._question is not None:
            self._question.append(event)
            if first or isinstance(event, JobEnded | TurnFailed):
                return self._release_question(first_words=first)
            return None
        if self._behind is not None:
            self._behind.append(event)
            return None
        if isinstance(event, MessageStored) and event.message.role == "user":
            self._question = [event]  # drawn with its reply's first words
            return None
        if first:
            self._behind = []
            return Release((event,), first_words=True)
        return Release((event,))

    def expired(self) -> Release | None:
        """The hold ran out before the words: the question is drawn alone."""
        if self._question is None:
            return None
        return self._release_question(first_words=False)

    def drawn(self) -> Release | None:
        """The first words' frame is on the terminal: what waited behind it."""
        behind, self._behind = self._behind, None
        return Release(tuple(behind)) if behind else None

    def reset(self) -> None:
        """Another chat is on screen: what is held is dropped (the chat shown next is
        read from the store, where everything held is already)."""
        self._question = None
        self._behind = None
        self._worded.clear()
        self._usage = []

    def _release_question(self, *, first_words: bool) -> Release:
        held, self._question = self._question or [], None
        if first_words:
            self._behind = []
        return Release(tuple(held), first_words=first_words)
