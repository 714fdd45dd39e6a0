"""`ChatApp`: composition and routing — services in, screens out.

Start-up is kept light: the first frame needs only Textual, the store and
the last chat. LiteLLM (seconds to import) is warmed in a thread after the
first paint; until then nothing asks it anything.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.theme import BUILTIN_THEMES

from store import (
    ContextBlock,
    DatabaseFileError,
    SchemaVersionError,
    Session,
    SessionManager,
    Store,
    estimate_message_tokens,
    estimate_string_tokens,
    is_url,
)
from widgets import ConversationStats, clean

from .. import llm, paths
from ..agents import AgentRuntime, agent_blocks, agent_namespace
from ..config import Config, ConfigError, load_config
from ..logs import setup_logging
from ..state import UiState, load_state, save_state
from ..wiring import block_provider
from .palette import PaletteCommands
from .screens.main import MainScreen
from .theming import DEFAULT_DARK, derived_tokens, load_themes

if TYPE_CHECKING:
    from ..engine import ChatEngine
    from .screens.search import SearchHit

__all__ = ["ChatApp", "run"]

log = logging.getLogger(__name__)


class ChatApp(PaletteCommands, App[int]):
    """The chatui application."""

    TITLE = "chatui"
    # Textual reads a screen's CSS_PATH when the screen is pushed or a MODES screen,
    # never for `get_default_screen`'s: the main screen's layout is loaded here. The
    # tree screen's too: parsing it on first push restyles every widget (~150 ms).
    CSS_PATH = ["screens/main.tcss", "screens/tree.tcss"]
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [
        Binding("ctrl+n", "new_chat", "New chat", id="app.new_chat"),
        Binding("ctrl+s", "chats", "Chats", id="app.chats"),
        Binding("ctrl+f", "search", "Search", id="app.search"),
        Binding("ctrl+l", "choose_model", "Model", id="app.model"),
        Binding("ctrl+b", "toggle_sidebar", "Sidebar", id="app.sidebar"),
        Binding("ctrl+t", "focus_tree", "Tree", id="app.tree"),
        Binding("f1", "help", "Help", id="app.help", show=False),
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
    ) -> None:
        super().__init__()
        self.store = store
        self.config = config
        self.state_path = state_path
        self.ui_state = ui_state if ui_state is not None else load_state(state_path)
        self.runtime = AgentRuntime(store, config)
        self.manager: SessionManager = self.runtime.manager
        self.launch_model = model
        self.llm_ready = False
        self._warm = warm_llm
        self._windows: dict[str, int | None] = {}
        self._key_checked: set[str] = set()
        """Models whose API key was checked (the environment does not change while we run)."""
        for custom in load_themes():
            self.register_theme(custom)
        self._theme_choice = theme or self.ui_state.theme or config.theme or DEFAULT_DARK
        self.theme = (
            self._theme_choice if self._theme_choice in self.available_themes else DEFAULT_DARK
        )

    # -- services the screens use ------------------------------------------------

    def engine_for(self, session_id: str) -> ChatEngine:
        """The engine of the chat's agent (built on first use, off the first frame)."""
        return self.runtime.engine_for(session_id)

    @property
    def default_model(self) -> str:
        """The model of a new chat: the one open, else --model, else the config's."""
        main = self._main()
        if main is not None and main.chat is not None:
            return main.model
        return self.launch_model or self.config.model

    def _main(self) -> MainScreen | None:
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen):
                return screen
        return None

    @property
    def main(self) -> MainScreen:
        main = self._main()
        assert main is not None, "the main screen is always at the bottom of the stack"
        return main

    def remember_chat(self, session_id: str | None) -> None:
        self.ui_state.last_session_id = session_id
        save_state(self.ui_state, self.state_path)

    def remember_panes(self, tree: bool, sidebar: bool) -> None:
        self.ui_state.show_tree, self.ui_state.show_sidebar = tree, sidebar
        save_state(self.ui_state, self.state_path)

    def save_ui_state(self) -> None:
        save_state(self.ui_state, self.state_path)

    async def template_blocks(self, agent_id: str | None = None) -> list[ContextBlock]:
        """The blocks a new chat will have (what the sidebar shows before the first send)."""
        agent = self.runtime.agent(agent_id)
        blocks = agent_blocks(agent, self.config) if agent else self.config.blocks
        namespace = agent_namespace(agent)
        session = Session(self.store).for_session("__new_chat__")
        for block in blocks:
            provider = block_provider(self.store, block, namespace)
            if callable(provider):
                provider = provider("__new_chat__")
            session.with_context(
                block.label,
                description=block.description,
                max_tokens=block.max_tokens,
                provider=provider,
            )
        return await session.load_context()

    def context_window(self, model: str) -> int | None:
        """The model's context window, once LiteLLM is loaded (None before, or unknown)."""
        if not self.llm_ready:
            return self.config.options_for(model).context_window
        if model not in self._windows:
            self._windows[model] = llm.context_window(model, self.config.options_for(model))
        return self._windows[model]

    async def conversation_stats(self, main: MainScreen) -> ConversationStats:
        model = main.model
        window = self.context_window(model)
        if main.chat is None:  # the sidebar has just drawn the new chat's blocks
            tokens = sum(b.tokens for b in main.sidebar.blocks)
            return ConversationStats(
                tokens=tokens, window=window, model=model, compact_at=self.config.compact_at
            )
        info = main.chat.info
        session = self.runtime.manager_for(info.id).get_session(info.id)
        history = main.snapshot.history if main.snapshot else []
        tokens = estimate_message_tokens(history) + estimate_string_tokens(
            await session.freeze_system_prompt()
        )
        compactions = main.snapshot.compactions if main.snapshot else 0
        return ConversationStats(
            tokens=tokens,
            window=window,
            model=model,
            input_tokens=info.input_tokens,
            output_tokens=info.output_tokens,
            cost=info.cost,
            compactions=compactions,
            compact_at=self.config.compact_at,
        )

    def after_chat_drawn(self, main: MainScreen) -> None:
        """Say how to set a key up when the chat's model has none (once per model)."""
        if not self.llm_ready:
            return
        model = main.model
        if model in self._key_checked:
            return
        self._key_checked.add(model)
        problem = llm.key_problem(model, self.config.options_for(model).api_base)
        if problem:
            self.call_after_refresh(self._key_notice, main, model, problem)

    async def _key_notice(self, main: MainScreen, model: str, problem: str) -> None:
        await main.chat_view.notice(
            f"{problem}\nPast chats are all here and searchable. To chat now without a key, "
            "press ctrl+l and pick `demo` (offline).",
            "warning",
            title=f"{model} needs an API key",
        )

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

    def log_error(self, exc: BaseException) -> None:
        log.error("%s", exc, exc_info=exc)

    # -- start-up ---------------------------------------------------------------

    def get_default_screen(self) -> Screen[None]:
        return MainScreen()

    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, self._theme_changed)

    async def open_first_chat(self, main: MainScreen) -> None:
        """The chat open last time (or the newest); called once the main screen exists."""
        last = self.ui_state.last_session_id
        info = self.manager.get(last) if last else None
        if info is None:
            recent = self.manager.list(limit=1)
            info = recent[0] if recent else None
        if info is not None and self.launch_model and info.model != self.launch_model:
            self.manager.set_model(info.id, self.launch_model)
        await main.open_chat(info.id if info else None, model=self.launch_model)
        if self._warm:
            self.call_after_refresh(self.warm_llm)

    @work(thread=True, exclusive=True, group="warm-up", exit_on_error=False)
    def warm_llm(self) -> None:
        llm.warm_up()
        self.call_from_thread(self._llm_ready)

    async def _llm_ready(self) -> None:
        self.llm_ready = True
        # LiteLLM leaves ~350k long-lived objects; every full garbage collection would
        # walk them (a ~0.3 s stall in the middle of a streaming reply): freeze them.
        # Drawing makes many short-lived cycles; collecting them less often turns
        # frequent 60 ms pauses into rare ones while a fast reply streams.
        gc.collect()
        gc.freeze()
        gc.set_threshold(10_000, 20, 20)
        main = self.main
        await main.refresh_sidebar(blocks=False)
        self.after_chat_drawn(main)

    def _theme_changed(self, theme: object) -> None:
        name = getattr(theme, "name", None)
        if name and name != self.ui_state.theme:
            self.ui_state.theme = name
            save_state(self.ui_state, self.state_path)

    def get_css_variables(self) -> dict[str, str]:
        variables = super().get_css_variables()
        tokens = derived_tokens(variables)
        tokens.update({k: v for k, v in self.current_theme.variables.items() if k in tokens})
        variables.update(tokens)
        return variables

    # -- actions ----------------------------------------------------------------

    async def action_new_chat(self) -> None:
        """A new chat; with agents configured, pick which one runs it first."""
        main = self.main
        if self.screen is not main:
            return
        agents = self.runtime.agents()
        if not agents:
            await self.start_new_chat(None)
            return
        from .screens.agent_picker import AgentPicker

        async def chosen(choice: str | None) -> None:
            if choice is not None:
                # "Default assistant" promises the config's model, not the open chat's.
                await self.start_new_chat(choice or None, keep_model=False)

        self.push_screen(AgentPicker(agents), chosen)

    async def start_new_chat(self, agent_id: str | None, *, keep_model: bool = True) -> None:
        """A new chat running `agent_id`; with no agent, the open chat's model (`keep_model`)
        or the default one (--model, else the config's)."""
        main = self.main
        if agent_id:
            model = None
        elif keep_model and main.chat is not None:
            model = main.model
        else:
            model = self.launch_model or self.config.model
        await main.open_chat(None, model=model, agent_id=agent_id)
        self.notify("New chat — it is saved when you send the first message.", timeout=3)

    def action_chats(self) -> None:
        from .screens.chat_list import ChatListScreen  # modal screens load on first use

        main = self.main

        async def chosen(session_id: str | None) -> None:
            current = main.session_id
            if session_id is not None and session_id != current:
                await main.open_chat(session_id)
            elif current is not None and self.manager.get(current) is None:
                await main.open_chat(None)  # the open chat was deleted in the list
            else:
                await main.redraw()

        self.push_screen(ChatListScreen(self.manager, main.session_id), chosen)

    def action_search(self) -> None:
        from .screens.search import SearchScreen

        main = self.main

        async def chosen(hit: SearchHit | None) -> None:
            if hit is not None:
                await main.open_chat(hit.session_id, reveal=hit.message_id)
                await main.show_search_hit(hit.message_id)

        self.push_screen(SearchScreen(self.manager), chosen)

    def model_choices(self) -> list[tuple[str, str]]:
        seen: dict[str, str] = {}
        current = self.main.model
        seen[current] = "current"
        for model in self.ui_state.recent_models:
            seen.setdefault(model, "recent")
        seen.setdefault(self.config.model, "config default")
        for model in self.config.models:
            seen.setdefault(model, "configured")
        seen.setdefault("demo", "offline demo, no key needed")
        for model in SessionManager(self.store).models_used():
            seen.setdefault(model, "used before")
        return list(seen.items())

    def action_choose_model(self) -> None:
        from .screens.model_picker import ModelPicker

        main = self.main

        async def chosen(model: str | None) -> None:
            if not model:
                return
            if main.chat is not None:
                self.manager.set_model(main.chat.session_id, model)
            else:
                main.draft_model = model
            self.ui_state.remember_model(model)
            save_state(self.ui_state, self.state_path)
            main.update_title()
            await main.refresh_sidebar(blocks=False)
            self.after_chat_drawn(main)
            self.notify(f"Model: {model}")

        self.push_screen(ModelPicker(main.model, self.model_choices()), chosen)

    async def action_toggle_sidebar(self) -> None:
        await self.main.toggle_pane("sidebar")

    async def action_toggle_tree(self) -> None:
        await self.main.toggle_pane("tree")

    def action_focus_tree(self) -> None:
        if self.screen is self.main:
            self.main.focus_tree()

    def action_help(self) -> None:
        from .screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from self.chat_commands(screen)
        for command in super().get_system_commands(screen):
            if command.title != "Keys":  # ours (F1) lists every key; one "Keys" only
                yield command

    async def action_quit(self) -> None:
        self.main.cancel_generation()
        save_state(self.ui_state, self.state_path)
        if self.runtime.router.pending:  # fire-and-forget peer turns still writing
            self.notify("Waiting for agents to finish their replies…")
            try:
                await asyncio.wait_for(self.runtime.router.drain(), timeout=10)
            except TimeoutError:
                log.warning("quit with peer turns still running; their replies are partial")
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
    known = set(BUILTIN_THEMES) | {t.name for t in load_themes()}
    if theme is not None and theme not in known:
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
    try:
        app = ChatApp(store, config, model=model, theme=theme)
        app.run()
        return app.return_code or 0
    finally:
        store.close()
