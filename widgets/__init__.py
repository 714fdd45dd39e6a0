"""Textual widgets for chatui: the message tree, chat pane, input and context sidebar.

They take `store` data (messages, context blocks) and post Textual messages;
they never call a model or open a database.
"""

from typing import TYPE_CHECKING

from .attachment_tray import AttachmentTray
from .chat_input import ChatInput
from .chat_view import ChatNotice, ChatView
from .context_sidebar import ContextSidebar, ConversationStats
from .fitting_footer import FittingFooter
from .in_place import update_in_place
from .message_tree import MessageTree, preview
from .message_view import MessageView, ReplyStream, code_blocks, looks_like_markdown, status_of
from .sanitize import clean, literal, one_line
from .token_gauge import TokenGauge, fill_level, format_tokens
from .tree_layout import TreeEntry, TreeRow, lay_out, status_label

if TYPE_CHECKING:  # loaded on first use at run time (`__getattr__` below)
    from .diff_view import DiffView, word_diff

__all__ = [
    "AttachmentTray",
    "ChatInput",
    "ChatNotice",
    "ChatView",
    "ContextSidebar",
    "ConversationStats",
    "DiffView",
    "FittingFooter",
    "MessageTree",
    "MessageView",
    "ReplyStream",
    "TokenGauge",
    "TreeEntry",
    "TreeRow",
    "clean",
    "literal",
    "code_blocks",
    "fill_level",
    "format_tokens",
    "lay_out",
    "looks_like_markdown",
    "one_line",
    "preview",
    "status_label",
    "status_of",
    "update_in_place",
    "word_diff",
]


# The comparison screen's diff loads with its first showing (`from widgets import
# DiffView` works as before): the app's first screen never needs it (start-up, issue 23).
_LAZY = {"DiffView": "diff_view", "word_diff": "diff_view"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'widgets' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
