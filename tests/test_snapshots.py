"""Screenshots of the main screens (pytest-textual-snapshot); each says what you should see."""

from __future__ import annotations

import pytest

from store import StoreContextProvider
from widgets import ChatInput

from .app_helpers import make_app, populate

SIZE = (140, 36)


@pytest.fixture
def app(store):
    populate(store)
    memory = StoreContextProvider(store, "global", "memory")
    import asyncio

    asyncio.run(memory.set("Prefers walking tours. Vegetarian. Travels in October.\n" * 66))
    return make_app(store, warm_llm=False)


async def _settle(pilot) -> None:
    """The last chat drawn and the input focused (its cursor is in every screenshot)."""
    for _ in range(200):
        main = pilot.app.main
        if main.chat is not None and pilot.app.focused is main.chat_input:
            break
        await pilot.pause(0.02)
    for box in pilot.app.query(ChatInput):
        box.cursor_blink = False
    await pilot.pause()


def test_main_screen(app, snap_compare):
    """You should see the "Lisbon trip" chat: the tree on the left with the active path
    (you/ai rows, ‹2/2› marks and ▶ on messages with hidden branches), the chat in the
    middle ending with "The Gulbenkian is a must.", the input box, and the sidebar on the
    right with gauges for soul, memory (908/1,100, in the warning colour) and scratchpad,
    then the context gauge and spend lines; the footer lists the keys."""
    assert snap_compare(app, terminal_size=SIZE, run_before=_settle)


def test_tree_with_branches_expanded(app, snap_compare):
    """You should see the tree with every hidden branch expanded: under "Plan three days"
    the old reply "Day one: Alfama…" marked ⎇, and under "Start in Belém" the other
    question "What about food?" (⎇) with its answer inside."""

    async def expand(pilot) -> None:
        await _settle(pilot)
        tree = pilot.app.main.tree
        tree.focus()
        tree.root.expand_all()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=expand)


def test_sidebar_gauges(app, snap_compare):
    """You should see the sidebar with the memory gauge at 908/1,100, its bar four-fifths
    full in the warning colour, soul read-only (no bar fill), scratchpad empty at 0/600,
    and the context line against the demo model's window, "(demo)" saying where it came from."""
    assert snap_compare(app, terminal_size=(140, 36), run_before=_settle)


def test_search_screen(app, snap_compare):
    """You should see the search dialog over the chat with the query "belém" and two hits
    from "Lisbon trip" (assistant), each with its date and the word highlighted."""

    async def search(pilot) -> None:
        await _settle(pilot)
        await pilot.press("ctrl+f", *"belém")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=search)


def test_chat_list(app, snap_compare):
    """You should see the chat list with three chats newest first — Lisbon trip (marked ●,
    the open one), Soup recipes, Python help — with no agent, status active, dates
    2024-10-03, message counts 7, 2 and 2, model demo, and the key hints at the bottom."""

    async def chats(pilot) -> None:
        await _settle(pilot)
        await pilot.press("ctrl+s")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=chats)
