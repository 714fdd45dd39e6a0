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
"""

from __future__ import annotations

from typing import Any

from textual._styles_cache import StylesCache
from textual.strip import Strip

__all__ = ["RowMemoStylesCache", "memoize_rows"]


class RowMemoStylesCache(StylesCache):
    """Textual's styles cache, styling a content strip once a render (see the module)."""

    def __init__(self) -> None:
        super().__init__()
        self._rows: dict[int, tuple[Strip, Strip]] | None = None

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
