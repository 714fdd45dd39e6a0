"""MCP tools in the app, keys pressed through Pilot: the approval dialog, a tool round on
one branch and a regenerated sibling without it, esc on a hung call, the palette's
switches. Real servers (`mcp-server-time`, tests/mcp_faulty_server.py); the model is
the scripted server on 127.0.0.1 through LiteLLM's real client."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from chatui.core.config import Config
from chatui.mcp.settings import McpServer
from chatui.tui.screens.tool_approval import ToolApprovalScreen
from tests import llm_server as script
from widgets import MessageView

from .app_helpers import make_app, wait_until
from .test_app_chat import idle
from .test_app_chat import type_and_send as send

SIZE = (140, 40)
BIN = Path(sys.executable).parent
FAULTY = str(Path(__file__).with_name("mcp_faulty_server.py"))


def config_with(llm_server, *servers: McpServer) -> Config:
    return Config(
        model="openai/test-model", api_base=llm_server.base_url, max_retries=0, mcp=servers
    )


def time_server(approval: str = "ask") -> McpServer:
    return McpServer(
        "time",
        command=str(BIN / "mcp-server-time"),
        args=("--local-timezone", "UTC"),
        approval=approval,  # type: ignore[arg-type]
    )


async def ready(pilot, name: str) -> None:
    connection = pilot.app.workspace.tools.connections[name]
    await wait_until(pilot, lambda: connection.state == "ready", 30)


def faulty_server() -> McpServer:
    return McpServer("faulty", command=sys.executable, args=(FAULTY,), approval="always")


async def say_hi(pilot, llm_server) -> None:
    """A first exchange: the chat is stored and the model answered."""
    llm_server.script(script.text("Hello."))
    await send(pilot, "Hi")
    await idle(pilot)


def approval_shown(app) -> bool:
    """The approval dialog is up with its content (pushed is not yet composed: a key or a
    query in between finds nothing)."""
    return isinstance(app.screen, ToolApprovalScreen) and bool(app.screen.query("#approval-json"))


def path(app) -> list:
    return app.main.snapshot.history


@pytest.fixture
def fast(fake_key):
    return fake_key


async def test_tool_round_on_one_branch_and_a_regenerated_sibling_without_it(
    store, llm_server, fast
):
    app = make_app(store, config_with(llm_server, time_server("ask")))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, "time")
        await wait_until(
            pilot,
            lambda: any(
                t.name == "time__get_current_time"
                for t in app.main.pane.facts.measured.request.tools
            ),
        )  # the gauge (and F2) count the server's tools once they are listed
        llm_server.script(
            script.tool_calls(("c1", "time__get_current_time", {"timezone": "Asia/Tokyo"})),
            script.text("It is morning in Tokyo."),
        )
        await send(pilot, "Time in Tokyo?")
        await wait_until(pilot, lambda: approval_shown(app))
        shown = str(app.screen.query_one("#approval-json").render())
        assert "Asia/Tokyo" in shown and "get_current_time" in str(
            app.screen.query_one("#dialog-title").render()
        )
        await pilot.press("y")
        await idle(pilot)
        roles = [m.role for m in path(app)]
        assert roles == ["user", "assistant", "tool", "assistant"]
        assert "Asia/Tokyo" in path(app)[2].tool_results[0]["output"]
        assert path(app)[-1].text == "It is morning in Tokyo."

        llm_server.script(script.text("I cannot tell the time without looking."))
        first_reply = path(app)[1].id
        for _ in range(4):  # up the chat to the reply that called the tool
            await pilot.press("up")
            if isinstance(app.focused, MessageView) and app.focused.message.id == first_reply:
                break
        assert isinstance(app.focused, MessageView) and app.focused.message.id == first_reply
        await pilot.press("ctrl+r")  # regenerate: a sibling of the reply that called it
        await idle(pilot)
        assert [m.role for m in path(app)] == ["user", "assistant"]
        assert path(app)[-1].text == "I cannot tell the time without looking."
        question = path(app)[0]
        first, second = app.main.chat.session.get_branches(question.id)
        assert first.tool_calls and not second.tool_calls  # the tool round stays on its branch


async def test_n_refuses_with_a_reason_and_a_allows_for_good(store, llm_server, fast):
    app = make_app(store, config_with(llm_server, time_server("ask")))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, "time")
        llm_server.script(
            script.tool_calls(("c1", "time__get_current_time", {"timezone": "UTC"})),
            script.text("Understood."),
        )
        await send(pilot, "Time?")
        await wait_until(pilot, lambda: approval_shown(app))
        await pilot.press("n", *"you know it", "enter")
        await idle(pilot)
        result = path(app)[2].tool_results[0]
        assert result["is_error"] and "refused" in result["output"]
        assert "you know it" in llm_server.requests[1]["messages"][-1]["content"]

        for _ in range(2):
            llm_server.script(
                script.tool_calls(("time__get_current_time", {"timezone": "UTC"})),
                script.text("Done."),
            )
        await send(pilot, "Again")
        await wait_until(pilot, lambda: approval_shown(app))
        await pilot.press("a")
        await idle(pilot)
        await send(pilot, "Once more")
        await idle(pilot)  # no dialog: allowed for good in this chat
        assert not isinstance(app.screen, ToolApprovalScreen)
        assert "datetime" in path(app)[-2].tool_results[0]["output"]


async def test_escape_stops_a_hung_call_like_a_reply(store, llm_server, fast):
    app = make_app(store, config_with(llm_server, faulty_server()))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, "faulty")
        llm_server.script(script.tool_calls(("c1", "faulty__hang", {})), script.text("unused"))
        await send(pilot, "Hang")
        await wait_until(
            pilot, lambda: any(m.tool_calls for m in app.main.chat.session.get_history())
        )
        await pilot.press("escape")
        await idle(pilot)
        last = app.main.chat.session.get_history()[-1]
        assert last.role == "tool" and "stopped this call" in last.tool_results[0]["output"]
        assert len(llm_server.requests) == 1


async def test_f2_shows_a_tool_description_that_looks_like_markup_as_written(
    store, llm_server, fast
):
    """An MCP server's words are no markup: "[/]" in a tool's description crashed F2."""
    from chatui.tui.screens.prompt import PromptScreen

    app = make_app(store, config_with(llm_server, faulty_server()))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, "faulty")
        await say_hi(pilot, llm_server)
        await pilot.press("f2")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
        titles = [str(t.render()) for t in app.screen.query("CollapsibleTitle")]
        assert any("([/] is no markup)" in t for t in titles), titles


async def test_the_palette_turns_a_server_off_in_this_chat(store, llm_server, fast):
    app = make_app(store, config_with(llm_server, time_server("always")))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, "time")
        await say_hi(pilot, llm_server)
        await pilot.press("ctrl+p")
        await pilot.press(*"turn off time")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_until(
            pilot,
            lambda: (
                not any(
                    t.name.startswith("time__") for t in app.main.pane.facts.measured.request.tools
                )
            ),
        )
        llm_server.script(script.text("Still here."))
        await send(pilot, "Hi again")
        await idle(pilot)
        sent = [t["function"]["name"] for t in llm_server.requests[-1].get("tools", [])]
        assert sent and not any(n.startswith("time__") for n in sent)
        assert app.main.chat.info.metadata.get("mcp_off") == ["time"] or app.workspace.chat(
            app.main.session_id
        ).metadata["mcp_off"] == ["time"]


async def test_the_palette_fills_an_mcp_prompt_and_attaches_a_resource(store, llm_server, fast):
    from chatui.tui.screens.dialogs import TextPrompt
    from widgets import ChatInput

    app = make_app(store, config_with(llm_server, faulty_server()))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, "faulty")
        await say_hi(pilot, llm_server)
        await pilot.press("ctrl+p", *"faulty/review")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, TextPrompt))
        await pilot.press(*"x = 1", "enter")
        box = app.main.query_one("#input", ChatInput)
        await wait_until(pilot, lambda: "Please review this code" in box.text)
        assert box.text == "Please review this code:\nx = 1"  # filled in, not sent
        await pilot.press("ctrl+p", *"attach resource")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_until(pilot, lambda: [a.name for a in app.main.pane.attached] == ["hello"])


async def test_while_a_call_waits_for_approval_the_tree_names_it(store, llm_server, fast):
    """The approval dialog was up and the tree's row of the reply that asked for the
    call still said "writing… (no text yet)": the tree followed only at the turn's end."""
    app = make_app(store, config_with(llm_server, time_server("ask")))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, "time")
        llm_server.script(
            # Slower than the tree's first look at the new reply (still without text).
            script.tool_calls(
                ("c1", "time__get_current_time", {"timezone": "Asia/Tokyo"}), delay=0.3
            ),
            script.text("It is morning in Tokyo."),
        )
        await send(pilot, "Time in Tokyo?")
        await wait_until(pilot, lambda: approval_shown(app))
        tree = app.main.tree
        rows = lambda: [tree.row_text(i) for i in range(len(tree.rows))]  # noqa: E731
        await wait_until(pilot, lambda: any("called time__get_current_time" in r for r in rows()))
        assert not any("no text yet" in row for row in rows())
        await pilot.press("y")
        await idle(pilot)
        assert any("It is morning in Tokyo." in row for row in rows())
