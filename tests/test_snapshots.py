"""Screenshots of the main screens (pytest-textual-snapshot); each says what you should see."""

from __future__ import annotations

import pytest

from store import StoreContextProvider
from store.schema import BlockWriteRow
from widgets import ChatInput

from .app_helpers import T0, make_app, populate, wait_until

SIZE = (140, 36)


@pytest.fixture
def app(store):
    populate(store)
    memory = StoreContextProvider(store, "global", "memory")
    import asyncio

    asyncio.run(memory.set("Prefers walking tours. Vegetarian. Travels in October.\n" * 66))
    with store.write():  # the write's time is in the inspector's list: the same every run
        store.run(BlockWriteRow.update(written_at=T0.isoformat()))
    return make_app(store, warm_llm=False)


async def _settle(pilot) -> None:
    """The last chat drawn and the input focused (its cursor is in every screenshot)."""
    main = pilot.app.main
    await wait_until(pilot, lambda: main.chat is not None and pilot.app.focused is main.chat_input)
    for box in pilot.app.query(ChatInput):
        box.cursor_blink = False
    await pilot.pause()


def test_main_screen(app, snap_compare):
    """You should see the "Lisbon trip" chat: the tree on the left drawn like `git log
    --graph` — the active path down the left edge (filled ● ◆ glyphs), the old reply
    "Day one: Alfama…" and the other question "What about food?" forking off with ├─
    (hollow glyphs, ‹1/2› marks), every branch visible; the chat in the middle ending with
    "The Gulbenkian is a must.", the input box, and the sidebar on the right with gauges
    for soul, memory (908/1,100, in the warning colour) and scratchpad, then the context
    gauge and spend lines; the footer lists the keys."""
    assert snap_compare(app, terminal_size=SIZE, run_before=_settle)


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
def test_main_screen_at_size(app, snap_compare, size):
    """You should see the branched "Lisbon trip" chat with the chat pane at least 60
    columns wide and the input box visible. At 80×24 the tree is a 20-column strip (rows
    cut with …) and the sidebar is not shown (ctrl+b opens it as a drawer); at 120×40 the
    tree and the sidebar both sit beside the chat, a little narrower than at 200×60, where
    they have their full widths (36 and 34)."""
    assert snap_compare(app, terminal_size=size, run_before=_settle)


def test_tree_focused_on_a_sibling(app, snap_compare):
    """You should see the tree focused (ctrl+t) with the cursor bar on the old reply
    "Day one: Alfama…" (‹1/2›), reached with k from the path; the footer shows the tree's
    keys ([ ] siblings, enter shows the branch, space folds, r e f, z full screen)."""

    async def focus(pilot) -> None:
        await _settle(pilot)
        await pilot.press("ctrl+t", "home", "j")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=focus)


def test_sidebar_drawer_at_80_columns(app, snap_compare):
    """You should see, at 80×24, the context sidebar opened with ctrl+b as a drawer over
    the right of the chat (an accent border on its left edge), the tree strip still on the
    left; escape would close it."""

    async def drawer(pilot) -> None:
        await _settle(pilot)
        await pilot.press("ctrl+b")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=(80, 24), run_before=drawer)


def test_sidebar_gauges(app, snap_compare):
    """You should see the sidebar with the memory gauge at 908/1,100, its bar four-fifths
    full in the warning colour, soul read-only (no bar fill), scratchpad empty at 0/600,
    and the context line — the whole next request: prompt, tools and messages, 1.5k —
    against the demo model's window, "(demo)" saying where it came from; the model line
    says "demo (this chat's)"."""
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


def test_memory_inspector(app, snap_compare):
    """You should see the memory inspector over the chat: "memory · writable ·
    908/1,100 tokens", that it belongs to every chat (global) with its description,
    the block's text ("Prefers walking tours. Vegetarian. Travels in October." repeated)
    in an editor (not focused, so no cursor), under it the block's one write ("#1 … · a
    program · every branch — Prefers walking tours…"), and the hint that ctrl+s saves."""

    async def inspect(pilot) -> None:
        await _settle(pilot)
        pilot.app.main.sidebar.gauge("memory").focus()
        await pilot.press("enter")
        await pilot.pause(0.3)
        pilot.app.screen.set_focus(None)  # no blinking cursor: the same picture every run
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=inspect)


def test_prompt_screen(app, snap_compare):
    """You should see the next request's panel: the model (demo), the system prompt's and
    the tools' token counts in the title, then the messages' and the whole request's
    (1,509: the sidebar's context figure), the prompt itself (SOUL, MEMORY with its
    budget, SCRATCHPAD banners) and, below, one collapsed line per tool with its count."""

    async def prompt(pilot) -> None:
        await _settle(pilot)
        await pilot.press("f2")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=prompt)
