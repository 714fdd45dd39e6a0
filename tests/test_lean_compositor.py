"""`LeanCompositor` writes what Textual's own compositor writes for the same update."""

from __future__ import annotations

import pytest
from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region

from chatui.tui.lean_compositor import LeanCompositor
from widgets import MessageView

from .app_helpers import fill_the_chat, make_app, populate, wait_until


def _written(compositor: Compositor, regions: list[Region], console) -> str:
    """The text a terminal is sent for a partial update of `regions`."""
    spans = list(compositor._regions_to_spans(regions))
    crop = Region.from_union(regions)
    chops = compositor._render_chops(crop, {y for y, _, _ in spans}.__contains__)
    return ChopsUpdate(chops, spans, [cuts[1:] for cuts in compositor.cuts]).render_segments(
        console
    )


@pytest.fixture
def ids(store):
    return populate(store)


async def test_a_partial_update_writes_what_textual_s_compositor_writes(store, ids):
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: len(app.screen.query(MessageView)) >= 4)
        await pilot.pause()
        screen = app.screen
        compositor = screen._compositor
        assert isinstance(compositor, LeanCompositor)
        view = list(screen.query(MessageView))[1].region
        tree = screen.query_one("#tree").region
        chat_line = Region(view.x, view.y + 1, view.width, 1)
        updates = [
            [chat_line],  # a reply's delta: one line of one message
            [Region(view.x + 3, view.y, 5, 2)],  # part of a message, across its lines
            [chat_line, Region(tree.x, tree.y + 2, tree.width, 1)],  # the tree too
            [chat_line, Region(0, screen.size.height - 1, screen.size.width, 1)],  # footer
            [view],
            [screen.size.region],
        ]
        for regions in updates:
            ours = _written(compositor, regions, app.console)
            # The same state, Textual's own renders.
            assert ours == _as_textual(compositor, _written, regions, app.console), regions
            assert ours  # something was drawn


async def test_a_full_update_renders_no_widget_that_others_cover(store, ids):
    """The screen and the panes' container lie wholly under the panes: their lines would
    be rendered and thrown away (the first frame's, ~20 M instructions)."""
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: len(app.screen.query(MessageView)) >= 4)
        await pilot.pause()
        screen = app.screen
        rendered: list[str] = []
        for widget in (screen, screen.query_one("#panes"), screen.query_one("#tree")):
            render_lines = widget.render_lines

            def counted(crop, widget=widget, render_lines=render_lines):
                rendered.append(type(widget).__name__)
                return render_lines(crop)

            widget.render_lines = counted  # type: ignore[method-assign]
        screen._compositor.render_full_update()
        assert rendered == ["ChatTree"]  # what shows is rendered


async def test_a_partial_update_renders_no_widget_covered_where_it_writes(store, ids, monkeypatch):
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        chat = await fill_the_chat(
            app, pilot
        )  # longer than the screen: the layout's frame is the chat area
        screen = app.screen
        await pilot.pause(0.2)
        compositor = screen._compositor
        assert isinstance(compositor, LeanCompositor)
        rendered: list[str] = []
        for widget in [screen, *screen.query("*")]:
            original = widget.render_lines

            def counting(crop, widget=widget, original=original):
                rendered.append(type(widget).__name__)
                return original(crop)

            monkeypatch.setattr(widget, "render_lines", counting)
        view = list(screen.query(MessageView))[-1]
        body = view.region
        chat_line = Region(body.x, body.y + 1, body.width, 1)
        # A reply's delta: its line is the message's (its body, its padding) and the
        # chat's margins beside it; the pane and the screen under them are not rendered.
        _partial(compositor, [chat_line], app.console)
        assert "MessageView" in rendered
        assert not {"MainScreen", "Horizontal", "ChatPane"} & set(rendered)
        # The scrolled chat's area whole (a layout's frame) and the screen whole: the
        # same text as Textual's, with the screen's background rendered for no line.
        updates = [[chat_line], [chat.region], [screen.size.region]]
        for regions in updates:
            rendered.clear()
            ours = _partial(compositor, regions, app.console)
            assert ours == _as_textual(compositor, _partial, regions, app.console), regions
        rendered.clear()
        whole = compositor.render_strips()
        assert "MainScreen" not in rendered
        assert _as_textual(compositor, lambda c: c.render_strips()) == whole


async def test_a_layout_s_frame_of_many_regions_writes_what_textual_s_compositor_writes(store, ids):
    """A layout's frame is dozens of regions (each widget it moved); the lines each widget
    renders are read from the update's spans. One region ends where a widget begins:
    Textual moves the cursor to that widget's chop (a span's end is inclusive there)."""
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        chat = await fill_the_chat(
            app, pilot
        )  # longer than the screen: everything in the chat scrolls
        screen = app.screen
        await pilot.pause(0.2)
        compositor = screen._compositor
        assert isinstance(compositor, LeanCompositor)
        moved = [widget.region for widget in chat.query("*") if widget.region]
        views = [view.region for view in screen.query(MessageView) if view.region]
        tree = screen.query_one("#tree").region
        first = views[0]
        updates = [
            [chat.region, *moved],  # a layout's frame: the chat area and all it moved
            moved[::2],  # every other one: lines and widgets between them left out
            [*views, Region(tree.x, tree.y, tree.width, 3)],  # the tree's rows too
            [Region(first.x - 2, first.y, 2, 2), Region(first.right, first.y + 1, 1, 1)],
            [Region(tree.x, tree.y + 1, tree.width, 1), Region(first.x, first.y + 1, 4, 1)],
        ]
        for regions in updates:
            ours = _partial(compositor, regions, app.console)
            assert ours == _as_textual(compositor, _partial, regions, app.console), regions


def _as_textual(compositor: Compositor, do, *args):
    """`do(compositor, *args)` with the compositor as Textual's own for the call."""
    compositor.__class__ = Compositor
    try:
        return do(compositor, *args)
    finally:
        compositor.__class__ = LeanCompositor


def _partial(compositor: Compositor, regions: list[Region], console) -> str:
    """What a partial update of `regions` sends the terminal (as the screen renders it)."""
    compositor._dirty_regions.update(regions)
    update = compositor.render_partial_update()
    assert update is not None
    return update.render_segments(console)
