"""MCP tool servers through the whole headless path: the workspace starts real servers
from PyPI (`mcp-server-time`, `mcp-server-git`) and a small faulty one
(tests/mcp_faulty_server.py); the scripted OpenAI-compatible server issues the tool
calls through LiteLLM's real client; results are tool messages on the branch."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chatui.core.config import Config, ConfigError, load_config
from chatui.core.events import MessageStored, ReplyFinished
from chatui.core.workspace import Answer, ToolApproval, ToolsChanged, Workspace
from chatui.mcp.settings import McpServer
from tests import llm_server as script

from .app_helpers import wait_until

BIN = Path(sys.executable).parent
FAULTY = str(Path(__file__).with_name("mcp_faulty_server.py"))


def time_server(**kw) -> McpServer:
    return McpServer(
        "time", command=str(BIN / "mcp-server-time"), args=("--local-timezone", "UTC"), **kw
    )


def faulty_server(**kw) -> McpServer:
    kw.setdefault("approval", "always")
    return McpServer("faulty", command=sys.executable, args=(FAULTY,), **kw)


def make_workspace(store, llm_server, *servers: McpServer, **config) -> Workspace:
    settings = dict(
        model="openai/test-model",
        api_base=llm_server.base_url,
        request_timeout=10.0,
        max_retries=0,
        mcp=servers,
    )
    settings.update(config)
    return Workspace(store, Config(**settings))


async def started(ws: Workspace) -> Workspace:
    ws.start_tools()
    assert await ws.tools.wait_ready(30), [(s.name, s.problem) for s in ws.tool_servers(None)]
    return ws


async def turn(ws: Workspace, sid: str, text: str, events: list | None = None) -> list:
    heard: list = [] if events is None else events
    unsubscribe = ws.subscribe(heard.append)
    try:
        ws.start_reply(sid, "send", text=text)
        await ws.wait_for_replies(sid)
    finally:
        unsubscribe()
    return heard


def tool_results(events) -> list[dict]:
    return [
        part
        for e in events
        if isinstance(e, MessageStored) and e.message.role == "tool"
        for part in e.message.tool_results
    ]


@pytest.fixture
async def closing():
    made: list[Workspace] = []
    yield made.append
    for ws in made:
        await ws.shutdown()


# -- config ---------------------------------------------------------------------------


def test_the_issues_config_reads_as_written(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(
        "[mcp.servers.time]\n"
        'command = "mcp-server-time"\n'
        'args = ["--local-timezone", "UTC"]\n'
        'approval = "always"\n'
        "[mcp.servers.time.tools]\n"
        'convert_time = "ask"\n'
        "[mcp.servers.web]\n"
        'url = "https://example.test/mcp"\n'
        'headers = { Authorization = "Bearer ${WEB_TOKEN}" }\n'
        "timeout = 5\n"
    )
    config = load_config(path)
    time_cfg, web = config.mcp
    assert time_cfg.command == "mcp-server-time" and time_cfg.args == ("--local-timezone", "UTC")
    assert time_cfg.approval_for("get_current_time") == "always"
    assert time_cfg.approval_for("convert_time") == "ask"
    assert web.url == "https://example.test/mcp" and web.timeout == 5.0
    assert web.approval_for("anything") == "ask"  # the default
    assert "WEB_TOKEN" not in repr(web)  # headers stay out of reprs (and logs)


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        ('[mcp.servers.x]\nargs = ["a"]\n', "needs either command"),
        ('[mcp.servers.x]\ncommand = "a"\nurl = "http://h/mcp"\n', "needs either command"),
        ('[mcp.servers.x]\ncommand = "a"\napproval = "sometimes"\n', "approval must be one of"),
        ('[mcp.servers.x]\ncommand = "a"\n[mcp.servers.x.tools]\nt = "yes"\n', "tools.t"),
        ('[mcp.servers.x]\ncommand = "a"\ntimeout = -1\n', "timeout must be a positive number"),
        ('[mcp.servers.x]\ncommand = "a"\nenvv = {}\n', "unknown setting 'envv'"),
        ('[mcp.servers."a__b"]\ncommand = "a"\n', "single '_'"),
        ('[mcp.servers.x]\nurl = "ftp://h"\n', "http:// or https://"),
        ('[mcp.servers.x]\ncommand = "a"\nargs = "a b"\n', "args must be a list"),
        ('[mcp.servers.x]\ncommand = "a"\nenv = { A = 1 }\n', "env must be a table of strings"),
        ('[mcp.servers.x]\nurl = "http://h/mcp"\nheaders = "x"\n', "headers must be a table"),
        ("[mcp]\nserver = {}\n", "unknown setting 'server'"),
    ],
)
def test_a_bad_server_table_is_one_clear_line(tmp_path, toml, says):
    path = tmp_path / "config.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert says in str(caught.value) and str(path) in str(caught.value)


# -- listing and calling --------------------------------------------------------------


async def test_time_server_tools_join_the_chat_and_count_in_the_gauge(
    store, llm_server, fake_key, closing
):
    ws = make_workspace(store, llm_server, time_server(approval="always"))
    closing(ws)
    sid = ws.create_chat("t", model="openai/test-model").id
    before = await ws.facts(sid)  # not started: no MCP tool, and no wait for one
    assert not any("__" in t.name for t in before.measured.request.tools)
    changed: list = []
    ws.subscribe(changed.append)
    await started(ws)
    assert any(isinstance(e, ToolsChanged) and e.server == "time" for e in changed)
    after = await ws.facts(sid)
    names = [t.name for t in after.measured.request.tools]
    assert "time__get_current_time" in names and "time__convert_time" in names
    assert after.measured.usage.tools > before.measured.usage.tools  # the gauge counts them

    llm_server.script(
        script.tool_calls(("c1", "time__get_current_time", {"timezone": "Europe/Lisbon"})),
        script.text("It is evening in Lisbon."),
    )
    events = await turn(ws, sid, "what time is it in Lisbon?")
    sent = [t["function"]["name"] for t in llm_server.requests[0]["tools"]]
    assert "time__convert_time" in sent and "set_context" in sent  # beside the memory tools
    (result,) = tool_results(events)
    assert result["tool_call_id"] == "c1" and not result.get("is_error")
    assert "Europe/Lisbon" in result["output"] and "datetime" in result["output"]
    back = llm_server.requests[1]["messages"][-1]
    assert back["role"] == "tool" and "Europe/Lisbon" in back["content"]
    finals = [e for e in events if isinstance(e, ReplyFinished)]
    assert [f.status for f in finals] == ["tool_calls", "complete"]


async def test_git_server_reads_a_temporary_repository(
    store, llm_server, fake_key, closing, tmp_path
):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    run = lambda *a: subprocess.run(["git", *a], cwd=repo, check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    (repo / "notes.txt").write_text("first\n")
    run("add", "notes.txt")
    run("-c", "user.name=T", "-c", "user.email=t@example.test", "commit", "-qm", "Add the notes")
    git = McpServer(
        "git",
        command=str(BIN / "mcp-server-git"),
        args=("--repository", str(repo)),
        approval="always",
    )
    ws = make_workspace(store, llm_server, git)
    closing(ws)
    await started(ws)
    sid = ws.create_chat("g", model="openai/test-model").id
    llm_server.script(
        script.tool_calls(("c1", "git__git_log", {"repo_path": str(repo), "max_count": 5})),
        script.text("One commit."),
    )
    (result,) = tool_results(await turn(ws, sid, "what is in the log?"))
    assert "Add the notes" in result["output"] and not result.get("is_error")


# -- approval ---------------------------------------------------------------------------


def answering(ws: Workspace, *answers: Answer) -> list[ToolApproval]:
    """Answer each approval request in turn, as the dialog would; returns the requests."""
    asked: list[ToolApproval] = []
    queue = list(answers)

    def heard(event) -> None:
        if isinstance(event, ToolApproval):
            asked.append(event)
            event.answer(queue.pop(0))

    ws.subscribe(heard)
    return asked


async def test_ask_y_runs_once_and_asks_again_next_time(store, llm_server, fake_key, closing):
    ws = await started(make_workspace(store, llm_server, faulty_server(approval="ask")))
    closing(ws)
    sid = ws.create_chat("a", model="openai/test-model").id
    asked = answering(ws, Answer("once"), Answer("once"))
    for word in ("one", "two"):
        llm_server.script(script.tool_calls(("faulty__echo", {"text": word})), script.text("ok"))
        (result,) = tool_results(await turn(ws, sid, f"say {word}"))
        assert result["output"] == word
    assert [(a.name, a.arguments) for a in asked] == [
        ("faulty__echo", {"text": "one"}),
        ("faulty__echo", {"text": "two"}),
    ]
    assert '"text": "one"' in asked[0].arguments_text


async def test_ask_a_allows_the_tool_for_good_in_this_chat_only(
    store, llm_server, fake_key, closing
):
    ws = await started(make_workspace(store, llm_server, faulty_server(approval="ask")))
    closing(ws)
    sid = ws.create_chat("a", model="openai/test-model").id
    other = ws.create_chat("b", model="openai/test-model").id
    asked = answering(ws, Answer("always"), Answer("once"))
    for word in ("one", "two"):
        llm_server.script(script.tool_calls(("faulty__echo", {"text": word})), script.text("ok"))
        await turn(ws, sid, word)
    assert len(asked) == 1  # the second call ran without asking
    assert ws.chat(sid).metadata["mcp_allowed"] == ["faulty__echo"]  # remembered in the chat
    llm_server.script(script.tool_calls(("faulty__echo", {"text": "x"})), script.text("ok"))
    await turn(ws, other, "x")
    assert len(asked) == 2  # another chat still asks


async def test_ask_n_refuses_with_the_reason_the_model_reads(store, llm_server, fake_key, closing):
    ws = await started(make_workspace(store, llm_server, faulty_server(approval="ask")))
    closing(ws)
    sid = ws.create_chat("a", model="openai/test-model").id
    answering(ws, Answer("refuse", "not on a Sunday"))
    llm_server.script(script.tool_calls(("faulty__echo", {"text": "hi"})), script.text("Fine."))
    events = await turn(ws, sid, "echo hi")
    (result,) = tool_results(events)
    assert result["is_error"] and "refused" in result["output"]
    assert "not on a Sunday" in result["output"]
    assert "not on a Sunday" in llm_server.requests[1]["messages"][-1]["content"]
    assert [e.status for e in events if isinstance(e, ReplyFinished)][-1] == "complete"


async def test_never_and_per_tool_rules_over_the_servers(store, llm_server, fake_key, closing):
    server = faulty_server(approval="always", tools={"echo": "never", "env_names": "ask"})
    ws = await started(make_workspace(store, llm_server, server))
    closing(ws)
    sid = ws.create_chat("a", model="openai/test-model").id
    asked = answering(ws, Answer("always"))
    llm_server.script(
        script.tool_calls(("faulty__echo", {"text": "hi"}), ("faulty__env_names", {})),
        script.text("ok"),
    )
    never, env = tool_results(await turn(ws, sid, "go"))
    assert never["is_error"] and "approval = never" in never["output"]
    assert [a.tool for a in asked] == ["env_names"] and not env.get("is_error")


# -- security -------------------------------------------------------------------------


async def test_a_server_gets_only_the_environment_its_config_names(
    store, llm_server, fake_key, closing, monkeypatch
):
    monkeypatch.setenv("GIVEN_TOKEN", "tok-123456")
    monkeypatch.setenv("NOT_GIVEN_SECRET", "hush-123456")
    server = faulty_server(env={"MY_TOKEN": "${GIVEN_TOKEN}"})
    ws = await started(make_workspace(store, llm_server, server))
    closing(ws)
    sid = ws.create_chat("a", model="openai/test-model").id
    llm_server.script(script.tool_calls(("faulty__env_names", {})), script.text("ok"))
    (result,) = tool_results(await turn(ws, sid, "env?"))
    names = set(result["output"].split())
    assert "MY_TOKEN" in names and "PATH" in names
    assert not {"OPENAI_API_KEY", "NOT_GIVEN_SECRET", "GIVEN_TOKEN", "CHATUI_HOME"} & names


async def test_tool_output_is_cleaned_of_escape_sequences(store, llm_server, fake_key, closing):
    ws = await started(make_workspace(store, llm_server, faulty_server()))
    closing(ws)
    sid = ws.create_chat("a", model="openai/test-model").id
    llm_server.script(script.tool_calls(("faulty__escapes", {})), script.text("ok"))
    (result,) = tool_results(await turn(ws, sid, "go"))
    assert "\x1b" not in result["output"] and "\x07" not in result["output"]
    assert "red text and a title  bell done" == result["output"]


# -- faults -----------------------------------------------------------------------------


async def test_a_server_crashing_mid_call_is_a_result_and_it_comes_back(
    store, llm_server, fake_key, closing
):
    ws = await started(make_workspace(store, llm_server, faulty_server()))
    closing(ws)
    sid = ws.create_chat("a", model="openai/test-model").id
    llm_server.script(script.tool_calls(("faulty__crash", {})), script.text("It crashed."))
    events = await turn(ws, sid, "crash it")
    (result,) = tool_results(events)
    assert result["is_error"] and "stopped during the call" in result["output"]
    assert [e.status for e in events if isinstance(e, ReplyFinished)][-1] == "complete"
    connection = ws.tools.connections["faulty"]
    # restarted in the background
    await wait_until(None, lambda: connection.starts >= 2 and connection.state == "ready")
    llm_server.script(script.tool_calls(("faulty__echo", {"text": "back"})), script.text("ok"))
    (again,) = tool_results(await turn(ws, sid, "again"))
    assert again["output"] == "back"


async def test_a_server_that_never_answers_times_out_as_a_result(
    store, llm_server, fake_key, closing
):
    ws = await started(make_workspace(store, llm_server, faulty_server(timeout=1.0)))
    closing(ws)
    sid = ws.create_chat("a", model="openai/test-model").id
    llm_server.script(script.tool_calls(("faulty__hang", {})), script.text("It hung."))
    events = await turn(ws, sid, "hang")
    (result,) = tool_results(events)
    assert result["is_error"] and "did not answer hang within 1 s" in result["output"]
    assert [e.status for e in events if isinstance(e, ReplyFinished)][-1] == "complete"


async def test_a_hung_call_is_cancelled_like_a_reply(store, llm_server, fake_key, closing):
    ws = await started(make_workspace(store, llm_server, faulty_server()))
    closing(ws)
    sid = ws.create_chat("a", model="openai/test-model").id
    llm_server.script(script.tool_calls(("c1", "faulty__hang", {})), script.text("never sent"))
    events: list = []
    ws.subscribe(events.append)
    ws.start_reply(sid, "send", text="hang")
    # the model asked; the call is in flight
    await wait_until(
        None, lambda: any(isinstance(e, ReplyFinished) and e.status == "tool_calls" for e in events)
    )
    await asyncio.sleep(0.1)
    assert ws.cancel_reply(sid)
    await ws.wait_for_replies(sid)
    chat = ws.open(sid)
    path = chat.session.get_history()
    assert path[-1].role == "tool"
    (result,) = path[-1].tool_results
    assert result["tool_call_id"] == "c1" and "stopped this call" in result["output"]
    assert len(llm_server.requests) == 1  # nothing more was asked of the model


async def test_a_server_missing_at_launch_leaves_the_chat_working(
    store, llm_server, fake_key, closing
):
    missing = McpServer("gone", command="chatui-no-such-mcp-server", approval="always")
    nowhere = McpServer("nowhere", command=sys.executable, args=(FAULTY,), cwd="/no/such/dir")
    ws = make_workspace(store, llm_server, missing, nowhere, time_server(approval="always"))
    closing(ws)
    ws.start_tools()
    assert await ws.tools.connections["time"].wait_ready(30)
    gone, lost_one = ws.tools.connections["gone"], ws.tools.connections["nowhere"]
    await wait_until(None, lambda: gone.state == "failed" and lost_one.state == "failed")
    (status,) = [s for s in ws.tool_servers(None) if s.name == "gone"]
    assert status.state == "failed" and "not found" in status.problem
    lost = ws.tool_servers(None)[1]
    assert lost.state == "failed" and "cwd = '/no/such/dir'" in lost.problem
    sid = ws.create_chat("a", model="openai/test-model").id
    llm_server.script(script.tool_calls(("c1", "gone__anything", {})), script.text("No luck."))
    events = await turn(ws, sid, "use it")
    (result,) = tool_results(events)
    assert result["is_error"] and "unknown tool 'gone__anything'" in result["output"]
    assert "time__get_current_time" in result["output"]  # what is there instead
    assert [e.status for e in events if isinstance(e, ReplyFinished)][-1] == "complete"


# -- per chat -------------------------------------------------------------------------


async def test_a_server_turned_off_in_a_chat_is_off_there_only(
    store, llm_server, fake_key, closing
):
    ws = await started(make_workspace(store, llm_server, time_server(approval="always")))
    closing(ws)
    one = ws.create_chat("one", model="openai/test-model").id
    two = ws.create_chat("two", model="openai/test-model").id
    ws.set_tool_server(one, "time", False)
    names = lambda sid: [t.name for t in facts.measured.request.tools]  # noqa: E731
    facts = await ws.facts(one)
    assert not any(n.startswith("time__") for n in names(one))
    facts = await ws.facts(two)
    assert any(n.startswith("time__") for n in names(two))
    assert ws.chat(one).metadata["mcp_off"] == ["time"]
    (status,) = ws.tool_servers(one)
    assert not status.enabled and status.state == "ready"
    # Remembered: a new workspace on the same database reads it back.
    again = make_workspace(store, llm_server, time_server(approval="always"))
    closing(again)
    assert not again.tool_servers(one)[0].enabled


# -- streamable HTTP ------------------------------------------------------------------


@pytest.fixture
def http_server():
    """tests/mcp_faulty_server.py over streamable HTTP on a port the system picked."""
    token = "s3cret-header-token-0123"
    process = subprocess.Popen(
        [sys.executable, FAULTY, "--http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**__import__("os").environ, "EXPECT_TOKEN": token},
    )
    assert process.stdout is not None
    port = int(process.stdout.readline())
    yield f"http://127.0.0.1:{port}/mcp", token
    process.terminate()
    process.wait(10)


async def test_a_streamable_http_server_with_a_secret_header(
    store, llm_server, fake_key, closing, http_server, monkeypatch
):
    url, token = http_server
    monkeypatch.setenv("WEB_TOKEN", token)
    good = McpServer(
        "web", url=url, headers={"Authorization": "Bearer ${WEB_TOKEN}"}, approval="always"
    )
    bad = McpServer("nokey", url=url, headers={"Authorization": "Bearer wrong-but-secret-99"})
    ws = make_workspace(store, llm_server, good, bad)
    closing(ws)
    ws.start_tools()
    assert await ws.tools.connections["web"].wait_ready(30)
    refused = ws.tools.connections["nokey"]
    await wait_until(None, lambda: refused.state == "failed")
    assert refused.state == "failed" and refused.problem
    assert "wrong-but-secret-99" not in refused.problem  # a header's value is never shown
    sid = ws.create_chat("h", model="openai/test-model").id
    llm_server.script(script.tool_calls(("web__echo", {"text": "over http"})), script.text("ok"))
    (result,) = tool_results(await turn(ws, sid, "echo over http"))
    assert result["output"] == "over http"
    await ws.shutdown()
    stored = b"".join(p.read_bytes() for p in Path(store.path).parent.glob("*.db*"))
    assert token.encode() not in stored and b"wrong-but-secret" not in stored


# -- prompts and resources ----------------------------------------------------------------


async def test_prompts_fill_and_resources_attach_like_files(store, llm_server, fake_key, closing):
    from chatui.core.workspace import AttachRefused

    ws = await started(make_workspace(store, llm_server, faulty_server()))
    closing(ws)
    assert ws.tool_prompts(None) == [("faulty", "review", "Review some code")]
    assert ws.prompt_arguments("faulty", "review") == [("code", True)]
    text = await ws.fill_prompt("faulty", "review", {"code": "x = 1"})
    assert text == "Please review this code:\nx = 1"
    ((server, uri, name, _description),) = ws.tool_resources(None)
    assert (server, uri, name) == ("faulty", "note://hello", "hello")
    attached = await ws.attach_resource(server, uri, name)
    assert attached.name == "hello" and attached.mime == "text/plain"
    with pytest.raises(AttachRefused, match="note://nothing"):
        await ws.attach_resource("faulty", "note://nothing", "nothing")
    with pytest.raises(AttachRefused, match="no MCP server named 'gone'"):
        await ws.attach_resource("gone", "note://hello", "hello")
    with pytest.raises(RuntimeError):
        await ws.fill_prompt("faulty", "no-such-prompt", {})
