"""`chatui ask` first token against `curl` to the same scripted server (issue 24):
printed, not asserted. `nice -n 10 python bench/ask_bench.py [--rounds N]`.

Both are measured in the same run, alternating, as a person runs them: a new
process per question, from its spawn to the first byte of the reply's words
on its stdout (a pipe). `curl` streams the completion itself (`-N`); the bench
reads its SSE lines until the first one that carries text. The server is the
tests' scripted OpenAI-compatible one on 127.0.0.1, answering every request
with the same short reply at once. Target: `chatui ask` ≤ curl + 60 ms (p50).

`curl` posts the very request `ask` made (the system prompt, the question, the
memory tools: captured by the server from the warm-up ask), so the server reads
and answers the same bytes on both sides. The order alternates round by round.
The load average is printed with the figures (wall times on a shared machine
move with it), and the CPU each side used per question, which does not.

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


CPU: dict[str, float] = {}
"""Seconds of CPU the spawned processes used, by what they were (`first_byte`'s `label`)."""


def first_byte(argv: list[str], env: dict[str, str], *, sse: bool = False, label: str) -> float:
    """Seconds from spawning `argv` to the first byte of the reply's words on its stdout
    (its CPU time is added to `CPU[label]`)."""
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
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} failed with {proc.returncode}")
    CPU[label] = CPU.get(label, 0.0) + usage.ru_utime + usage.ru_stime
    return took


def process_cpu(pid: int) -> float:
    """Seconds of CPU process `pid` used so far (/proc: user + system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ask_process(sock: str) -> int | None:
    """The pid of the ask process listening on `sock` (None: not found)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"chatui.cli.ask_daemon" in argv and sock.encode() in argv:
                return int(entry.name)
    return None


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
    ask = [str(CHATUI), "ask", "say hello"]
    os.environ["CHATUI_HOME"] = str(home)
    sock = socket_path()
    assert sock is not None, "no private folder for the ask socket"
    try:
        cold = first_byte(ask, env, label="cold")  # starts the ask process (LiteLLM loads)
        first_byte(ask, env, label="warm")  # its warm-up rehearsal done, caches warm
        in_process = first_byte(ask, {**env, "CHATUI_ASK_DAEMON": "0"}, label="in process")
        # curl posts the very request `ask` made (its system prompt, the question, the
        # memory tools), so the server reads and answers the same bytes for both.
        body = json.dumps(server.requests[-1])
        curl = ["curl", "-sN", "-H", "Content-Type: application/json", "-d", body]
        curl.append(f"{server.base_url}/chat/completions")
        pid = ask_process(sock)
        daemon_before = process_cpu(pid) if pid else 0.0
        load_before = os.getloadavg()
        curls, asks = [], []
        for i in range(rounds):  # who goes first alternates: neither always follows the other
            if i % 2:
                asks.append(first_byte(ask, env, label="ask"))
                curls.append(first_byte(curl, env, sse=True, label="curl"))
            else:
                curls.append(first_byte(curl, env, sse=True, label="curl"))
                asks.append(first_byte(ask, env, label="ask"))
        load_after = os.getloadavg()
        daemon_cpu = process_cpu(pid) - daemon_before if pid else float("nan")
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
    print(
        f"  CPU per question: curl {CPU['curl'] / rounds * 1000:.1f} ms; ask "
        f"{CPU['ask'] / rounds * 1000:.1f} ms (its process) + "
        f"{daemon_cpu / rounds * 1000:.1f} ms (the ask process, the whole turn)"
    )
    print(f"  first ask, no ask process running: {cold * 1000:.0f} ms (starts it)")
    print(f"  ask in process (CHATUI_ASK_DAEMON=0): {in_process * 1000:.0f} ms")


if __name__ == "__main__":
    main()
