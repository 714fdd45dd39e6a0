"""Where the tree and the sidebar go at a given terminal width.

The chat keeps at least `CHAT_MIN` columns at any size. Panes the user
wants sit beside the chat while they fit (shrunk, within limits, when both
almost fit); the tree — the reason people come — keeps a narrow strip
longer than the sidebar; below that a pane becomes a drawer: hidden until
its key opens it over the chat, closed again with escape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "CHAT_MIN",
    "SIDEBAR_WIDTHS",
    "TREE_WIDTHS",
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
