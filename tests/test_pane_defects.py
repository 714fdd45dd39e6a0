"""Issue 20's defects in the chat pane, each as a new user hit it: keys through Pilot,
the model the scripted server on 127.0.0.1 (or the offline demo)."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual import events
from textual.widgets import DataTable, TextArea

from chatui.core.config import Config, ModelOptions
from chatui.llm.errors import map_error
from chatui.tui.screens.chat_list import ChatListScreen
from chatui.tui.screens.dialogs import Confirm
from chatui.tui.screens.memory import BlockScreen
from chatui.tui.screens.tree import TreeScreen
from store import SessionManager
from widgets import ChatNotice, MessageView, TokenGauge

from . import llm_server as script
from .app_helpers import make_app, screen_lines, text, wait_until
from .test_live_states import populate_async

SIZE = (140, 40)


@pytest.fixture
def config(llm_server, fake_key):
    return Config(model="openai/test-model", api_base=llm_server.base_url, max_retries=0)


async def ready(pilot) -> None:
    await wait_until(pilot, lambda: pilot.app.llm_ready, 60)


# -- 2: typed text erased after enter ---------------------------------------------------


async def test_what_is_typed_after_enter_stays_in_the_input(store, config, llm_server):
    """`send-keys "first message" Enter "second typed fast"`: the input was cleared when
    the question was stored, wiping what was typed since. Only what was sent goes."""
    llm_server.text("An answer, slowly.", delay=0.1)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press(*"first message", "enter", *"second typed fast")
        await wait_until(pilot, lambda: len(app.main.chat_view.views) == 2)
        await wait_until(pilot, lambda: not app.main.generating)
        assert app.main.chat_view.views[0].text == "first message"
        assert app.main.chat_input.text == "second typed fast"


# -- 3: the sidebar after a resize, and at launch -----------------------------------------


async def test_a_new_chat_at_80_columns_then_widened_shows_its_gauges(store, config):
    app = make_app(store, config)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)
        assert not app.main.sidebar.display  # a drawer at 80 columns
        await pilot.press("ctrl+n")
        await pilot.pause(0.2)
        await pilot.resize_terminal(200, 50)
        await wait_until(pilot, lambda: app.main.sidebar.display)
        gauges = [g for g in app.main.sidebar.query(TokenGauge) if g.id != "conversation-gauge"]
        assert [g.label for g in gauges] == ["soul", "memory", "scratchpad"]
        assert app.main.sidebar.stats.tokens > 0  # the soul and the tools, at least


async def test_switching_chats_at_80_columns_then_widening_shows_the_chat_on_screen(store):
    ids = await populate_async(store)
    manager = SessionManager(store)
    manager.set_model(ids["soup"], "openai/soup-model")
    manager.add_usage(ids["soup"], 1200, 300, 0.5)
    app = make_app(store, Config(model="demo"), warm_llm=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.main.sidebar.stats.model)
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ChatListScreen))
        await pilot.press("down", "enter")  # Soup recipes
        await wait_until(pilot, lambda: app.main.session_id == ids["soup"])
        await pilot.resize_terminal(200, 50)
        await wait_until(pilot, lambda: app.main.sidebar.display)
        stats = app.main.sidebar.stats
        assert stats.model.startswith("openai/soup-model")
        assert (stats.input_tokens, stats.output_tokens) == (1200, 300)


async def test_the_context_figure_has_its_window_at_launch(store, config, llm_server):
    """Right after launch the figure said `context 901 tok` with no window until a later
    event: a window the config names is known at once."""
    config = Config(
        model="openai/test-model",
        api_base=llm_server.base_url,
        models={"openai/test-model": ModelOptions(context_window=8192)},
    )
    app = make_app(store, config, warm_llm=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.3)
        gauge = app.main.sidebar.query_one("#conversation-gauge", TokenGauge)
        assert "of 8.2k (config)" in gauge.figure


# -- 5: typing while a message has focus ---------------------------------------------------


async def test_a_sentence_typed_on_a_focused_message_goes_to_the_input(store, config, llm_server):
    """After `up`, typing a sentence fired `r` three times: three paid replies. Now the
    keys reach the input and nothing is regenerated."""
    llm_server.text("First answer.")
    llm_server.text("Should never be asked for.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press(*"Question", "enter")
        await wait_until(pilot, lambda: len(app.main.chat_view.views) == 2)
        await wait_until(pilot, lambda: not app.main.generating)
        await pilot.press("up")
        assert isinstance(app.focused, MessageView)
        await pilot.press(*"really run the rest right now")
        await pilot.pause(0.3)
        assert app.main.chat_input.has_focus
        assert app.main.chat_input.text == "really run the rest right now"
        assert len(llm_server.requests) == 1  # no regenerate, paid or not
        assert len(app.main.chat_view.views) == 2


# -- 6: the tree row of a reply being written ---------------------------------------------


async def test_the_tree_row_of_a_first_reply_shows_its_words_while_they_stream(
    store, config, llm_server
):
    llm_server.text("Alpha beta gamma delta epsilon zeta eta theta", delay=0.3)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press(*"Greek letters?", "enter")
        await wait_until(pilot, lambda: len(app.main.chat_view.views) == 2)
        await wait_until(pilot, lambda: app.main.chat_view.views[-1].shown.startswith("Alpha"))
        tree = app.main.tree
        await wait_until(
            pilot, lambda: any("Alpha" in tree.row_text(i) for i in range(len(tree.rows)))
        )
        assert app.main.generating  # while it is still being written
        assert not any("no text yet" in tree.row_text(i) for i in range(len(tree.rows)))
        await app.workspace.cancel_all()


# -- 7: a new chat's model -------------------------------------------------------------------


async def test_a_new_chat_takes_the_configured_model_not_the_last_chats(store, config):
    """The config's `model` was ignored for new chats (they inherited the chat on screen's
    model). The configured default wins, and the sidebar says where the model came from."""
    manager = SessionManager(store)
    manager.create("Elsewhere", model="openai/another-model")
    app = make_app(store, config, warm_llm=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.main.sidebar.stats.model.startswith("openai/another"))
        assert app.main.sidebar.stats.model == "openai/another-model (this chat's)"
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: app.main.chat is None)
        await pilot.pause(0.2)
        assert app.main.pane.model == "openai/test-model"
        assert app.main.sidebar.stats.model == "openai/test-model (config default)"


# -- 8: a missing key -----------------------------------------------------------------------


async def test_a_missing_key_stores_no_empty_chat_and_keeps_the_text(store, monkeypatch):
    """The README says nothing is stored when the key is missing; an empty chat was left
    `active` in `chatui list`."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    app = make_app(store, Config(model="openai/gpt-4o-mini", max_retries=0))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press(*"Hello?", "enter")
        await wait_until(pilot, lambda: app.main.query(ChatNotice) and not app.main.generating)
        await pilot.pause(0.3)
        notices = [n.plain for n in app.main.query(ChatNotice)]
        assert any("No API key for openai/gpt-4o-mini" in n for n in notices), notices
        assert app.main.chat is None  # still the new chat
        assert app.main.chat_input.text == "Hello?"
    assert SessionManager(store).list(include_deleted=True) == []


async def test_while_the_app_imports_litellm_its_model_process_says_the_key_is_missing(
    store, monkeypatch
):
    """The first question after launch waited for the app's own LiteLLM import (seconds)
    to check the key, even with a spare model process ready at once: the check is asked
    of the model process then, with the same answer."""
    from chatui import llm

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    app = make_app(store, Config(model="openai/gpt-4o-mini", max_retries=0))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        worker = app.workspace.worker
        assert worker is not None
        asked: list[str] = []
        ask = worker.key_problem

        async def counted(model: str, api_base: str | None) -> str | None:
            asked.append(model)
            return await ask(model, api_base)

        monkeypatch.setattr(worker, "key_problem", counted)
        monkeypatch.setattr(llm, "is_loaded", lambda: False)  # the app's import runs
        await pilot.press(*"Hello?", "enter")
        await wait_until(pilot, lambda: app.main.query(ChatNotice) and not app.main.generating)
        notices = [n.plain for n in app.main.query(ChatNotice)]
        assert any("No API key for openai/gpt-4o-mini" in n for n in notices), notices
        assert "OPENAI_API_KEY" in " ".join(notices)
        assert asked == ["openai/gpt-4o-mini"]
        assert app.main.chat_input.text == "Hello?"
    assert SessionManager(store).list(include_deleted=True) == []


def test_a_401_with_no_key_set_says_the_key_is_missing_not_rejected(monkeypatch):
    """With a global `api_base` and an Anthropic model the error said the key was
    "rejected" when none was set."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    class AuthenticationError(Exception):
        status_code = 401

    error = map_error(
        AuthenticationError("401 Unauthorized"),
        "anthropic/claude-3-5-haiku",
        api_base="http://127.0.0.1:9/v1",
    )
    assert error.kind == "auth"
    assert "ANTHROPIC_API_KEY is not set" in error.title and "rejected" not in error.title
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong")
    rejected = map_error(
        AuthenticationError("401 Unauthorized"),
        "anthropic/claude-3-5-haiku",
        api_base="http://127.0.0.1:9/v1",
    )
    assert "rejected" in rejected.title


# -- 12: the first reply after launch ---------------------------------------------------------


def drawn_header(view: MessageView) -> str:
    """A message's header as drawn: fitted to its header line's width."""
    return view.header(view.query_one(".message--header").size.width).plain


async def test_a_reply_waiting_for_the_model_to_load_says_so(store, config, llm_server):
    """The first reply after launch took 6-10 s on a loaded machine with only "writing…
    (no text yet)": while the model process is still loading, the reply says so."""
    # The first word after a second: the question's frame waits half a second at most
    # for it, so the reply is on screen, still without text, well before it.
    llm_server.text("Here at last.", delay=1.0)
    app = make_app(store, config)
    # 160 columns, sidebar and tree shown: where the note was cut from the header.
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(pilot)
        worker = app.workspace.worker
        assert worker is not None
        worker.ready.clear()  # as right after launch: LiteLLM still loading there
        try:
            await pilot.press(*"Hi", "enter")
            await wait_until(pilot, lambda: len(app.main.chat_view.views) == 2)
            view = app.main.chat_view.views[-1]
            # As drawn: at the pane's width, not the header's whole text.
            await wait_until(pilot, lambda: "starting the model" in drawn_header(view))
        finally:
            worker.ready.set()
        await wait_until(pilot, lambda: app.main.chat_view.views[-1].shown == "Here at last.")
        assert "starting the model" not in app.main.chat_view.views[-1].header().plain


# -- 1: leaving the full-screen tree with keys pressed quickly ----------------------------


@pytest.mark.parametrize("second", ["z", "q", "escape"])
async def test_leaving_the_tree_screen_twice_quickly_keeps_the_app_and_the_reply(
    store, config, llm_server, second
):
    """`ctrl+t`, `z`, then `z z` (or `z q`, `z esc`) quickly crashed with
    ScreenStackError from the tree screen's second dismiss, and the streaming reply was
    stored cancelled. The second key finds the screen leaving and does nothing."""
    llm_server.text("One two three four five six seven eight nine ten", delay=0.15)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press(*"Count to ten", "enter")
        await wait_until(pilot, lambda: app.main.generating)
        await pilot.press("ctrl+t", "z")
        await wait_until(pilot, lambda: isinstance(app.screen, TreeScreen))
        # Both keys in one read of the terminal, as a quick typist sends them: the
        # second arrives before the first's dismiss has taken the screen away.
        for key in ("z", second):
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        await wait_until(pilot, lambda: app.screen is app.main)
        await wait_until(pilot, lambda: not app.main.generating)
        assert app.is_running
        reply = app.main.chat_view.views[-1]
        assert reply.text.endswith("nine ten")
    stored = SessionManager(store).list()[0]
    messages = SessionManager(store).get_history(stored.id)
    assert [m.metadata.get("status", "complete") for m in messages[-1:]] == ["complete"]


# -- 6: a reply's state at 80 columns --------------------------------------------------------


async def test_at_80_columns_a_cancelled_replys_header_drops_the_date_not_its_state(store):
    """At 80 columns a cancelled reply's header showed `Assistant · model · date` and cut
    `‹1/2›  cancelled`: the date goes first."""
    manager = SessionManager(store)
    chat = manager.create("Cut short", model="openai/a-rather-long-model-name-for-the-header")
    await manager.append(chat.id, text("q", "user", "Tell me a long story", 0), None)
    await manager.append(chat.id, text("a1", "assistant", "Once upon a time.", 1), "q")
    cut = text("a2", "assistant", "There was a", 2)
    cut["metadata"] = {
        "model": "openai/a-rather-long-model-name-for-the-header",
        "status": "cancelled",
    }
    await manager.append(chat.id, cut, "q")
    app = make_app(store, Config(model="demo"), warm_llm=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.main.chat_view.shown_ids == ["q", "a2"])
        await wait_until(pilot, lambda: app.main.chat_view.view_for("a2") is not None)
        header = app.main.chat_view.view_for("a2").query_one(".message--header")
        await wait_until(pilot, lambda: header.size.width > 0)
        shown = str(header.render())
        assert shown.startswith("Assistant")
        assert "‹2/2›" in shown and "cancelled" in shown, shown
        assert "Oct 03" not in shown  # the date went first
        await pilot.resize_terminal(200, 50)
        await wait_until(pilot, lambda: "Oct 03" in str(header.render()))


# -- 10: the block editor ----------------------------------------------------------------


async def open_block(pilot, label: str) -> BlockScreen:
    await wait_until(pilot, lambda: pilot.app.main.sidebar.gauge(label) is not None)
    pilot.app.main.sidebar.gauge(label).focus()
    await pilot.press("enter")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, BlockScreen))
    return pilot.app.screen


async def test_the_block_editor_opens_at_the_end_and_asks_before_dropping_edits(store):
    """Escape dropped unsaved edits without asking; the cursor opened at the top and
    ctrl+end did nothing."""
    await populate_async(store)
    app = make_app(store, Config(model="demo"), warm_llm=False)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_until(pilot, lambda: app.main.sidebar.gauge("scratchpad") is not None)
        screen = await open_block(pilot, "scratchpad")
        editor = screen.query_one(TextArea)
        editor.text = "Line one\nLine two"
        await pilot.press("ctrl+home")
        assert editor.cursor_location == (0, 0)
        await pilot.press("ctrl+end")
        assert editor.cursor_location == (1, 8)
        await pilot.press(*" and three")
        await pilot.press("escape")  # edits not saved: asked, not dropped
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("n")  # keep editing
        await wait_until(pilot, lambda: app.screen is screen)
        assert editor.text == "Line one\nLine two and three"
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: app.screen is app.main)
        screen = await open_block(pilot, "scratchpad")
        editor = screen.query_one(TextArea)
        assert editor.cursor_location == (1, len("Line two and three"))  # at the end
        await pilot.press("escape")  # nothing changed: closes at once
        await wait_until(pilot, lambda: app.screen is app.main)
        screen = await open_block(pilot, "scratchpad")
        await pilot.press(*" more")
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("y")  # discard
        await wait_until(pilot, lambda: app.screen is app.main)
        assert app.main.chat.session.get_context_block("scratchpad").content == (
            "Line one\nLine two and three"
        )


# -- 13: at 80×24 -------------------------------------------------------------------------


async def test_at_80x24_f1_wraps_every_description_whole_and_says_where(store):
    """F1 cut descriptions mid-word and had no "where" column (three `enter` rows read
    alike). Every row is as tall as its wrapped description, and no column runs past
    the table."""
    from rich.console import Console

    from chatui.tui.screens.help import HelpScreen

    app = make_app(store, Config(model="demo"), warm_llm=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f1")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        table = help_screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count == len(help_screen.rows))
        labels = [str(c.label) for c in table.ordered_columns]
        assert labels == ["key", "does", "where"]
        widths = [c.get_render_width(table) for c in table.ordered_columns]
        assert sum(widths) <= table.scrollable_content_region.width
        does = table.ordered_columns[1].width
        console = Console(width=200)
        for row, (_keys, action, where, _rebound) in zip(
            table.ordered_rows, help_screen.rows, strict=True
        ):
            lines = Text(action).wrap(console, does)
            assert row.height >= len(lines), action
            assert table.get_row(row.key)[2].plain == where


async def test_at_80x24_a_long_dialog_title_ends_in_an_ellipsis(store):
    from chatui.tui.screens.dialogs import TextPrompt

    app = make_app(store, Config(model="demo"), warm_llm=False)
    title = "Export as Markdown to " + "/a/rather/long/path/to/the/exports/folder" * 3
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.push_screen(TextPrompt(title, "x"))
        await wait_until(pilot, lambda: bool(app.screen.query("#dialog-title")))
        label = app.screen.query_one("#dialog-title")
        await wait_until(pilot, lambda: label.size.width > 0)
        assert label.size.height == 1
        assert label.render_line(0).text.rstrip().endswith("…")


async def _app_on_one_exchange(store):
    """The app (demo model) on a chat of one question and its answer."""
    manager = SessionManager(store)
    chat = manager.create("One exchange", model="demo")
    await manager.append_all(
        chat.id,
        [
            {"id": "q", "role": "user", "parts": [{"type": "text", "text": "Question?"}]},
            {"id": "a", "role": "assistant", "parts": [{"type": "text", "text": "Answer."}]},
        ],
    )
    return make_app(store, Config(model="demo"), warm_llm=False)


async def test_at_80x24_the_edit_attach_and_import_dialogs_say_their_whole_title(store):
    """Their titles carried what a user must know (the edit is a new branch and the
    original stays; what can be attached or imported) past 58 columns: cut with "…"
    at 80×24 ("…; the origina…"). They fit now; the import's sources are its hint."""
    from chatui.tui.screens.dialogs import TextPrompt

    app = await _app_on_one_exchange(store)

    async def title_of_dialog() -> str:
        await wait_until(
            pilot, lambda: isinstance(app.screen, TextPrompt) and app.screen.query("#dialog-input")
        )
        label = app.screen.query_one("#dialog-title")
        await wait_until(pilot, lambda: label.size.width > 0)
        assert label.size.height == 1
        line = label.render_line(0).text.rstrip()
        app.screen.dismiss(None)
        await wait_until(pilot, lambda: not isinstance(app.screen, TextPrompt))
        return line

    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: len(app.screen.query(MessageView)) == 2)
        main = app.screen
        titles = []
        for role in ("user", "assistant"):  # the question's edit, then the reply's
            main.chat_input.focus()
            for _ in range(3):  # up from the input, through the messages
                await pilot.press("up")
                await pilot.pause()
                focused = app.focused
                if isinstance(focused, MessageView) and focused.message.role == role:
                    break
            await pilot.press("e")
            titles.append(await title_of_dialog())
        main.commands.attach()
        titles.append(await title_of_dialog())
        main.commands.ask_import()
        titles.append(await title_of_dialog())
    assert titles == [
        "Edit message — a new branch; the original stays",
        "Edit the reply — marked edited; the original stays",
        "Attach an image (PNG, JPEG, GIF, WebP) or a text file",
        "Import chats from a file or folder",
    ]


async def test_compact_now_says_what_came_of_it_in_place_of_compacting(store):
    """ "Compacting…" stayed on screen under what came of it: at 80×24 the two notices
    stacked over the chat's last lines and the input. The result replaces it."""
    app = await _app_on_one_exchange(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: len(app.screen.query(MessageView)) == 2)
        app.screen.commands.compact_now()

        def notices() -> list[str]:  # what the toasts show (Textual's own list of them)
            return [notice.message for notice in app._notifications]

        await wait_until(pilot, lambda: any("Nothing to compact" in n for n in notices()), 60)
        assert len(notices()) == 1  # was: "Compacting…" above it


async def test_at_80x24_the_chat_list_shows_last_activity_and_one_notice(store):
    """The chat list showed one character of "last activity"; deleting three chats
    stacked three toasts over the list."""
    ids = await populate_async(store)
    manager = SessionManager(store)
    manager.rename(ids["python"], "A chat with a rather long name that goes on and on and on")
    app = make_app(store, Config(model="demo"), warm_llm=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ChatListScreen))
        table = app.screen.query_one(DataTable)
        await wait_until(pilot, lambda: table.row_count == 3)
        columns = table.ordered_columns
        assert [str(c.label) for c in columns][:3] == ["chat", "last activity", "msgs"]
        shown = sum(c.get_render_width(table) for c in columns[:4])
        assert shown <= table.scrollable_content_region.width  # name, when, msgs, status
        await pilot.press("d", "d", "d")
        await wait_until(pilot, lambda: table.row_count == 0)
        await pilot.pause(0.2)
        assert len(app.screen.query("Toast")) <= 1


async def test_rename_starts_with_the_current_name_and_cjk_keeps_the_box(store):
    """Rename starts with the chat's name (selected: typing replaces it, `end` extends
    it). CJK in the box did not shift its border in tmux either (not reproduced): the
    box keeps its width as wide characters are typed."""
    from textual.widgets import Input

    from chatui.tui.screens.dialogs import TextPrompt

    SessionManager(store).create("東京の旅行計画", model="demo")
    app = make_app(store, Config(model="demo"), warm_llm=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ChatListScreen))
        await pilot.press("r")
        await wait_until(pilot, lambda: bool(app.screen.query("#dialog-input")))
        assert isinstance(app.screen, TextPrompt)
        box = app.screen.query_one("#dialog-input", Input)
        assert box.value == "東京の旅行計画"
        width = box.outer_size.width
        await pilot.press("end", *"会議メモ")
        await wait_until(pilot, lambda: box.value == "東京の旅行計画会議メモ")
        assert box.outer_size.width == width
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ChatListScreen))
    assert SessionManager(store).list()[0].name == "東京の旅行計画会議メモ"


# -- a long chat name hid "escape cancels" ----------------------------------------------


async def test_a_long_chat_name_leaves_the_title_room_to_say_escape_cancels(
    store, config, llm_server
):
    """A chat is named after its first question; at 130 columns with the tree and the
    sidebar shown, a long one pushed "replying… (escape cancels)" off the title line,
    the only place that says how to stop a reply. The name gives way, then the model
    (both are shown elsewhere: the tree, the reply's header)."""
    llm_server.text("Slowly, word by word, the reply arrives here.", delay=0.3)
    app = make_app(store, config)
    async with app.run_test(size=(130, 40)) as pilot:
        await ready(pilot)
        question = "What time is it in Tokyo, and in Lisbon, and in Auckland? Use the tool."
        await pilot.press(*question, "enter")
        await wait_until(pilot, lambda: app.main.generating)
        title = app.main.pane.query_one("#chat-title")
        await wait_until(pilot, lambda: "escape cancels" in line_of(app, title))
        line = line_of(app, title)
        assert line.startswith("What time i…")
        assert line.endswith(" · replying… (escape cancels)")
        assert "openai/test" in line  # the name was cut first, then the model
        await app.workspace.cancel_all()
        # Wider, the name takes the room back: nothing is cut for nothing.
        await pilot.resize_terminal(200, 40)
        await wait_until(pilot, lambda: "Tokyo, and in Lisbon" in line_of(app, title))


def line_of(app, widget) -> str:
    """What the terminal shows on `widget`'s line, inside its region."""
    region = widget.content_region
    row = screen_lines(app)[region.y]
    return row[region.x : region.right].strip()


# -- "server's count" where no server counted ------------------------------------------


async def test_the_sidebar_does_not_credit_a_server_that_did_not_count(store):
    """The offline demo model has no server, yet its exact figure was labelled "exact
    (server's count)" (as was one counted by LiteLLM's tokenizer in the app)."""
    app = make_app(store, Config(model="demo"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*"hello there", "enter")
        counted = app.main.sidebar.query_one("#counted")
        await wait_until(pilot, lambda: "exact" in str(counted.render()))
        assert str(counted.render()) == "tokens exact"


async def test_at_80x24_a_tool_call_wider_than_the_chat_keeps_its_outcome(
    store, config, llm_server
):
    """A call's row read "⚙ set_context(label=memory, content=This is a memo", cut at the
    chat's edge with its ✓ or ✗ past it (seen at 120 columns with a real model's memory
    write). The outcome comes first now and a row too wide ends in "…"."""
    long_note = "The user is debugging an add function that subtracts " * 3
    llm_server.script(
        script.tool_calls(
            ("c1", "set_context", {"label": "memory", "content": long_note}),
            ("c2", "set_context", '{"label": "memory", "content": "never clo'),  # bad JSON
        ),
        script.text("Noted."),
    )
    app = make_app(store, config)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press(*"remember this", "enter")
        await wait_until(
            pilot, lambda: not app.main.generating and len(app.main.chat_view.views) >= 2
        )
        chat = app.main.chat_view.region
        await wait_until(pilot, lambda: sum("⚙" in line for line in screen_lines(app)) == 2)
        rows = [line[chat.x : chat.right].rstrip() for line in screen_lines(app) if "⚙" in line]
        assert "⚙ ✓ set_context(label=memory, content=The user i" in rows[0], rows
        assert "⚙ ✗ set_context(" in rows[1], rows
        assert all(row.endswith("…") for row in rows), rows
