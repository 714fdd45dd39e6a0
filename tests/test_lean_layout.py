"""What a send lays out and renders: one layout for new messages (not its echo), none
for the tree's new rows, and a partial update renders only the widgets it writes."""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual._compositor import Compositor
from textual.geometry import Region

from chatui.tui.lean_compositor import LeanCompositor
from chatui.tui.lean_layout import EchoFreeLayout
from store import Message
from widgets import MessageView

from .app_helpers import fill_the_chat, make_app, populate, screen_lines, spy, wait_until


@pytest.fixture
def ids(store):
    return populate(store)


def count_layouts(monkeypatch, screen) -> list[int]:
    """How many times the screen is laid out from now on (its compositor's reflows)."""
    counted = [0]
    reflow = screen._compositor.reflow

    def counting(*args, **kwargs):
        counted[0] += 1
        return reflow(*args, **kwargs)

    monkeypatch.setattr(screen._compositor, "reflow", counting)
    return counted


async def chat_open(pilot):
    """The fixture's chat on screen and settled; its screen."""
    await wait_until(pilot, lambda: len(pilot.app.screen.query(MessageView)) >= 4)
    await settle(pilot)
    return pilot.app.screen


async def settle(pilot) -> None:
    """Until nothing is left to lay out or draw (a few idle turns of the app)."""
    for _ in range(5):
        await pilot.pause(0.05)


async def add_an_exchange(app, chat) -> None:
    """A question and its reply ("n1", "n2") mounted in one batch, as a send mounts them."""
    question = Message(id="n1", role="user", parts=[{"type": "text", "text": "Tram 28?"}])
    reply = Message(id="n2", role="assistant", parts=[{"type": "text", "text": "Take it early."}])
    with app.batch_update():
        await chat.add_message(question)
        await chat.add_message(reply)


async def test_new_messages_are_laid_out_once_not_again_by_their_own_sizes(store, ids, monkeypatch):
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await chat_open(pilot)
        assert isinstance(screen, EchoFreeLayout)
        layouts = count_layouts(monkeypatch, screen)
        await add_an_exchange(app, screen.chat_view)
        await settle(pilot)
        # Textual lays the screen out again for every widget the first layout sized
        # (its virtual size is a reactive asking for a layout): that echo is gone.
        assert layouts[0] == 1
        lines = "\n".join(screen_lines(app))
        assert "Tram 28?" in lines and "Take it early." in lines
        views = list(screen.query(MessageView))
        assert [v.message_id for v in views[-2:]] == ["n1", "n2"]
        assert all(v.size.height for v in views[-2:])


async def test_the_next_send_resolves_the_last_exchange_s_messages_no_more(store, ids, monkeypatch):
    """Issue 22: the echo of a layout (the new messages' virtual sizes asking for
    another) is dropped, but each request had counted itself into the key of its
    widget's cached box model, so the next send's layout resolved the box of the last
    exchange's messages, and of everything in them, again."""
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await chat_open(pilot)
        chat = screen.chat_view
        await add_an_exchange(app, chat)
        await settle(pilot)
        last = chat.views[-2:]
        resolved = [
            spy(monkeypatch, widget, "_resolve_extrema")  # a box model worked out afresh
            for view in last
            for widget in (view, *view.children)
        ]
        layouts = count_layouts(monkeypatch, screen)
        with app.batch_update():  # the next send's question and reply
            await chat.add_message(
                Message(id="n3", role="user", parts=[{"type": "text", "text": "And back?"}])
            )
            await chat.add_message(
                Message(id="n4", role="assistant", parts=[{"type": "text", "text": "By 12."}])
            )
        await settle(pilot)
        assert layouts[0] == 1
        assert [len(calls) for calls in resolved] == [0] * len(resolved)
        assert "By 12." in "\n".join(screen_lines(app))
        assert all(view.size.height for view in chat.views[-4:])


async def test_a_layout_s_frame_draws_the_messages_it_moved_from_their_kept_lines(
    store, ids, monkeypatch
):
    """Issue 22: a send's layout moves every message on screen (the chat follows its
    end), and its frame draws each of them; their lines were all kept, yet Textual
    worked out for each what only a line drawn afresh needs (its colours over all its
    ancestors', its titles, padding, opacity). Drawn from the kept lines now, the same."""
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        chat = await fill_the_chat(app, pilot)
        screen = app.screen
        screen.chat_input.cursor_blink = False  # each blink is a frame
        await settle(pilot)
        assert chat.max_scroll_y > 0
        compositor = screen._compositor
        shown = [
            widget
            for view in chat.views
            if view in compositor.visible_widgets
            for widget in (view, *view.children)
        ]
        afresh = [spy(monkeypatch, widget._styles_cache, "render") for widget in shown]
        kept = [spy(monkeypatch, widget._styles_cache, "render_widget") for widget in shown]
        await add_an_exchange(app, chat)
        await settle(pilot)
        moved = [w for w in shown if kept[shown.index(w)]]  # drawn in the layout's frame
        assert len(moved) > 20
        assert [len(afresh[shown.index(w)]) for w in moved] == [0] * len(moved)
        drawn = compositor.render_update(full=True).render_segments(app.console)
        for widget in screen.walk_children():  # every line drawn afresh: the same frame
            widget._styles_cache.clear()
        assert compositor.render_update(full=True).render_segments(app.console) == drawn


async def test_a_layout_arranges_the_whole_screen_once(store, ids, monkeypatch):
    """Issue 22: Textual's reflow arranges every widget (off screen too) into the full
    map, but left it marked stale when new widgets had been refreshed before the layout,
    so the first look-up of a widget's region after it arranged the whole screen, every
    message of the chat, a second time. The chat is scrolled (longer than the screen)."""
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await chat_open(pilot)
        await fill_the_chat(app, pilot)
        await settle(pilot)
        assert screen.chat_view.max_scroll_y > 0
        layouts = count_layouts(monkeypatch, screen)
        whole = spy(
            monkeypatch,
            screen._compositor,
            "_arrange_root",
            lambda root, size, visible_only=True: visible_only,
        )
        await add_an_exchange(app, screen.chat_view)
        await settle(pilot)
        assert layouts[0] == 1
        assert whole.count(False) == 1, whole  # the reflow's, not again for a region
        assert "Take it early." in "\n".join(screen_lines(app))


async def test_the_tree_s_new_rows_need_no_layout_until_a_scrollbar_comes(store, ids, monkeypatch):
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await chat_open(pilot)
        tree = screen.tree
        snap = screen.snapshot
        assert snap is not None
        layouts = count_layouts(monkeypatch, screen)
        messages = list(snap.tree)
        leaf = snap.active_leaf
        more = []
        for n in range(3):
            more.append(
                Message(
                    id=f"x{n}",
                    role="user" if n % 2 == 0 else "assistant",
                    parts=[{"type": "text", "text": f"row {n}"}],
                    parent_id=leaf,
                )
            )
            leaf = f"x{n}"
        tree.show([*messages, *more], leaf)
        await settle(pilot)
        assert layouts[0] == 0  # the rows fit: drawn in place
        assert tree.virtual_size.height == len(tree.rows)
        assert not tree.show_vertical_scrollbar
        assert any("row 2" in line for line in screen_lines(app))
        # Rows past its height bring a scrollbar, which narrows the rows: laid out.
        many = [  # questions asked again: each sibling is a row of its own
            Message(id=f"y{n}", role="user", parts=[{"type": "text", "text": f"again {n}"}])
            for n in range(tree.size.height)
        ]
        many = [replace(m, parent_id=leaf) for m in many]
        tree.show([*messages, *more, *many], leaf)
        await settle(pilot)
        assert tree.show_vertical_scrollbar
        assert layouts[0] >= 1
        assert tree.virtual_size.height == len(tree.rows)


def _written_update(compositor: Compositor, regions: list[Region], console) -> str:
    compositor._dirty_regions.update(regions)
    update = compositor.render_partial_update()
    assert update is not None
    return update.render_segments(console)


async def test_a_partial_update_renders_only_the_widgets_its_regions_meet(store, ids, monkeypatch):
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await chat_open(pilot)
        compositor = screen._compositor
        assert isinstance(compositor, LeanCompositor)
        views = list(screen.query(MessageView))
        first, last = views[0], views[-1]
        tree = screen.query_one("#tree").region
        # The tree's top line and the last message's line: their bounding box spans the
        # chat's messages between them, which Textual rendered every one of.
        regions = [
            Region(tree.x, tree.y, tree.width, 1),
            Region(last.region.x, last.region.y + 1, last.region.width, 1),
        ]
        rendered: list[str] = []
        for view in views:
            original = view.render_lines

            def counting(crop, view=view, original=original):
                rendered.append(view.message_id)
                return original(crop)

            monkeypatch.setattr(view, "render_lines", counting)
        ours = _written_update(compositor, regions, app.console)
        assert first.message_id not in rendered
        assert rendered == [last.message_id]
        compositor.__class__ = Compositor  # the same state, Textual's own renders
        try:
            theirs = _written_update(compositor, regions, app.console)
        finally:
            compositor.__class__ = LeanCompositor
        assert ours == theirs
        assert first.message_id in rendered  # Textual's did render it


async def test_the_tree_repaints_the_lines_whose_rows_changed(store, ids, monkeypatch):
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await chat_open(pilot)
        tree = screen.tree
        snap = screen.snapshot
        assert snap is not None
        drawn = spy(monkeypatch, tree, "render_line")
        question = Message(
            id="z1",
            role="user",
            parts=[{"type": "text", "text": "And trams?"}],
            parent_id=snap.active_leaf,
        )
        reply = Message(
            id="z2", role="assistant", parts=[{"type": "text", "text": "Line 28."}], parent_id="z1"
        )
        tree.show([*snap.tree, question, reply], "z2")
        await settle(pilot)
        # The two new rows, the old leaf's and the cursor's moves: not the whole pane.
        assert 0 < len(set(drawn)) <= 6 < tree.size.height
        shown = screen_lines(app)
        assert any("And trams?" in line for line in shown)
        tree.refresh()  # drawn whole, afresh: the same screen
        await settle(pilot)
        assert screen_lines(app) == shown


async def test_a_scrolled_chat_grows_in_one_layout_and_stays_at_its_end(store, ids, monkeypatch):
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        chat = await fill_the_chat(
            app, pilot
        )  # longer than the screen: each new message scrolls the chat
        screen = app.screen
        reply = Message(id="r", role="assistant", parts=[{"type": "text", "text": "first"}])
        await chat.start_reply(reply)
        await settle(pilot)
        assert chat.max_scroll_y > 0
        layouts = count_layouts(monkeypatch, screen)
        with app.batch_update():  # as the pane draws a send
            await chat.add_message(
                Message(
                    id="last", role="user", parts=[{"type": "text", "text": "The newest words."}]
                )
            )
        await settle(pilot)
        # The chat's own virtual size grew (it scrolls): no second layout for that echo.
        assert layouts[0] == 1
        assert chat.scroll_y == chat.max_scroll_y
        assert "The newest words." in "\n".join(screen_lines(app))


async def test_a_layout_s_frame_is_not_followed_by_a_frame_of_what_it_drew(store, ids, monkeypatch):
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        chat = await fill_the_chat(
            app, pilot
        )  # longer than the screen: its scrollbar follows its length
        screen = app.screen
        await settle(pilot)
        assert chat.show_vertical_scrollbar
        screen.chat_input.cursor_blink = False  # each blink is a frame
        await settle(pilot)
        bar = chat.vertical_scrollbar
        frames: list[object] = []
        render_update = screen._compositor.render_update

        def frame(*args, **kwargs):
            update = render_update(*args, **kwargs)
            if update is not None:
                frames.append(update)
            return update

        monkeypatch.setattr(screen._compositor, "render_update", frame)
        bar_renders = spy(monkeypatch, bar, "render_lines")
        layouts = count_layouts(monkeypatch, screen)
        before = bar.window_virtual_size
        with app.batch_update():  # as the pane draws a send
            await chat.add_message(
                Message(id="new", role="user", parts=[{"type": "text", "text": "The newest."}])
            )
        await settle(pilot)
        assert layouts[0] == 1
        assert bar.window_virtual_size > before  # the scrollbar took the chat's new length
        # The layout's frame drew the scrolled chat whole, its scrollbar with it; the
        # scrollbar's own repaint (asked while the layout sized it) was a second frame.
        assert len(frames) == 1
        assert len(bar_renders) == 1
        shown = screen_lines(app)
        assert any("The newest." in line for line in shown)
        chat.refresh()  # drawn whole, afresh: the same screen
        bar.refresh()
        await settle(pilot)
        assert screen_lines(app) == shown


async def test_the_tree_reads_its_looks_once_a_redraw_not_once_a_line(store, ids, monkeypatch):
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await chat_open(pilot)
        tree = screen.tree
        snap = screen.snapshot
        assert snap is not None
        rows = [f"row {n}" for n in range(12)]
        leaf, more = snap.active_leaf, []
        for n, text in enumerate(rows):
            role = "user" if n % 2 == 0 else "assistant"
            more.append(
                Message(
                    id=f"w{n}", role=role, parts=[{"type": "text", "text": text}], parent_id=leaf
                )
            )
            leaf = f"w{n}"
        tree.show([*snap.tree, *more], leaf)
        await settle(pilot)
        reads = spy(monkeypatch, tree, "get_pseudo_classes")
        drawn = spy(monkeypatch, tree, "render_line")
        shown = screen_lines(app)
        tree.show([*snap.tree, *more], leaf)  # the same rows: nothing to repaint
        await settle(pilot)
        # What each line on screen shows is compared before and after: the tree's
        # pseudo-classes (each read walks them all) are read once for all its lines.
        assert len(tree.rows) >= 8
        assert len(reads) <= 2 + len(drawn)
        assert screen_lines(app) == shown


async def test_showing_the_tree_reads_its_base_style_and_looks_once(store, ids, monkeypatch):
    """Issue 22: a redraw of the tree compares what each line shows before and after
    it; the base style (a walk of the tree's ancestors' styles) and the pseudo-classes
    were read for each side, though showing rows restyles nothing (two or three
    redraws a send). Read once now, and the changed lines are still repainted."""
    from widgets import MessageTree

    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await chat_open(pilot)
        tree = screen.tree
        snap = screen.snapshot
        assert snap is not None
        styles: list[object] = []
        rich_style = MessageTree.rich_style

        def counted(widget):
            if widget is tree:
                styles.append(widget)
            return rich_style.fget(widget)

        monkeypatch.setattr(MessageTree, "rich_style", property(counted))
        looks = spy(monkeypatch, tree, "get_pseudo_classes")
        repainted = spy(monkeypatch, tree, "refresh_lines")
        extra = Message(
            id="t1",
            role="user",
            parts=[{"type": "text", "text": "one more"}],
            parent_id=snap.active_leaf,
        )
        tree.show([*snap.tree, extra], "t1")
        assert len(styles) == 1 and len(looks) == 1
        assert repainted  # the new row and the old leaf's mark
        await settle(pilot)
        assert any("one more" in line for line in screen_lines(app))


async def test_a_layout_keeps_the_chat_s_own_lines_and_they_follow_what_they_show(
    store, ids, monkeypatch
):
    """The chat's own lines (its background and padding around the messages) are not
    drawn again when a layout only moves what is in it (each layout of a send: Textual
    threw them away with the layout it asked for); a change of what they are drawn from
    (the theme, an ancestor's background, its padding, its size, a scrollbar) draws them
    again, as Textual draws them afresh."""
    from textual.widget import Widget

    from widgets import ChatView

    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        chat = await fill_the_chat(app, pilot)  # longer than the screen: everything in it scrolls
        screen = app.screen
        await settle(pilot)
        own_lines = spy(monkeypatch, ChatView, "render_line", lambda _view, y: y)
        layouts = count_layouts(monkeypatch, screen)
        shown = screen_lines(app)
        await chat.add_message(
            Message(id="new", role="user", parts=[{"type": "text", "text": "The newest."}])
        )
        await settle(pilot)
        assert layouts[0] >= 1
        assert screen_lines(app) != shown  # it scrolled
        assert own_lines == []

        def drawn() -> list[str]:
            region = Region(0, 0, *chat.region.size)
            return [
                "".join(f"{s.text}{s.style}" for s in line) for line in chat.render_lines(region)
            ]

        def afresh() -> list[str]:
            chat._styles_cache.clear()
            region = Region(0, 0, *chat.region.size)
            lines = Widget.render_lines(chat, region)
            chat._styles_cache.clear()
            return ["".join(f"{s.text}{s.style}" for s in line) for line in lines]

        assert drawn() == afresh()  # the kept lines are the ones Textual would draw
        pane = screen.query_one("ChatPane")
        changes = {
            "theme": lambda: setattr(app, "theme", "textual-light"),
            "an ancestor's background": lambda: setattr(pane.styles, "background", "darkred"),
            "its padding": lambda: setattr(chat.styles, "padding", (0, 3, 1, 2)),
            "its size": lambda: setattr(chat.styles, "height", 20),
            "no scrollbar": lambda: setattr(chat.styles, "overflow_y", "hidden"),  # same look
        }
        for change, make in changes.items():
            before = drawn()
            make()
            await settle(pilot)
            own_lines.clear()
            chat.refresh(layout=True)  # as a mount asks: the kept lines are drawn from
            await settle(pilot)
            after = drawn()
            assert after == afresh(), change
            assert after != before or change == "no scrollbar", change


async def test_the_chat_s_scrollbar_draws_again_only_the_lines_whose_look_changed(
    store, ids, monkeypatch
):
    """Sized again in every layout of a send, the chat's scrollbar drew its whole height
    again; its thumb moves by an eighth of a cell, on a line or two. The lines are
    those Textual draws afresh: after the chat grew, scrolled, the theme changed, the
    pointer came over the bar."""
    from textual.widget import Widget

    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        chat = await fill_the_chat(app, pilot)  # longer than the screen: it has a scrollbar
        await settle(pilot)
        bar = chat.vertical_scrollbar
        assert chat.show_vertical_scrollbar and bar.region.height > 20

        def drawn() -> list[str]:
            region = Region(0, 0, *bar.region.size)
            return [
                "".join(f"{s.text}{s.style}" for s in line) for line in bar.render_lines(region)
            ]

        def afresh() -> list[str]:
            bar._styles_cache.clear()
            bar._render_content()
            lines = Widget.render_lines(bar, Region(0, 0, *bar.region.size))
            bar._styles_cache.clear()
            return ["".join(f"{s.text}{s.style}" for s in line) for line in lines]

        drawn_lines = spy(monkeypatch, type(bar), "render_line", lambda _bar, y: y)
        shown = drawn()
        await chat.add_message(
            Message(id="new", role="user", parts=[{"type": "text", "text": "The newest."}])
        )
        await settle(pilot)
        assert drawn() != shown  # its thumb moved
        assert 0 < len(drawn_lines) <= 4  # the lines it moved on, not its 35
        assert drawn() == afresh()

        async def scrolled() -> None:
            chat.scroll_home(animate=False)

        async def themed() -> None:
            app.theme = "textual-light"

        async def hovered() -> None:
            bar.mouse_over = True

        for change in (scrolled, themed, hovered):
            before = drawn()
            await change()
            await settle(pilot)
            bar.refresh()  # as a layout asks: the kept lines are drawn from
            await settle(pilot)
            assert drawn() == afresh(), change.__name__
            assert drawn() != before, change.__name__


async def test_the_start_s_resizes_for_the_first_layout_s_size_lay_nothing_out_again(
    store, monkeypatch
):
    """At start the first layout drew the first frame, and three Resize events for that
    very size followed (the driver's, its repeat, the screen's own): each laid the whole
    screen out again. A Resize after the next frame still lays it out (a terminal back
    from ctrl+z sends its unchanged size, and the screen is drawn again)."""
    from textual import events
    from textual.screen import Screen

    laid_out = spy(monkeypatch, Screen, "_refresh_layout", lambda screen, size=None, *a: size)
    app = make_app(store, warm_llm=False, model_process=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        size = app.size
        assert laid_out.count(size) == 1, laid_out
        app.post_message(events.Resize(size, size))
        await settle(pilot)
        assert laid_out.count(size) == 2
        await pilot.resize_terminal(100, 30)
        await settle(pilot)
        assert app.size == (100, 30) and app.size in laid_out


async def test_a_method_called_later_again_and_again_has_its_parameters_counted_once(
    store, ids, monkeypatch
):
    """Issue 22: Textual counts a callback's parameters before each call (`call_later`,
    `call_after_refresh`, a timer's), keeping the count on the callable, but it is handed
    a new `functools.partial` each time: the bound method's signature was read again on
    every call (a dozen a send). Counted once a method now, and called as before."""
    import textual._callback

    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await chat_open(pilot)
        read = spy(monkeypatch, textual._callback, "signature")
        called: list[int] = []

        class Probe:
            def note(self, value: int = 7) -> None:
                called.append(value)

        probe = Probe()
        for _ in range(3):
            screen.call_later(probe.note)
            await settle(pilot)
        assert called == [7, 7, 7]
        assert sum(getattr(f, "__func__", None) is Probe.note for f in read) <= 1

        def closure(n: int):  # a new function each time (as `scroll_end`'s)
            def later() -> None:
                called.append(n)

            return later

        for n in range(3):
            screen.call_after_refresh(closure(n))
            await settle(pilot)
        assert called[3:] == [0, 1, 2]
        assert sum(getattr(f, "__name__", None) == "later" for f in read) <= 1


async def test_a_send_places_whole_only_the_messages_near_what_the_chat_shows(
    store, ids, monkeypatch
):
    """Issue 22: every layout of a send placed (and sized) every widget of every mounted
    message, up to four pages of them, though the chat shows a few. A message view more
    than a screen away from what the chat shows is placed without its header and body;
    scrolling to it, or moving the focus to it, shows it whole."""
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        chat = await fill_the_chat(app, pilot, count=40)
        await settle(pilot)
        screen = app.screen
        await add_an_exchange(app, chat)
        await settle(pilot)
        placed = screen._compositor.widgets
        views = list(chat.views)
        whole = [v for v in views if all(c in placed for c in v.children)]
        assert all(v in placed for v in views)  # each view itself is still placed
        assert views[-6:] == whole[-6:]
        assert len(views) >= 40 and not set(views[:15]) & set(whole)  # all were whole
        assert "Take it early." in "\n".join(screen_lines(app))

        # The focus moved up message by message reaches the far ones, shown whole.
        views[-1].focus()
        await settle(pilot)
        for _ in range(30):
            await pilot.press("up")
        await wait_until(pilot, lambda: app.focused is views[-31])
        await settle(pilot)
        text = views[-31].message.text
        assert text in "\n".join(screen_lines(app))
        assert all(c in screen._compositor.widgets for c in views[-31].children)

        chat.scroll_home(animate=False)
        await settle(pilot)
        first = views[0].message.text
        assert first in "\n".join(screen_lines(app))
