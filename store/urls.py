"""Database URLs: telling a URL from a file path, and showing one without its password.

`Store` takes a file path, ":memory:", or a URL (`sqlite:///path/chat.db`;
`postgresql://user@host:5432/db` is recognised and refused with a clear
error until the PostgreSQL engine lands). A URL must never be taken for a
file path (that once made a folder named `postgresql:`), and its password
must never reach a log line or an error message: every message that names a
URL names `redact_url(url)`.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit, urlunsplit

__all__ = ["is_url", "redact_url", "redact_urls_in", "url_scheme"]

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# A URL that went through `pathlib.Path` ("postgresql://h/db" -> "postgresql:/h/db").
_FLATTENED = re.compile(r"^(sqlite|postgres|postgresql|postgresext|psycopg3?|mysql)\+?[a-z]*:/")


def is_url(value: str | os.PathLike[str]) -> bool:
    """True for "scheme://…", and for a known scheme a `Path` has flattened."""
    text = os.fspath(value)
    return bool(_URL.match(text) or _FLATTENED.match(text))


def url_scheme(value: str) -> str:
    """The scheme, lower-case ("" when `value` is not a URL)."""
    match = _URL.match(value) or _FLATTENED.match(value)
    return match.group(1).lower() if match else ""


def redact_url(value: str | os.PathLike[str]) -> str:
    """`value` with any password replaced by `***` (other text unchanged)."""
    text = os.fspath(value)
    if not is_url(text):
        return text
    if not _URL.match(text):  # flattened by a Path: put the "//" back
        text = text.replace(":/", "://", 1)
    try:
        parts = urlsplit(text)
        if parts.password is None:
            return text
        user = parts.username or ""
        host = parts.hostname or ""
        if ":" in host:  # IPv6 literal
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port else ""
        netloc = f"{user}:***@{host}{port}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    except ValueError:  # a malformed port or netloc: show the scheme only
        return f"{url_scheme(text)}://***"


def redact_urls_in(text: str) -> str:
    """Every "scheme://user:password@" in free text with its password hidden."""
    return _IN_TEXT.sub(r"\1:***@", text)


_IN_TEXT = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*:/{1,2}[^\s:/@]*):[^\s@/]*@")
