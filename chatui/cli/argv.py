"""Where `chatui`'s command stands in its arguments, read before any parser is built:
the ask client (`ask_client.wants_daemon`) and the prompt shortcut
(`commands.prompt_shortcut`) both look for the first word that is not an option.
Imports nothing: the ask client's start-up is measured (`bench/ask_bench.py`)."""

from __future__ import annotations

__all__ = ["VALUED", "app_options", "find_command", "reads_as_prompt"]

VALUED = ("--db", "--model", "--theme")
"""The top-level options that take a value (skipped when looking for the command)."""


def find_command(args: list[str]) -> tuple[list[str], int | None]:
    """(the options before the command, their values left out; the command's index in
    `args`, None when there is none or `--` comes first)."""
    options: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            return options, None
        if word.startswith("-"):
            options.append(word)
            i += 2 if word in VALUED else 1
            continue
        return options, i
    return options, None


def reads_as_prompt(word: str) -> bool:
    """A word that is a prompt, not a command: several words (one quoted argument).
    Unquoted words stay a usage error (`chatui shwo 3f2a`), so a mistyped command never
    costs a model call."""
    return len(word.split()) > 1


def app_options(args: list[str]) -> dict[str, str | None] | None:
    """The app's own options ("db", "model", "theme") when `args` hold nothing else,
    each given once as `--name VALUE` or `--name=VALUE`; None otherwise (anything else
    is the full parser's to read: a command, `--help`, an abbreviation, a value that
    starts with "-", a repeated option). Building that parser (every command's
    options and help) took ~12 M instructions of the app's start-up."""
    options: dict[str, str | None] = {"db": None, "model": None, "theme": None}
    given: set[str] = set()
    i = 0
    while i < len(args):
        name, equals, value = args[i].partition("=")
        if name not in VALUED or name in given:
            return None
        if not equals:
            if i + 1 == len(args) or args[i + 1].startswith("-"):
                return None
            i += 1
            value = args[i]
        given.add(name)
        options[name[2:]] = value
        i += 1
    return options
