"""Text the store writes must have a UTF-8 form.

A JSON file may spell a lone surrogate (`"\\ud800"`); Python reads it into a `str`
that no database driver can encode and no export can write. Whatever the store
writes as text is checked here first, so such input is refused on the way in with
one clear error (a `ValueError`) instead of failing later, on a read or an export.
"""

from __future__ import annotations

__all__ = ["require_utf8"]


def require_utf8(text: str, what: str) -> str:
    """`text` unchanged.

    Raises:
        ValueError: it holds a lone surrogate; `what` names the value in the message.
    """
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"{what} holds a lone surrogate ({exc.object[exc.start]!r}), which is not text"
            ) from None
    return text
