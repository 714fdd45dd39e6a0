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

Since m011 (issue 23) the index holds `tokens`: the words of a text decided
here, in Python, for both engines, so SQLite and PostgreSQL find the same
messages for the same query. A word is a run of letters, digits and
combining marks; it is case-folded, accent-folded (NFKD without combining
marks: "Café" is "cafe") and stemmed with Snowball English (PyStemmer:
"connections" is "connect"). Each CJK character is a token of its own and
each emoji the token `emoji<hex code point>`, as `prepare` does. The index
row is those tokens joined by spaces: FTS5 splits it with its `ascii`
tokenizer (ASCII letters and digits, and every non-ASCII character, are
token characters, so a token is never split again) and PostgreSQL turns it
into a `tsvector` with each token at its position (`chatui_tsvector`), so
both hold exactly the same terms at the same positions. A query word is
tokenized by the same function (`query_tokens`); a prefix (`word*`) is
folded but not stemmed, and matches every indexed term that begins with it,
on both engines. Snippets are cut from the message's own text (`mark`).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Set as AbstractSet
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
    "index_tokens",
    "mark",
    "marked_snippet",
    "parts_text",
    "prepare",
    "query_tokens",
    "tokens",
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


# Combining marks inside words (accents written as separate code points, Indic
# vowel signs and viramas, Thai and Lao vowels): a word does not end at them.
_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u0591-\u05bd\u05bf\u05c1-\u05c2\u05c4-\u05c5\u05c7"
    "\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7-\u06e8"
    "\u06ea-\u06ed\u0900-\u0963\u0966-\u0dff\u0e31-\u0e3a\u0e47-\u0e4e"
    "\u0eb1-\u0ebc\u0ec8-\u0ecd\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
)
MAX_TOKEN = 100
"""Longer words are not indexed (nor searched): a base64 blob is no word, and
PostgreSQL refuses lexemes over 2 KB."""


_SUBWORD = re.compile(r"[^\W_]+")


@cache
def _chunk_re() -> re.Pattern[str]:
    # One character class (fast in `re`): word characters (underscore included,
    # split off below), combining marks, or one emoji.
    return re.compile(f"([\\w{_MARKS}]+)|([{_EMOJI}])")


@cache
def _cjk_pieces_re() -> re.Pattern[str]:
    return re.compile(f"([{_CJK}])|[^{_CJK}_]+")


_NOT_UNDERSCORE = re.compile(r"[^_]+")


@cache
def _stemmer() -> object:
    import Stemmer  # PyStemmer: Snowball's English stemmer in C (imported on first use)

    return Stemmer.Stemmer("english")


def _fold(word: str) -> list[str]:
    """A word's case- and accent-folded parts (NFKD can split it: "½" is "1⁄2")."""
    if word.isascii():
        return [word.lower()]
    decomposed = unicodedata.normalize("NFKD", word)
    folded = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    return _SUBWORD.findall(folded)


def _word_tokens(text: str, *, stem: bool = True) -> list[tuple[int, int, list[str]]]:
    """Each word of `text`: (start, end, its tokens). Tokens of words are stemmed
    unless `stem` is False (CJK characters and emoji never are)."""
    found: list[tuple[int, int, list[str]]] = []
    words: list[str] = []
    slots: list[tuple[int, int]] = []  # (index in found, index in its token list) to stem

    def word(start: int, end: int, piece: str) -> None:
        toks = [t for t in _fold(piece) if len(t) <= MAX_TOKEN]
        for i, t in enumerate(toks):
            slots.append((len(found), i))
            words.append(t)
        found.append((start, end, toks))

    for match in _chunk_re().finditer(text):
        chunk, emoji = match.groups()
        start = match.start()
        if emoji:
            found.append((start, match.end(), [f"emoji{ord(emoji):x}"]))
        elif chunk.isascii() and "_" not in chunk:  # the common case, kept short
            if len(chunk) <= MAX_TOKEN:
                slots.append((len(found), 0))
                words.append(chunk.lower())
                found.append((start, match.end(), [words[-1]]))
        elif chunk.isascii():
            for part in _NOT_UNDERSCORE.finditer(chunk):
                word(start + part.start(), start + part.end(), part.group())
        else:
            for part in _cjk_pieces_re().finditer(chunk):
                if part.group(1):
                    char = unicodedata.normalize("NFKC", part.group(1))
                    found.append((start + part.start(), start + part.end(), [char]))
                else:
                    word(start + part.start(), start + part.end(), part.group())
    if stem and words:
        stemmed = _stemmer().stemWords(words)  # type: ignore[attr-defined]
        for (at, i), token in zip(slots, stemmed, strict=True):
            found[at][2][i] = token
    return found


_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")


def tokens(text: str) -> list[str]:
    """The index terms of `text`, in order (see the module docstring)."""
    if text.isascii():  # most text: the same terms as below, 4× faster
        words = [w for w in _ASCII_WORD.findall(text.lower()) if len(w) <= MAX_TOKEN]
        return _stemmer().stemWords(words) if words else []  # type: ignore[attr-defined, no-any-return]
    return [t for _, _, toks in _word_tokens(text.replace("\x00", " ")) for t in toks]


def index_tokens(text: str) -> str:
    """What a search index row holds for `text`: its `tokens` joined by spaces."""
    return " ".join(tokens(text))


def query_tokens(word: str, *, prefix: bool = False) -> list[str]:
    """The index terms a query word stands for (a phrase when several); with
    `prefix` the last is folded but not stemmed ("deploym*" must not become
    "deploym" stemmed to something shorter or longer than what was typed)."""
    if not prefix:
        return tokens(word)
    found = [t for _, _, toks in _word_tokens(word) for t in toks]
    raw = [t for _, _, toks in _word_tokens(word, stem=False) for t in toks]
    return found[:-1] + raw[-1:] if raw else []


@functools.lru_cache(maxsize=32)
def _heads_re(exact: frozenset[str], prefixes: tuple[str, ...]) -> re.Pattern[str]:
    """In lower-cased ASCII text, the rest of a word from one of the terms' first two
    letters on (the caller checks that it begins a word: no letter or digit before
    it); a word that begins otherwise cannot match. A pattern that starts with
    literals: `re` scans for them, not position by position. Cached by the terms:
    built once per query, not per result."""
    heads = {t[:2] for t in (*exact, *prefixes)}
    usable = sorted((h for h in heads if h.isascii() and h.isalnum()), key=len, reverse=True)
    if not usable:
        return re.compile(r"(?!)")
    return re.compile("(?:" + "|".join(re.escape(h) for h in usable) + ")[a-z0-9]*")


def mark(text: str, exact: AbstractSet[str], prefixes: tuple[str, ...]) -> str:
    """`text` with each word whose token is in `exact` (or begins with one of
    `prefixes`) between MARK_OPEN and MARK_CLOSE (adjacent marks joined)."""
    if text.isascii():
        return _mark_ascii(text, exact, prefixes, _heads_re(frozenset(exact), prefixes))
    return _marked(text, _word_tokens(text), exact, prefixes)


def _mark_ascii(
    text: str, exact: AbstractSet[str], prefixes: tuple[str, ...], heads: re.Pattern[str]
) -> str:
    # Stemming changes only the end of a word and keeps at least two letters
    # of one that had them: a word that begins like no term cannot match,
    # and is not stemmed. (One token a word here: `_marked`'s loop, unrolled,
    # on the search results' hot path.)
    lowered = text.lower()
    found = [
        m for m in heads.finditer(lowered) if not m.start() or not lowered[m.start() - 1].isalnum()
    ]
    if not found:
        return text
    stems = _stemmer().stemWords([m.group() for m in found])  # type: ignore[attr-defined]
    spans: list[list[int]] = []
    for m, t in zip(found, stems, strict=True):
        if t in exact or t.startswith(prefixes):
            start, end = m.span()
            if spans and spans[-1][1] == start:
                spans[-1][1] = end
            else:
                spans.append([start, end])
    return _between_marks(text, spans)


def _marked(
    text: str,
    words: list[tuple[int, int, list[str]]],
    exact: AbstractSet[str],
    prefixes: tuple[str, ...],
) -> str:
    spans: list[list[int]] = []
    for start, end, toks in words:
        if any(t in exact or t.startswith(prefixes) for t in toks):
            if spans and spans[-1][1] == start:
                spans[-1][1] = end
            else:
                spans.append([start, end])
    return _between_marks(text, spans)


def _between_marks(text: str, spans: list[list[int]]) -> str:
    out: list[str] = []
    at = 0
    for start, end in spans:
        out += [text[at:start], MARK_OPEN, text[start:end], MARK_CLOSE]
        at = end
    out.append(text[at:])
    return "".join(out)


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
    return parts_text(message.parts)


def parts_text(parts: list[dict]) -> str:
    """`index_text` of a message with these `parts` (a stored message's JSON holds
    them: a search result needs its text, not the whole `Message`)."""
    if len(parts) == 1 and parts[0].get("type") == "text":  # most messages: no join
        text = str(parts[0].get("text") or "")
    else:
        text = "\n".join(
            str(p.get("text") or "") for p in parts if p.get("type") in ("text", "reasoning")
        )
    return text.replace(MARK_OPEN, " ").replace(MARK_CLOSE, " ")


SNIPPET_TOKENS = 12


def marked_snippet(text: str, exact: AbstractSet[str], prefixes: tuple[str, ...]) -> str:
    """`snippet(mark(text, exact, prefixes))`, marking only the words it shows: a
    search result's snippet costs its window, not the whole message."""
    if not text.isascii():
        return snippet(mark(text, exact, prefixes))
    # The pattern is built once per query (`exact` frozen: the cache's key as it is).
    heads = _heads_re(exact if isinstance(exact, frozenset) else frozenset(exact), prefixes)
    stem = _stemmer().stemWord  # type: ignore[attr-defined]
    lowered = text.lower()
    first = None
    for m in heads.finditer(lowered):
        at = m.start()
        if at and lowered[at - 1].isalnum():  # inside a word: not one that begins so
            continue
        found = stem(m.group())
        if found in exact or found.startswith(prefixes):
            first = at
            break
    words = text.split()
    if first is None:
        return snippet(" ".join(words))
    # The whitespace-separated word that holds the match (it may begin before it: "(word").
    before = text[:first].split()
    index = len(before) - (1 if before and first and not text[first - 1].isspace() else 0)
    start = max(0, min(index - SNIPPET_TOKENS // 4, len(words) - SNIPPET_TOKENS))
    window = _mark_ascii(" ".join(words[start : start + SNIPPET_TOKENS]), exact, prefixes, heads)
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + SNIPPET_TOKENS < len(words) else ""
    return f"{prefix}{window}{suffix}"


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
