"""Text that is safe to print: model output and imported names are untrusted.

A message can hold terminal escape sequences (colours, cursor moves, window
titles, hyperlinks), carriage returns that overwrite a line, or bidi
controls that reorder what is shown. Printed raw they would act on the
user's terminal; `neutralise` makes each one visible as an escape instead.
"""

from __future__ import annotations

import re

__all__ = ["json_safe", "neutralise", "one_line"]

# C0 controls but tab and newline, DEL, C1 controls, bidi embeddings/overrides/
# isolates and marks, and the Unicode line/paragraph separators.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def neutralise(text: str) -> str:
    """`text` with every control character shown as `\\xNN`/`\\uNNNN` (tabs, newlines kept)."""
    return _UNSAFE.sub(_visible, text.replace("\r\n", "\n"))


def one_line(text: str, width: int | None = None) -> str:
    """Whitespace collapsed to single spaces, neutralised, cut to `width` with `…`."""
    flat = neutralise(" ".join(text.split()))
    if width is not None and len(flat) > width:
        return flat[: max(width - 1, 0)].rstrip() + "…"
    return flat


def json_safe(encoded: str) -> str:
    """JSON text with the characters JSON leaves raw but terminals act on escaped.

    `json.dumps` escapes C0 controls already; C1 controls, bidi controls and
    U+2028/2029 can only occur inside strings, where `\\uNNNN` means the same.
    """
    return re.sub(
        "[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]",
        lambda m: f"\\u{ord(m.group()):04x}",
        encoded,
    )
