"""A footer whose keys never run off the edge of a small terminal, drawn by one widget.

Textual's `Footer` lays every shown key in one row and lets the ones past the
right edge fall out of sight (the row scrolls only with a mouse wheel). At 80
columns the focused pane's keys plus the app's keys do not fit, so this footer
keeps the keys in the order the screen ranks them (focused widget first), skips
any that would not fit whole, and, when it skipped one, ends with the key that
lists every key, so nothing is out of reach.

Textual's footer is a widget per key: each one styled, measured (by rendering it)
and drawn, ~40 M instructions of the first frame. This one draws the same row as
one line of text with the same colours (Textual's `FooterKey` component classes
and the theme's footer variables) and maps a click's column to its key.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.color import Color
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

__all__ = ["FittingFooter"]


@dataclass(frozen=True)
class _Key:
    """One key of the row: what it shows, what a click runs, and where it is drawn."""

    key: str
    key_display: str
    description: str
    action: str
    enabled: bool
    tooltip: str
    palette: bool = False
    x: int = 0

    @property
    def width(self) -> int:
        """Cells drawn: key, space, label (the palette's key adds its border)."""
        width = cell_len(self.key_display)
        if self.description:
            width += 1 + cell_len(self.description)
        return width + 1 if self.palette else width


class FittingFooter(Footer):
    """A compact `Footer` that drops whole keys instead of cutting them off.

    A `Footer` subclass (so `Footer` selectors, like the maximised view's, still find
    it) with no children: `render` draws the row.

    Args:
        more_key: the key that lists every key (shown when some were dropped).
        more_label: its label in the footer.
    """

    # Textual's FooterKey rules, as components of this one widget (its compact style).
    COMPONENT_CLASSES = {
        "footer-key--key",
        "footer-key--description",
        "fitting-footer--item",
        "fitting-footer--hover",
        "fitting-footer--palette-border",
    }
    DEFAULT_CSS = """
    FittingFooter {
        width: 1fr;
        .footer-key--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .footer-key--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        .fitting-footer--item { background: $footer-item-background; }
        .fitting-footer--hover {
            color: $footer-key-foreground;
            background: $block-hover-background;
        }
        .fitting-footer--palette-border { color: $foreground 20%; }
    }
    """

    def __init__(self, *, more_key: str = "f1", more_label: str = "Keys", **kwargs: Any) -> None:
        kwargs.setdefault("compact", True)
        super().__init__(**kwargs)
        self.more_key = more_key
        self.more_label = more_label
        self._signature: tuple[object, ...] | None = None
        self._keys: tuple[_Key, ...] = ()
        self._views: list[FooterKey] | None = None
        self._hover: _Key | None = None

    def compose(self) -> Iterable[Any]:
        return ()

    def on_mount(self) -> None:
        # (Footer's own Mount handler, which subscribes `bindings_changed`, runs too.)
        # Textual's footer stays empty until focus settles and two refreshes pass (~0.1 s
        # after the first frame at start-up); the screen's and the app's keys are known
        # once the footer is mounted, so they are drawn with the first frame.
        self.set_reactive(Footer._bindings_ready, True)
        self._update_keys()

    def bindings_changed(self, screen: Screen[Any]) -> None:
        # As Textual's footer: keep the row while the terminal has no focus (no widget
        # has focus then, and the pane's keys would flicker away).
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen:
            self._update_keys()

    def on_resize(self, event: events.Resize) -> None:
        self._update_keys()

    def _update_keys(self) -> None:
        """Lay the row out again, only when what it shows would change: focus, the screen
        stack and the terminal's focus each ask at start-up."""
        if not self.is_attached:
            return
        signature = self._current_signature()
        if signature == self._signature:
            return
        self._signature = signature
        self._keys = tuple(self._fit(self._bound_keys(), self._available_width()))
        self._views = None
        self._hover = None
        self.refresh()

    def _current_signature(self) -> tuple[object, ...]:
        app = self.app
        return (
            self._available_width(),
            self.show_command_palette and app.ENABLE_COMMAND_PALETTE,
            tuple(
                (b.key, app.get_key_display(b), b.description, b.action, enabled, tooltip)
                for _, b, enabled, tooltip in self.screen.active_bindings.values()
                if b.show
            ),
        )

    def _available_width(self) -> int:
        return self.size.width or self.app.size.width

    def _bound_keys(self) -> tuple[list[_Key], list[_Key]]:
        """(the shown keys in the screen's order, the command palette's key), as
        Textual's footer picks them: one key per action, the first bound."""
        app = self.app
        active = self.screen.active_bindings
        keys: dict[str, _Key] = {}
        for _, binding, enabled, tooltip in active.values():
            if binding.show and binding.action not in keys:
                keys[binding.action] = _Key(
                    binding.key,
                    app.get_key_display(binding),
                    binding.description,
                    binding.action,
                    enabled,
                    tooltip,
                )
        palette: list[_Key] = []
        if self.show_command_palette and app.ENABLE_COMMAND_PALETTE:
            entry = active.get(app.COMMAND_PALETTE_BINDING)
            if entry is not None:
                _, binding, enabled, _ = entry
                palette.append(
                    _Key(
                        binding.key,
                        app.get_key_display(binding),
                        binding.description,
                        binding.action,
                        enabled,
                        binding.tooltip or binding.description,
                        palette=True,
                    )
                )
        return list(keys.values()), palette

    def _fit(self, bound: tuple[list[_Key], list[_Key]], width: int) -> list[_Key]:
        """The keys drawn, placed: those that fit whole, in order (each followed by a
        blank), then `more_key` if any was dropped; the palette's key at the right,
        one blank from the edge."""
        shown, palette = bound
        room = width - sum(k.width + 1 for k in palette)
        if sum(k.width + 1 for k in shown) > room:
            more = self._more_key()
            room -= more.width + 1
            kept: list[_Key] = []
            for key in shown:
                if key.key != self.more_key and key.width + 1 <= room:
                    kept.append(key)
                    room -= key.width + 1
            shown = [*kept, more]
        placed: list[_Key] = []
        x = 0
        for key in shown:
            placed.append(_with_x(key, x))
            x += key.width + 1
        placed += [_with_x(k, width - 1 - k.width) for k in palette]
        return placed

    def _more_key(self) -> _Key:
        binding = next(
            (b for _, b, _, _ in self.screen.active_bindings.values() if b.key == self.more_key),
            None,
        )
        return _Key(
            self.more_key,
            self.app.get_key_display(binding) if binding is not None else self.more_key,
            self.more_label,
            binding.action if binding is not None else "app.help",
            True,
            "",
        )

    def render_line(self, y: int) -> Strip:
        """The row as Textual's footer composes it: keys from the left, each followed by
        a blank of the footer's background, the palette's key over the right end."""
        width = self.size.width
        _, background = self.background_colors
        blank = Style(bgcolor=background.rich_color)  # what a container's empty cells get
        segments: list[Segment] = []
        for key in self._keys:
            if not key.palette:
                segments += self._key_segments(key, background)
                segments.append(Segment(" ", blank))
        palette_x = min((k.x for k in self._keys if k.palette), default=width)
        line = Strip(segments).crop_extend(0, palette_x, blank)
        for key in self._keys:
            if key.palette:
                line = Strip.join([line, Strip(self._key_segments(key, background))])
        return line.crop_extend(0, width, blank)

    def _key_segments(self, key: _Key, background: Color) -> list[Segment]:
        """The key as Textual's compact `FooterKey` draws it: its item's colours under
        the key's (bold) and the description's; dim when disabled."""
        hover = key == self._hover
        item = self.get_component_styles(
            "fitting-footer--hover" if hover else "fitting-footer--item"
        )
        item_background = background + item.background
        item_style = _style(item_background, item.color if hover else self.styles.color)
        if not key.enabled:
            item_style += Style(dim=True)
        parts = [(key.key_display, "footer-key--key")]
        if key.description:
            parts.append((" " + key.description, "footer-key--description"))
        segments: list[Segment] = []
        if key.palette:
            # Its left border, as Textual draws a `vkey` edge: over the footer's background.
            border = self.get_component_styles("fitting-footer--palette-border").color
            segments.append(Segment("▏", _style(item_background, background + border)))
        for part, component in parts:
            styles = self.get_component_styles(component)
            style = _style(item_background + styles.background, styles.color) + styles.text_style
            segments.append(Segment(part, item_style + style))
        return segments

    def _key_at(self, x: int) -> _Key | None:
        # The palette's key is drawn over the others: look it up first.
        for key in sorted(self._keys, key=lambda k: not k.palette):
            if key.x <= x < key.x + key.width:
                return key
        return None

    def on_mouse_down(self, event: events.MouseDown) -> None:
        key = self._key_at(event.x)
        if key is None:
            return
        if key.enabled:
            self.app.simulate_key(key.key)
        else:
            self.app.bell()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._set_hover(self._key_at(event.x))

    def on_leave(self, event: events.Leave) -> None:
        self._set_hover(None)

    def _set_hover(self, key: _Key | None) -> None:
        if key != self._hover:
            self._hover = key
            self.tooltip = key.tooltip if key is not None and key.tooltip else None
            self.refresh()

    def shown_keys(self) -> list[FooterKey]:
        """The keys drawn now, left to right (the command palette's last, with class
        `-command-palette`): what a user can read and click. Each is a `FooterKey` that
        is not mounted, standing for its place in the row (`region`), made on request
        and kept while the row is the same."""
        if self._views is None:
            origin = self.region.offset
            self._views = [
                _KeyView(k, Region(origin.x + k.x, origin.y, k.width, 1)) for k in self._keys
            ]
        return list(self._views)


class _KeyView(FooterKey):
    """A drawn key as Textual's `FooterKey` would be, with its place on the screen."""

    def __init__(self, key: _Key, region: Region) -> None:
        classes = "-compact -command-palette" if key.palette else "-compact"
        super().__init__(
            key.key,
            key.key_display,
            key.description,
            key.action,
            disabled=not key.enabled,
            tooltip=key.tooltip,
            classes=classes,
        )
        self._drawn_region = region

    @property
    def region(self) -> Region:
        return self._drawn_region


def _with_x(key: _Key, x: int) -> _Key:
    return _Key(
        key.key,
        key.key_display,
        key.description,
        key.action,
        key.enabled,
        key.tooltip,
        key.palette,
        x,
    )


def _style(background: Color, color: Color) -> Style:
    """A node's colours as Textual composes them (`DOMNode.rich_style`)."""
    return Style(
        color=(background + color).rich_color if (background.a or color.a) else None,
        bgcolor=background.rich_color if background.a else None,
    )
