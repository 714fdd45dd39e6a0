"""Benchmark of the app as a user feels it: start-up, opening a long chat, switching branch.

Start-up (issue 23): `measure_startup` launches `chatui` and a bare Textual app (a
`Static` and Textual's `Footer`) in tmux, alternately, in the same run, and times each
from launch until the screen shows it whole: chatui's title, the chat's text, the input,
a memory gauge, the conversation's figures and the footer's keys; the bare app's text
and footer keys. The ratio of the medians is printed with the load average, on the
machine as it is and again with a CPU-bound process on every other core.

First frame is also measured on its own, with an empty database and with 1,000 chats /
100k messages. The rest run the app headless (Textual's `run_test`) and time the
operation from the key press to the redrawn screen. Figures, not assertions: `make bench`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from store_bench import build_corpus  # noqa: E402

from store import SessionManager, Store  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Iterator

CHATUI = str(Path(sys.executable).with_name("chatui"))
FRAME_MARK = "MEMORY"  # the sidebar's heading: the first frame with the whole layout
READY_MARK = "· demo"  # the title's model (--model demo): drawn once the last chat is open


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True).stdout


# -- start-up: full UI ready against a bare Textual app's first frame ----------------------

BARE_APP = """
from textual.app import App
from textual.widgets import Footer, Static
class Bare(App):
    def compose(self):
        yield Static("BARE-READY")
        yield Footer()
Bare().run()
"""
BARE_MARKS = ("BARE-READY", "palette")  # its text (its first frame), its footer's key

READY_MARKS = (
    "New chat · demo",  # the title: the last chat is open (a new one: nothing is stored)
    "Type below",  # that chat's text (a new chat's welcome)
    "Message ·",  # the input
    "MEMORY",
    "read-only",  # a memory block's gauge (the "soul" block of the default config)
    "CONVERSATION",
    "spent",  # the conversation's figures
    "palette",  # the footer's keys (their last one)
)
"""Every part of chatui's first screen, with its content: "ready" is when all are drawn
(the frame that first shows one part need not show the others)."""


class _Terminal:
    """One tmux server for a series of launches: each program runs in a new session of
    it, as a user starts a program in a terminal that is already open."""

    def __init__(self, env: dict[str, str]) -> None:
        self.socket = f"chatui-bench-{uuid.uuid4().hex[:8]}"
        self.prefix = " ".join(f"{k}={json.dumps(v)}" for k, v in env.items())
        self._run("new-session", "-d", "-s", "idle", "-x", "140", "-y", "40", "sleep 3600")

    def _run(self, *args: str) -> str:
        command = ["tmux", "-L", self.socket, *args]
        return subprocess.run(command, capture_output=True, text=True, check=False).stdout

    def launch_until(self, command: str, marks: tuple[str, ...]) -> dict[str, float]:
        """Milliseconds from launching `command` until its screen first showed each mark
        (the screen is read until it shows them all)."""
        name = uuid.uuid4().hex[:8]
        started = time.perf_counter()
        self._run(
            "new-session", "-d", "-s", name, "-x", "140", "-y", "40", f"{self.prefix} {command}"
        )
        seen: dict[str, float] = {}
        try:
            while time.perf_counter() - started < 30:
                screen = self._run("capture-pane", "-p", "-t", name)
                now = (time.perf_counter() - started) * 1000
                seen.update({mark: now for mark in marks if mark not in seen and mark in screen})
                if len(seen) == len(marks):
                    return seen
                time.sleep(0.005)
            raise RuntimeError(f"never ready: {[m for m in marks if m not in seen]}")
        finally:
            pid = self._run("display-message", "-p", "-t", name, "#{pane_pid}").strip()
            self._run("kill-session", "-t", name)
            _wait_gone(int(pid) if pid.isdigit() else None)

    def close(self) -> None:
        self._run("kill-server")


def _wait_gone(pid: int | None, timeout: float = 5.0) -> None:
    """Until the killed program has exited: one still shutting down would take CPU from
    the next launch, and write into the home folder the bench is about to delete."""
    deadline = time.monotonic() + timeout
    while pid is not None and time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.005)


@contextlib.contextmanager
def cpu_bound_beside(processes: int | None = None) -> Iterator[None]:
    """A busy-looping process on every core but one (the machine's other work does not
    stop for a user's start-up either)."""
    count = processes if processes is not None else max(1, (os.cpu_count() or 2) - 1)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(0.5)  # scheduled and spinning before the first launch
        yield
    finally:
        for process in busy:
            process.kill()
            process.wait()


def startup_samples(runs: int = 9) -> dict[str, list[float]]:
    """Milliseconds per launch, `runs` launches of each program in tmux, alternating
    which goes first (load falls on both alike): "chatui" (its full UI ready), "bare" (a
    bare Textual app's first frame) and "bare footer" (that app's footer keys, which
    Textual draws a few frames later). A fresh chatui home: the new chat's screen."""
    # Bytecode as an install has it (pip compiles it; where PYTHONDONTWRITEBYTECODE is
    # set, a module edited since `make` would be compiled again on every launch).
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "chatui", "store", "widgets", "themes"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as home:
        env = {
            "CHATUI_HOME": home,
            "PATH": os.environ["PATH"],
            "TERM": "xterm-256color",
            "PYTHONPATH": str(ROOT),
        }
        script = Path(home) / "bare.py"
        script.write_text(BARE_APP)
        bare_command = f"{sys.executable} {script}"
        chatui_command = f"{CHATUI} --model demo"
        samples: dict[str, list[float]] = {"chatui": [], "bare": [], "bare footer": []}

        def bare() -> None:
            seen = terminal.launch_until(bare_command, BARE_MARKS)
            samples["bare"].append(seen["BARE-READY"])
            samples["bare footer"].append(seen["palette"])

        def chatui() -> None:
            samples["chatui"].append(
                max(terminal.launch_until(chatui_command, READY_MARKS).values())
            )

        terminal = _Terminal(env)
        try:
            # One launch of each first, not counted: the files are in the page cache.
            terminal.launch_until(bare_command, BARE_MARKS)
            terminal.launch_until(chatui_command, READY_MARKS)
            for i in range(runs):
                first, second = (bare, chatui) if i % 2 == 0 else (chatui, bare)
                first()
                second()
        finally:
            terminal.close()
    return samples


def measure_startup(runs: int = 9) -> tuple[float, float]:
    """Median milliseconds to chatui's full UI ready and to a bare Textual app's first
    frame (`startup_samples`: both in tmux, alternating, in the same run)."""
    samples = startup_samples(runs)
    return statistics.median(samples["chatui"]), statistics.median(samples["bare"])


def startup_row(runs: int, busy: bool) -> str:
    """One printed line: the medians, the ratios, and the load around the run."""
    load_before = os.getloadavg()[0]
    with cpu_bound_beside() if busy else contextlib.nullcontext():
        samples = startup_samples(runs)
    load_after = os.getloadavg()[0]
    chatui, bare, footer = (
        statistics.median(samples[k]) for k in ("chatui", "bare", "bare footer")
    )
    where = "a CPU-bound process beside" if busy else "the machine as it is"
    return (
        f"start-up, {where}: full UI ready {chatui:.0f} ms ÷ bare Textual first frame "
        f"{bare:.0f} ms = {chatui / bare:.2f}× (target ≤ 1.3×; ÷ its footer's keys, "
        f"{footer:.0f} ms: {chatui / footer:.2f}×; medians of {runs}; "
        f"load {load_before:.1f} → {load_after:.1f})"
    )


def first_frame(db: Path, home: Path, runs: int) -> tuple[list[float], list[float]]:
    """Milliseconds from launch to the first frame, and to the chat shown, per run."""
    frames, ready = [], []
    for _ in range(runs):
        name = f"bench-{uuid.uuid4().hex[:8]}"
        env = f"CHATUI_HOME={home}"
        start = time.perf_counter()
        tmux(
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "160",
            "-y",
            "45",
            f"{env} {CHATUI} --db {db} --model demo",
        )
        frame = elapsed = None
        while time.perf_counter() - start < 10:
            screen = tmux("capture-pane", "-p", "-t", name)
            if frame is None and FRAME_MARK in screen:
                frame = (time.perf_counter() - start) * 1000
            if READY_MARK in screen:
                elapsed = (time.perf_counter() - start) * 1000
                break
            time.sleep(0.002)
        tmux("kill-session", "-t", name)
        if elapsed is None or frame is None:
            raise RuntimeError("the app did not draw within 10 s")
        frames.append(frame)
        ready.append(elapsed)
        time.sleep(0.3)
    return frames, ready


def long_chat(store: Store, n: int) -> str:
    """A chat of `n` messages with a regenerated reply every 20 messages."""
    manager = SessionManager(store)
    info = manager.create("Long chat", model="demo")
    loop = asyncio.new_event_loop()
    parent = None
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        body = (
            f"Message {i}: "
            + "some words about the topic at hand " * 6
            + ("\n\n```python\nprint('hello')\n```" if i % 7 == 0 else "")
        )
        msg = {"id": f"m{i}", "role": role, "parts": [{"type": "text", "text": body}]}
        stored = loop.run_until_complete(manager.append(info.id, msg, parent))
        if role == "assistant" and i % 20 == 19:
            alt = {
                "id": f"alt{i}",
                "role": "assistant",
                "parts": [{"type": "text", "text": f"Alternative reply {i}"}],
            }
            loop.run_until_complete(manager.append(info.id, alt, parent))
        parent = stored.id
    loop.close()
    return info.id


async def in_app_timings(db: Path, chat_id: str, runs: int) -> dict[str, list[float]]:
    from chatui.core.config import Config
    from chatui.core.ui_state import UiState
    from chatui.tui.app import ChatApp

    store = Store(db)
    results: dict[str, list[float]] = {"open 2,000-message chat": [], "switch branch": []}
    app = ChatApp(store, Config(), ui_state=UiState(), warm_llm=False)
    async with app.run_test(size=(160, 45)) as pilot:
        main = app.main
        for _ in range(runs):
            await main.pane.open_chat(None)
            await pilot.pause()
            t = time.perf_counter()
            await main.pane.open_chat(chat_id)
            await pilot.pause()
            results["open 2,000-message chat"].append((time.perf_counter() - t) * 1000)
        assert main.chat is not None
        target = "m1999" if main.chat_view.view_for("m1999") else main.chat_view.views[-1]
        for i in range(runs):
            view = main.chat_view.views[-2]
            t = time.perf_counter()
            await main.pane.actions.act(view.message_id, "previous" if i % 2 == 0 else "next")
            await pilot.pause()
            results["switch branch"].append((time.perf_counter() - t) * 1000)
        del target
    store.close()
    return results


async def streaming_figures(db: Path, tokens: int = 1500, rate: float = 500.0) -> dict[str, float]:
    """Stream `tokens` words at `rate` per second through LiteLLM from the scripted server
    while typing into the input; time the keystrokes and check the stored text."""
    from textual import events

    from chatui.core.config import Config
    from chatui.core.ui_state import UiState
    from chatui.tui.app import ChatApp
    from tests.llm_server import LLMServer
    from tests.llm_server import text as scripted_text
    from widgets import ChatInput

    # Paragraphs of 60 words, as replies come.
    words = "\n\n".join(
        " ".join(f"w{i}" for i in range(p, min(p + 60, tokens))) for p in range(0, tokens, 60)
    )
    server = LLMServer().start()
    # The scripted server's sleeps overshoot: asking for 500/s gives about 300/s.
    server.script(scripted_text(words, delay=1 / rate))
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")
    store = Store(db)
    app = ChatApp(
        store, Config(model="openai/test-model", api_base=server.base_url), ui_state=UiState()
    )
    keystrokes: list[float] = []
    lags: list[float] = []
    try:
        async with app.run_test(size=(160, 45)) as pilot:
            main = app.main
            await pilot.pause()
            while not app.llm_ready:  # as a user would: LiteLLM warms up after start
                await asyncio.sleep(0.05)
            await pilot.press(*"go", "enter")
            box = main.query_one(ChatInput)
            while not main.generating:
                await pilot.pause(0.01)
            started = time.perf_counter()
            while main.generating:
                before = box.text
                t = time.perf_counter()
                # As the terminal driver delivers a key (Pilot.press waits for idle).
                app.post_message(events.Key("x", "x"))
                while box.text == before:
                    await asyncio.sleep(0.001)
                keystrokes.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                await asyncio.sleep(0.05)
                lags.append((time.perf_counter() - t) * 1000 - 50)
            elapsed = time.perf_counter() - started
            await pilot.pause()
            stored = main.snapshot.history[-1].text if main.snapshot else ""
    finally:
        server.stop()
        store.close()
    return {
        "tokens/s": len(words.split()) / elapsed,
        "keystroke p50": statistics.median(keystrokes),
        "keystroke max": max(keystrokes),
        "loop lag p50": statistics.median(lags),
        "loop lag max": max(lags),
        "exact": float(stored == words),
    }


def report(name: str, samples: list[float], target: str) -> None:
    print(
        f"{name:<28} median {statistics.median(samples):7.1f} ms   "
        f"min {min(samples):7.1f}   max {max(samples):7.1f}   target {target}"
    )


def main() -> None:
    # No warm model process left behind for the next run to adopt (chatui.llm.spare):
    # each run starts its own, as it measured before spares.
    os.environ.setdefault("CHATUI_SPARE_SECONDS", "0")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument(
        "--startup-only", action="store_true", help="only the start-up ratio, quiet and busy"
    )
    args = parser.parse_args()
    if not shutil.which("tmux"):
        sys.exit("tmux is needed for the first-frame figures")
    print(startup_row(args.runs, busy=False), flush=True)
    print(startup_row(args.runs, busy=True), flush=True)
    if args.startup_only:
        return
    folder = Path(tempfile.mkdtemp(prefix="chatui-app-bench-"))
    home = folder / "home"
    os.environ["CHATUI_HOME"] = str(home)

    empty = folder / "empty.db"
    Store(empty).close()
    big = folder / "big.db"
    build_corpus(big, args.messages, 1_000)
    print(f"databases in {folder}")
    frames, ready = first_frame(empty, home, args.runs)
    report("first frame, empty db", frames, "≤ 350 ms")
    report("  chat shown, empty db", ready, "")
    frames, ready = first_frame(big, home, args.runs)
    report(f"first frame, 1k chats/{args.messages // 1000}k", frames, "≤ 400 ms")
    report(f"  chat shown, 1k chats/{args.messages // 1000}k", ready, "")

    chat_db = folder / "long.db"
    with Store(chat_db) as store:
        chat_id = long_chat(store, 2_000)
    timings = asyncio.run(in_app_timings(chat_db, chat_id, args.runs))
    report("open 2,000-message chat", timings["open 2,000-message chat"], "≤ 300 ms")
    report("switch branch", timings["switch branch"], "≤ 100 ms")

    stream = asyncio.run(streaming_figures(folder / "stream.db"))
    print(
        f"streaming at {stream['tokens/s']:.0f} tokens/s: keystroke to screen p50 "
        f"{stream['keystroke p50']:.1f} ms, max {stream['keystroke max']:.1f} ms; event-loop "
        f"lag p50 {stream['loop lag p50']:.1f} ms, max {stream['loop lag max']:.1f} ms; "
        f"stored text equals streamed text: {'yes' if stream['exact'] else 'NO'}"
    )


if __name__ == "__main__":
    main()
