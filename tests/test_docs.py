"""The README tells the truth about keys: every binding the app has is documented."""

from __future__ import annotations

import re
from pathlib import Path

from textual.binding import Binding

from chatui.tui.app import ChatApp
from chatui.tui.keys import KEYS
from chatui.tui.screens.main import MainScreen
from widgets import ChatInput, ContextSidebar, MessageTree, MessageView

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
PROSE = re.sub(r"```.*?```", "", README, flags=re.DOTALL)  # code blocks break `pairs`
DOCUMENTED = set(re.findall(r"`([^`\n]+)`", PROSE))


VIM_ALIASES = {"j", "k"}  # quiet aliases of down/up on a focused message
KEY_NAMES = {
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "less_than_sign": "<",
    "greater_than_sign": ">",
}
"""Textual's names for keys the docs write as the character."""


def bindings() -> list[str]:
    keys: list[str] = []
    for owner in (ChatApp, MainScreen, MessageView, MessageTree, ChatInput, ContextSidebar):
        for binding in owner.BINDINGS:
            if isinstance(binding, Binding):
                keys.extend(KEY_NAMES.get(k.strip(), k.strip()) for k in binding.key.split(","))
    return keys


def test_every_binding_is_in_the_readme():
    missing = sorted({k for k in bindings() if k not in DOCUMENTED} - VIM_ALIASES)
    assert missing == []


def test_the_help_screen_lists_every_binding():
    listed = " ".join(k.keys for k in KEYS)
    missing = sorted({k for k in bindings() if k not in listed} - VIM_ALIASES)
    assert missing == []


def test_readme_quick_start_is_two_commands():
    start = README.split("## Quick start", 1)[1].split("##", 1)[0]
    block = start.split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make run", "make test"]
