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

from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, cast

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip

if TYPE_CHECKING:
    from rich.console import RenderableType
    from textual.screen import Screen
    from textual.widget import Widget

__all__ = ["LeanCompositor"]


class LeanCompositor(Compositor):
    _updating: Collection[Region] = ()
    """The regions of the partial update being rendered (empty: none)."""
    _spans: dict[int, list[tuple[int, int]]] | None = None
    """The partial update's spans by line (None: every line whole)."""
    drawn: tuple[Region, ...] = ()
    """The regions the last update drew (the screen's, for a full one)."""
    updates = 0
    """How many updates were rendered (a layout's own frame is one more)."""
    settle_repaints = False
    """Set (by the screen, for a layout's own frame): the pending repaints of widgets
    the update draws whole are dropped (`_drop_drawn_repaints`)."""

    def render_update(
        self, full: bool = False, screen_stack: list[Screen] | None = None, simplify: bool = False
    ) -> RenderableType | None:
        whole = full or self.size.region in self._dirty_regions
        self.drawn = drawn = (self.size.region,) if whole else tuple(self._dirty_regions)
        self.updates += 1
        # Asked before the render: their lines were marked stale then, and it draws them.
        # Not after a full frame (start-up, a resize, another screen): the frames that
        # follow one are when what was composed meanwhile shows, and with fewer repaints
        # queued the start-up's chat was drawn a frame after its memory gauges.
        waiting = (
            [w for w in self.visible_widgets if w._repaint_required]
            if self.settle_repaints and not whole
            else []
        )
        update = super().render_update(full, screen_stack, simplify)
        if waiting:
            _drop_drawn_repaints(waiting, self.visible_widgets, drawn)
        return update

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
        self._spans = {}
        for y, x1, x2 in spans:
            self._spans.setdefault(y, []).append((x1, x2))
        try:
            chops = self._render_chops(crop, {y for y, _, _ in spans}.__contains__)
        finally:
            self._updating, self._spans = (), None
        return ChopsUpdate(chops, spans, [cut_set[1:] for cut_set in self.cuts])

    def _get_renders(
        self, crop: Region | None = None
    ) -> Iterable[tuple[Region, Region, list[Strip]]]:
        if crop is None:
            yield from super()._get_renders(crop)
            return
        for widget, region, clip, shown in self._shown(crop):
            yield (region, clip, _render(widget, region, shown))

    def _shown(self, crop: Region) -> Iterator[tuple[Widget, Region, Region, Region]]:
        """Each widget meeting the update, front to back: its region, its clip and what
        of it the update shows (narrowed to the lines where it meets the update)."""
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
            yield widget, region, clip, shown

    def _render_chops(
        self, crop: Region, is_rendered_line: Callable[[int], bool]
    ) -> Sequence[Mapping[int, Strip]]:
        # Textual's own, but a widget is rendered only over the lines where some of its
        # columns are not covered yet by the widgets in front of it (drawn first): the
        # chat's, the pane's and the screen's backgrounds under the messages.
        cuts = self.cuts
        spans = self._spans
        chops: list[dict[int, Strip | None]] = [dict.fromkeys(cut_set[:-1]) for cut_set in cuts]
        for widget, region, clip, shown in self._shown(crop):
            x, right = shown.column_span
            open_lines = [
                y
                for y in shown.line_range
                if is_rendered_line(y)
                and _uncovered(
                    chops[y], cuts[y], x, right, None if spans is None else spans.get(y, [])
                )
            ]
            if not open_lines:
                continue  # wholly behind what is drawn: its strips would all be dropped
            top, bottom = open_lines[0], open_lines[-1] + 1
            if (top, bottom) != (shown.y, shown.bottom):
                clip = Region(clip.x, top, clip.width, bottom - top)
                shown = Region(shown.x, top, shown.width, bottom - top)
            strips = _render(widget, region, shown)
            for y, strip in zip(shown.line_range, strips, strict=False):
                if not is_rendered_line(y):
                    continue
                chops_line = chops[y]
                final_cuts = [cut for cut in cuts[y] if right >= cut >= x]
                cut_strips = strip.divide([cut - x for cut in final_cuts[1:]])
                # Front to back: the first strip for a cut wins.
                for cut, cut_strip in zip(final_cuts, cut_strips, strict=False):
                    if chops_line.get(cut) is None:
                        chops_line[cut] = cut_strip
        return cast("Sequence[Mapping[int, Strip]]", chops)


def _drop_drawn_repaints(
    waiting: Iterable[Widget],
    visible: Mapping[Widget, tuple[Region, Region]],
    drawn: Sequence[Region],
) -> None:
    """The pending repaints (asked before the frame: `waiting`) of widgets the frame
    showed whole: their lines were marked stale when they asked, so the frame drew them
    afresh; the repaint would draw them again in a frame of its own. One asked after
    the frame (during its render, or by what reacts to the layout) stands."""
    for widget in waiting:
        if not widget._repaint_required or widget not in visible:
            continue
        region, clip = visible[widget]
        shown = region.intersection(clip)
        if shown and any(box.contains_region(shown) for box in drawn):
            widget._repaint_required = False
            widget._exchange_repaint_regions()  # what it would have handed the next frame


def _render(widget: Widget, region: Region, shown: Region) -> list[Strip]:
    """`widget`'s lines over `shown` (screen coordinates, inside its region)."""
    return widget.render_lines(
        Region(shown.x - region.x, shown.y - region.y, shown.width, shown.height)
    )


def _uncovered(
    chops_line: dict[int, Strip | None],
    line_cuts: list[int],
    x: int,
    right: int,
    spans: list[tuple[int, int]] | None,
) -> bool:
    """Whether a cut of this line between `x` and `right` has no strip yet where the
    update writes (`spans` of the line; None: all of it)."""
    start = bisect_left(line_cuts, x)
    end = bisect_left(line_cuts, right, start)
    for index in range(start, end):
        cut = line_cuts[index]
        if chops_line[cut] is not None:
            continue
        if spans is None:
            return True
        cut_end = line_cuts[index + 1]
        # `ChopsUpdate` sends a chop unless it starts past the span or ends before it.
        if any(cut <= x2 and cut_end > x1 for x1, x2 in spans):
            return True
    return False
