"""Start-up counted in instructions (issue 23): steadier than wall-clock on a shared machine.

Runs chatui (`--model demo`, a fresh home) and the bare Textual app of `app_bench`
under callgrind in tmux at 140×40, alternately, and prints the instructions each
executed from launch until the terminal was handed the frame that showed its marks
(`frame_hook/sitecustomize.py` ends the process there): chatui to the frame with its
full UI (`app_bench.READY_MARKS`: its first frame, footer keys and gauges included), the
bare app to the frame with its text. One launch of chatui first, not counted, writes its
compile and stylesheet caches, as an installed app's first start does. `--keep DIR`
keeps the profiles (`callgrind_annotate DIR/chatui-1.out` shows where the time goes).

    .venv/bin/python bench/callgrind_startup.py --runs 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from app_bench import BARE_APP, BARE_MARKS, CHATUI, READY_MARKS, _Terminal  # noqa: E402

HOOK = Path(__file__).resolve().parent / "frame_hook"


def counted(
    socket: str,
    command: str,
    marks: tuple[str, ...],
    env: dict[str, str],
    out: Path,
    call: str | None = None,
) -> int:
    """Instructions from launching `command` under callgrind to the frame with `marks`,
    or to the first call of `call` ("module:Class.method"); the profile goes to `out`."""
    out.unlink(missing_ok=True)
    exports = {**env, "PYTHONPATH": str(HOOK), "CHATUI_BENCH_EXIT_AT": "|".join(marks)}
    if call:
        exports["CHATUI_BENCH_EXIT_AT_CALL"] = call
    prefix = " ".join(f"{k}='{v}'" for k, v in exports.items())
    valgrind = f"valgrind --tool=callgrind --dump-instr=no --callgrind-out-file={out} -q"
    name = uuid.uuid4().hex[:8]
    subprocess.run(
        [
            "tmux",
            "-L",
            socket,
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "140",
            "-y",
            "40",
            f"{prefix} {valgrind} {command}",
        ],
        check=True,
    )
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        text = out.read_text() if out.exists() else ""
        if "\ntotals:" in text or "\nsummary:" in text:
            break
        time.sleep(0.5)
    else:
        raise RuntimeError(f"no callgrind total for {command}")
    totals = [line for line in text.splitlines() if line.startswith(("totals:", "summary:"))]
    return int(totals[0].split()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=("chatui", "bare"), default=None)
    parser.add_argument("--keep", type=Path, default=None, help="a folder for the profiles")
    parser.add_argument(
        "--exit-at-call",
        metavar="MODULE:CLASS.METHOD",
        help="count to the first call of this instead (textual.app:App.run: the imports, "
        "config and database)",
    )
    args = parser.parse_args()
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "chatui", "store", "widgets", "themes"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    results: dict[str, list[int]] = {"chatui": [], "bare": []}
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as home:
        profiles = args.keep or Path(home) / "profiles"
        profiles.mkdir(parents=True, exist_ok=True)
        env = {"CHATUI_HOME": home, "PATH": os.environ["PATH"], "TERM": "xterm-256color"}
        script = Path(home) / "bare.py"
        script.write_text(BARE_APP)
        chatui = f"{CHATUI} --model demo"
        bare = f"{sys.executable} {script}"
        terminal = _Terminal({**env, "PYTHONPATH": str(ROOT)})
        try:
            terminal.launch_until(chatui, READY_MARKS)  # writes the caches, not counted
            launches = {"chatui": (chatui, READY_MARKS), "bare": (bare, BARE_MARKS[:1])}
            for run in range(1, args.runs + 1):
                load = os.getloadavg()[0]
                row = []
                for which, (command, marks) in launches.items():
                    if args.only in (None, which):
                        out = profiles / f"{which}-{run}.out"
                        results[which].append(
                            counted(terminal.socket, command, marks, env, out, args.exit_at_call)
                        )
                        row.append(f"{which} {results[which][-1] / 1e6:,.1f} M")
                print(f"{', '.join(row)} (load {load:.1f})", flush=True)
        finally:
            terminal.close()
    medians = {k: statistics.median(v) for k, v in results.items() if v}
    summary = ", ".join(f"{k} {v / 1e6:,.1f} M" for k, v in medians.items())
    if len(medians) == 2:
        summary += f"; chatui ÷ bare {medians['chatui'] / medians['bare']:.3f}×"
    print(f"medians of {args.runs}: {summary}")


if __name__ == "__main__":
    main()
