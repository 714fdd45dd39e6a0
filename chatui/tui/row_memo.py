"""Start-up: a widget's rows that show the same content line are styled once a render.

Textual draws each line of a widget through its styles cache: the content line, then
padding, the left and right borders, hatching, tint and opacity, each read from the
widget's styles again for every line. A pane's rows between its children, the tree's
empty rows, a sidebar's: their content lines are one and the same blank strip, and each
was styled again (on the first screen 39-row panes: ~0.03 ms a row).

`RowMemoStylesCache` keeps, for the length of one render, the styled row made from each
content strip: a row whose content line is that very strip (not an equal one) gets the
same styled row. Only rows between the top and bottom border, padding and outline are
kept (and not the first or last row, where an outline is drawn), whose styling depends
on nothing but the content line (the styles, size and colours are the same for the
whole render); the rest are styled as Textual does. What is drawn is the same: the same
strip would have been styled into an equal row. `ChatApp` gives every widget it mounts
this cache (`memoize_rows`).

Issue 22: a widget whose asked lines are all kept (none stale, its width the same) is
drawn from them without working out what only drawing a line needs. Textual's
`render_widget` first gathers, for every widget it draws, its colours blended over all
its ancestors', its content size, padding, opacity, titles and the ANSI theme, then
finds every line kept: a send's layout draws the whole chat area, every message on
screen (their lines all kept) and each paid that (~30 % of the layout's frame). The
kept lines go through the same line filters with the same background, and are cut to
the same columns; links under the pointer are styled as Textual does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual._styles_cache import StylesCache
from textual.strip import Strip

if TYPE_CHECKING:
    from textual.geometry import Region
    from textual.widget import Widget

__all__ = ["RowMemoStylesCache", "memoize_rows"]


class RowMemoStylesCache(StylesCache):
    """Textual's styles cache, styling a content strip once a render (see the module)."""

    def __init__(self) -> None:
        super().__init__()
        self._rows: dict[int, tuple[Strip, Strip]] | None = None

    kept_draws = 0
    """Draws made from kept lines alone (`render_widget`'s short way)."""

    def render_widget(self, widget: Widget, crop: Region) -> list[Strip]:
        lines = crop.line_range
        width = widget.region.size.width
        cache = self._cache
        if (
            width != self._width
            or not self._dirty_lines.isdisjoint(lines)
            or any(y not in cache for y in lines)
        ):
            return super().render_widget(widget, crop)
        # Textual's own, less what only a line drawn afresh needs (see the module).
        self.kept_draws += 1
        self._simple_strip = None
        strips = [cache[y] for y in lines]
        filters = widget.get_line_filters()
        if filters:
            background = widget.background_colors[1]
            for line_filter in filters:
                strips = [strip.apply_filter(line_filter, background) for strip in strips]
        if crop.column_span != (0, width):
            x1, x2 = crop.column_span
            strips = [strip.crop(x1, x2) for strip in strips]
        if widget.auto_links:
            hover_style = widget.hover_style
            if hover_style._link_id and hover_style._meta and "@click" in hover_style.meta:
                link_style_hover = widget.link_style_hover
                if link_style_hover:
                    strips = [
                        strip.style_links(hover_style.link_id, link_style_hover) for strip in strips
                    ]
        return strips

    def render(self, *args: Any, **kwargs: Any) -> list[Strip]:
        self._rows = {}
        try:
            return super().render(*args, **kwargs)
        finally:
            self._rows = None

    def render_line(  # type: ignore[override]
        self,
        styles: Any,
        y: int,
        size: Any,
        content_size: Any,
        padding: Any,
        base_background: Any,
        background: Any,
        render_content_line: Any,
        *rest: Any,
    ) -> Strip:
        rows = self._rows
        last = size.height - 1
        gutter = styles.gutter
        content_y = y - gutter.top
        if (
            rows is None
            or y == 0  # the outline's top or bottom row, if any
            or y == last
            or content_y < 0  # the top border's or padding's rows
            or y > last - gutter.bottom  # the bottom's
            or content_y >= content_size.height
        ):
            return super().render_line(
                styles, y, size, content_size, padding, base_background, background,
                render_content_line, *rest,
            )  # fmt: skip
        content = render_content_line(content_y)
        kept = rows.get(id(content))
        if kept is not None and kept[0] is content:
            return kept[1]
        row = super().render_line(
            styles, y, size, content_size, padding, base_background, background,
            lambda _y: content, *rest,
        )  # fmt: skip
        rows[id(content)] = (content, row)
        return row


def memoize_rows(widget: Any) -> None:
    """Give `widget` the row-memoizing styles cache (before it is first drawn)."""
    if type(widget._styles_cache) is StylesCache:
        widget._styles_cache = RowMemoStylesCache()
