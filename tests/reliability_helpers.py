"""Running the real app in a separate process, and reading what it left on disk.

`app_process(home, steps, *argv)` starts `chatui` (the console entry point, through
`chatui.cli.commands`) in a child process with its own CHATUI_HOME. The only change from a
user's run is that Textual runs headless and a scripted pilot presses the keys: every
service (config, store, engine, LiteLLM, logging, state) is the real one.

Steps are JSON lists:
    ["type", "text"]          type the text into the focused widget, then
    ["press", "key", ...]     press keys
    ["idle"]                  wait until no reply is being written
    ["wait_text", "words"]    wait until a shown message contains the words
    ["say", "tag"]            print `tag` on stdout (the parent waits for it)
    ["files"]                 print {relative path: mode} of every file under CHATUI_HOME
    ["views"]                 print [[header, text], ...] of the messages shown
    ["call", "name"]          call the palette command `name` (`MainScreen.commands`)
    ["pause", seconds]        let the app run
    ["hold"]                  wait forever (the parent kills the process)
    ["quit"]                  press ctrl+q
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

CHILD = textwrap.dedent("""
    import asyncio, json, os, stat, sys
    from pathlib import Path

    from chatui import cli
    from chatui.tui.app import ChatApp

    steps = json.loads(sys.argv[1])
    home = Path(os.environ["CHATUI_HOME"])

    def files():
        return {str(p.relative_to(home)): oct(stat.S_IMODE(p.stat().st_mode))
                for p in sorted(home.rglob("*"))}

    async def shown(app):
        from widgets import MessageView
        return [v.text for v in app.screen.query(MessageView)]

    async def pilot_script(pilot):
        app = pilot.app
        await pilot.pause()
        for step in steps:
            kind, args = step[0], step[1:]
            if kind == "type":
                await pilot.press(*args[0])
            elif kind == "press":
                await pilot.press(*args)
            elif kind == "idle":
                for _ in range(1500):
                    await pilot.pause(0.02)
                    if not app.main.generating:
                        break
                await pilot.pause(0.1)
            elif kind == "wait_text":
                for _ in range(1500):
                    await pilot.pause(0.02)
                    if any(args[0] in t for t in await shown(app)):
                        break
                else:
                    raise AssertionError(f"never shown: {args[0]!r}")
            elif kind == "say":
                print(args[0], flush=True)
            elif kind == "files":
                print(json.dumps(files()), flush=True)
            elif kind == "views":
                from widgets import MessageView
                print(json.dumps([[v.header().plain, v.text]
                                  for v in app.screen.query(MessageView)]), flush=True)
            elif kind == "call":
                result = getattr(app.main.commands, args[0])()
                if asyncio.iscoroutine(result):
                    await result
            elif kind == "pause":
                await pilot.pause(args[0])
            elif kind == "hold":
                await asyncio.sleep(3600)
            elif kind == "quit":
                await pilot.press("ctrl+q")
            else:
                raise AssertionError(f"unknown step {kind}")

    original = ChatApp.run

    def headless_run(self, **kwargs):
        return original(self, headless=True, size=(120, 40), auto_pilot=pilot_script)

    ChatApp.run = headless_run
    sys.exit(cli.main(sys.argv[2:]))
""")


def child_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a child: the test's (keys included), CHATUI_HOME set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update({"CHATUI_HOME": str(home), "CHATUI_DEMO_DELAY": "0", "TERM": "xterm-256color"})
    env.update(extra)
    return env


def app_process(
    home: Path, steps: list[list[Any]], *argv: str, **env: str
) -> subprocess.Popen[str]:
    """Start the app in a child process running `steps`; the caller waits or kills it."""
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps(steps), *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=child_env(home, **env),
        start_new_session=True,
        umask=0o022,
    )  # the usual umask: files are private because chatui makes them so


def run_app(
    home: Path, steps: list[list[Any]], *argv: str, timeout: float = 120, **env: str
) -> tuple[int, list[str], str]:
    """Run the app to the end: (exit code, stdout lines, stderr)."""
    child = app_process(home, steps, *argv, **env)
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        raise AssertionError(f"the app did not finish:\n{out}\n{err}") from None
    return child.returncode, out.splitlines(), err


def write_config(home: Path, **settings: Any) -> Path:
    """A config.toml under `home` with plain string/number settings."""
    path = home / "config" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)
