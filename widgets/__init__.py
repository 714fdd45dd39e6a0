"""Textual widgets for chatui: the message tree, chat pane, input and context sidebar.

They take `store` data (messages, context blocks) and post Textual messages;
they never call a model or open a database.
"""

from .attachment_tray import AttachmentTray
from .chat_input import ChatInput
from .chat_view import ChatNotice, ChatView
from .context_sidebar import ContextSidebar, ConversationStats
from .diff_view import DiffView, word_diff
from .fitting_footer import FittingFooter
from .in_place import update_in_place
from .message_tree import MessageTree, preview
from .message_view import MessageView, ReplyStream, code_blocks, status_of
from .sanitize import clean, literal, one_line
from .token_gauge import TokenGauge, fill_level, format_tokens
from .tree_layout import TreeEntry, TreeRow, lay_out, status_label

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
    "one_line",
    "preview",
    "status_label",
    "status_of",
    "update_in_place",
    "word_diff",
]
