"""The first-frame policy on its own: which events of the chat on screen are drawn when.

No screen here: the policy answers with releases (events to draw as one frame), and
the pane's part (timers, frames) is tested through the app in test_live_chats.
"""

from __future__ import annotations

from chatui.core.events import (
    JobEnded,
    MessageStored,
    Notice,
    ReplyDelta,
    ReplyFinished,
    ReplyStarted,
    TurnFailed,
    UsageRecorded,
)
from chatui.tui.first_frame import QUESTION_HOLD, FirstFrame, Release
from store import Message

SID = "chat"


def question(text: str = "Hi?") -> MessageStored:
    return MessageStored(SID, Message("q1", "user", [{"type": "text", "text": text}]))


def started(mid: str = "r1") -> ReplyStarted:
    return ReplyStarted(SID, Message(mid, "assistant", []), "demo")


def words(text: str, mid: str = "r1") -> ReplyDelta:
    return ReplyDelta(SID, mid, text)


def finished(mid: str = "r1", text: str = "Hello") -> ReplyFinished:
    return ReplyFinished(
        SID, Message(mid, "assistant", [{"type": "text", "text": text}]), "complete"
    )


def test_a_question_waits_for_its_replys_first_words_and_both_are_one_release():
    policy = FirstFrame()
    assert policy.heard(question()) is None
    assert policy.holding  # the pane runs a timer of `hold` seconds now
    assert policy.heard(started()) is None
    release = policy.heard(words("Hel"))
    assert release == Release((question(), started(), words("Hel")), first_words=True)
    assert not policy.holding


def test_what_comes_behind_the_first_words_waits_for_their_frame():
    policy = FirstFrame()
    policy.heard(question())
    policy.heard(started())
    policy.heard(words("Hel"))
    assert policy.waiting
    assert policy.heard(words("lo")) is None  # later words go to the stream, not here
    assert policy.heard(finished()) is None
    assert policy.heard(JobEnded(SID, "finished")) is None
    assert policy.drawn() == Release((finished(), JobEnded(SID, "finished")))
    assert not policy.waiting
    assert policy.heard(Notice(SID, "later")) == Release((Notice(SID, "later"),))


def test_a_model_that_thinks_gets_its_question_drawn_when_the_hold_runs_out():
    policy = FirstFrame()
    policy.heard(question())
    policy.heard(started())
    assert policy.expired() == Release((question(), started()))
    assert not policy.holding and policy.expired() is None
    # its words, later: a frame of their own, and what follows waits for it
    assert policy.heard(words("Late")) == Release((words("Late"),), first_words=True)
    assert policy.heard(finished(text="Late")) is None
    assert policy.drawn() == Release((finished(text="Late"),))


def test_a_job_that_ends_during_the_hold_releases_everything_at_once():
    policy = FirstFrame()
    policy.heard(question())
    policy.heard(started())
    ended = JobEnded(SID, "cancelled")
    assert policy.heard(ended) == Release((question(), started(), ended))
    failed = TurnFailed(SID, "The API key was rejected")
    policy.heard(question())
    assert policy.heard(failed) == Release((question(), failed))


def test_a_regenerated_reply_is_drawn_at_once_and_its_first_words_get_their_frame():
    policy = FirstFrame()
    assert policy.heard(started("r2")) == Release((started("r2"),))
    assert policy.heard(words("New", "r2")) == Release((words("New", "r2"),), first_words=True)
    assert policy.heard(UsageRecorded(SID, "r2", 1, 2, 0.0)) is None
    assert policy.drawn() == Release((UsageRecorded(SID, "r2", 1, 2, 0.0),))
    assert policy.drawn() is None  # nothing more waits


def test_reasoning_is_not_words_and_draws_nothing():
    policy = FirstFrame()
    policy.heard(question())
    assert policy.heard(ReplyDelta(SID, "r1", "thinking…", "reasoning")) is None
    assert policy.holding


def test_switching_chats_drops_what_is_held():
    policy = FirstFrame()
    policy.heard(question())
    policy.heard(started())
    policy.reset()
    assert not policy.holding and not policy.waiting
    assert policy.expired() is None and policy.drawn() is None


def test_the_hold_is_short():
    assert FirstFrame().hold == QUESTION_HOLD <= 0.05
    assert FirstFrame(hold=2.0).hold == 2.0


def test_a_reply_s_usage_is_drawn_with_its_end_not_in_a_frame_of_its_own():
    """Issue 22: the engine follows a usage with its reply's end (~20 ms later, behind
    the server's usage check); drawn alone, the sidebar's spend line was a frame of its
    own and the turn's end the next."""
    policy = FirstFrame()
    policy.heard(question())
    policy.heard(started())
    policy.heard(words("Hel"))
    policy.drawn()
    usage = UsageRecorded(SID, "r1", 40, 5, 0.0)
    assert policy.heard(usage) is None
    assert policy.heard(words("lo")) is None  # still the stream's
    assert policy.heard(finished()) == Release((usage, finished()))
    # a job that fails after its usage: drawn with the failure; a usage before a new
    # question's hold waits with the question
    assert policy.heard(usage) is None
    failed = TurnFailed(SID, "The server went away")
    assert policy.heard(failed) == Release((usage, failed))
    assert policy.heard(usage) is None
    assert policy.heard(question()) is None
    assert policy.expired() == Release((usage, question()))
    assert policy.heard(usage) is None
    policy.reset()  # another chat: dropped with the rest
    assert policy.heard(JobEnded(SID, "finished")) == Release((JobEnded(SID, "finished"),))
