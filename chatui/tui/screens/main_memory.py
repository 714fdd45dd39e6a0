"""The main screen's memory views: enter on a gauge, F2 for the next request, and the
originals behind a compaction summary (enter on it, or a search hit inside it).

A mixin of `MainScreen`. Everything it reads about the open chat (its
session, agent, block configuration, engine) goes through `_memory_source`,
the one place to reroute when screens get their data from a service.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from store import AgentInfo, ContextBlock, Session, StoredWrite
from widgets import TokenGauge

from ...core.agents import agent_blocks
from ...core.config import BlockConfig

if TYPE_CHECKING:
    from ...core.engine import ChatEngine
    from ...core.inspection import WriteLine

__all__ = ["MemoryMixin"]


@dataclass
class _Source:
    session: Session | None
    chat_name: str | None
    agent: AgentInfo | None
    blocks: tuple[BlockConfig, ...]
    engine: ChatEngine | None


class MemoryMixin:
    """Memory inspector and prompt screen for `MainScreen` (handlers by naming convention:
    `@on` does not register in a mixin)."""

    def _memory_source(self) -> _Source:
        runtime = self.workspace.runtime
        if self.chat is None:
            agent = runtime.agent(self.draft_agent)
            session, name, engine = None, None, None
        else:
            info = self.chat.info
            agent = runtime.agent(info.agent_id)
            session, name = self.chat.session, info.name
            engine = self.workspace.runtime.engine_for(info.id)
        blocks = (
            agent_blocks(agent, self.workspace.config) if agent else self.workspace.config.blocks
        )
        return _Source(session, name, agent, blocks, engine)

    async def on_token_gauge_opened(self, event: TokenGauge.Opened) -> None:
        event.stop()
        if event.gauge.id == "conversation-gauge":
            await self.action_show_prompt()
        else:
            await self.open_block(event.label)

    async def open_block(self, label: str) -> None:
        """The memory inspector for one block, read fresh from its provider."""
        from ...core.inspection import block_details, write_lines  # its screen's: loaded then
        from .memory import BlockScreen

        source = self._memory_source()
        leaf = self.chat.active_leaf if self.chat is not None else None
        blocks: list[ContextBlock] = (
            await source.session.load_context(at=leaf) if source.session else self.sidebar.blocks
        )
        block = next((b for b in blocks if b.label == label), None)
        if block is None:
            self.notify(f"No block {label!r} in this chat.", severity="warning")
            return
        config = next((b for b in source.blocks if b.label == label), None)
        details = block_details(block, config, chat_name=source.chat_name, agent=source.agent)
        session = source.session
        writes = session.block_history(label) if session is not None else []

        def lines(history: list[StoredWrite]) -> list[WriteLine]:
            assert self.chat is not None
            on_path = {m.id for m in self.chat.session.get_raw_history(leaf)} if leaf else set()
            names = self.workspace.manager.names({w.session_id for w in history if w.session_id})
            return write_lines(history, chat_id=self.chat.session_id, on_path=on_path, names=names)

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
                await self.refresh_sidebar()
                self.notify(f"{label} changed: the next reply's prompt carries it.")

        self.app.push_screen(
            BlockScreen(
                details,
                save if session else None,
                writes=lines(writes) if writes else None,
                revert=revert if details.editable else None,
            ),
            closed,
        )

    async def action_show_prompt(self) -> None:
        """The exact system prompt and tools the next request of this chat carries."""
        from ...core.inspection import next_request
        from .prompt import PromptScreen

        source = self._memory_source()
        if source.session is None or source.engine is None:
            self.notify("A new chat has no request yet: send a first message.", timeout=4)
            return
        leaf = self.chat.active_leaf if self.chat is not None else None
        request = await next_request(source.engine, source.session, self.model, at=leaf)
        self.app.push_screen(PromptScreen(request))

    # -- compaction originals ----------------------------------------------------------

    def show_originals(self, summary_id: str, hit: str | None = None) -> bool:
        """Open the messages a summary covers (at `hit`); False when it covers none."""
        from .originals import OriginalsScreen

        covered = self.snapshot.covered.get(summary_id) if self.snapshot else None
        if not covered:
            return False
        self.app.push_screen(OriginalsScreen(covered, hit=hit))
        return True

    async def show_search_hit(self, message_id: str) -> None:
        """After a search opened this chat at a hit: mark it in the tree, and when a
        summary hides it, open the originals at it."""
        self.tree.mark_hit(message_id)
        if self.snapshot is None or self.chat_view.view_for(message_id) is not None:
            return
        for summary_id, covered in self.snapshot.covered.items():
            if any(m.id == message_id for m in covered):
                self.show_originals(summary_id, hit=message_id)
                return
