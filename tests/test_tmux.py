"""The real app in a real terminal (tmux): what a user at 80×24 sees."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from store import SessionManager, Store

from .app_helpers import wait_until_sync

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")

CHATUI = Path(sys.executable).parent / "chatui"


class Terminal:
    """One tmux session running `chatui` at a fixed size, on a tmux server of its own.

    Its own server (`tmux -L`): a shared server keeps the environment of whichever
    process started it, so tests on parallel workers would hand each other their
    environments (API keys, servers' addresses).
    """

    def __init__(self, home: Path, width: int, height: int, *argv: str) -> None:
        self.name = f"chatui-test-{uuid.uuid4().hex[:8]}"
        self.start(f"CHATUI_HOME={home} {CHATUI} {' '.join(argv)}", width, height)

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.name, *args], capture_output=True, text=True, check=check
        )

    def start(self, command: str, width: int, height: int) -> None:
        subprocess.run(
            ["tmux", "-L", self.name, "new-session", "-d", "-s", self.name]
            + ["-x", str(width), "-y", str(height), command],
            check=True,
            env={**os.environ, "TERM": "xterm-256color"},
        )

    def screen(self) -> list[str]:
        return self.tmux("capture-pane", "-p", "-t", self.name, check=False).stdout.splitlines()

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def wait_for(self, words: str, timeout: float = 60) -> list[str]:
        def showing() -> list[str] | None:
            lines = self.screen()
            return lines if any(words in line for line in lines) else None

        try:
            return wait_until_sync(showing, timeout, every=0.2)
        except AssertionError:
            raise AssertionError(f"{words!r} never showed:\n" + "\n".join(self.screen())) from None

    def settle(self, quiet: float = 0.5) -> None:
        """Until the screen, colours included (the focus is drawn in colour), has not
        changed for `quiet` seconds: a key sent now goes where the app has settled."""
        seen: dict[str, object] = {"screen": None, "since": time.monotonic()}

        def still() -> bool:
            screen = self.tmux("capture-pane", "-e", "-p", "-t", self.name, check=False).stdout
            if screen != seen["screen"]:
                seen.update(screen=screen, since=time.monotonic())
            return time.monotonic() - float(seen["since"]) >= quiet  # type: ignore[arg-type]

        wait_until_sync(still, 60, every=0.1)

    def close(self) -> None:
        self.tmux("kill-server", check=False)


@pytest.fixture
def terminal(tmp_path):
    opened: list[Terminal] = []

    def start(width: int, height: int, *argv: str) -> Terminal:
        term = Terminal(tmp_path, width, height, *argv)
        opened.append(term)
        return term

    yield start
    for term in opened:
        term.close()


def test_at_80x24_a_reply_reads_across_at_least_60_columns(terminal):
    term = terminal(80, 24, "--model", "demo")
    term.wait_for("Message · enter sends")
    term.send("Tell me how branching works in this app please", "Enter")
    lines = term.wait_for("summarise", timeout=40)
    # The tree strip ends at its border; the chat pane is everything right of it.
    title = next(line for line in lines if "Tell me how branching" in line and "▕" in line)
    border = title.index("▕")
    assert 80 - border - 1 >= 60, title
    # The reply wraps at the pane's width, not in a sliver: its lines are long.
    reply = [line[border + 1 :].strip(" ▌") for line in lines if "summarise" in line]
    body = [line[border + 1 :] for line in lines]
    longest = max(len(line.rstrip()) for line in body if "echo" in line or "summarise" in line)
    assert longest >= 50, "\n".join(lines)
    assert reply and "palette" in lines[-1]  # the footer, whole
    assert any("Message · enter sends" in line for line in lines)  # the input stays


def test_agents_offline_the_demo_model_asks_another_agent(terminal, tmp_path):
    config = tmp_path / "config"
    config.mkdir(mode=0o700)
    (config / "config.toml").write_text(
        'model = "demo"\n\n'
        '[[agents]]\nname = "planner"\nmodel = "demo"\ndescription = "Plans trips"\n'
        'peers = ["researcher"]\n\n'
        '[[agents]]\nname = "researcher"\nmodel = "demo"\ndescription = "Finds facts"\n'
    )
    term = terminal(170, 40)
    term.wait_for("Message · enter sends")
    term.send("C-n")
    term.wait_for("Default assistant")
    term.send("Down", "Enter")  # planner
    time.sleep(0.5)
    term.send("Ask the researcher when the Gulbenkian opens", "Enter")
    lines = term.wait_for("I asked researcher", timeout=40)
    screen = "\n".join(lines)
    assert "asked researcher" in screen  # the tree marks the hop (⇄ asked researcher)
    term.wait_for("agent planner", timeout=20)  # the title names the agent
    # The researcher's own chat holds the delivered question, labelled with its sender.
    term.send("C-s")
    term.wait_for("researcher ←")


def test_typing_fast_after_enter_and_on_a_focused_message_loses_nothing(terminal):
    """Issue 20, as a new user hit it: `send-keys "first message" Enter "second typed
    fast"` lost the second text (the input was cleared when the question was stored),
    and after `up` a typed sentence ran the message keys (`r` regenerated, `e` edited).
    In a real terminal, keys come faster than Pilot's."""
    term = terminal(80, 24, "--model", "demo")
    term.wait_for("Message · enter sends")
    term.send("first message", "Enter", "second typed fast")
    term.wait_for("summarise", timeout=40)  # the demo's reply
    lines = term.wait_for("second typed fast")
    assert not any("first message" in line and "│" in line for line in lines)  # sent: gone
    term.send("C-a", "C-k")  # clear the box (the input's own keys)
    term.send("Up")
    term.wait_for("Regenerate")  # the focused message's keys in the footer
    term.send("really eat every regenerated carrot")
    lines = term.wait_for("really eat every regenerated carrot")
    assert not any("‹2/2›" in line for line in lines)  # nothing was regenerated
    assert not any("Edit message" in line for line in lines)  # nor an editor opened


def test_a_paste_with_escapes_and_carriage_returns_stays_in_the_input(terminal):
    """Issue 20: a paste holding ESC and `\\r` was sent at once and cut at the `\\r`
    (Textual's parser re-sent the paste as keys from its first ESC). The paste lands in
    the input, its colour codes gone, its lines kept, and nothing is sent."""
    term = terminal(80, 24, "--model", "demo")
    term.wait_for("Message · enter sends")
    pasted = "first line\x1b[31m red\x1b[0m\rsecond line\nthird"
    term.tmux("set-buffer", "-b", term.name, pasted)
    term.tmux("paste-buffer", "-p", "-d", "-b", term.name, "-t", term.name)
    lines = term.wait_for("third")
    box = [line for line in lines if "│" in line]
    assert any("first line red" in line for line in box), "\n".join(lines)
    assert any("second line" in line for line in box)
    assert not any("You ·" in line for line in lines)  # nothing was sent
    assert not any("[31m" in line or "^[" in line for line in lines)


def wait_for_draft(home: Path, text: str) -> None:
    """Until `text` is a draft in the UI state file (written as it is typed)."""
    state = home / "data" / "state.json"

    def written() -> bool:
        try:
            return text in json.loads(state.read_text())["drafts"].values()
        except (OSError, ValueError, KeyError):
            return False

    wait_until_sync(written, 30)


def test_a_draft_outlives_the_terminal_being_killed(terminal, tmp_path):
    """Drafts are written as they are typed, not only on a switch or a quit: a
    terminal closed with SIGKILL (no chance to save anything) keeps the draft."""
    term = terminal(100, 30, "--model", "demo")
    term.wait_for("Message · enter sends")
    term.send("Where does the river start", "Enter")
    term.wait_for("You ·")  # the question is stored: the chat is
    term.send("-l", "and half a question about its mouth")
    wait_for_draft(tmp_path, "and half a question about its mouth")
    pane = int(term.tmux("list-panes", "-t", term.name, "-F", "#{pane_pid}").stdout.split()[0])
    os.killpg(pane, signal.SIGKILL)  # the pane's whole process group: chatui and its helpers
    again = terminal(100, 30)
    again.wait_for("and half a question about its mouth")


def test_keys_typed_while_the_app_starts_reach_the_input(terminal, tmp_path):
    """Typing straight after `chatui` lost every key: the keys were read before the input
    had the focus (the screen got them), and the first chat's draft then replaced the
    input. They are typed into the input, after the chat's draft."""
    term = terminal(100, 30, "--model", "demo")
    term.send("-l", "Where does the river start")  # in the terminal's buffer already
    term.wait_for("New chat")  # the app's screen, not the terminal's echo of the keys
    lines = term.wait_for("Where does the river start")
    assert any("│ Where does the river start" in line for line in lines)  # in the input
    term.send("Enter")
    term.wait_for("You ·")
    term.send("-l", "a draft")
    wait_for_draft(tmp_path, "a draft")
    term.close()  # the terminal closed: the draft is written already
    again = terminal(100, 30, "--model", "demo")
    again.send("-l", " and more")
    lines = again.wait_for("a draft and more")
    assert any("Where does the river start" in line for line in lines)  # the same chat


def _rivers_chat(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with Store(data / "chats.db") as store:
        manager = SessionManager(store)
        chat = manager.create("Rivers", model="demo")
        messages = [
            {"id": f"{kind}-{n}", "role": role, "parts": [{"type": "text", "text": f"{kind} {n}"}]}
            for n in ("one", "two", "three")
            for role, kind in (("user", "question"), ("assistant", "answer"))
        ]
        asyncio.run(manager.append_all(chat.id, messages))


def test_a_key_sent_with_the_arrows_goes_to_the_message_they_reach(terminal, tmp_path):
    """`send-keys Up e` in one write typed the `e` into the input: every key read
    together went to the input, and the focus moved after them. A key behind the arrow
    that left the input now goes where the arrow sent the focus (the editor opens).
    (Only the input's arrow: keys split across two reads behind a message's own arrow
    can still reach the message that arrow left, so `Up Up e` is not asserted.)"""
    _rivers_chat(tmp_path)
    term = terminal(100, 30, "--model", "demo")
    term.wait_for("answer three")
    term.settle()
    term.send("Up", "e")  # answer three, its editor
    lines = term.wait_for("escape cancels")
    assert any("│  │ answer three" in line for line in lines), "\n".join(lines)
    term.send("Escape")
    wait_until_sync(lambda: not any("escape cancels" in line for line in term.screen()), 30)
    term.settle()
    assert not any("│ e " in line or line.rstrip().endswith("│ e") for line in term.screen())


def test_arrow_keys_sent_together_move_one_message_each(terminal, tmp_path):
    """`send-keys Up Up Up Up` (a held key, a terminal writing keys together) moved the
    focus one message: the keys were all handed to the input, which had the focus when
    they were read, and each sent it to the last message again."""
    data = tmp_path / "data"
    data.mkdir()
    with Store(data / "chats.db") as store:
        manager = SessionManager(store)
        chat = manager.create("Rivers", model="demo")
        messages = [
            {"id": f"{kind}-{n}", "role": role, "parts": [{"type": "text", "text": f"{kind} {n}"}]}
            for n in ("one", "two", "three")
            for role, kind in (("user", "question"), ("assistant", "answer"))
        ]
        asyncio.run(manager.append_all(chat.id, messages))
    term = terminal(100, 30, "--model", "demo")
    term.wait_for("answer three")
    term.settle()
    term.send("Up", "Up", "Up", "Up")  # answer three, question three, answer two, question two
    term.wait_for("Regenerate")  # a message has the focus
    term.settle()  # where it ends (a key sent now goes where the focus is when it is read)
    term.send("e")
    lines = term.wait_for("escape cancels")  # the editor, holding the focused message
    assert any("│  │ question two" in line for line in lines), "\n".join(lines)
    term.send("Escape")
    wait_until_sync(lambda: not any("escape cancels" in line for line in term.screen()), 30)
    term.settle()
    term.send("Down", "Down", "Down", "Down")  # past the last message: the input
    term.send("-l", "typed below")
    lines = term.wait_for("typed below")
    assert any("│ typed below" in line for line in lines)


def test_enter_typed_while_the_app_starts_sends_the_message(terminal):
    """Keys typed before the app takes the terminal wait in its buffer, and the shell's
    mode (ICRNL) turned enter into a newline there: the question stayed in the input
    with a new line under it, unsent. Enter typed then sends it, as it does later."""
    term = terminal(100, 30, "--model", "demo")
    term.send("-l", "Where does the river start")  # in the terminal's buffer already
    term.send("Enter")
    lines = term.wait_for("You ·")
    assert any("▌ Where does the river start" in line for line in lines)  # sent
    assert not any("│ Where does the river start" in line for line in lines)  # not a draft


def test_quit_and_start_again_the_first_question_is_answered_by_the_warm_spare(
    terminal, monkeypatch
):
    """The first reply after launch waited seconds for a new model process to import
    LiteLLM. Quit with ctrl+q (or a killed terminal): the app's model process waits as
    the spare, and the next `chatui` adopts it."""
    import tempfile

    from chatui.llm import spare

    folder = tempfile.mkdtemp(prefix="sp", dir="/tmp")  # a socket's path is short
    monkeypatch.setenv("XDG_RUNTIME_DIR", folder)
    monkeypatch.setenv("CHATUI_SPARE_SECONDS", "60")
    monkeypatch.setenv("CHATUI_DEMO_DELAY", "0")  # its reply ends at once: quit asks nothing
    path = spare.spare_path()
    assert path is not None
    try:
        first = terminal(100, 30, "--model", "demo")
        first.wait_for("Message · enter sends")
        first.send("one", "Enter")
        first.wait_for("real model with ctrl+l")  # its model process is warm now
        wait_until_sync(lambda: not any("replying" in line for line in first.screen()), 30)
        first.send("C-q")
        wait_until_sync(lambda: os.path.exists(path), 30, every=0.1)

        second = terminal(100, 30, "--model", "demo")
        wait_until_sync(lambda: not os.path.exists(path), 30, every=0.1)  # adopted
        second.wait_for("Message · enter sends")
        second.send("two words", "Enter")
        second.wait_for("You wrote 2 words")
        second.close()  # a killed terminal: the spare waits again
        wait_until_sync(lambda: os.path.exists(path), 30, every=0.1)
    finally:
        with contextlib.suppress(OSError):
            if os.path.exists(path):  # the spare: sent away as an app would leave it
                import socket

                probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                probe.connect(path)
                hello = probe.makefile("rb").readline()
                os.kill(int(json.loads(hello)["pid"]), signal.SIGKILL)
                probe.close()
        shutil.rmtree(folder, ignore_errors=True)
