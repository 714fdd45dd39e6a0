"""`chatui`'s exit codes: part of the interface, documented in `chatui --help` and the README.

A module of its own, importing nothing: `chatui ask`'s thin client (which must start
in milliseconds) maps a failure to its code without loading the store.
"""

from __future__ import annotations

__all__ = ["ASK_CODES", "EXIT_CODES", "code_for_failure"]

OK, NOT_FOUND, USAGE, BAD_INPUT, DATABASE, OUTPUT, PARTIAL, UNREACHABLE = 0, 1, 2, 3, 4, 5, 6, 7
# `chatui ask`: one code per kind of model failure, so a script knows what to do next
# (fix the key, try again now, try later, change the request, look at the provider).
MODEL_AUTH, MODEL_UNREACHABLE, MODEL_RATE_LIMIT, MODEL_REFUSED, MODEL_FAILED = 8, 9, 10, 11, 12
INTERRUPTED = 130

EXIT_CODES = {
    OK: "success (also an import whose chats were all there already)",
    NOT_FOUND: "not found: no chat, message or agent with that id or name, or a search "
    "without results",
    USAGE: "usage error: a bad option or argument, or an ambiguous id prefix",
    BAD_INPUT: "bad input file: unreadable, another format, a damaged zip, no readable chat "
    "(nothing imported); for ask, piped input that is not UTF-8 text or too large, or an -a "
    "FILE that cannot be attached",
    DATABASE: "database error: not a chatui database, written by a newer chatui, locked",
    OUTPUT: "the output file or folder cannot be written",
    PARTIAL: "partly imported: the readable chats were imported, the others are listed "
    "with their reasons (--strict: all or nothing)",
    UNREACHABLE: "the database server does not answer (down, unreachable, login refused): "
    "nothing was done; try again",
    MODEL_AUTH: "ask: no API key for the model, or the provider refused the key",
    MODEL_UNREACHABLE: "ask: the model's server could not be reached or did not answer in "
    "time: try again",
    MODEL_RATE_LIMIT: "ask: the provider's rate limit, still hit after the retries: try later",
    MODEL_REFUSED: "ask: the provider refused the request (unknown model, too long for its "
    "window, a bad request)",
    MODEL_FAILED: "ask: the reply failed (a server error, a broken or empty stream); what "
    "arrived is stored, marked",
    INTERRUPTED: "interrupted (ctrl+c); ask keeps what arrived, marked cancelled",
}

ASK_CODES: dict[str, int] = {
    "auth": MODEL_AUTH,
    "permission": MODEL_AUTH,
    "connection": MODEL_UNREACHABLE,
    "timeout": MODEL_UNREACHABLE,
    "rate_limit": MODEL_RATE_LIMIT,
    "not_found": MODEL_REFUSED,
    "context_length": MODEL_REFUSED,
    "bad_request": MODEL_REFUSED,
    "storage": DATABASE,
    "bad_input": USAGE,
}
"""A failed turn's kind (`TurnFailed.kind`, `llm.ErrorKind`) → its exit code; any other
kind (server, bad_response, empty, unknown) is `MODEL_FAILED`."""


def code_for_failure(kind: str) -> int:
    """The exit code of a turn that failed with `kind`."""
    return ASK_CODES.get(kind, MODEL_FAILED)
