"""The main screen's commands: its keys (new chat, chats, search, model, panes) and
the command palette's entries (ctrl+p), which the app asks the screen for.

The base class of `MainScreen`, kept apart so each module stays readable; it
names (for type checkers only) what it uses of the main screen, so this module
never imports `main` (no import cycle). Each command works on the open chat
through the workspace, as the keys do; long work (compaction, imports) runs in
workers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.app import SystemCommand
from textual.screen import Screen

if TYPE_CHECKING:
    from ...core.chat_state import ChatSnapshot, ChatState
    from ...core.workspace import Workspace
    from .search import SearchHit

__all__ = ["ChatCommands"]

log = logging.getLogger(__name__)


class ChatCommands(Screen[None]):
    """Keys and palette commands of the main screen (`MainScreen` derives from this)."""

    if TYPE_CHECKING:  # what MainScreen provides
        workspace: Workspace
        chat: ChatState | None
        snapshot: ChatSnapshot | None
        draft_model: str | None
        recent_models: list[str]

        @property
        def model(self) -> str: ...
        @property
        def session_id(self) -> str | None: ...
        @property
        def generating(self) -> bool: ...
        async def open_chat(
            self,
            session_id: str | None,
            *,
            reveal: str | None = None,
            model: str | None = None,
            agent_id: str | None = None,
        ) -> None: ...
        async def redraw(self) -> None: ...
        def refresh_info(self) -> None: ...
        def update_title(self) -> None: ...
        async def model_facts_ready(self) -> None: ...
        async def toggle_pane(self, which: str) -> None: ...
        def focus_tree(self) -> None: ...
        async def show_search_hit(self, message_id: str) -> None: ...
        def model_chosen(self, model: str) -> None: ...

    # -- keys -----------------------------------------------------------------------

    async def action_new_chat(self) -> None:
        """A new chat; with agents configured, pick which one runs it first."""
        if self.app.screen is not self:
            return
        agents = self.workspace.runtime.agents()
        if not agents:
            await self.start_new_chat(None)
            return
        from .agent_picker import AgentPicker

        async def chosen(choice: str | None) -> None:
            if choice is not None:
                # "Default assistant" promises the config's model, not the open chat's.
                await self.start_new_chat(choice or None, keep_model=False)

        self.app.push_screen(AgentPicker(agents), chosen)

    async def start_new_chat(self, agent_id: str | None, *, keep_model: bool = True) -> None:
        """A new chat running `agent_id`; with no agent, the open chat's model
        (`keep_model`) or the default one (--model, else the config's)."""
        if agent_id:
            model = None  # the agent's own
        elif keep_model and self.chat is not None:
            model = self.model
        else:
            model = self.workspace.model_of(None)  # --model, else the config's
        await self.open_chat(None, model=model, agent_id=agent_id)
        self.notify("New chat — it is saved when you send the first message.", timeout=3)

    def action_chats(self) -> None:
        from .chat_list import ChatListScreen  # modal screens load on first use

        manager = self.workspace.manager

        async def chosen(session_id: str | None) -> None:
            current = self.session_id
            if session_id is not None and session_id != current:
                await self.open_chat(session_id)
            elif current is not None and manager.get(current) is None:
                await self.open_chat(None)  # the open chat was deleted in the list
            else:
                await self.redraw()

        self.app.push_screen(
            ChatListScreen(manager, self.session_id, jobs=self.workspace.jobs),
            chosen,
        )

    def action_search(self) -> None:
        from .search import SearchScreen

        async def chosen(hit: SearchHit | None) -> None:
            if hit is not None:
                await self.open_chat(hit.session_id, reveal=hit.message_id)
                await self.show_search_hit(hit.message_id)

        self.app.push_screen(SearchScreen(self.workspace.manager), chosen)

    def action_choose_model(self) -> None:
        from .model_picker import ModelPicker

        async def chosen(model: str | None) -> None:
            if not model:
                return
            if self.chat is not None:
                self.workspace.manager.set_model(self.chat.session_id, model)
                self.refresh_info()
            else:
                self.draft_model = model
            self.recent_models = [model, *(m for m in self.recent_models if m != model)]
            self.model_chosen(model)
            self.update_title()
            await self.model_facts_ready()
            self.notify(f"Model: {model}")

        choices = self.workspace.model_choices(self.model, self.recent_models)
        self.app.push_screen(ModelPicker(self.model, choices), chosen)

    async def action_toggle_sidebar(self) -> None:
        await self.toggle_pane("sidebar")

    async def action_toggle_tree(self) -> None:
        await self.toggle_pane("tree")

    def action_focus_tree(self) -> None:
        if self.app.screen is self:
            self.focus_tree()

    def action_help(self) -> None:
        from .help import HelpScreen

        if not isinstance(self.app.screen, HelpScreen):
            self.app.push_screen(HelpScreen())

    # -- the palette ----------------------------------------------------------------

    def system_commands(self) -> Iterable[SystemCommand]:
        """This screen's entries in the command palette (the app adds its own after)."""
        main = self
        yield SystemCommand("New chat", "Start a new chat (ctrl+n)", self.action_new_chat)
        yield SystemCommand("Chats", "List, open, rename, delete chats (ctrl+s)", self.action_chats)
        yield SystemCommand("Search", "Search every chat (ctrl+f)", self.action_search)
        yield SystemCommand(
            "Model", "Choose the model for this chat (ctrl+l)", self.action_choose_model
        )
        if main.chat is not None:
            yield SystemCommand(
                "Compact now",
                "Summarise the middle of this chat to free context (the originals stay)",
                self.compact_now,
            )
            yield SystemCommand("Rename chat", "Give this chat a new name", self.rename_chat)
            yield SystemCommand(
                "Export chat as Markdown",
                "The branch on screen, as a Markdown file (other branches are listed)",
                lambda: self.export_current("md"),
            )
            yield SystemCommand(
                "Export chat as JSON",
                "The whole tree, every branch, as "
                "chatui JSON (import it back with `chatui import`)",
                lambda: self.export_current("json"),
            )
            yield SystemCommand(
                "Move chat to project",
                "Group this chat under a project (created if new); an empty name takes it out",
                self.move_to_project,
            )
            yield SystemCommand(
                "Delete chat",
                "Move this chat to the deleted chats (restore it from the chat list)",
                self.delete_chat,
            )
        yield SystemCommand(
            "Import chats",
            "From a ChatGPT export, a chatui export, Pi session files or an llm logs database",
            self.ask_import,
        )
        yield SystemCommand(
            "Toggle sidebar",
            "Show or hide the context sidebar (ctrl+b)",
            self.action_toggle_sidebar,
        )
        yield SystemCommand(
            "Toggle tree",
            "Show or hide the message tree (ctrl+t focuses it)",
            self.action_toggle_tree,
        )
        yield SystemCommand("Keys", "Every key chatui answers to (F1)", self.action_help)

    @work(exclusive=True, group="compact", exit_on_error=False)
    async def compact_now(self) -> None:
        main = self
        if main.chat is None:
            return
        if main.generating:
            self.notify("Wait for the reply to finish first.", severity="warning")
            return
        self.notify("Compacting…")
        try:
            result = await self.workspace.runtime.engine_for(main.chat.session_id).compact(
                main.chat.session_id, main.chat.active_leaf
            )
        except Exception as exc:
            log.error("%s", exc, exc_info=exc)
            self.notify(f"Compaction failed: {exc}. Nothing was changed.", severity="error")
            return
        if result is None:
            self.notify("Nothing to compact yet: the chat is short.")
        else:
            self.notify(
                "Compacted: the summary stands in for the middle of the chat; expand "
                "it to see the originals."
            )
        await main.redraw()

    def rename_chat(self) -> None:
        from .dialogs import TextPrompt

        main = self
        if main.chat is None:
            return
        chat = main.chat

        def done(name: str | None) -> None:
            if name and name.strip():
                self.workspace.manager.rename(chat.session_id, name)
                main.refresh_info()

        self.app.push_screen(TextPrompt("Rename chat", chat.info.name), done)

    def move_to_project(self) -> None:
        from .dialogs import TextPrompt

        main = self
        if main.chat is None:
            return
        chat = main.chat
        projects = self.workspace.manager.list_projects()
        current = next((p.name for p in projects if p.id == chat.info.project_id), "")
        known = ", ".join(p.name for p in projects[:8])

        def done(answer: str | None) -> None:
            if answer is None:
                return
            name = answer.strip()
            if not name:
                self.workspace.manager.move_to_project(chat.session_id, None)
                self.notify("The chat is in no project now.")
                return
            project = next((p for p in projects if p.name.lower() == name.lower()), None)
            if project is None:
                project = self.workspace.manager.create_project(name)
            self.workspace.manager.move_to_project(chat.session_id, project.id)
            self.notify(f"Moved to project {project.name!r}.")

        hint = f"projects: {known} · " if known else ""
        self.app.push_screen(
            TextPrompt(
                "Move chat to project", current, hint=f"{hint}enter moves · empty = no project"
            ),
            done,
        )

    async def delete_chat(self) -> None:
        main = self
        if main.chat is None:
            return
        await self.workspace.jobs.stop(main.chat.session_id)  # its partial reply is kept
        info = self.workspace.manager.delete(main.chat.session_id)
        self.notify(f"Deleted {info.name!r} — restore it from the chat list (ctrl+s, t).")
        recent = self.workspace.manager.list(limit=1)
        await main.open_chat(recent[0].id if recent else None)

    def export_current(self, fmt: str) -> None:
        from ...transfer.files import default_export_path, export_chat  # not on the first screen
        from .dialogs import TextPrompt

        main = self
        if main.chat is None:
            return
        chat = main.chat
        suggested = default_export_path(chat.info.name, fmt)

        def done(answer: str | None) -> None:
            if not answer or not answer.strip():
                return
            try:
                written = export_chat(
                    self.workspace.manager,
                    chat.session_id,
                    Path(answer.strip()),
                    fmt,
                    chat.active_leaf,
                    self.workspace.jobs.live_messages(chat.session_id),
                )
            except OSError as exc:
                self.notify(
                    f"Could not write {answer.strip()}: {exc.strerror or exc}", severity="error"
                )
                return
            self.notify(f"Exported to {written}")

        self.app.push_screen(
            TextPrompt(f"Export as {'Markdown' if fmt == 'md' else 'JSON'} to", str(suggested)),
            done,
        )

    def ask_import(self) -> None:
        from .dialogs import TextPrompt

        def done(answer: str | None) -> None:
            if answer and answer.strip():
                self.run_import(Path(answer.strip()))

        self.app.push_screen(
            TextPrompt(
                "Import chats from (conversations.json, a chatui export, "
                "a Pi session file or folder, llm's logs.db)",
                "",
            ),
            done,
        )

    @work(exclusive=True, group="import", exit_on_error=False)
    async def run_import(self, path: Path) -> None:
        from ...transfer.files import ImportProblem, import_file

        self.notify(f"Importing {path}…")
        try:
            report = await asyncio.to_thread(import_file, self.workspace.store, path)
        except ImportProblem as exc:
            self.notify(f"Nothing imported: {exc}", severity="error", timeout=10)
            return
        except Exception as exc:  # a bug or an I/O failure: the store rolled back
            log.error("%s", exc, exc_info=exc)
            self.notify(f"Nothing imported: {exc}", severity="error", timeout=10)
            return
        rejected = "".join(f"\n{r.reason}" for r in report.rejected[:3])
        self.notify(
            f"{report.summary()}.{rejected}",
            severity="warning" if report.partial else "information",
            timeout=10 if report.partial else 5,
        )
        done = [c for c in report.chats if c.status != "unchanged"]
        if done:
            await self.open_chat(done[0].session_id)
