"""Start-up: a widget's parts styled when they are first drawn, not whenever it is styled.

A widget's `COMPONENT_CLASSES` (its parts: the input's cursor and selection, the tree's
rows, a gauge's label and bar) each get styles of their own: Textual makes a node per
part and applies the whole stylesheet to it every time the widget is styled. On the
first screen that was 62 of the 89 stylesheet applies before the first frame (issue
23): the input styled twice (mounted, focused) with its 8 parts each time, the tree's
15 parts of which its empty first screen draws none, the conversation gauge's 5 again
once its figures came; now 31 of 58. Here a part is styled when it is
first asked for (`get_component_styles`, as drawing does), with the widget's state at
that moment; a part never asked for is never styled.

What is drawn is the same: a part is styled from the same stylesheet and the same
widget state as before (any change of the widget's classes, focus or theme restyles it
and starts its parts afresh). A widget is repainted on its first styling, as Textual
does, and when restyled only if a part it has drawn with changed (Textual compared
every part; one never drawn cannot have changed what is on screen).
"""

from __future__ import annotations

from typing import Any

from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode

__all__ = ["LazyPartsStylesheet", "install"]


class _Parts(dict[str, Any]):
    """A widget's part styles, each styled on first use (`__missing__`)."""

    def __init__(self, stylesheet: Stylesheet, node: DOMNode, names: set[str]) -> None:
        super().__init__()
        self._stylesheet = stylesheet
        self._node = node
        self._names = names

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __missing__(self, name: str) -> Any:
        if name not in self._names:
            raise KeyError(name)
        self[name] = styles = _style_part(self._stylesheet, self._node, name)
        return styles

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return self[name] if name in self._names else default

    def clear(self) -> None:  # the widget is removed
        super().clear()
        self._names = set()


def _style_part(stylesheet: Stylesheet, node: DOMNode, name: str) -> Any:
    """One part's styles, as Textual's `_process_component_classes` makes them."""
    virtual_node = DOMNode(classes=name)
    virtual_node._attach(node)
    shared = getattr(stylesheet, "shared_parts", None)
    if shared is None:
        stylesheet.apply(virtual_node, animate=False)
        return virtual_node.styles
    # Siblings alike (same parent, type, id, classes, hover, focus, disabled) get the
    # same rules for a part: Textual's own cache key for a node, taken one level up.
    key = (node._parent, type(node), node.id, node.classes, node._pseudo_classes_cache_key, name)
    rules = shared.get(key)
    if rules is not None:
        stylesheet.replace_rules(virtual_node, rules, animate=False)
        return virtual_node.styles
    found: dict[tuple[object, ...], Any] = {}
    stylesheet.apply(virtual_node, animate=False, cache=found)
    if len(found) == 1:  # none where a rule asks about siblings or focus-within
        shared[key] = next(iter(found.values()))
    return virtual_node.styles


class LazyPartsStylesheet(Stylesheet):
    """Textual's stylesheet, styling a widget's parts on first use (see the module)."""

    shared_parts: dict[tuple[object, ...], Any] | None = None
    """The rules of the parts styled since a widget was last styled, for siblings alike
    (the sidebar's memory gauges: each part's style was worked out once a gauge). Any
    widget styled (a class, focus, hover or theme changed) starts it afresh."""

    def apply(self, node: DOMNode, *, animate: bool = False, cache: Any = None) -> None:
        if type(node) is not DOMNode:  # a widget, not a part
            self.shared_parts = {}
        super().apply(node, animate=animate, cache=cache)

    def _process_component_classes(self, node: DOMNode) -> None:
        names = node._get_component_classes()
        if not names:
            return
        old = node._component_styles
        drawn = dict(old)  # the parts styled so far (a plain dict: all of them)
        node._component_styles = parts = _Parts(self, node, set(names))
        if not drawn and not (isinstance(old, _Parts) and old._names):
            node.refresh()  # its first styling (or again mounted): Textual repaints it
        elif any(parts[name] != styles for name, styles in drawn.items() if name in names):
            node.refresh()


def install(app: Any) -> None:
    """Style `app`'s widgets' parts on first use (before the app runs)."""
    stylesheet = getattr(app, "stylesheet", None)
    if type(stylesheet) is Stylesheet:
        stylesheet.__class__ = LazyPartsStylesheet
