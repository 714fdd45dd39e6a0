"""What the search index sees of a text, and how a query word is matched: one
engine-independent preparation used at index time and at query time.

Why: word tokenizers (FTS5's unicode61, PostgreSQL's parser) take a run of
CJK characters as one token, so `组件` inside `这个组件很好` is never found,
and they drop emoji entirely. Here:

- every CJK character becomes a token of its own (separated by U+2063
  INVISIBLE SEPARATOR, which both tokenizers treat as a separator), and a
  CJK query word becomes a phrase of its characters, so a two-character
  word matches wherever those characters are adjacent, even inside a run;
- every emoji becomes the token `emoji<hex code point>`;
- Latin scripts are left alone: stemming and phrases work as before.

The change is reversible (`restore`), so a snippet cut from the index reads
exactly as the message was written.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .messages import Message

__all__ = [
    "MARK_CLOSE",
    "MARK_OPEN",
    "SEPARATOR",
    "has_cjk",
    "index_text",
    "prepare",
    "query_terms",
    "restore",
    "snippet",
    "spell_emoji",
]

SEPARATOR = "\u2063"
_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # compatibility ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\U00020000-\U0002ffff"  # extensions B-F
)
_EMOJI = (
    "\U0001f000-\U0001faff"  # pictographs, emoticons, transport, symbols
    "\u2600-\u27bf"  # misc symbols, dingbats
    "\u2b00-\u2bff"  # arrows and stars (⭐)
)
_EMOJI_TOKEN = re.compile(f"{SEPARATOR}(\x01?)emoji([0-9a-f]+)(\x02?){SEPARATOR}")


# Compiled on first use: these classes span the astral planes and take ~10-20 ms to
# compile, paid by every start of the app, which reads chats but indexes and searches
# nothing until the user sends or searches.


@cache
def _split_re() -> re.Pattern[str]:
    return re.compile(f"([{_CJK}])|([{_EMOJI}])")


@cache
def _cjk_re() -> re.Pattern[str]:
    return re.compile(f"[{_CJK}]")


@cache
def _emoji_re() -> re.Pattern[str]:
    return re.compile(f"[{_EMOJI}]")


def _split(match: re.Match[str]) -> str:
    cjk, emoji = match.groups()
    if cjk:
        return f"{SEPARATOR}{cjk}{SEPARATOR}"
    return f"{SEPARATOR}emoji{ord(emoji):x}{SEPARATOR}"


def prepare(text: str) -> str:
    """`text` as the index should tokenize it (separators in `text` are dropped first;
    NUL, which PostgreSQL text cannot hold, becomes a space)."""
    return _split_re().sub(_split, text.replace(SEPARATOR, "").replace("\x00", " "))


def restore(prepared: str) -> str:
    """The text `prepare` was given (match marks \\x01 \\x02 inside are kept)."""

    def emoji(match: re.Match[str]) -> str:
        return f"{match.group(1)}{chr(int(match.group(2), 16))}{match.group(3)}"

    return _EMOJI_TOKEN.sub(emoji, prepared).replace(SEPARATOR, "")


def has_cjk(word: str) -> bool:
    """True when `word` holds a CJK character (matched as a phrase of characters)."""
    return bool(_cjk_re().search(word))


def query_terms(word: str) -> list[str]:
    """The index tokens one query word stands for, in order (a phrase when several)."""
    return [t for t in prepare(word).split(SEPARATOR) if t and not t.isspace()]


def spell_emoji(query: str) -> str:
    """A query with each emoji written as the word the index holds for it."""
    return _emoji_re().sub(lambda m: f" emoji{ord(m.group()):x} ", query)


MARK_OPEN, MARK_CLOSE = "\x01", "\x02"
"""Match marks of FTS5's highlight()/snippet(): never left in indexed text."""


def index_text(message: Message) -> str:
    """What search sees of a message: its text and reasoning parts (the index holds
    this text `prepare`d). Here, beside `prepare`, so migrations can rebuild the
    index without importing the search module."""
    return (
        "\n".join(
            str(p.get("text") or "")
            for p in message.parts
            if p.get("type") in ("text", "reasoning")
        )
        .replace(MARK_OPEN, " ")
        .replace(MARK_CLOSE, " ")
    )


SNIPPET_TOKENS = 12


def snippet(marked: str) -> str:
    """About `SNIPPET_TOKENS` words around the first match, matches still marked."""
    words = marked.split()
    first = next((i for i, w in enumerate(words) if MARK_OPEN in w), 0)
    start = max(0, min(first - SNIPPET_TOKENS // 4, len(words) - SNIPPET_TOKENS))
    window = words[start : start + SNIPPET_TOKENS]
    text = " ".join(window)
    if text.count(MARK_OPEN) > text.count(MARK_CLOSE):
        text += MARK_CLOSE  # a match that runs past the window
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + SNIPPET_TOKENS < len(words) else ""
    return f"{prefix}{text}{suffix}"
