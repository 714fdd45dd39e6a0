"""What an export writes, shared by `chatui export` and the app's palette."""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from store import SessionInfo, Store

from .markdown import render_markdown
from .text import json_safe
from .tree import path_view

__all__ = ["json_text", "markdown_page", "slug"]


def slug(text: str) -> str:
    """A file-name-safe form of a chat name ("Trip planning!" → "trip-planning")."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:50] or "chat"


def markdown_page(
    store: Store, info: SessionInfo, through: str | None = None, live: Collection[str] = ()
) -> str:
    """The branch through `through` (the active one by default) as Markdown; `live`:
    ids of replies being written now (the app knows them; another process cannot)."""
    return render_markdown(path_view(store, info, through), through=through, live=live)


def json_text(value: Any) -> str:
    """Indented JSON whose control and bidi characters stay escaped."""
    return json_safe(json.dumps(value, ensure_ascii=False, indent=2))
