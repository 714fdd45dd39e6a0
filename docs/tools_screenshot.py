"""Draw docs/tools.svg: the approval dialog of an MCP tool call (run: python docs/tools_screenshot.py).

The real `mcp-server-time` (a test extra) answers; the model is the scripted
OpenAI-compatible server the tests use (tests/llm_server.py), on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent


async def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="chatui-shot-"))
    os.environ["CHATUI_HOME"] = str(home)
    os.environ["TZ"] = "UTC"
    os.environ["OPENAI_API_KEY"] = "sk-screenshot-not-a-key"
    from chatui.core.config import Config
    from chatui.core.ui_state import UiState
    from chatui.mcp.settings import McpServer
    from chatui.tui.app import ChatApp
    from chatui.tui.screens.tool_approval import ToolApprovalScreen
    from store import Store
    from tests import llm_server as script
    from widgets import ChatInput

    server = script.LLMServer().start()
    server.script(
        script.tool_calls(
            ("c1", "time__get_current_time", {"timezone": "Europe/Lisbon"}),
            text_before="Let me check the clock in Lisbon first.",
        ),
        script.text("It is 10:05 in Lisbon: the Gulbenkian opens at 10:00."),
    )
    store = Store(home / "chats.db")
    time_server = McpServer(
        "time",
        command=str(BIN / "mcp-server-time"),
        args=("--local-timezone", "UTC"),
        tools={"get_current_time": "ask"},
        approval="always",
    )
    config = Config(model="openai/gpt-4o-mini", api_base=server.base_url, mcp=(time_server,))
    app = ChatApp(store, config, ui_state=UiState())
    async with app.run_test(size=(150, 40)) as pilot:
        connection = app.workspace.tools.connections["time"]
        while connection.state != "ready":
            await pilot.pause(0.1)
        for box in app.query(ChatInput):
            box.cursor_blink = False
        await pilot.press(*"Is the Gulbenkian open now?", "enter")
        while not isinstance(app.screen, ToolApprovalScreen):
            await pilot.pause(0.1)
        await pilot.pause(0.5)
        app.save_screenshot(str(ROOT / "docs" / "tools.svg"))
        await pilot.press("y")
        while app.main.generating:
            await pilot.pause(0.1)
    store.close()
    server.stop()


if __name__ == "__main__":
    asyncio.run(main())
