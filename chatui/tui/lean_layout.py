"""A screen whose layout is not laid out a second time by its own echo.

Textual (8.2) hands every widget its new size at the end of a layout
(`Widget._size_updated`), and a changed `virtual_size` is a reactive that asks
for a layout. Every widget a layout mounted or resized (a new message, its
header and body, a reply taking another line, the chat growing under them) so
asks at once for another layout of the whole screen: a reflow and a repaint of
what the first one just placed, finding nothing to move. On a send that was
half the screen layouts, and each is milliseconds of the app's CPU taken from
a local model on the same cores.

`EchoFreeLayout` drops those echoes: a layout request made *during* a layout
by a widget whose new virtual size is all that changed for it. A widget that
cannot scroll (overflow neither `auto` nor `scroll`) has its virtual size set
by the layout itself, which arranged its children in it already. A widget that
can scroll keeps its request when its size or its scrollbars changed in the
layout: a scrollbar narrows its content, and an anchored chat's scroll to the
bottom was computed from its size before the layout. Every request made before
the layout began stands (its arrangement cache was not cleared yet: the layout
may not have seen it; an earlier attempt that dropped those left a reply's body
hidden).

A dropped request is taken out of the widget's count of layout requests too (a key
of its cached box model): else the next layout resolved the box of every widget the
last one sized (a send's question and reply, all in them) again.

Nor is a layout's frame followed by a frame of repaints it already drew. A
layout sizes widgets, and the ones that react ask to be repainted (a chat's
scrollbar for its new length, twice a layout of a scrolled chat); each ask
marks the widget's lines stale at once, and the layout's own frame draws whole
every widget whose geometry changed (a scrolled chat: its whole area, the
scrollbar in it). The ask's only effect left was a second frame drawing the
same lines again. So the layout's frame, drawn at once (`LeanCompositor`),
drops the repaints asked before it of widgets on screen it drew whole; one only
partly in it keeps its, and so does one asked after the frame.

Nor is the first layout followed by the start's Resize events for the size it laid
out (the driver's, Textual's repeat of it, the screen's own): each laid the whole
screen out again right after the first frame.
"""

from __future__ import annotations

from collections.abc import Mapping

from textual.geometry import Size
from textual.screen import Screen
from textual.widget import Widget

__all__ = ["EchoFreeLayout", "may_scroll"]

_SCROLLING = frozenset({"auto", "scroll"})


def may_scroll(widget: Widget) -> bool:
    """Whether a change of `widget`'s virtual size may change its layout (scrollbars)."""
    styles = widget.styles
    return styles.overflow_x in _SCROLLING or styles.overflow_y in _SCROLLING


class EchoFreeLayout(Screen):  # type: ignore[type-arg]  # a mixin for any Screen[T]
    """A screen mixin: a layout's own size updates ask for no second layout."""

    _first_size: Size | None = None
    """The size of the screen's first layout, until the frame after that layout's own
    is drawn (`_screen_resized`)."""
    _laid_out = False
    _laying_out = False

    def _screen_resized(self, size: Size) -> None:
        # At start the first layout (the screen resumed) drew the first frame, and three
        # Resize events for that same size followed: the driver's first size, that size
        # again (Textual keeps the last event and sends it when idle, even one it
        # ignored as unchanged) and the screen's own, posted by that layout (it was
        # 0×0). Each laid the whole screen out again. Until another frame is drawn, a
        # Resize for the size the screen was first laid out at changes nothing; after
        # it, one is laid out as before (a terminal back from ctrl+z sends its size).
        if size == self._first_size:
            return
        super()._screen_resized(size)

    def _compositor_refresh(self) -> None:
        super()._compositor_refresh()
        if not self._laying_out:
            self._first_size = None  # a frame after the first layout's own

    def _refresh_layout(self, size: Size | None = None, scroll: bool = False) -> None:
        if self._laid_out or not size:
            self._lay_out(size, scroll)
            return
        self._laid_out = True
        self._first_size = size
        self._laying_out = True
        try:
            self._lay_out(size, scroll)
        finally:
            self._laying_out = False

    def _lay_out(self, size: Size | None, scroll: bool) -> None:
        compositor = self._compositor
        # What a scrolling widget's layout depends on is read for those alone (each
        # read of a size walks the widget's styles: most widgets cannot scroll).
        before = {
            widget: (
                widget._layout_required,
                widget._repaint_required,
                _box(widget) if may_scroll(widget) else None,
            )
            for widget in compositor.widgets
        }
        settles = hasattr(compositor, "settle_repaints")
        if settles:
            compositor.settle_repaints = True  # type: ignore[attr-defined]
        try:
            super()._refresh_layout(size, scroll)
        finally:
            if settles:
                compositor.settle_repaints = False  # type: ignore[attr-defined]
        counts: Mapping[Widget, int] = getattr(compositor, "layout_counts", {})
        for widget in compositor.widgets:
            if not widget._layout_required:
                continue
            layout, repaint, box = before.get(widget, (False, False, None))
            if layout:
                continue  # asked before the layout: it stands
            if may_scroll(widget) and box != _box(widget):
                continue  # resized, or a scrollbar came or went: laid out again
            widget._layout_required = False
            # The request counted itself into the key of the widget's cached box model
            # (Textual's `_layout_updates`): the next layout (the next send's) resolved
            # the last exchange's two messages, and all in them, again for nothing.
            counted = counts.get(widget)
            if counted is not None:
                widget._layout_updates = counted
            if not repaint:
                # Its new virtual size put it in the layout's changed geometry, so the
                # layout's own frame drew it whole: the repaint that came with the ask
                # would draw it again in a frame of its own.
                widget._repaint_required = False


def _box(widget: Widget) -> tuple[object, ...]:
    """What a scrolling widget's layout depends on besides its virtual size."""
    return (
        widget.size,
        widget.container_size,
        widget.show_horizontal_scrollbar,
        widget.show_vertical_scrollbar,
    )
