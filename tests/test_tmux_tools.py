"""An MCP tool round in a real terminal (tmux): the real `mcp-server-time` from PyPI,
the model the scripted server on 127.0.0.1 (through LiteLLM's real client, in the
app's model process). The approval dialog is answered with `y`; the reply that called
the tool is regenerated into a sibling without it, and `left` goes back to the round."""

from __future__ import annotations

import re
import shutil
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests import llm_server as script
from tests.test_tmux import CHATUI, Terminal

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")

BIN = Path(sys.executable).parent


def context_tokens(lines: list[str]) -> int:
    """The sidebar gauge's figure: `context  873 tok` or `context  1,024 of 32.8k`."""
    for line in lines:
        found = re.search(r"context\s+([\d,]+)", line)
        if found:
            return int(found.group(1).replace(",", ""))
    return 0


class ToolTerminal(Terminal):
    def __init__(self, home: Path, key: str) -> None:
        # The key goes on the command line, so it reaches the app whatever the server's
        # environment.
        self.name = f"chatui-tools-{uuid.uuid4().hex[:8]}"
        self.start(f"CHATUI_HOME={home} OPENAI_API_KEY={key} {CHATUI}", 150, 40)


def test_a_tool_round_on_one_branch_and_a_regenerated_sibling_without_it(
    tmp_path, llm_server, fake_key
):
    config = tmp_path / "config"
    config.mkdir(mode=0o700)
    (config / "config.toml").write_text(
        'model = "openai/test-model"\n'
        f'api_base = "{llm_server.base_url}"\n'
        "max_retries = 0\n\n"
        "[mcp.servers.time]\n"
        f'command = "{BIN / "mcp-server-time"}"\n'
        'args = ["--local-timezone", "UTC"]\n'
        'approval = "ask"\n'
    )
    term = ToolTerminal(tmp_path, fake_key)
    try:
        term.wait_for("Message · enter sends")
        # The gauge grows when the server's tools join the request (after start-up).
        before = context_tokens(term.wait_for("context "))
        deadline = time.monotonic() + 60
        while context_tokens(term.screen()) <= before and time.monotonic() < deadline:
            time.sleep(0.3)
        assert context_tokens(term.screen()) > before, "the time server's tools never joined"

        llm_server.script(
            script.tool_calls(("c1", "time__get_current_time", {"timezone": "Asia/Tokyo"})),
            script.text("It is morning in Tokyo."),
            script.text("No tool this time."),
        )
        term.send("Time in Tokyo?", "Enter")
        lines = term.wait_for("on the MCP server time?")
        assert any("Asia/Tokyo" in line for line in lines)  # the arguments, shown
        term.send("y")
        term.wait_for("It is morning in Tokyo.")
        assert "Asia/Tokyo" in llm_server.requests[1]["messages"][-1]["content"]

        for _ in range(3):  # from the input up to the reply that called the tool
            term.send("Up")
            time.sleep(0.4)
        term.send("C-r")
        term.wait_for("No tool this time.")
        deadline = time.monotonic() + 30
        while any("writing…" in line for line in term.screen()) and time.monotonic() < deadline:
            time.sleep(0.2)
        lines = term.screen()
        assert len(llm_server.requests) == 3
        sent = llm_server.requests[2]["messages"]
        assert sent[-1] == {"role": "user", "content": "Time in Tokyo?"}  # no tool round
        border = next(line for line in lines if "Time in Tokyo" in line and "▕" in line)
        column = border.index("▕")
        chat = "\n".join(line[column + 1 :] for line in lines)
        tree = "\n".join(line[:column] for line in lines)
        screen = "\n".join(lines)
        # The chat shows the regenerated sibling alone...
        assert "No tool this time." in chat and "get_current_time" not in chat, screen
        assert "It is morning in Tokyo." not in chat, screen
        # ...and the tree keeps the first reply's tool round on its own branch.
        assert "‹1/2› called time__get_curren" in tree and "‹2/2›" in tree, screen
        assert "It is morning in Tokyo." in tree, screen
    finally:
        term.close()
