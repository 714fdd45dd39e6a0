"""`ChatApp`: composition and routing — services in, screens out.

Start-up is kept light: the first frame needs only Textual, the store and
the last chat. LiteLLM (seconds to import) is warmed in a thread after the
first paint; until then nothing asks it anything.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from textual import events, on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.dom import DOMNode
from textual.driver import Driver
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.theme import BUILTIN_THEMES
from textual.widget import Widget

from store import DatabaseFileError, SchemaVersionError, Store, is_url
from widgets import clean

from .. import compile_cache, launch, llm
from ..core import paths
from ..core.config import Config, ConfigError, load_config
from ..core.logs import setup_logging
from ..core.ui_state import UiState, load_state, save_state
from ..core.workspace import Workspace
from . import css_cache, lazy_parts, lean_callbacks, row_memo
from .chat_pane import ChatPane
from .early_keys import EarlyKeys
from .keymap import resolve_keys
from .outage import OutageNotices, SurvivesOutage
from .screens.main import MainScreen
from .theming import DEFAULT_DARK, derived_tokens, load_themes

__all__ = ["ChatApp", "run"]

CHANGE_POLL_SECONDS = 0.3
"""How often the app looks for other processes' writes (they show within a second)."""

GC_BACKSTOP_SECONDS = 5.0
"""Garbage collection paused for start-up (`launch.pause`) resumes by then at the latest."""

log = logging.getLogger(__name__)


class ChatApp(SurvivesOutage, App[int]):
    """The chatui application: builds the workspace, shows the main screen, keeps UI state."""

    TITLE = "chatui"
    # Textual reads a screen's CSS_PATH when the screen is pushed or a MODES screen,
    # never for `get_default_screen`'s: the main screen's layout is loaded here. The
    # tree screen's too: parsing it on first push restyles every widget (~150 ms).
    CSS_PATH = ["screens/main.tcss", "screens/tree.tcss"]
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True),
    ]

    def __init__(
        self,
        store: Store,
        config: Config,
        *,
        model: str | None = None,
        theme: str | None = None,
        ui_state: UiState | None = None,
        state_path: Path | None = None,
        warm_llm: bool = True,
        model_process: bool = True,
    ) -> None:
        super().__init__()
        lazy_parts.install(self)  # widgets' parts styled when first drawn (start-up)
        lean_callbacks.install()  # a callback's parameters counted once a method (sends)
        self._early_keys = EarlyKeys(self, functools.partial(App.on_event, self))
        self.store = store
        self.config = config
        self.state_path = state_path
        self.ui_state = ui_state if ui_state is not None else load_state(state_path)
        # Replies stream from a model process of their own (`llm.worker`): LiteLLM's
        # per-chunk work never competes with drawing and typing.
        self.workspace = Workspace(store, config, launch_model=model, model_process=model_process)
        self._warm = warm_llm
        self._quitting = False
        self.outage = OutageNotices(store, self)
        """Says when the database does not answer (the app stays up: `tui.outage`)."""
        # [keys]: Textual rebinds by binding id; a bad entry is a warning after the
        # first frame, its action keeping the default key.
        self.keys_in_force, self._key_warnings = resolve_keys(config.keys)
        for custom in load_themes():
            self.register_theme(custom)
        self._theme_choice = theme or self.ui_state.theme or config.theme or DEFAULT_DARK
        self._theme_set = True
        before = self.theme
        self.theme = (
            self._theme_choice if self._theme_choice in self.available_themes else DEFAULT_DARK
        )
        if self.theme == before:  # Textual's own default theme: its watcher did not run
            self.refresh_css(animate=False)

    @property
    def main(self) -> MainScreen:
        """The main screen (always at the bottom of the stack)."""
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen):
                return screen
        raise LookupError("the main screen is not mounted")

    @property
    def llm_ready(self) -> bool:
        return self.workspace.llm_ready

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Toasts name chats, models and errors — untrusted text: shown as written, never
        parsed as markup (a chat named "what does [/] do?" would crash the app), with
        escape sequences removed."""
        super().notify(
            clean(message), title=clean(title), severity=severity, timeout=timeout, markup=False
        )

    def _handle_exception(self, error: Exception) -> None:
        # A timer's or a worker's read that failed because the database server does
        # not answer: said, and the app goes on (message handlers: `SurvivesOutage`).
        if self.outage.absorb(error):
            return
        super()._handle_exception(error)

    # -- start-up ---------------------------------------------------------------

    def get_driver_class(self) -> type[Driver]:
        """Textual's terminal driver, reading pastes that carry ESC whole (`paste_guard`)."""
        driver = super().get_driver_class()
        if driver.__name__ == "LinuxDriver":  # Linux and macOS (its module needs termios)
            from .paste_guard import PasteSafeDriver

            return PasteSafeDriver
        return driver

    def _register(self, parent: DOMNode, *widgets: Widget, **kwargs: Any) -> list[Widget]:
        # Every widget (its children come through here too) styles a row once a render
        # for all the rows that show the same content line (`row_memo`: start-up).
        for widget in widgets:
            row_memo.memoize_rows(widget)
        return super()._register(parent, *widgets, **kwargs)

    async def on_event(self, event: events.Event) -> None:
        # Keys typed while the app starts reach the input in the order typed.
        if isinstance(event, events.Key) and not event.is_forwarded:
            if self._early_keys.hold(event):
                return
        await super().on_event(event)

    def get_default_screen(self) -> Screen[None]:
        state = self.ui_state
        return MainScreen(self.workspace, ui_state=state, first_chat=state.last_session_id)

    def on_mount(self) -> None:
        if self.keys_in_force:
            self.set_keymap(self.keys_in_force)
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        # Collection resumes after the first chat's frame; this is the backstop for
        # a start that never gets there (a database error on the first read).
        self.set_timer(GC_BACKSTOP_SECONDS, launch.resume, name="gc backstop")

    async def on_unmount(self) -> None:
        # The MCP servers' sessions end with the app (a stdio server's process is
        # stopped by the SDK), however it exits.
        await self.workspace.tools.stop()

    def _watch_changes(self) -> None:
        self.set_interval(CHANGE_POLL_SECONDS, self._poll_changes, name="changes")

    def _poll_changes(self) -> None:
        try:
            changed = self.workspace.poll_changes()
        except Exception:  # a dropped server must not stop the app; the next poll retries
            log.warning("watching for other processes' changes failed", exc_info=True)
            return
        if changed:
            from .screens.chat_list import ChatListScreen  # loaded by its first showing

            if isinstance(self.screen, ChatListScreen):
                self.screen.changed_elsewhere()

    @on(MainScreen.FirstChatShown)
    def _first_chat_shown(self) -> None:
        self.call_after_refresh(launch.resume)
        # Other processes and machines on the same database: their writes show within a
        # second (the watcher is one pragma or one socket check a call). Started once the
        # first chat is on screen: on a loaded machine the first polls (the watcher's
        # set-up) fell before the first frame and delayed it.
        self.call_after_refresh(self._watch_changes)
        if self._warm:
            # After the next refresh the whole first screen is on the terminal; LiteLLM's
            # import (seconds of CPU) starts only then, so it never delays that frame.
            self.call_after_refresh(self.warm_llm)
        self.call_after_refresh(self.workspace.start_model_process)
        if self.keys_in_force or self._key_warnings:
            self.call_after_refresh(self._check_keys)
        if not self._warm:
            self.call_after_refresh(self.workspace.start_tools)

    def _check_keys(self) -> None:
        """Say which `[keys]` entries were left out, and why (after the first frame: the
        actions are read from every screen's bindings)."""
        from .keymap import catalogue, unknown_actions

        known = {action.id for action in catalogue()}
        unknown = unknown_actions(self.keys_in_force, known)
        for action in list(self.keys_in_force):
            if action not in known:
                del self.keys_in_force[action]
        for warning in [*self._key_warnings, *unknown]:
            log.warning("%s", warning)
            self.notify(warning, title="[keys] in the config", severity="warning", timeout=10)

    @work(thread=True, exclusive=True, group="warm-up", exit_on_error=False)
    def warm_llm(self) -> None:
        llm.warm_up()
        worker = self.workspace.worker
        deadline = time.monotonic() + 30
        # "Ready" means the first send streams without a wait (a quit never waits on it).
        while worker is not None and not worker.ready.wait(0.1):
            if self._exit or worker.broken or time.monotonic() > deadline:
                break
        self.call_from_thread(self.call_later, self._llm_ready)

    async def _llm_ready(self) -> None:
        self.workspace.llm_ready = True
        # MCP servers start now, in the background (their tools join each chat once
        # listed): the SDK's import (about a second of CPU in a thread) would otherwise
        # compete with LiteLLM's and with the first screen's drawing for the GIL.
        self.workspace.start_tools()
        # LiteLLM leaves ~350k long-lived objects; every full garbage collection would
        # walk them (a ~0.3 s stall in the middle of a streaming reply): freeze them.
        # Drawing makes many short-lived cycles; collecting them less often turns
        # frequent 60 ms pauses into rare ones while a fast reply streams.
        gc.collect()
        gc.freeze()
        gc.set_threshold(10_000, 20, 20)
        await self.main.pane.model_facts_ready()

    # -- UI state the screens report ------------------------------------------------

    @on(ChatPane.ChatOpened)
    def _chat_opened(self, message: ChatPane.ChatOpened) -> None:
        self.ui_state.last_session_id = message.session_id
        save_state(self.ui_state, self.state_path)

    @on(MainScreen.PanesChanged)
    def _panes_changed(self, message: MainScreen.PanesChanged) -> None:
        self.ui_state.show_tree, self.ui_state.show_sidebar = message.tree, message.sidebar
        save_state(self.ui_state, self.state_path)

    @on(MainScreen.UiStateChanged)
    @on(ChatPane.DraftChanged)
    def _ui_state_changed(self) -> None:
        save_state(self.ui_state, self.state_path)

    @on(ChatPane.ModelChosen)
    def _model_chosen(self, message: ChatPane.ModelChosen) -> None:
        self.ui_state.remember_model(message.model)
        save_state(self.ui_state, self.state_path)

    def _theme_changed(self, theme: object) -> None:
        name = getattr(theme, "name", None)
        if name and name != self.ui_state.theme:
            self.ui_state.theme = name
            save_state(self.ui_state, self.state_path)

    def refresh_css(self, animate: bool = True) -> None:
        if not self.screen_stack:
            # Nothing is styled before the first screen: the theme set in __init__ only
            # changes the variables the first parse reads. Textual re-parsed the app's
            # sheets into a throwaway stylesheet here (the app's own then parsed them
            # again): ~5-10 ms of every start.
            self.stylesheet.set_variables(self.get_css_variables())
            return
        super().refresh_css(animate)

    _theme_set = False
    """False while Textual's `App.__init__` builds the stylesheet: with its default
    theme's variables, replaced before the first parse by ours (`refresh_css`, once
    `__init__` set the theme). Working those out was ~2 M instructions of every start."""

    def get_css_variables(self) -> dict[str, str]:
        if not self._theme_set:
            return {}
        variables = super().get_css_variables()
        tokens = derived_tokens(variables)
        tokens.update({k: v for k, v in self.current_theme.variables.items() if k in tokens})
        variables.update(tokens)
        return variables

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """Textual's commands (theme, screenshot, quit); the main screen's own come from
        its `COMMANDS` provider."""
        for command in super().get_system_commands(screen):
            if command.title != "Keys":  # ours (F1) lists every key; one "Keys" only
                yield command

    # -- quitting -----------------------------------------------------------------

    async def action_quit(self) -> None:
        """Quit; with replies being written, ask once, then keep what arrived (cancelled)."""
        live = self.workspace.live_chats
        if live and not self._quitting:
            from .screens.dialogs import Confirm

            if isinstance(self.screen, Confirm):
                return
            count = len(live)
            question = (
                f"{count} repl{'ies are' if count > 1 else 'y is'} still being written. "
                "Quit anyway? What arrived is kept, marked cancelled."
            )
            # A reply kept in memory while the database is away (`core.replies`) cannot
            # be stored by a quit: say what quitting costs. Asked in a thread: a server
            # whose network is gone takes its connect timeout to say nothing.
            if not await asyncio.to_thread(self.store.answers):
                question = (
                    f"{count} repl{'ies are' if count > 1 else 'y is'} still being written, "
                    "and the database does not answer: what streamed since the last save "
                    "is only in memory and is lost if you quit now. Quit anyway?"
                )

            async def answered(yes: bool | None) -> None:
                if yes:
                    await self._quit_now()

            self.push_screen(Confirm(question, "Quit", "Keep writing"), answered)
            return
        await self._quit_now()

    async def _quit_now(self) -> None:
        self._quitting = True
        try:
            self.main.pane.keep_draft()  # what is typed and not sent is there next time
        except LookupError:
            pass
        save_state(self.ui_state, self.state_path)
        if self.workspace.peer_turns_pending():
            self.notify("Waiting for agents to finish their replies…")
        await self.workspace.shutdown()
        self.exit(0)


def run(
    *, db_path: Path | str | None = None, model: str | None = None, theme: str | None = None
) -> int:
    """Open the database and config and run the app; returns the exit code."""
    try:
        config = load_config()
    except ConfigError as exc:
        print(f"chatui: {exc}", file=sys.stderr)
        return 2
    if theme is not None:  # checked only when asked for (the app reads the themes itself)
        known = set(BUILTIN_THEMES) | {t.name for t in load_themes()}
        if theme not in known:
            print(
                f"chatui: unknown theme {theme!r} (available: {', '.join(sorted(known))})",
                file=sys.stderr,
            )
            return 2
    if db_path is not None and is_url(db_path):  # a URL is never a file path
        try:
            store = Store(db_path)
        except (DatabaseFileError, SchemaVersionError) as exc:
            print(f"chatui: {exc}", file=sys.stderr)  # the store's errors redact passwords
            return 3
        return _run_app(store, config, model, theme)
    path = Path(db_path) if db_path else paths.default_db()
    try:
        paths.ensure_private_dir(path.parent)
        paths.create_private_file(path)  # before SQLite: its -wal/-shm copy this mode
        store = Store(path)
    except (DatabaseFileError, SchemaVersionError) as exc:
        print(f"chatui: {exc}", file=sys.stderr)
        return 3
    except OSError as exc:
        print(f"chatui: {path}: {exc.strerror}", file=sys.stderr)
        return 3
    paths.make_private_db(path)
    return _run_app(store, config, model, theme)


def _run_app(store: Store, config: Config, model: str | None, theme: str | None) -> int:
    setup_logging()
    compile_cache.save()  # the imports' code, kept even if the terminal closes at once
    try:
        app = ChatApp(store, config, model=model, theme=theme)
        css_cache.install(app, paths.css_cache_file())  # written once the screen is drawn
        app.run()
        return app.return_code or 0
    finally:
        store.close()
