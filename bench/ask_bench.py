"""`chatui ask` first token against `curl` to the same scripted server (issue 24):
printed, not asserted. `nice -n 10 python bench/ask_bench.py [--rounds N]`.

Both are measured in the same run, alternating, as a person runs them: a new
process per question, from its spawn to the first byte of the reply's words
on its stdout (a pipe). `curl` streams the completion itself (`-N`); the bench
reads its SSE lines until the first one that carries text. The server is the
tests' scripted OpenAI-compatible one on 127.0.0.1, answering every request
with the same short reply at once. Target: `chatui ask` ≤ curl + 60 ms (p50).

Also printed, once each: the first `ask` after none ran (it starts the warm ask
process, which loads LiteLLM), and `ask` in process (`CHATUI_ASK_DAEMON=0`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from chatui.cli.ask_client import socket_path  # noqa: E402
from tests.llm_server import LLMServer, text  # noqa: E402

CHATUI = Path(sys.executable).with_name("chatui")


def first_byte(argv: list[str], env: dict[str, str], *, sse: bool = False) -> float:
    """Seconds from spawning `argv` to the first byte of the reply's words on its stdout."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    assert proc.stdout is not None
    if sse:
        for line in proc.stdout:
            if line.startswith(b"data: {") and json.loads(line[6:])["choices"]:
                delta = json.loads(line[6:])["choices"][0].get("delta") or {}
                if delta.get("content"):
                    break
    else:
        proc.stdout.read(1)
    took = time.perf_counter() - start
    proc.stdout.read()
    if proc.wait() != 0:
        raise SystemExit(f"{argv[0]} failed with {proc.returncode}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    if not shutil.which("curl"):
        raise SystemExit("curl is needed")
    # As `make` installs it: bytecode written (PYTHONDONTWRITEBYTECODE would otherwise
    # have every start compile the client's modules again).
    subprocess.run([sys.executable, "-m", "compileall", "-q", "chatui", "store"], cwd=ROOT)
    server = LLMServer().start()
    server.default = text("Hello there, friend.", usage=(12, 4))
    home = Path(tempfile.mkdtemp(prefix="chatui-ask-bench-"))
    (home / "config").mkdir()
    (home / "config" / "config.toml").write_text(
        f'model = "test-model"\napi_base = "{server.base_url}"\n'
    )
    env = {**os.environ, "CHATUI_HOME": str(home), "CHATUI_ASK_IDLE": "120"}
    env.pop("CHATUI_ASK_DAEMON", None)
    body = json.dumps(
        {
            "model": "test-model",
            "stream": True,
            "messages": [{"role": "user", "content": "say hello"}],
        }
    )
    curl = ["curl", "-sN", "-H", "Content-Type: application/json", "-d", body]
    curl.append(f"{server.base_url}/chat/completions")
    ask = [str(CHATUI), "ask", "say hello"]
    os.environ["CHATUI_HOME"] = str(home)
    sock = socket_path()
    try:
        cold = first_byte(ask, env)  # starts the ask process (LiteLLM loads there)
        first_byte(ask, env)  # its warm-up rehearsal done, the store's caches warm
        in_process = first_byte(ask, {**env, "CHATUI_ASK_DAEMON": "0"})
        load_before = os.getloadavg()
        curls, asks = [], []
        for i in range(rounds):  # who goes first alternates: neither always follows the other
            if i % 2:
                asks.append(first_byte(ask, env))
                curls.append(first_byte(curl, env, sse=True))
            else:
                curls.append(first_byte(curl, env, sse=True))
                asks.append(first_byte(ask, env))
        load_after = os.getloadavg()
    finally:
        if sock and os.path.exists(sock):
            os.unlink(sock)  # the ask process sees its socket gone and exits
        server.stop()
        shutil.rmtree(home, ignore_errors=True)

    def ms(values: list[float], q: int) -> float:
        if q == 50:
            return statistics.median(values) * 1000
        return statistics.quantiles(values, n=100)[q - 1] * 1000

    print(f"first token over a new process, {rounds} rounds each, alternating (ms):")
    print(
        f"  load average {load_before[0]:.1f} before, {load_after[0]:.1f} after "
        f"({os.cpu_count()} cores)"
    )
    print(f"  curl            p50 {ms(curls, 50):7.1f}   p90 {ms(curls, 90):7.1f}")
    print(f"  chatui ask      p50 {ms(asks, 50):7.1f}   p90 {ms(asks, 90):7.1f}")
    print(f"  ask − curl      p50 {ms(asks, 50) - ms(curls, 50):+7.1f}   (target ≤ +60)")
    print(f"  first ask, no ask process running: {cold * 1000:.0f} ms (starts it)")
    print(f"  ask in process (CHATUI_ASK_DAEMON=0): {in_process * 1000:.0f} ms")


if __name__ == "__main__":
    main()
