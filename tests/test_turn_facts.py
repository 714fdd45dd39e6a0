"""One set of facts per turn (issue 20): what a short turn costs the database, and one
figure for the request's tokens wherever it is shown or acted on.

- A short demo turn in a stored chat, from enter to the redrawn screen, runs at most
  25 reads and writes and reads the session row at most twice. Counted with SQLite's
  own trace hook on the app's connection: every statement the app sends, whichever
  path (the query builder or prepared SQL) sent it. SQLite's inner statements (an
  FTS index's own, `-- `) and the change watcher's `PRAGMA data_version` polls (a
  timer, not the turn) are left out; transaction control is counted apart.
- The sidebar, F2 and auto-compaction agree on the request's tokens exactly: prompt
  (the branch's blocks as they render now), tools and messages.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from chatui.core.config import BlockConfig, Config, ModelOptions
from chatui.core.events import ContextMeasured
from chatui.tui.screens.prompt import PromptScreen
from store import SessionManager

from .app_helpers import make_app, wait_until

SIZE = (140, 40)
CONTROL = re.compile(r"^(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b", re.IGNORECASE)


def trace(store) -> tuple[list[str], Callable[[], None]]:
    """Every statement the store's connection runs from now on (SQLite's trace hook)."""
    statements: list[str] = []
    connection = store.connection()

    def seen(sql: str) -> None:
        if not sql.startswith("--") and not sql.startswith("PRAGMA data_version"):
            statements.append(" ".join(sql.replace('"', "").split()))

    connection.set_trace_callback(seen)
    return statements, lambda: connection.set_trace_callback(None)


def session_row_reads(statements: list[str]) -> list[str]:
    return [
        s
        for s in statements
        if s.startswith("SELECT")
        and re.search(r"FROM sessions\b", s)
        and re.search(r"WHERE\W+(\w+\.)?id = ", s)
    ]


async def a_demo_turn(pilot, text: str) -> None:
    app = pilot.app
    before = len(app.main.chat_view.views)
    await pilot.press(*text, "enter")
    await wait_until(pilot, lambda: len(app.main.chat_view.views) == before + 2)
    await wait_until(pilot, lambda: not app.main.generating)
    await pilot.pause(0.3)  # the end of the turn drawn: tree, sidebar, title


@pytest.mark.parametrize("db_engine", ["sqlite"], indirect=True)
async def test_a_short_demo_turn_reads_the_chat_row_at_most_twice(store, monkeypatch):
    monkeypatch.setenv("CHATUI_DEMO_DELAY", "0")  # the demo answers at once: no flush between
    # ...unless a loaded machine stretches the reply past the writer's flush interval
    # (a timed write, not the turn's own): counted here is what every turn costs.
    from chatui.core import replies

    writer_init = replies.ReplyWriter.__init__

    def untimed(self, session, model, flush_interval):
        writer_init(self, session, model, 3600.0)

    monkeypatch.setattr(replies.ReplyWriter, "__init__", untimed)
    app = make_app(store, Config(model="demo"), warm_llm=False, model_process=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.3)
        await a_demo_turn(pilot, "hello there")  # a new chat: stored with this turn
        statements, stop = trace(store)
        try:
            await a_demo_turn(pilot, "and again")
        finally:
            stop()
        assert app.main.chat_view.views[-1].text.startswith("You wrote 2 words.")
    data = [s for s in statements if not CONTROL.match(s)]
    reads = session_row_reads(statements)
    assert len(reads) <= 2, reads
    assert len(data) <= 25, "\n".join(data)
    # Six transactions: the question, the chat's status (active, idle), the reply's row,
    # its final form, its spend. (Each is a BEGIN and a COMMIT more.)
    assert len(statements) - len(data) <= 12, [s for s in statements if CONTROL.match(s)]
    # The turn's writes: the question, the reply's row and its final form, the chat's
    # status (active, idle) and spend; nothing is written twice for the screen.
    writes = [s for s in data if s.startswith(("INSERT INTO messages ", "UPDATE messages "))]
    assert len(writes) == 3, writes


MEMORY = BlockConfig("memory", kind="writable", scope="chat", max_tokens=400)


@pytest.mark.parametrize("db_engine", ["sqlite"], indirect=True)
async def test_the_sidebar_f2_and_auto_compaction_count_one_request(store, llm_server, fake_key):
    """Tools, blocks and messages, counted once: the sidebar's context figure, F2's whole
    request and the figure auto-compaction compares with its threshold are one number,
    and it moves with the branch's memory (a block written this turn is in it)."""
    config = Config(
        model="openai/test-model",
        api_base=llm_server.base_url,
        max_retries=0,
        blocks=(BlockConfig("soul", kind="static", text="You are terse."), MEMORY),
        models={"openai/test-model": ModelOptions(context_window=50_000)},
    )
    llm_server.tool_calls(
        ("set_context", {"label": "memory", "content": "The user likes tea. " * 20}),
    )
    llm_server.text("Noted, tea it is.")
    measured: list[ContextMeasured] = []
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.llm_ready, 60)
        unsubscribe = app.workspace.subscribe(
            lambda e: measured.append(e) if isinstance(e, ContextMeasured) else None
        )
        await pilot.press(*"remember that I like tea", "enter")
        await wait_until(pilot, lambda: measured and not app.main.generating)
        await pilot.pause(0.3)
        unsubscribe()
        compaction = measured[-1].measured.usage  # what auto-compaction decided on
        sidebar = app.main.sidebar.stats
        await pilot.press("f2")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
        prompt = app.screen
        assert prompt.usage is not None
        parts = (compaction.prompt, compaction.tools, compaction.messages)
        assert all(parts), parts  # every part is counted
        assert sidebar.tokens == compaction.tokens == prompt.usage.tokens == sum(parts)
        assert prompt.request.tool_tokens == compaction.tools  # F2's tool lines add up
        assert "The user likes tea." in prompt.request.system_prompt  # the branch's memory now
        assert compaction.window == sidebar.window == 50_000
        # Read again from the store (a redraw), the same chat gives the same figure.
        await pilot.press("escape")
        await app.main.pane.redraw()
        assert app.main.sidebar.stats.tokens == compaction.tokens
        session_id = app.main.session_id
    assert SessionManager(store).get_message_count(session_id) == 4  # question, call, result, reply
