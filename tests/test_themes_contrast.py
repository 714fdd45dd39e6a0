"""No theme draws text in its own background colour (the light theme's white-on-white)."""

from __future__ import annotations

import asyncio

import pytest
from rich.color import Color

from store import SessionManager

from .app_helpers import Run, make_app, populate, screen_runs, text


def tool_turn(store) -> None:
    """A reply that called a tool, and the tool's result: the rows that hid before."""
    manager = SessionManager(store)
    call = {
        "id": "t1",
        "role": "assistant",
        "parts": [
            {
                "type": "tool-call",
                "tool_call_id": "c1",
                "tool_name": "set_context",
                "input": {"label": "memory", "content": "likes trams"},
            }
        ],
        "created_at": "2024-10-03T09:27:00+00:00",
    }
    result = {
        "id": "t2",
        "role": "tool",
        "parts": [
            {
                "type": "tool-result",
                "tool_call_id": "c1",
                "tool_name": "set_context",
                "output": "saved",
            }
        ],
        "created_at": "2024-10-03T09:28:00+00:00",
    }
    asyncio.run(manager.append("chat-lisbon", call, "a4"))
    asyncio.run(manager.append("chat-lisbon", result, "t1"))
    asyncio.run(manager.append("chat-lisbon", text("t3", "assistant", "Noted.", 29), "t2"))


NEAR = 40
"""Summed RGB distance below which text cannot be told from its background (a focus
tint shifts a background a few steps: exact equality would miss white-on-white)."""


GLYPHS = "●○◆◇▪▫■□‹›…⇄┆"
"""Marks that carry meaning (the tree's role glyphs): they must show like text."""


def invisible(runs: list[Run]) -> list[str]:
    """Text whose colour is (nearly) its background's: nothing to see."""
    bad = []
    for run in runs:
        if run.background is None:
            continue  # the terminal's own background: its default colours
        if not any(c.isalnum() or c in GLYPHS for c in run.text):
            continue  # spaces, pane borders and rules are meant to be faint
        fg, bg = Color.parse(run.color).triplet, Color.parse(run.background).triplet
        assert fg is not None and bg is not None
        if sum(abs(a - b) for a, b in zip(fg, bg, strict=True)) < NEAR:
            bad.append(run.text.strip())
    return bad


@pytest.fixture
def chats(store):
    populate(store)
    tool_turn(store)


async def test_no_theme_draws_text_in_its_background_colour(store, chats):
    app = make_app(store, warm_llm=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        app.main.tree.focus()
        problems = {}
        for name in sorted(app.available_themes):
            app.theme = name
            await pilot.pause()
            bad = invisible(screen_runs(app))
            if bad:
                problems[name] = bad[:5]
        assert problems == {}, problems
