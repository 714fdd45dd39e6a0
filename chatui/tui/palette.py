"""The command palette's commands (ctrl+p): what has no key of its own.

A mixin of `ChatApp`, kept apart so the app module stays composition and
routing. Each command works on the open chat through the same services the
keys use; long work (compaction, imports) runs in workers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.app import SystemCommand
from textual.screen import Screen

from ..transfers import ImportProblem, default_export_path, export_chat, import_file

if TYPE_CHECKING:
    from .app import ChatApp

__all__ = ["PaletteCommands"]


class PaletteCommands:
    """Commands of the palette; mixed into `ChatApp`."""

    def chat_commands(self: ChatApp, screen: Screen[object]) -> Iterable[SystemCommand]:
        main = self.main
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
    async def compact_now(self: ChatApp) -> None:
        main = self.main
        if main.chat is None:
            return
        if main.generating:
            self.notify("Wait for the reply to finish first.", severity="warning")
            return
        self.notify("Compacting…")
        try:
            result = await self.engine_for(main.chat.session_id).compact(
                main.chat.session_id, main.chat.active_leaf
            )
        except Exception as exc:
            self.log_error(exc)
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

    def rename_chat(self: ChatApp) -> None:
        from .screens.dialogs import TextPrompt

        main = self.main
        if main.chat is None:
            return
        chat = main.chat

        def done(name: str | None) -> None:
            if name and name.strip():
                self.manager.rename(chat.session_id, name)
                main.update_title()

        self.push_screen(TextPrompt("Rename chat", chat.info.name), done)

    def move_to_project(self: ChatApp) -> None:
        from .screens.dialogs import TextPrompt

        main = self.main
        if main.chat is None:
            return
        chat = main.chat
        projects = self.manager.list_projects()
        current = next((p.name for p in projects if p.id == chat.info.project_id), "")
        known = ", ".join(p.name for p in projects[:8])

        def done(answer: str | None) -> None:
            if answer is None:
                return
            name = answer.strip()
            if not name:
                self.manager.move_to_project(chat.session_id, None)
                self.notify("The chat is in no project now.")
                return
            project = next((p for p in projects if p.name.lower() == name.lower()), None)
            if project is None:
                project = self.manager.create_project(name)
            self.manager.move_to_project(chat.session_id, project.id)
            self.notify(f"Moved to project {project.name!r}.")

        hint = f"projects: {known} · " if known else ""
        self.push_screen(
            TextPrompt(
                "Move chat to project", current, hint=f"{hint}enter moves · empty = no project"
            ),
            done,
        )

    async def delete_chat(self: ChatApp) -> None:
        main = self.main
        if main.chat is None:
            return
        info = self.manager.delete(main.chat.session_id)
        self.notify(f"Deleted {info.name!r} — restore it from the chat list (ctrl+s, t).")
        recent = self.manager.list(limit=1)
        await main.open_chat(recent[0].id if recent else None)

    def export_current(self: ChatApp, fmt: str) -> None:
        from .screens.dialogs import TextPrompt

        main = self.main
        if main.chat is None:
            return
        chat = main.chat
        suggested = default_export_path(chat.info.name, fmt)

        def done(answer: str | None) -> None:
            if not answer or not answer.strip():
                return
            try:
                written = export_chat(
                    self.manager, chat.session_id, Path(answer.strip()), fmt, chat.active_leaf
                )
            except OSError as exc:
                self.notify(
                    f"Could not write {answer.strip()}: {exc.strerror or exc}", severity="error"
                )
                return
            self.notify(f"Exported to {written}")

        self.push_screen(
            TextPrompt(f"Export as {'Markdown' if fmt == 'md' else 'JSON'} to", str(suggested)),
            done,
        )

    def ask_import(self: ChatApp) -> None:
        from .screens.dialogs import TextPrompt

        def done(answer: str | None) -> None:
            if answer and answer.strip():
                self.run_import(Path(answer.strip()))

        self.push_screen(
            TextPrompt(
                "Import chats from (conversations.json, a chatui export, "
                "a Pi session file or folder, llm's logs.db)",
                "",
            ),
            done,
        )

    @work(exclusive=True, group="import", exit_on_error=False)
    async def run_import(self: ChatApp, path: Path) -> None:
        self.notify(f"Importing {path}…")
        try:
            outcomes = await asyncio.to_thread(import_file, self.store, path)
        except ImportProblem as exc:
            self.notify(f"Nothing imported: {exc}", severity="error", timeout=10)
            return
        except Exception as exc:  # a bug or an I/O failure: the store rolled back
            self.log_error(exc)
            self.notify(f"Nothing imported: {exc}", severity="error", timeout=10)
            return
        done = [o for o in outcomes if o.imported]
        skipped = len(outcomes) - len(done)
        note = f" ({skipped} already here)" if skipped else ""
        self.notify(f"Imported {len(done)} chat{'s' if len(done) != 1 else ''}{note}.")
        if done:
            await self.main.open_chat(done[0].session_id)
