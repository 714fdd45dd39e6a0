"""Updating a `Static` without laying the whole screen out when its size stays the same.

`Static.update` asks for a layout of the screen every time; with a chat open
that is a reflow and a repaint of every region that moved (several
milliseconds of the app's CPU, while a local model on the same cores waits
for it). A reply growing inside its last line, a title of fixed height or a
sidebar line whose text did not change needs its own lines repainted, or
nothing at all.
"""

from __future__ import annotations

from textual.visual import VisualType
from textual.widgets import Static

__all__ = ["update_in_place"]


def update_in_place(widget: Static, content: VisualType) -> None:
    """Show `content` in `widget`; the screen is laid out again only if its height (or,
    for a widget sized by its content, its width) may have changed."""
    size = widget.size
    width = widget.styles.width
    if not widget.is_mounted or not size.width or (width is not None and width.is_auto):
        widget.update(content)
        return
    widget.update(content, layout=False)
    height = widget.styles.height
    if height is not None and not height.is_auto:
        return  # sized by its container or the stylesheet, not by what it shows
    if widget.get_content_height(size, size, size.width) != size.height:
        widget.refresh(layout=True)
