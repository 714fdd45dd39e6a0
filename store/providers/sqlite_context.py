"""`StoreContextProvider`: a writable block kept in the store (the default)."""

from __future__ import annotations

from ..block_writes import (
    BranchSite,
    StoredWrite,
    block_history,
    content_at,
    record_write,
    revert_write,
)
from ..db import Store
from ..prepared import Prepared
from ..schema import ContextBlockRow as B

__all__ = ["StoreContextProvider"]

# Read for every request a chat sends (its system prompt's blocks): compiled once.
_CONTENT = Prepared(
    lambda ns, label: B.select(B.content).where(B.namespace == ns, B.label == label)
)


class StoreContextProvider:
    """Writable text under (namespace, label), with the history of its writes.

    Sessions wire it as `StoreContextProvider(store, session_id, label)`, so
    each session's blocks are its own.

    Args:
        branches: memory per branch. Off (the default), the block holds one
            content whatever branch a chat is on: the newest write. On, its
            content seen from a message is the newest write on that message's
            path from the root, so a write made on one branch is invisible on
            its siblings and its parent (`Session.with_branch_memory()` wires
            a session's own blocks this way). Every write is recorded either
            way, with the chat and message that made it (`history()`).
        default: the content where no write is seen (a configured text that
            a chat may rewrite); an empty write still reads as empty.
    """

    def __init__(
        self,
        store: Store,
        namespace: str,
        label: str = "",
        *,
        branches: bool = False,
        default: str = "",
    ) -> None:
        self.store = store
        self.namespace = namespace
        self.label = label
        self.branches = branches
        self.default = default

    async def get(self) -> str:
        """The content (`default` before the first write); per branch: writes on no
        message only."""
        if self.branches:
            found = content_at(self.store, self.namespace, self.label, None)
            return self.default if found is None else found
        rows = _CONTENT.rows(self.store, self.namespace, self.label)
        return rows[0][0] if rows else self.default

    async def get_at(self, site: BranchSite) -> str:
        """The content seen from `site` (the newest write for a shared block)."""
        if not self.branches:
            return await self.get()
        found = content_at(self.store, self.namespace, self.label, site)
        return self.default if found is None else found

    async def set(self, content: str) -> None:
        """Replace the content, on no branch (every branch sees it)."""
        await self.set_at(content, BranchSite(None, None, "library"))

    async def set_at(self, content: str, site: BranchSite) -> None:
        """Replace the content, recording the write at `site`."""
        self.write_at(content, site)

    def write_at(self, content: str, site: BranchSite) -> None:
        """`set_at` for a caller with no event loop at hand (the store is synchronous)."""
        if not isinstance(content, str):
            raise TypeError("block content must be a string")
        with self.store.write():
            record_write(self.store, self.namespace, self.label, content, site)

    def history(self) -> list[StoredWrite]:
        """Every write of the block, oldest first (reverted ones marked)."""
        return block_history(self.store, self.namespace, self.label)

    def revert(self, seq: int) -> StoredWrite:
        """Undo write `seq`: it counts on no branch any more (see `block_writes`)."""
        return revert_write(self.store, self.namespace, self.label, seq)

    def __repr__(self) -> str:
        mode = ", branches=True" if self.branches else ""
        return f"StoreContextProvider({self.namespace!r}, {self.label!r}{mode})"
