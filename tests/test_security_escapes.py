"""Model output is untrusted: escape sequences and control characters in replies,
reasoning, tool calls, tool results and imported chats never reach the terminal.

Two views of "what reaches the screen": the text of every cell shown (read from the
app's screenshot; no control character may be in it), and every byte the terminal has
been sent, each frame since start-up (`record_terminal`: Textual's own SGR colour codes
are fine; OSC — titles, clipboard, hyperlinks — BEL, screen clears and DCS must not
appear). Replies stream from the scripted server through the real LiteLLM client;
imports go through `chatui import`.
"""

from __future__ import annotations

import json
import re

import pytest
from textual.widgets import Collapsible

from chatui import cli
from chatui.core.config import Config
from chatui.tui.screens.dialogs import TextPrompt
from store import SessionManager
from tests import llm_server as script
from widgets import MessageView

from .app_helpers import Sent, make_app, record_terminal, screen_lines, wait_until
from .test_app_chat import SIZE, idle, type_and_send

HOSTILE = (
    "A\x1b]52;c;cHduZWQ=\x07B\x1b[2JC\x1b]0;pwned-title\x07D\x1b[31mE\x07F\x9b31mG"
    "\rH\x00I\u202eJ\x1bPdcs\x1b\\K\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\L"
    "\u2028M\x1b"
)
# Hostile bytes arriving split across stream chunks (ESC in one chunk, the rest later).
SPLIT = "split \x1b] 52;c;AAAA \x07 \x1b [2J \x9b 31m end"
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
RAW_FORBIDDEN = ("\x07", "\x1b]", "\x1b[2J", "\x1bP", "\x9b", "\x9d")  # "\x1b]": OSC 8 too


TEXTUALS_OWN = re.compile("\x1b\\]22;[a-z-]+\x07|\x07")
"""Textual's writes between frames: the mouse pointer's shape (OSC 22) and the bell."""


def screen_output(app, sent: Sent) -> tuple[str, str]:
    """(the text of every cell shown now, every frame the terminal has been sent)."""
    assert all(TEXTUALS_OWN.fullmatch(c) for c in sent.controls), sent.controls
    return "\n".join(screen_lines(app)), "".join(sent.frames)


def assert_neutral(app, sent: Sent, *expected: str) -> str:
    cells, raw = screen_output(app, sent)
    assert not CONTROL.search(cells), repr(CONTROL.findall(cells))
    for bad in RAW_FORBIDDEN:
        assert bad not in raw, bad
    assert "\x1b]" not in app.export_screenshot()  # the SVG export is clean too
    flat = " ".join(cells.split())
    for words in expected:
        assert words in flat, (words, flat[:2000])
    return flat


@pytest.fixture
def config(llm_server, fake_key, _isolated_home):
    skills = _isolated_home / "skills"
    skills.mkdir()
    (skills / "trap.md").write_text(f"# Trap\n{HOSTILE} doc body")
    return Config(
        model="openai/test-model",
        api_base=llm_server.base_url,
        max_retries=0,
        skills_dir=str(skills),
    )


def toasts(app) -> list[str]:
    """The text of the notifications on screen (they wrap, so read them whole)."""
    return [getattr(t.render(), "plain", str(t.render())) for t in app.screen.query("Toast")]


def expand_everything(app) -> None:
    for collapsible in app.screen.query(Collapsible):
        collapsible.collapsed = False


async def test_streamed_reply_reasoning_and_tools_are_neutralised(store, config, llm_server):
    words = " ".join(f"w{i}" for i in range(30))
    llm_server.script(
        # streams, then stalls: the reply stays on screen mid-stream until escape
        script.hang(
            60, text_before=f"Hello {HOSTILE} and [a link](http://evil.example/) {SPLIT} {words}"
        ),
        script.text(f"Thought through {HOSTILE} end", reasoning=f"thinking {HOSTILE}"),
        script.tool_calls(
            ("load_context", {"label": "skills", "key": "trap"}),
            ("set_context", {"label": "memory", "content": f"fact {HOSTILE}"}),
        ),
        script.text(f"Done {HOSTILE} done"),
    )
    app = make_app(store, config)
    sent = record_terminal(app)
    async with app.run_test(size=SIZE, headless=False) as pilot:
        await pilot.pause()
        await type_and_send(pilot, "Say something")
        chat = app.main.chat_view
        # drawn, not only received
        await wait_until(pilot, lambda: bool(chat.views) and "w29" in chat.views[-1].shown)
        await pilot.pause(0.2)  # let the stream paint
        assert app.main.generating  # the Markdown stream widget is what is on screen
        assert_neutral(app, sent, "ABCDEFG", "split", "w29")
        await pilot.press("escape")  # cancelled: redrawn from the store as a finished view
        await idle(pilot)
        assert_neutral(app, sent, "ABCDEFG", "w29")
        await type_and_send(pilot, "Think first")
        await idle(pilot)
        await app.main.pane.redraw()  # a finished stream keeps its drawn body; redraw as on reopen
        expand_everything(app)
        await pilot.pause()
        assert_neutral(app, sent, "Thought through", "thinking")
        await type_and_send(pilot, "Use the tools")
        await idle(pilot)
        expand_everything(app)
        await pilot.pause()
        flat = assert_neutral(app, sent, "Done")
        assert "doc body" in flat and "fact" in flat  # the tool result and call are shown
        reply = app.main.chat.session.get_history()[-1]
        assert HOSTILE in reply.text  # stored exactly as sent: neutralised on display only


def hostile_export(tmp_path):
    from tests.test_import_chatgpt import branching_conversation

    conv = branching_conversation()
    conv["title"] = f"Title {HOSTILE}"
    for node in conv["mapping"].values():
        message = node["message"]
        if message and message["content"].get("parts"):
            message["content"]["parts"] = [
                f"{p} {HOSTILE} reversal" if isinstance(p, str) else p
                for p in message["content"]["parts"]
            ]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([conv]))
    return path


async def test_imported_chat_is_neutralised_everywhere_it_shows(
    store, llm_server, fake_key, tmp_path, capsys
):
    assert (
        cli.main(["import", str(hostile_export(tmp_path)), "--from", "chatgpt", "--db", store.path])
        == 0
    )
    capsys.readouterr()
    config = Config(model="openai/test-model", api_base=llm_server.base_url)
    app = make_app(store, config)
    sent = record_terminal(app)
    async with app.run_test(size=SIZE, notifications=True, headless=False) as pilot:
        await pilot.pause()
        assert_neutral(app, sent, "Title ABCDEFG", "reversal")  # title, tree, messages
        await pilot.press("ctrl+s")  # the chat list
        await pilot.pause()
        assert_neutral(app, sent, "Title ABCDEFG")
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("ctrl+f", *"reversal")  # the search screen, with snippets
        await pilot.pause(0.5)
        assert_neutral(app, sent, "reversal")
        await pilot.press("escape")
        await pilot.pause()
        view = app.main.query(MessageView).last()
        view.focus()
        await pilot.press("f")  # fork: a toast names the chat
        await pilot.pause(0.3)
        assert_neutral(app, sent)
        assert any(t.startswith("Forked into a new chat: Title ABCDEFG") for t in toasts(app))
        app.main.commands.rename_chat()  # the rename dialog shows the current name in an input
        await pilot.pause()
        assert isinstance(app.screen, TextPrompt)
        assert_neutral(app, sent)
        await pilot.press("escape")


def test_cli_text_output_is_neutralised(tmp_path, capsys):
    db = tmp_path / "chats.db"
    assert (
        cli.main(["import", str(hostile_export(tmp_path)), "--from", "chatgpt", "--db", str(db)])
        == 0
    )
    from store import Store

    with Store(db) as s:
        sid = SessionManager(s).list()[0].id
    outputs = []
    for argv in (
        ["list"],
        ["search", "reversal"],
        ["show", sid],
        ["show", sid, "--tree"],
        ["show", sid, "--json"],
        ["search", "reversal", "--json"],
        ["export", sid, "--format", "md"],
        ["export", sid, "--format", "jsonl"],
        ["import", str(hostile_export(tmp_path)), "--from", "chatgpt", "--new-ids"],
    ):
        code = cli.main([*argv, "--db", str(db)])
        out, err = capsys.readouterr()
        assert code == 0, (argv, err)
        outputs.append(out + err)
    for text in outputs:
        assert not CONTROL.search(text), repr(CONTROL.findall(text))
        assert "\x1b" not in text and "\x07" not in text
    assert any("\\x1b]52;c;" in text for text in outputs)  # shown as an escape instead


MARKUP_NAME = "What does [/] close? [@click=app.quit]quit[/] [link='http://x.example']y[/link]"


async def test_names_are_text_not_markup(store, llm_server, fake_key):
    """A chat named after a question about markup must not crash (or drive) the app:
    toasts, the chat title, the model picker and the search status show it as typed."""
    llm_server.default = script.text("An answer.")
    manager = SessionManager(store)
    info = manager.create(MARKUP_NAME)
    await manager.append(
        info.id, {"id": "q", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    )
    config = Config(model="openai/test-model", api_base=llm_server.base_url)
    app = make_app(store, config)
    sent = record_terminal(app)
    async with app.run_test(size=SIZE, notifications=True, headless=False) as pilot:
        await pilot.pause()
        app.main.query(MessageView).last().focus()
        await pilot.press("f")  # "Forked into a new chat: <name> ⑂"
        await pilot.pause(0.3)
        assert_neutral(app, sent)
        assert any(
            "Forked into a new chat: What does [/] close? [@click=app.quit]quit[/]"
            in " ".join(t.split())
            for t in toasts(app)
        ), toasts(app)
        await app.main.commands.delete_chat()  # "Deleted '<name> ⑂' — restore it …"
        await pilot.pause(0.3)
        assert_neutral(app, sent)
        assert any(t.startswith('Deleted "What does [/]') for t in toasts(app)), toasts(app)
        await pilot.press("ctrl+l", *"[b]model[/b] [/]", "enter")  # "Model: <name>"
        await pilot.pause(0.3)
        assert_neutral(app, sent)
        assert "Model: [b]model[/b] [/]" in toasts(app)
        await pilot.press("ctrl+l")  # the picker names the current model in its title
        await pilot.pause()
        assert_neutral(app, sent, "(now: [b]model[/b] [/])")
        await pilot.press("escape", "ctrl+f", *"[/] nothing")  # a query with no hits
        await pilot.pause(0.5)
        assert_neutral(app, sent, "Nothing matches '[/] nothing'")
        await pilot.press("escape", "ctrl+n", *"What does [/] do?", "enter")  # names a chat
        await idle(pilot)
        assert_neutral(app, sent, "What does [/] do? ·")
        assert app.is_running and app.return_code is None  # still running
