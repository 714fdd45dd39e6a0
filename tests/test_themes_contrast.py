"""No theme draws text in its own background colour (the light theme's white-on-white)."""

from __future__ import annotations

import asyncio

import pytest
from rich.segment import Segment

from store import SessionManager

from .app_helpers import make_app, populate, text


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


def invisible(segments: list[Segment]) -> list[str]:
    """Text whose foreground is (nearly) its background: nothing to see."""
    bad = []
    for seg in segments:
        style = seg.style
        if style is None or style.color is None or style.bgcolor is None:
            continue
        if not any(c.isalnum() or c in GLYPHS for c in seg.text):
            continue  # spaces, pane borders and rules are meant to be faint
        fg = style.color.get_truecolor()
        bg = style.bgcolor.get_truecolor(foreground=False)
        if style.reverse:
            fg, bg = bg, fg
        if sum(abs(a - b) for a, b in zip(fg, bg, strict=True)) < NEAR:
            bad.append(seg.text.strip())
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
            update = app.screen._compositor.render_full_update()
            segments = [seg for line in update.strips for strip in line for seg in strip]
            bad = invisible(segments)
            if bad:
                problems[name] = bad[:5]
        assert problems == {}, problems
