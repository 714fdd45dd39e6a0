"""Palette commands through real keys: export, import, rename, compact, delete."""

from __future__ import annotations

import json
import re
import stat

import pytest
from textual.widgets import Input

from chatui.core.config import Config
from chatui.tui.screens.dialogs import TextPrompt
from store import SessionManager
from widgets import ChatInput

from .app_helpers import make_app, notices, populate, wait_until
from .test_import_chatgpt import branching_conversation, write_export

SIZE = (140, 40)


@pytest.fixture
def chats(store):
    return populate(store)


async def run_command(pilot, name: str) -> None:
    await pilot.press("ctrl+p")
    await pilot.pause()
    await pilot.press(*name)
    await pilot.pause(0.3)
    await pilot.press("enter")
    await pilot.pause()


async def answer(pilot, text: str) -> None:
    assert isinstance(pilot.app.screen, TextPrompt)
    field = pilot.app.screen.query_one("#dialog-input", Input)
    field.value = text
    await pilot.press("enter")
    await pilot.pause()


async def test_export_markdown_and_json_of_the_open_chat(store, chats, tmp_path):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await run_command(pilot, "Export chat as Markdown")
        await answer(pilot, str(tmp_path / "trip.md"))
        await run_command(pilot, "Export chat as JSON")
        await answer(pilot, str(tmp_path / "trip.json"))
    md = (tmp_path / "trip.md").read_text()
    assert "Lisbon trip" in md and "The Gulbenkian is a must." in md
    assert "Try pastéis" not in md  # another branch: listed, not interleaved
    assert "branch" in md.lower()
    doc = json.loads((tmp_path / "trip.json").read_text())
    assert len(doc["messages"]) == 7  # the whole tree
    for name in ("trip.md", "trip.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600


async def test_export_html_from_the_palette_writes_the_page_and_says_where(store, chats, tmp_path):
    app = make_app(store)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        await run_command(pilot, "Export chat as HTML")
        assert isinstance(app.screen, TextPrompt)
        suggested = app.screen.query_one("#dialog-input", Input).value
        assert suggested.endswith("-lisbon-trip.html")  # a name offered, in the exports folder
        await answer(pilot, str(tmp_path / "trip.html"))
        await wait_until(pilot, lambda: f"Exported to {tmp_path / 'trip.html'}" in notices(app))
    page = (tmp_path / "trip.html").read_text()
    assert page.startswith("<!doctype html>") and "Content-Security-Policy" in page
    # Every branch is in the page; the one on screen in the app shows first.
    assert "The Gulbenkian is a must." in page and "Try pastéis" in page
    hidden = set(re.findall(r'<article [^>]*data-id="([^"]+)"[^>]* hidden>', page))
    assert hidden == {"q2", "a3", "a1"}  # the other branch, and the replaced first reply
    assert stat.S_IMODE((tmp_path / "trip.html").stat().st_mode) == 0o600


async def test_export_to_an_unwritable_place_says_so(store, chats, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    app = make_app(store)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        await run_command(pilot, "Export chat as Markdown")
        await answer(pilot, str(blocker / "inside.md"))
        await pilot.pause()
        await wait_until(pilot, lambda: "Could not write" in notices(app))
    assert blocker.read_text() == "x"


async def test_import_a_chatgpt_file_opens_the_imported_chat(store, tmp_path):
    path = write_export(tmp_path, [branching_conversation()])
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await run_command(pilot, "Import chats")
        await answer(pilot, str(path))
        await wait_until(pilot, lambda: app.main.chat is not None)
        assert SessionManager(app.store).count() == 1
        # importing the same file again adds nothing
        await run_command(pilot, "Import chats")
        await answer(pilot, str(path))
        await pilot.pause(0.5)
        assert SessionManager(app.store).count() == 1


async def test_import_of_a_bad_file_imports_nothing(store, tmp_path):
    bad = tmp_path / "conversations.json"
    bad.write_text('[{"mapping": {"a": ')
    app = make_app(store)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        await run_command(pilot, "Import chats")
        await answer(pilot, str(bad))
        await pilot.pause(0.5)
        assert SessionManager(app.store).count() == 0
        await wait_until(pilot, lambda: "Nothing imported" in notices(app))


async def test_rename_and_delete_from_the_palette(store, chats):
    ids = chats
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await run_command(pilot, "Rename chat")
        await answer(pilot, "Portugal")
        assert SessionManager(app.store).get(ids["lisbon"]).name == "Portugal"
        await run_command(pilot, "Delete chat")
        await pilot.pause()
        assert SessionManager(app.store).get(ids["lisbon"]) is None
        assert app.main.session_id == ids["soup"]  # the next newest opens


@pytest.fixture
def long_chat(store):
    import asyncio

    from store import SessionManager

    manager = SessionManager(store)
    info = manager.create("Long chat", model="openai/test-model")
    messages = [
        {
            "id": f"m{i}",
            "role": "user" if i % 2 == 0 else "assistant",
            "parts": [{"type": "text", "text": f"Point {i}: " + "details " * 300}],
        }
        for i in range(30)
    ]
    asyncio.run(manager.append_all(info.id, messages))
    return info.id


async def test_compact_now_summarises_with_the_model(store, long_chat, llm_server, fake_key):
    llm_server.text(
        "## Topic\nLisbon\n## Key Points\n- Belém\n## Current State\nplanning\n"
        "## Open Items\n- museums"
    )
    config = Config(model="openai/test-model", api_base=llm_server.base_url)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.main.query_one(ChatInput).focus()
        await run_command(pilot, "Compact now")
        await wait_until(pilot, lambda: app.main.snapshot and app.main.snapshot.compactions)
        history = app.main.snapshot.history
        assert any(m.is_compaction for m in history)
        summary = next(m for m in history if m.is_compaction)
        assert summary.text.startswith("## Topic")
        assert len(app.main.snapshot.covered[summary.id]) > 5
        prompt = llm_server.messages(-1)[-1]["content"]
        assert "Point 5" in prompt and "Key Points" in prompt
        # originals stay in the database and in search
        assert SessionManager(app.store).get_message_count(long_chat) == 30
        assert SessionManager(app.store).search("Point 5")


async def test_compact_now_with_nothing_between_head_and_tail_says_why_not_short(store):
    """Seen with a real local model: one question whose tool calls filled a 1,536-token
    window left nothing to compact (its first messages and latest ones are kept whole),
    and *Compact now* said "the chat is short" of a chat too long for the model."""
    manager = SessionManager(store)
    info = manager.create("One long turn", model="demo")
    messages = [
        {"id": "q", "role": "user", "parts": [{"type": "text", "text": "words " * 400}]},
        {"id": "a", "role": "assistant", "parts": [{"type": "text", "text": "An answer."}]},
    ]
    await manager.append_all(info.id, messages)
    app = make_app(store, Config(model="demo"))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        app.main.query_one(ChatInput).focus()
        await run_command(pilot, "Compact now")
        await wait_until(pilot, lambda: "Nothing to compact" in notices(app))
        said = notices(app)
        assert "short" not in said and "kept whole" in said, said
