"""Neutralising untrusted text (model output, tool results, imports) before display.

A reply may carry terminal escape sequences — colour codes are harmless, but
OSC can set the window title, write the clipboard (OSC 52) or plant links,
and cursor controls can redraw the screen over the app. Everything that is
not printable text, a newline or a tab is removed or made visible.
"""

from __future__ import annotations

import re

__all__ = ["clean", "one_line"]

# ESC-introduced sequences: CSI (ESC [ … final), OSC (ESC ] … BEL or ST),
# DCS/SOS/PM/APC (ESC P/X/^/_ … ST), and two-byte escapes (ESC + one char).
_ESCAPES = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]            # CSI
    | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?   # OSC, to BEL or ST (or unterminated)
    | \x1b[PX^_][^\x1b]*(?:\x1b\\)?    # DCS, SOS, PM, APC
    | \x1b[@-Z\\-_]                    # other two-byte escapes
    | \x9b[0-?]*[ -/]*[@-~]            # 8-bit CSI
    | \x9d[^\x07\x9c]*[\x07\x9c]?      # 8-bit OSC
    """,
    re.VERBOSE,
)
# C0 controls except \t and \n, DEL, C1 controls, a lone ESC, and the bidi controls
# that would reorder what the terminal shows (as `chatui.porting.text` escapes them).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_LINE_SEPARATORS = re.compile("[\u2028\u2029]")
_CR_LINE = re.compile(r"\r(?!\n)")


def clean(text: str) -> str:
    """`text` without escape sequences or control characters (newlines and tabs kept)."""
    if not text:
        return ""
    text = _ESCAPES.sub("", text)
    text = text.replace("\r\n", "\n")
    text = _CR_LINE.sub("\n", text)  # a bare CR would overwrite the line before it
    text = _LINE_SEPARATORS.sub("\n", text)
    return _CONTROLS.sub("", text)


def one_line(text: str, width: int = 80) -> str:
    """A clean single-line preview, whitespace collapsed, cut to `width` with an ellipsis."""
    flat = " ".join(clean(text).split())
    return flat if len(flat) <= width else flat[: max(width - 1, 1)].rstrip() + "…"
