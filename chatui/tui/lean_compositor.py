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

Every update, full ones too, also skips the lines of a widget that widgets in
front of it cover wholly (`_render_chops`): on the first frame the screen and
the panes' container lie under the panes, ~20 M instructions of strips that
were rendered, cut up and thrown away.

A partial update skips them also where only the columns it does not send are
left uncovered: a reply's line left the tree's and the sidebar's cuts of that
line empty, and the screen, the panes' row and the pane were rendered for them.

A layout's full map is not arranged twice: Textual's `reflow` arranges every widget
(off screen too) into the full map but leaves it marked stale when it was marked so
before (new widgets refreshed before the layout: a send's question and reply), so
the first look-up of a widget's region after it (each resized widget's, in the same
layout) arranged the whole screen again, every message of the chat included.

It keeps each widget's count of layout requests as the reflow arranged it
(`layout_counts`), for `EchoFreeLayout` to put back when it drops a request.

Nor are the header and body of a message far from what the chat shows placed: while
it arranges (`_arrange_root`, a private hook of Textual 8.2.8, pinned in
pyproject.toml) `MessageView.arranging` is set, and a view the chat marked more than a
viewport away (`ChatView._mark_far_views`) answers that it holds no children
(`is_container`, which Textual's placing reads). A long sitting keeps up to 48 views
mounted, ~160 widgets placed and sized in every layout of a send for ~45 on screen.

It also keeps what its last update drew (`drawn`, `updates`), and for a
layout's own partial frame (`settle_repaints`, set by `EchoFreeLayout`) drops
the repaints asked before it by widgets it drew whole: the scrolled chat's
scrollbar, sized by the layout, drew itself again in a frame of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, cast

from textual._compositor import ChopsUpdate, Compositor, ReflowResult
from textual.geometry import Region, Size
from textual.map_geometry import MapGeometry
from textual.strip import Strip

from widgets.message_view import MessageView

if TYPE_CHECKING:
    from rich.console import RenderableType
    from textual.screen import Screen
    from textual.widget import Widget

__all__ = ["LeanCompositor"]


class LeanCompositor(Compositor):
    drawn: tuple[Region, ...] = ()
    """The regions the last update drew (the screen's, for a full one)."""
    updates = 0
    """How many updates were rendered (a layout's own frame is one more)."""
    settle_repaints = False
    """Set (by the screen, for a layout's own frame): the pending repaints of widgets
    the update draws whole are dropped (`_drop_drawn_repaints`)."""
    layout_counts: Mapping[Widget, int] = {}
    """Each widget's count of layout requests (Textual's `_layout_updates`, a key of its
    cached box model) as the last reflow arranged it (`EchoFreeLayout`)."""
    _spans: dict[int, list[tuple[int, int]]] | None = None
    """The partial update's spans by line (None: every line whole)."""

    def reflow(self, parent: Widget, size: Size) -> ReflowResult:
        result = super().reflow(parent, size)
        # The map it built covers every widget (`visible_only=False`): the full map, fresh.
        self._full_map_invalidated = False
        self.layout_counts = {widget: widget._layout_updates for widget in self.widgets}
        return result

    def _arrange_root(
        self, root: Widget, size: Size, visible_only: bool = True
    ) -> tuple[dict[Widget, MapGeometry], set[Widget]]:
        # The chat's far message views are placed without their children while this
        # compositor arranges (`ChatView._mark_far_views`), and only then.
        MessageView.arranging = True
        try:
            return super()._arrange_root(root, size, visible_only)
        finally:
            MessageView.arranging = False

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
        # Textual's own, but its spans are kept by line for `_placements`: the regions'
        # bounding box (all Textual passes on) is most of the screen when the update is
        # the tree's column and a line of the chat, and every widget in it would be
        # rendered.
        update_regions = self._dirty_regions.copy()
        self._dirty_regions.clear()
        if not update_regions:
            return None
        crop = Region.from_union(update_regions).intersection(self.size.region)
        spans = list(self._regions_to_spans(update_regions))
        self._spans = {}
        for y, x1, x2 in spans:
            self._spans.setdefault(y, []).append((x1, x2))
        try:
            chops = self._render_chops(crop, {y for y, _, _ in spans}.__contains__)
        finally:
            self._spans = None
        return ChopsUpdate(chops, spans, [cut_set[1:] for cut_set in self.cuts])

    def _render_chops(
        self, crop: Region, is_rendered_line: Callable[[int], bool]
    ) -> Sequence[Mapping[int, Strip]]:
        # Textual's own (8.2), but a widget renders only the lines where something of it
        # shows. Widgets are painted front to back, and on each line a cut (the span
        # between two widget edges) keeps the first strip painted into it: a line whose
        # every cut is filled already would be rendered for nothing. On the first frame
        # the screen and the panes' container lie wholly under the panes, and every
        # line costs a styled strip (~0.2-0.3 M instructions).
        cuts = self.cuts
        spans = self._spans
        fromkeys = cast("Callable[[list[int]], dict[int, Strip | None]]", dict.fromkeys)
        chops = [fromkeys(cut_set[:-1]) for cut_set in cuts]

        def open_at(y: int, left: int, right: int) -> bool:
            """Whether a strip over columns [left, right) of line `y` would fill a cut that
            the update sends (in a partial update, one meeting its spans on the line: a
            reply's line leaves the cuts of the tree and the sidebar beside it empty, and
            the screen's background was rendered for them)."""
            if not is_rendered_line(y):
                return False
            line, line_cuts = chops[y], cuts[y]
            line_spans = None if spans is None else spans.get(y, ())
            for index, cut in enumerate(line_cuts):
                if not (left <= cut < right and line.get(cut, 0) is None):
                    continue
                if line_spans is None:
                    return True
                end = line_cuts[index + 1]
                # `ChopsUpdate` sends a chop unless it starts past the span or ends before it.
                if any(cut <= x2 and end > x1 for x1, x2 in line_spans):
                    return True
            return False

        for widget, region, clip, shown in self._placements(crop):
            left, right = shown.x, shown.right
            top, bottom = shown.y, shown.bottom
            while top < bottom and not open_at(top, left, right):
                top += 1
            while bottom > top and not open_at(bottom - 1, left, right):
                bottom -= 1
            if top == bottom:
                continue
            if (top, bottom) != (shown.y, shown.bottom):
                # `render_region` below is region ∩ clip: the clip is narrowed to the lines.
                clip = Region(clip.x, top, clip.width, bottom - top)
                shown = Region(left, top, shown.width, bottom - top)
            strips = widget.render_lines(
                Region(left - region.x, top - region.y, shown.width, shown.height)
            )
            render_region = region.intersection(clip)
            render_x = render_region.x
            first_cut, last_cut = render_region.column_span
            for y, strip in zip(render_region.line_range, strips, strict=False):
                if not is_rendered_line(y):
                    continue
                chops_line = chops[y]
                final_cuts = [cut for cut in cuts[y] if (last_cut >= cut >= first_cut)]
                cut_strips = strip.divide([cut - render_x for cut in final_cuts[1:]])
                # Since we are painting front to back, the first segments for a cut "wins"
                get_chops_line = chops_line.get
                for cut, cut_strip in zip(final_cuts, cut_strips, strict=False):
                    if get_chops_line(cut) is None:
                        chops_line[cut] = cut_strip
        return cast("Sequence[Mapping[int, Strip]]", chops)

    def _placements(self, crop: Region) -> Iterator[tuple[Widget, Region, Region, Region]]:
        """Each visible widget meeting `crop`, front to back: its region, its clip and the
        part of it to render (region ∩ clip; in a partial update, only its first to last
        line where the update sends something of it)."""
        spans = self._spans
        for widget, (region, clip) in self.visible_widgets.items():
            shown = region.intersection(clip)
            if not (shown.width and shown.height and shown.overlaps(crop)):
                continue
            top, bottom = max(shown.y, crop.y), min(shown.bottom, crop.bottom)
            if spans is not None:
                # Read from the update's spans by line, not its regions: a layout's frame
                # is dozens of regions, and each widget met each of them (~1,000
                # `Region.overlaps` a frame). A span ending where the widget begins counts:
                # `ChopsUpdate` moves the cursor to a chop starting at a span's end.
                left, right = shown.x, shown.right

                def meets(y: int, left: int = left, right: int = right) -> bool:
                    return any(x1 < right and x2 >= left for x1, x2 in spans.get(y, ()))

                while top < bottom and not meets(top):
                    top += 1
                while bottom > top and not meets(bottom - 1):
                    bottom -= 1
            height = bottom - top
            if height <= 0:
                continue
            if height != shown.height:
                clip = Region(clip.x, top, clip.width, height)
                shown = Region(shown.x, top, shown.width, height)
            yield widget, region, clip, shown


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
