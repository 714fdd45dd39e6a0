"""Launch → first words: a question sent right after `chatui` starts, with and without
the spare model process (`chatui.llm.spare`), alternated in the same run.

Each round launches `chatui --model demo` in tmux on a fresh `CHATUI_HOME`, types a
question `--after` seconds after the launch and times from its Enter until the
demo's reply shows on the screen; then closes the terminal (the app ends as a killed
terminal ends it). With `CHATUI_SPARE_SECONDS=0` every launch starts a model process
that imports LiteLLM; with the spare on, the launch adopts the one the last round
left (the first round has none to adopt and is left out of its median).

    python bench/launch_reply_bench.py --rounds 5 --after 0.5
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHATUI = Path(sys.executable).parent / "chatui"
SESSION = "chatui-launch-bench"


def _screen() -> str:
    return subprocess.run(
        ["tmux", "-L", SESSION, "capture-pane", "-p", "-t", SESSION],
        capture_output=True,
        text=True,
    ).stdout


def _close() -> None:
    subprocess.run(["tmux", "-L", SESSION, "kill-server"], capture_output=True)


def one_launch(after: float, spare_seconds: int, runtime: str) -> float:
    """Seconds from Enter to the reply's first words on the screen."""
    home = tempfile.mkdtemp(prefix="chatui-bench-")
    env = {
        **os.environ,
        "CHATUI_HOME": home,
        "CHATUI_SPARE_SECONDS": str(spare_seconds),
        "XDG_RUNTIME_DIR": runtime,
        "TERM": "xterm-256color",
    }
    try:
        subprocess.run(
            ["tmux", "-L", SESSION, "new-session", "-d", "-s", SESSION, "-x", "120", "-y", "36"]
            + [f"{CHATUI} --model demo"],
            check=True,
            env=env,
        )
        time.sleep(after)
        subprocess.run(["tmux", "-L", SESSION, "send-keys", "-t", SESSION, "hello there", "Enter"])
        sent = time.monotonic()
        while "You wrote" not in _screen():
            if time.monotonic() - sent > 120:
                raise SystemExit("no reply in two minutes:\n" + _screen())
            time.sleep(0.02)
        return time.monotonic() - sent
    finally:
        _close()
        time.sleep(1.0)  # the model process notices its app's end (and waits, as the spare)
        shutil.rmtree(home, ignore_errors=True)


def _end_spares(runtime: str) -> None:
    """The spare this run left: asked its pid (it greets an app with it), then ended."""
    import json
    import signal
    import socket

    for path in Path(runtime).glob("chatui-*/model-*.sock"):
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.settimeout(5)
            probe.connect(str(path))
            hello = json.loads(probe.makefile("rb").readline())
            os.kill(int(hello["pid"]), signal.SIGKILL)
        except (OSError, ValueError, KeyError):
            pass
        finally:
            probe.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--after", type=float, default=0.5, help="seconds after launch")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("needs tmux")
    runtime = tempfile.mkdtemp(prefix="sp", dir="/tmp")  # the spare's socket, this run's own
    cold: list[float] = []
    warm: list[float] = []
    try:
        for _ in range(args.rounds):
            cold.append(one_launch(args.after, 0, runtime))
            warm.append(one_launch(args.after, 600, runtime))
    finally:
        _close()
        _end_spares(runtime)
        shutil.rmtree(runtime, ignore_errors=True)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"question sent {args.after:.1f} s after launch; load {load}")
    print(f"  no spare:   median {statistics.median(cold):.2f} s  {[round(x, 2) for x in cold]}")
    adopted = warm[1:] or warm
    print(
        f"  the spare:  median {statistics.median(adopted):.2f} s  "
        f"{[round(x, 2) for x in warm]} (the first round had none to adopt)"
    )


if __name__ == "__main__":
    main()
