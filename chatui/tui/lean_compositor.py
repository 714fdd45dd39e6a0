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

It also keeps what its last update drew (`drawn`, `updates`): a layout's own
frame draws whole every widget its changed geometry covers, and the screen
(`EchoFreeLayout`) drops the repaints those widgets asked for meanwhile.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip

if TYPE_CHECKING:
    from rich.console import RenderableType
    from textual.screen import Screen

__all__ = ["LeanCompositor"]


class LeanCompositor(Compositor):
    _updating: Collection[Region] = ()
    """The regions of the partial update being rendered (empty: none)."""
    drawn: tuple[Region, ...] = ()
    """The regions the last update drew (the screen's, for a full one)."""
    updates = 0
    """How many updates were rendered (a layout's own frame is one more)."""

    def render_update(
        self, full: bool = False, screen_stack: list[Screen] | None = None, simplify: bool = False
    ) -> RenderableType | None:
        whole = full or self.size.region in self._dirty_regions
        self.drawn = (self.size.region,) if whole else tuple(self._dirty_regions)
        self.updates += 1
        return super().render_update(full, screen_stack, simplify)

    def render_partial_update(self) -> ChopsUpdate | None:
        # Textual's own, but its regions are kept for `_get_renders`: their bounding box
        # (all Textual passes on) is most of the screen when the update is the tree's
        # column and a line of the chat, and every widget in it would be rendered.
        update_regions = self._dirty_regions.copy()
        self._dirty_regions.clear()
        if not update_regions:
            return None
        crop = Region.from_union(update_regions).intersection(self.size.region)
        spans = list(self._regions_to_spans(update_regions))
        self._updating = update_regions
        try:
            chops = self._render_chops(crop, {y for y, _, _ in spans}.__contains__)
        finally:
            self._updating = ()
        return ChopsUpdate(chops, spans, [cut_set[1:] for cut_set in self.cuts])

    def _get_renders(
        self, crop: Region | None = None
    ) -> Iterable[tuple[Region, Region, list[Strip]]]:
        if crop is None:
            yield from super()._get_renders(crop)
            return
        boxes = self._updating if len(self._updating) > 1 else ()
        for widget, (region, clip) in self.visible_widgets.items():
            shown = region.intersection(clip)
            if not (shown.width and shown.height and shown.overlaps(crop)):
                continue
            # The lines where it meets the update: the first to the last of them.
            top, bottom = (shown.bottom, shown.y) if boxes else (crop.y, crop.bottom)
            for box in boxes:
                if box.overlaps(shown):
                    top, bottom = min(top, box.y), max(bottom, box.bottom)
            y = max(shown.y, top)
            height = min(shown.bottom, bottom) - y
            if height <= 0:
                continue
            # `_render_chops` draws `strips` from the top of region ∩ clip, so the clip
            # is narrowed to those lines.
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
