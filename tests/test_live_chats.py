"""Replies belong to their chat: they keep streaming when the user looks away (issue 10).

Keys pressed through Pilot; the model is the scripted server on 127.0.0.1, streaming
slowly so that every switch lands mid-reply.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from textual import events

from chatui.core.config import Config
from chatui.tui.screens.chat_list import ChatListScreen
from chatui.tui.screens.dialogs import Confirm
from store import SessionManager
from tests import llm_server as script
from widgets import ChatInput, MessageView

from .app_helpers import make_app, notices, wait_until

SIZE = (140, 40)
WORDS = " ".join(f"word{i}" for i in range(60))
LONG = " ".join(f"word{i}" for i in range(400))


@pytest.fixture
def config(llm_server, fake_key):
    return Config(model="openai/test-model", api_base=llm_server.base_url, max_retries=0)


async def long_chat(store, name: str, count: int = 30) -> str:
    """A stored chat of `count` messages (more than a page: the "earlier" marker shows)."""
    manager = SessionManager(store)
    info = manager.create(name, model="openai/test-model")
    messages = [
        {
            "id": f"{name}-{i}",
            "role": "user" if i % 2 == 0 else "assistant",
            "parts": [{"type": "text", "text": f"{name} message {i}"}],
        }
        for i in range(count)
    ]
    await manager.append_all(info.id, messages)
    return info.id


async def ready(pilot) -> None:
    """The first chat drawn and LiteLLM loaded (its import would slow every key press)."""
    await wait_until(pilot, lambda: pilot.app.llm_ready, 60)


def stored_reply(store, session_id: str):
    history = SessionManager(store).get_session(session_id).get_history()
    return history[-1]


async def send(pilot, text: str) -> None:
    """Type `text` and press enter; a long text is pasted, as a person would (typing
    2,000 keys through Pilot took two minutes of the suite under load)."""
    if len(text) <= 40:
        await pilot.press(*text, "enter")
        return
    box = pilot.app.screen.query_one(ChatInput)
    before = box.text
    box.post_message(events.Paste(text))
    await wait_until(pilot, lambda: box.text != before)
    await pilot.press("enter")


async def test_a_reply_keeps_streaming_when_another_chat_is_opened(store, config, llm_server):
    first = await long_chat(store, "alpha")
    second = await long_chat(store, "beta")
    llm_server.text(WORDS, delay=0.05)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await app.main.pane.open_chat(first)
        await send(pilot, "Count for me")
        await wait_until(pilot, lambda: app.main.generating)
        await pilot.pause(0.1)
        await app.main.pane.open_chat(second)  # look away mid-reply
        assert app.main.session_id == second and not app.main.generating
        assert app.workspace.replying(first)
        await wait_until(pilot, lambda: not app.workspace.live_chats)
        reply = stored_reply(store, first)
        assert reply.role == "assistant" and reply.text == WORDS
        assert reply.metadata["status"] == "complete" and not reply.metadata.get("incomplete")
        await app.main.pane.open_chat(first)
        assert app.main.chat_view.views[-1].text == WORDS


async def test_returning_mid_reply_shows_the_stream_live(store, config, llm_server):
    first = await long_chat(store, "alpha")
    second = await long_chat(store, "beta")
    llm_server.text(WORDS, delay=0.05)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await app.main.pane.open_chat(first)
        await send(pilot, "Count for me")
        await wait_until(pilot, lambda: app.main.generating)
        await app.main.pane.open_chat(second)
        await pilot.pause(0.3)
        await app.main.pane.open_chat(first)  # back while it still streams
        assert app.main.generating
        view = app.main.chat_view.views[-1]
        assert "writing…" in view.header().plain
        assert app.main.query_one(ChatInput).has_class("-busy")
        shown = len(view.text)
        await pilot.pause(0.3)
        assert len(view.text) > shown  # it keeps growing on screen
        await wait_until(pilot, lambda: not app.main.generating)
        await pilot.pause()
        assert app.main.chat_view.views[-1].text == WORDS  # nothing doubled or lost


async def test_switching_chats_mid_reply_never_crashes(store, config, llm_server):
    """Issue 10's crash: send, then about 1.5 s later ctrl+s, down, enter into another
    long chat: two redraws at once mounted two "earlier" markers (DuplicateIds)."""
    await long_chat(store, "alpha")
    await long_chat(store, "beta")
    for _ in range(4):
        llm_server.text(WORDS, delay=0.02)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        for delay in (0.0, 0.05, 0.15, 0.3):
            await send(pilot, "Go on")
            await pilot.pause(delay)
            await pilot.press("ctrl+s")
            await wait_until(pilot, lambda: isinstance(app.screen, ChatListScreen))
            await pilot.press("down", "enter")
            await pilot.pause(delay)
            await pilot.press("ctrl+s")
            await wait_until(pilot, lambda: isinstance(app.screen, ChatListScreen))
            await pilot.press("down", "enter")
            await wait_until(pilot, lambda: not app.workspace.live_chats)
            await pilot.pause()
        assert app.is_running
    assert app.return_code in (None, 0)
    for info in SessionManager(store).list():
        for message in SessionManager(store).get_session(info.id).get_tree():
            if message.role == "assistant" and message.metadata.get("model"):
                assert message.text == WORDS and message.metadata["status"] == "complete"


async def test_escape_cancels_only_the_chat_on_screen(store, config, llm_server):
    first = await long_chat(store, "alpha")
    second = await long_chat(store, "beta")
    llm_server.text(LONG, delay=0.05)
    llm_server.text(LONG, delay=0.05)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await app.main.pane.open_chat(first)
        await send(pilot, "Long one")
        await wait_until(pilot, lambda: app.main.generating)
        await app.main.pane.open_chat(second)
        await send(pilot, "Another one")
        await wait_until(pilot, lambda: app.main.generating)
        assert app.workspace.live_chats == {first, second}
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.workspace.replying(second))
        assert app.workspace.replying(first)  # the other chat goes on
        cancelled = stored_reply(store, second)
        assert cancelled.metadata["status"] == "cancelled"
        await pilot.pause(0.2)
        assert "cancelled" in app.main.chat_view.views[-1].header().plain
        await app.workspace.cancel_all()
    assert LONG.startswith(stored_reply(store, first).text)


async def test_the_bound_on_live_replies_refuses_and_keeps_the_text(store, llm_server, fake_key):
    config = Config(
        model="openai/test-model", api_base=llm_server.base_url, max_retries=0, max_live_replies=1
    )
    first = await long_chat(store, "alpha")
    second = await long_chat(store, "beta")
    llm_server.text(WORDS, delay=0.05)
    app = make_app(store, config)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ready(pilot)
        await app.main.pane.open_chat(first)
        await send(pilot, "One")
        await wait_until(pilot, lambda: app.main.generating)
        await app.main.pane.open_chat(second)
        await send(pilot, "Two")
        await pilot.pause()
        assert not app.workspace.replying(second)
        assert app.main.query_one(ChatInput).text == "Two"  # kept for later
        await wait_until(pilot, lambda: "max_live_replies" in notices(app))
        assert len(llm_server.requests) == 1
        await app.workspace.cancel_all()


async def test_quitting_with_replies_running_asks_once_then_keeps_them(store, config, llm_server):
    first = await long_chat(store, "alpha")
    llm_server.text(LONG, delay=0.05)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await app.main.pane.open_chat(first)
        await send(pilot, "Take your time")
        await wait_until(pilot, lambda: app.main.generating)
        await pilot.pause(0.3)
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("ctrl+q")  # asked once: a second ctrl+q does not stack dialogs
        assert sum(isinstance(s, Confirm) for s in app.screen_stack) == 1
        await pilot.press("escape")  # keep writing
        await pilot.pause()
        assert app.workspace.replying(first)
        await pilot.press("ctrl+q")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm))
        app.screen.dismiss(True)
        await pilot.pause(0.5)
    assert app.return_code == 0
    reply = stored_reply(store, first)
    assert reply.metadata["status"] == "cancelled" and reply.metadata["incomplete"]
    assert reply.text and LONG.startswith(reply.text)  # what arrived is kept


async def test_a_regenerated_reply_says_writing_while_it_streams(store, config, llm_server):
    llm_server.text("First answer.")
    llm_server.text(WORDS, delay=0.05)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "Question")
        await wait_until(pilot, lambda: not app.main.generating and len(llm_server.requests) == 1)
        await pilot.pause(0.1)
        await pilot.press("up", "ctrl+r")
        await wait_until(pilot, lambda: app.main.generating)
        await pilot.pause(0.2)
        view = app.main.chat_view.views[-1]
        header = view.header().plain
        assert "writing…" in header and "interrupted" not in header
        await wait_until(pilot, lambda: not app.main.generating)


async def test_fork_mid_reply_is_refused_like_r_and_e(store, config, llm_server):
    llm_server.text(WORDS, delay=0.05)
    app = make_app(store, config)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ready(pilot)
        await send(pilot, "Question")
        await wait_until(pilot, lambda: app.main.generating)
        chats_before = len(SessionManager(app.store).list())
        await pilot.press("up")
        assert isinstance(app.focused, MessageView)
        await pilot.press("f")
        await pilot.pause()
        assert len(SessionManager(app.store).list()) == chats_before
        await wait_until(pilot, lambda: "Still replying" in notices(app))
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.main.generating)


async def test_two_redraws_at_once_do_not_mount_two_earlier_markers():
    """The crash's root: `ChatView.show` twice at once (a turn's end and an opened chat)
    mounted two `#earlier` markers. The view serialises its mounts."""
    from textual.app import App

    from store import Message
    from widgets import ChatView

    history = [
        Message(id=f"m{i}", role="user" if i % 2 == 0 else "assistant", parts=[]) for i in range(40)
    ]

    class One(App[None]):
        def compose(self):
            yield ChatView(id="chat")

    app = One()
    async with app.run_test() as pilot:
        view = app.query_one(ChatView)
        await asyncio.gather(view.show(history), view.show(history[:30]), view.load_earlier())
        await pilot.pause()
        assert len(view.query("#earlier")) == 1
        assert app.is_running


async def test_a_streaming_reply_sends_the_screen_no_message_per_word(store, config, llm_server):
    """One delta path: a delta's text goes straight to its reply's stream (the view joins
    and draws it), so a fast stream does not queue a message per word ahead of the
    frames that show it. Counted with Textual's message hook: the app's own messages
    for a 60-word reply are as many as for a 5-word one. Nothing is lost or doubled."""
    short = "one two three four five"
    llm_server.text(short, delay=0.01)
    llm_server.text(WORDS, delay=0.01)
    app = make_app(store, config)
    ours: list[str] = []

    def hook(message) -> None:
        if type(message).__module__.startswith("chatui."):
            ours.append(type(message).__qualname__)

    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await ready(pilot)
        counts = []
        for text, reply in (("Count a little", short), ("Count", WORDS)):
            ours.clear()
            await send(pilot, text)
            await wait_until(pilot, lambda: len(app.main.chat_view.views) % 2 == 0)
            await wait_until(pilot, lambda: not app.main.generating)
            await pilot.pause(0.2)
            assert app.main.chat_view.views[-1].text == reply
            counts.append(len(ours))
    assert counts[1] <= counts[0] + 2, (counts, ours)  # 60 words: no message per word


async def test_a_reply_slow_to_start_shows_writing_before_its_first_word(store, config, llm_server):
    """The reply's view is drawn with the question, empty and marked writing, until its
    words come; they are drawn into it, not into a second view."""
    llm_server.text("late words", delay=2.0)  # the first 2 s in: room for a loaded machine
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "Anyone there?")
        await wait_until(pilot, lambda: app.main.generating)
        await wait_until(pilot, lambda: len(app.main.chat_view.views) == 2, 1.9)
        view = app.main.chat_view.views[-1]
        assert view.message.role == "assistant" and view.text == ""
        assert "writing…" in view.header().plain
        await wait_until(pilot, lambda: not app.main.generating)
        await pilot.pause()
        assert app.main.chat_view.views[-1].text == "late words"
        assert len(app.main.chat_view.views) == 2  # drawn once, not twice


async def test_typing_while_a_reply_streams_loses_no_key_and_the_reply_keeps_drawing(
    store, config, llm_server
):
    """While someone types, a streaming reply is drawn less often (each keystroke's frame
    stays cheap), but it is still drawn, and every key lands in order."""
    from textual import events

    llm_server.text(LONG, delay=0.01)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "Count")
        await wait_until(pilot, lambda: len(app.main.chat_view.views) == 2 and app.main.generating)
        box = app.main.chat_input
        box.focus()
        view = app.main.chat_view.views[-1]
        lengths = []
        typed = "the quick brown fox jumps over the lazy dog"
        for char in typed:
            # Posted as a terminal would send it: Pilot.press waits for an idle app,
            # which a streaming one never is.
            box.post_message(events.Key("space" if char == " " else char, char))
            await asyncio.sleep(0.03)
            lengths.append(len(view.shown))  # drawn, not received
        await wait_until(pilot, lambda: box.text == typed)
        grew = sum(1 for a, b in zip(lengths, lengths[1:], strict=False) if b > a)
        assert grew >= 3, lengths  # ~1.3 s of typing: redrawn every 0.25 s at most
        assert lengths[-1] < len(LONG)  # it was still streaming while we typed
        await app.workspace.cancel_all()


# -- enter to first token (issue 10's speed figure: these check the order, not the time) --


async def test_the_request_leaves_before_the_question_is_drawn_never_before_it_is_stored(
    store, store_url, config, llm_server
):
    """Enter stores the question, then hands the request to the model process, and only
    then draws (the question, the reply's empty view): the frames and the reply's own row
    are made while the request travels. What the request carries is stored already: a
    second connection to the database finds the question at that instant."""
    from store import Store

    llm_server.text("Hello back")
    app = make_app(store, config)
    order: list[tuple[str, str]] = []
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        worker = app.workspace.worker
        assert worker is not None
        send_to_worker = worker._send

        def sent(message: dict) -> None:
            if message.get("op") == "stream":
                asked = message["args"]["messages"][-1]["content"]
                with Store(store_url) as other:  # as a process started after a kill finds it
                    history = SessionManager(other).get_history(app.main.session_id)
                stored = [m.text for m in history]
                order.append(("sent", asked))
                order.append(("stored then", " | ".join(stored)))
            send_to_worker(message)

        worker._send = sent
        chat_view = app.main.chat_view
        add_message = chat_view.add_message

        async def drawn(message, *args, **kwargs):
            order.append(("drawn", message.role))
            return await add_message(message, *args, **kwargs)

        chat_view.add_message = drawn
        try:
            await send(pilot, "What time is it?")
            await wait_until(pilot, lambda: not app.main.generating)
            await pilot.pause()
        finally:
            worker._send = send_to_worker  # the process's one worker serves later tests
        session_id = app.main.session_id
    assert order[:4] == [
        ("sent", "What time is it?"),
        ("stored then", "What time is it?"),
        ("drawn", "user"),
        ("drawn", "assistant"),
    ], order
    assert stored_reply(store, session_id).text == "Hello back"


async def test_a_reply_that_comes_at_once_draws_its_first_words_before_the_rest(
    store, config, llm_server
):
    """What is heard right behind a reply's first words (the rest of a reply that came at
    once, its end, the redraws they ask for) waits until the frame that shows them is
    drawn: Textual draws when the screen's queue is empty, and queued behind them, the
    first words waited for the whole reply. So the words are shown while the reply
    still says "writing", and its end comes after."""
    llm_server.text("Firstwords and the rest, all at once.")
    app = make_app(store, config)
    seen: list[tuple[str, bool]] = []

    def hook(_message) -> None:
        try:
            views = app.main.chat_view.views
        except Exception:
            return
        if len(views) == 2:
            seen.append((views[-1].shown, "writing" in views[-1].header().plain))

    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await ready(pilot)
        await send(pilot, "Go")
        await wait_until(pilot, lambda: not app.main.generating)
        await pilot.pause()
    worded = [writing for text, writing in seen if text.startswith("Firstwords")]
    assert worded[0] is True  # the words' own frame: still writing
    assert worded[-1] is False  # then its end


async def test_the_busy_title_and_the_tree_s_new_rows_are_one_frame(store, config, llm_server):
    """Issue 22: a moment after enter (`BUSY_AFTER`) the input's busy border, the busy
    title and the tree's rows for the question and its reply are drawn; the title and
    the input were one frame and the tree, told by a message, a second (a frame is
    about a millisecond of the app's CPU, taken from a local model). One frame now."""
    from chatui.tui.chat_panes import ChatTitle
    from widgets import MessageTree

    llm_server.text("late words arrive", delay=1.5)  # the follow comes before the words
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        screen = app.screen
        updated = screen._compositor.update_widgets
        frames: list[set[str]] = []

        def noted(widgets):
            names = {type(w).__name__ for w in widgets}
            if names & {"ChatTitle", "ChatTree", "ChatInput"}:
                frames.append(names)
            return updated(widgets)

        screen._compositor.update_widgets = noted
        try:
            await send(pilot, "Anyone there?")
            await wait_until(pilot, lambda: "late" in app.main.chat_view.views[-1].text)
        finally:
            screen._compositor.update_widgets = updated
        tree = type(app.main.tree).__name__
        assert isinstance(app.main.tree, MessageTree)
        title = ChatTitle.__name__
        followed = [names for names in frames if title in names or tree in names]
        assert followed, frames
        assert {title, tree} <= followed[0], frames  # one frame, not two


async def test_a_reply_that_ends_well_is_not_restyled(store, config, llm_server, monkeypatch):
    """Issue 22: a reply's end only drops `-writing`, which no CSS styles; restyling the
    view and all in it for that was milliseconds of the app's CPU per send, taken from a
    local model on the same cores. Its state still reads from the class."""
    restyled: list[MessageView] = []
    restyle = MessageView.update_node_styles

    def counted(view: MessageView, animate: bool = True) -> None:
        restyled.append(view)
        restyle(view, animate)

    monkeypatch.setattr(MessageView, "update_node_styles", counted)
    llm_server.text("All is well here.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "Are you there?")
        await wait_until(pilot, lambda: not app.main.generating)
        await pilot.pause()
        views = app.main.chat_view.views
        assert views[-1].message.role == "assistant" and not views[-1].has_class("-writing")
        assert views[-1].shown == "All is well here."
        assert not [v for v in restyled if v.message.role == "assistant"]
        # Nothing styles it, so nothing was left unstyled (the app's whole stylesheet).
        selected = {
            selector.name
            for rule in app.stylesheet.rules
            for chain in rule.selector_set
            for selector in chain.selectors
        }
        assert "-error" in selected and "-writing" not in selected


async def test_a_turns_usage_is_drawn_in_the_sidebar_alone_and_together(store, config, llm_server):
    """Issue 22: what the policy releases before the pane draws is drawn as one batch
    (a turn's end is its usage, its measure and its end, a few ms apart: each was a
    frame, the tree and the sidebar drawn again in each), and a batch that changed
    only the chat's figures redraws the sidebar, not the tree."""
    from chatui.core.events import UsageRecorded
    from chatui.tui.first_frame import Release

    llm_server.text("Hello there.")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "Hi")
        await wait_until(pilot, lambda: not app.main.generating)
        await pilot.pause()
        main, pane = app.main, app.main.pane
        assert pane.facts is not None and pane.facts.info is not None
        spent = pane.facts.info.output_tokens
        trees: list[int] = []
        sidebars: list[int] = []
        show_facts = main.sidebar.show_facts

        async def counted(*args, **kwargs) -> None:
            sidebars.append(1)
            await show_facts(*args, **kwargs)

        main.show_tree = lambda: trees.append(1)  # type: ignore[method-assign]
        main.sidebar.show_facts = counted  # type: ignore[method-assign]
        usage = UsageRecorded(pane.session_id, main.chat_view.views[-1].message_id, 7, 5, 0.0)
        pane._post_draw(Release((usage,)))
        pane._post_draw(Release((usage,)))
        await wait_until(pilot, lambda: sidebars)
        await pilot.pause()
        assert pane.facts.info.output_tokens == spent + 10  # both drawn
        assert sidebars == [1] and trees == []


async def test_first_words_after_their_question_are_drawn_without_a_layout(
    store, config, llm_server, monkeypatch
):
    """Issue 22: a reply's first words that come after its question was drawn land in
    its plain body, one line high already: their frame repaints that line. The screen
    was laid out for them (a reflow and a repaint of the whole chat area), only so the
    first-frame policy would be told after their frame; it still is."""
    from textual._compositor import Compositor

    from .app_helpers import record_terminal

    llm_server.text("Slowwords come.", delay=0.3)  # after the question's hold
    app = make_app(store, config)
    frames = record_terminal(app).frames
    layouts: list[int] = []
    reflow = Compositor.reflow

    def counted(compositor, *args, **kwargs):
        layouts.append(1)
        return reflow(compositor, *args, **kwargs)

    monkeypatch.setattr(Compositor, "reflow", counted)
    worded: list[int] = []  # layouts so far when the words reached the reply's body

    def hook(_message) -> None:
        try:
            views = app.main.chat_view.views
        except Exception:
            return
        if not worded and len(views) == 2 and views[-1].shown:
            worded.append(len(layouts))

    told: list[tuple[int, bool]] = []
    async with app.run_test(size=SIZE, headless=False, message_hook=hook) as pilot:
        await ready(pilot)
        pane = app.main.pane
        drawn = pane._first_words_drawn

        def watched() -> None:
            told.append((len(layouts), any("Slowwords" in frame for frame in frames)))
            drawn()

        pane._first_words_drawn = watched  # type: ignore[method-assign]
        await send(pilot, "Go")
        await wait_until(pilot, lambda: told)
        await wait_until(pilot, lambda: any("Slowwords" in frame for frame in frames))
        await wait_until(pilot, lambda: not app.main.generating)
    assert worded and told
    assert told[0][0] == worded[0]  # no layout between the words and the policy
    # Whether their frame was sent before the policy was told is not asserted: a fresh-
    # clone run (4 workers) once saw the policy told first, not reproduced since; kept
    # as a known question (the closing note of 2026-11-26).


async def test_a_reply_whose_server_fails_at_once_says_so_in_its_view(store, config, llm_server):
    """The reply's view is drawn with the question, before any answer: when the server
    answers with an error straight away, that view ends marked as an error, the error is
    explained below it, and the input is free again."""
    from widgets import ChatNotice

    llm_server.error(500, "the GPU caught fire")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "Are you there?")
        await wait_until(pilot, lambda: not app.main.generating)
        await pilot.pause(0.2)
        views = app.main.chat_view.views
        assert [v.message.role for v in views] == ["user", "assistant"]
        assert views[-1].has_class("-error") and not views[-1].has_class("-writing")
        notes = list(app.main.query(ChatNotice))
        assert notes and notes[-1].level == "error"
        assert not app.main.chat_input.has_class("-busy")
        assert app.main.chat_input.text == ""  # the question is stored: the box is clear
        reply = stored_reply(store, app.main.session_id)
        assert reply.metadata["status"] == "error"


# -- the question held for its reply's first words ---------------------------------------


def hold_for(monkeypatch, seconds: float) -> None:
    """The hold's length for one test: long enough that a loaded machine's server is
    inside it (or that a key lands inside it), so the test checks order, not timing."""
    from chatui.tui import first_frame

    monkeypatch.setattr(first_frame, "QUESTION_HOLD", seconds)


async def test_a_reply_that_comes_at_once_is_drawn_with_its_question(
    store, config, llm_server, monkeypatch
):
    """The question waits for its reply's first words and both are drawn together: with a
    10 s hold, the question is mounted as soon as its words come (their release, not the
    timer's), and the input clears at once. (The hold is long so that a loaded machine's
    slowness cannot pass for the timer's release.)"""
    hold_for(monkeypatch, 10.0)
    llm_server.text("Hello back")
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        sent = time.monotonic()
        await send(pilot, "What time is it?")
        assert not app.main.chat_input.text  # cleared at once, not after the hold
        await wait_until(pilot, lambda: len(app.main.chat_view.views) == 2)
        assert time.monotonic() - sent < 6  # with its words, not after the 10 s hold
        await wait_until(pilot, lambda: app.main.chat_view.views[-1].shown == "Hello back")
        await wait_until(pilot, lambda: not app.main.generating)


async def test_a_slow_reply_draws_its_question_after_the_hold_before_its_words(
    store, config, llm_server, monkeypatch
):
    hold_for(monkeypatch, 0.2)
    # The words come 2 s apart, the first 2 s in: room for a loaded machine to draw the
    # question after the hold and before them (0.8 s left it 0.7 s to do so).
    llm_server.text("late words", delay=2.0)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        sent = time.monotonic()
        await send(pilot, "Anyone there?")
        main = app.main
        assert not main.chat_input.text  # cleared at once
        # Judged only while the hold can still be running (a loaded machine may take
        # longer than the hold to press the key): the question is not drawn yet.
        if time.monotonic() - sent < 0.2:
            assert len(main.chat_view.views) == 0
        await wait_until(pilot, lambda: len(main.chat_view.views) == 2, 1.9)
        assert time.monotonic() - sent >= 0.2  # drawn once the hold ran out, not before
        assert main.chat_view.views[-1].text == ""  # the hold ran out before the words
        await wait_until(pilot, lambda: main.chat_view.views[-1].shown == "late words")
        await wait_until(pilot, lambda: not main.generating)


async def test_a_held_question_is_stored_already(store, store_url, config, llm_server, monkeypatch):
    """A kill or an exit during the hold loses nothing: the question is stored before it
    is held, and the app exits with a reply running and a question held."""
    from store import Store

    hold_for(monkeypatch, 5.0)
    llm_server.script(script.hang(30))
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "Keep this")
        main = app.main
        await wait_until(pilot, lambda: main.session_id is not None and main.generating)
        assert not main.chat_view.views  # held: drawn with its words
        with Store(store_url) as other:  # as a process started after a kill finds it
            history = SessionManager(other).get_history(main.session_id)
        assert (history[0].role, history[0].text) == ("user", "Keep this")
        session_id = main.session_id
        await app.workspace.cancel_all()
        app.exit()
    assert SessionManager(store).get_history(session_id)[0].text == "Keep this"


async def test_escape_during_the_hold_cancels_and_draws_the_question(
    store, config, llm_server, monkeypatch
):
    hold_for(monkeypatch, 5.0)
    llm_server.script(script.hang(30))
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "Never mind")
        main = app.main
        assert main.generating and not main.chat_view.views  # held
        await pilot.press("escape")
        await wait_until(pilot, lambda: not main.generating)
        await wait_until(pilot, lambda: main.chat_view.views, 2.0)  # the job's end, not the timer
        assert main.chat_view.views[0].text == "Never mind"
        assert not main.chat_input.has_class("-busy")


async def test_switching_chat_during_the_hold_draws_nothing_into_the_new_one(
    store, config, llm_server, monkeypatch
):
    other = await long_chat(store, "beta", count=4)
    hold_for(monkeypatch, 0.3)
    llm_server.text("Hello back", delay=0.5)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        await main.pane.open_chat(None)  # a new chat: the app opened the stored one
        await pilot.pause()
        await send(pilot, "Held question")
        first = main.session_id
        assert not main.chat_view.views  # held
        await main.pane.open_chat(other)
        await wait_until(pilot, lambda: not app.workspace.live_chats)
        await pilot.pause(0.1)
        assert main.session_id == other
        assert [v.text for v in main.chat_view.views] == [f"beta message {i}" for i in range(4)]
        await main.pane.open_chat(first)
        assert [v.text for v in main.chat_view.views] == ["Held question", "Hello back"]


async def test_a_send_shows_the_input_busy_and_back_without_restyling_it(store, config, llm_server):
    """The busy border comes and goes with a reply (twice a send) without a restyle
    of the input: each applied the whole stylesheet to it and threw its drawn lines
    away, milliseconds of a send's CPU taken from a local model."""
    from textual.dom import DOMNode

    llm_server.text(WORDS, delay=0.01)
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        box = app.main.chat_input
        restyled: list[DOMNode] = []
        update_styles = app.update_styles

        def counting(node: DOMNode, animate: bool = True) -> None:
            restyled.append(node)
            update_styles(node, animate)

        app.update_styles = counting  # type: ignore[method-assign]
        await send(pilot, "Count for me")
        await wait_until(pilot, lambda: box.has_class("-busy"))
        assert box.styles.border_top[1] != box.styles.base.border_top[1]  # set on the box
        await wait_until(pilot, lambda: not app.main.generating)
        await wait_until(pilot, lambda: not box.has_class("-busy"))
        assert box not in restyled
        assert not box.styles.inline.has_rule("border_top")  # the stylesheet's border again
