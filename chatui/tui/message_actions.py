"""`MessageActions`: what a key on a message does — regenerate, edit, fork, copy,
compare, move to a sibling branch, follow a peer hop, read a summary's originals —
and the note on a branch left behind.

Composed by `ChatPane` (the keys come from its message views, or from the tree
through the screen). Each action works on the pane's open chat through the
workspace; a move to another branch redraws the pane, which tells the screen.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from store import Message, UnknownMessageError, reply_state
from widgets import code_blocks

if TYPE_CHECKING:
    from textual.app import App

    from widgets import ChatView

    from ..core.chat_state import ChatSnapshot, ChatState
    from ..core.events import TurnKind
    from ..core.workspace import LeftBranch, PeerMarks, Workspace

__all__ = ["MessageActions", "Pane"]


class Pane(Protocol):
    """What the actions use of the pane that composes them (`ChatPane`, named here rather
    than imported: the pane imports this module)."""

    workspace: Workspace
    chat: ChatState | None
    snapshot: ChatSnapshot | None
    marks: PeerMarks
    recent_models: list[str]

    @property
    def app(self) -> App[Any]: ...
    @property
    def chat_view(self) -> ChatView: ...
    @property
    def name(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def generating(self) -> bool: ...
    @property
    def session_id(self) -> str | None: ...
    async def open_chat(self, session_id: str | None, *, reveal: str | None = None) -> None: ...
    async def redraw(self) -> None: ...
    def model_chosen(self, model: str) -> None: ...
    def start_turn(
        self,
        kind: TurnKind,
        *,
        message_id: str | None = None,
        text: str = "",
        model: str | None = None,
    ) -> None: ...


BRANCHING = ("regenerate", "regenerate_with", "edit", "fork", "continue")


class MessageActions:
    """The actions on the messages of one `ChatPane`'s chat."""

    def __init__(self, pane: Pane) -> None:
        self.pane = pane
        self._copy_cycle: tuple[str, int, float] | None = None

    async def act(self, message_id: str, action: str) -> str | None:
        """Run `action` on a message of the open chat; returns the sibling a move to
        another branch landed on (the tree puts its cursor there), else None."""
        pane = self.pane
        chat = pane.chat
        if chat is None:
            return None
        if message_id.startswith("compaction_"):
            if action == "originals" and self.show_originals(message_id):
                return None
            pane.app.notify("That is a summary: enter opens the messages it covers.")
            return None
        message = chat.session.get_message(message_id)
        if message is None:
            pane.app.notify("That message no longer exists.", severity="warning")
            return None
        if action in BRANCHING and pane.generating:
            # A fork would copy a half-written reply: like a regenerate, it waits.
            pane.app.notify("Still replying — press escape to cancel first.", severity="warning")
            return None
        if action == "goto":
            await self.follow_hop(message_id)
        elif action == "regenerate":
            pane.start_turn("regenerate", message_id=message_id)
        elif action == "regenerate_with":
            self.regenerate_with(message_id)
        elif action == "continue":
            self.continue_reply(message)
        elif action == "edit":
            self.edit(message)
        elif action == "fork":
            await self.fork(message_id)
        elif action == "compare":
            self.compare(message)
        elif action == "copy":
            self.copy(message)
        elif action in ("previous", "next"):
            return await self.switch_sibling(message_id, -1 if action == "previous" else 1)
        return None

    # -- new branches -------------------------------------------------------------------

    def continue_reply(self, message: Message) -> None:
        """Continue a truncated or stopped reply (its continuation is appended to it)."""
        pane = self.pane
        state = reply_state(message)
        if state not in ("truncated", "cancelled", "interrupted") or not message.text.strip():
            pane.app.notify(
                "Only a truncated or stopped reply with text can be continued; "
                "ctrl+r writes a new one.",
                severity="warning",
            )
            return
        pane.start_turn("continue", message_id=message.id)

    def regenerate_with(self, message_id: str) -> None:
        """Pick a model, then regenerate the message with it (that reply only)."""
        from .screens.model_picker import ModelPicker

        pane = self.pane

        def chosen(model: str | None) -> None:
            if model:
                pane.model_chosen(model)
                pane.start_turn("regenerate", message_id=message_id, model=model)

        current = pane.model
        choices = pane.workspace.model_choices(current, pane.recent_models)
        pane.app.push_screen(
            ModelPicker(
                current, choices, title=f"Regenerate this reply with (the chat keeps {current})"
            ),
            chosen,
        )

    def edit(self, message: Message) -> None:
        from .screens.dialogs import TextPrompt

        pane = self.pane
        if message.role == "assistant":
            self.edit_reply(message)
            return
        if message.role != "user":
            pane.app.notify(
                "Only your messages and the model's replies can be edited.",
                severity="warning",
            )
            return

        def edited(text: str | None) -> None:
            if text is None or not text.strip():
                return
            if text == message.text:
                pane.app.notify("Unchanged — nothing to do.")
                return
            pane.start_turn("edit", message_id=message.id, text=text)

        pane.app.push_screen(
            TextPrompt(
                "Edit message — a new branch; the original stays",
                message.text,
                multiline=True,
            ),
            edited,
        )

    def edit_reply(self, message: Message) -> None:
        """Correct a model's reply: a sibling marked edited (the original kept), shown."""
        from ..core.workspace import EditRefused
        from .screens.dialogs import TextPrompt

        pane = self.pane
        chat = pane.chat
        assert chat is not None
        made: list[str] = []

        async def save(text: str) -> str | None:
            try:
                edited = await pane.workspace.edit_reply(chat, message.id, text)
            except EditRefused as exc:
                return f"Not saved: {exc}."
            made.append(edited.id)
            return None

        async def saved(text: str | None) -> None:
            if not made or pane.chat is not chat:
                return
            await pane.redraw()
            await pane.chat_view.reveal(made[0])
            pane.app.notify("Reply edited: a new branch marked edited; the original is kept.")

        pane.app.push_screen(
            TextPrompt(
                "Edit the reply — marked edited; the original stays",
                message.text,
                multiline=True,
                check=save,
            ),
            saved,
        )

    async def fork(self, message_id: str) -> None:
        pane = self.pane
        assert pane.chat is not None
        name = f"{pane.name} ⑂"
        info = await pane.workspace.fork_chat(pane.chat.session_id, message_id, name)
        await pane.open_chat(info.id)
        pane.app.notify(f"Forked into a new chat: {name}")

    # -- looking ------------------------------------------------------------------------

    def compare(self, message: Message) -> None:
        """Open the message beside its siblings; the one kept becomes the branch shown."""
        from .screens.compare import CompareScreen

        pane = self.pane
        chat = pane.chat
        assert chat is not None
        siblings = (
            chat.session.get_branches(message.parent_id)
            if message.parent_id
            else [m for m in chat.session.get_tree() if m.parent_id is None]
        )
        if len(siblings) < 2:
            pane.app.notify("No sibling to compare with: ctrl+r regenerates one.", timeout=3)
            return

        async def kept(message_id: str | None) -> None:
            if message_id is None or pane.chat is not chat:
                return
            before = chat.active_leaf
            chat.set_active(chat.session.latest_leaf_under(message_id))
            await pane.redraw()
            self.note_left_branch(before)
            await pane.chat_view.reveal(message_id)

        pane.app.push_screen(CompareScreen(siblings, message.id, pane.model), kept)

    def copy(self, message: Message) -> None:
        """Copy the message; again within 5 s: each of its code blocks in turn."""
        pane = self.pane
        text = message.text
        blocks = code_blocks(text)
        now = time.monotonic()
        cycle = self._copy_cycle
        if blocks and cycle and cycle[0] == message.id and now - cycle[2] < 5:
            index = (cycle[1] + 1) % (len(blocks) + 1)
        else:
            index = 0
        self._copy_cycle = (message.id, index, now)
        if index == 0:
            pane.app.copy_to_clipboard(text)
            more = " — press c again for its code block" if blocks else ""
            pane.app.notify(f"Copied the message{more}.")
        else:
            pane.app.copy_to_clipboard(blocks[index - 1])
            pane.app.notify(f"Copied code block {index} of {len(blocks)}.")

    async def follow_hop(self, message_id: str) -> None:
        """Open the other chat of a peer message, at the message on its side."""
        pane = self.pane
        target = pane.marks.targets.get(message_id)
        if target is None:
            pane.app.notify("This message did not cross to another chat.", timeout=3)
            return
        session_id, other = target
        if pane.workspace.chat(session_id) is None:
            pane.app.notify(
                "That chat was deleted (restore it from the chat list).", severity="warning"
            )
            return
        await pane.open_chat(session_id, reveal=other)

    def show_originals(self, summary_id: str, hit: str | None = None) -> bool:
        """Open the messages a summary covers (at `hit`); False when it covers none."""
        from .screens.originals import OriginalsScreen

        snap = self.pane.snapshot
        covered = snap.covered.get(summary_id) if snap else None
        if not covered:
            return False
        self.pane.app.push_screen(OriginalsScreen(covered, hit=hit))
        return True

    # -- moving between branches ----------------------------------------------------------

    async def switch_sibling(self, message_id: str, step: int) -> str | None:
        """Show the previous/next sibling's branch; returns that sibling's id."""
        pane = self.pane
        assert pane.chat is not None
        before = pane.chat.active_leaf
        try:
            target = pane.chat.switch_sibling(message_id, step)
        except UnknownMessageError:
            return None
        if target is None:
            pane.app.bell()
            pane.app.notify("No other branch that way.", timeout=2)
            return None
        await pane.redraw()
        self.note_left_branch(before)
        return target

    async def select_branch(self, message_id: str) -> bool:
        """Show the branch through `message_id` (the tree's enter); True when it moved."""
        pane = self.pane
        if pane.chat is None:
            return False
        before = pane.chat.active_leaf
        pane.chat.select(message_id)
        moved = pane.chat.active_leaf != before
        if moved:
            await pane.redraw()
            self.note_left_branch(before)
        await pane.chat_view.reveal(message_id, focus=False)
        return moved

    def note_left_branch(self, before: str | None) -> None:
        """The shown branch moved from leaf `before`: note the branch left, as configured
        (`branch_notes`: off, ask, always)."""
        pane = self.pane
        chat = pane.chat
        if chat is None:
            return
        left = pane.workspace.left_branch(chat, before)
        if left is None:
            return
        if pane.workspace.config.branch_notes == "always":
            self._start_note(chat.session_id, left)
            return
        from .screens.dialogs import Confirm

        def answered(yes: bool | None) -> None:
            if yes:
                self._start_note(chat.session_id, left)

        pane.app.push_screen(
            Confirm(
                "Write a short note of what was tried on the branch you left?",
                yes="Write it",
                no="No",
            ),
            answered,
        )

    def _start_note(self, session_id: str, left: LeftBranch) -> None:
        self.pane.app.notify("Writing a note of the branch you left…", timeout=3)
        self.pane.app.run_worker(self._write_note(session_id, left), group=f"note:{session_id}")

    async def _write_note(self, session_id: str, left: LeftBranch) -> None:
        pane = self.pane
        problem = await pane.workspace.write_branch_note(session_id, left)
        if problem is not None:  # a note is a nicety: say so, lose nothing
            pane.app.notify(f"No note written: {problem}", severity="warning")
            return
        if pane.session_id == session_id:
            await pane.redraw()
        pane.app.notify("Noted what was tried on the branch you left (at the branch point).")
