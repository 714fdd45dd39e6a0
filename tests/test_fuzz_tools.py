"""Any arguments a model could send to any store tool: an `Error:` answer that changed
nothing, or a whole, valid write — never an exception, never half a write.

Every tool the store offers is exercised on one session that has each kind of block
(writable with a budget, read-only, searchable, skills in the store, skills in a folder)
plus `session_search` from the manager; `message_agent` (peer messages) has its own
property below, with a `run_turn` that plays the other agent as the app's engine would.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from store import (
    DirectorySkillProvider,
    PeerRouter,
    Session,
    SessionManager,
    StaticProvider,
    Store,
    StoreSearchProvider,
    StoreSkillProvider,
    message_agent_tool,
)

LABELS = ["memory", "soul", "notes", "skills", "docs"]
TABLES = {
    "context_blocks": "SELECT namespace, label, content FROM context_blocks",
    "search_entries": "SELECT namespace, key, content FROM search_entries",
    "search_fts": "SELECT rowid, content FROM search_entries_fts",
    "skills": "SELECT namespace, key, content, description FROM skills",
    "loaded_skills": "SELECT * FROM loaded_skills",
    "messages": "SELECT session_id, id, parent_id, content FROM messages",
    "messages_fts": "SELECT rowid, body FROM messages_fts",
    "prompts": "SELECT * FROM prompts",
}


def build(store: Store, folder: Path, sid: str = "chat") -> Session:
    return (
        Session(store)
        .for_session(sid)
        .with_context("soul", provider=StaticProvider("Be kind."))
        .with_context("memory", description="Facts", max_tokens=60)
        .with_context("notes", provider=StoreSearchProvider(store, f"{sid}/notes"))
        .with_context("skills", provider=StoreSkillProvider(store, f"{sid}/skills"))
        .with_context("docs", provider=DirectorySkillProvider(folder / "skills"))
    )


def snapshot(store: Store, root: Path) -> dict[str, Any]:
    state: dict[str, Any] = {
        name: sorted(map(repr, store.query(sql))) for name, sql in TABLES.items()
    }
    state["files"] = sorted(
        (str(p.relative_to(root)), hashlib.sha1(p.read_bytes()).hexdigest())
        for p in root.rglob("*")
        if p.is_file() and not p.name.startswith("db")
    )
    return state


def changed(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    return {name for name in before if before[name] != after[name]}


# A model's JSON: any shape, with the names tools know and some they do not.
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=80)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
huge = st.sampled_from(["x" * 300_000, "word " * 20_000, "\x00\x1b]52;c;AAAA\x07" * 1000])
names = st.sampled_from(
    [
        "label",
        "content",
        "action",
        "metadata",
        "key",
        "query",
        "limit",
        "self",
        "arguments",
        "",
        "label ",
        "Label",
        "__class__",
    ]
)
values = (
    json_values
    | huge
    | st.sampled_from(LABELS + ["ghost", "", "MEMORY", "../x"])
    | st.sampled_from(["replace", "append", "delete"])
    | st.fixed_dictionaries(
        {}, optional={"title": json_values, "description": json_values, "extra": json_values}
    )
)
TOOL_NAMES = ["set_context", "load_context", "unload_context", "search_context", "session_search"]


texts = st.text(max_size=120) | huge
VALID: dict[str, Any] = {
    "set_context": st.fixed_dictionaries(
        {"label": st.sampled_from(["memory", "notes", "skills", "docs"]), "content": texts},
        optional={
            "action": st.sampled_from(["replace", "append"]),
            "metadata": st.fixed_dictionaries(
                {}, optional={"title": st.text(max_size=40), "description": st.text(max_size=40)}
            ),
        },
    ),
    "load_context": st.fixed_dictionaries(
        {
            "label": st.sampled_from(["skills", "docs"]),
            "key": st.sampled_from(
                [
                    "deploy",
                    "review",
                    "../secret",
                    "/etc/passwd",
                    "secret",
                    ".hidden",
                    "review.md",
                    "",
                    "skills/../secret",
                ]
            )
            | st.text(max_size=20),
        }
    ),
    "unload_context": st.fixed_dictionaries(
        {"label": st.sampled_from(["skills", "docs"]), "key": st.sampled_from(["deploy", "review"])}
    ),
    "search_context": st.fixed_dictionaries(
        {"label": st.just("notes"), "query": st.text(max_size=60) | huge}
    ),
    "session_search": st.fixed_dictionaries(
        {"query": st.text(max_size=60)}, optional={"limit": st.integers(1, 50)}
    ),
}


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A tool and its arguments: a well-formed call bent 0-2 ways, or anything at all."""
    tool = draw(st.sampled_from(TOOL_NAMES))
    if draw(st.integers(0, 4)) == 0:
        return tool, draw(st.dictionaries(names, values, max_size=5))
    args = draw(VALID[tool])
    for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
        how = draw(st.sampled_from(["drop", "retype", "extra"]))
        if how == "extra" or not args:
            args[draw(names)] = draw(values)
        elif how == "drop":
            args.pop(draw(st.sampled_from(sorted(args))))
        else:
            args[draw(st.sampled_from(sorted(args)))] = draw(values)
    return tool, args


async def seed(store: Store, folder: Path) -> tuple[Session, Session, dict[str, Any]]:
    session, other = build(store, folder), build(store, folder, "other-chat")
    await session.replace_context_block("memory", "base fact")
    await other.replace_context_block("memory", "someone else's fact")
    await StoreSearchProvider(store, "chat/notes").set("k1", "the pool is exhausted")
    await StoreSkillProvider(store, "chat/skills").set("deploy", "Step 1. Step 2.", "Deploy")
    (folder / "skills").mkdir(exist_ok=True)
    (folder / "skills" / "review.md").write_text("# Review\nLook twice.")
    (folder / "secret.md").write_text("outside the skills folder")
    manager = SessionManager(store)
    tools = dict(await session.tools())
    tools.update(manager.tools())
    assert set(tools) == set(TOOL_NAMES)
    assert (await tools["load_context"](label="skills", key="deploy")).startswith("Step 1")
    return session, other, tools


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(call=calls(), as_json=st.booleans())
async def test_any_arguments_to_any_tool(tmp_path_factory, call, as_json):
    tool, args = call
    root = tmp_path_factory.mktemp("fuzz")
    with Store(root / "db.sqlite") as store:
        session, other, tools = await seed(store, root)
        before = snapshot(store, root)
        if as_json:
            out = await tools[tool].call_json(json.dumps(args))
        else:
            out = await tools[tool](**args)
        after = snapshot(store, root)
        assert isinstance(out, str)
        diff = changed(before, after)
        event(f"{tool}: {'error' if out.startswith('Error:') else 'ok'}")
        if out.startswith("Error:"):
            assert diff == set(), (out, diff)  # nothing half-written
            return
        # A valid call: what it wrote is exactly what it was asked to write.
        assert (
            build(store, root, "other-chat").get_context_block("memory").content
            == "someone else's fact"
        )
        assert (root / "secret.md").read_text() == "outside the skills folder"
        label = args.get("label")
        if tool == "set_context":
            content = args["content"]
            assert isinstance(content, str) and label in ("memory", "notes", "skills", "docs")
            if label == "memory":
                block = build(store, root).get_context_block("memory").content
                if args.get("action") == "append":
                    assert block.startswith("base fact") and block.endswith(content)
                else:
                    assert block == content
                assert diff <= {"context_blocks"}
            elif label == "notes":
                assert diff <= {"search_entries", "search_fts"}
                assert content in [
                    r[1]
                    for r in store.query(
                        "SELECT key, content FROM search_entries WHERE namespace = 'chat/notes'"
                    )
                ]
            elif label == "skills":
                assert diff <= {"skills"}
            else:
                assert diff <= {"files"}
                written = set(after["files"]) - set(before["files"])
                assert len(written) == 1, written
                ((name, _),) = written  # one file, directly inside the skills folder
                assert name.startswith("skills/") and name.count("/") == 1, name
                assert (
                    name.endswith(".md") and content in (root / name).read_bytes().decode()
                )  # as written: no newline translation
        elif tool == "load_context":
            assert diff <= {"loaded_skills"} and label in ("skills", "docs")
            assert args["key"] in ("deploy", "review")  # nothing outside the folder loads
        elif tool == "unload_context":
            assert (label, args["key"]) == ("skills", "deploy")  # the one that was loaded
            assert diff <= {"loaded_skills", "messages", "messages_fts"}
        else:  # searches only read
            assert diff == set(), (tool, diff)


async def test_self_as_an_argument_name_is_an_error(tmp_path):
    """`self` is a name a model may well send; it must not collide with Python's own."""
    with Store(tmp_path / "db.sqlite") as store:
        _, _, tools = await seed(store, tmp_path)
        for name, tool in tools.items():
            out = await tool.call_json('{"self": 1, "label": "memory", "content": "x"}')
            assert out.startswith("Error:"), (name, out)


async def test_unload_after_load_restores_nothing_but_the_note(tmp_path):
    with Store(tmp_path / "db.sqlite") as store:
        session, _, tools = await seed(store, tmp_path)
        doc = await tools["load_context"](label="docs", key="review")
        assert doc.startswith("# Review")
        assert (await tools["unload_context"](label="docs", key="review")).startswith("Unloaded")
        for bad in (
            {"label": "docs", "key": "review"},
            {"label": "docs", "key": 5},
            {"label": "skills", "key": "review"},
        ):
            assert (await tools["unload_context"](**bad)).startswith("Error:")


# -- message_agent ------------------------------------------------------------------------------

PEER_TABLES = {
    "messages": "SELECT session_id, id, parent_id, content FROM messages",
    "sessions": "SELECT id, status, agent_id FROM sessions",
    "peer_hops": "SELECT id, to_session_id, message_id, state FROM peer_hops",
    "peer_links": "SELECT * FROM peer_links",
}


@st.composite
def peer_calls(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly a well-formed call (to Bob, the one allowed agent), sometimes anything."""
    if draw(st.integers(0, 3)) == 0:
        return draw(
            st.dictionaries(
                st.sampled_from(["agent", "text", "wait", "self", "x"]), values, max_size=4
            )
        )
    args: dict[str, Any] = {
        "agent": draw(st.just("Bob") | st.sampled_from(["bob", "Alice", "ghost", ""])),
        "text": draw(st.text(min_size=1, max_size=80) | huge | st.just("  ")),
    }
    if draw(st.booleans()):
        args["wait"] = draw(st.booleans() | values)
    return args


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(args=peer_calls(), as_json=st.booleans())
async def test_any_arguments_to_message_agent(tmp_path_factory, args, as_json):
    root = tmp_path_factory.mktemp("peer")
    with Store(root / "db.sqlite") as store:
        manager = SessionManager(store)
        alice = manager.create_agent("Alice")
        bob = manager.create_agent("Bob")
        caller = manager.create("Plan", agent_id=alice.id)

        async def run_turn(session_id: str) -> str:  # Bob answers, as the engine would
            n = manager.get_message_count(session_id)
            await manager.append(
                session_id,
                {
                    "id": f"r{n}",
                    "role": "assistant",
                    "parts": [{"type": "text", "text": "Bob: ok"}],
                },
            )
            return "Bob: ok"

        router = PeerRouter(manager, run_turn)
        tool = message_agent_tool(router, caller.id, ["Bob"])
        before = {k: sorted(map(repr, store.query(q))) for k, q in PEER_TABLES.items()}
        out = await (tool.call_json(json.dumps(args)) if as_json else tool(**args))
        await asyncio.gather(*router._tasks)  # a wait=false turn finishes before checking
        after = {k: sorted(map(repr, store.query(q))) for k, q in PEER_TABLES.items()}
        assert isinstance(out, str)
        event(f"message_agent: {'error' if out.startswith('Error:') else 'ok'}")
        if out.startswith("Error:"):
            assert after == before, out  # nothing delivered, no session made, no hop
            return
        assert args["agent"].strip().lower() == "bob" and args["text"].strip()
        target = router.peer_session(caller.id, "Bob")
        assert target.agent_id == bob.id
        delivered, answer = manager.get_history(target.id)
        assert delivered.text == args["text"] and delivered.from_agent_id == alice.id
        assert answer.text == "Bob: ok"
        assert manager.get_message_count(caller.id) == 0  # the caller's chat is the app's
        hops = store.query("SELECT state FROM peer_hops")
        assert hops == [("replied",)]
        assert manager.get(caller.id).status == "active"  # its status came back
