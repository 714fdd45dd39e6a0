"""Turning what people and models type into safe full-text queries, for either engine.

Invariant: `parse_query` reads any string into a `Query` (or None when it has
nothing searchable), and each rendering of a `Query` — `fts5_expression` for
SQLite's FTS5, `tsquery_expression` for PostgreSQL's `to_tsquery` — is one the
engine always accepts. Plain words are ANDed; CJK words and emoji are matched
as `text_prep` indexes them; a few power features survive: "quoted phrases",
a trailing `*` for a prefix, and `OR` between two terms. Everything else is
treated as plain words. Both engines stem English words (porter / `english`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from .text_prep import has_cjk, query_terms, spell_emoji

__all__ = [
    "Query",
    "Term",
    "fts5_expression",
    "match_expression",
    "parse_query",
    "scope_token",
    "scoped_expression",
    "tsquery_expression",
]

_TOKEN = re.compile(r'"([^"]*)"|(\w+)(\*?)', re.UNICODE)
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Term:
    """Index tokens to find next to each other (one token: a word), the last maybe a prefix."""

    tokens: tuple[str, ...]
    prefix: bool = False


Query = list[list[Term]]
"""Groups that must all match; any term of a group may (AND of ORs)."""


def parse_query(query: object) -> Query | None:
    """The search-box string as terms, or None when it has no words (never raises)."""
    if not isinstance(query, str):
        return None
    # An unbalanced quote means the user did not mean a phrase.
    if query.count('"') % 2:
        query = query.replace('"', " ")
    query = spell_emoji(query)
    groups: Query = []
    pending_or = False
    for match in _TOKEN.finditer(query):
        phrase, word, star = match.groups()
        if phrase is not None:
            words = tuple(t for w in _WORD.findall(phrase) for t in query_terms(w))
            if not words:
                continue
            term = Term(words)
        elif word == "OR" and groups:
            pending_or = True
            continue
        elif has_cjk(word):
            # CJK characters are indexed one by one (see text_prep): the word
            # is the phrase of its characters, found inside longer runs too.
            term = Term(tuple(query_terms(word)), bool(star))
        else:
            term = Term((word,), bool(star))
        if pending_or:
            groups[-1].append(term)
            pending_or = False
        else:
            groups.append([term])
    return groups or None


def _fts5_quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def fts5_expression(query: Query) -> str:
    """`query` as an FTS5 MATCH expression."""

    def term(t: Term) -> str:
        return _fts5_quote(" ".join(t.tokens)) + ("*" if t.prefix else "")

    parts = [" OR ".join(term(t) for t in group) for group in query]
    return " AND ".join(f"({p})" if " OR " in p else p for p in parts)


def match_expression(query: str) -> str | None:
    """A valid FTS5 expression for a search-box string, or None when it has no words."""
    parsed = parse_query(query)
    return fts5_expression(parsed) if parsed is not None else None


def scoped_expression(
    column: str, expression: str, scope_column: str | None = None, scope: str | None = None
) -> str:
    """Restrict an FTS5 `expression` to `column`, and to one scope token when given."""
    body = f"{column} : ({expression})"
    if scope_column and scope:
        return f'{scope_column} : "{scope}" AND {body}'
    return body


def scope_token(value: str) -> str:
    """A single FTS token standing for a session or namespace id.

    Hex digits and letters only, so the unicode61 tokenizer keeps it whole and
    ids that tokenize alike ("chat-1", "chat_1") still get distinct tokens.
    """
    return "s" + hashlib.blake2b(value.encode(), digest_size=10).hexdigest()


def _ts_quote(token: str) -> str:
    # A quoted lexeme: `'` doubled and `\` escaped, so no operator inside a word survives.
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery_expression(query: Query) -> str:
    """`query` as `to_tsquery` text: `&` between groups, `|` inside, `<->` in phrases,
    `:*` for a prefix. Each word is a quoted lexeme, stemmed by the engine's English configuration."""

    def term(t: Term) -> str:
        words = [_ts_quote(w) for w in t.tokens]
        if t.prefix:
            words[-1] += ":*"
        return " <-> ".join(words) if len(words) == 1 else "(" + " <-> ".join(words) + ")"

    parts = [" | ".join(term(t) for t in group) for group in query]
    return " & ".join(
        f"({p})" if len(group) > 1 else p for p, group in zip(parts, query, strict=True)
    )
