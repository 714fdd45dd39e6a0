"""A compositor that renders only what a partial update shows.

Textual (8.2) composes a partial update from every widget whose *clip* (its
container's visible region) meets the update's box, and renders each of them
over its whole visible height. A reply's delta dirties one line of the chat; its
container's clip is the whole chat view, so every message on screen, and every
container up to the screen (all 40 lines of it), was rendered for that one line
(most lines from the styles cache, yet each costs a strip and its cuts). While a
local model generates on the same cores, that CPU is taken from the model.

`LeanCompositor` yields the same renders for the lines that the update writes:
a widget whose visible region misses the update's box cannot write into it
(`ChopsUpdate` writes only the spans inside the box), and the lines of a widget
above or below the box are never written either. So it skips the first and
renders the second only over the box's lines; a full update renders all, as
before. Lines of a widget left unrendered stay dirty in its styles cache until
a frame shows them.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual._compositor import Compositor
from textual.geometry import Region
from textual.strip import Strip

__all__ = ["LeanCompositor"]


class LeanCompositor(Compositor):
    def _get_renders(
        self, crop: Region | None = None
    ) -> Iterable[tuple[Region, Region, list[Strip]]]:
        if crop is None:
            yield from super()._get_renders(crop)
            return
        top, bottom = crop.y, crop.bottom
        for widget, (region, clip) in self.visible_widgets.items():
            shown = region.intersection(clip)
            if not (shown.width and shown.height and shown.overlaps(crop)):
                continue
            # The box's lines alone: `_render_chops` draws `strips` from the top of
            # region ∩ clip, so the clip is narrowed to those lines.
            y = max(shown.y, top)
            height = min(shown.bottom, bottom) - y
            if height != shown.height:
                clip = Region(clip.x, y, clip.width, height)
                shown = Region(shown.x, y, shown.width, height)
            yield (
                region,
                clip,
                widget.render_lines(
                    Region(shown.x - region.x, shown.y - region.y, shown.width, shown.height)
                ),
            )
