"""`chatui ask`: one turn from the shell, end to end through LiteLLM's real client
against the scripted server (tests/llm_server.py).

Most tests run the command in this process (`main([...])`, LiteLLM imported once);
what needs a real process (a pipe in, a reader that goes away, a terminal, the
console script's `chatui "…"`) runs `chatui` as one.
"""

from __future__ import annotations

import io
import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from chatui.cli import ask as ask_module
from chatui.cli import main
from chatui.cli.ask_client import frame, socket_path, stamp
from chatui.core import paths
from store import SessionManager, Store, reply_state
from tests.llm_server import LLMServer, context_length_error, error, text

from .app_helpers import wait_until_sync

ROOT = Path(__file__).resolve().parent.parent
CHATUI = Path(sys.executable).with_name("chatui")


@pytest.fixture
def server():
    """The scripted server, and the config that sends every model to it."""
    s = LLMServer().start()
    write_config(s.base_url)
    yield s
    s.stop()


def write_config(api_base: str, extra: str = "") -> None:
    paths.config_dir().mkdir(parents=True, exist_ok=True)
    paths.config_file().write_text(
        f'model = "test-model"\napi_base = "{api_base}"\nmax_retries = 0\n{extra}'
    )


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for name in list(os.environ):
        if name.endswith("_API_KEY"):
            monkeypatch.delenv(name)


def ask(capsys, monkeypatch, *argv, stdin: bytes | None = None):
    """`chatui ask ARGV` in this process; `stdin`: bytes piped in (None: a terminal)."""
    monkeypatch.setattr(ask_module, "_stdin", lambda: io.BytesIO(stdin) if stdin else None)
    code = main(["ask", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def chats() -> list:
    if not paths.default_db().exists():
        return []
    with Store(paths.default_db()) as store:
        return SessionManager(store).list()


def tree(chat_id: str) -> list:
    with Store(paths.default_db()) as store:
        return SessionManager(store).get_session(chat_id).get_tree()


# -- the prompt and where it goes -------------------------------------------------------


def test_a_prompt_from_the_arguments_streams_to_stdout_and_is_stored(capsys, monkeypatch, server):
    server.script(text("Lisbon is **lovely** in May."))
    code, out, err = ask(capsys, monkeypatch, "where", "to go?")
    assert (code, out, err) == (0, "Lisbon is **lovely** in May.\n", "")
    assert server.messages()[-1] == {"role": "user", "content": "where to go?"}
    assert server.messages()[0]["role"] == "system"  # the app's prompt: soul and memory
    [info] = chats()
    assert info.name == "where to go?" and info.model == "test-model"
    user, reply = tree(info.id)
    assert user.text == "where to go?" and reply.text == "Lisbon is **lovely** in May."
    assert reply.parent_id == user.id and reply_state(reply) == "complete"


def test_a_chat_asked_in_markdown_is_named_as_it_reads(capsys, monkeypatch, server):
    server.script(text("Because."))
    code, _, _ = ask(capsys, monkeypatch, "## **Why** does `pip` fail?")
    assert code == 0
    [info] = chats()
    assert info.name == "Why does pip fail?"
    [user] = [m for m in tree(info.id) if m.role == "user"]
    assert user.text == "## **Why** does `pip` fail?"  # stored as written


def test_piped_text_comes_first_then_the_words(capsys, monkeypatch, server):
    server.script(text("It failed on line 2."))
    code, out, _ = ask(capsys, monkeypatch, "summarise", stdin=b"line 1 ok\nline 2 FAILED\n")
    assert code == 0 and out == "It failed on line 2.\n"
    assert server.messages()[-1]["content"] == "line 1 ok\nline 2 FAILED\n\nsummarise"
    assert [c.name for c in chats()] == ["summarise"]  # named by the words, not the file
    server.script(text("Two lines."))
    code, out, _ = ask(capsys, monkeypatch, stdin=b"only piped")
    assert code == 0 and server.messages()[-1]["content"] == "only piped"


def test_continue_the_last_chat(capsys, monkeypatch, server):
    server.script(text("First answer."), text("Second answer."))
    assert ask(capsys, monkeypatch, "first question")[0] == 0
    code, out, _ = ask(capsys, monkeypatch, "-c", "and then?")
    assert code == 0 and out == "Second answer.\n"
    assert [m["content"] for m in server.messages()[1:]] == [
        "first question",
        "First answer.",
        "and then?",
    ]
    [info] = chats()
    assert [m.text for m in tree(info.id)] == [
        "first question",
        "First answer.",
        "and then?",
        "Second answer.",
    ]


def test_a_given_chat_on_its_active_branch_or_a_new_branch_at_a_message(
    capsys, monkeypatch, server
):
    server.script(text("A1"), text("A2"), text("B1"))
    ask(capsys, monkeypatch, "q1")
    chat_id = chats()[0].id
    code, _, _ = ask(capsys, monkeypatch, "--chat", chat_id[:6], "q2")
    assert code == 0
    q1, a1, q2, a2 = tree(chat_id)
    assert q2.parent_id == a1.id
    # --at: answer the first reply again: a sibling branch of q2, and the chat's branch.
    code, out, _ = ask(capsys, monkeypatch, "--chat", chat_id, "--at", a1.id[:8], "other way")
    assert (code, out) == (0, "B1\n")
    assert [m["content"] for m in server.messages()[1:]] == ["q1", "A1", "other way"]
    nodes = tree(chat_id)
    other = next(m for m in nodes if m.text == "other way")
    assert other.parent_id == a1.id and len(nodes) == 6
    shown = json.loads(run_json(capsys, "show", chat_id, "--json"))
    assert [m["parts"][0]["text"] for m in shown["messages"]] == ["q1", "A1", "other way", "B1"]


def run_json(capsys, *argv) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_json_for_scripts(capsys, monkeypatch, server):
    server.script(text("Four.", usage=(30, 2)))
    code, out, err = ask(capsys, monkeypatch, "--json", "2+2?")
    assert code == 0 and err == ""
    result = json.loads(out)
    [info] = chats()
    user, reply = tree(info.id)
    assert result == {
        "chat_id": info.id,
        "chat_name": "2+2?",
        "user_message_id": user.id,
        "reply_id": reply.id,
        "model": "test-model",
        "status": "complete",
        "text": "Four.",
        "reasoning": "",
        "usage": {"input_tokens": 30, "output_tokens": 2, "cost": 0.0},
        "error": None,
    }


def test_model_and_agent_flags(capsys, monkeypatch, server):
    write_config(
        server.base_url,
        '[[agents]]\nname = "Researcher"\nmodel = "agent-model"\nsoul = "You dig."\n',
    )
    server.script(text("a"), text("b"), text("c"))
    assert ask(capsys, monkeypatch, "--model", "other-model", "hi there")[0] == 0
    assert server.last["model"] == "other-model"
    assert ask(capsys, monkeypatch, "--agent", "researcher", "dig this")[0] == 0
    assert server.last["model"] == "agent-model"
    assert "You dig." in server.messages()[0]["content"]
    by_name = {c.name: c for c in chats()}
    assert by_name["hi there"].model == "other-model"
    assert by_name["dig this"].agent_id is not None
    # In an existing chat, --model is that turn's model; the chat keeps its own.
    assert ask(capsys, monkeypatch, "--chat", by_name["hi there"].id, "--model", "x2", "q")[0] == 0
    assert server.last["model"] == "x2"
    assert {c.name: c for c in chats()}["hi there"].model == "other-model"


def test_a_persona_starts_the_chat_as_ctrl_n_does(capsys, monkeypatch, server):
    write_config(
        server.base_url,
        '[personas.terse]\nprompt = "Answer in one word."\nmodel = "persona-model"\n'
        "params = { temperature = 0.1 }\n",
    )
    server.script(text("Yes."), text("No."))
    assert ask(capsys, monkeypatch, "--persona", "terse", "is it?")[0] == 0
    sent = server.last
    assert sent["model"] == "persona-model" and sent["temperature"] == 0.1
    assert "Answer in one word." in server.messages()[0]["content"]
    [info] = chats()
    assert info.metadata["persona"] == "terse" and info.model == "persona-model"
    # The chat keeps them: -c sends the persona's prompt and parameters again.
    assert ask(capsys, monkeypatch, "-c", "sure?")[0] == 0
    assert server.last["temperature"] == 0.1
    assert "Answer in one word." in server.messages()[0]["content"]
    code, _, err = ask(capsys, monkeypatch, "--persona", "nobody", "q")
    assert code == 1 and "no persona 'nobody' (personas: terse)" in err
    code, _, err = ask(capsys, monkeypatch, "-c", "--persona", "terse", "q")
    assert code == 2 and "--persona starts a new chat" in err
    assert len(server.requests) == 2 and len(chats()) == 1


def test_files_attached_with_a(capsys, monkeypatch, server, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("the build broke on line 7\n")
    server.script(text("Line 7."), text("A cat."))
    code, out, _ = ask(capsys, monkeypatch, "-a", notes, "where?")
    assert (code, out) == (0, "Line 7.\n")
    content = server.messages()[-1]["content"]
    assert content[0] == {"type": "text", "text": "where?"}
    assert "the build broke on line 7" in json.dumps(content[1:])
    [info] = chats()
    assert [p.get("name") for p in tree(info.id)[0].parts if p["type"] == "attachment"] == [
        "notes.txt"
    ]
    # An image goes to a model said to see images, as a data URL; a file alone is a prompt.
    write_config(server.base_url, '[models."test-model"]\nvision = true\n')
    photo = tmp_path / "cat.png"
    photo.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    code, _, _ = ask(capsys, monkeypatch, "--attach", photo)
    assert code == 0
    [image] = [c for c in server.messages()[-1]["content"] if c["type"] == "image_url"]
    assert image["image_url"]["url"].startswith("data:image/png;base64,")
    assert {c.name for c in chats()} == {"where?", "cat.png"}


@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("missing.txt", None, "missing"),
        ("tool.bin", b"\x7fELF\x02\x01\x01\x00" + bytes(200), "cannot be attached"),
    ],
)
def test_a_file_that_cannot_be_attached(capsys, monkeypatch, server, tmp_path, name, data, words):
    path = tmp_path / name
    if data is not None:
        path.write_bytes(data)
    code, out, err = ask(capsys, monkeypatch, "-a", path, "look")
    assert (code, out) == (3, "") and err.startswith("chatui: error: ")
    assert name in err
    assert server.requests == [] and chats() == []


@pytest.mark.parametrize(
    ("model", "why"),
    [
        # A local server's model: nothing says it sees, and the line says how to tell.
        (
            "test-model",
            'does not list test-model, so nothing says it sees them (if it does: vision = true under [models."test-model"]',
        ),
        # A model LiteLLM's table knows as text only.
        ("gpt-3.5-turbo", "LiteLLM's model table says gpt-3.5-turbo takes text only"),
    ],
)
def test_an_image_for_a_model_that_cannot_see(capsys, monkeypatch, server, tmp_path, model, why):
    photo = tmp_path / "cat.png"
    photo.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    code, _, err = ask(capsys, monkeypatch, "--model", model, "-a", photo, "what is it?")
    assert code == 2 and "cannot see images" in err and why in err, err
    assert server.requests == [] and chats() == []


# -- failures: one line on stderr, an exit code per kind, nothing lost ----------------------


@pytest.mark.parametrize(
    ("scripted", "code", "words"),
    [
        (error(500, "upstream exploded", type="server_error"), 12, "exploded"),
        (error(401, "Incorrect API key provided", code="invalid_api_key"), 8, "key"),
        (error(429, "Rate limit reached", code="rate_limit_exceeded"), 10, "rate"),
        (context_length_error(), 11, "too long"),
    ],
)
def test_a_server_error_is_one_line_and_its_own_exit_code(
    capsys, monkeypatch, server, scripted, code, words
):
    server.script(scripted)
    got, out, err = ask(capsys, monkeypatch, "hello")
    assert got == code, err
    assert out == ""
    *notices, line = err.splitlines()  # a notice first when the request is too long
    assert all(n.startswith("chatui: ") for n in notices)
    assert line.startswith("chatui: error: ") and words in line.lower()
    [info] = chats()  # the question is kept, with the failed reply marked
    messages = tree(info.id)
    assert messages[0].text == "hello"
    assert all(reply_state(m) == "error" for m in messages[1:])


def test_a_model_name_litellm_cannot_place(capsys, monkeypatch, tmp_path):
    """`--model nosuch/model` said "nosuch refused the request", then LiteLLM's page of
    advice on its own API: no provider was asked. It says what to write instead."""
    paths.config_dir().mkdir(parents=True, exist_ok=True)
    paths.config_file().write_text("max_retries = 0\n")
    code, out, err = ask(capsys, monkeypatch, "--model", "nosuch/model", "hi")
    assert code == 11 and out == ""
    assert "refused" not in err and "Huggingface" not in err, err
    assert "chatui does not know how to reach nosuch/model" in err
    assert "LiteLLM has no provider for the name 'nosuch/model'" in err


def test_a_server_that_does_not_answer(capsys, monkeypatch, tmp_path):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    write_config(f"http://127.0.0.1:{port}/v1")
    code, _, err = ask(capsys, monkeypatch, "anyone?")
    assert code == 9 and err.startswith("chatui: error: ")


def test_a_reply_cut_off_keeps_what_arrived(capsys, monkeypatch, server):
    from tests.llm_server import broken_stream, malformed

    server.script(broken_stream("half of an answer"))
    code, out, err = ask(capsys, monkeypatch, "tell me")
    assert code == 9 and out.startswith("half of")  # the connection broke: try again
    assert "broke mid-reply" in err
    [info] = chats()
    reply = tree(info.id)[1]
    assert reply.text and out.startswith(reply.text) and reply_state(reply) == "error"
    server.script(malformed(text_before="some words"))
    code, out, err = ask(capsys, monkeypatch, "again")
    assert code == 12 and out.startswith("some words") and err.startswith("chatui: error: ")


def test_no_key_for_a_real_model_leaves_no_chat(capsys, monkeypatch, tmp_path):
    paths.config_dir().mkdir(parents=True, exist_ok=True)
    paths.config_file().write_text('model = "gpt-4o-mini"\n')
    code, out, err = ask(capsys, monkeypatch, "hello")
    assert code == 8 and out == "" and "OPENAI_API_KEY" in err
    assert chats() == []


@pytest.mark.parametrize(
    ("argv", "stdin", "code", "words"),
    [
        ((), None, 2, "nothing to ask"),
        (("   ",), None, 2, "nothing to ask"),
        (("q",), b"\xff\xfe binary", 3, "not utf-8"),
        (("--at", "abc", "q"), None, 2, "--at goes with"),
        (("--chat", "nosuchchat", "q"), None, 1, "no chat"),
        (("-c", "q"), None, 1, "no chat to continue"),
        (("--agent", "Nobody", "q"), None, 1, "no agent"),
        (("-c", "--chat", "x", "q"), None, 2, "not both"),
    ],
)
def test_bad_input_is_refused_before_anything_is_sent(
    capsys, monkeypatch, server, argv, stdin, code, words
):
    got, out, err = ask(capsys, monkeypatch, *argv, stdin=stdin)
    assert (got, out) == (code, "")
    assert words in err.lower() and err.count("\n") == 1
    assert server.requests == [] and chats() == []


def test_too_much_piped_input(capsys, monkeypatch, server):
    monkeypatch.setattr(ask_module, "MAX_STDIN", 10)
    got, _, err = ask(capsys, monkeypatch, "q", stdin=b"x" * 11)
    assert got == 3 and "larger" in err and server.requests == []


def test_a_message_that_is_not_in_the_chat(capsys, monkeypatch, server):
    server.script(text("A"))
    ask(capsys, monkeypatch, "q")
    chat_id = chats()[0].id
    got, _, err = ask(capsys, monkeypatch, "--chat", chat_id, "--at", "zzz", "q2")
    assert got == 1 and "no message" in err and len(server.requests) == 1


def test_the_exit_codes_are_in_the_help(capsys):
    assert main(["ask", "--help"]) == 0
    out = capsys.readouterr().out
    for code in (8, 9, 10, 11, 12, 130):
        assert f"  {code}  " in out


# -- a real process: pipes, a reader that leaves, a terminal, `chatui "…"` ------------------


@pytest.fixture(autouse=True)
def _ask_process(monkeypatch):
    """The ask process a test's `chatui` starts (one per CHATUI_HOME) is sent away at
    the end: its socket removed, which it notices within a second and exits."""
    monkeypatch.setenv("CHATUI_ASK_IDLE", "60")
    monkeypatch.delenv("CHATUI_ASK_DAEMON", raising=False)
    yield
    path = socket_path()
    if path and os.path.exists(path):
        os.unlink(path)


def chatui(*argv: str, daemon: bool = True, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if not daemon:
        env["CHATUI_ASK_DAEMON"] = "0"
    kwargs.setdefault("cwd", ROOT)
    return subprocess.Popen([str(CHATUI), *argv], env=env, **kwargs)


def test_a_pipe_in_and_the_prompt_shortcut(server):
    server.script(text("Summary: fine."))
    cat = subprocess.Popen(["cat", str(ROOT / "pyproject.toml")], stdout=subprocess.PIPE)
    done = chatui("what is this file?", stdin=cat.stdout, stdout=subprocess.PIPE, text=True)
    out, _ = done.communicate(timeout=60)
    cat.wait()
    assert done.returncode == 0 and out == "Summary: fine.\n"
    asked = server.messages()[-1]["content"]
    assert asked.startswith("[build-system]") and asked.endswith("\n\nwhat is this file?")
    # A mistyped command is not a prompt: nothing is sent.
    typo = chatui("shwo", "3f2a", stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    _, err = typo.communicate(timeout=60)
    assert typo.returncode == 2 and "invalid choice" in err and len(server.requests) == 1


@pytest.mark.parametrize("daemon", [True, False], ids=["ask process", "in process"])
def test_a_reader_that_goes_away_cancels_the_reply_quietly(server, daemon):
    words = " ".join(f"word{i}" for i in range(400))
    server.script(text(words, delay=0.02))
    proc = chatui(
        "ask",
        "go on",
        daemon=daemon,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stdout.read(20)  # the first words arrived
    proc.stdout.close()  # `| head -c 20`
    assert proc.wait(timeout=60) == 0
    assert proc.stderr is not None and proc.stderr.read() == b""  # no traceback
    wait_until_sync(lambda: reply_state(tree(chats()[0].id)[1]) == "cancelled")
    reply = tree(chats()[0].id)[1]
    assert reply.text.startswith("word0 word1") and len(reply.text) < len(words)


def test_a_terminal_gets_rendered_markdown(server):
    server.script(text("# Plan\n\nGo **now** \x1b]0;pwned\x07.\n\n```python\nprint(1)\n```\n"))
    leader, follower = pty.openpty()
    proc = chatui("ask", "plan?", stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    seen = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 90)  # a cold ask process loads LiteLLM first
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the process closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert proc.wait(timeout=30) == 0
    screen = seen.decode("utf-8", "replace")
    assert "**now**" not in screen and "\x1b[1m" in screen  # bold, not asterisks
    assert "```" not in screen and "print" in screen  # a code block, not its fence
    assert "\x1b]0;" not in screen and "\\x1b]0;pwned" in screen  # the model's escape, shown


def test_the_finished_blocks_of_a_streaming_reply():
    from chatui.tui.shell_markdown import split_finished

    assert split_finished("one para") == 0
    assert split_finished("one\n\ntwo") == len("one\n\n")
    fenced = "intro\n\n```\ncode\n\nmore code"
    assert split_finished(fenced) == len("intro\n\n")  # not inside the open fence
    closed = fenced + "\n```\n\nafter"
    assert split_finished(closed) == len(closed) - len("after")


# -- the warm ask process ----------------------------------------------------------------


def run_chatui(*argv: str, env: dict | None = None, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(CHATUI), *argv],
        env={**os.environ, **(env or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def test_the_ask_process_serves_each_ask_with_its_own_environment(server, tmp_path):
    server.script(text("One."), text("Two."), text("Three."), text("Four."))
    done = run_chatui("ask", "first")
    assert (done.returncode, done.stdout) == (0, "One.\n")
    path = socket_path()
    assert path and os.path.exists(path)
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    serving = os.stat(path).st_ino
    # The next ask goes to the same process, with this shell's environment: here
    # another database (a key exported since would reach the model call the same way).
    other = tmp_path / "other.db"
    done = run_chatui("ask", "second", env={"CHATUI_DB": str(other)})
    assert (done.returncode, done.stdout) == (0, "Two.\n")
    assert os.stat(path).st_ino == serving
    with Store(other) as store:
        assert [c.name for c in SessionManager(store).list()] == ["second"]
    # A relative --db is the asking shell's: resolved in its folder, not the process's.
    done = run_chatui("--db", "rel.db", "ask", "third", "--json", cwd=tmp_path)
    assert done.returncode == 0 and json.loads(done.stdout)["text"] == "Three."
    with Store(tmp_path / "rel.db") as store:
        assert [c.name for c in SessionManager(store).list()] == ["third"]
    assert [c.name for c in chats()] == ["first"]
    # So is a relative -a FILE.
    (tmp_path / "notes.txt").write_text("see line 7")
    done = run_chatui("ask", "-a", "notes.txt", "why?", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "see line 7" in json.dumps(server.messages()[-1]["content"])


def test_usage_errors_and_failures_read_the_same_through_the_ask_process(server):
    server.script(error(500, "upstream exploded", type="server_error"))
    done = run_chatui("ask", "--at", "x", "q")
    assert done.returncode == 2 and "--at goes with" in done.stderr and done.stdout == ""
    done = run_chatui("ask", "--frobnicate", "q")
    assert done.returncode == 2 and "unrecognized arguments" in done.stderr
    done = run_chatui("ask", "hello")
    assert done.returncode == 12 and done.stderr.startswith("chatui: error: ")
    assert server.requests and os.path.exists(socket_path() or "")


def test_an_ask_process_running_older_code_steps_aside(server):
    server.script(text("Fresh."))
    assert run_chatui("ask", "start it").returncode == 0
    path = socket_path()
    assert path and os.path.exists(path)
    import socket as socketlib

    with socketlib.socket(socketlib.AF_UNIX) as sock:
        sock.connect(path)
        sock.sendall(frame({"argv": ["ask", "x"], "stamp": stamp() + "-older", "env": {}}))
        reply = sock.recv(100)
    assert b"stale" in reply
    wait_until_sync(lambda: not os.path.exists(path))  # it left


def test_ctrl_c_keeps_what_arrived(server):
    import signal

    words = " ".join(f"word{i}" for i in range(400))
    server.script(text(words, delay=0.02))
    # As from a shell: ctrl+c's signal neither ignored nor blocked. A child inherits
    # both from the test's process, where an earlier test's library may have left them
    # (twice in full runs the reply ran to its end: exit 0, the signal never seen).
    before = (signal.getsignal(signal.SIGINT), signal.pthread_sigmask(signal.SIG_BLOCK, []))

    def as_from_a_shell() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

    proc = chatui(
        "ask",
        "go on",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=as_from_a_shell,
    )
    assert proc.stdout is not None and proc.stdout.read(20)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130, before
    wait_until_sync(lambda: reply_state(tree(chats()[0].id)[1]) == "cancelled")


def test_no_private_folder_for_the_socket_means_in_process(monkeypatch, tmp_path):
    shared = tmp_path / f"chatui-{os.getuid()}"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)  # others may enter: not a place for a socket carrying keys
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert socket_path() is None
    shared.chmod(0o700)
    assert socket_path() is not None


def test_the_ask_process_runs_chatuis_own_code_whatever_folder_it_starts_in(server, tmp_path):
    """`chatui ask` run in a folder holding another `chatui` (a checkout of it) started
    that one's ask process: `python -m` puts the working folder first on the path. (That
    one exited here, and the ask fell back to running in process after a wait.)"""
    other = tmp_path / "elsewhere" / "chatui" / "cli"
    other.mkdir(parents=True)
    for package in (other.parent, other):
        (package / "__init__.py").write_text("")
    (other / "ask_daemon.py").write_text("raise SystemExit(3)  # not chatui's\n")
    server.script(text("From chatui's own code."))
    done = chatui(
        "ask", "hello", cwd=other.parent.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = done.communicate(timeout=60)
    assert done.returncode == 0, err
    assert out.decode() == "From chatui's own code.\n"
    # Answered by chatui's ask process, which stays for the next ask (the other one
    # exited, and the ask ran in process after waiting for it).
    path = socket_path()
    assert path is not None and os.path.exists(path)
