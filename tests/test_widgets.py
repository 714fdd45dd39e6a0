"""Widget tests: each widget in a tiny app, asserting what it shows and what it posts."""

from __future__ import annotations

from datetime import UTC, datetime

from textual.app import App, ComposeResult

from store import ContextBlock, Message
from widgets import (
    ChatInput,
    ChatView,
    ContextSidebar,
    ConversationStats,
    MessageTree,
    MessageView,
    TokenGauge,
    clean,
    code_blocks,
    fill_level,
    format_tokens,
    one_line,
)

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

    def compose(self) -> ComposeResult:
        yield self.widget

    def on_message_tree_branch_selected(self, event) -> None:
        self.posted.append(("branch", event.message_id))

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


async def test_tree_shows_active_path_flat_and_alternatives_nested():
    tree = MessageTree()
    app = Harness(tree)
    async with app.run_test() as pilot:
        tree.show(branching_chat(), "a3")
        await pilot.pause()
        top = [n.data.message_id for n in tree.root.children]
        assert top == ["q1", "a2", "q2", "a3"]  # the active path, flat
        q1 = tree.node_for("q1")
        assert [c.data.message_id for c in q1.children] == ["a1"]  # the old reply
        assert q1.children[0].data.alternate and not q1.children[0].data.on_path
        a2 = tree.node_for("a2")
        assert [c.data.message_id for c in a2.children] == ["q2b"]  # the edited question
        assert tree.node_for("a2").data.position == (2, 2)
        assert tree.node_for("q2").data.position == (1, 2)
        assert not q1.is_expanded  # hidden branches are collapsed but present
        assert sorted(tree.message_ids) == sorted(m.id for m in branching_chat())


async def test_tree_follows_another_leaf():
    tree = MessageTree()
    app = Harness(tree)
    async with app.run_test() as pilot:
        tree.show(branching_chat(), "a1")
        await pilot.pause()
        assert [n.data.message_id for n in tree.root.children] == ["q1", "a1"]
        a2 = tree.node_for("a2")
        assert a2.data.alternate
        # inside the alternative: its own alternatives first, then its newest branch
        assert [c.data.message_id for c in a2.children] == ["q2", "q2b"]
        assert a2.children[0].data.alternate and not a2.children[1].data.alternate
        assert [c.data.message_id for c in a2.children[0].children] == ["a3"]
        assert tree.cursor_node.data.message_id == "a1"


async def test_tree_keys_post_actions_and_selection():
    tree = MessageTree()
    app = Harness(tree)
    async with app.run_test() as pilot:
        tree.show(branching_chat(), "a3")
        tree.focus()
        await pilot.pause()
        tree.select_message("q2")
        await pilot.pause()  # the cursor moves once the tree has laid out
        for key in ("r", "e", "f", "c", "left", "right"):
            await pilot.press(key)
        await pilot.press("enter")
        await pilot.pause()
        assert app.posted == [
            ("regenerate", "q2"),
            ("edit", "q2"),
            ("fork", "q2"),
            ("copy", "q2"),
            ("previous", "q2"),
            ("next", "q2"),
            ("branch", "q2"),
        ]


async def test_tree_handles_deep_chains_and_many_roots_without_recursion():
    chain = [msg("m0", "user", "start")]
    for i in range(1, 3000):
        chain.append(msg(f"m{i}", "assistant" if i % 2 else "user", f"text {i}", f"m{i - 1}"))
    chain.append(msg("r2", "user", "another root"))
    tree = MessageTree()
    app = Harness(tree)
    async with app.run_test() as pilot:
        tree.show(chain, "m2999")
        await pilot.pause()
        # the newest 300 of the path, flat; the 2,700 before wait under one node
        children = list(tree.root.children)
        assert len(children) == 302
        assert children[0].data is None and "2,700 earlier" in str(children[0].label)
        assert children[1].data.message_id == "m2700"
        assert children[-1].data.alternate and children[-1].data.message_id == "r2"
        assert tree.node_for("m5") is None
        children[0].expand()  # built on demand
        await pilot.pause()
        assert [c.data.message_id for c in children[0].children][:2] == ["m0", "m1"]
        assert len(children[0].children) == 2700
        tree.show(chain, "m2999")
        tree.select_message("m10")  # selecting an earlier message builds it too
        await pilot.pause()
        assert tree.cursor_node.data.message_id == "m10"


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


async def test_message_view_streams_and_sanitises():
    reply = msg("r1", "assistant", "", metadata={"status": "streaming", "incomplete": True})
    view = ChatView()
    app = Harness(view)
    async with app.run_test() as pilot:
        await view.show([msg("q", "user", "hi")])
        streaming = await view.start_reply(reply)
        for piece in ("Hello ", "\x1b]0;evil\x07world", " **bold**"):
            await streaming.append(piece)
        await pilot.pause()
        assert streaming.text == "Hello world **bold**"
        final = msg("r1", "assistant", "Hello world **bold**", metadata={"status": "complete"})
        await view.finish_reply(final)
        await pilot.pause()
        assert view.view_for("r1").text == "Hello world **bold**"
        assert not view.view_for("r1").has_class("-writing")


async def test_message_view_keys_post_actions():
    view = MessageView(msg("q", "user", "hi"))
    app = Harness(view)
    async with app.run_test() as pilot:
        view.focus()
        for key in ("r", "e", "f", "c", "left", "right"):
            await pilot.press(key)
        await pilot.pause()
        assert app.posted == [
            (a, "q") for a in ("regenerate", "edit", "fork", "copy", "previous", "next")
        ]


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
