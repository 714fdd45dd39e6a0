"""Search queries: FTS5's syntax, read once in Python, rendered for either engine.

Invariant: `parse_query` reads any string into a `Query` (None when it holds
no word to search for) and never raises: a string that is not a query (an
unclosed quote or parenthesis, an operator without its words) is searched as
its plain words (SPEC: "treated as plain words, never raises"), and
`query_problem` says why in one sentence, the same on both engines, for the
search box and the CLI to show. Each rendering of a `Query` — `fts5_expression` for
SQLite's FTS5, `tsquery_expression` for PostgreSQL's `tsquery` — is one the
engine always accepts and that finds the same messages on both, because the
words are the index's own terms (`text_prep.query_tokens`: folded and
stemmed as the index was) and the operators mean the same on both.

The syntax is FTS5's: words (ANDed), "quoted phrases", a trailing `*` for a
prefix (`deploy*`, `"big ca"*`), `AND`, `OR`, `NOT` (binary: `a NOT b`) in
capitals, and parentheses. NOT binds tighter than AND, AND than OR, as in
FTS5. A word the tokenizer splits (`e-mail`, a CJK word) is the phrase of
its parts. Punctuation that is not syntax is dropped with the rest of the
non-word characters, as the index drops it. A query of more than
`MAX_TERMS` terms searches its first `MAX_TERMS` words, and says so: 5,000
pasted words took seconds and find nothing a person means (issue 25).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from .errors import SearchSyntaxError
from .text_prep import query_tokens

__all__ = [
    "MAX_DEPTH",
    "MAX_TERMS",
    "And",
    "Not",
    "Or",
    "Query",
    "Term",
    "as_you_type",
    "fts5_expression",
    "match_expression",
    "parse_query",
    "positive_terms",
    "query_problem",
    "scope_token",
    "scoped_expression",
    "tsquery_expression",
]

MAX_TERMS = 64
MAX_DEPTH = 16


@dataclass(frozen=True)
class Term:
    """Index terms found next to each other (one term: a word), the last maybe a prefix."""

    tokens: tuple[str, ...]
    prefix: bool = False


@dataclass(frozen=True)
class And:
    parts: tuple[Query, ...]


@dataclass(frozen=True)
class Or:
    parts: tuple[Query, ...]


@dataclass(frozen=True)
class Not:
    """`keep NOT drop`: what matches `keep` and not `drop`."""

    keep: Query
    drop: Query


Query = Term | And | Or | Not


class _TooManyTerms(SearchSyntaxError):
    pass


_LEX = re.compile(r'"([^"]*)("?)(\*?)|([()])|([^\s"()]+)')
_OPERATORS = ("AND", "OR", "NOT")


def _lex(query: str) -> list[object]:
    """Terms, operator names and parentheses, in order."""
    items: list[object] = []
    count = 0
    for match in _LEX.finditer(query):
        phrase, closed, star, paren, chunk = match.groups()
        if paren:
            items.append(paren)
            continue
        if phrase is not None:
            if not closed:
                raise SearchSyntaxError('A quoted phrase is not closed: add the closing ".')
            words, prefix = phrase, bool(star)
        elif chunk in _OPERATORS:
            items.append(chunk)
            continue
        else:
            words, prefix = chunk.rstrip("*"), chunk.endswith("*")
        tokens = query_tokens(words, prefix=prefix)
        if tokens:
            count += len(tokens)
            if count > MAX_TERMS:
                raise _TooManyTerms(
                    f"A search takes at most {MAX_TERMS} words: "
                    f"searched the first {MAX_TERMS} as plain words."
                )
            items.append(Term(tuple(tokens), prefix))
    return items


class _Parser:
    def __init__(self, items: list[object]) -> None:
        self.items = items
        self.at = 0
        self.depth = 0

    def peek(self) -> object:
        return self.items[self.at] if self.at < len(self.items) else None

    def take(self) -> object:
        item = self.peek()
        self.at += 1
        return item

    def either(self) -> Query:  # a OR b OR …
        parts = [self.both()]
        while self.peek() == "OR":
            self.take()
            parts.append(self.both("OR"))
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def both(self, after: str = "") -> Query:  # a AND b, a b
        parts = [self.unless(after)]
        while self.peek() not in (None, ")", "OR"):
            operator = "AND" if self.peek() == "AND" else ""
            if operator:
                self.take()
            parts.append(self.unless(operator))
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def unless(self, after: str = "") -> Query:  # a NOT b
        query = self.primary(after)
        while self.peek() == "NOT":
            self.take()
            query = Not(query, self.primary("NOT"))
        return query

    def primary(self, after: str) -> Query:
        item = self.take()
        if isinstance(item, Term):
            return item
        if item == "(":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise SearchSyntaxError(f"Parentheses nest more than {MAX_DEPTH} deep.")
            if self.peek() is None:
                raise SearchSyntaxError('A "(" is not closed: add the ")".')
            if self.peek() == ")":
                raise SearchSyntaxError('"( )" holds no word to search for.')
            inner = self.either()
            if self.take() != ")":
                raise SearchSyntaxError('A "(" is not closed: add the ")".')
            self.depth -= 1
            return inner
        if item == ")":
            raise SearchSyntaxError('A ")" has no "(" before it.')
        operator = after or (item if isinstance(item, str) else "")
        if operator in _OPERATORS:
            raise SearchSyntaxError(f"{operator} needs a word on each side (a {operator} b).")
        raise SearchSyntaxError("The search ends where a word should follow.")


def _parse_strict(query: str) -> Query | None:
    items = _lex(query)
    if not any(isinstance(item, Term) for item in items):
        if any(item in ("(", ")") for item in items) or any(i in _OPERATORS for i in items):
            _Parser(items).either()  # says what is wrong
        return None
    parser = _Parser(items)
    result = parser.either()
    if parser.peek() is not None:  # only a ")" stops the top level early
        raise SearchSyntaxError('A ")" has no "(" before it.')
    return result


def _plain_words(query: str) -> Query | None:
    """Each word of `query` (operators and all; a word the tokenizer splits is
    the phrase of its parts), ANDed: as many as make `MAX_TERMS` terms."""
    terms: dict[Term, None] = {}
    count = 0
    for chunk in re.findall(r'[^\s"()]+', query):
        words = query_tokens(chunk.rstrip("*"))
        count += len(words)
        if count > MAX_TERMS:
            break
        if words:
            terms[Term(tuple(words))] = None
    if not terms:
        return None
    parts = tuple(terms)
    return parts[0] if len(parts) == 1 else And(parts)


def parse_query(query: object) -> Query | None:
    """The search-box string as a `Query`; None when it holds no word. Never
    raises: what is not a query is searched as its plain words (`query_problem`)."""
    if not isinstance(query, str):
        return None
    try:
        return _parse_strict(query)
    except SearchSyntaxError:
        return _plain_words(query)


_LAST_WORD = re.compile(r"(?:^|[\s(])(\w{2,})$")


def as_you_type(query: str) -> str:
    """`query` as a search box runs it while its last word is still being typed: that
    word searched whole or as a prefix (`questio` finds `question`). Whole as well:
    the index holds stems, and a prefix is matched against them, so a whole word as
    a prefix alone can miss (`zymurgy*` against the stem `zymurgi`). Left as it is
    after a space, inside an open phrase, on an operator, on a prefix already, or on
    a single letter (a prefix of one letter matches nearly everything)."""
    if query.count('"') % 2:
        return query
    last = _LAST_WORD.search(query)
    if last is None or last.group(1) in _OPERATORS:
        return query
    word = last.group(1)
    return f"{query[: last.start(1)]}({word} OR {word}*)"


def query_problem(query: object) -> str | None:
    """Why `query` was searched as plain words (one sentence), or None when it is a query."""
    if not isinstance(query, str):
        return None
    try:
        _parse_strict(query)
    except _TooManyTerms as exc:
        return str(exc)
    except SearchSyntaxError as exc:
        return f"{exc} Searched as plain words."
    return None


def positive_terms(query: Query) -> tuple[set[str], tuple[str, ...]]:
    """The terms a match holds (not the NOT side): exact ones, and prefixes."""
    exact: set[str] = set()
    prefixes: list[str] = []

    def visit(q: Query) -> None:
        if isinstance(q, Term):
            exact.update(q.tokens[:-1] if q.prefix else q.tokens)
            if q.prefix:
                prefixes.append(q.tokens[-1])
        elif isinstance(q, Not):
            visit(q.keep)
        else:
            for part in q.parts:
                visit(part)

    visit(query)
    return exact, tuple(prefixes)


def _fts5_quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def fts5_expression(query: Query) -> str:
    """`query` as an FTS5 MATCH expression (every operation in parentheses)."""
    if isinstance(query, Term):
        return _fts5_quote(" ".join(query.tokens)) + ("*" if query.prefix else "")
    if isinstance(query, Not):
        return f"({fts5_expression(query.keep)} NOT {fts5_expression(query.drop)})"
    joiner = " AND " if isinstance(query, And) else " OR "
    return "(" + joiner.join(fts5_expression(p) for p in query.parts) + ")"


def match_expression(query: str) -> str | None:
    """The FTS5 expression for a search-box string, or None when it has no words."""
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

    Hex digits and letters only, so the tokenizer keeps it whole and ids that
    tokenize alike ("chat-1", "chat_1") still get distinct tokens.
    """
    return "s" + hashlib.blake2b(value.encode(), digest_size=10).hexdigest()


def _ts_quote(token: str) -> str:
    # A quoted lexeme: `'` doubled and `\` escaped, so no operator inside a word survives.
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery_expression(query: Query) -> str:
    """`query` as `tsquery` text (cast with `::tsquery`, so no lexeme is changed
    again): `&`, `|`, `& !` for NOT, `<->` in phrases, `:*` for a prefix."""
    if isinstance(query, Term):
        words = [_ts_quote(w) for w in query.tokens]
        if query.prefix:
            words[-1] += ":*"
        return words[0] if len(words) == 1 else "(" + " <-> ".join(words) + ")"
    if isinstance(query, Not):
        return f"({tsquery_expression(query.keep)} & !{tsquery_expression(query.drop)})"
    joiner = " & " if isinstance(query, And) else " | "
    return "(" + joiner.join(tsquery_expression(p) for p in query.parts) + ")"
