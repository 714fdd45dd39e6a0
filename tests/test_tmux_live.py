"""The real app in a real terminal (tmux): a chat left mid-reply finishes in the
background (issue 10). The model is the scripted server on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from store import SessionManager, Store

from .app_helpers import wait_until_sync

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

WORDS = " ".join(f"w{i}" for i in range(500))


SOCKET = f"chatui-live-{uuid.uuid4().hex[:8]}"
"""A tmux server of our own: another server's options (window-size) cannot shrink us."""


def tmux(*args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=False
    ).stdout


def screen(name: str) -> str:
    return tmux("capture-pane", "-p", "-t", name)


def wait_screen(name: str, needle: str, seconds: float = 60) -> str:
    def showing() -> str | None:
        text = screen(name)
        return text if needle in text else None

    try:
        return wait_until_sync(showing, seconds, every=0.2)
    except AssertionError:
        raise AssertionError(f"{needle!r} never showed:\n{screen(name)}") from None


def streamed(db: Path, seconds: float = 60) -> None:
    """Until a reply streaming into `db` has its first words stored."""

    def started() -> bool:
        with Store(db) as store:
            manager = SessionManager(store)
            return any(
                m.role == "assistant" and m.text.startswith("w0 w1")
                for info in manager.list()
                for m in manager.get_session(info.id).get_tree()
            )

    wait_until_sync(started, seconds, every=0.2)


def test_a_chat_left_mid_reply_finishes_in_the_background(tmp_path, llm_server, fake_key):
    home = tmp_path / "home"
    db = tmp_path / "chats.db"
    with Store(db) as store:  # the chat we will switch to
        SessionManager(store).create("Other chat", model="openai/test-model")
    llm_server.text(WORDS, delay=0.04)  # twenty seconds of streaming
    name = f"chatui-live-{uuid.uuid4().hex[:8]}"
    chatui = str(Path(sys.executable).with_name("chatui"))
    env = {
        **{k: v for k, v in os.environ.items() if k.endswith("_API_KEY") or k == "PATH"},
        "CHATUI_HOME": str(home),
        "TERM": "xterm-256color",
    }
    command = " ".join(
        [
            *(f"{k}={v!r}" for k, v in env.items()),
            chatui,
            "--db",
            str(db),
            "--model",
            "openai/test-model",
        ]
    )
    config = home / "config"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(f'api_base = "{llm_server.base_url}"\nmax_retries = 0\n')
    tmux("new-session", "-d", "-s", name, "-x", "130", "-y", "36", command)
    tmux("set-option", "-t", name, "window-size", "manual")
    tmux("resize-window", "-t", name, "-x", "130", "-y", "36")
    try:
        wait_screen(name, "Other chat")
        tmux("send-keys", "-t", name, "C-n")
        time.sleep(0.5)
        tmux("send-keys", "-t", name, "-l", "Count slowly")
        tmux("send-keys", "-t", name, "Enter")
        streamed(db)  # the reply is streaming into the database
        tmux("send-keys", "-t", name, "C-s")
        try:
            # The list itself (its status line), not the chat's own "writing…" header
            # still on screen while a loaded machine opens the list.
            wait_screen(name, "enter open · r rename")
            wait_screen(name, "writing…")
        except AssertionError:
            with Store(db) as store:
                manager = SessionManager(store)
                for info in manager.list():
                    for m in manager.get_session(info.id).get_tree():
                        print(info.name, m.role, m.metadata, m.text[:80])
            print(llm_server.requests)
            raise  # the chat list marks the chat that replies
        time.sleep(1)
        tmux("send-keys", "-t", name, "Down")
        time.sleep(0.5)
        tmux("send-keys", "-t", name, "Enter")
        text = wait_screen(name, "has its reply", 90)  # it finished while we looked away
        assert "Other chat" in text
        with Store(db) as store:
            manager = SessionManager(store)
            chat = next(i for i in manager.list() if i.name == "Count slowly")
            reply = manager.get_session(chat.id).get_history()[-1]
            assert reply.text == WORDS and reply.metadata["status"] == "complete"
        tmux("send-keys", "-t", name, "C-q")
        time.sleep(1)
    finally:
        tmux("kill-server")
