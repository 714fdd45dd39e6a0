"""Small UI state chatui remembers between runs (theme, last chat, panes, models).

Kept apart from the config file, which is the user's and never rewritten.
Written atomically and private (0600); never holds secrets. A damaged file
is ignored (the app starts with defaults) rather than stopping the app.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from . import paths

__all__ = ["UiState", "load_state", "save_state"]

log = logging.getLogger(__name__)

MAX_FOLDED_CHATS = 200
MAX_FOLDS_PER_CHAT = 500
MAX_DRAFTS = 200
MAX_DRAFT_CHARS = 100_000
NEW_CHAT_DRAFT = ""
"""The drafts key of the new chat on screen (not stored yet)."""


@dataclass
class UiState:
    theme: str | None = None
    """The theme picked last (used when the config sets none)."""
    last_session_id: str | None = None
    """The chat open when the app last closed."""
    model: str | None = None
    """The model picked last with ctrl+l (used when neither --model nor config sets one)."""
    recent_models: list[str] = field(default_factory=list)
    show_tree: bool = True
    show_sidebar: bool = True
    tree_width: int = 36
    """Columns of the tree pane (changed with < and > in the tree)."""
    sidebar_width: int = 34
    """Columns of the context sidebar (changed with < and > in the sidebar)."""
    tree_unfolded: dict[str, list[str]] = field(default_factory=dict)
    """Chat id → keys of the folded runs the user opened in its tree (newest chats last)."""
    drafts: dict[str, str] = field(default_factory=dict)
    """Chat id ("" for a new chat) → what was typed in its input and not sent: kept
    across chat switches and restarts (newest chats last)."""

    def remember_model(self, model: str) -> None:
        self.model = model
        self.recent_models = [model] + [m for m in self.recent_models if m != model][:9]

    def remember_draft(self, session_id: str | None, text: str) -> bool:
        """Keep what is typed in a chat's input (blank: forget it); the newest
        `MAX_DRAFTS` chats are kept, each up to `MAX_DRAFT_CHARS` characters.
        Returns whether the kept draft changed (unchanged: nothing to write)."""
        key = session_id or NEW_CHAT_DRAFT
        before = self.drafts.pop(key, None)
        after = text[:MAX_DRAFT_CHARS] if text.strip() else None
        if after is not None:
            self.drafts[key] = after
        while len(self.drafts) > MAX_DRAFTS:
            self.drafts.pop(next(iter(self.drafts)))
        return before != after

    def draft(self, session_id: str | None) -> str:
        """What was typed in the chat's input and not sent ("" for none)."""
        return self.drafts.get(session_id or NEW_CHAT_DRAFT, "")

    def remember_unfolded(self, session_id: str, keys: Iterable[str]) -> None:
        """Keep a chat's open folds; the file keeps the newest `MAX_FOLDED_CHATS` chats."""
        self.tree_unfolded.pop(session_id, None)
        keys = sorted(keys)[:MAX_FOLDS_PER_CHAT]
        if keys:
            self.tree_unfolded[session_id] = keys
        while len(self.tree_unfolded) > MAX_FOLDED_CHATS:
            self.tree_unfolded.pop(next(iter(self.tree_unfolded)))


def load_state(path: Path | None = None) -> UiState:
    path = path or paths.state_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return UiState()
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable state file %s: %s", path, exc)
        return UiState()
    if not isinstance(data, dict):
        return UiState()
    state = UiState()
    for f in fields(UiState):
        value = data.get(f.name)
        default = getattr(state, f.name)
        if value is None:
            continue
        if isinstance(default, bool) and isinstance(value, bool):
            setattr(state, f.name, value)
        elif f.name == "recent_models" and isinstance(value, list):
            state.recent_models = [v for v in value if isinstance(v, str)][:10]
        elif f.name == "tree_unfolded" and isinstance(value, dict):
            state.tree_unfolded = {
                k: [key for key in v if isinstance(key, str)][:MAX_FOLDS_PER_CHAT]
                for k, v in list(value.items())[-MAX_FOLDED_CHATS:]
                if isinstance(k, str) and isinstance(v, list)
            }
        elif f.name == "drafts" and isinstance(value, dict):
            state.drafts = {
                k: v[:MAX_DRAFT_CHARS]
                for k, v in list(value.items())[-MAX_DRAFTS:]
                if isinstance(k, str) and isinstance(v, str) and v.strip()
            }
        elif isinstance(default, int) and not isinstance(default, bool):
            if isinstance(value, int) and not isinstance(value, bool):
                setattr(state, f.name, value)
        elif not isinstance(default, bool | list | dict | int) and isinstance(value, str):
            setattr(state, f.name, value)
    return state


def save_state(state: UiState, path: Path | None = None) -> None:
    """Write atomically (temp file + rename) with mode 0600; errors are logged, not raised."""
    path = path or paths.state_file()
    try:
        paths.ensure_private_dir(path.parent)
        paths.write_private(path, json.dumps(_plain(asdict(state)), indent=2))
    except OSError as exc:
        log.warning("could not save UI state to %s: %s", path, exc)


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v is not None}
