"""What a first hour finds: each small fix, held by a test."""

from __future__ import annotations

import pytest
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from chatui.tui.screens.chat_list import ChatListScreen
from store import SessionManager

from .app_helpers import make_app, populate
from .test_app_tree import until


@pytest.fixture
def chats(store):
    return populate(store)


async def test_the_palette_lists_keys_once(store, chats):
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert titles.count("Keys") == 1


async def test_one_chat_is_not_one_chats(store, chats):
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, ChatListScreen)
        await pilot.press(*"/soup")
        await until(
            pilot, lambda: str(app.screen.query_one("#chats-status").render()).startswith("1 ")
        )
        status = str(app.screen.query_one("#chats-status").render())
        assert status.startswith("1 chat ·"), status


async def test_the_footer_fits_80_columns(store, chats):
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        footer = app.main.query_one(Footer)
        keys = [k for k in footer.query(FooterKey) if not k.has_class("-command-palette")]
        palette = footer.query_one(".-command-palette")
        assert len(keys) >= 6  # new chat, chats, search, model, sidebar, tree, quit
        for key in keys:
            assert key.region.right <= palette.region.x, key.description


async def test_default_assistant_uses_the_configs_model_not_the_open_chats(store, chats):
    from chatui.config import AgentConfig, Config
    from chatui.tui.screens.agent_picker import AgentPicker

    config = Config(model="openai/gpt-4o-mini", agents=(AgentConfig(name="planner"),))
    app = make_app(store, config)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.main.model == "demo"  # the open chat (Lisbon trip) runs demo
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert isinstance(app.screen, AgentPicker)
        await pilot.press("enter")  # "Default assistant", first in the list
        await pilot.pause()
        assert app.main.chat is None and app.main.model == "openai/gpt-4o-mini"


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
    from chatui.agents import AgentRuntime
    from chatui.config import Config
    from store import SessionManager

    manager = SessionManager(store)
    info = manager.create("Trip")
    peer = "0123456789abcdef0123456789abcdef"
    manager.set_status(info.id, "awaiting_peer", f"waiting for agent 'researcher' (session {peer})")
    line = AgentRuntime(store, Config()).status_line(info.id)
    assert line == "waiting for agent 'researcher'"


def test_show_tree_draws_clean_connectors(store, chats):
    from chatui.porting.tree import outline_lines, path_view

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
