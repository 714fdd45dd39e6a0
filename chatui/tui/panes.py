"""Where the tree and the sidebar go at a given terminal width.

The chat keeps at least `CHAT_MIN` columns at any size. Panes the user
wants sit beside the chat while they fit (shrunk, within limits, when both
almost fit); the tree — the reason people come — keeps a narrow strip
longer than the sidebar; below that a pane becomes a drawer: hidden until
its key opens it over the chat, closed again with escape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.widget import Widget

    from ..core.workspace import UiState

__all__ = [
    "CHAT_MIN",
    "SIDEBAR_WIDTHS",
    "TREE_WIDTHS",
    "PaneLayout",
    "PanePlan",
    "plan_panes",
]

CHAT_MIN = 60
"""Columns the chat pane never goes below (a readable reply and the input)."""
TREE_WIDTHS = (20, 36, 90)
"""The tree's (narrowest beside the chat, default, widest)."""
SIDEBAR_WIDTHS = (26, 34, 70)
"""The sidebar's (narrowest beside the chat, default, widest)."""
_SHARED_TREE_MIN = 28
"""Narrowest the tree is squeezed to so that the sidebar can stay beside it."""

Mode = Literal["beside", "drawer", "hidden"]


@dataclass(frozen=True)
class PanePlan:
    tree: Mode
    tree_width: int
    sidebar: Mode
    sidebar_width: int


def clamp_width(width: int, limits: tuple[int, int, int]) -> int:
    """A remembered width kept within a pane's limits (a hand-edited file may hold anything)."""
    return max(limits[0], min(width, limits[2]))


def plan_panes(
    width: int,
    *,
    tree_width: int = TREE_WIDTHS[1],
    sidebar_width: int = SIDEBAR_WIDTHS[1],
    show_tree: bool = True,
    show_sidebar: bool = True,
) -> PanePlan:
    """Modes and widths of the two panes for a terminal `width` columns wide."""
    tw = clamp_width(tree_width, TREE_WIDTHS)
    sw = clamp_width(sidebar_width, SIDEBAR_WIDTHS)
    room = width - CHAT_MIN
    drawer_room = max(width - 8, 10)  # a drawer leaves a strip of chat visible
    tree: tuple[Mode, int] = ("hidden", tw)
    side: tuple[Mode, int] = ("hidden", sw)
    if show_tree and show_sidebar and room >= tw + sw:
        tree, side = ("beside", tw), ("beside", sw)
    elif show_tree and show_sidebar and room >= _SHARED_TREE_MIN + SIDEBAR_WIDTHS[0]:
        share = max(_SHARED_TREE_MIN, min(tw, round(room * tw / (tw + sw))))
        share = min(share, room - SIDEBAR_WIDTHS[0])
        tree, side = ("beside", share), ("beside", room - share)
    else:
        if show_tree:
            if room >= TREE_WIDTHS[0]:
                tree = ("beside", min(tw, room))
                room -= tree[1]
            else:
                tree = ("drawer", min(tw, drawer_room))
        if show_sidebar:
            side = ("beside", sw) if room >= sw else ("drawer", min(sw, drawer_room))
    return PanePlan(tree[0], tree[1], side[0], side[1])


class PaneLayout:
    """The tree and sidebar of one screen, placed for its width: beside the chat, or
    drawers over it (opened by their key, closed when focus leaves them).

    Composed by the main screen, which calls `arrange` on mount and resize; the
    user's widths and visibility live in `ui_state` and are reported through
    `on_change` (the app saves them).
    """

    def __init__(
        self,
        screen: Screen[Any],
        tree: Widget,
        sidebar: Widget,
        ui_state: UiState,
        *,
        home: Callable[[], object],
        on_change: Callable[[], None],
    ) -> None:
        self.screen = screen
        self.tree = tree
        self.sidebar = sidebar
        self.ui_state = ui_state
        self._home = home
        """Where focus goes when a drawer closes (the input)."""
        self._on_change = on_change
        self.drawer: str | None = None
        """The pane open as a drawer over the chat ("tree", "sidebar"), if any."""
        self.plan: PanePlan | None = None

    def arrange(self) -> None:
        """Place the panes for the screen's width (on mount, resize and any pane change)."""
        state = self.ui_state
        plan = plan_panes(
            self.screen.size.width,
            tree_width=state.tree_width,
            sidebar_width=state.sidebar_width,
            show_tree=state.show_tree,
            show_sidebar=state.show_sidebar,
        )
        self.plan = plan
        if self.drawer == "tree" and plan.tree != "drawer":
            self.drawer = None
        if self.drawer == "sidebar" and plan.sidebar != "drawer":
            self.drawer = None
        for widget, mode, width, which in (
            (self.tree, plan.tree, plan.tree_width, "tree"),
            (self.sidebar, plan.sidebar, plan.sidebar_width, "sidebar"),
        ):
            widget.styles.width = width  # the user's remembered width, not a theme's
            widget.set_class(mode == "drawer", "-drawer")
            widget.display = mode == "beside" or (mode == "drawer" and self.drawer == which)

    def open_drawer(self, which: str | None) -> None:
        self.drawer = which
        self.arrange()

    def close_drawer(self) -> bool:
        """Close an open drawer; False when none was open (escape then does its usual)."""
        if self.drawer is None:
            return False
        self.open_drawer(None)
        self._home()
        return True

    def toggle(self, which: str) -> None:
        """Show or hide a pane; a pane that is a drawer at this size opens or closes (and
        takes the keys: a drawer is opened to be used)."""
        plan = self.plan
        mode = (plan.tree if which == "tree" else plan.sidebar) if plan else "beside"
        state = self.ui_state
        if mode == "drawer":
            self.open_drawer(None if self.drawer == which else which)
        elif which == "tree":
            state.show_tree = not state.show_tree
        else:
            state.show_sidebar = not state.show_sidebar
        self.arrange()
        if mode == "drawer" and self.drawer == which:
            target = self.tree if which == "tree" else self.sidebar
            first = next(iter(target.query("TokenGauge")), None) if which == "sidebar" else None
            (first or target).focus()
        self._on_change()

    def focus_tree(self) -> None:
        """The tree key: focus the tree (opening it if hidden); pressed in the tree, back."""
        if self.screen.focused is self.tree:
            if not self.close_drawer():
                self._home()
            return
        state = self.ui_state
        if not state.show_tree:
            state.show_tree = True
            self._on_change()
        if self.plan is not None and self.plan.tree == "drawer":
            self.drawer = "tree"
        self.arrange()
        self.tree.focus()

    def resize(self, which: str, step: int) -> None:
        state = self.ui_state
        if which == "tree":
            state.tree_width = clamp_width(state.tree_width + step, TREE_WIDTHS)
        else:
            state.sidebar_width = clamp_width(state.sidebar_width + step, SIDEBAR_WIDTHS)
        self.arrange()
        self._on_change()

    def blurred(self, widget: Widget) -> None:
        """Focus left `widget`: a drawer is a glance, it closes once focus leaves it."""
        if self.drawer is not None and widget in (self.tree, self.sidebar):
            self.screen.call_after_refresh(self._close_unfocused)

    def _close_unfocused(self) -> None:
        pane = self.tree if self.drawer == "tree" else self.sidebar
        focused = self.screen.focused
        if self.drawer is not None and (focused is None or pane not in focused.ancestors_with_self):
            if self.screen.app.screen is self.screen:  # a dialog over it keeps it open
                self.open_drawer(None)
