"""A process killed mid-reply (SIGKILL) leaves the user message and the partial reply."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from store import Store
from tests import llm_server as script

CHILD = textwrap.dedent("""
    import asyncio, sys
    from store import Store
    from chatui.core.config import Config
    from chatui.core.engine import ChatEngine
    from chatui.core.wiring import build_manager

    async def main(db, url):
        config = Config(model="openai/test-model", api_base=url, request_timeout=30)
        manager = build_manager(Store(db), config)
        manager.create("doomed", id="s1")
        engine = ChatEngine(manager, config, flush_interval=0.05)
        async for event in engine.send("s1", "tell me a long story"):
            if type(event).__name__ == "ReplyDelta":
                print("delta", flush=True)

    asyncio.run(main(sys.argv[1], sys.argv[2]))
""")


def test_sigkill_mid_reply_keeps_the_partial_reply(tmp_path, llm_server, fake_key):
    story = "word " * 2000
    llm_server.script(script.text(story, delay=0.01))
    db = tmp_path / "chats.db"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), llm_server.base_url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        assert child.stdout is not None
        first = child.stdout.readline()
        assert first.strip() == "delta", child.stderr.read() if child.stderr else ""
        deadline = time.monotonic() + 20
        partial = ""
        while time.monotonic() < deadline and len(partial) < 100:
            time.sleep(0.05)
            with Store(db) as reader:
                rows = reader.query("SELECT content FROM messages WHERE role = 'assistant'")
            parts = json.loads(rows[0][0])["parts"] if rows else []
            partial = parts[0]["text"] if parts else ""
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL

    with Store(db) as store:
        assert store.integrity_check() == []
        from store import SessionManager

        manager = SessionManager(store)
        history = manager.get_history("s1")
        assert [m.role for m in history] == ["user", "assistant"]
        assert history[0].text == "tell me a long story"
        reply = history[1]
        assert reply.parent_id == history[0].id
        assert reply.metadata["incomplete"] is True
        assert reply.metadata["status"] == "streaming"
        assert len(reply.text) >= 100 and story.startswith(reply.text)
        assert len(reply.text) < len(story)
        assert [h.id for h in manager.search("word")] == [reply.id]  # FTS kept in step


KILLED_AS_IT_ASKS = textwrap.dedent("""
    import asyncio, os, signal, sys
    from store import Store
    from chatui.core.config import Config
    from chatui.core.engine import ChatEngine
    from chatui.llm.worker import StreamWorker
    from chatui.core.wiring import build_manager

    async def main(db, url):
        config = Config(model="openai/test-model", api_base=url, request_timeout=30)
        manager = build_manager(Store(db), config)
        manager.create("doomed", id="s1")
        worker = StreamWorker()
        worker.start()
        while not worker.ready.is_set():
            await asyncio.sleep(0.02)
        send = worker._send

        def send_then_die(message):
            send(message)
            if message.get("op") == "stream":  # the request has just left for the model
                os.kill(os.getpid(), signal.SIGKILL)

        worker._send = send_then_die
        engine = ChatEngine(manager, config, streamer=worker.stream)
        async for _ in engine.send("s1", "remember my question"):
            pass

    asyncio.run(main(sys.argv[1], sys.argv[2]))
""")


def test_sigkill_the_moment_the_request_leaves_keeps_the_question(tmp_path, llm_server, fake_key):
    """The request goes to the model process before the reply's row is written and the
    question is drawn, but never before the question is stored: killed at that instant,
    the app has lost nothing the user typed."""
    llm_server.script(script.text("an answer nobody reads"))
    db = tmp_path / "chats.db"
    child = subprocess.run(
        [sys.executable, "-c", KILLED_AS_IT_ASKS, str(db), llm_server.base_url],
        capture_output=True,
        text=True,
        env={**os.environ},
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    with Store(db) as store:
        assert store.integrity_check() == []
        from store import SessionManager

        history = SessionManager(store).get_history("s1")
        assert [m.role for m in history][:1] == ["user"]
        assert history[0].text == "remember my question"
