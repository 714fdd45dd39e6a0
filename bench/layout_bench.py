"""The CPU of one screen layout of a scrolled chat, alone (issue 22).

A send lays the screen out once or twice (its question and reply mounted; the
reply's second line), and each layout is a reflow of the screen and a frame
that repaints the whole scrolled chat area. `local_bench.py` measures a whole
send, whose spread between runs on this shared machine is wider than a
millisecond's cut; this measures that layout alone, many times in one process:
the chat's last reply (after `--history` exchanges, as `local_bench.py
--history` stores them) goes from one line to two and back, each change a
layout and its frame, rendered to terminal text as a terminal driver would.
Run on demand (never in tests):

    .venv/bin/python bench/layout_bench.py --history 30 --rounds 200
    .venv/bin/python bench/layout_bench.py --history 60 --earlier-pages 3  # 48 views
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.local_bench import MODEL, add_history  # noqa: E402
from chatui.core.config import Config  # noqa: E402
from chatui.core.ui_state import UiState  # noqa: E402
from chatui.tui.app import ChatApp  # noqa: E402
from store import Store  # noqa: E402


async def run(history: int, rounds: int, profile: str | None, pages: int = 0) -> None:
    from textual._compositor import Compositor

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    with tempfile.TemporaryDirectory() as home:
        os.environ["CHATUI_HOME"] = home
        store = Store(Path(home) / "bench.db")
        config = Config(model=MODEL, api_base="http://127.0.0.1:9/v1", max_retries=0)
        app = ChatApp(store, config, ui_state=UiState())
        counts = {"frames": 0, "reflows": 0}
        display = app._display
        reflow = Compositor.reflow

        def counted_reflow(compositor: Any, *args: Any, **kwargs: Any) -> Any:
            counts["reflows"] += 1
            return reflow(compositor, *args, **kwargs)

        def counted_display(screen: Any, renderable: Any) -> None:
            display(screen, renderable)
            if renderable is None or app._batch_count:
                return
            counts["frames"] += 1
            render = getattr(renderable, "render_segments", None)
            if render is not None:
                render(app.console)

        Compositor.reflow = counted_reflow  # type: ignore[method-assign]
        app._display = counted_display  # type: ignore[method-assign]
        profiler = None
        if profile:
            import cProfile

            profiler = cProfile.Profile()
        async with app.run_test(size=(140, 40)) as pilot:
            worker = app.workspace.worker
            while not app.llm_ready or (worker is not None and not worker.ready.is_set()):
                await pilot.pause(0.05)  # the model process and LiteLLM, loaded at start
            chat = app.workspace.create_chat("bench", model=MODEL)
            await add_history(app, chat.id, history)
            main = app.main
            await main.pane.open_chat(chat.id)
            await pilot.pause(0.3)
            for _ in range(pages):  # a long sitting keeps up to four pages mounted
                await main.chat_view.load_earlier()
                await pilot.pause(0.2)
            main.chat_view.scroll_end(animate=False)
            await pilot.pause(0.3)
            views = [v for v in main.chat_view.query("MessageView")]
            body = views[-1]._body_widget()
            assert body is not None
            short, long = "word " * 5, "word " * 40
            cpu: list[float] = []
            for index in range(rounds):
                before = counts["reflows"]
                started = time.process_time()
                if profiler is not None:
                    profiler.enable()
                body.update(long if index % 2 == 0 else short)  # type: ignore[attr-defined]
                while counts["reflows"] == before:
                    await asyncio.sleep(0.005)
                await asyncio.sleep(0.05)  # the frames that follow it
                if profiler is not None:
                    profiler.disable()
                cpu.append(time.process_time() - started)
        store.close()
    if profiler is not None and profile:
        profiler.dump_stats(profile)
    print(
        f"history {history}, {len(views)} message views mounted, {rounds} layouts; load: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(
        f"CPU per layout p50 {statistics.median(cpu) * 1000:.2f} ms, "
        f"p10 {sorted(cpu)[len(cpu) // 10] * 1000:.2f} ms, "
        f"mean {statistics.mean(cpu) * 1000:.2f} ms; frames {counts['frames']}, "
        f"reflows {counts['reflows']}"
    )


def main() -> None:
    # No warm model process left behind for the next run to adopt (chatui.llm.spare):
    # each run starts its own, as it measured before spares.
    os.environ.setdefault("CHATUI_SPARE_SECONDS", "0")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--profile", help="write a cProfile of the layouts to this file")
    parser.add_argument(
        "--earlier-pages",
        type=int,
        default=0,
        help="earlier pages mounted besides the newest (a long sitting's chat: up to 3)",
    )
    args = parser.parse_args()
    asyncio.run(run(args.history, args.rounds, args.profile, args.earlier_pages))


if __name__ == "__main__":
    main()
