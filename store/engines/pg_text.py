"""NUL in PostgreSQL text: every string passes through one reversible escape.

Why: PostgreSQL's `text` cannot hold U+0000, and a model's reply, a memory it
writes, a chat title or an imported file can contain one; SQLite stores it
as it is. Refusing such a write would lose what the model or the file said,
and a per-column fix would have to find every place a string is written and
read. So the PostgreSQL connection's own adapters do it, for every string
parameter and every `text` result:

- written (the connection's `str` dumper): U+FFFF becomes U+FFFF "1", then
  U+0000 becomes U+FFFF "0";
- read (the connection's row factory): the other way round. U+FFFF is a
  Unicode noncharacter ("never interchanged"), so a string without NUL or
  U+FFFF — all real text — is stored as it is, and its read costs one `in`
  test. A row factory, not a `text` loader: psycopg calls a Python loader
  once per value, which cost a 130-message history 0.7 ms (650 values; the
  history itself takes ~1 ms); the row factory costs it 0.09 ms, and the
  50-chat list 0.045 ms (interleaved runs, 100k corpus).

The escape is a prefix code, so equality, uniqueness and "starts with"
ranges (`namespaces.namespace_range`) mean on the escaped strings what they
mean on the originals; what is read back, exported or copied to SQLite is the
original string, so both engines give identical exports. Only the server's
own view differs: a NUL sorts last, not first, and `length()` counts two.
Message JSON never needs it (JSON writes NUL as `\\u0000`); the search index
turns NUL into a space (`text_prep.prepare`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["ESCAPE", "escape", "install", "unescape"]

ESCAPE = "\uffff"
_NUL_CODE = ESCAPE + "0"
_ESCAPE_CODE = ESCAPE + "1"


def escape(text: str) -> str:
    """`text` as PostgreSQL stores it (unchanged unless it holds NUL or U+FFFF)."""
    if "\x00" not in text and ESCAPE not in text:
        return text
    return text.replace(ESCAPE, _ESCAPE_CODE).replace("\x00", _NUL_CODE)


def unescape(text: str) -> str:
    """The string `escape` was given."""
    if ESCAPE not in text:
        return text
    # Every U+FFFF left in an escaped string starts a code, so replacing the NUL
    # codes first cannot touch a U+FFFF that came from an escaped U+FFFF.
    return text.replace(_NUL_CODE, "\x00").replace(_ESCAPE_CODE, ESCAPE)


def install(conn: Any) -> None:
    """Make a psycopg 3 connection escape every string it sends and unescape every
    string it reads."""
    conn.adapters.register_dumper(str, _dumper())
    conn.row_factory = _unescaped_rows


def _unescaped_rows(cursor: Any) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    del cursor  # the same for every query

    def make_row(values: Sequence[Any]) -> tuple[Any, ...]:
        for value in values:
            if value.__class__ is str and ESCAPE in value:
                return tuple(unescape(v) if v.__class__ is str else v for v in values)
        return tuple(values)

    return make_row


@functools.cache
def _dumper() -> type:
    # Here, not at import: psycopg loads only when a PostgreSQL store opens (`driver`).
    from psycopg.types.string import StrDumperUnknown

    class Dumper(StrDumperUnknown):
        def dump(self, obj: str) -> Any:
            return super().dump(escape(obj))

    return Dumper
