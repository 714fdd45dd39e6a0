"""A footer whose keys never run off the edge of a small terminal.

Textual's `Footer` lays every shown key in one row and lets the ones past the
right edge fall out of sight (the row scrolls only with a mouse wheel). At 80
columns the focused pane's keys plus the app's keys do not fit, so this footer
keeps the keys in the order the screen ranks them (focused widget first), skips
any that would not fit whole, and, when it skipped one, ends with the key that
lists every key, so nothing is out of reach.
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

__all__ = ["FittingFooter"]


class FittingFooter(Footer):
    """A compact `Footer` that drops whole keys instead of cutting them off.

    Args:
        more_key: the key that lists every key (shown when some were dropped).
        more_label: its label in the footer.
    """

    def __init__(self, *, more_key: str = "f1", more_label: str = "Keys", **kwargs: Any) -> None:
        kwargs.setdefault("compact", True)
        super().__init__(**kwargs)
        self.more_key = more_key
        self.more_label = more_label
        self._composed_width = 0
        self._composed: tuple[object, ...] | None = None

    def _signature(self) -> tuple[object, ...]:
        """What the keys drawn depend on: the shown bindings, their state, the width."""
        if not self._bindings_ready:
            return (False,)
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

    async def recompose(self) -> None:
        """Recompose only when the keys would change: focus, the screen stack and the
        terminal's focus each ask at start-up, and rebuilding ~20 keys costs a frame."""
        if self.is_attached and self._signature() == self._composed:
            return
        await super().recompose()

    def compose(self) -> ComposeResult:
        if not self._bindings_ready and self.is_attached:
            # Textual's footer stays empty until focus settles and two refreshes pass
            # (~0.1 s after the first frame at start-up, behind the first chat's frames);
            # the screen's and the app's keys are known once the footer is mounted, so
            # they are drawn with the first frame. Focus moving later recomposes only
            # if the keys differ (`recompose`).
            self.set_reactive(Footer._bindings_ready, True)
        self._composed = self._signature()
        keys = [w for w in super().compose() if isinstance(w, FooterKey)]
        for key in keys:
            self._preset_compact(key)
        palette = [k for k in keys if k.has_class("-command-palette")]
        shown = [k for k in keys if not k.has_class("-command-palette")]
        width = self._available_width()
        room = width - sum(_width(k) + 1 for k in palette)  # +1: the palette's border
        if sum(_width(k) for k in shown) <= room:
            yield from keys
            return
        more = self._more_key()
        room -= _width(more)
        kept: list[Widget] = []
        for key in shown:
            if key.key == self.more_key:
                continue
            if _width(key) <= room:
                kept.append(key)
                room -= _width(key)
        yield from kept
        yield more
        yield from palette

    def _available_width(self) -> int:
        width = self.size.width or self.app.size.width
        self._composed_width = width
        return width

    def _more_key(self) -> FooterKey:
        binding = next(
            (b for _, b, _, _ in self.screen.active_bindings.values() if b.key == self.more_key),
            None,
        )
        action = binding.action if binding is not None else "app.help"
        key = FooterKey(
            self.more_key,
            self.app.get_key_display(binding) if binding is not None else self.more_key,
            self.more_label,
            action,
        )
        return self._preset_compact(key.data_bind(compact=Footer.compact))

    def _preset_compact(self, key: FooterKey) -> FooterKey:
        """Give an unmounted key its compact class now: set by its watcher once mounted,
        it restyled each key a second time (a dozen restyles at start-up)."""
        key.set_class(self.compact, "-compact", update=False)
        return key

    def shown_keys(self) -> list[FooterKey]:
        """The keys drawn now, left to right (the command palette's last, with class
        `-command-palette`): what a user can read and click."""
        return list(self.query(FooterKey))

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._composed_width and self._bindings_ready:
            self.call_after_refresh(self.recompose)


def _width(key: FooterKey) -> int:
    """Cells the key takes in a compact footer: key, space, label, right margin."""
    if not key.description:
        return cell_len(key.key_display) + 1
    return cell_len(key.key_display) + 1 + cell_len(key.description) + 1
