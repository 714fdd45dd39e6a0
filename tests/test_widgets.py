"""Widget tests: each widget in a tiny app, asserting what it shows and what it posts."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import pytest
from textual.app import App, ComposeResult
from textual.dom import DOMNode
from textual.geometry import Region
from textual.widgets import Static

from store import ContextBlock, Message
from widgets import (
    ChatInput,
    ChatView,
    ContextSidebar,
    ConversationStats,
    MessageTree,
    MessageView,
    ReplyStream,
    TokenGauge,
    clean,
    code_blocks,
    fill_level,
    format_tokens,
    one_line,
)

from .app_helpers import wait_until

T0 = datetime(2024, 10, 3, 12, 0, tzinfo=UTC)


def msg(mid: str, role: str, text: str, parent: str | None = None, **extra) -> Message:
    m = Message(id=mid, role=role, parts=[{"type": "text", "text": text}], created_at=T0, **extra)
    m.parent_id = parent
    return m


class Harness(App[None]):
    def __init__(self, widget) -> None:
        super().__init__()
        self.widget = widget
        self.posted: list[object] = []
        self.folds: list[frozenset[str]] = []

    def compose(self) -> ComposeResult:
        yield self.widget

    def on_message_tree_branch_selected(self, event) -> None:
        self.posted.append(("branch", event.message_id))

    def on_message_tree_folds_changed(self, event) -> None:
        self.folds.append(event.unfolded)

    def on_message_tree_action_requested(self, event) -> None:
        self.posted.append((event.action, event.message_id))

    def on_message_view_action_requested(self, event) -> None:
        self.posted.append((event.action, event.message_id))

    def on_chat_input_submitted(self, event) -> None:
        self.posted.append(("send", event.text))


# -- pure helpers ------------------------------------------------------------------


def test_format_tokens_is_short_and_exact_enough():
    assert [format_tokens(n) for n in (0, 999, 1000, 12_345, 128_000, 1_048_576)] == [
        "0",
        "999",
        "1k",
        "12.3k",
        "128k",
        "1.05M",
    ]
    assert format_tokens(None) == "?"


def test_fill_level_thresholds():
    assert fill_level(10, None) == "-unbounded"
    assert fill_level(10, 100) == "-ok"
    assert fill_level(75, 100) == "-warn"
    assert fill_level(95, 100) == "-over"
    assert fill_level(500, 100) == "-over"


def test_clean_removes_escape_sequences_and_controls():
    hostile = (
        "ok\x1b[31mred\x1b[0m \x1b]0;pwned title\x07 \x1b]52;c;ZXZpbA==\x07"
        "\x1b[2J\x1b[H bell\x07 nul\x00 cr\roverwrite \x9b31m c1 \x1bP dcs \x1b\\ end"
    )
    out = clean(hostile)
    assert "\x1b" not in out and "\x07" not in out and "\x00" not in out and "\x9b" not in out
    assert "\r" not in out
    assert "pwned title" not in out and "ZXZpbA==" not in out
    assert out.startswith("okred ")
    assert "end" in out and "overwrite" in out
    assert clean("tabs\tand\nnewlines stay") == "tabs\tand\nnewlines stay"


def test_one_line_collapses_and_cuts():
    assert one_line("a\n  b\tc", 80) == "a b c"
    cut = one_line("word " * 40, 20)
    assert len(cut) <= 20 and cut.endswith("…")


def test_code_blocks_extracts_fenced_code():
    text = "intro\n```python\nprint(1)\n```\nmid\n~~~\nx = 2\n~~~\n"
    assert code_blocks(text) == ["print(1)", "x = 2"]


# -- MessageTree -------------------------------------------------------------------


def branching_chat() -> list[Message]:
    """q1 → a1 (old reply), a2 (regenerated) → q2 → a3; and an edit q1b under nothing."""
    return [
        msg("q1", "user", "first question"),
        msg("a1", "assistant", "old answer", "q1"),
        msg("a2", "assistant", "new answer", "q1"),
        msg("q2", "user", "follow up", "a2"),
        msg("a3", "assistant", "final", "q2"),
        msg("q2b", "user", "edited follow up", "a2"),
    ]


def rows_of(tree: MessageTree) -> list[str]:
    return [tree.row_text(i, 60) for i in range(len(tree.rows))]


async def test_tree_draws_forks_in_lanes_with_every_sibling_shown():
    tree = MessageTree()
    app = Harness(tree)
    async with app.run_test() as pilot:
        tree.show(branching_chat(), "a3")
        await pilot.pause()
        # The active path runs down lane 0 (filled glyphs); the old reply and the
        # edited question fork off with ├─ right under their branch point, unfolded.
        texts = rows_of(tree)
        assert texts[0] == "● first question"
        assert texts[1] == "├─◇ ‹1/2› old answer"
        assert texts[2] == "◆ ‹2/2› new answer"
        assert texts[3] == "├─○ ‹2/2› edited follow up"
        assert texts[4] == "● ‹1/2› follow up"
        assert texts[5] == "◆ final"
        assert tree.entry_for("a1").alternate and not tree.entry_for("a1").on_path
        assert tree.entry_for("a2").position == (2, 2)
        assert sorted(tree.message_ids) == sorted(m.id for m in branching_chat())
        assert tree.cursor_message_id == "a3"  # a new tree puts the cursor on the leaf


async def test_tree_follows_another_leaf():
    tree = MessageTree()
    app = Harness(tree)
    async with app.run_test() as pilot:
        tree.show(branching_chat(), "a1")
        await pilot.pause()
        texts = rows_of(tree)
        # a1's branch is lane 0 now; a2 forks off with its own fork inside (lane 2)
        assert texts[:2] == ["● first question", "├─◇ ‹2/2› new answer"]
        assert texts[2] == "│ ├─○ ‹1/2› follow up"
        assert texts[3] == "│ │ ◇ final"
        assert texts[4] == "│ ○ ‹2/2› edited follow up"
        assert texts[5] == "◆ ‹1/2› old answer"
        assert tree.cursor_message_id == "a1"


def long_chat(n: int = 40) -> list[Message]:
    chat = [msg("m0", "user", "start")]
    for i in range(1, n):
        chat.append(msg(f"m{i}", "assistant" if i % 2 else "user", f"text {i}", f"m{i - 1}"))
    return chat


async def test_long_runs_fold_and_unfold_and_the_fold_is_reported():
    tree = MessageTree()
    app = Harness(tree)
    folds = app.folds
    async with app.run_test() as pilot:
        tree.show(long_chat(), "m39")
        tree.focus()
        await pilot.pause()
        texts = rows_of(tree)
        # the first message, one fold, then the messages nearest the leaf
        assert texts[0] == "● start"
        assert texts[1] == "┆ … 35 messages"
        assert [r.message_id for r in tree.rows[2:]] == ["m36", "m37", "m38", "m39"]
        await pilot.press("home", "down", "enter")  # enter on the fold opens it
        await pilot.pause()
        assert len(tree.rows) == 40
        assert folds[-1] == frozenset({"m1"})
        assert tree.cursor_message_id == "m1"
        await pilot.press("down", "down", "space")  # space inside the run folds it again
        await pilot.pause()
        assert len(tree.rows) == 6 and folds[-1] == frozenset()
        # the app hands remembered folds back on the next draw
        tree.show(long_chat(), "m39", unfolded={"m1"})
        assert len(tree.rows) == 40


async def test_tree_keys_move_and_post_actions():
    tree = MessageTree()
    app = Harness(tree)
    async with app.run_test() as pilot:
        tree.show(branching_chat(), "a3")
        tree.focus()
        tree.select_message("q2")
        await pilot.pause()
        for key in ("ctrl+r", "e", "f", "c", "g"):
            await pilot.press(key)
        await pilot.press("left_square_bracket")  # q2 is the first sibling: stays
        assert tree.cursor_message_id == "q2"
        await pilot.press("right_square_bracket")  # to its sibling q2b
        assert tree.cursor_message_id == "q2b"
        await pilot.press("h")  # parent
        assert tree.cursor_message_id == "a2"
        await pilot.press("l")  # child on the active path
        assert tree.cursor_message_id == "q2"
        await pilot.press("k")
        assert tree.cursor_message_id == "q2b"  # rows in display order
        await pilot.press("j", "enter")
        await pilot.pause()
        assert app.posted == [
            ("regenerate", "q2"),
            ("edit", "q2"),
            ("fork", "q2"),
            ("copy", "q2"),
            ("goto", "q2"),
            ("branch", "q2"),
        ]


async def test_tree_marks_status_model_and_search_hit():
    chat = branching_chat()
    chat[4].metadata.update({"status": "error", "model": "openai/gpt-4o"})
    chat[2].metadata.update({"status": "streaming", "incomplete": True, "model": "demo"})
    tree = MessageTree()
    app = Harness(tree)
    async with app.run_test() as pilot:
        tree.show(chat, "a3", chat_model="demo", live={chat[2].id})
        await pilot.pause()
        texts = rows_of(tree)
        assert texts[2] == "◆ ‹2/2› writing… new answer"  # same model as the chat: unnamed
        tree.show(chat, "a3", chat_model="demo")  # nobody writes it now: it was cut off
        await pilot.pause()
        assert rows_of(tree)[2] == "◆ ‹2/2› interrupted new answer"
        tree.show(chat, "a3", chat_model="demo", live={chat[2].id})
        await pilot.pause()
        texts = rows_of(tree)
        assert texts[5] == "◆ error [gpt-4o] final"
        tree.mark_hit("a1")
        await pilot.pause()
        assert tree.hit == "a1" and tree.cursor_message_id == "a1"


async def test_tree_says_a_failed_empty_replys_state_once_and_then_why():
    """Seen at 80 columns with a local model: "◆ error (error — Cannot reac…" and
    "◆ cancelled (canc…": the state word twice, and the reason cut off."""
    chat = [
        msg("q", "user", "a question"),
        msg("e", "assistant", "", "q"),
        msg("c", "assistant", "", "q"),
    ]
    chat[1].metadata.update({"status": "error", "error": "Cannot reach the endpoint"})
    chat[2].metadata.update({"status": "cancelled"})
    tree = MessageTree()
    app = Harness(tree)
    async with app.run_test() as pilot:
        tree.show(chat, "c")
        await pilot.pause()
        texts = rows_of(tree)
        assert texts[1].endswith("error (Cannot reach the endpoint)"), texts
        assert texts[2].endswith("cancelled (before any text)"), texts


async def test_tree_of_thousands_draws_only_what_is_on_screen():
    chain = long_chat(3000)
    for i in range(0, 3000, 60):  # 50 branch points
        chain.append(msg(f"b{i}", "assistant", f"alt {i}", f"m{i}"))
    chain.append(msg("r2", "user", "another root"))
    tree = MessageTree()
    app = Harness(tree)
    async with app.run_test() as pilot:
        tree.show(chain, "m2999")
        await pilot.pause()
        assert len(tree.message_ids) == 3051
        assert tree.cursor_message_id == "m2999"
        tree.select_message("m10")  # a folded message: its run opens
        await pilot.pause()
        assert tree.cursor_message_id == "m10"
        assert tree.rows[0].lanes == "├─"  # the other root forks off first


async def test_tree_reads_its_style_once_a_render_not_once_a_line():
    """Every line of one render has the same width and base style; reading the style
    walks the ancestors' styles (an empty tree's first frame: 39 blank lines)."""
    reads = 0

    class Counted(MessageTree):
        @property
        def rich_style(self):  # type: ignore[override]
            nonlocal reads
            reads += 1
            return super().rich_style

    tree = Counted()
    app = Harness(tree)
    async with app.run_test(size=(60, 20)) as pilot:
        tree.show(branching_chat(), "a3")
        await pilot.pause()
        reads = 0
        tree._styles_cache.clear()
        lines = tree.render_lines(Region(0, 0, tree.size.width, tree.size.height))
        assert len(lines) == tree.size.height > 10
        assert reads == 1
        assert "final" in "".join(segment.text for segment in lines[5])


# -- TokenGauge / ContextSidebar ---------------------------------------------------


async def test_gauge_state_classes_follow_fill():
    gauge = TokenGauge("memory", 10, 100, "writable")
    app = Harness(gauge)
    async with app.run_test() as pilot:
        assert gauge.has_class("-ok")
        gauge.used = 80
        await pilot.pause()
        assert gauge.has_class("-warn") and not gauge.has_class("-ok")
        gauge.used = 99
        await pilot.pause()
        assert gauge.has_class("-over")
        assert "99/100" in str(gauge.render())
        gauge.limit = None
        await pilot.pause()
        assert gauge.has_class("-unbounded")


async def test_a_narrow_gauge_drops_where_its_figure_came_from_before_its_label():
    gauge = TokenGauge("context")
    gauge.figure = "575 of 32.8k (demo)"
    app = Harness(gauge)
    async with app.run_test(size=(26, 6)) as pilot:
        await pilot.pause()
        head = gauge.render().plain.splitlines()[0]
        assert head.startswith("context ") and head.rstrip().endswith("575 of 32.8k")
        await pilot.resize_terminal(60, 6)
        await pilot.pause()
        assert gauge.render().plain.splitlines()[0].rstrip().endswith("575 of 32.8k (demo)")


class _GaugesApp(App[None]):
    CSS = "TokenGauge.-changed > .token-gauge--label { color: $accent; text-style: reverse; }"

    def compose(self) -> ComposeResult:
        from textual.containers import Vertical

        with Vertical(id="holder"):
            yield TokenGauge("memory", 10, 100, "writable")
            yield TokenGauge("soul", 75, None, "read-only")
            yield TokenGauge("scratchpad", 96, 100)
            yield TokenGauge("", 1, 1000, "x")
            yield TokenGauge("记忆", 80, 100, "宽")
            yield TokenGauge("context", 5_000, 32_800, id="conversation-gauge")


def _cells(strip) -> list[tuple[str, object]]:
    return [(char, segment.style) for segment in strip for char in segment.text]


async def test_a_gauge_draws_the_cells_and_styles_its_text_drew(monkeypatch):
    """The gauge draws its two lines itself (`render_line`), not through its `Text` and
    Textual's content pipeline (issue 23's start-up: ~4.6 M instructions a gauge): the
    same characters, colours and selection offsets as `render()` drawn by Textual, at
    any width, level, focus, class and figure (Textual draws `render()` where the head
    would be cut)."""
    from textual.visual import Visual

    from .app_helpers import spy

    rendered = spy(monkeypatch, TokenGauge, "render")
    app = _GaugesApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert not rendered  # drawn without its Text
        gauges = list(app.query(TokenGauge))
        compared = 0
        for width in (8, 10, 12, 17, 24, 31, 45, 80):
            app.query_one("#holder").styles.width = width
            for state in ("plain", "focused", "changed", "figure", "empty", "over", "unbounded"):
                for gauge in gauges:
                    app.set_focus(gauge if state == "focused" else None)
                    gauge.set_class(state == "changed", "-changed")
                    gauge.figure = "575 of 32.8k (demo)" if state == "figure" else ""
                    gauge.used = {"empty": 0, "over": 990}.get(state, 80)
                    gauge.limit = None if state == "unbounded" else 1000
                await pilot.pause()
                for gauge in gauges:
                    size = gauge.content_size
                    text = Visual.to_strips(
                        gauge, gauge._render(), size.width, 2, gauge.visual_style
                    )
                    for y in (0, 1):
                        assert _cells(gauge.render_line(y)) == _cells(text[y]), (width, state, y)
                        compared += 1
        assert compared == 8 * 7 * 6 * 2


def block(label: str, tokens: int, max_tokens: int | None, kind: str = "writable"):
    return ContextBlock(
        label=label,
        description=None,
        content="x",
        tokens=tokens,
        max_tokens=max_tokens,
        writable=kind == "writable",
        is_skill=kind == "loadable",
        is_searchable=kind == "searchable",
    )


async def test_sidebar_shows_a_gauge_per_block_and_conversation_figures():
    sidebar = ContextSidebar()
    app = Harness(sidebar)
    async with app.run_test() as pilot:
        sidebar.show_blocks([block("soul", 50, None, "readonly"), block("memory", 812, 1100)])
        sidebar.show_stats(
            ConversationStats(
                tokens=12_300,
                window=128_000,
                model="m",
                input_tokens=1000,
                output_tokens=234,
                cost=0.0123,
                compactions=1,
                compact_at=0.8,
            )
        )
        await pilot.pause()
        memory = sidebar.gauge("memory")
        assert memory is not None and memory.used == 812 and memory.limit == 1100
        assert memory.kind == "writable" and sidebar.gauge("soul").kind == "read-only"
        conversation = sidebar.query_one("#conversation-gauge", TokenGauge)
        assert conversation.figure == "12.3k of 128k"
        assert "1.2k tok" in str(sidebar.query_one("#spend").render())
        assert "$0.0123" in str(sidebar.query_one("#spend").render())
        assert "1 summary" in str(sidebar.query_one("#compaction").render())
        sidebar.show_blocks([block("soul", 50, None, "readonly"), block("memory", 900, 1100)])
        await pilot.pause()
        assert sidebar.gauge("memory").used == 900


# -- ChatInput ---------------------------------------------------------------------


async def test_input_enter_sends_and_ctrl_j_adds_a_line():
    box = ChatInput()
    app = Harness(box)
    async with app.run_test() as pilot:
        box.focus()
        await pilot.press(*"hello", "ctrl+j", *"world", "shift+enter", *"!", "enter")
        await pilot.pause()
        assert app.posted == [("send", "hello\nworld\n!")]
        assert box.text == "hello\nworld\n!"  # the app clears it once the message is stored
        box.clear()
        await pilot.press("enter", "space", "enter")
        await pilot.pause()
        assert app.posted == [("send", "hello\nworld\n!")]  # blank input sends nothing


async def test_a_new_line_read_with_the_keys_around_it_stays_between_them():
    """Keys a terminal writes at once (a fast typist, `tmux send-keys`) are read
    together: ctrl+j among them went through the binding's action, run after the keys
    behind it were typed ("alpha" ctrl+j "beta" gave "alphabeta" and a new line, 1 time
    in 2 in tmux). It is handled in key order, as enter is."""
    from textual import events

    box = ChatInput()
    app = Harness(box)
    async with app.run_test() as pilot:
        box.focus()
        await pilot.pause()
        burst = [*"alpha", "ctrl+j", *"beta", "shift+enter", *"gamma"]
        for key in burst:
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        await wait_until(pilot, lambda: box.text.count("a") == 5 and len(box.text) >= 14)
        await pilot.pause()
        assert box.text == "alpha\nbeta\ngamma"


async def test_a_busy_input_looks_as_its_busy_rule_says_without_a_restyle():
    """`show_busy` sets the `-busy` class and the border its rule gives without
    restyling the box (the whole stylesheet applied, its drawn lines thrown away: a
    few ms each way, twice a send); the box looks exactly as the rule makes it, with
    and without the focus, and as before once it is not busy."""
    box = ChatInput("some text")
    app = Harness(box)
    async with app.run_test() as pilot:
        await pilot.pause()

        def drawn() -> list[str]:
            region = Region(0, 0, box.size.width, box.size.height)
            return [
                "".join(f"{s.text}{s.style}" for s in strip) for strip in box.render_lines(region)
            ]

        looks: dict[bool, tuple[list[str], list[str]]] = {}
        app.set_focus(None)
        await pilot.pause()
        for focused in (False, True):
            if focused:
                box.focus()
                await pilot.pause()
            plain = drawn()
            box.add_class("-busy")  # as Textual restyles it: the rule's own look
            await pilot.pause()
            busy = drawn()
            assert busy != plain
            box.remove_class("-busy")
            await pilot.pause()
            assert drawn() == plain
            looks[focused] = (plain, busy)
            restyles: list[DOMNode] = []
            update_styles = app.update_styles

            def counting(node: DOMNode, animate: bool = True, *, restyles=restyles) -> None:
                restyles.append(node)
                update_styles(node, animate)  # noqa: B023 (called inside this iteration)

            app.update_styles = counting  # type: ignore[method-assign]
            try:
                box.show_busy(True)
                await pilot.pause()
                assert box.has_class("-busy") and drawn() == busy
                box.show_busy(False)
                await pilot.pause()
                assert not box.has_class("-busy") and drawn() == plain
            finally:
                app.update_styles = update_styles  # type: ignore[method-assign]
            assert box not in restyles
        # A restyle while busy (the focus leaves) applies the rule with the class; the
        # box is restyled when it stops being busy: the plain look, not the rule's.
        box.show_busy(True)
        box.blur()
        await pilot.pause()
        assert drawn() == looks[False][1]
        box.show_busy(False)
        await pilot.pause()
        assert drawn() == looks[False][0]


async def test_the_input_fills_its_text_theme_again_only_when_its_styles_change(monkeypatch):
    """TextArea fills its text theme from the box's styles before every render; a
    repaint (three a send, one a key) changes none of them: filled once, and again
    after a restyle (the focus) or a theme change, drawn as TextArea draws it."""
    from textual.widgets import TextArea

    box = ChatInput("some text")
    app = Harness(box)
    async with app.run_test() as pilot:
        await pilot.pause()
        region = Region(0, 0, box.size.width, box.size.height)
        fills: list[int] = []
        theme = box._theme
        apply_css = theme.apply_css

        def counting(text_area):
            fills.append(1)
            return apply_css(text_area)

        monkeypatch.setattr(theme, "apply_css", counting)

        def drawn() -> list[str]:
            return [
                "".join(f"{s.text}{s.style}" for s in strip) for strip in box.render_lines(region)
            ]

        def textareas() -> list[str]:
            box.refresh()
            strips = TextArea.render_lines(box, region)
            return ["".join(f"{s.text}{s.style}" for s in strip) for strip in strips]

        for change in ("none", "focus", "theme"):
            if change == "focus":
                box.focus()
            elif change == "theme":
                app.theme = "textual-light" if app.theme != "textual-light" else "nord"
            await pilot.pause()
            fills.clear()
            first = drawn()
            for _ in range(5):
                box.refresh()  # a repaint
                assert drawn() == first
            assert len(fills) <= 1
            assert textareas() == first


# -- ChatView / MessageView --------------------------------------------------------


async def test_chat_view_folds_tool_results_and_pages_long_chats():
    view = ChatView(page_size=5)
    app = Harness(view)
    call = {
        "type": "tool-call",
        "tool_call_id": "c1",
        "tool_name": "set_context",
        "input": {"label": "memory", "content": "likes tea"},
    }
    result = {
        "type": "tool-result",
        "tool_call_id": "c1",
        "tool_name": "set_context",
        "output": "Appended to 'memory'.",
    }
    history = [
        msg(f"m{i}", "user" if i % 2 == 0 else "assistant", f"message {i}") for i in range(20)
    ]
    history += [
        Message(id="t1", role="assistant", parts=[call]),
        Message(id="t2", role="tool", parts=[result]),
        msg("end", "assistant", "Saved."),
    ]
    async with app.run_test() as pilot:
        await view.show(history)
        await pilot.pause()
        assert [v.message_id for v in view.views] == ["m17", "m18", "m19", "t1", "end"]
        assert [t.id for t in view.views[-2].tool_results] == ["t2"]
        assert "t2" in view.shown_ids and "m0" in view.shown_ids
        assert view.view_for("m0") is None
        revealed = await view.reveal("m0", focus=False)
        assert revealed is not None and revealed.message_id == "m0"
        assert len(view.views) == 22


async def test_a_long_sitting_keeps_a_bounded_number_of_messages_mounted():
    """Each send mounted two more views and none went: after 40 sends in one sitting the
    chat arranged 80 messages in every layout (the app's CPU a send grew from ~48 to
    ~66 ms). While the user follows the end, the oldest are let go a batch at a time, as
    if never loaded: scrolling up (or a search hit) mounts them again."""
    view = ChatView(page_size=3)  # at most 4 pages (12) mounted, 2 pages (6) kept
    app = Harness(view)
    async with app.run_test(size=(80, 20)) as pilot:
        await view.show([msg("m0", "user", "message 0")])
        most = 0
        for i in range(1, 30):
            await view.add_message(msg(f"m{i}", "user" if i % 2 == 0 else "assistant", f"m {i}"))
            await pilot.pause()
            most = max(most, len(view.views))
        assert most == 12
        ids = [v.message_id for v in view.views]
        assert ids == [f"m{i}" for i in range(30 - len(ids), 30)]  # the newest, in order
        assert view.is_vertical_scroll_end
        marker = view.query_one("#earlier")
        assert str(marker.render()).startswith(f"↑ {30 - len(ids)} earlier messages")
        assert len(view.query("#earlier")) == 1 and view.children[0] is marker
        assert view.shown_ids == [f"m{i}" for i in range(30)]
        revealed = await view.reveal("m0", focus=False)  # all of it comes back, in order
        assert revealed is not None
        assert [v.message_id for v in view.views] == [f"m{i}" for i in range(30)]
        assert not view.query("#earlier")


async def test_one_earlier_message_is_said_in_the_singular():
    view = ChatView(page_size=3)
    app = Harness(view)
    async with app.run_test(size=(80, 20)):
        await view.show([msg(f"m{i}", "user", f"message {i}") for i in range(4)])
        marker = str(view.query_one("#earlier").render())
        assert marker.startswith("↑ 1 earlier message — scroll up")


async def test_the_oldest_messages_stay_while_the_user_reads_or_focuses_them():
    view = ChatView(page_size=3)
    app = Harness(view)
    async with app.run_test(size=(80, 20)) as pilot:
        await view.show([msg(f"m{i}", "user", f"message {i}") for i in range(12)])
        await view.load_earlier()
        await pilot.pause()
        assert len(view.views) == 6
        view.views[0].focus()  # the user is on the oldest mounted message
        for i in range(12, 20):
            await view.add_message(msg(f"m{i}", "user", f"message {i}"))
            view.scroll_end(animate=False, immediate=True)
            await pilot.pause()
        assert [v.message_id for v in view.views][:2] == ["m6", "m7"]
        assert len(view.views) == 14  # nothing let go under the focus
        view.screen.set_focus(None)
        view.scroll_home(animate=False, immediate=True)  # reading the top
        await pilot.pause()
        await view.add_message(msg("m20", "user", "message 20"))
        await pilot.pause()
        assert len(view.views) == 15 and view.views[0].message_id == "m6"


async def test_message_view_streams_and_sanitises():
    reply = msg("r1", "assistant", "", metadata={"status": "streaming", "incomplete": True})
    view = ChatView()
    app = Harness(view)
    async with app.run_test() as pilot:
        await view.show([msg("q", "user", "hi")])
        stream = ReplyStream()
        streaming = await view.start_reply(reply, stream=stream)
        for piece in ("Hello ", "\x1b]0;evil\x07world", " **bold**"):
            stream.write(piece)
        assert streaming.text == "Hello world **bold**"  # received, drawn or not
        await wait_until(pilot, lambda: streaming.shown == "Hello world **bold**")
        final = msg("r1", "assistant", "Hello world **bold**", metadata={"status": "complete"})
        await view.finish_reply(final)
        await pilot.pause()
        assert view.view_for("r1").text == "Hello world **bold**"
        assert not view.view_for("r1").has_class("-writing")


async def test_texts_that_come_together_are_drawn_together():
    """One queue, one drawing task: texts written before the view next draws are joined
    and drawn in one update (a fast model sends hundreds a second; each update re-lays
    the growing block), and nothing is lost or doubled."""
    reply = msg("r1", "assistant", "", metadata={"status": "streaming", "incomplete": True})
    view = ChatView()
    app = Harness(view)
    async with app.run_test() as pilot:
        stream = ReplyStream()
        streaming = await view.start_reply(reply, stream=stream)
        stream.write("First")
        await wait_until(pilot, lambda: streaming.shown == "First")
        seen = []
        stream.write(" second")
        stream.write(" third")
        assert streaming.text == "First second third"  # received, drawn or not
        for _ in range(500):
            seen.append(streaming.shown)
            if seen[-1] == "First second third":
                break
            await pilot.pause(0.01)
        assert set(seen) <= {"First", "First second third"}, seen  # never half of them
        assert seen[-1] == "First second third"


def test_a_stream_is_drawn_ten_times_a_second_at_most_and_its_first_words_at_once():
    """Issue 22: each draw of a streaming reply is a frame (a new line, a layout of the
    screen), CPU taken from a local model on the same cores. A model sending a fragment
    every 10 ms for 3 s gets 31 draws at most, not one per fragment; its first words,
    and the first after a quiet spell, are drawn at once (a fake clock: no time waited)."""
    from widgets.message_view import FLUSH_SECONDS, DrawPace

    now = [0.0]
    pace = DrawPace(clock=lambda: now[0])
    assert pace.wait() == 0  # the first words: at once
    draws = 0
    for tick in range(300):  # a fragment every 10 ms; drawn when its slot has come
        now[0] = tick / 100
        if pace.wait() == 0:
            pace.drawn()
            draws += 1
    assert 25 <= draws <= 31, draws
    now[0] += 0.01
    assert pace.wait() > 0  # right after a draw: waits for its slot
    now[0] += FLUSH_SECONDS
    assert pace.wait() == 0  # after a quiet spell: at once
    pace.drawn()
    assert pace.wait(typed_at=now[0]) > FLUSH_SECONDS  # someone types: fewer still


async def test_a_long_stream_is_drawn_in_few_updates_and_whole():
    """The view's drawing task joins what a fast stream sends between its slots: its
    first text is drawn without waiting, then at most one draw per `FLUSH_SECONDS`
    (bounded by the time the stream took, so a slow machine only loosens it), and the
    stored reply's text is all there at the end."""
    from widgets.message_view import FLUSH_SECONDS

    reply = msg("r1", "assistant", "", metadata={"status": "streaming", "incomplete": True})
    view = ChatView()
    app = Harness(view)
    async with app.run_test() as pilot:
        stream = ReplyStream()
        streaming = await view.start_reply(reply, stream=stream)
        waits: list[float] = []
        pace_wait = streaming.pace.wait
        streaming.pace.wait = lambda *a: waits.append(pace_wait(*a)) or waits[-1]  # type: ignore[method-assign]
        draws = 0
        draw = streaming._draw

        async def counted(s: ReplyStream) -> None:
            nonlocal draws
            draws += bool(s.waiting)
            await draw(s)

        streaming._draw = counted  # type: ignore[method-assign]
        started = time.monotonic()
        stream.write("w0 ")
        await wait_until(pilot, lambda: streaming.shown == "w0 ")
        assert waits[0] == 0  # the first words: drawn at once
        words = ["w0 "]
        for i in range(1, 120):
            words.append(f"w{i} ")
            stream.write(words[-1])
            await asyncio.sleep(0.004)  # a model's pace; the bound below is from the clock
        elapsed = time.monotonic() - started
        final = msg("r1", "assistant", "".join(words).strip(), metadata={"status": "complete"})
        await view.finish_reply(final)
        await pilot.pause()
        assert draws <= 2 + elapsed / FLUSH_SECONDS, (draws, elapsed)
        assert str(streaming.query_one(".message--body", Static).content) == final.text


async def test_a_plain_reply_streams_into_a_static_and_markdown_takes_over_when_it_comes():
    """A reply's first words are plain text, updated in place in one Static (no Markdown
    widget to mount on the way to the first token); the Markdown widget is mounted the
    moment the text looks like Markdown, with all the text so far, and appended to."""
    from textual.widgets import Markdown

    reply = msg("r1", "assistant", "", metadata={"status": "streaming", "incomplete": True})
    view = ChatView()
    app = Harness(view)
    async with app.run_test() as pilot:
        stream = ReplyStream()
        streaming = await view.start_reply(reply, stream=stream)
        assert not streaming.query(Markdown)  # the placeholder is a Static
        stream.write("Here is a list")
        await wait_until(pilot, lambda: streaming.shown == "Here is a list")
        body = streaming.query_one(".message--body", Static)
        assert str(body.content) == "Here is a list" and not streaming.query(Markdown)
        stream.write(":\n\n- one\n- two")
        await wait_until(
            pilot,
            lambda: streaming.query(Markdown) and len(streaming.query(".message--body")) == 1,
        )
        markdown = streaming.query_one(Markdown)
        assert markdown.source == "Here is a list:\n\n- one\n- two"
        assert len(streaming.query(".message--body")) == 1
        stream.write("\n- three")
        await wait_until(pilot, lambda: markdown.source.endswith("- two\n- three"))
        assert streaming.query_one(Markdown) is markdown  # appended to, not remounted
        final = msg("r1", "assistant", streaming.text, metadata={"status": "complete"})
        await view.finish_reply(final)
        await pilot.pause()
        assert streaming.query_one(Markdown) is markdown  # the drawn body is kept
        assert "writing" not in streaming.header().plain


async def test_a_paragraph_break_streaming_does_not_jump_and_is_not_lost():
    """Trailing blank lines are held back from a plain body (drawn, they jumped the view
    by two lines) but belong to the text: the next words come after them."""
    reply = msg("r1", "assistant", "", metadata={"status": "streaming", "incomplete": True})
    view = ChatView()
    app = Harness(view)
    async with app.run_test() as pilot:
        stream = ReplyStream()
        streaming = await view.start_reply(reply, stream=stream)
        stream.write("One paragraph.\n\n")
        await wait_until(pilot, lambda: streaming.shown == "One paragraph.\n\n")
        body = streaming.query_one(".message--body", Static)
        assert str(body.content) == "One paragraph."
        await pilot.pause(0.1)
        stream.write("Another")
        await wait_until(pilot, lambda: streaming.shown == "One paragraph.\n\nAnother")


async def test_a_reply_redrawn_mid_stream_keeps_its_lines_when_more_words_come():
    """A view built mid-reply (a chat reopened while it streams) with Markdown whose last
    paragraph spans lines: more words must extend it, not replace it by its last line
    (Textual's `Markdown(text)` then `append()` restarts its parse at the text's last
    line; the body is filled by `append` instead)."""
    from textual.widgets import Markdown

    live = "First line\nsecond line\nthird *line*"
    reply = msg("r1", "assistant", live, metadata={"status": "streaming", "incomplete": True})
    view = ChatView()
    app = Harness(view)
    async with app.run_test() as pilot:
        stream = ReplyStream()
        await view.show([reply], live={"r1": live}, streams={"r1": stream})
        await pilot.pause()
        streaming = view.view_for("r1")
        stream.write(" and more")
        await wait_until(pilot, lambda: streaming.shown == live + " and more")
        body = streaming.query_one(Markdown)
        shown = " ".join(str(block.content) for block in body.query_children(Static))
        assert body.source == live + " and more"
        assert shown.startswith("First line"), shown
        assert shown.endswith("line and more"), shown


async def test_a_reply_finished_right_after_its_last_words_draws_them_once():
    """The last text and the stored reply often arrive together (a fast model); the
    final draw must not overlap the one still appending (the last words drawn twice)."""
    from textual.widgets import Markdown

    view = ChatView()
    app = Harness(view)
    async with app.run_test() as pilot:
        for round_ in range(12):
            reply = msg(f"r{round_}", "assistant", "", metadata={"status": "streaming"})
            stream = ReplyStream()
            streaming = await view.start_reply(reply, stream=stream)
            # Markdown from the first word on odd rounds, plain text on even ones.
            words = [f"*w{i}* " if round_ % 2 else f"w{i} " for i in range(round_ + 3)]
            words.append("the end.")
            for word in words:
                stream.write(word)
            await pilot.pause(0.051 if round_ % 4 > 1 else 0)  # a draw in flight, or not
            stream.write(" on.")
            final_text = "".join(words) + " on."
            final = msg(f"r{round_}", "assistant", final_text, metadata={"status": "complete"})
            await view.finish_reply(final)
            await pilot.pause()
            if round_ % 2:
                body = streaming.query_one(Markdown)
                shown = " ".join(str(block.content) for block in body.query_children(Static))
                assert body.source == final_text
            else:
                assert not streaming.query(Markdown)
                shown = str(streaming.query_one(".message--body", Static).content)
                assert shown == final_text
            assert shown.count("on.") == 1, shown


async def test_message_view_keys_post_actions():
    view = MessageView(msg("q", "user", "hi"))
    app = Harness(view)
    async with app.run_test() as pilot:
        view.focus()
        for key in ("ctrl+r", "e", "f", "c", "left", "right"):
            await pilot.press(key)
        await pilot.pause()
        assert app.posted == [
            (a, "q") for a in ("regenerate", "edit", "fork", "copy", "previous", "next")
        ]


async def test_typing_on_a_focused_message_runs_no_command_that_spends_tokens():
    """Issue 20: a sentence typed while a message had focus ran `r` three times (three
    paid replies). Printable keys that are none of the view's commands go to the input
    (`Typed`); regenerating takes ctrl."""
    view = MessageView(msg("a", "assistant", "an answer"))
    typed: list[str] = []

    class Typing(Harness):
        def on_message_view_typed(self, event: MessageView.Typed) -> None:
            typed.append(event.character)

    app = Typing(view)
    async with app.run_test() as pilot:
        view.focus()
        await pilot.press(*"try that", "R", "r")
        await pilot.pause()
        assert "regenerate" not in [a for a, _ in app.posted]
        assert "regenerate_with" not in [a for a, _ in app.posted]
        assert "".join(typed) == "try thatRr"


async def test_incomplete_and_cancelled_replies_are_marked():
    cancelled = MessageView(
        msg("a", "assistant", "part", metadata={"status": "cancelled", "incomplete": True})
    )
    app = Harness(cancelled)
    async with app.run_test():
        assert cancelled.has_class("-cancelled")
        assert "cancelled" in cancelled.header().plain
    interrupted = MessageView(
        msg("b", "assistant", "part", metadata={"status": "streaming", "incomplete": True})
    )
    app = Harness(interrupted)
    async with app.run_test():
        assert "interrupted" in interrupted.header().plain


async def test_an_open_fold_stays_open_when_its_branch_becomes_the_active_one():
    chat = long_chat(20)  # m0 … m19
    chat.append(msg("x1", "assistant", "another first reply", "m0"))
    for i in range(2, 20):  # a long branch under it
        chat.append(msg(f"x{i}", "user" if i % 2 == 0 else "assistant", f"alt {i}", f"x{i - 1}"))
    tree = MessageTree()
    app = Harness(tree)
    async with app.run_test() as pilot:
        tree.show(chat, "m19")
        await pilot.pause()
        key = next(r for r in tree.rows if r.kind == "fold" and r.message_id.startswith("x"))
        tree.select_message(key.hidden[3])  # opens the off-path branch's fold
        await pilot.pause()
        assert key.message_id in tree.unfolded
        tree.show(chat, "x19")  # that branch is the active one now
        await pilot.pause()
        assert key.hidden[3] in {r.message_id for r in tree.rows if r.kind == "message"}


async def test_a_reply_turning_markdown_as_its_view_leaves_is_not_drawn():
    """Found by a full run under load: the app quit while a reply streamed; its first
    Markdown-looking words came as its view was closing, so mounting the new Markdown
    body did nothing (Textual mounts nothing into a closing widget) and appending to
    that body raised MountError in the view's drawing worker: a traceback on quit."""
    from textual.containers import Vertical
    from textual.widget import MountError
    from textual.widgets import Markdown

    from widgets.message_view import _append_markdown

    class Host(App):
        def compose(self) -> ComposeResult:
            yield Vertical(id="view")

    async with Host().run_test() as pilot:
        view = pilot.app.query_one("#view")
        await view.remove()
        body = Markdown()
        await view.mount(body)  # the view is closing: nothing is mounted
        with pytest.raises(MountError):
            await body.append("# what the worker used to meet")
        await _append_markdown(body, "# left alone")  # the view is leaving: not drawn
        shown = Markdown()
        await pilot.app.screen.mount(shown)
        await _append_markdown(shown, "# drawn\n\nwords")
        assert "words" in shown.source
