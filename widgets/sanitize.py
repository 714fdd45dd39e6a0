"""Neutralising untrusted text (model output, tool results, imports) before display.

A reply may carry terminal escape sequences — colour codes are harmless, but
OSC can set the window title, write the clipboard (OSC 52) or plant links,
and cursor controls can redraw the screen over the app. Everything that is
not printable text, a newline or a tab is removed or made visible.

The one control-character set and `one_line` live in `store.text` (the package
both widgets and chatui may import); this module is the widgets' name for them.
"""

from __future__ import annotations

from typing import cast

from textual.content import Content

from store import clean, one_line

__all__ = ["clean", "literal", "one_line"]


def literal(text: str) -> str:
    """Untrusted text for a widget that parses a string as markup (`Collapsible`'s title):
    cleaned and wrapped as `Content`, which such widgets take as it is ("[/]" in a tool's
    arguments or an MCP server's description would otherwise crash the screen). Typed
    `str` because their hints say so; `Content.from_text` accepts both."""
    return cast(str, Content(clean(text)))
