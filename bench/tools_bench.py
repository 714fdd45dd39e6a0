"""Benchmark of MCP tool servers (issue 21): what they cost the start, and a call.

1. Full UI ready with three MCP servers configured ÷ without them (target ≤ 1.05×).
   Measured in tmux from launching `chatui` until the screen shows the chat's text,
   the footer's keys and the context gauge; runs with and without alternate, in the
   same run, on the same database. The servers: `mcp-server-time`, `mcp-server-git`
   on a temporary repository, and tests/mcp_faulty_server.py.
2. A tool call's overhead in the app over calling the same MCP server directly from
   the SDK (target ≤ +20 ms p50): the app's path is the engine's tool step
   (`run_tools`: approval rule, the call through the hub's connection, the result
   cleaned and stored as a tool message); the direct path is `Client.call_tool` on
   a client of its own. Both call `get_current_time` on `mcp-server-time`, alternating.

Figures, not assertions: `python bench/tools_bench.py [--runs N] [--calls N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from store import SessionManager, Store  # noqa: E402

BIN = Path(sys.executable).parent
CHATUI = str(BIN / "chatui")
FAULTY = ROOT / "tests" / "mcp_faulty_server.py"
ANSWER = "He went to town for oil."


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True).stdout


def ready_on(screen: str) -> bool:
    """The full UI: the chat's text (in the tree and the chat), the footer's keys, the
    context gauge's figure."""
    return screen.count(ANSWER) >= 2 and "^q Quit" in screen and " of " in screen


def seed(db: Path) -> None:
    with Store(db) as store:
        manager = SessionManager(store)
        chat = manager.create("Bench chat", model="demo")
        question = {
            "id": "q1",
            "role": "user",
            "parts": [{"type": "text", "text": "Where is the lighthouse keeper?"}],
        }
        answer = {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": ANSWER}]}
        asyncio.run(manager.append(chat.id, question, None))
        asyncio.run(manager.append(chat.id, answer, "q1"))


def servers_toml(repo: Path) -> str:
    return (
        "[mcp.servers.time]\n"
        f'command = "{BIN / "mcp-server-time"}"\n'
        'args = ["--local-timezone", "UTC"]\n'
        'approval = "always"\n'
        "[mcp.servers.git]\n"
        f'command = "{BIN / "mcp-server-git"}"\n'
        f'args = ["--repository", "{repo}"]\n'
        "[mcp.servers.faulty]\n"
        f'command = "{sys.executable}"\n'
        f'args = ["{FAULTY}"]\n'
    )


def ready_ms(home: Path, db: Path) -> float:
    """Milliseconds from launch to the full UI, once."""
    name = f"tools-bench-{uuid.uuid4().hex[:8]}"
    start = time.perf_counter()
    tmux(
        "new-session", "-d", "-s", name, "-x", "160", "-y", "45",
        f"CHATUI_HOME={home} {CHATUI} --db {db} --model demo",
    )  # fmt: skip
    try:
        while time.perf_counter() - start < 15:
            if ready_on(tmux("capture-pane", "-p", "-t", name)):
                return (time.perf_counter() - start) * 1000
            time.sleep(0.002)
        raise RuntimeError("the app did not draw within 15 s")
    finally:
        tmux("kill-session", "-t", name)
        time.sleep(0.4)  # the servers and the model process wind down


def start_figures(folder: Path, runs: int) -> tuple[list[float], list[float]]:
    repo = folder / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    db = folder / "bench.db"
    seed(db)
    plain, tooled = folder / "plain", folder / "tooled"
    for home, text in ((plain, ""), (tooled, servers_toml(repo))):
        (home / "config").mkdir(parents=True)
        (home / "config" / "config.toml").write_text(text)
    ready_ms(plain, db), ready_ms(tooled, db)  # warm the disk cache for both
    without, with_servers = [], []
    for _ in range(runs):
        without.append(ready_ms(plain, db))
        with_servers.append(ready_ms(tooled, db))
    return without, with_servers


async def call_figures(folder: Path, calls: int) -> tuple[list[float], list[float]]:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from chatui.core.config import Config
    from chatui.core.replies import run_tools
    from chatui.core.workspace import Workspace
    from chatui.mcp.settings import McpServer

    command = str(BIN / "mcp-server-time")
    args = ("--local-timezone", "UTC")
    store = Store(folder / "calls.db")
    server = McpServer("time", command=command, args=args, approval="always")
    ws = Workspace(store, Config(mcp=(server,)))
    ws.start_tools()
    assert await ws.tools.wait_ready(30), "mcp-server-time did not start"
    chat = ws.create_chat("calls", model="demo")
    session = ws.open(chat.id).session
    parent = await session.append_message(
        {"id": "q", "role": "user", "parts": [{"type": "text", "text": "time?"}]}
    )
    tools = ws.tools.tools_for(chat.id)
    arguments = {"timezone": "Europe/Lisbon"}
    in_app, direct = [], []
    with open(os.devnull, "w") as errlog:
        params = StdioServerParameters(command=command, args=list(args))
        async with Client(stdio_client(params, errlog=errlog)) as client:
            for i in range(calls + 5):  # the first five warm both paths up
                call = {
                    "type": "tool-call",
                    "tool_call_id": f"c{i}",
                    "tool_name": "time__get_current_time",
                    "input": arguments,
                }
                t = time.perf_counter()
                run = await run_tools(session, tools, [call], parent.id)
                app_ms = (time.perf_counter() - t) * 1000
                assert "Europe/Lisbon" in run.message.tool_results[0]["output"]
                t = time.perf_counter()
                result = await client.call_tool("get_current_time", arguments)
                direct_ms = (time.perf_counter() - t) * 1000
                assert not result.is_error
                if i >= 5:
                    in_app.append(app_ms)
                    direct.append(direct_ms)
    await ws.shutdown()
    store.close()
    return in_app, direct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    if not shutil.which("tmux"):
        sys.exit("tmux is needed for the start-up figures")
    folder = Path(tempfile.mkdtemp(prefix="chatui-tools-bench-"))
    os.environ["CHATUI_HOME"] = str(folder / "home")

    without, with_servers = start_figures(folder, args.runs)
    a, b = statistics.median(without), statistics.median(with_servers)
    print(f"full UI ready, no MCP server       median {a:7.1f} ms  (runs: {len(without)})")
    print(f"full UI ready, three MCP servers   median {b:7.1f} ms")
    print(f"  ratio with ÷ without: {b / a:.3f}×   target ≤ 1.05×")

    in_app, direct = asyncio.run(call_figures(folder, args.calls))
    p50_app, p50_direct = statistics.median(in_app), statistics.median(direct)
    print(
        f"tool call, in the app (run_tools)   p50 {p50_app:6.2f} ms   "
        f"p90 {statistics.quantiles(in_app, n=10)[-1]:6.2f} ms"
    )
    print(
        f"tool call, SDK directly            p50 {p50_direct:6.2f} ms   "
        f"p90 {statistics.quantiles(direct, n=10)[-1]:6.2f} ms"
    )
    print(f"  overhead p50: {p50_app - p50_direct:+.2f} ms   target ≤ +20 ms")


if __name__ == "__main__":
    main()
