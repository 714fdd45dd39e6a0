"""Compare (issue 14): a reply beside its siblings, differing words marked; enter keeps one."""

from __future__ import annotations

import asyncio

import pytest

from chatui.tui.screens.compare import CompareScreen, compared_text, reply_facts
from store import Message, SessionManager
from widgets import DiffView, MessageView, word_diff

from .app_helpers import make_app, notices, set_times, text, wait_until

SIZE = (80, 24)


def reply(mid: str, body: str, minutes: int, model: str, usage=None, first=None) -> dict:
    data = text(mid, "assistant", body, minutes)
    data["metadata"] = {"model": model, "status": "complete"}
    if first is not None:
        data["metadata"]["first_token_s"] = first
    if usage is not None:
        data["token_usage"] = usage
    return data


@pytest.fixture
def chat(store):
    manager = SessionManager(store)
    info = manager.create("Haiku", id="chat-haiku", model="demo")
    items = [
        (text("q", "user", "A haiku about autumn rain", 0), None),
        (
            reply(
                "r1",
                "Cold rain on the roof\nmaple leaves drift to the ground\nthe kettle hums low",
                1,
                "demo",
                {"input": 20, "output": 17, "cost": 0.0},
                0.12,
            ),
            "q",
        ),
        (
            reply(
                "r2",
                "Soft rain on the roof\nred leaves drift to the ground\nthe kettle sings",
                2,
                "openai/gpt-4o-mini",
                {"input": 20, "output": 15, "cost": 0.0021},
                0.48,
            ),
            "q",
        ),
        (reply("r3", "Autumn rain falls", 3, "ollama/llama3.2"), "q"),
    ]

    async def fill() -> None:
        for message, parent in items:
            await manager.append(info.id, message, parent)

    asyncio.run(fill())
    manager.update_metadata(info.id, active_leaf="r1")
    set_times(store, info.id, 10)
    return info.id


def test_word_diff_marks_only_the_words_that_differ():
    ours, theirs = word_diff("Cold rain on the roof", "Soft rain on the roof")
    assert [w for piece, changed in ours if changed for w in piece.split()] == ["Cold"]
    assert [w for piece, changed in theirs if changed for w in piece.split()] == ["Soft"]
    assert "".join(p for p, _ in ours) == "Cold rain on the roof"  # nothing lost
    same, _ = word_diff("a  b\nc", "a b c")  # whitespace alone is no change
    assert not any(changed for _, changed in same)
    assert word_diff("", "") == ([], [])


def test_reply_facts_say_what_the_reply_stored():
    m = Message.from_dict(
        reply(
            "x", "hi", 0, "openai/gpt-4o-mini", {"input": 1200, "output": 15, "cost": 0.0021}, 0.48
        )
    )
    assert (
        reply_facts(m, "demo") == "openai/gpt-4o-mini · 1.2k→15 tok · $0.0021 · first token 0.48s"
    )
    bare = Message.from_dict(text("y", "assistant", "hi", 0))
    assert reply_facts(bare, "demo") == "?"


def test_a_reply_of_tool_calls_only_is_compared_by_its_calls():
    """Issue 22, 6: `v` on replies that only called tools showed two empty panes."""
    calls = Message(
        id="c",
        role="assistant",
        parts=[
            {
                "type": "tool-call",
                "tool_call_id": "1",
                "tool_name": "set_context",
                "input": {"label": "memory", "content": "tea"},
            }
        ],
        metadata={"status": "tool_calls"},
    )
    assert compared_text(calls) == 'called set_context {"label": "memory", "content": "tea"}'
    empty = Message(id="e", role="assistant", parts=[], metadata={"status": "cancelled"})
    assert compared_text(empty) == "(cancelled before any text)"
    words = Message.from_dict(text("w", "assistant", "Plain words.", 0))
    assert compared_text(words) == "Plain words."


async def test_v_opens_the_siblings_side_by_side_and_enter_keeps_one(store, chat):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("up")  # the reply r1
        assert isinstance(app.focused, MessageView) and app.focused.message_id == "r1"
        await pilot.press("v")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert screen.shown == ("r1", "r2")
        left = screen.query_one("#compare-left-text", DiffView)
        right = screen.query_one("#compare-right-text", DiffView)
        assert left.changed_words == ["Cold", "maple", "hums", "low"]
        assert right.changed_words == ["Soft", "red", "sings"]
        facts = str(screen.query_one("#compare-right-facts").render())
        assert "openai/gpt-4o-mini" in facts and "$0.0021" in facts and "0.48s" in facts
        assert "demo (chat's)" in str(screen.query_one("#compare-left-facts").render())
        # Both panes fit 80×24 side by side.
        for side in ("left", "right"):
            region = screen.query_one(f"#compare-{side}").region
            assert region.width >= 30 and region.right <= 80 and region.bottom <= 24
        await pilot.press("right")  # the right pane cycles, skipping the left one
        assert screen.shown == ("r1", "r3")
        await pilot.press("right")
        assert screen.shown == ("r1", "r2")
        await pilot.press("left")
        assert screen.shown == ("r1", "r3")
        await pilot.press("tab", "enter")  # keep the right one
        await pilot.pause()
        assert app.screen is app.main
        assert app.main.chat.active_leaf == "r3"
        assert SessionManager(app.store).get(chat).metadata["active_leaf"] == "r3"
        assert app.main.snapshot.history[-1].id == "r3"


async def test_escape_keeps_the_branch_and_a_lone_message_says_there_is_nothing(store, chat):
    app = make_app(store)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        await pilot.press("up", "v")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert app.main.chat.active_leaf == "r1"
        await pilot.press("up", "v")  # the question: it has no sibling
        await pilot.pause()
        assert app.screen is app.main
        await wait_until(pilot, lambda: "No sibling" in notices(app))


def test_compare_screen(store, chat, snap_compare):
    """You should see, at 80×24, two replies to "A haiku about autumn rain" side by
    side: left ‹1/3› (picked, ▶, accent border) by "demo (chat's)" with 20→17 tok and
    first token 0.12s, right ‹2/3› by openai/gpt-4o-mini with $0.0021 and 0.48s; the
    words that differ (Cold/maple/hums low against Soft/red/sings) on a warning-coloured
    background; the hint line at the bottom."""

    async def open_compare(pilot) -> None:
        # Under load the chat's views are drawn after `chat` is set: "up" before them
        # leaves the input focused, and "v" is typed into it.
        app = pilot.app
        await wait_until(pilot, lambda: app.main.chat is not None and app.main.chat_view.views)
        await pilot.press("up")
        await wait_until(pilot, lambda: isinstance(app.focused, MessageView))
        await pilot.press("v")
        await wait_until(
            pilot,
            lambda: (
                isinstance(app.screen, CompareScreen)
                and app.screen.query_one("#compare-right-text", DiffView).changed_words
            ),
        )
        await pilot.pause()

    assert snap_compare(
        make_app(store, warm_llm=False), terminal_size=SIZE, run_before=open_compare
    )
