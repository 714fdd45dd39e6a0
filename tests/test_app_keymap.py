"""Your own keys (issue 24): `[keys]` rebinds any action by id, a `vim` preset moves in
the chat, the tree and the lists, F1 shows the keys in force, and a bad entry is a
warning with its default kept — all pressed as a person would."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from chatui.core.config import Config, parse_config
from chatui.tui.keymap import SPENDS_TOKENS, catalogue, resolve_keys
from chatui.tui.screens.chat_list import ChatListScreen
from chatui.tui.screens.dialogs import TextPrompt
from chatui.tui.screens.help import HelpScreen
from widgets import MessageTree, MessageView

from .app_helpers import make_app, notices, populate, wait_until

SIZE = (140, 40)
README = Path(__file__).resolve().parent.parent / "README.md"


@pytest.fixture
def chats(store):
    return populate(store)


def keys_config(text: str) -> Config:
    return parse_config(tomllib.loads(text))


async def test_a_remapped_key_runs_its_action_and_the_old_key_no_longer_does(store, chats):
    config = keys_config('[keys]\napp.new_chat = "f5"\n"message.edit" = "x"\n')
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        main = app.main
        await wait_until(pilot, lambda: main.session_id == "chat-lisbon")
        await pilot.press("ctrl+n")  # not new chat any more
        await pilot.pause()
        assert main.session_id == "chat-lisbon"
        # x edits a focused message; e there is typing now (it goes to the input).
        await pilot.press("up")
        assert isinstance(app.focused, MessageView)
        await pilot.press("e")
        await wait_until(pilot, lambda: main.chat_input.text == "e")
        assert not isinstance(app.screen, TextPrompt)
        await pilot.press("backspace", "up")
        assert isinstance(app.focused, MessageView)
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(app.screen, TextPrompt))
        await pilot.press("escape")
        await pilot.press("f5")
        await wait_until(pilot, lambda: main.session_id is None)
        # F1 says so: the new chat row and the action's row show f5.
        await pilot.press("f1")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        rows = app.screen.rows
        assert "your [keys] in force" in str(app.screen.query_one("#help-title").render())
        assert ("f5", "app.new_chat · New chat", "anywhere", True) in rows
        assert any(r[0] == "f5" and r[1] == "new chat" for r in rows)
        assert any(r[0] == "x" and r[1].startswith("edit your message") for r in rows)


async def test_the_vim_preset_moves_in_the_chat_the_tree_and_the_lists(store, chats):
    app = make_app(store, keys_config('[keys]\npreset = "vim"\n'))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        main = app.main
        await wait_until(pilot, lambda: main.session_id == "chat-lisbon")
        # The chat: h / l between a message's sibling branches.
        view = main.chat_view.view_for("q2b")
        view.focus()
        await pilot.press("h")
        await wait_until(pilot, lambda: main.snapshot.active_leaf == "a3")
        await wait_until(pilot, lambda: main.chat_view.view_for("q2") is not None)
        main.chat_view.view_for("q2").focus()
        await pilot.press("l")
        await wait_until(pilot, lambda: main.snapshot.active_leaf == "a4")
        assert main.chat_input.text == ""  # none of it was typing
        # The tree: G to the last row, ctrl+u a page up, j / k.
        await pilot.press("ctrl+t")
        tree = main.query_one(MessageTree)
        await wait_until(pilot, lambda: app.focused is tree)
        await pilot.press("G")
        await wait_until(pilot, lambda: tree.cursor == len(tree.rows) - 1)
        await pilot.press("k")
        await wait_until(pilot, lambda: tree.cursor == len(tree.rows) - 2)
        await pilot.press("ctrl+u")
        await wait_until(pilot, lambda: tree.cursor == 0)
        await pilot.press("escape")
        # A list: j / k move the chat list's cursor.
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ChatListScreen))
        table = app.screen.query_one("DataTable")
        start = table.cursor_row
        await pilot.press("j")
        await wait_until(pilot, lambda: table.cursor_row == start + 1)
        await pilot.press("k")
        await wait_until(pilot, lambda: table.cursor_row == start)


async def test_bad_key_entries_are_warnings_and_the_defaults_stay(store, chats):
    config = keys_config(
        "[keys]\n"
        'preset = "emacs"\n'
        'app.nwe_chat = "ctrl+o"\n'
        'message.regenerate = "r"\n'
        'tree.down = "ctrl+banana"\n'
        "app.search = 5\n"
        'app.chats = ""\n'
    )
    app = make_app(store, config)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        main = app.main
        await wait_until(pilot, lambda: "did you mean app.new_chat" in notices(app))
        said = notices(app)
        assert "unknown preset 'emacs'" in said
        assert "keys.message.regenerate: it calls the model, so it takes ctrl" in said
        assert "'ctrl+banana' is no key name" in said
        assert "keys.app.search: 5 is not a string of keys" in said
        assert "keys.app.chats: '' names no key" in said
        assert app.keys_in_force == {}
        # The defaults work: ctrl+s lists chats, ctrl+f searches, r on a message types.
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ChatListScreen))
        await pilot.press("escape")
        await pilot.press("up")
        assert isinstance(app.focused, MessageView)
        await pilot.press("r")
        await wait_until(pilot, lambda: main.chat_input.text == "r")
        assert not main.generating


def test_every_action_is_in_the_readme_with_its_default_keys():
    text = README.read_text()
    section = text[text.index("#### Keymap reference") :]
    for action in catalogue():
        row = re.search(rf"^\| `{re.escape(action.id)}` \| ([^|]*) \|", section, re.M)
        assert row is not None, f"{action.id} is missing from the README's keymap reference"
        shown = row.group(1).replace("`", "").replace(" ", "")
        assert shown == action.keys.replace(" ", ""), (action.id, shown, action.keys)


def test_every_action_that_spends_tokens_uses_ctrl_by_default():
    for action in catalogue():
        if action.id in SPENDS_TOKENS:
            assert all(k.startswith("ctrl+") for k in action.keys.split(",")), action


def test_the_keymap_is_resolved_as_written():
    keymap, warnings = resolve_keys({"app.new_chat": "ctrl+k, f5", "message.regenerate": "alt+r"})
    assert keymap == {"app.new_chat": "ctrl+k,f5", "message.regenerate": "alt+r"}
    assert warnings == []
