"""The app as a person uses it: real keys through Pilot, on a populated database."""

from __future__ import annotations

import pytest
from textual import events
from textual.widgets import Input, Label, OptionList

from chatui.core.ui_state import load_state
from chatui.tui.screens.chat_list import ChatListScreen
from chatui.tui.screens.help import HelpScreen
from chatui.tui.screens.main import MainScreen
from chatui.tui.screens.model_picker import ModelPicker
from chatui.tui.screens.search import SearchScreen
from store import SessionManager
from widgets import ChatInput, ChatView, ContextSidebar, MessageTree, MessageView

from .app_helpers import make_app, populate, wait_until

SIZE = (140, 40)


@pytest.fixture
def chats(store):
    return populate(store)


def main_of(app) -> MainScreen:
    return app.main


def path_ids(app) -> list[str]:
    return app.main.query_one(ChatView).shown_ids


async def test_opens_newest_chat_on_its_latest_branch(store, chats):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        main = main_of(app)
        assert main.session_id == chats["lisbon"]
        assert path_ids(app) == ["q1", "a2", "q2b", "a4"]
        tree = main.query_one(MessageTree)
        assert set(tree.message_ids) == {"q1", "a1", "a2", "q2", "a3", "q2b", "a4"}
        assert main.query_one(ChatInput).has_focus


async def test_left_right_switch_sibling_branches_and_keep_everything(store, chats):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("up")  # from the input to the last message
        await pilot.press("up", "up")  # a4 → q2b → a2
        focused = app.focused
        assert isinstance(focused, MessageView) and focused.message_id == "a2"
        assert focused.position == (2, 2)
        await pilot.press("left")
        await pilot.pause()
        assert path_ids(app) == ["q1", "a1"]
        assert isinstance(app.focused, MessageView) and app.focused.message_id == "a1"
        await pilot.press("left")  # already the first: nothing changes
        await pilot.pause()
        assert path_ids(app) == ["q1", "a1"]
        await pilot.press("right")
        await pilot.pause()
        assert path_ids(app) == ["q1", "a2", "q2b", "a4"]
        # the branch choice is remembered in the session
        assert SessionManager(app.store).get(chats["lisbon"]).metadata["active_leaf"] == "a4"
        assert SessionManager(app.store).get_message_count(chats["lisbon"]) == 7


async def test_selecting_a_tree_node_makes_its_branch_active(store, chats):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        tree = main_of(app).query_one(MessageTree)
        tree.focus()
        tree.select_message("a3")  # inside a collapsed alternative
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert path_ids(app) == ["q1", "a2", "q2", "a3"]
        assert tree.active_leaf == "a3"
        # ] in the tree on q2 moves to its sibling q2b; enter shows that branch
        tree.select_message("q2")
        await pilot.pause()
        await pilot.press("right_square_bracket", "enter")
        await pilot.pause()
        assert path_ids(app) == ["q1", "a2", "q2b", "a4"]


async def test_branch_survives_restart(store, chats):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await main_of(app).pane.actions.act("a2", "previous")
        await pilot.pause()
        assert path_ids(app) == ["q1", "a1"]
    again = make_app(store)
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert path_ids(again) == ["q1", "a1"]


async def test_chat_list_open_rename_delete_undo_restore(store, chats):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ChatListScreen)
        assert [r.name for r in screen.rows] == ["Lisbon trip", "Soup recipes", "Python help"]
        await pilot.press("down")  # Soup recipes
        await pilot.press("r")
        await pilot.pause()
        await pilot.press(*"Tomato soup", "enter")  # the old name is selected: typing replaces it
        await pilot.pause()
        assert SessionManager(app.store).get(chats["soup"]).name == "Tomato soup"
        await pilot.press("d")  # delete the highlighted chat (soft)
        await pilot.pause()
        assert SessionManager(app.store).get(chats["soup"]) is None
        assert SessionManager(app.store).get(chats["soup"], include_deleted=True) is not None
        assert [r.name for r in screen.rows] == ["Lisbon trip", "Python help"]
        await pilot.press("u")  # undo
        await pilot.pause()
        assert SessionManager(app.store).get(chats["soup"]) is not None
        await pilot.press("d")
        await pilot.press("t")  # deleted chats
        await pilot.pause()
        assert [r.name for r in screen.rows] == ["Tomato soup"]
        await pilot.press("enter")  # restores and opens it
        await pilot.pause()
        assert not isinstance(app.screen, ChatListScreen)
        assert main_of(app).session_id == chats["soup"]
        assert SessionManager(app.store).get(chats["soup"]) is not None
        assert path_ids(app) == ["s1", "s2"]


async def test_search_opens_the_hit_on_its_branch(store, chats):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+f")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        await pilot.press(*"nata")
        await pilot.pause(0.3)
        assert [h.id for h in screen.hits] == ["a3"]
        await pilot.press("enter")
        await pilot.pause()
        main = main_of(app)
        assert main.session_id == chats["lisbon"]
        assert path_ids(app) == ["q1", "a2", "q2", "a3"]  # the hit's branch, not the latest
        assert isinstance(app.focused, MessageView) and app.focused.message_id == "a3"


async def test_search_with_hostile_query_does_not_break(store, chats):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+f")
        await pilot.pause()
        await pilot.press(*'"AND ( NEAR( *', "enter")
        await pilot.pause(0.3)
        assert isinstance(app.screen, SearchScreen)
        assert app.screen.hits == []
        # Not a query: the status says why, in the words both engines share.
        status = str(app.screen.query_one("#search-status", Label).render())
        assert (
            'A quoted phrase is not closed: add the closing ". Searched as plain words.' in status
        )


async def open_search(pilot) -> SearchScreen:
    """ctrl+f, once the search screen is up."""
    await pilot.press("ctrl+f")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, SearchScreen))
    return pilot.app.screen


async def test_letters_typed_in_the_search_hits_change_the_query(store, chats):
    """Down moved into the hits, and the letters typed next went nowhere; with no hits
    down moved the focus into an empty list. Typing in the hits goes to the query now
    (backspace too), and down with no hits leaves the focus on the query."""
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot)
        field = screen.query_one("#search-input", Input)
        await pilot.press(*"natx", "down")
        await wait_until(
            pilot,
            lambda: "Nothing matches" in str(screen.query_one("#search-status", Label).render()),
        )
        assert app.focused is field  # nothing to move to
        await pilot.press("backspace", *"a", "down")
        await wait_until(pilot, lambda: [h.id for h in screen.hits] == ["a3"])
        await pilot.press("down")
        assert isinstance(app.focused, OptionList)
        await pilot.press("backspace", "backspace", "backspace", "backspace", *"Gulbenkian")
        assert app.focused is field and field.value == "Gulbenkian"
        await wait_until(pilot, lambda: len(screen.hits) == 1 and screen.hits[0].id != "a3")


async def test_the_word_being_typed_is_searched_as_a_prefix(store, chats):
    """`Gulben` found nothing until the word was whole: the last word typed is a prefix
    now; after a space it is a whole word again, and a phrase still being typed is left
    as it is."""
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot)
        status = screen.query_one("#search-status", Label)
        await pilot.press(*"Gulben")
        await wait_until(pilot, lambda: len(screen.hits) == 1)
        assert "Gulbenkian" in str(
            screen.query_one("#search-results", OptionList).options[0].prompt
        )
        await pilot.press("space")
        await wait_until(pilot, lambda: "Nothing matches 'Gulben '" in str(status.render()))
        assert screen.hits == []
        await pilot.press("enter")  # enter searches the same way: nothing to open
        assert isinstance(app.screen, SearchScreen)
        await pilot.press("backspace", "enter")  # the prefix's hit opens
        await wait_until(pilot, lambda: not isinstance(app.screen, SearchScreen))


def test_only_a_word_being_typed_becomes_a_prefix():
    from store.search import as_you_type

    assert as_you_type("questio") == "(questio OR questio*)"
    assert as_you_type("tea OR cof") == "tea OR (cof OR cof*)"
    assert as_you_type("tea ") == "tea "  # a space: the word is whole
    assert as_you_type('"green te') == '"green te'  # a phrase still open
    assert as_you_type('"green tea"') == '"green tea"'
    assert as_you_type("tea OR") == "tea OR"  # an operator, not a word
    assert as_you_type("te*") == "te*"
    assert as_you_type("t") == "t"  # one letter would match nearly everything
    assert as_you_type("été") == "(été OR été*)"
    assert as_you_type("") == ""


def test_a_whole_word_typed_last_still_finds_what_it_found(store, chats):
    """The index holds stems and a prefix is matched against them: a whole word as a
    prefix alone missed (`zymurgy*`, `pastéis*`); with the word itself beside it, the
    search finds everything the word found, and what its prefix adds."""
    from store.search import as_you_type

    manager = SessionManager(store)
    for word in ("pastéis", "Gulbenkian", "Belém", "days", "reverse"):
        whole = {hit.id for hit in manager.search(word, 50)}
        assert whole, word
        assert whole <= {hit.id for hit in manager.search(as_you_type(word), 50)}, word


async def test_search_says_1_match_and_counts_more(store, chats):
    """ "1 matches" was the status line of a search with one hit."""
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+f")
        await pilot.pause()
        status = app.screen.query_one("#search-status", Label)
        await pilot.press(*"Gulbenkian")
        await wait_until(pilot, lambda: len(app.screen.hits) == 1)
        assert str(status.render()).startswith("1 match · enter opens")
        await pilot.press(*["backspace"] * len("Gulbenkian"), *"nata OR soup OR museums")
        await wait_until(pilot, lambda: len(app.screen.hits) > 1)
        assert str(status.render()).startswith(f"{len(app.screen.hits)} matches · ")


async def test_search_syntax_or_and_not(store, chats):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+f")
        await pilot.pause()
        screen = app.screen
        await pilot.press(*"(nata OR soup)")
        await pilot.pause(0.3)
        both = {h.id for h in screen.hits}
        await pilot.press(*" NOT nata")
        await pilot.pause(0.3)
        assert "a3" in both and "a3" not in {h.id for h in screen.hits}
        assert {h.id for h in screen.hits} == both - {"a3"} and screen.hits


async def test_new_chat_help_panes_and_model(store, chats):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        main = main_of(app)
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert main.chat is None and path_ids(app) == []
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is main
        await pilot.press("ctrl+b")
        await pilot.pause()
        assert not main.query_one(ContextSidebar).display
        await pilot.press("ctrl+t")  # focuses the tree; again: back to the input
        await pilot.pause()
        assert main.focused is main.query_one(MessageTree)
        await pilot.press("ctrl+t")
        assert isinstance(main.focused, ChatInput)
        await main.run_action("toggle_tree")  # the palette's "Toggle tree" hides it
        await pilot.pause()
        assert not main.query_one(MessageTree).display
        assert load_state().show_sidebar is False and load_state().show_tree is False
        await pilot.press("ctrl+b", "ctrl+t")  # ctrl+t on a hidden tree shows it
        await pilot.pause()
        assert main.query_one(ContextSidebar).display and main.query_one(MessageTree).display
        await pilot.press("ctrl+s")
        await pilot.pause()
        await pilot.press("enter")  # open Lisbon trip
        await pilot.pause()
        await pilot.press("ctrl+l")
        await pilot.pause()
        assert isinstance(app.screen, ModelPicker)
        await pilot.press(*"openai/gpt-test", "enter")
        await pilot.pause()
        assert SessionManager(app.store).get(chats["lisbon"]).model == "openai/gpt-test"
        assert load_state().recent_models[0] == "openai/gpt-test"


async def test_fork_and_copy(store, chats):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("up", "up")  # q2b
        assert app.focused.message_id == "q2b"
        await pilot.press("c")
        await pilot.pause()
        assert app.clipboard == "And the museums?"
        await pilot.press("f")
        await pilot.pause()
        main = main_of(app)
        assert main.session_id != chats["lisbon"]
        forked = SessionManager(app.store).get(main.session_id)
        assert forked.parent_session_id == chats["lisbon"]
        texts = [m.text for m in main.snapshot.history]
        assert texts == [
            "Plan three days in Lisbon",
            "Start in Belém with the tower.",
            "And the museums?",
        ]
        assert (
            SessionManager(app.store).get_message_count(chats["lisbon"]) == 7
        )  # the source is untouched


async def test_copy_cycles_through_code_blocks(store, chats):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await main_of(app).pane.open_chat(chats["python"])
        await pilot.pause()
        await pilot.press("up")
        await pilot.press("c")
        assert app.clipboard.startswith("Use `reversed(xs)`")
        await pilot.press("c")
        assert app.clipboard == "xs[::-1]"


async def test_theme_picked_in_the_palette_is_remembered(store, chats):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.theme == "chatui-dark"
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"theme")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press(*"chatui-light")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert app.theme == "chatui-light"
    assert load_state().theme == "chatui-light"
    again = make_app(store, ui_state=load_state())
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert again.theme == "chatui-light"


async def test_down_then_enter_in_the_chat_list_opens_the_chat_the_cursor_reached(store, chats):
    """Keys read together (a quick typist, a loaded machine): enter waits for the down
    still on its way through the table, and opens the chat it moved to."""
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ChatListScreen))
        await pilot.pause()
        assert app.screen.selected().name == "Lisbon trip"
        app.post_message(events.Key("down", None))
        app.post_message(events.Key("enter", None))
        await wait_until(pilot, lambda: not isinstance(app.screen, ChatListScreen))
        await pilot.pause()
        assert main_of(app).session_id == chats["soup"]


async def test_the_chat_list_filter_moves_and_opens_with_the_keys_of_the_list(store, chats):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ChatListScreen))
        await pilot.press("slash", "e")  # not "Lisbon trip"
        await pilot.pause()
        screen = app.screen
        assert [r.name for r in screen.rows] == ["Soup recipes", "Python help"]
        await pilot.press("down", "up", "down")  # the cursor moves; the typing stays
        await pilot.pause()
        assert screen.query_one("#chats-filter").has_focus
        assert screen.selected().name == "Python help"
        await pilot.press("enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, ChatListScreen))
        assert main_of(app).session_id == chats["python"]
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ChatListScreen))
        await pilot.press("slash", *"zzz", "down", "up", "enter")  # matches nothing
        await pilot.pause()
        assert isinstance(app.screen, ChatListScreen) and app.screen.rows == []
        assert main_of(app).session_id == chats["python"]
