"""What a first hour finds: each small fix, held by a test."""

from __future__ import annotations

import pytest

from chatui.tui.screens.chat_list import ChatListScreen
from store import SessionManager
from widgets import FittingFooter

from .app_helpers import make_app, populate, wait_until


@pytest.fixture
def chats(store):
    return populate(store)


async def test_the_palette_lists_keys_once(store, chats):
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        titles = [title for title, _, _ in app.main.commands.entries()]
        titles += [c.title for c in app.get_system_commands(app.screen)]
        assert titles.count("Keys") == 1


async def test_one_chat_is_not_one_chats(store, chats):
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, ChatListScreen)
        await pilot.press(*"/soup")
        await wait_until(
            pilot, lambda: str(app.screen.query_one("#chats-status").render()).startswith("1 ")
        )
        status = str(app.screen.query_one("#chats-status").render())
        assert status.startswith("1 chat ·"), status


def _footer_keys(app):
    """(the keys shown, the command palette's key)."""
    shown = app.main.query_one(FittingFooter).shown_keys()
    keys = [k for k in shown if not k.has_class("-command-palette")]
    return keys, next(k for k in shown if k.has_class("-command-palette"))


@pytest.mark.parametrize("focus", ["input", "tree", "message"])
async def test_the_footer_fits_80_columns_whatever_has_focus(store, chats, focus):
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        if focus == "tree":
            await pilot.press("ctrl+t")
        elif focus == "message":
            await pilot.press("up")
        await pilot.pause()
        await pilot.pause()
        keys, palette = _footer_keys(app)
        for key in keys:
            assert key.region.right <= palette.region.x, key.description
        described = [k.description for k in keys]
        if focus == "input":  # the app's keys all fit beside the input
            assert described[:7] == [
                "New chat",
                "Chats",
                "Search",
                "Model",
                "Sidebar",
                "Tree",
                "Quit",
            ]
        else:  # the pane's own keys first; f1 stands for the app keys that did not fit
            own = {
                "tree": ["Show branch", "Fold", "Full screen"],
                "message": ["Regenerate", "Edit"],
            }
            assert described[: len(own[focus])] == own[focus]
            assert described[-1] == "Keys" and keys[-1].key == "f1"


async def test_f1_from_the_footer_lists_every_key(store, chats):
    from chatui.tui.screens.help import HelpScreen

    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+t")
        await pilot.pause()
        await pilot.pause()
        keys, _ = _footer_keys(app)
        await pilot.click(keys[-1])
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


async def test_the_footer_refits_when_the_terminal_grows(store, chats):
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+t")
        await pilot.pause()
        await pilot.pause()
        assert "Search" not in [k.description for k in _footer_keys(app)[0]]
        await pilot.resize_terminal(160, 40)
        await wait_until(pilot, lambda: "Search" in [k.description for k in _footer_keys(app)[0]])
        assert "Keys" not in [k.description for k in _footer_keys(app)[0]]


async def test_the_footer_is_rebuilt_only_when_its_keys_change(store, chats):
    """Focus, the screen stack and the terminal's focus each ask the footer to recompose
    at start-up; asking again with the same keys keeps the keys drawn (no new frame)."""
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.pause()
        before = _footer_keys(app)[0]
        app.main.refresh_bindings()  # nothing changed
        await pilot.pause()
        await pilot.pause()
        assert _footer_keys(app)[0] == before  # the same widgets, not rebuilt
        await pilot.press("ctrl+t")  # the tree's keys come first now
        await wait_until(pilot, lambda: _footer_keys(app)[0][0].description == "Show branch")
        assert not set(_footer_keys(app)[0]) & set(before)


async def test_default_assistant_uses_the_configs_model_not_the_open_chats(store, chats):
    from chatui.core.config import AgentConfig, Config
    from chatui.tui.screens.agent_picker import AgentPicker

    config = Config(model="openai/gpt-4o-mini", agents=(AgentConfig(name="planner"),))
    app = make_app(store, config)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.main.pane.model == "demo"  # the open chat (Lisbon trip) runs demo
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert isinstance(app.screen, AgentPicker)
        await pilot.press("enter")  # "Default assistant", first in the list
        await pilot.pause()
        assert app.main.chat is None and app.main.pane.model == "openai/gpt-4o-mini"


def test_a_peer_message_names_the_sending_agent_not_you():
    from store import Message
    from widgets import MessageView

    sent = Message(
        id="m1", role="user", parts=[{"type": "text", "text": "Hours?"}], from_agent_id="a" * 32
    )
    header = MessageView(sent, sender="planner", hop="from planner").header().plain
    assert header.startswith("planner") and "You" not in header and "a" * 32 not in header
    unknown = MessageView(sent).header().plain
    assert unknown.startswith("Another agent") and "a" * 32 not in unknown
    mine = Message(id="m2", role="user", parts=[{"type": "text", "text": "Hi"}])
    assert MessageView(mine).header().plain.startswith("You")


def test_the_title_names_the_agent_waited_for_not_its_session_id(store):
    from chatui.core.agents import AgentRuntime
    from chatui.core.config import Config
    from store import SessionManager

    manager = SessionManager(store)
    info = manager.create("Trip")
    peer = "0123456789abcdef0123456789abcdef"
    manager.set_status(info.id, "awaiting_peer", f"waiting for agent 'researcher' (session {peer})")
    line = AgentRuntime(store, Config()).status_line(info.id)
    assert line == "waiting for agent 'researcher'"


def test_show_tree_draws_clean_connectors(store, chats):
    from chatui.transfer.tree import outline_lines, path_view

    info = SessionManager(store).get("chat-lisbon")
    lines = [
        f"{prefix}{'*' if shown else ' '} {m.id}"
        for prefix, shown, m in outline_lines(path_view(store, info))
    ]
    assert lines == [
        "* q1",
        "├─   a1",
        "└─ * a2",
        "   ├─   q2",
        "   │    a3",
        "   └─ * q2b",
        "      * a4",
    ]


async def test_the_chat_lists_hints_are_whole_at_80_columns(store, chats):
    """The status line under the chat list wraps inside the dialog instead of running
    past its border ('… t deleted · / fil' at 80×24)."""
    from textual.geometry import Region

    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ChatListScreen))
        await pilot.pause()
        status = app.screen.query_one("#chats-status")
        parent = status.parent
        assert status.region.right <= parent.content_region.right
        lines = status.render_lines(Region(0, 0, status.size.width, status.size.height))
        drawn = " ".join(line.text.strip() for line in lines)
        assert drawn.startswith("3 chats ·") and drawn.endswith("/ filter"), drawn


async def test_the_footer_is_one_widget_and_a_click_on_a_key_runs_it(store, chats):
    """The footer draws its row itself (a widget per key cost ~40 M instructions of the
    first frame): no widget per key, and a click's column picks the key under it."""
    from textual.widgets._footer import FooterKey

    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        footer = app.main.query_one(FittingFooter)
        assert not footer.children and not app.main.query(FooterKey)
        row = "".join(s.text for s in footer.render_line(0))
        x = row.index("^s Chats")
        await pilot.click(footer, offset=(x + 4, 0))  # on the word "Chats"
        await wait_until(pilot, lambda: isinstance(app.screen, ChatListScreen))
