"""The main screen's commands: its keys (new chat, chats, search, model) and the
command palette's entries (ctrl+p), as a provider in the screen's `COMMANDS`.

`ChatCommands` is composed by `MainScreen`: each command works on the chat the
screen's `ChatPane` shows, through the workspace; long work (compaction,
imports) runs in the screen's workers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from textual.command import DiscoveryHit, Hit, Hits, Provider

from ...core.workspace import (
    AttachRefused,
    ImportFailed,
    ParamsError,
    PersonaConfig,
    TemplateConfig,
)

if TYPE_CHECKING:
    from textual.app import App

    from ..chat_pane import ChatPane
    from ..memory_views import MemoryViews
    from .search import SearchHit

__all__ = ["ChatCommands", "ChatCommandsProvider", "Host"]


class Host(Protocol):
    """What the commands use of the screen that composes them (`MainScreen`, named here
    rather than imported: the screen imports this module)."""

    @property
    def app(self) -> App[Any]: ...
    @property
    def pane(self) -> ChatPane: ...
    async def action_new_chat(self) -> None: ...
    def show_search_hit(self, message_id: str) -> None: ...
    def toggle_sidebar(self) -> None: ...
    def toggle_tree(self) -> None: ...
    @property
    def memory(self) -> MemoryViews: ...


log = logging.getLogger(__name__)

Entry = tuple[str, str, Callable[[], Any]]
FORMAT_NAMES = {"md": "Markdown", "json": "JSON", "html": "HTML"}


class ChatCommands:
    """The keys and palette commands of one `MainScreen`."""

    def __init__(self, screen: Host) -> None:
        self.screen = screen

    @property
    def pane(self) -> ChatPane:
        return self.screen.pane

    def notify(self, message: str, **kwargs: Any) -> None:
        self.screen.app.notify(message, **kwargs)

    # -- keys -----------------------------------------------------------------------

    async def new_chat(self) -> None:
        """A new chat; with personas configured, pick one first; with agents, which
        agent runs it."""
        workspace = self.pane.workspace
        personas = workspace.personas()
        if not personas:
            await self.pick_agent(None)
            return
        from .persona_picker import PersonaPicker

        async def chosen(choice: str | None) -> None:
            if choice is None:
                return
            if not choice:
                await self.pick_agent(None)
                return
            try:
                persona = await workspace.check_persona(choice)
            except ParamsError as exc:
                self.notify(f"Cannot start that persona: {exc}.", severity="error", timeout=8)
                return
            await self.pick_agent(persona)

        self.screen.app.push_screen(PersonaPicker(personas), chosen)

    async def pick_agent(self, persona: PersonaConfig | None) -> None:
        agents = self.pane.workspace.agents()
        if not agents:
            await self.start_new_chat(None, persona)
            return
        from .agent_picker import AgentPicker

        async def chosen(choice: str | None) -> None:
            if choice is not None:
                await self.start_new_chat(choice or None, persona)

        self.screen.app.push_screen(AgentPicker(agents), chosen)

    async def start_new_chat(
        self, agent_id: str | None, persona: PersonaConfig | None = None
    ) -> None:
        """A new chat running `agent_id`, on the default model (`facts.choose_model`:
        the agent's, else --model, else the config's; never the last chat's), or as
        `persona` (its model, prompt, parameters and tools)."""
        pane = self.pane
        model = pane.workspace.persona_model(persona, agent_id) if persona else None
        await pane.open_chat(None, agent_id=agent_id, model=model, persona=persona)
        who = f" as {persona.name}" if persona else ""
        self.notify(f"New chat{who} — it is saved when you send the first message.", timeout=3)

    def chats(self) -> None:
        from .chat_list import ChatListScreen  # modal screens load on first use

        pane = self.pane

        async def chosen(session_id: str | None) -> None:
            current = pane.session_id
            if session_id is not None and session_id != current:
                await pane.open_chat(session_id)
            elif current is not None and pane.workspace.chat(current) is None:
                await pane.open_chat(None)  # the open chat was deleted in the list
            else:
                await pane.redraw()

        self.screen.app.push_screen(ChatListScreen(pane.workspace, pane.session_id), chosen)

    def search(self) -> None:
        from .search import SearchScreen

        async def chosen(hit: SearchHit | None) -> None:
            if hit is not None:
                await self.pane.open_chat(hit.session_id, reveal=hit.message_id)
                self.screen.show_search_hit(hit.message_id)

        self.screen.app.push_screen(SearchScreen(self.pane.workspace), chosen)

    def choose_model(self) -> None:
        from .model_picker import ModelPicker

        pane = self.pane

        async def chosen(model: str | None) -> None:
            if not model:
                return
            if pane.chat is not None:
                pane.renamed(pane.workspace.set_chat_model(pane.chat.session_id, model))
            else:
                pane.draft_model = model
            pane.model_chosen(model)
            await pane.model_facts_ready()
            self.notify(f"Model: {model}")

        choices = pane.workspace.model_choices(pane.model, pane.recent_models)
        self.screen.app.push_screen(ModelPicker(pane.model, choices), chosen)

    def attach(self) -> None:
        """Ask for a file to attach to the next message (refusals say why)."""
        from .dialogs import TextPrompt

        pane = self.pane

        def done(answer: str | None) -> None:
            if not answer or not answer.strip():
                return
            # A path pasted in quotes or as file://… (as terminals paste a dropped file).
            path = pane.workspace.pasted_path(answer) or answer.strip()
            if pane.attach_path(str(path)):
                pane.chat_input.focus()

        self.screen.app.push_screen(
            TextPrompt(
                "Attach an image (PNG, JPEG, GIF, WebP) or a text file",
                "",
                hint="a path · enter attaches · escape cancels · pasting a path into the "
                "message box attaches it too",
            ),
            done,
        )

    def help(self) -> None:
        from .help import HelpScreen

        if not isinstance(self.screen.app.screen, HelpScreen):
            keymap = getattr(self.screen.app, "keys_in_force", {})
            self.screen.app.push_screen(HelpScreen(keymap))

    # -- the palette ----------------------------------------------------------------

    def entries(self) -> Iterator[Entry]:
        """(title, help, callback) of each command the palette offers now."""
        screen = self.screen
        yield "New chat", "Start a new chat (ctrl+n)", screen.action_new_chat
        yield "Chats", "List, open, rename, delete chats (ctrl+s)", self.chats
        yield "Search", "Search every chat (ctrl+f)", self.search
        yield "Model", "Choose the model for this chat (ctrl+l)", self.choose_model
        yield (
            "Attach a file",
            "An image or a text file for the next message (ctrl+o; or paste its path)",
            self.attach,
        )
        if self.pane.chat is not None:
            yield (
                "Compact now",
                "Summarise the middle of this chat to free context (the originals stay)",
                self.compact_now,
            )
            yield "Rename chat", "Give this chat a new name", self.rename_chat
            yield (
                "Edit system prompt",
                "Rewrite this chat's prompt (its soul) from the branch on screen on",
                self.screen.memory.edit_prompt,
            )
            yield (
                "Chat parameters",
                "Temperature, max_tokens, top_p or any LiteLLM parameter, for this chat",
                self.screen.memory.edit_params,
            )
            yield (
                "Export chat as Markdown",
                "The branch on screen, as a Markdown file (other branches are listed)",
                partial(self.export_current, "md"),
            )
            yield (
                "Export chat as JSON",
                "The whole tree, every branch, as chatui JSON (import it back with "
                "`chatui import`)",
                partial(self.export_current, "json"),
            )
            yield (
                "Export chat as HTML",
                "One page to show anyone: every branch, the tree as a clickable graph, "
                "attachments inside (no network)",
                partial(self.export_current, "html"),
            )
            yield (
                "Move chat to project",
                "Group this chat under a project (created if new); an empty name takes it out",
                self.move_to_project,
            )
            yield (
                "Delete chat",
                "Move this chat to the deleted chats (restore it from the chat list)",
                self.delete_chat,
            )
        yield (
            "Import chats",
            "From a ChatGPT export, a chatui export, Pi session files or an llm logs database",
            self.ask_import,
        )
        yield from self.tool_entries()
        yield "Toggle sidebar", "Show or hide the context sidebar (ctrl+b)", screen.toggle_sidebar
        yield "Toggle tree", "Show or hide the message tree (ctrl+t focuses it)", screen.toggle_tree
        for template in self.pane.workspace.templates():
            yield (
                f"Use template: {template.name}",
                template.description or template.text[:80],
                partial(self.use_template, template),
            )
        yield "Keys", "Every key chatui answers to (F1)", self.help

    def tool_entries(self) -> Iterator[Entry]:
        """The MCP servers, on or off in the chat on screen; their prompts as templates."""
        workspace = self.pane.workspace
        chat = self.pane.chat
        session_id = chat.session_id if chat is not None else None
        if chat is not None:
            for server in workspace.tool_servers(session_id):
                state = server.state if not server.problem else f"{server.state}: {server.problem}"
                count = len(server.tools)
                tools = (
                    f"{count} tool{'s' if count != 1 else ''}" if server.state == "ready" else state
                )
                if server.enabled:
                    title = f"Tools: turn off {server.name}"
                    what = f"The model stops seeing {server.name}'s tools in this chat"
                else:
                    title = f"Tools: turn on {server.name}"
                    what = f"The model may call {server.name}'s tools in this chat"
                yield (
                    title,
                    f"{what} ({server.where} · {tools})",
                    partial(self.set_tool_server, server.name, not server.enabled),
                )
        for server_name, name, description in workspace.tool_prompts(session_id):
            yield (
                f"Use template: {server_name}/{name}",
                f"MCP prompt of {server_name}, filled into the input"
                + (f": {description}" if description else ""),
                partial(self.use_prompt, server_name, name),
            )

        for server_name, uri, name, description in workspace.tool_resources(session_id):
            yield (
                f"Attach resource: {server_name}/{name}",
                f"MCP resource {uri}, attached to the next message like a file"
                + (f": {description}" if description else ""),
                partial(self.attach_resource, server_name, uri, name),
            )

    # -- palette commands ----------------------------------------------------------------

    def attach_resource(self, server: str, uri: str, name: str) -> None:
        self.screen.app.run_worker(
            self._attach_resource(server, uri, name), group="mcp-resource", exit_on_error=False
        )

    async def _attach_resource(self, server: str, uri: str, name: str) -> None:
        try:
            attached = await self.pane.workspace.attach_resource(server, uri, name)
        except AttachRefused as exc:
            self.notify(str(exc), title="Not attached", severity="error", timeout=8)
            return
        self.pane.attach(attached)

    def use_template(self, template: TemplateConfig) -> None:
        """Fill the template's variables in a small form, then send the text."""
        from .template_form import TemplateForm

        pane = self.pane

        def filled(text: str | None) -> None:
            if text is None:
                return
            if pane.generating:
                self.notify("Still replying — press escape to cancel first.", severity="warning")
                return
            pane.start_turn("send", text=text)

        if not template.variables:
            filled(template.fill({}))
            return
        self.screen.app.push_screen(TemplateForm(template), filled)

    async def set_tool_server(self, server: str, on: bool) -> None:
        pane = self.pane
        if pane.chat is None:
            return
        pane.workspace.set_tool_server(pane.chat.session_id, server, on)
        await pane.remeasure()  # the gauge counts the tools the next request offers
        self.notify(f"{server}: {'on' if on else 'off'} in this chat.", timeout=3)

    def use_prompt(self, server: str, name: str) -> None:
        self.screen.app.run_worker(
            self._use_prompt(server, name), group="mcp-prompt", exit_on_error=False
        )

    async def _use_prompt(self, server: str, name: str) -> None:
        """Ask for the prompt's arguments one by one, then put its text in the input box
        (nothing is sent: the person reads it, edits it, sends it)."""
        from .dialogs import TextPrompt

        workspace = self.pane.workspace
        values: dict[str, str] = {}
        for argument, required in workspace.prompt_arguments(server, name):
            hint = "required · enter sets · escape cancels" if required else "optional"
            value = await self.screen.app.push_screen_wait(
                TextPrompt(f"{server}/{name}: {argument}", hint=hint)
            )
            if value is None:
                return
            if value.strip() or required:
                values[argument] = value
        try:
            text = await workspace.fill_prompt(server, name, values)
        except RuntimeError as exc:
            self.notify(f"The prompt {server}/{name} failed: {exc}", severity="error")
            return
        chat_input = self.pane.chat_input
        chat_input.text = text
        chat_input.focus()

    def compact_now(self) -> None:
        self.screen.app.run_worker(
            self._compact(), exclusive=True, group="compact", exit_on_error=False
        )

    async def _compact(self) -> None:
        pane = self.pane
        chat = pane.chat
        if chat is None:
            return
        if pane.generating:
            self.notify("Wait for the reply to finish first.", severity="warning")
            return
        self.notify("Compacting…")
        try:
            result = await pane.workspace.compact(chat.session_id, chat.active_leaf)
        except Exception as exc:
            log.error("%s", exc, exc_info=exc)
            self._compacting_over()
            self.notify(f"Compaction failed: {exc}. Nothing was changed.", severity="error")
            return
        self._compacting_over()
        if result is None:
            self.notify(
                "Nothing to compact: the chat's first messages and its latest ones are kept "
                "whole, and nothing lies between them."
            )
        else:
            self.notify(
                "Compacted: the summary stands in for the middle of the chat; expand "
                "it to see the originals."
            )
        await pane.redraw()

    def _compacting_over(self) -> None:
        """What came of it takes the place of "Compacting…" (at 80×24 the two stacked
        covered the chat's last lines and the input). Queued as the notices are: a
        notice is added when the app handles its message, and a quick result cleared
        the notices before "Compacting…" was among them."""
        app = self.screen.app
        app.call_later(app.clear_notifications)

    def rename_chat(self) -> None:
        from .dialogs import TextPrompt

        pane = self.pane
        chat = pane.chat
        if chat is None:
            return

        def done(name: str | None) -> None:
            if name and name.strip():
                pane.renamed(pane.workspace.rename_chat(chat.session_id, name))

        self.screen.app.push_screen(TextPrompt("Rename chat", pane.name), done)

    def move_to_project(self) -> None:
        from .dialogs import TextPrompt

        pane = self.pane
        chat, info = pane.chat, pane.facts.info if pane.facts else None
        if chat is None:
            return
        projects = pane.workspace.projects()
        current = next((p.name for p in projects if info and p.id == info.project_id), "")
        known = ", ".join(p.name for p in projects[:8])

        def done(answer: str | None) -> None:
            if answer is None:
                return
            project = pane.workspace.move_to_project(chat.session_id, answer.strip() or None)
            if project is None:
                self.notify("The chat is in no project now.")
            else:
                self.notify(f"Moved to project {project.name!r}.")

        hint = f"projects: {known} · " if known else ""
        self.screen.app.push_screen(
            TextPrompt(
                "Move chat to project", current, hint=f"{hint}enter moves · empty = no project"
            ),
            done,
        )

    async def delete_chat(self) -> None:
        pane = self.pane
        if pane.chat is None:
            return
        info = await pane.workspace.delete_chat(pane.chat.session_id)  # its reply stored first
        self.notify(f"Deleted {info.name!r} — restore it from the chat list (ctrl+s, t).")
        newest = pane.workspace.newest_chat()
        await pane.open_chat(newest.id if newest else None)

    def export_current(self, fmt: str) -> None:
        from .dialogs import TextPrompt

        pane = self.pane
        chat = pane.chat
        if chat is None:
            return
        suggested = pane.workspace.export_path(pane.name, fmt)

        def done(answer: str | None) -> None:
            if not answer or not answer.strip():
                return
            try:
                written = pane.workspace.export_chat(
                    chat.session_id, Path(answer.strip()), fmt, chat.active_leaf
                )
            except OSError as exc:
                self.notify(
                    f"Could not write {answer.strip()}: {exc.strerror or exc}", severity="error"
                )
                return
            self.notify(f"Exported to {written}")

        self.screen.app.push_screen(
            TextPrompt(f"Export as {FORMAT_NAMES[fmt]} to", str(suggested)),
            done,
        )

    def ask_import(self) -> None:
        from .dialogs import TextPrompt

        def done(answer: str | None) -> None:
            if answer and answer.strip():
                self.screen.app.run_worker(
                    self._import(Path(answer.strip())),
                    exclusive=True,
                    group="import",
                    exit_on_error=False,
                )

        self.screen.app.push_screen(
            TextPrompt(
                "Import chats from a file or folder",
                "",
                hint="ChatGPT's conversations.json, a chatui export, a Pi session file or "
                "folder, llm's logs.db · enter imports · escape cancels",
            ),
            done,
        )

    async def _import(self, path: Path) -> None:
        self.notify(f"Importing {path}…")
        try:
            report = await self.pane.workspace.import_chats(path)
        except ImportFailed as exc:
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
            await self.pane.open_chat(done[0].session_id)


class ChatCommandsProvider(Provider):
    """The main screen's entries in the command palette (Textual's own follow)."""

    def _entries(self) -> list[Entry]:
        commands = getattr(self.screen, "commands", None)
        return list(commands.entries()) if isinstance(commands, ChatCommands) else []

    async def discover(self) -> Hits:
        for title, help_text, callback in self._entries():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._entries():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)
