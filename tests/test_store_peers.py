"""Peer messages between agents' sessions (issue 4, SPEC 7), with a scripted `run_turn`.

No model is involved in the store: `run_turn` here is a small async function
that plays the target agent, appends its reply and returns it, as the app's
engine does.
"""

import asyncio
import json

import pytest

from store import (
    PeerError,
    PeerLoopError,
    PeerRouter,
    UnknownAgentError,
    UnknownSessionError,
    message_agent_tool,
)


def reply_msg(mid, text):
    return {"id": mid, "role": "assistant", "parts": [{"type": "text", "text": text}]}


class Team:
    """Agents A, B, C and a caller session run by A, in a project."""

    def __init__(self, manager):
        self.manager = manager
        self.project = manager.create_project("Launch")
        self.a = manager.create_agent("Alice", model="m-a", description="Plans the launch")
        self.b = manager.create_agent("Bob", model="m-b", description="Knows the budget")
        self.c = manager.create_agent("Cleo", model="m-c")
        self.caller = manager.create("Plan", agent_id=self.a.id, project_id=self.project.id)
        self.seen: list[tuple[str, str, str]] = []  # (session, status of caller, detail)
        self.behaviour = {}  # agent id -> async fn(session_id) -> str
        self.router = PeerRouter(manager, self.run_turn)

    async def run_turn(self, session_id):
        info = self.manager.get(session_id)
        caller_now = self.manager.get(self.caller.id)
        self.seen.append((session_id, caller_now.status, caller_now.status_detail))
        behaviour = self.behaviour.get(info.agent_id)
        if behaviour is not None:
            return await behaviour(session_id)
        question = self.manager.get_history(session_id)[-1].text
        text = f"{info.name.split(' ')[0]} says: answer to {question!r}"
        n = self.manager.get_message_count(session_id)
        await self.manager.append(session_id, reply_msg(f"r{n}", text))
        return text


@pytest.fixture
def team(manager):
    return Team(manager)


async def test_wait_true_delivers_runs_and_returns_the_reply(team, manager):
    await manager.append(
        team.caller.id,
        {
            "id": "call",
            "role": "assistant",
            "parts": [
                {
                    "type": "tool-call",
                    "tool_call_id": "c1",
                    "tool_name": "message_agent",
                    "input": {"agent": "Bob", "text": "What is the budget?"},
                }
            ],
        },
    )
    reply = await team.router.send(team.caller.id, "Bob", "What is the budget?")
    assert reply == "Bob says: answer to 'What is the budget?'"

    target = team.router.peer_session(team.caller.id, "bob")  # names ignore case
    assert target.agent_id == team.b.id and target.model == "m-b"
    assert target.project_id == team.project.id
    assert target.metadata["peer"] == {
        "caller_session_id": team.caller.id,
        "caller_agent_id": team.a.id,
    }
    delivered, answer = manager.get_history(target.id)
    assert delivered.role == "user" and delivered.text == "What is the budget?"
    assert delivered.from_agent_id == team.a.id and delivered.from_user_id is None
    assert delivered.delivered_to_session_id == target.id
    assert delivered.metadata["peer"]["from_session_id"] == team.caller.id
    assert delivered.metadata["peer"]["from_message_id"] == "call"
    assert answer.text == reply

    # the caller waited as awaiting_peer, naming whom, and got its status back
    assert team.seen == [
        (target.id, "awaiting_peer", f"waiting for agent 'Bob' (session {target.id})")
    ]
    now = manager.get(team.caller.id)
    assert (now.status, now.status_detail) == ("active", "created")
    assert [c.status for c in manager.status_history(team.caller.id)] == [
        "active",
        "awaiting_peer",
        "active",
    ]

    # the hop is recorded and queryable from both sides
    (hop,) = team.router.hops(team.caller.id)
    assert team.router.hops(target.id) == [hop]
    assert hop.direction(team.caller.id) == "out" and hop.direction(target.id) == "in"
    assert (hop.from_session_id, hop.to_session_id, hop.to_agent_id) == (
        team.caller.id,
        target.id,
        team.b.id,
    )
    assert (hop.message_id, hop.reply_message_id, hop.from_message_id) == (
        delivered.id,
        answer.id,
        "call",
    )
    assert hop.state == "replied" and hop.wait is True and hop.finished_at is not None


async def test_second_contact_reuses_the_target_session(team, manager):
    await team.router.send(team.caller.id, "Bob", "one")
    await team.router.send(team.caller.id, "Bob", "two")
    sessions = manager.list(agent_id=team.b.id)
    assert len(sessions) == 1
    assert [m.text for m in manager.get_history(sessions[0].id) if m.role == "user"] == [
        "one",
        "two",
    ]
    # another caller session gets its own session with Bob
    other = manager.create("Other plan", agent_id=team.a.id)
    await team.router.send(other.id, "Bob", "three")
    assert len(manager.list(agent_id=team.b.id)) == 2


async def test_a_failing_peer_gives_error_and_restores_the_caller(team, manager):
    async def broken(session_id):
        raise RuntimeError("model unavailable")

    team.behaviour[team.b.id] = broken
    manager.set_status(team.caller.id, "active", "generating")
    with pytest.raises(PeerError, match="'Bob' could not answer: model unavailable"):
        await team.router.send(team.caller.id, "Bob", "hello?")
    after = manager.get(team.caller.id)
    assert (after.status, after.status_detail) == ("active", "generating")
    (hop,) = team.router.hops(team.caller.id)
    assert hop.state == "failed" and hop.error == "model unavailable"
    assert hop.reply_message_id is None

    tool = message_agent_tool(team.router, team.caller.id, ["Bob"])
    out = await tool(agent="Bob", text="still there?")
    assert out.startswith("Error:") and "model unavailable" in out
    assert manager.get(team.caller.id).status == "active"


async def test_a_peer_that_calls_back_into_the_chain_gets_an_error(team, manager):
    results = {}

    async def bob_asks_alice(session_id):
        tool = message_agent_tool(team.router, session_id, ["Alice", "Cleo"])
        results["loop"] = await tool(agent="Alice", text="what did you mean?")
        results["cleo"] = await tool(agent="Cleo", text="can you help?")
        return "Bob: done"

    async def cleo_asks_bob(session_id):
        tool = message_agent_tool(team.router, session_id, ["Bob"])
        results["deep"] = await tool(agent="Bob", text="and you?")
        return "Cleo: fine"

    team.behaviour[team.b.id] = bob_asks_alice
    team.behaviour[team.c.id] = cleo_asks_bob
    assert (
        await asyncio.wait_for(team.router.send(team.caller.id, "Bob", "plan it"), 5) == "Bob: done"
    )
    assert results["loop"].startswith("Error:") and "already waiting" in results["loop"]
    assert results["cleo"] == "Cleo: fine"  # A→B→C is a chain, not a loop
    assert results["deep"].startswith("Error:") and "'Bob'" in results["deep"]
    # nothing was delivered to Alice: no session of hers was created
    assert manager.list(agent_id=team.a.id) == [manager.get(team.caller.id)]
    assert manager.get(team.caller.id).status == "active"


async def test_messaging_yourself_is_a_loop(team, manager):
    with pytest.raises(PeerLoopError):
        await team.router.send(team.caller.id, "Alice", "hi me")
    assert team.router.hops(team.caller.id) == []
    assert team.seen == []


async def test_max_depth_bounds_a_chain(manager):
    agents = [manager.create_agent(f"agent{i}") for i in range(4)]
    root = manager.create("root", agent_id=agents[0].id)
    errors = []

    async def run_turn(session_id):
        me = manager.get(session_id).agent_id
        index = [a.id for a in agents].index(me)
        if index + 1 < len(agents):
            out = await message_agent_tool(router, session_id, [agents[index + 1].name])(
                agent=agents[index + 1].name, text="pass it on"
            )
            if out.startswith("Error:"):
                errors.append((index, out))
        return f"{me} done"

    router = PeerRouter(manager, run_turn, max_depth=2)
    await router.send(root.id, "agent1", "go")
    assert len(errors) == 1 and errors[0][0] == 2 and "too many agents" in errors[0][1]
    assert manager.list(agent_id=agents[3].id) == []


async def test_wait_false_returns_at_once_and_the_reply_lands_later(team, manager):
    release = asyncio.Event()

    async def slow_bob(session_id):
        await release.wait()
        await manager.append(session_id, reply_msg("late", "Bob: later"))
        return "Bob: later"

    team.behaviour[team.b.id] = slow_bob
    tool = message_agent_tool(team.router, team.caller.id, ["Bob"])
    out = await asyncio.wait_for(tool(agent="Bob", text="no rush", wait=False), 1)
    assert out.startswith("Delivered to Bob") and not out.startswith("Error")
    assert team.router.pending == 1
    assert manager.get(team.caller.id).status == "active"  # never awaiting_peer
    (hop,) = team.router.hops(team.caller.id)
    assert hop.state == "delivered" and hop.wait is False
    release.set()
    await asyncio.wait_for(team.router.drain(), 5)
    assert team.router.pending == 0
    hop = team.router.hop(hop.id)
    assert hop.state == "replied" and hop.reply_message_id == "late"
    assert manager.get_history(hop.to_session_id)[-1].text == "Bob: later"
    assert "awaiting_peer" not in [c.status for c in manager.status_history(team.caller.id)]


async def test_wait_false_failure_is_recorded_not_raised(team, manager):
    async def broken(session_id):
        raise RuntimeError("boom")

    team.behaviour[team.b.id] = broken
    out = await team.router.send(team.caller.id, "Bob", "fire", wait=False)
    assert out.startswith("Delivered")
    await team.router.drain()
    (hop,) = team.router.hops(team.caller.id)
    assert hop.state == "failed" and hop.error == "boom"


@pytest.mark.parametrize("agent", ["Nobody", "", "bob; DROP TABLE agents"])
async def test_unknown_agent_is_refused_and_nothing_delivered(team, manager, agent):
    before = manager.count()
    with pytest.raises(UnknownAgentError):
        await team.router.send(team.caller.id, agent, "hello")
    assert manager.count() == before and team.router.hops(team.caller.id) == []
    assert manager.get(team.caller.id).status == "active"


async def test_archived_agent_is_refused(team, manager):
    manager.archive_agent(team.b.id)
    out = await message_agent_tool(team.router, team.caller.id, ["Bob"])(agent="Bob", text="x")
    assert out.startswith("Error:") and "archived" in out
    assert team.router.hops(team.caller.id) == []


async def test_deleted_or_unknown_caller_is_refused(team, manager):
    manager.delete(team.caller.id)
    with pytest.raises(UnknownSessionError):
        await team.router.send(team.caller.id, "Bob", "hello")
    with pytest.raises(UnknownSessionError):
        await team.router.send("no-such-session", "Bob", "hello")
    assert manager.list(agent_id=team.b.id) == []


@pytest.mark.parametrize("text", ["", "   ", None, 42])
async def test_empty_text_is_refused(team, manager, text):
    with pytest.raises(ValueError):
        await team.router.send(team.caller.id, "Bob", text)
    assert manager.list(agent_id=team.b.id) == []


async def test_a_deleted_target_session_is_replaced(team, manager):
    await team.router.send(team.caller.id, "Bob", "first")
    first = team.router.peer_session(team.caller.id, "Bob")
    manager.delete(first.id)
    await team.router.send(team.caller.id, "Bob", "second")
    second = team.router.peer_session(team.caller.id, "Bob")
    assert second.id != first.id
    assert manager.get_message_count(first.id) == 2  # the deleted one is untouched
    manager.purge(second.id)
    assert team.router.hops(team.caller.id)[0].to_session_id == first.id
    third = team.router.peer_session(team.caller.id, "Bob")
    assert third.id not in (first.id, second.id)


async def test_timeout_and_cancel_restore_the_caller(team, manager):
    async def hangs(session_id):
        await asyncio.sleep(30)

    team.behaviour[team.b.id] = hangs
    router = PeerRouter(manager, team.run_turn, timeout=0.05)
    with pytest.raises(PeerError, match="timed out"):
        await router.send(team.caller.id, "Bob", "hello?")
    assert manager.get(team.caller.id).status == "active"

    task = asyncio.create_task(team.router.send(team.caller.id, "Bob", "hello again?"))
    await asyncio.sleep(0.05)
    assert manager.get(team.caller.id).status == "awaiting_peer"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert manager.get(team.caller.id).status == "active"
    assert [h.error for h in team.router.hops(team.caller.id)] == ["timed out", "cancelled"]


async def test_parallel_calls_from_one_caller_restore_once(team, manager):
    gates = {team.b.id: asyncio.Event(), team.c.id: asyncio.Event()}

    async def gated(session_id):
        await gates[manager.get(session_id).agent_id].wait()
        return "ok"

    team.behaviour.update({team.b.id: gated, team.c.id: gated})
    first = asyncio.create_task(team.router.send(team.caller.id, "Bob", "1"))
    second = asyncio.create_task(team.router.send(team.caller.id, "Cleo", "2"))
    await asyncio.sleep(0.02)
    gates[team.b.id].set()
    await first
    assert manager.get(team.caller.id).status == "awaiting_peer"  # still waiting for Cleo
    gates[team.c.id].set()
    await second
    assert manager.get(team.caller.id).status == "active"


async def test_turns_on_one_target_session_never_overlap(team, manager):
    running = []

    async def bob(session_id):
        running.append(session_id)
        assert running.count(session_id) == 1, "two turns ran at once on one session"
        await asyncio.sleep(0.01)
        running.remove(session_id)
        return "ok"

    team.behaviour[team.b.id] = bob
    await asyncio.gather(*(team.router.send(team.caller.id, "Bob", str(i)) for i in range(3)))
    assert len(team.router.hops(team.caller.id)) == 3


async def test_run_turn_returning_a_non_string_is_an_error(team, manager):
    async def odd(session_id):
        return {"not": "text"}

    team.behaviour[team.b.id] = odd
    with pytest.raises(PeerError, match="not a string"):
        await team.router.send(team.caller.id, "Bob", "x")


async def test_tool_schema_and_bad_model_arguments(team, manager):
    tool = message_agent_tool(team.router, team.caller.id, ["Bob", "Cleo", "Bob"])
    spec = tool.to_openai()
    json.dumps(spec)
    params = spec["function"]["parameters"]
    assert spec["function"]["name"] == "message_agent"
    assert params["properties"]["agent"]["enum"] == ["Bob", "Cleo"]
    assert params["properties"]["wait"] == {
        "type": "boolean",
        "default": True,
        "description": "Wait for the reply (default true).",
    }
    assert params["required"] == ["agent", "text"]
    assert "Knows the budget" in spec["function"]["description"]
    for args in (
        {"agent": "Dave", "text": "x"},
        {"agent": "Bob"},
        {"agent": "Bob", "text": 1},
        {"agent": "Bob", "text": "x", "wait": "yes"},
        {"agent": "Bob", "text": "x", "urgent": True},
        {"agent": "Bob", "text": " "},
    ):
        assert (await tool(**args)).startswith("Error:"), args
    assert team.router.hops(team.caller.id) == []
    assert (await tool.call_json('{"agent": "Bob", "text": "hi"}')).startswith("Bob says")
    with pytest.raises(ValueError):
        message_agent_tool(team.router, team.caller.id, [])


async def test_a_caller_without_an_agent_can_ask(manager):
    bob = manager.create_agent("Bob")
    chat = manager.create("ad hoc chat")

    async def run_turn(session_id):
        return "hi"

    router = PeerRouter(manager, run_turn)
    assert await router.send(chat.id, "Bob", "hello") == "hi"
    delivered = manager.get_history(router.peer_session(chat.id, "Bob").id)[0]
    assert delivered.from_agent_id is None and delivered.from_user_id is None
    assert router.hops(chat.id)[0].to_agent_id == bob.id
