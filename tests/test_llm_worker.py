"""The model process (`chatui.llm.worker`): the same stream as in-process calls, through a
real child process and LiteLLM's real HTTP client, against the scripted server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from chatui import llm
from chatui.llm.wire import decode, encode
from chatui.llm.worker import StreamWorker
from tests import llm_server as script

MODEL = "openai/test-model"
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def worker():
    """One model process for the module (it takes a second or two to load LiteLLM)."""
    process = StreamWorker()
    process.start()
    yield process
    process.close()


async def run(worker: StreamWorker, server, **kwargs) -> list[llm.Chunk]:
    kwargs.setdefault("timeout", 5)
    kwargs.setdefault("max_retries", 0)
    return [c async for c in worker.stream(MODEL, HI, api_base=server.base_url, **kwargs)]


async def in_process(server, **kwargs) -> list[llm.Chunk]:
    kwargs.setdefault("timeout", 5)
    kwargs.setdefault("max_retries", 0)
    return [c async for c in llm.stream_completion(MODEL, HI, api_base=server.base_url, **kwargs)]


def text_of(chunks: list[llm.Chunk]) -> str:
    return "".join(c.text for c in chunks if isinstance(c, llm.TextChunk))


async def test_a_reply_through_the_worker_equals_the_same_reply_in_process(
    worker, llm_server, fake_key
):
    reply = "Hello there,  world!\n\n```python\nprint('ü ✓ 日本')\n```\n"
    llm_server.script(
        script.text(reply, usage=(31, 17), reasoning="thinking first"),
        script.text(reply, usage=(31, 17), reasoning="thinking first"),
    )
    through = await run(worker, llm_server)
    direct = await in_process(llm_server)
    assert text_of(through) == text_of(direct) == reply
    reasoning = [c.text for c in through if isinstance(c, llm.ReasoningChunk)]
    assert "".join(reasoning) == "thinking first"
    assert [c for c in through if isinstance(c, llm.UsageChunk)] == [llm.UsageChunk(31, 17, 0.0)]
    # The request the server saw is the same either way.
    assert llm_server.requests[-2]["messages"] == llm_server.requests[-1]["messages"] == HI


async def test_tool_calls_cross_whole(worker, llm_server, fake_key):
    llm_server.script(script.tool_calls(("call_1", "set_context", {"label": "notes", "v": "ü"})))
    chunks = await run(worker, llm_server, tools=[{"type": "function", "function": {"name": "x"}}])
    calls = [c for c in chunks if isinstance(c, llm.ToolCallChunk)]
    assert [(c.id, c.name, json.loads(c.arguments_json)) for c in calls] == [
        ("call_1", "set_context", {"label": "notes", "v": "ü"})
    ]
    assert llm_server.last["tools"][0]["function"]["name"] == "x"


@pytest.mark.parametrize(
    ("scripted", "kind"),
    [
        (script.error(401, "Incorrect API key provided: sk-test-FAKEKEY"), "auth"),
        (script.error(500, "the GPU caught fire"), "server"),
        (script.context_length_error(), "context_length"),
        (script.malformed(text_before="half a "), "bad_response"),
    ],
)
async def test_errors_cross_as_the_same_readable_error_without_secrets(
    worker, llm_server, fake_key, scripted, kind
):
    llm_server.script(scripted, scripted)
    with pytest.raises(llm.LLMError) as through:
        await run(worker, llm_server)
    with pytest.raises(llm.LLMError) as direct:
        await in_process(llm_server)
    assert through.value.kind == direct.value.kind == kind
    assert through.value.title == direct.value.title
    assert through.value.hint == direct.value.hint
    assert fake_key not in str(through.value) and fake_key not in through.value.detail


async def test_closing_the_stream_cancels_the_call_and_the_next_one_works(
    worker, llm_server, fake_key
):
    llm_server.script(script.hang(20, text_before="first words"), script.text("next reply"))
    stream = worker.stream(MODEL, HI, api_base=llm_server.base_url, timeout=30, max_retries=0)
    first = await anext(stream)
    assert isinstance(first, llm.TextChunk) and first.text.startswith("first")
    await stream.aclose()  # the user pressed escape
    started = time.monotonic()
    assert text_of(await run(worker, llm_server)) == "next reply"
    assert time.monotonic() - started < 10  # not stuck behind the hanging call


async def test_the_request_leaves_when_the_stream_is_made_not_when_it_is_read(
    worker, llm_server, fake_key
):
    """`stream()` hands the request to the model process at once: the engine stores and
    draws what can wait while it travels."""
    llm_server.script(script.text("early bird"))
    asked = len(llm_server.requests)
    stream = worker.stream(MODEL, HI, api_base=llm_server.base_url, timeout=5, max_retries=0)
    try:
        async with asyncio.timeout(20):
            while len(llm_server.requests) == asked:  # nothing read from the stream yet
                await asyncio.sleep(0.01)
        assert text_of([c async for c in stream]) == "early bird"
    finally:
        await stream.aclose()
    assert not worker._calls


async def test_a_stream_closed_unread_cancels_its_call(worker, llm_server, fake_key):
    """Made, then closed before anything was read (the reply's row could not be stored):
    the call is cancelled in the model process, and the next one is not stuck behind it."""
    llm_server.script(script.hang(20, text_before="never read"), script.text("next reply"))
    asked = len(llm_server.requests)
    stream = worker.stream(MODEL, HI, api_base=llm_server.base_url, timeout=30, max_retries=0)
    async with asyncio.timeout(20):
        while len(llm_server.requests) == asked:
            await asyncio.sleep(0.01)
    await stream.aclose()
    assert not worker._calls
    with pytest.raises(StopAsyncIteration):
        await anext(stream)
    started = time.monotonic()
    assert text_of(await run(worker, llm_server)) == "next reply"
    assert time.monotonic() - started < 10


async def test_the_warm_up_rehearsal_stays_on_its_own_loopback_server(llm_server, fake_key):
    """The model process rehearses a first call before it says ready; the rehearsal is
    answered by a server of its own (the configured server hears nothing, and the key in
    the environment is not sent: a placeholder is)."""
    from chatui.llm import warm_call

    requests: list[bytes] = []
    answer = warm_call._answer

    async def listen(reader, writer):
        original = reader.readuntil

        async def readuntil(separator=b"\n"):
            head = await original(separator)
            requests.append(head)
            return head

        reader.readuntil = readuntil
        await answer(reader, writer)

    warm_call._answer = listen
    try:
        await warm_call.warm_call(timeout=10)
    finally:
        warm_call._answer = answer
    assert len(requests) == 1 and b"/chat/completions" in requests[0]
    assert b"Bearer warm-up" in requests[0]
    assert fake_key.encode() not in requests[0]
    assert llm_server.requests == []


async def test_calls_run_side_by_side(worker, llm_server, fake_key):
    words = " ".join(f"w{i}" for i in range(30))
    llm_server.script(*(script.text(words, delay=0.01) for _ in range(3)))
    results = await asyncio.gather(*(run(worker, llm_server) for _ in range(3)))
    assert [text_of(r) for r in results] == [words] * 3


async def test_the_model_process_says_whether_a_key_is_set_as_the_app_would(worker, monkeypatch):
    """The app asks it while its own LiteLLM import runs: the same sentence as
    `llm.key_problem` in the app, with the app's environment as it is now."""
    for name in list(os.environ):
        if name.endswith("_API_KEY"):
            monkeypatch.delenv(name)
    missing = await worker.key_problem("openai/gpt-4o-mini", None)
    assert missing == llm.key_problem("openai/gpt-4o-mini", None)
    assert missing is not None and "OPENAI_API_KEY" in missing
    assert await worker.key_problem("openai/gpt-4o-mini", "http://127.0.0.1:9/v1") is None
    assert await worker.key_problem("no-such-provider/model-x", None) == llm.key_problem(
        "no-such-provider/model-x", None
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-set-after-launch-0000000000")
    assert await worker.key_problem("openai/gpt-4o-mini", None) is None


async def test_a_key_exported_after_launch_reaches_the_call(worker, llm_server, monkeypatch):
    llm_server.script(script.text("one"), script.text("two"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-first-key-000000000000")
    await run(worker, llm_server)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-second-key-11111111111")
    await run(worker, llm_server)
    keys = [h.get("authorization") for h in llm_server.request_headers[-2:]]
    assert keys == ["Bearer sk-first-key-000000000000", "Bearer sk-second-key-11111111111"]


async def test_a_worker_killed_mid_reply_ends_the_call_with_an_error_and_restarts(
    llm_server, fake_key
):
    worker = StreamWorker()
    try:
        llm_server.script(script.hang(20, text_before="some text"), script.text("after"))
        stream = worker.stream(MODEL, HI, api_base=llm_server.base_url, timeout=30, max_retries=0)
        assert isinstance(await anext(stream), llm.TextChunk)
        assert worker._process is not None
        worker._process.kill()
        with pytest.raises(llm.LLMError) as info:
            async with asyncio.timeout(10):
                async for _ in stream:  # words queued before the kill still arrive
                    pass
        assert info.value.kind == "connection"
        assert info.value.partial  # text had arrived: the engine keeps it
        assert "press ctrl+r" in info.value.hint.lower()
        assert text_of(await run(worker, llm_server)) == "after"  # a new process
        assert not worker.broken
    finally:
        worker.close()


async def test_a_worker_that_cannot_start_falls_back_to_calls_in_the_app(
    llm_server, fake_key, tmp_path
):
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    worker = StreamWorker(python=str(broken))
    llm_server.script(*(script.text(f"reply {i}") for i in range(3)))
    failures = 0
    for _ in range(3):  # the first calls fail readably; then the app makes the call
        try:
            chunks = await run(worker, llm_server)
        except llm.LLMError as error:
            failures += 1
            assert error.kind == "connection" and not error.partial
            await asyncio.sleep(0.2)
            continue
        assert text_of(chunks).startswith("reply")
    assert worker.broken
    assert 1 <= failures <= 2
    assert text_of(await run(worker, llm_server)).startswith("reply")


async def test_a_missing_python_is_a_readable_error(llm_server, fake_key, tmp_path):
    worker = StreamWorker(python=str(tmp_path / "no-such-python"))
    with pytest.raises(llm.LLMError) as info:
        await run(worker, llm_server)
    assert info.value.title == "The model process could not be started"


def test_the_worker_exits_when_the_app_is_killed(tmp_path):
    """A killed terminal takes the app with it; with no spare kept (the suite's
    CHATUI_SPARE_SECONDS=0) the model process must not linger."""
    code = textwrap.dedent(
        """
        import sys, time
        from chatui.llm.worker import StreamWorker
        worker = StreamWorker()
        worker.start()
        print(worker._process.pid, flush=True)
        time.sleep(60)
        """
    )
    app = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert app.stdout is not None
    child = int(app.stdout.readline())
    os.kill(app.pid, signal.SIGKILL)
    app.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        try:  # reap it if it is ours (it is not: it was the killed app's child)
            os.waitpid(child, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.1)
    os.kill(child, signal.SIGKILL)
    raise AssertionError("the model process outlived the app")


def test_garbage_on_the_request_pipe_is_skipped():
    """A line that is not a request (or not JSON) does not stop the process."""
    child = subprocess.Popen(
        [sys.executable, "-m", "chatui.llm.worker_main"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(b'not json\n[1, 2]\n{"op": "nonsense"}\n\xff\xfe\n')
    child.stdin.write(b'{"op": "stream", "id": 7, "args": {"model": "demo", "messages": []}}\n')
    child.stdin.flush()
    lines = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = json.loads(child.stdout.readline())
        if line.get("id") == 7:
            lines.append(line)
            if line["t"] in ("end", "error"):
                break
    child.stdin.close()
    child.wait(timeout=10)
    assert lines and lines[-1]["t"] in ("end", "error")  # it answered the real request


@pytest.mark.parametrize(
    "line",
    [
        {"t": "text"},  # no text
        {"t": "usage", "in": "many"},
        {"t": "retry", "attempt": 1},
        {"t": "call", "call": 1},
    ],
)
def test_a_malformed_line_from_the_worker_is_an_error_not_a_crash(line):
    with pytest.raises((KeyError, ValueError, TypeError)):
        decode(line)


def test_unknown_lines_decode_to_nothing():
    assert decode({"t": "mystery", "id": 1}) is None
    assert decode({}) is None


def test_every_chunk_round_trips_through_the_wire():
    error = llm.LLMError("rate_limit", "slow down", "detail", "wait", 2.5, partial=True)
    for item in (
        llm.TextChunk("ü\n\x00"),
        llm.ReasoningChunk("hmm"),
        llm.ToolCallChunk("c1", "tool", '{"a": 1}'),
        llm.UsageChunk(1, 2, 0.5),
        llm.RetryChunk(1, 2, 2.5, error),
    ):
        back = decode(json.loads(encode(item, 3)))
        if isinstance(item, llm.RetryChunk):
            assert isinstance(back, llm.RetryChunk)
            assert (back.attempt, back.max_retries, back.delay) == (1, 2, 2.5)
            assert (back.error.kind, back.error.title, back.error.partial) == (
                "rate_limit",
                "slow down",
                True,
            )
        else:
            assert back == item


async def test_the_model_process_runs_the_apps_code_whatever_folder_it_starts_in(
    tmp_path, monkeypatch, llm_server, fake_key
):
    """Started in a folder holding another `chatui` (another checkout), the model process
    ran that one's code: `python -m` puts the working folder first on the path, before
    the app's own checkout. (A bench run from one checkout measured another's.)"""
    other = tmp_path / "chatui" / "llm"
    other.mkdir(parents=True)
    (tmp_path / "chatui" / "__init__.py").write_text("")
    (other / "__init__.py").write_text("")
    (other / "worker_main.py").write_text("raise SystemExit(3)  # not the app's\n")
    monkeypatch.chdir(tmp_path)
    worker = StreamWorker()
    try:
        llm_server.script(script.text("from the app's own code"))
        chunks = await run(worker, llm_server)
        assert text_of(chunks) == "from the app's own code"
        assert not worker.broken and worker.lines  # answered by the model process
    finally:
        worker.close()


def test_the_worker_exits_at_once_when_the_app_goes_during_the_warm_up():
    """Killed right after it started (a terminal closed during start-up), the app's model
    process stops instead of finishing LiteLLM's import first (seconds of CPU taken
    from whatever runs next): it never gets to say it is ready."""
    child = subprocess.Popen(
        [sys.executable, "-m", "chatui.llm.worker_main"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert child.stdin is not None and child.stdout is not None
    child.stdin.close()
    out = child.stdout.read()
    assert child.wait(timeout=30) == 0
    assert b'"ready"' not in out


async def test_why_the_model_stopped_crosses_and_a_refused_streamed_tool_choice_too(
    worker, llm_server, fake_key
):
    """Issue 22: `finish_reason` reaches the app (a "length" reply is truncated), and the
    model process learns a server's refusal to stream tool choices as the app would."""
    llm_server.llama_cpp_python()
    llm_server.script(script.text("cut off mid", finish_reason="length"))
    chunks = await run(worker, llm_server)
    assert llm.FinishChunk("length") in chunks and text_of(chunks) == "cut off mid"
    llm_server.script(script.tool_calls(("c1", "f", {"a": 1})))
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    chunks = await run(worker, llm_server, tools=tools)
    assert [c.name for c in chunks if isinstance(c, llm.ToolCallChunk)] == ["f"]
    assert [r.get("stream") for r in llm_server.requests[-2:]] == [True, None]


@pytest.fixture
def slow_batches(worker):
    """The module's worker with a batch slot longer than any test: what the model process
    joins is then decided by the stream alone, not by the machine's speed."""
    worker.batch_seconds = 30.0
    yield worker
    worker.batch_seconds = None


async def test_a_burst_of_text_crosses_in_a_few_lines_complete_and_in_order(
    slow_batches, llm_server, fake_key
):
    """Issue 22: every line costs the app a wake-up and an event. 300 streamed words
    cross as the first word (at once), the rest joined, why it stopped, usage, the end."""
    reply = " ".join(f"w{i}" for i in range(300)) + " ü ✓"
    llm_server.script(script.text(reply, usage=(40, 302), reasoning="think " * 50))
    before = slow_batches.lines
    chunks = await run(slow_batches, llm_server)
    assert slow_batches.lines - before <= 7  # was 355: one per chunk
    assert text_of(chunks) == reply
    assert "".join(c.text for c in chunks if isinstance(c, llm.ReasoningChunk)) == "think " * 50
    kinds = [type(c).__name__ for c in chunks]
    assert kinds.index("ReasoningChunk") < kinds.index("TextChunk")
    assert kinds[-2:] == ["FinishChunk", "UsageChunk"]
    assert len(chunks) <= 6


async def test_the_first_words_are_not_held_for_the_batch(slow_batches, llm_server, fake_key):
    """The first text of a call goes at once (the first frame must not wait), even with
    a slot of 30 s; the server then stalls, and the words are there before it resumes."""
    llm_server.script(script.hang(20, text_before="first words"), script.text("next"))
    stream = slow_batches.stream(MODEL, HI, api_base=llm_server.base_url, timeout=30, max_retries=0)
    try:
        async with asyncio.timeout(15):  # a guard: the hang lasts 20 s, the slot 30 s
            first = await anext(stream)
        assert isinstance(first, llm.TextChunk) and first.text == "first"
    finally:
        await stream.aclose()


async def test_text_waiting_for_its_slot_reaches_the_app_before_an_error(
    slow_batches, llm_server, fake_key
):
    """A stream that breaks while text waits for its slot: the text arrives first (the
    engine keeps it), then the error."""
    llm_server.script(script.malformed(text_before="half a sentence"))
    got: list[llm.Chunk] = []
    with pytest.raises(llm.LLMError) as info:
        async for chunk in slow_batches.stream(
            MODEL, HI, api_base=llm_server.base_url, timeout=5, max_retries=0
        ):
            got.append(chunk)
    assert info.value.kind == "bad_response"
    assert text_of(got) == "half a sentence"


async def test_text_queued_on_the_app_side_is_read_as_one_chunk():
    """Lines that arrived together wait in the call's queue; the stream hands the
    neighbouring text over as one chunk (one event for the engine), order kept."""
    from chatui.llm.worker import _Call, _Stream

    worker = StreamWorker()
    call = _Call(asyncio.get_running_loop())
    worker._calls[call.number] = call
    call.push(
        llm.ReasoningChunk("a"),
        llm.ReasoningChunk("b"),
        llm.TextChunk("c"),
        llm.TextChunk("d"),
        llm.FinishChunk("stop"),
        llm.TextChunk("e"),
        None,
    )
    stream = _Stream(worker, call)
    assert [c async for c in stream] == [
        llm.ReasoningChunk("ab"),
        llm.TextChunk("cd"),
        llm.FinishChunk("stop"),
        llm.TextChunk("e"),
    ]


def test_the_model_process_is_ready_before_it_loads_the_tokenizer_tables(tmp_path):
    """A message sent during the warm-up (the first after launch) waits for "ready": the
    tokenizer tables only a stream without its server's usage needs at its end
    (gpt-4o's o200k, ~0.4 s of CPU) are loaded after it, not before."""
    loaded = tmp_path / "loaded"
    code = textwrap.dedent(f"""
        import json, os
        import tiktoken.registry as registry
        from chatui.llm import worker_main

        real_write = worker_main.Worker.write
        def write(self, data):
            if b'"ready"' in data:  # what was loaded when it said so
                line = {{"t": "test", "loaded": sorted(registry.ENCODINGS)}}
                real_write(self, json.dumps(line).encode() + b"\\n")
            real_write(self, data)
        worker_main.Worker.write = write
        real_warm = getattr(worker_main, "warm_tokenizers", None)  # None: before this
        def warm():
            real_warm()
            with open({str(loaded)!r} + ".part", "w") as out:
                json.dump(sorted(registry.ENCODINGS), out)
            os.replace({str(loaded)!r} + ".part", {str(loaded)!r})
        if real_warm is not None:
            worker_main.warm_tokenizers = warm
        worker_main.main()
    """)
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        lines = [json.loads(child.stdout.readline()) for _ in range(2)]
        assert lines[1] == {"t": "ready"}
        assert "o200k_base" not in lines[0]["loaded"]  # was: loaded before "ready"
        deadline = time.monotonic() + 60
        while not loaded.exists():
            assert time.monotonic() < deadline, "the tokenizers were never loaded"
            time.sleep(0.05)
        assert "o200k_base" in json.loads(loaded.read_text())  # loaded after it
    finally:
        child.stdin.close()
        child.wait(timeout=30)


# -- the spare: a warm model process kept for the next app ----------------------------


@pytest.fixture
def spares(monkeypatch):
    """Spares on, in a private folder of this test's own (a short path: a socket's is at
    most 107 bytes); every process that waited as one is gone after the test."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="sp", dir="/tmp")
    monkeypatch.setenv("XDG_RUNTIME_DIR", folder)
    monkeypatch.setenv("CHATUI_SPARE_SECONDS", "60")
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)


async def warm(worker: StreamWorker) -> None:
    """Until the worker's process has said it is ready (a process that goes before that
    exits instead of waiting as the spare)."""
    for _ in range(1200):
        if worker.ready.is_set():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the model process never got ready")


async def spare_waits() -> None:
    """Until a spare listens (the app it served has just gone)."""
    from chatui.llm import spare

    path = spare.spare_path()
    assert path is not None
    for _ in range(600):
        if os.path.exists(path):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no spare is waiting")


async def an_app_that_ends(spares: list[int], server, reply: str) -> None:
    """An app's model process answers once (`reply`), then its app quits: it waits as
    the spare (its pid noted in `spares`)."""
    app = StreamWorker()
    app.start()
    assert app._process is not None
    spares.append(app._process.pid)
    assert text_of(await run(app, server, timeout=30)) == reply
    await warm(app)
    app.close()
    await spare_waits()


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with contextlib.suppress(ChildProcessError):  # reap it if it is this test's child
        os.waitpid(pid, os.WNOHANG)
    return False


async def test_an_app_that_ends_leaves_its_model_process_warm_for_the_next(
    spares, llm_server, monkeypatch
):
    """The first reply after launch waited seconds for LiteLLM's import in a new model
    process. The ended app's process is adopted, ready at once; the next app's key
    reaches its call; an app started while the spare is taken finds none."""
    from chatui.llm import spare

    llm_server.script(script.text("one"), script.text("two"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-first-app-key-0000000000")
    await an_app_that_ends(spares, llm_server, "one")

    monkeypatch.setenv("OPENAI_API_KEY", "sk-second-app-key-111111111")
    second = StreamWorker()
    second.start()
    try:
        assert second.ready.is_set()  # no warm-up to wait for
        assert second._process is not None and second._process.pid == spares[0]
        assert text_of(await run(second, llm_server)) == "two"
        assert llm_server.request_headers[-1]["authorization"] == (
            "Bearer sk-second-app-key-111111111"
        )
        # Another app, while the spare serves the second, finds none to adopt (and
        # starts its own process, as with spares off).
        assert spare.adopt(wait=0.5) is None
    finally:
        second.close()


async def test_the_spare_stops_the_gone_apps_call_and_exits_when_its_time_is_up(
    spares, llm_server, fake_key, monkeypatch
):
    """An app killed mid-reply: its call stops in the spare, none of its words reach the
    next app (whose calls are numbered from 1 again), and a spare nobody adopts exits."""
    llm_server.script(script.hang(30, text_before="the gone app's words"), script.text("after"))
    first = StreamWorker()
    stream = first.stream(MODEL, HI, api_base=llm_server.base_url, timeout=60, max_retries=0)
    assert isinstance(await anext(stream), llm.TextChunk)
    assert first._process is not None
    pid = first._process.pid
    spares.append(pid)
    await warm(first)
    first.close()  # the app is gone, its call still hanging at the server
    await spare_waits()

    monkeypatch.setenv("CHATUI_SPARE_SECONDS", "1")  # the next app passes it on
    second = StreamWorker()
    second.start()
    try:
        assert second._process is not None and second._process.pid == pid
        assert text_of(await run(second, llm_server)) == "after"
    finally:
        second.close()
    for _ in range(600):  # nobody comes for it: it exits a second later
        if gone(pid):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the spare outlived its time")


async def test_a_stranger_on_the_spares_socket_is_not_taken_for_a_spare(
    spares, llm_server, fake_key
):
    """Something else listening at the spare's path (it says nothing, or nonsense) is
    given up after `ADOPT_WAIT`; the app starts its own process. A client that sends a
    spare nonsense and goes leaves it waiting for the next app."""
    import socket

    from chatui.llm import spare

    path = spare.spare_path()
    assert path is not None
    stranger = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stranger.bind(path)
    stranger.listen(1)
    try:
        assert spare.adopt(wait=0.5) is None
    finally:
        stranger.close()
        os.unlink(path)

    llm_server.script(script.text("own"), script.text("adopted"))
    await an_app_that_ends(spares, llm_server, "own")
    rude = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    rude.connect(path)
    assert json.loads(rude.makefile("rb").readline())["t"] == "ready"
    rude.sendall(b'not json\n[1, 2]\n{"op": "stream"}\n')  # then it goes
    rude.close()
    await spare_waits()
    second = StreamWorker()
    second.start()
    try:
        assert second._process is not None and second._process.pid == spares[0]
        assert text_of(await run(second, llm_server)) == "adopted"
    finally:
        second.close()
