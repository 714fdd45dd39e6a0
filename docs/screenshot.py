"""Draw docs/screenshot.svg: the app on a small, made-up chat (run: python docs/screenshot.py)."""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


async def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="chatui-shot-"))
    os.environ["CHATUI_HOME"] = str(home)
    os.environ["TZ"] = "UTC"
    from chatui.core.config import Config
    from chatui.core.ui_state import UiState
    from chatui.tui.app import ChatApp
    from store import SessionManager, Store, StoreContextProvider
    from widgets import ChatInput

    store = Store(home / "chats.db")
    manager = SessionManager(store)
    chat = manager.create("Lisbon in October", model="gpt-4o-mini")

    def msg(mid: str, role: str, text: str, parts: list | None = None, **extra) -> dict:
        return {
            "id": mid,
            "role": role,
            "parts": parts or [{"type": "text", "text": text}],
            "created_at": f"2026-10-03T09:{int(mid[1:]):02d}:00+00:00",
            **extra,
        }

    call = {
        "type": "tool-call",
        "tool_call_id": "c1",
        "tool_name": "set_context",
        "input": {
            "label": "memory",
            "action": "append",
            "content": "Vegetarian; prefers walking tours.",
        },
    }
    result = {
        "type": "tool-result",
        "tool_call_id": "c1",
        "tool_name": "set_context",
        "output": "Appended to 'memory' (14/1100 tokens used).",
    }
    steps = [
        (msg("m1", "user", "Plan three days in Lisbon. I'm vegetarian and love walking."), None),
        (msg("m2", "assistant", "Day one: Alfama and the castle."), "m1"),
        (msg("m3", "assistant", "", [call]), "m1"),
        (msg("m4", "tool", "", [result]), "m3"),
        (
            msg(
                "m5",
                "assistant",
                "Noted — I'll keep it vegetarian and on foot.\n\n"
                "**Day 1 — Belém.** Walk the riverside to the tower, then *pastéis* "
                "(they are vegetarian).\n\n**Day 2 — Alfama.** Start at the castle at 9:00, "
                "before the crowds.\n\n```python\nroute = ['Belém', 'Alfama', 'Sintra']\n```",
                token_usage={"input": 812, "output": 96, "cost": 0.0002},
                metadata={"model": "gpt-4o-mini"},
            ),
            "m4",
        ),
        (msg("m6", "user", "And a rainy-day plan?"), "m5"),
        (
            msg(
                "m7",
                "assistant",
                "The Gulbenkian: two collections and a garden café.",
                metadata={"model": "gpt-4o-mini"},
            ),
            "m6",
        ),
        # Another question asked instead of m6, and a second reply to m6 by another
        # model, cut short: the tree shows every branch, its model and its state.
        (msg("m8", "user", "What about a day trip to Sintra?"), "m5"),
        (
            msg(
                "m9",
                "assistant",
                "Take the train from Rossio (40 minutes); start at Pena before 10:00.",
                metadata={"model": "gpt-4o-mini"},
            ),
            "m8",
        ),
        (
            msg(
                "m10",
                "assistant",
                "On a rainy day, the tile museum",
                metadata={"model": "claude-3-5-haiku", "status": "cancelled"},
            ),
            "m6",
        ),
    ]
    for message, parent in steps:
        await manager.append(chat.id, message, parent)
    manager.update_metadata(chat.id, active_leaf="m7")
    manager.add_usage(chat.id, 3120, 410, 0.0011)
    await StoreContextProvider(store, "global", "memory").set(
        "Vegetarian; prefers walking tours.\nTravels in October.\n" + "Likes museums. " * 40
    )
    os.environ.setdefault("OPENAI_API_KEY", "sk-screenshot-not-a-key")  # no key notice
    app = ChatApp(store, Config(model="gpt-4o-mini"), ui_state=UiState())
    async with app.run_test(size=(150, 40)) as pilot:
        while not app.llm_ready:  # the context window comes from LiteLLM's tables
            await pilot.pause(0.1)
        await pilot.pause()
        for box in app.query(ChatInput):
            box.cursor_blink = False
        await pilot.press("ctrl+t", "k")  # the tree focused, its cursor on a row
        await pilot.pause(0.3)
        app.save_screenshot(str(ROOT / "docs" / "screenshot.svg"))
    store.close()


if __name__ == "__main__":
    asyncio.run(main())
