"""A compaction summary opens its originals as Markdown; a search hit inside opens them at it."""

from __future__ import annotations

import asyncio

import pytest
from textual.widgets import Markdown, OptionList

from chatui.tui.screens.originals import OriginalsScreen
from store import SessionManager

from .app_helpers import make_app, populate, text, wait_until


@pytest.fixture
def compacted(store):
    populate(store)
    manager = SessionManager(store)
    info = manager.create("Compacted talk", id="chat-compacted", model="demo")
    rows = [
        text("c0", "user", "Where should I **eat** in Porto?", 100),
        {
            "id": "c1",
            "role": "assistant",
            "parts": [
                {
                    "type": "tool-call",
                    "tool_call_id": "x",
                    "tool_name": "session_search",
                    "input": {"query": "porto"},
                }
            ],
            "created_at": "2024-10-03T11:41:00+00:00",
        },
        {"id": "c1b", "role": "assistant", "parts": [], "created_at": "2024-10-03T11:41:30+00:00"},
        text("c2", "assistant", "Try the **francesinha** at Café Santiago.", 102),
        text("c3", "user", "And a zymurgy tour?", 103),
        text("c4", "assistant", "Several cellars in Gaia run tours.", 104),
        text("c5", "user", "Thanks!", 105),
        text("c6", "assistant", "Enjoy Porto.", 106),
    ]
    asyncio.run(manager.append_all(info.id, rows))
    session = manager.get_session(info.id)
    session.add_compaction("Asked about food and port wine in Porto.", "c0", "c4")
    return info.id


async def test_enter_on_a_summary_opens_its_originals_as_markdown(store, compacted):
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        main = app.main
        assert main.session_id == compacted
        summary = next(v for v in main.chat_view.views if v.message.is_compaction)
        summary.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, OriginalsScreen))
        screen = app.screen
        headers = [str(s.render()) for s in screen.query(".original--header")]
        assert len(headers) == 5  # c0..c4 but the empty c1b
        shown = [w.id for w in screen.query(".original")]
        assert "orig-c1b" not in shown  # nothing to read: left out
        assert "orig-c1" in shown  # a tool call reads as "called …"
        bodies = [md.source for md in screen.query(Markdown)]
        assert "Try the **francesinha** at Café Santiago." in bodies  # rendered as Markdown
        rendered = " ".join(
            str(block.render()) for md in screen.query(Markdown) for block in md.children
        )
        assert "**" not in rendered and "francesinha" in rendered
        assert any(b.startswith("called session_search") for b in bodies)


async def test_a_search_hit_inside_a_compacted_range_opens_the_originals_at_it(store, compacted):
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+f", *"zymurgy")
        await wait_until(pilot, lambda: any(o.option_count for o in app.screen.query(OptionList)))
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, OriginalsScreen))
        screen = app.screen
        assert isinstance(screen, OriginalsScreen) and screen.hit == "c3"
        assert screen.query_one("#orig-c3").has_class("-hit")
        assert app.main.tree.hit == "c3"
