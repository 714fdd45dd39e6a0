"""Start-up (issue 10's "full UI ready"): what the first frames hold, and what waits.

Speed is measured by `bench/app_bench.py` (`measure_startup`), never here: these tests hold the
behaviour each start-up shortcut relies on, so a change that undoes one fails.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.color import Color
from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode
from textual.widget import Widget
from textual.widgets import Static

from chatui import cli
from chatui import launch as startup
from chatui.tui.screens.main import MainScreen
from widgets import ContextSidebar, FittingFooter, TokenGauge

from .app_helpers import make_app, populate, record_terminal, spy

ROOT = Path(__file__).resolve().parent.parent


def python_prints(code: str, home: Path | None = None) -> str:
    """What `code` prints, run by a new Python in the project's folder (a start of its
    own: nothing this test process imported counts), `home` as its CHATUI_HOME."""
    env = {**os.environ, "CHATUI_HOME": str(home)} if home is not None else None
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, env=env
    )
    return done.stdout


@pytest.fixture
def chats(store):
    return populate(store)


class _FooterApp(App[None]):
    BINDINGS = [("ctrl+t", "noop", "Tree")]
    keys_at_mount = -1

    def compose(self) -> ComposeResult:
        yield Static("body")
        yield FittingFooter()

    def on_mount(self) -> None:
        # Children are mounted (and composed) before their parent's Mount.
        self.keys_at_mount = len(self.query_one(FittingFooter).shown_keys())


async def test_the_footer_has_its_keys_when_it_is_mounted():
    """Textual's footer waits for focus to settle and two refreshes (~0.1 s after the
    first frame at start-up); ours composes its keys when it is mounted."""
    app = _FooterApp()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert app.keys_at_mount >= 2  # "Tree" and the palette's key


async def test_the_first_frame_shows_the_footers_keys(store, chats):
    app = make_app(store, warm_llm=False, model_process=False)
    frames = record_terminal(app).frames
    async with app.run_test(size=(120, 40), headless=False) as pilot:
        await pilot.pause()
        assert frames
        assert "palette" in frames[0] and "Quit" in frames[0]


async def test_the_memory_gauges_are_drawn_with_the_first_chat(store, chats):
    """The frame that first shows the last chat shows its memory too (the gauges were
    mounted without waiting, and drawn a frame later: an empty MEMORY meanwhile)."""
    app = make_app(store, warm_llm=False, model_process=False)
    frames = record_terminal(app).frames
    async with app.run_test(size=(120, 40), headless=False) as pilot:
        await pilot.pause()
        await pilot.pause()
        first = next(f for f in frames if "Lisbon trip" in f)
        assert "read-only" in first and "writable" in first


async def test_an_empty_database_starts_with_the_whole_screen_in_the_first_frame(store):
    """Nothing to read: the new chat is composed into the first frame (no empty screen
    first), and the app goes on as after any start (the first chat was shown)."""
    app = make_app(store, warm_llm=False, model_process=False)
    frames = record_terminal(app).frames
    messages: list[object] = []
    async with app.run_test(size=(120, 40), headless=False, message_hook=messages.append) as pilot:
        await pilot.pause()
        first = frames[0]
        for part in ("New chat · demo", "Type below", "read-only", "spent", "palette"):
            assert part in first, part
        assert app.main.chat is None and app.main.chat_input.has_focus
        assert any(isinstance(m, MainScreen.FirstChatShown) for m in messages)
        await pilot.press(*"hi", "enter")
        await pilot.pause()
        assert app.main.chat is not None  # the first message stored the new chat


async def test_collection_resumes_once_the_first_chat_is_drawn(store, chats):
    startup.pause()
    try:
        assert startup.paused() and not gc.isenabled()
        app = make_app(store, warm_llm=False, model_process=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            await pilot.pause()
            assert app.main.chat is not None  # the first chat is open
            assert gc.isenabled() and not startup.paused()
    finally:
        startup.resume()
        gc.enable()


def test_resume_leaves_a_callers_own_gc_disable_alone():
    gc.disable()
    try:
        startup.pause()  # already off: not ours to turn back on
        startup.resume()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_command_runs_with_collection_on(capsys):
    """`chatui.cli.main` pauses collection before any import; only the app keeps it off."""
    startup.pause()
    try:
        assert cli.main(["list"]) == 0
        assert gc.isenabled() and not startup.paused()
    finally:
        startup.resume()
        gc.enable()


def test_the_console_script_pauses_collection_before_importing_anything():
    code = (
        "import gc, sys\n"
        "sys.argv = ['chatui', '--version']\n"
        "from chatui import cli\n"
        "assert 'chatui.cli.commands' not in sys.modules and gc.isenabled()\n"
        "try:\n"
        "    cli.main()\n"
        "finally:\n"
        "    print(gc.isenabled(), 'store' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert out.split()[-2:] == ["False", "True"]  # paused, then the imports


def test_the_app_is_imported_with_collection_paused(monkeypatch):
    seen: dict[str, bool] = {}

    def run(**kwargs: object) -> int:
        seen["enabled"] = gc.isenabled()
        return 0

    monkeypatch.setattr("chatui.tui.app.run", run)
    try:
        assert cli.main([]) == 0
    finally:
        startup.resume()
    assert seen == {"enabled": False}
    assert gc.isenabled()


STARTED = """
import asyncio, json, sys
from chatui.cli.commands import build_parser
from store import Store, text_prep
from tests.app_helpers import make_app

async def main():
    build_parser().parse_args([])  # as `chatui` did before it launched the app (its commands do)
    app = make_app(Store(":memory:"), warm_llm=False, model_process=False)
    async with app.run_test() as pilot:
        await pilot.pause()
        assert app.main.chat_input.has_focus
    compiled = [f.cache_info().currsize for f in (text_prep._split_re, text_prep._cjk_re,
                                                  text_prep._emoji_re, text_prep._chunk_re,
                                                  text_prep._stemmer)]
    print(json.dumps({"compiled": sum(compiled), "modules": sorted(sys.modules)}))

asyncio.run(main())
"""


@pytest.fixture(scope="module")
def started() -> dict:
    """What a process holds once the app has started and drawn its first chat."""
    out = python_prints(STARTED)
    return json.loads(out)


def test_start_up_compiles_no_search_pattern(started):
    """The index's CJK and emoji patterns (~10-20 ms to compile) wait for the first
    message written or searched: opening the app and its first chat reads only."""
    assert started["compiled"] == 0


def test_start_up_loads_no_exporter_importer_backup_module_or_postgresql_driver(started):
    """Even with `chatui`'s whole parser built (its commands build it; the app's start
    no longer does), the commands' modules, the memory inspector's and the demo model's
    replies load when used."""
    later = (
        "chatui.transfer.common",
        "chatui.transfer.exports",
        "chatui.transfer.importing",
        "chatui.transfer.files",
        "chatui.core.inspection",
        "chatui.llm.demo",
        "store.transfer",
        "store.db_copy",
        "store.db_info",
        "psycopg",  # PostgreSQL's driver: peewee imports it unless `store` comes first
    )
    loaded = set(started["modules"])
    assert {"chatui.cli.commands", "chatui.tui.app"} <= loaded
    assert [m for m in later if m in loaded] == []


def test_start_up_without_mcp_servers_loads_no_mcp_connection_or_settings(started):
    """With no `[mcp.servers]` configured (the usual start) the hub is empty: a server's
    connection (and its config's parser) load with the first server (issue 23)."""
    loaded = set(started["modules"])
    assert "chatui.mcp.hub" in loaded
    assert [m for m in ("chatui.mcp.connection", "chatui.mcp.settings") if m in loaded] == []


def test_start_up_loads_no_model_list_module(started):
    """The served and hosted models' lists load with the model picker (issue 23)."""
    assert "chatui.llm.served" not in started["modules"]


def test_start_up_loads_no_calendar_and_peewee_still_has_it(started):
    """peewee imports `calendar` for a timestamp field's value: it gets a module that
    imports the real one on first use (`store.driver`, ~2 M instructions, issue 23)."""
    assert "calendar" not in started["modules"]
    code = (
        "import sys\n"
        "import store, peewee\n"
        "loaded = 'calendar' in sys.modules\n"
        "print(loaded, peewee.TimestampField().db_value(__import__('datetime').datetime(2024, 1, 1)))\n"
    )
    out = python_prints(code)
    assert out.split() == ["False", "1704067200"]


def test_the_console_scripts_app_start_loads_no_ask_client(tmp_path):
    """`chatui` with no command (the app) does not load the warm ask process's client:
    only a command can be `ask` (issue 23)."""
    code = (
        "import sys\n"
        "import chatui.tui.app as app\n"
        "from chatui import cli\n"
        "app.run = lambda **options: print('chatui.cli.ask_client' in sys.modules) or 0\n"
        "sys.argv = ['chatui', '--model', 'demo']\n"
        "sys.exit(cli.main())\n"
    )
    out = python_prints(code, home=tmp_path)
    assert out.strip() == "False"


def test_a_prepared_query_reads_its_parameters_when_first_run(monkeypatch):
    """~30 queries are made when `store` is imported and a few run before the first
    frame: each reads its builder's parameters with its first run (issue 23)."""
    from types import SimpleNamespace

    from store import Store, prepared
    from store.schema import MessageRow as M

    read: list[object] = []
    signature = prepared.inspect.signature
    monkeypatch.setattr(
        prepared, "inspect", SimpleNamespace(signature=lambda f: read.append(f) or signature(f))
    )
    query = prepared.Prepared(lambda sid, *, engine: M.select(M.id).where(M.session_id == sid))
    assert read == []
    store = Store(":memory:")
    try:
        assert query.rows(store, "no such chat") == [] and query.rows(store, "x") == []
        with pytest.raises(TypeError):
            query.rows(store, "a", "b")
    finally:
        store.close()
    assert len(read) == 1 and (query.arity, query.per_engine) == (1, True)


def test_importing_the_app_and_opening_a_store_loads_no_change_watcher():
    """Other processes' writes are polled for after the first frame: `store.changes`
    loads with the first poll (`from store import ChangeWatcher` still works)."""
    code = (
        "import sys\n"
        "import chatui.tui.app\n"
        "from store import Store\n"
        "Store(':memory:').close()\n"
        "loaded = 'store.changes' in sys.modules\n"
        "from store import ChangeWatcher\n"
        "print(loaded, ChangeWatcher.__module__)\n"
    )
    out = python_prints(code)
    assert out.split() == ["False", "store.changes"]


def test_start_up_loads_no_command_or_diff_module(started):
    """The keys' and the palette's commands (`MainScreen.commands`, `COMMANDS`) load
    with their first use, the comparison screen's diff with that screen (issue 23)."""
    loaded = set(started["modules"])
    assert "chatui.tui.screens.main" in loaded
    assert [m for m in ("chatui.tui.screens.commands", "widgets.diff_view") if m in loaded] == []


def test_the_app_s_start_loads_no_command_group_module():
    """`chatui` with only the app's options builds no parser (`argv.app_options`), and the
    ask, db and transfer commands' modules load with the parser."""
    groups = ("chatui.cli.ask", "chatui.cli.db", "chatui.cli.transfer")
    code = f"import sys\nimport chatui.cli.commands\nprint([m for m in {groups!r} if m in sys.modules])"
    out = python_prints(code)
    assert out.strip() == "[]"


def test_the_app_s_start_imports_no_argparse(tmp_path):
    """`chatui` with only the app's options reads them without a parser: argparse (and
    the gettext it loads, ~8 M instructions of the start, issue 23) load with the parser,
    for the commands."""
    code = (
        "import sys\n"
        "import chatui.tui.app as app\n"
        "from chatui.cli import commands\n"
        "app.run = lambda **options: print(sorted(m for m in ('argparse', 'gettext')"
        " if m in sys.modules), options['model']) or 0\n"
        "sys.exit(commands.run(['--model', 'demo']))\n"
    )
    out = python_prints(code, home=tmp_path)
    assert out.strip() == "[] demo"


class _GaugeApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TokenGauge("memory", used=10, limit=1000, id="gauge")
        yield FittingFooter()


async def test_new_gauges_and_footer_keys_carry_their_classes_before_they_mount():
    """Set while unmounted, the classes are styled with the mount (set by watchers
    after it, each widget was restyled a second time); later changes still restyle."""
    gauge = TokenGauge("memory", used=1100, limit=1000)
    assert gauge.has_class("-over") and not gauge.has_class("-ok")
    app = _GaugeApp()
    async with app.run_test() as pilot:
        await pilot.pause()
        keys = app.query_one(FittingFooter).shown_keys()
        assert keys and all(k.has_class("-compact") for k in keys)
        mounted = app.query_one("#gauge", TokenGauge)
        assert mounted.has_class("-ok")
        mounted.used = 990
        await pilot.pause()
        assert mounted.has_class("-over") and not mounted.has_class("-ok")


class _SidebarApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.restyled: list[object] = []

    def compose(self) -> ComposeResult:
        yield ContextSidebar()

    def update_styles(self, node: DOMNode, animate: bool = True) -> None:
        """Textual restyles a node (and its children) here when its classes change."""
        self.restyled.append(node)
        super().update_styles(node, animate)


async def test_new_memory_gauges_are_styled_once():
    """`show_blocks` builds new gauges with their figures: set after the mount, each
    figure restyled its gauge again (three gauges, a dozen restyles at start-up)."""
    from .test_widgets import block

    app = _SidebarApp()
    async with app.run_test() as pilot:
        app.restyled.clear()
        sidebar = app.query_one(ContextSidebar)
        await sidebar.show_blocks([block("soul", 50, None, "readonly"), block("memory", 990, 1000)])
        await pilot.pause()
        gauges = list(sidebar.query(TokenGauge))
        assert [g.label for g in gauges][:2] == ["soul", "memory"]
        assert gauges[1].has_class("-over") and gauges[1].kind == "writable"
        assert not [n for n in app.restyled if isinstance(n, TokenGauge)]


@pytest.mark.parametrize("theme", [None, "textual-dark"])
async def test_the_themes_colours_are_worked_out_once_before_the_first_frame(
    store, monkeypatch, theme
):
    """Textual's `App.__init__` worked out its default theme's colours for a stylesheet
    that gets ours before its first parse (issue 23): one colour system now, ours. With
    Textual's default theme chosen (its watcher does not run) the sheet has it too."""
    from textual.design import ColorSystem

    made = spy(monkeypatch, ColorSystem, "generate", lambda system: system.primary.hex)
    app = make_app(store, warm_llm=False, model_process=False, theme=theme)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        primary = app.current_theme.primary
        assert app.stylesheet._variables["primary"].upper() == primary.upper()
        assert app.theme_variables["primary"].upper() == primary.upper()
    assert [hex.upper() for hex in made[:1]] == [primary.upper()] and len(made) == 1


async def test_the_apps_stylesheets_are_parsed_once_and_a_theme_change_still_restyles(store):
    """The theme set while the app is built only sets the variables of the first parse
    (Textual re-parsed the app's sheets then, `Stylesheet.reparse` putting a new source
    in place of the one read, and parsed them again for the screen)."""
    app = make_app(store, warm_llm=False, model_process=False, theme="textual-light")
    read = app.stylesheet.source
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert any(str(where[0]).endswith("main.tcss") for where in read)
        assert app.stylesheet.source is read  # parsed as read, never re-parsed
        light = app.screen.styles.background
        app.theme = "textual-dark"
        await pilot.pause()
        assert app.screen.styles.background != light


async def test_a_gauge_changing_level_is_restyled_once():
    """A new level swaps two classes: each swap restyled the gauge (the sidebar's
    conversation gauge did it twice in every start)."""
    app = _GaugeApp()
    async with app.run_test() as pilot:
        await pilot.pause()
        gauge = app.query_one("#gauge", TokenGauge)
        restyled: list[object] = []
        update_styles = app.update_styles

        def record(node, animate=True):
            restyled.append(node)
            update_styles(node, animate=animate)

        app.update_styles = record
        gauge.used = 990  # -ok → -over
        gauge.used = 991  # the same level: no restyle
        await pilot.pause()
        assert gauge.has_class("-over") and not gauge.has_class("-ok")
        assert restyled == [gauge]


async def test_the_first_screen_is_styled_once_and_restyled_when_it_comes_back(
    store, chats, monkeypatch
):
    """Textual restyled every widget of the first screen a second time when it resumed,
    right after the mount had styled them with the same sheets; a screen shown again
    (a dialog closed over it) is still restyled."""
    from chatui.tui.screens.dialogs import Confirm

    app = make_app(store, warm_llm=False, model_process=False)
    styled = spy(monkeypatch, app.stylesheet, "apply")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        main = app.main
        assert styled.count(main) == 1
        assert styled.count(main.sidebar) == 1 and styled.count(main.tree) == 1
        app.push_screen(Confirm("Sure?", "Yes", "No"))
        await pilot.pause()
        app.pop_screen()
        await pilot.pause()
        assert styled.count(main) == 2 and styled.count(main.sidebar) == 2


async def test_the_input_is_styled_once_before_the_first_frame_and_has_the_focus(
    store, chats, monkeypatch
):
    """The input was styled when mounted and again when the first chat focused it; it is
    focused before it is mounted now (styled once), and works as a focused box."""
    from widgets import ChatInput

    app = make_app(store, warm_llm=False, model_process=False)
    sent = record_terminal(app)
    styled = spy(monkeypatch, app.stylesheet, "apply", lambda node, **_: (node, bool(sent.frames)))
    async with app.run_test(size=(120, 40), headless=False) as pilot:
        await pilot.pause()
        box = app.main.chat_input
        before_frame = [node for node, framed in styled if not framed]  # type: ignore[misc]
        assert sum(isinstance(node, ChatInput) for node in before_frame) == 1
        assert box.has_focus and app.screen.focused is box
        accent = Color.parse(app.theme_variables["accent"])
        assert box.styles.border_top == ("round", accent)  # ChatInput:focus
        assert box._cursor_visible and box.blink_timer._active.is_set()  # blinking
        await pilot.press(*"hi")
        assert box.text == "hi"


async def test_a_widgets_parts_are_styled_when_first_drawn(store):
    """Textual styled every part (`COMPONENT_CLASSES`) of a widget each time the widget
    was styled: 62 of the 89 stylesheet applies before the first frame, the empty
    tree's 15 parts never drawn, the input's 8 twice (`chatui.tui.lazy_parts`). A part is
    styled when first asked for, with the widget's state then: the same styles."""
    from chatui.tui.lazy_parts import _style_part

    app = make_app(store, warm_llm=False, model_process=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        tree = app.main.query_one("#tree")
        assert "message-tree--cursor" in tree._component_styles
        assert len(tree._component_styles) == 0  # none styled: the empty tree draws none
        drawn = app.main.chat_input._component_styles
        assert 0 < len(drawn) < len(app.main.chat_input._get_component_classes())
        tree.focus()
        await pilot.pause()
        for node in app.screen.walk_children(with_self=True):
            for name in node._get_component_classes():
                lazily = node.get_component_styles(name)  # styled now if not yet
                eagerly = _style_part(app.stylesheet, node, name)
                assert lazily.get_rules() == eagerly.get_rules(), (node, name)


async def test_sibling_gauges_alike_share_their_parts_rules_and_get_textual_s_styles(
    store, chats, monkeypatch
):
    """Each memory gauge's parts were styled with the whole stylesheet, gauge after
    gauge; siblings alike (parent, type, id, classes, hover, focus) share the rules
    now, worked out once, and each part has the styles Textual gives it."""
    app = make_app(store, warm_llm=False, model_process=False)
    styled = spy(monkeypatch, app.stylesheet, "apply")
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        gauges = list(app.main.query(TokenGauge))
        alike = [g for g in gauges if g.id is None and g.has_class("-ok")]
        assert len(alike) == 2
        labels = [n._parent for n in styled if "token-gauge--label" in n.classes]
        assert sum(gauge in labels for gauge in alike) == 1  # styled once, shared
        for gauge in [*gauges, app.main.chat_input]:
            for name in gauge._get_component_classes():
                shared = gauge.get_component_styles(name)
                fresh = DOMNode(classes=name)
                fresh._attach(gauge)
                Stylesheet.apply(app.stylesheet, fresh)  # Textual's own, nothing shared
                assert shared.get_rules() == fresh.styles.get_rules(), (gauge, name)
                assert shared.node._parent is gauge


async def test_a_widget_whose_drawn_part_changed_is_repainted(store):
    """Restyled (focus, classes), a widget is repainted when a part it drew with has new
    styles, as Textual repainted it when any part changed."""
    app = make_app(store, warm_llm=False, model_process=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        gauge = app.main.query_one("#conversation-gauge", TokenGauge)
        before = gauge.get_component_rich_style("token-gauge--label")
        gauge.focus()  # TokenGauge:focus > .token-gauge--label: the accent colour
        await pilot.pause()
        after = gauge.get_component_rich_style("token-gauge--label")
        assert after != before and after.underline


def _cells_of(strips) -> list[list[tuple[str, object]]]:
    return [[(c, segment.style) for segment in strip for c in segment.text] for strip in strips]


async def test_rows_showing_the_same_content_line_are_styled_once_a_render(store, monkeypatch):
    """A pane's rows between its children, the empty tree's rows: one blank content line,
    each row styled again by Textual (borders, padding, tint: `chatui.tui.row_memo`).
    Styled once a render now, every widget of the first screen draws the same lines."""
    await _rows_styled_once(store, monkeypatch, stored=False)


async def test_a_screen_with_a_chat_draws_the_same_lines_with_rows_styled_once(
    store, chats, monkeypatch
):
    await _rows_styled_once(store, monkeypatch, stored=True)


async def _rows_styled_once(store, monkeypatch, stored: bool) -> None:
    from textual._styles_cache import StylesCache

    from chatui.tui.row_memo import RowMemoStylesCache

    from .app_helpers import spy

    styled = spy(monkeypatch, StylesCache, "render_line", lambda cache, *args: cache)
    app = make_app(store, warm_llm=False, model_process=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        tree = app.main.query_one("#tree")
        assert isinstance(tree._styles_cache, RowMemoStylesCache)
        rows = tree.size.height
        if not stored:  # the empty tree: its rows but the first and last are one blank line
            assert styled.count(tree._styles_cache) <= 4 < rows
        compared = 0
        for widget in app.screen.walk_children(Widget, with_self=True):
            if not widget.region:
                continue
            crop = widget.region.reset_offset
            memo = widget._styles_cache
            assert isinstance(memo, RowMemoStylesCache), widget
            memo.clear()
            drawn = widget.render_lines(crop)
            widget._styles_cache = StylesCache()
            try:
                plain = widget.render_lines(crop)
            finally:
                widget._styles_cache = memo
            assert _cells_of(drawn) == _cells_of(plain), widget
            compared += 1
        assert compared >= 20
