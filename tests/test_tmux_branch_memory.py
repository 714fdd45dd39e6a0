"""Memory per branch in a real terminal: the scratchpad gauge follows ←/→ (issue 14)."""

from __future__ import annotations

import asyncio
import re
import shutil

import pytest

from store import SessionManager, Store

from .app_helpers import populate, wait_until_sync
from .test_tmux import Terminal

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


def gauge(lines: list[str]) -> str:
    """The scratchpad gauge's figure (`used/limit`) as drawn."""
    for line in lines:
        found = re.search(r"scratchpad.*?(\d+/600)", line)
        if found:
            return found.group(1)
    raise AssertionError("no scratchpad gauge:\n" + "\n".join(lines))


def wait_gauge(term: Terminal, figure: str, timeout: float = 60) -> list[str]:
    def reading() -> list[str] | None:
        lines = term.screen()
        try:
            return lines if gauge(lines) == figure else None
        except AssertionError:  # no gauge drawn yet
            return None

    try:
        return wait_until_sync(reading, timeout, every=0.2)
    except AssertionError:
        raise AssertionError(
            f"the gauge never read {figure}:\n" + "\n".join(term.screen())
        ) from None


def test_left_right_change_the_memory_gauge(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    with Store(data / "chats.db") as store:
        ids = populate(store)
        session = SessionManager(store).with_branch_memory().with_context("scratchpad")
        session = session.get_session(ids["lisbon"])
        asyncio.run(session.replace_context_block("scratchpad", "Alfama", at="a1"))
        long = "Belém tower, then Jerónimos, then pastéis de nata. " * 4
        asyncio.run(session.replace_context_block("scratchpad", long, at="a2"))
        short_figure = f"{session.get_context_block('scratchpad').tokens}/600"
        blocks = asyncio.run(session.load_context(at="a1"))
        alfama = f"{next(b.tokens for b in blocks if b.label == 'scratchpad')}/600"
        blocks = asyncio.run(session.load_context(at="a4"))
        belem = f"{next(b.tokens for b in blocks if b.label == 'scratchpad')}/600"
    assert alfama != belem, short_figure
    term = Terminal(tmp_path, 160, 50, "--model", "demo")
    try:
        term.wait_for("Lisbon trip")
        wait_gauge(term, belem)  # the active leaf a4 sits under a2
        # From the input to the last message (a4): a key sent while the app still
        # settles may be lost, so press again only when the footer has not shown a
        # message's keys for a while (pressed every 0.5 s, a loaded machine drew the
        # first press late and the extra presses went on past a2).
        for _ in range(6):
            term.send("Up")
            try:
                term.wait_for("Regenerate", timeout=10)
                break
            except AssertionError:
                continue
        for _ in range(2):  # a4 → q2b → a2, each once the screen has settled
            term.settle(1.0)
            term.send("Up")
        term.settle(1.0)
        term.send("Left")  # to a1's branch
        wait_gauge(term, alfama)
        term.send("Right")  # back to a2's
        wait_gauge(term, belem)
    finally:
        term.close()
