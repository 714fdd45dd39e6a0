"""A widget's drawn lines kept across the refreshes that do not change them.

Textual (8.2) throws a widget's drawn lines away (its styles cache) whenever the
widget is refreshed whole, and a layout refreshes every widget whose size or
virtual size it changed: a chat that scrolls, and the chat's scrollbar, in every
layout of a send. Their lines were drawn again whole in the layout's frame, the
same lines mostly: the chat's background and padding, a scrollbar whose thumb
moved by an eighth of a cell. `KeptLines` puts a line back when everything it is
drawn from is the same: what the widget's content draws on that line, and the
drawing's context (`drawn_from`: its styles, as Textual counts their changes, its
sizes, the backgrounds and style it takes from its ancestors, opacity, titles, the
ANSI theme).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

__all__ = ["KeptLines", "drawn_from"]


def drawn_from(widget: Widget) -> tuple[object, ...]:
    """What Textual draws `widget`'s lines from, besides its content."""
    app = widget.app
    return (
        widget.styles._cache_key,
        widget.region.size,
        widget.content_region.size,
        widget.background_colors,
        widget.rich_style,
        widget.opacity,
        widget._border_title,
        widget._border_subtitle,
        app.ansi_theme,
        app.native_ansi_color,
    )


class KeptLines:
    """The lines a widget last drew, with what they were drawn from; `render` puts back
    those that would be drawn the same after its styles cache was emptied."""

    def __init__(self) -> None:
        self._drawn_from: tuple[object, ...] | None = None
        self._content: Sequence[Strip] = ()
        self._lines: dict[int, Strip] = {}

    def render(
        self, widget: Widget, crop: Region, render_lines: Callable[[Region], list[Strip]]
    ) -> list[Strip]:
        """`render_lines(crop)` (Textual's), with the kept lines put back first."""
        cache = widget._styles_cache
        context = drawn_from(widget)
        if self._lines and not cache._cache and context == self._drawn_from:
            if widget._dirty_regions:
                widget._render_content()  # what Textual draws the content from, as it would
            content = widget._render_cache.lines
            top = widget.styles.gutter.top
            for y, line in self._lines.items():
                row = y - top
                if 0 <= row < len(content):
                    if row >= len(self._content) or content[row] != self._content[row]:
                        continue  # what the content shows there changed
                cache._cache[y] = line  # (a border or padding line: the context alone)
                cache._dirty_lines.discard(y)
        strips = render_lines(crop)
        self._drawn_from = context
        self._content = widget._render_cache.lines
        self._lines = dict(cache._cache)
        return strips
