"""`MemoryViews`: what the model carries, opened from the main screen — a block's
inspector (enter on a gauge) and the next request (F2, or enter on the context
gauge).

Both read the chat's facts (`Workspace.facts`, kept by the `ChatPane`): the
blocks the sidebar draws, and the prompt and tools the sidebar's context figure
counts, so the three always agree. The inspector reads a block's write history
fresh; its edits belong to the branch on screen, as a reply's write would.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from store import StoredWrite

from ..core.workspace import ParamsError

if TYPE_CHECKING:
    from ..core.chat_state import ChatState
    from ..core.workspace import ChatFacts, WriteLine
    from .chat_pane import ChatPane

__all__ = ["MemoryViews"]

PARAMS_EXAMPLE = "# temperature = 0.7\n# max_tokens = 1000\n# top_p = 0.9\n"
"""The parameters editor's text for a chat with none (comments: saving it sets none)."""


class MemoryViews:
    """The memory inspector and the prompt screen for one `ChatPane`'s chat."""

    def __init__(self, pane: ChatPane) -> None:
        self.pane = pane

    async def open_block(self, label: str) -> None:
        """The memory inspector for one block, read fresh from its provider."""
        from .screens.memory import BlockScreen  # its screen's modules load then

        pane = self.pane
        facts, chat = pane.facts, pane.chat
        if facts is None:
            return
        leaf = chat.active_leaf if chat is not None else None
        session = chat.session if chat is not None else None
        blocks = await session.load_context(at=leaf) if session is not None else facts.blocks
        block = next((b for b in blocks if b.label == label), None)
        if block is None:
            pane.notify(f"No block {label!r} in this chat.", severity="warning")
            return
        details = pane.workspace.block_details(block, facts)
        writes = session.block_history(label) if session is not None else []

        def lines(history: list[StoredWrite]) -> list[WriteLine]:
            assert chat is not None
            return pane.workspace.write_lines(chat, history, leaf)

        async def revert(seq: int) -> tuple[str, list[WriteLine]]:
            assert session is not None
            session.revert_block_write(label, seq)
            blocks = await session.load_context(at=leaf)
            content = next((b.content for b in blocks if b.label == label), "")
            return content, lines(session.block_history(label))

        async def save(label: str, content: str) -> object:
            assert session is not None  # only stored chats are editable
            # The edit belongs to the branch on screen, as a reply's write would.
            return await session.replace_context_block(label, content, at=leaf, origin="user")

        async def closed(saved: bool | None) -> None:
            if saved:
                await pane.remeasure((label,))
                pane.notify(f"{label} changed: the next reply's prompt carries it.")

        pane.app.push_screen(
            BlockScreen(
                details,
                save if session else None,
                writes=lines(writes) if writes else None,
                revert=revert if details.editable else None,
            ),
            closed,
        )

    def show_prompt(self) -> None:
        """The exact system prompt, parameters and tools the next request of this chat
        carries; `e` and `p` there open their editors."""
        from .screens.prompt import PromptScreen

        pane = self.pane
        facts = pane.facts
        if pane.chat is None or facts is None:
            pane.notify("A new chat has no request yet: send a first message.", timeout=4)
            return

        def chosen(which: str | None) -> None:
            if which == "prompt":
                self.edit_prompt()
            elif which == "params":
                self.edit_params()

        params = pane.workspace.params_text(facts.params)
        pane.app.push_screen(PromptScreen(facts.request, facts.usage, params), chosen)

    def edit_prompt(self) -> None:
        """Rewrite this chat's system prompt (its soul), from the branch on screen on."""
        pane = self.pane
        workspace = pane.workspace

        async def write(chat: ChatState, facts: ChatFacts, text: str) -> None:
            await workspace.set_chat_prompt(chat, facts, text)

        async def saved(text: str | None) -> None:
            if text is not None:
                await pane.remeasure()
                pane.notify("This chat's prompt changed: the next reply is written with it.")

        self._edit_text(
            "Send a first message, then edit this chat's prompt.",
            "System prompt of this chat (the branch on screen and what grows from it)",
            workspace.chat_prompt,
            write,
            closed=saved,
        )

    def edit_params(self) -> None:
        """Set this chat's parameters (temperature, max_tokens, top_p, ...)."""
        pane = self.pane
        workspace = pane.workspace

        async def write(chat: ChatState, facts: ChatFacts, text: str) -> None:
            info = await workspace.set_chat_params(chat.session_id, text)
            pane.renamed(info)  # the facts (F2, the next request) follow the row
            params = workspace.chat_params(info)
            shown = ", ".join(f"{k} = {v}" for k, v in params.items()) or "none"
            pane.notify(f"Parameters of this chat: {shown}.")

        self._edit_text(
            "Send a first message, then set this chat's parameters.",
            "Parameters of this chat: name = value lines (any LiteLLM parameter)",
            lambda facts: workspace.params_text(facts.params) or PARAMS_EXAMPLE,
            write,
            hint="enter saves · ctrl+j new line · no lines: the provider's defaults · "
            "escape cancels",
        )

    def _edit_text(
        self,
        unsent: str,
        title: str,
        current: Callable[[ChatFacts], str],
        write: Callable[[ChatState, ChatFacts, str], Awaitable[None]],
        *,
        hint: str = "",
        closed: Callable[[str | None], Awaitable[None]] | None = None,
    ) -> None:
        """One of this chat's settings, edited as text: `unsent` is said instead for a
        chat not stored yet; a `ParamsError` from `write` keeps the editor open with
        the reason."""
        from .screens.dialogs import TextPrompt

        pane = self.pane
        chat, facts = pane.chat, pane.facts
        if chat is None or facts is None:
            pane.notify(unsent, timeout=4)
            return

        async def save(text: str) -> str | None:
            try:
                await write(chat, facts, text)
            except ParamsError as exc:
                return f"Not saved: {exc}."
            return None

        pane.app.push_screen(
            TextPrompt(title, current(facts), multiline=True, hint=hint, check=save), closed
        )
