"""Chatting in the app, keys pressed through Pilot, the model a scripted server on 127.0.0.1.

LiteLLM's real client streams from `tests/llm_server.py`; nothing is mocked between the
input box and the socket.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from chatui.core.config import Config
from chatui.tui.screens.dialogs import TextPrompt
from store import SessionManager, StoreContextProvider
from tests import llm_server as script
from widgets import ChatInput, ChatNotice, ChatView, ContextSidebar, MessageView

from .app_helpers import make_app, notices, wait_until

SIZE = (140, 40)


@pytest.fixture
def config(llm_server, fake_key):
    return Config(model="openai/test-model", api_base=llm_server.base_url, max_retries=1)


async def idle(pilot) -> None:
    """Wait until the reply being written has finished (or failed)."""
    await wait_until(pilot, lambda: not pilot.app.main.generating)
    await pilot.pause()


async def type_and_send(pilot, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


def chat_path(app) -> list:
    return app.main.snapshot.history if app.main.snapshot else []


async def test_a_new_chat_is_named_as_its_question_reads_not_as_it_is_marked_up(
    store, config, llm_server
):
    """A chat started with "**Why** does `pip install` fail?" was named with the stars and
    backticks (in the title, the chat list and `chatui list`), where the tree's row and
    the chat read "Why does pip install fail?"."""
    llm_server.text("Because.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press(*"**Why** does `pip install` fail for x_y?", "enter")
        await idle(pilot)
        assert app.main.chat is not None
        assert app.main.chat.info.name == "Why does pip install fail for x_y?"
        assert chat_path(app)[0].text == "**Why** does `pip install` fail for x_y?"


async def test_enter_sends_streams_and_stores_before_the_model_answers(store, config, llm_server):
    llm_server.text("Hello **there**, how can I help?", delay=0.01)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press(*"Hi", "ctrl+j", *"second line")
        await pilot.press("enter")
        await idle(pilot)
        main = app.main
        history = chat_path(app)
        assert [m.role for m in history] == ["user", "assistant"]
        assert history[0].text == "Hi\nsecond line"
        assert history[1].text == "Hello **there**, how can I help?"
        assert history[1].metadata.get("incomplete") is None
        # the model saw the user's message and the system prompt with the memory blocks
        sent = llm_server.messages(0)
        assert sent[-1] == {"role": "user", "content": "Hi\nsecond line"}
        assert sent[0]["role"] == "system" and "MEMORY" in sent[0]["content"]
        assert main.query_one(ChatInput).text == ""
        assert main.chat.info.name == "Hi second line"
        view = main.query_one(ChatView).view_for(history[1].id)
        assert view.text == "Hello **there**, how can I help?"
        spent = main.query_one(ContextSidebar).stats
        assert spent.input_tokens == 12 and spent.output_tokens == 7


async def test_escape_cancels_and_keeps_the_partial_reply(store, config, llm_server):
    llm_server.text(" ".join(f"word{i}" for i in range(200)), delay=0.03)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Tell me a long story")
        chat = app.main.chat_view
        await wait_until(pilot, lambda: bool(chat.views) and "word5" in chat.views[-1].text)
        await pilot.press("escape")
        await idle(pilot)
        reply = chat_path(app)[-1]
        assert reply.role == "assistant"
        assert reply.metadata["status"] == "cancelled" and reply.metadata["incomplete"]
        assert reply.text.startswith("word0 word1") and "word199" not in reply.text
        assert "cancelled" in app.main.chat_view.view_for(reply.id).header().plain
        # the app is responsive and the next turn works
        llm_server.text("Short answer.")
        await type_and_send(pilot, "Shorter please")
        await idle(pilot)
        assert chat_path(app)[-1].text == "Short answer."


async def test_ctrl_r_regenerates_beside_the_old_reply(store, config, llm_server):
    llm_server.text("First answer.")
    llm_server.text("Second answer.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Question")
        await idle(pilot)
        await pilot.press("up")
        assert isinstance(app.focused, MessageView) and app.focused.message.role == "assistant"
        await pilot.press("ctrl+r")
        await idle(pilot)
        history = chat_path(app)
        assert [m.text for m in history] == ["Question", "Second answer."]
        session = app.main.chat.session
        replies = session.get_branches(history[0].id)
        assert [m.text for m in replies] == ["First answer.", "Second answer."]
        view = app.main.chat_view.view_for(history[1].id)
        assert view.position == (2, 2)
        await pilot.press("left")
        await pilot.pause()
        assert [m.text for m in chat_path(app)] == ["Question", "First answer."]


async def test_ctrl_r_from_the_input_retries_a_failed_reply_as_its_notice_says(
    store, config, llm_server
):
    llm_server.error(500, "upstream exploded")
    llm_server.text("It works now.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        # Nothing to act on yet: said, nothing sent.
        await pilot.press("ctrl+r", "ctrl+g")
        await wait_until(pilot, lambda: "Nothing to regenerate yet" in notices(app))
        assert llm_server.requests == []
        await type_and_send(pilot, "Question")
        await idle(pilot)
        failed = chat_path(app)[-1]
        assert (
            failed.role == "assistant"
            and "error" in app.main.chat_view.view_for(failed.id).header().plain
        )
        assert "ctrl+r" in " ".join(n.plain for n in app.main.chat_view.query(ChatNotice))
        # The focus is still in the input, where the notice's ctrl+r is pressed.
        assert isinstance(app.focused, ChatInput)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: chat_path(app)[-1].text == "It works now.")
        await idle(pilot)
        history = chat_path(app)
        replies = app.main.chat.session.get_branches(history[0].id)
        assert [m.id for m in replies] == [failed.id, history[1].id]  # the failure kept
        assert isinstance(app.focused, ChatInput)
        # ctrl+g on a complete reply: refused with the reason, nothing sent.
        sent = len(llm_server.requests)
        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: "Only a truncated or stopped reply" in notices(app))
        assert len(llm_server.requests) == sent


async def test_e_edits_into_a_new_branch_and_replies(store, config, llm_server):
    llm_server.text("About cats.")
    llm_server.text("About dogs.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Tell me about cats")
        await idle(pilot)
        await pilot.press("up", "up")
        assert app.focused.message.role == "user"
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, TextPrompt)
        editor = app.screen.query_one(ChatInput)
        editor.clear()
        await pilot.press(*"Tell me about dogs", "enter")
        await idle(pilot)
        history = chat_path(app)
        assert [m.text for m in history] == ["Tell me about dogs", "About dogs."]
        roots = [m for m in app.main.chat.session.get_tree() if m.parent_id is None]
        assert [m.text for m in roots] == ["Tell me about cats", "Tell me about dogs"]
        assert llm_server.messages(-1)[-1]["content"] == "Tell me about dogs"


async def test_e_on_a_reply_opens_its_editor_and_escape_stores_nothing(store, config, llm_server):
    """Issue 24: a reply is edited into a sibling (tests/test_app_edit_and_drafts.py);
    escape leaves the chat as it was and asks the model nothing."""
    llm_server.text("An answer.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Question")
        await idle(pilot)
        await pilot.press("up", "e")
        await pilot.pause()
        assert isinstance(app.screen, TextPrompt)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, TextPrompt)
        assert len(app.main.chat.session.get_tree()) == 2
        assert len(llm_server.requests) == 1


async def test_memory_gauge_fills_when_the_model_writes_memory(store, config, llm_server):
    llm_server.tool_calls(
        (
            "set_context",
            {"label": "memory", "action": "append", "content": "The user is called Sam."},
        )
    )
    llm_server.text("Noted, Sam.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        sidebar = app.main.query_one(ContextSidebar)
        assert sidebar.gauge("memory").used == 0
        await type_and_send(pilot, "Remember that my name is Sam")
        await idle(pilot)
        assert sidebar.gauge("memory").used > 0
        provider = StoreContextProvider(store, "global", "memory")
        assert await provider.get() == "The user is called Sam."
        history = chat_path(app)
        assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
        view = app.main.chat_view.view_for(history[1].id)
        assert [t.id for t in view.tool_results] == [history[2].id]  # folded under the call
        assert history[-1].text == "Noted, Sam."


async def test_provider_errors_show_in_the_chat_and_the_app_keeps_going(store, config, llm_server):
    llm_server.error(401, "Incorrect API key provided")
    llm_server.text("Works now.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Hello?")
        await idle(pilot)
        notes = list(app.main.query(ChatNotice))
        assert notes and notes[-1].level == "error"
        assert "key" in notes[-1].plain.lower()
        assert "sk-test-FAKEKEY" not in notes[-1].plain
        history = chat_path(app)
        assert history[0].text == "Hello?"  # the user's message was stored first
        await type_and_send(pilot, "Again")
        await idle(pilot)
        assert chat_path(app)[-1].text == "Works now."


async def test_broken_stream_keeps_the_partial_reply(store, config, llm_server):
    llm_server.script(script.broken_stream("Half a sentence that stops"))
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Go")
        await idle(pilot)
        reply = chat_path(app)[-1]
        assert reply.role == "assistant" and reply.metadata.get("incomplete")
        assert reply.text.startswith("Half")
        assert app.main.query(ChatNotice)


async def test_missing_key_is_explained_in_the_chat_pane(store, monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    app = make_app(store, Config(model="gpt-4o-mini"), warm_llm=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(
            pilot, lambda: any("OPENAI_API_KEY" in n.plain for n in app.main.query(ChatNotice))
        )
        notes = [n.plain for n in app.main.query(ChatNotice)]
        assert any("OPENAI_API_KEY" in n for n in notes), notes
        await type_and_send(pilot, "hi")
        await idle(pilot)
        notes = [n.plain for n in app.main.query(ChatNotice)]
        assert sum("OPENAI_API_KEY" in n for n in notes) == 2
        # nothing was sent or stored, and the text waits in the input for a retry
        assert app.main.query_one(ChatInput).text == "hi"
        assert all(
            SessionManager(app.store).get_message_count(i.id) == 0
            for i in SessionManager(app.store).list()
        )


async def test_ctrl_q_quits(store, config):
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+q")
        await pilot.pause()
    assert app.return_code == 0


def test_first_frame_does_not_import_litellm(tmp_path):
    code = textwrap.dedent(f"""
        import asyncio, sys
        from chatui.tui.app import ChatApp
        from chatui.core.config import Config
        from chatui.core.ui_state import UiState
        from store import Store
        assert "litellm" not in sys.modules, "importing the app imported litellm"

        async def main():
            app = ChatApp(Store({str(tmp_path / "x.db")!r}), Config(), ui_state=UiState(),
                          warm_llm=False)
            async with app.run_test() as pilot:
                await pilot.pause()
                print("litellm" in sys.modules)

        asyncio.run(main())
    """)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"CHATUI_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
