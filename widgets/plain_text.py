"""A reply's Markdown as the words it shows, for one-line previews (the tree's rows).

Replies are Markdown: a row read "## Plan **Sure!** Run `pip` … ```python" where the
chat shows "Plan Sure! Run pip … python". Only the marks a reader never sees go:
heading hashes, code fences, emphasis, inline code's backticks, a link's address
(its text stays). A star or underscore inside a word or between spaces stays
(`2*3*4`, `snake_case`), and so do lists and quotes (their marks read as text).
"""

from __future__ import annotations

import re

__all__ = ["plain"]

_FENCE = re.compile(r"^[ \t]*(?:```|~~~)[^\n]*$", re.MULTILINE)
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+", re.MULTILINE)
_IMAGE_OR_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")
_STRONG = re.compile(r"(?<![\w*])(\*\*|__)(?=\S)(.+?)(?<=\S)\1(?![\w*])")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=\S)\*(?![\w*])")
_UNDERSCORE = re.compile(r"(?<![\w_])_(?=[^\s_])([^_\n]+?)(?<=\S)_(?![\w_])")
_CODE = re.compile(r"`([^`\n]+)`")


def plain(text: str) -> str:
    """`text` without the Markdown marks a reader of the rendered reply never sees."""
    if not any(mark in text for mark in "#`*_["):
        return text  # most texts: nothing to take out
    text = _FENCE.sub("", text)
    text = _HEADING.sub("", text)
    text = _IMAGE_OR_LINK.sub(r"\1", text)
    text = _CODE.sub(r"\1", text)
    text = _STRONG.sub(r"\2", text)
    text = _EMPHASIS.sub(r"\1", text)
    return _UNDERSCORE.sub(r"\1", text)
