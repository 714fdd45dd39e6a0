"""`MemoryViews`: what the model carries, opened from the main screen — a block's
inspector (enter on a gauge) and the next request (F2, or enter on the context
gauge).

Both read the chat's facts (`Workspace.facts`, kept by the `ChatPane`): the
blocks the sidebar draws, and the prompt and tools the sidebar's context figure
counts, so the three always agree. The inspector reads a block's write history
fresh; its edits belong to the branch on screen, as a reply's write would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from store import StoredWrite

if TYPE_CHECKING:
    from ..core.workspace import WriteLine
    from .chat_pane import ChatPane

__all__ = ["MemoryViews"]


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
        """The exact system prompt and tools the next request of this chat carries."""
        from .screens.prompt import PromptScreen

        pane = self.pane
        if pane.chat is None or pane.facts is None:
            pane.notify("A new chat has no request yet: send a first message.", timeout=4)
            return
        pane.app.push_screen(PromptScreen(pane.facts.request, pane.facts.usage))
