"""Agents in the app: pick one for a new chat; agent A asks agent B through the real
LiteLLM client (scripted server) and uses the answer; hops are shown and followed."""

from __future__ import annotations

import json

import pytest

from chatui.core.config import AgentConfig, Config
from chatui.tui.screens.agent_picker import AgentPicker
from chatui.tui.screens.chat_list import ChatListScreen
from store import PeerRouter, SessionManager
from widgets import MessageTree, MessageView

from .app_helpers import make_app
from .test_app_chat import idle, type_and_send

SIZE = (150, 40)


@pytest.fixture
def config(llm_server, fake_key):
    return Config(
        model="openai/test-model",
        api_base=llm_server.base_url,
        max_retries=0,
        agents=(
            AgentConfig(
                name="planner",
                soul="You plan trips.",
                description="Plans trips",
                peers=("researcher",),
            ),
            AgentConfig(name="researcher", soul="You look things up.", description="Finds facts"),
        ),
    )


def system_prompt(request: dict) -> str:
    return request["messages"][0]["content"]


async def start_chat_with(pilot, index: int) -> None:
    await pilot.press("ctrl+n")
    await pilot.pause()
    assert isinstance(pilot.app.screen, AgentPicker)
    await pilot.press(*(["down"] * index), "enter")
    await pilot.pause()


async def test_agent_a_asks_agent_b_and_uses_the_answer(store, config, llm_server):
    llm_server.tool_calls(
        ("message_agent", {"agent": "researcher", "text": "Opening hours of the Gulbenkian?"})
    )
    llm_server.text("10:00 to 18:00, closed Tuesdays.")
    llm_server.text("The researcher says it opens 10:00 to 18:00 and closes on Tuesdays.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await start_chat_with(pilot, 1)  # default, planner, researcher
        main = app.main
        assert main.pane.facts.agent.name == "planner"
        await type_and_send(pilot, "When can I visit the Gulbenkian?")
        await idle(pilot)

        first, peer, last = llm_server.requests
        assert "You plan trips." in system_prompt(first)
        tool = next(t for t in first["tools"] if t["function"]["name"] == "message_agent")
        assert tool["function"]["parameters"]["properties"]["agent"]["enum"] == ["researcher"]
        assert "You look things up." in system_prompt(peer)
        assert peer["messages"][-1] == {
            "role": "user",
            "content": "Opening hours of the Gulbenkian?",
        }
        results = [m for m in last["messages"] if m["role"] == "tool"]
        assert "10:00 to 18:00" in results[-1]["content"]

        planner_chat = main.chat.info
        assert main.snapshot.history[-1].text.startswith("The researcher says")
        assert SessionManager(app.store).get(planner_chat.id).status == "idle"
        hops = PeerRouter(SessionManager(app.store), None).hops(planner_chat.id)
        assert len(hops) == 1 and hops[0].state == "replied"
        target = SessionManager(app.store).get(hops[0].to_session_id)
        assert SessionManager(app.store).get_agent(target.agent_id).name == "researcher"
        delivered = SessionManager(app.store).get_history(target.id)
        assert delivered[0].from_agent_id == planner_chat.agent_id
        assert delivered[0].delivered_to_session_id == target.id
        assert delivered[-1].text == "10:00 to 18:00, closed Tuesdays."

        # the tree marks the hop; g on the tool call opens the researcher's chat there
        asked = hops[0].from_message_id
        assert main.pane.marks.labels[asked] == "asked researcher"
        tree = main.query_one(MessageTree)
        assert tree.entry_for(asked).hop == "asked researcher"
        view = main.chat_view.view_for(asked)
        view.focus()
        await pilot.press("g")
        await pilot.pause()
        assert main.session_id == target.id
        assert isinstance(app.focused, MessageView)
        assert app.focused.message_id == hops[0].reply_message_id
        # and back: g on the delivered message returns to the planner's chat
        await main.chat_view.reveal(hops[0].message_id)
        assert "from planner" in main.chat_view.view_for(hops[0].message_id).header().plain
        await pilot.press("g")
        await pilot.pause()
        assert main.session_id == planner_chat.id

        await pilot.press("ctrl+s")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ChatListScreen)
        table = screen.query_one("#chats-table")
        agent_column = [c.label.plain for c in table.columns.values()].index("agent")
        agents = {str(table.get_row(r.id)[agent_column]) for r in screen.rows if r}
        assert {"planner", "researcher"} <= agents


async def test_a_failing_peer_gives_the_caller_an_error_and_restores_its_status(
    store, config, llm_server
):
    llm_server.tool_calls(("message_agent", {"agent": "researcher", "text": "Anything?"}))
    llm_server.error(500, "the researcher's provider is down")
    llm_server.text("The researcher could not answer, sorry.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await start_chat_with(pilot, 1)
        await type_and_send(pilot, "Ask the researcher")
        await idle(pilot)
        main = app.main
        history = main.snapshot.history
        tool_message = next(m for m in history if m.role == "tool")
        output = tool_message.tool_results[0]["output"]
        assert output.startswith("Error:")
        assert history[-1].text == "The researcher could not answer, sorry."
        assert SessionManager(app.store).get(main.chat.session_id).status == "idle"
        hop = PeerRouter(SessionManager(app.store), None).hops(main.chat.session_id)[0]
        assert hop.state == "failed"


async def test_an_agent_calling_back_into_its_chain_gets_an_error_not_a_hang(
    store, config, llm_server
):
    # planner → researcher → planner would wait on itself: refused at once
    llm_server.tool_calls(("message_agent", {"agent": "researcher", "text": "Check this"}))
    llm_server.tool_calls(("message_agent", {"agent": "planner", "text": "Back to you"}))
    llm_server.text("I cannot ask the planner back.")
    llm_server.text("Done.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await start_chat_with(pilot, 1)
        await type_and_send(pilot, "Plan it")
        await idle(pilot)
        assert app.main.snapshot.history[-1].text == "Done."
        researcher_request = llm_server.requests[2]
        refusal = [m for m in researcher_request["messages"] if m["role"] == "tool"][-1]
        assert refusal["content"].startswith("Error:")
        assert len(llm_server.requests) == 4


async def test_agents_are_synced_from_config_and_chosen_without_a_picker_when_none(
    store, llm_server, fake_key
):
    app = make_app(store, Config(model="openai/test-model", api_base=llm_server.base_url))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert not isinstance(app.screen, AgentPicker)  # no agents: straight to a chat
    configured = Config(agents=(AgentConfig(name="helper", model="demo", description="Helps"),))
    app = make_app(store, configured)
    agents = app.workspace.agents()
    assert [(a.name, a.model, a.description) for a in agents] == [("helper", "demo", "Helps")]
    assert json.loads(json.dumps(agents[0].config))["peers"] == []
