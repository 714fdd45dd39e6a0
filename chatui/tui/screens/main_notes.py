"""The main screen's "what we tried" notes: when the shown branch moves to a sibling,
the branch left behind may get a short note by the compaction model (config
`branch_notes`: off, ask, always), shown collapsed at the branch point.

A mixin of `MainScreen`; the headless part is `chatui.core.branch_notes`.
"""

from __future__ import annotations

import logging

from ... import llm
from ...core.branch_notes import LeftBranch, left_branch, stored_notes, write_note

__all__ = ["BranchNotesMixin"]

log = logging.getLogger(__name__)


class BranchNotesMixin:
    """Handlers by naming convention, as the other mixins (`@on` does not register here)."""

    def note_left_branch(self, before: str | None) -> None:
        """The shown branch moved from leaf `before`: note the branch left, as configured."""
        mode = self.workspace.config.branch_notes
        chat = self.chat
        if mode == "off" or chat is None:
            return
        left = left_branch(chat.session, before, chat.active_leaf, stored_notes(chat.info.metadata))
        if left is None:
            return
        if mode == "always":
            self._start_note(chat.session_id, left)
            return
        from .dialogs import Confirm

        def answered(yes: bool | None) -> None:
            if yes:
                self._start_note(chat.session_id, left)

        self.app.push_screen(
            Confirm(
                "Write a short note of what was tried on the branch you left?",
                yes="Write it",
                no="No",
            ),
            answered,
        )

    def _start_note(self, session_id: str, left: LeftBranch) -> None:
        self.notify("Writing a note of the branch you left…", timeout=3)
        self.run_worker(self._write_note(session_id, left), group=f"note:{session_id}")

    async def _write_note(self, session_id: str, left: LeftBranch) -> None:
        workspace = self.workspace
        try:
            await write_note(
                workspace.manager,
                workspace.config,
                session_id,
                workspace.model_of(session_id),
                left,
            )
        except llm.LLMError as error:
            self.notify(f"No note written: {error.title}. {error.hint}", severity="warning")
            return
        except Exception as exc:  # a note is a nicety: say so, lose nothing
            log.warning("branch note failed", exc_info=True)
            self.notify(f"No note written: {llm.redact(str(exc))}", severity="warning")
            return
        if self.session_id == session_id:
            await self.redraw()
        self.notify("Noted what was tried on the branch you left (at the branch point).")
