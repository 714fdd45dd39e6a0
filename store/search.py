"""Turning what people and models type into safe FTS5 queries.

Invariant: `match_expression` returns either None (nothing searchable) or an
expression SQLite always accepts, whatever the input. Plain words are ANDed;
CJK words and emoji are matched as `text_prep` indexes them; a few power features survive: "quoted phrases", a trailing `*` for a prefix,
and `OR` between two terms. Everything else is treated as plain words.
"""

from __future__ import annotations

import re

from .text_prep import has_cjk, query_terms, spell_emoji

__all__ = ["match_expression", "scoped_expression"]

_TOKEN = re.compile(r'"([^"]*)"|(\w+)(\*?)', re.UNICODE)
_WORD = re.compile(r"\w+", re.UNICODE)


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def match_expression(query: str) -> str | None:
    """A valid FTS5 expression for a search-box string, or None when it has no words."""
    if not isinstance(query, str):
        return None
    # An unbalanced quote means the user did not mean a phrase.
    if query.count('"') % 2:
        query = query.replace('"', " ")
    query = spell_emoji(query)
    terms: list[str] = []
    pending_or = False
    for match in _TOKEN.finditer(query):
        phrase, word, star = match.groups()
        if phrase is not None:
            words = [t for w in _WORD.findall(phrase) for t in query_terms(w)]
            if not words:
                continue
            term = _quote(" ".join(words))
        elif word == "OR" and terms:
            pending_or = True
            continue
        elif word in ("AND", "NOT", "NEAR"):
            term = _quote(word)
        elif has_cjk(word):
            # CJK characters are indexed one by one (see text_prep): the word
            # is the phrase of its characters, found inside longer runs too.
            term = _quote(" ".join(query_terms(word))) + ("*" if star else "")
        else:
            term = _quote(word) + ("*" if star else "")
        if pending_or:
            terms[-1] = f"{terms[-1]} OR {term}"
            pending_or = False
        else:
            terms.append(term)
    if not terms:
        return None
    return " AND ".join(f"({t})" if " OR " in t else t for t in terms)


def scoped_expression(
    column: str, expression: str, scope_column: str | None = None, scope: str | None = None
) -> str:
    """Restrict `expression` to `column`, and to one scope token when given."""
    body = f"{column} : ({expression})"
    if scope_column and scope:
        return f'{scope_column} : "{scope}" AND {body}'
    return body
