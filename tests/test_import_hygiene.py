"""The layering holds at run time: importing store pulls in no UI or LLM code."""

import subprocess
import sys


def modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


def test_import_store_loads_no_textual_rich_or_litellm():
    loaded = modules_after("import store")
    assert not {m for m in loaded if m.split(".")[0] in ("textual", "rich", "litellm")}


def test_store_exports_what_it_declares():
    import store

    missing = [name for name in store.__all__ if not hasattr(store, name)]
    assert missing == []


def test_import_store_leaves_the_postgresql_driver_for_later():
    # psycopg costs 0.3-0.8 s at import; a SQLite user never needs it (store.driver).
    loaded = modules_after("import store, chatui.cli.commands")
    assert "psycopg" not in loaded and "peewee" in loaded


def test_a_plain_message_s_view_loads_no_markdown_parser():
    # markdown-it costs tens of ms at import: a chat of plain replies never needs it
    # (it was loaded by the first send of every session).
    code = """
import asyncio
from textual.app import App
from store import Message
from widgets import MessageView

class One(App):
    def compose(self):
        yield MessageView(Message(id="m", role="assistant", parts=[{"type": "text", "text": "Hi there."}]))

async def main():
    app = One()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert app.query_one(MessageView).shown == "Hi there."

asyncio.run(main())
"""
    loaded = modules_after(code)
    assert "widgets.message_view" in loaded
    assert "markdown_it" not in loaded and "rich.markdown" not in loaded
