"""Neutralising untrusted text (model output, tool results, imports) before display.

A reply may carry terminal escape sequences — colour codes are harmless, but
OSC can set the window title, write the clipboard (OSC 52) or plant links,
and cursor controls can redraw the screen over the app. Everything that is
not printable text, a newline or a tab is removed or made visible.

The one control-character set and `one_line` live in `store.text` (the package
both widgets and chatui may import); this module is the widgets' name for them.
"""

from __future__ import annotations

from store import clean, one_line

__all__ = ["clean", "one_line"]
