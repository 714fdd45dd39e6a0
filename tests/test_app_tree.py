"""The tree pane in the app: its key, drawers at small sizes, widths, folds, full screen."""

from __future__ import annotations

import pytest
from textual.widgets import OptionList

from chatui.core.ui_state import UiState, load_state, save_state
from chatui.tui.panes import CHAT_MIN, plan_panes
from chatui.tui.screens.tree import TreeScreen
from store import SessionManager
from widgets import ChatInput, ChatView, ContextSidebar, MessageTree

from .app_helpers import make_app, populate, screen_lines, text, wait_until


@pytest.fixture
def chats(store):
    return populate(store)


def preview_text(app) -> str:
    """The full-screen tree's preview as a user reads it."""
    region = app.screen.query_one("#tree-preview").region
    lines = screen_lines(app)[region.y : region.bottom]
    return "\n".join(line[region.x : region.right] for line in lines)


async def long_chat(store, n: int = 40) -> str:
    """A chat of `n` messages in one line (newest chat: it opens first)."""
    manager = SessionManager(store)
    info = manager.create("Long talk", id="chat-long", model="demo")
    rows = [
        text(f"m{i}", "user" if i % 2 == 0 else "assistant", f"line {i}", 40 + i) for i in range(n)
    ]
    await manager.append_all(info.id, rows)
    return info.id


def test_pane_plan_keeps_the_chat_readable_at_every_width():
    for width in range(40, 260, 7):
        plan = plan_panes(width)
        beside = (plan.tree_width if plan.tree == "beside" else 0) + (
            plan.sidebar_width if plan.sidebar == "beside" else 0
        )
        assert width - beside >= min(CHAT_MIN, width), width
    assert plan_panes(80).tree == "beside" and plan_panes(80).sidebar == "drawer"
    assert plan_panes(60).tree == "drawer"
    big = plan_panes(200, tree_width=50, sidebar_width=40)
    assert (big.tree, big.tree_width, big.sidebar_width) == ("beside", 50, 40)
    assert plan_panes(200, tree_width=10_000).tree_width == 90  # a hand-edited width is capped


async def test_at_80_columns_the_chat_keeps_60_and_the_sidebar_is_a_drawer(store, chats):
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        main = app.main
        chat = main.query_one(ChatView)
        assert chat.region.width >= 58  # 60 for the centre column, its padding inside
        assert main.query_one("#center").region.width >= CHAT_MIN
        assert main.query_one(ChatInput).region.bottom <= 23  # above the footer
        assert main.tree.display and not main.sidebar.display
        await pilot.press("ctrl+b")  # the sidebar opens over the chat ...
        await pilot.pause()
        assert main.sidebar.display and main.sidebar.has_class("-drawer")
        assert main.focused is main.sidebar.gauge("soul")  # ready for enter on a gauge
        assert main.query_one("#center").region.width >= CHAT_MIN  # ... not beside it
        await pilot.press("escape")  # and escape closes it
        await pilot.pause()
        assert not main.sidebar.display


async def test_at_60_columns_the_tree_is_a_drawer_its_key_opens(store, chats):
    app = make_app(store)
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        main = app.main
        assert not main.tree.display and main.query_one(ChatInput).region.height > 0
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert main.tree.display and main.focused is main.tree
        assert main.query_one("#center").region.width == 60  # the tree floats over it
        await pilot.press("escape")
        await pilot.pause()
        assert not main.tree.display and isinstance(main.focused, ChatInput)


async def test_tree_key_focuses_and_escape_returns(store, chats):
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        main = app.main
        await pilot.press("ctrl+t")
        assert main.focused is main.tree
        assert main.tree.cursor_message_id == "a4"  # the cursor starts on the active leaf
        await pilot.press("escape")
        assert isinstance(main.focused, ChatInput)


async def test_pane_widths_change_from_the_keyboard_and_are_remembered(store, chats):
    app = make_app(store)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        main = app.main
        await pilot.press("ctrl+t", "greater_than_sign", "greater_than_sign")
        await pilot.pause()
        assert main.tree.region.width == 44
        main.sidebar.focus()
        await pilot.press("less_than_sign")
        await pilot.pause()
        assert main.sidebar.region.width == 30
    state = load_state()
    assert (state.tree_width, state.sidebar_width) == (44, 30)
    again = make_app(store, ui_state=state)
    async with again.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        assert again.main.tree.region.width == 44


async def test_folds_survive_redraws_branch_switches_and_restarts(store, chats):
    sid = await long_chat(store)
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        main = app.main
        assert main.session_id == sid
        tree = main.tree
        assert tree.rows[1].kind == "fold" and len(tree.rows[1].hidden) == 35
        await pilot.press("ctrl+t", "home", "down", "enter")
        await pilot.pause()
        assert len(tree.rows) == 40
        await main.pane.redraw()
        assert len(tree.rows) == 40
    assert load_state().tree_unfolded == {sid: ["m1"]}
    again = make_app(store, ui_state=load_state())
    async with again.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        assert len(again.main.tree.rows) == 40


async def test_search_hit_is_highlighted_in_the_tree(store, chats):
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+f", *"pastéis")
        await wait_until(pilot, lambda: any(o.option_count for o in app.screen.query(OptionList)))
        await pilot.press("enter")
        tree = app.main.tree
        await wait_until(pilot, lambda: tree.hit == "a3")
        assert tree.cursor_message_id == "a3"


async def test_full_screen_tree_opens_previews_and_selects(store, chats):
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        main = app.main
        await pilot.press("ctrl+t", "z")
        await pilot.pause()
        assert isinstance(app.screen, TreeScreen)
        big = app.screen.query_one(MessageTree)
        assert big.cursor_message_id == "a4"
        await pilot.press("home", "down")  # the old reply a1
        await wait_until(
            pilot,
            lambda: "Day one: Alfama" in preview_text(app),
        )
        await pilot.press("enter")  # shows that branch on the main screen
        await pilot.pause()
        assert app.screen is main
        assert main.chat_view.shown_ids == ["q1", "a1"]


async def test_the_full_screen_preview_shows_a_reply_as_the_chat_does(store):
    """The preview beside the big tree printed a reply's Markdown source ("## Plan",
    "**Sure!**", the fences); it now renders it as the chat does."""
    manager = SessionManager(store)
    info = manager.create("Markdown talk", model="demo")
    reply = "## Plan\n\n**Sure!** Run `pip`:\n\n```python\nprint(2*3)\n```\n"
    await manager.append_all(
        info.id,
        [text("q1", "user", "A plan, please", 1), text("a1", "assistant", reply, 2)],
    )
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("ctrl+t", "z")
        await wait_until(pilot, lambda: isinstance(app.screen, TreeScreen))
        await wait_until(pilot, lambda: "Sure! Run pip:" in preview_text(app))
        words = preview_text(app)
        assert "print(2*3)" in words and "Plan" in words and "assistant" in words
        assert not any(mark in words for mark in ("##", "**", "```", "`pip`")), words


def test_state_file_keeps_widths_and_folds(tmp_path):
    path = tmp_path / "state.json"
    state = UiState(tree_width=50)
    state.remember_unfolded("chat-1", ["m9", "m1"])
    save_state(state, path)
    back = load_state(path)
    assert back.tree_width == 50 and back.tree_unfolded == {"chat-1": ["m1", "m9"]}
    path.write_text('{"tree_width": "wide", "tree_unfolded": {"x": "nope", "y": [1, "m"]}}')
    bad = load_state(path)
    assert bad.tree_width == 36 and bad.tree_unfolded == {"y": ["m"]}


async def test_sidebar_focus_does_not_lose_the_input(store, chats):
    app = make_app(store)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        main = app.main
        main.query_one(ContextSidebar).focus()
        await pilot.press("escape")
        assert isinstance(main.focused, ChatInput)


async def test_the_chat_follows_the_tree_cursor(store, chats):
    sid = await long_chat(store, 80)
    app = make_app(store)
    async with app.run_test(size=(140, 30)) as pilot:
        await pilot.pause()
        main = app.main
        assert main.session_id == sid
        await pilot.press("ctrl+t", "home")  # the first message, far above the chat's view

        def scrolled_to_m0() -> bool:  # the cursor rests: the chat scrolls to it
            view = main.chat_view.view_for("m0")
            if view is None:
                return False
            return abs(main.chat_view.scroll_offset.y - view.virtual_region.y) <= 2

        await wait_until(pilot, scrolled_to_m0)
        assert main.focused is main.tree  # the preview does not steal the focus


async def test_rows_drawn_again_from_their_cache_are_the_rows_drawn_afresh(store, chats):
    """The tree keeps each row's drawing by what it shows: whatever changed (the cursor,
    the focus, a fold, a search hit, a branch, the theme), a row from the cache is the
    row drawn anew."""
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        tree = app.main.tree

        def drawn() -> list[str]:
            return [
                "".join(f"{s.text}{s.style}" for s in tree.render_line(y))
                for y in range(tree.size.height)
            ]

        def check() -> None:
            cached = drawn()
            tree._strips.clear()
            assert cached == drawn()
            assert any(line.strip() for line in cached)

        check()
        await pilot.press("ctrl+t")  # focus: the cursor bar's colours change
        await pilot.pause()
        check()
        await pilot.press("up", "up")
        await pilot.pause()
        check()
        await pilot.press("enter")  # another branch: leaf, path and lanes change
        await pilot.pause()
        check()
        tree.hit = next(r.message_id for r in tree.rows if r.message_id != tree.cursor_message_id)
        tree.refresh()
        await pilot.pause()
        check()
        await pilot.press("escape")
        app.theme = "textual-light" if app.theme != "textual-light" else "nord"
        await pilot.pause()
        check()


async def test_a_trees_redraw_computes_its_rows_styles_once_not_once_a_row(
    store, chats, monkeypatch
):
    """Textual computes a component style again after every repaint; the rows' styles
    are kept until the tree's styles, focus or theme change, and rows drawn with them
    are the rows drawn afresh."""
    from textual.geometry import Region

    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        tree = app.main.tree
        region = Region(0, 0, tree.size.width, tree.size.height)

        def rendered() -> list[str]:
            tree._strips.clear()  # every row drawn again
            strips = tree.render_lines(region)
            return ["".join(f"{s.text}{s.style}" for s in strip) for strip in strips]

        def afresh() -> list[str]:
            tree._strips.clear()
            tree._row_styles, tree._row_styles_for = {}, None
            return rendered()

        reads: list[str] = []
        component_style = tree.get_component_rich_style

        def counting(*names, **kwargs):
            reads.extend(names)
            return component_style(*names, **kwargs)

        monkeypatch.setattr(tree, "get_component_rich_style", counting)
        rows = sum(1 for r in tree.rows if r.kind == "message")
        assert rows >= 4
        for change in ("none", "focus", "theme"):
            if change == "focus":
                await pilot.press("ctrl+t")
            elif change == "theme":
                app.theme = "textual-light" if app.theme != "textual-light" else "nord"
            await pilot.pause()
            first = rendered()
            reads.clear()
            tree.refresh()  # a repaint: Textual forgets the component styles
            assert rendered() == first
            assert len(reads) <= 2 < rows  # the cursor's bar, a hit's: not each row's
            assert afresh() == first
