"""A fuzzer for live chats: random key sequences against a model that streams slowly.

Hypothesis draws sequences of user actions — send, switch chat, search, the chat
list, ctrl+r, e, f, ←/→, escape, ctrl+n, compaction, the full-screen tree (`z`),
terminal resizes (80×24 to 200×50), and a sentence typed while a message has the
focus — and a Pilot plays them on the real app while replies stream from the
scripted server on 127.0.0.1. After every sequence:

- the app never raised;
- every stored message is reachable (each parent is in its chat's tree, and the
  tree the screen draws holds every stored message);
- each finished reply's stored text is exactly what the server streamed (a
  cancelled one a prefix of it);
- every status the chat pane shows matches the database;
- a sentence typed on a focused message reached the input and asked for no reply.

`derandomize=True`: the same examples every run, so a failure replays.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatui.core.config import Config
from chatui.core.ui_state import UiState
from chatui.tui.app import ChatApp
from chatui.tui.screens.main import MainScreen
from store import SessionManager, Store
from tests import llm_server as script
from widgets import MessageView

from .app_helpers import wait_until

SIZE = (120, 36)
REPLY = " ".join(f"token{i}" for i in range(24))
"""What the model always says (so any stored reply can be checked against it)."""

ACTIONS = (
    "send",
    "send",
    "switch",
    "search",
    "list",
    "regenerate",
    "edit",
    "fork",
    "left",
    "right",
    "escape",
    "new",
    "compact",
    "zoom",
    "resize",
    "type_on_message",
    "wait",
)
SIZES = ((80, 24), (200, 50), (120, 36), (100, 30))
SENTENCE = "really, run it right"
"""Typed on a focused message: `r` used to regenerate; now every key reaches the input."""


async def _settle(pilot, seconds: float = 0.05) -> None:
    await pilot.pause(seconds)


async def _to_main(pilot) -> None:
    """Close whatever modal an action left open (escape on each)."""
    app = pilot.app
    for _ in range(4):
        if isinstance(app.screen, MainScreen):
            return
        await pilot.press("escape")
        await _settle(pilot)


async def _focus_last_message(pilot) -> bool:
    views = pilot.app.main.chat_view.views
    if not views:
        return False
    views[-1].focus()
    await _settle(pilot)
    return True


async def _play(pilot, action: str) -> None:
    app = pilot.app
    main = app.main
    if action == "send":
        main.chat_input.focus()
        await pilot.press(*"hi there", "enter")
    elif action == "switch":
        await pilot.press("ctrl+s")
        await _settle(pilot, 0.1)
        await pilot.press("down", "enter")
    elif action == "search":
        await pilot.press("ctrl+f")
        await _settle(pilot, 0.1)
        await pilot.press(*"token3")
        await _settle(pilot, 0.3)
        await pilot.press("down", "enter")
    elif action == "list":
        await pilot.press("ctrl+s")
        await _settle(pilot, 0.1)
        await pilot.press("escape")
    elif action in ("regenerate", "fork", "left", "right"):
        if await _focus_last_message(pilot):
            key = {"regenerate": "ctrl+r", "fork": "f", "left": "left", "right": "right"}
            await pilot.press(key[action])
    elif action == "zoom":
        await pilot.press("ctrl+t")
        await _settle(pilot)
        if main.focused is main.tree:
            await pilot.press("z")
            await _settle(pilot, 0.2)
            await pilot.press("up", "down", "escape")
    elif action == "resize":
        width, height = SIZES[len(main.chat_view.views) % len(SIZES)]
        await pilot.resize_terminal(width, height)
        await _settle(pilot, 0.1)
    elif action == "type_on_message":
        if await _focus_last_message(pilot) and not main.generating:
            asked = len(app.fuzz_server.requests)
            main.chat_input.clear()
            await pilot.press(*SENTENCE)
            await _settle(pilot, 0.2)
            assert main.chat_input.text == SENTENCE
            assert len(app.fuzz_server.requests) == asked
            main.chat_input.clear()
    elif action == "edit":
        views = main.chat_view.views
        users = [v for v in views if v.message.role == "user"]
        if users:
            users[-1].focus()
            await pilot.press("e")
            await _settle(pilot, 0.1)
            if not isinstance(app.screen, MainScreen):
                await pilot.press(*" again", "enter")
    elif action == "escape":
        await pilot.press("escape")
    elif action == "new":
        await pilot.press("ctrl+n")
    elif action == "compact":
        main.commands.compact_now()
    elif action == "wait":
        await _settle(pilot, 0.4)
    await _settle(pilot)
    await _to_main(pilot)


def _check_store(store: Store) -> None:
    manager = SessionManager(store)
    for info in manager.list():
        tree = manager.get_session(info.id).get_tree()
        ids = {m.id for m in tree}
        for message in tree:
            assert message.parent_id is None or message.parent_id in ids, message
            meta = message.metadata
            if message.role != "assistant" or "compaction" in meta or not meta.get("model"):
                continue
            status = meta.get("status")
            assert status in ("complete", "cancelled", "error"), (status, message.text)
            if status == "complete":
                assert message.text == REPLY, message.text
            elif status == "cancelled":
                assert REPLY.startswith(message.text), message.text


def _check_screen(app: ChatApp) -> None:
    main = app.main
    if main.chat is None:
        return
    stored = {m.id: m for m in main.chat.session.get_tree()}
    assert main.snapshot is not None
    assert {m.id for m in main.snapshot.tree} == set(stored)  # the tree draws them all
    for view in main.query(MessageView):
        message = stored.get(view.message_id)
        if message is None:  # a compaction summary
            continue
        header = view.header().plain
        status = message.metadata.get("status")
        if status == "complete":
            assert not any(w in header for w in ("writing", "cancelled", "error", "incomplete"))
        elif status == "cancelled":
            assert "cancelled" in header
        elif status == "error":
            assert "error" in header
        assert "writing…" not in header  # nothing streams once every job has ended


async def _scenario(actions: list[str], home: Path) -> None:
    server = script.LLMServer().start()
    server.default = script.text(REPLY, delay=0.01)
    store = Store(home / "fuzz.db")
    try:
        manager = SessionManager(store)
        for name in ("one", "two"):
            info = manager.create(name, model="openai/test-model")
            await manager.append_all(
                info.id,
                [
                    {"id": f"{name}-q", "role": "user", "parts": [{"type": "text", "text": "q"}]},
                    {
                        "id": f"{name}-a",
                        "role": "assistant",
                        "parts": [{"type": "text", "text": REPLY}],
                        "metadata": {"model": "openai/test-model", "status": "complete"},
                    },
                ],
            )
        config = Config(model="openai/test-model", api_base=server.base_url, max_retries=0)
        app = ChatApp(store, config, ui_state=UiState())
        app.fuzz_server = server  # type: ignore[attr-defined]  # what `type_on_message` counts
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.llm_ready, 60)
            for action in actions:
                await _play(pilot, action)
                assert app.is_running, action
            await wait_until(pilot, lambda: not app.workspace.live_chats and not app.main.workers)
            await pilot.pause(0.1)
            await app.main.pane.redraw()
            await pilot.pause()
            _check_screen(app)
            assert app.is_running
        _check_store(store)
    finally:
        store.close()
        server.stop()


@pytest.mark.usefixtures("fake_key")
@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(st.sampled_from(ACTIONS), min_size=4, max_size=12))
def test_live_chats_survive_any_key_sequence(actions: list[str]) -> None:
    with tempfile.TemporaryDirectory() as home:
        asyncio.run(_scenario(actions, Path(home)))
