"""Where frozen system prompts are kept (`Session.with_cached_prompt`)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .clock import iso, now
from .db import Store
from .schema import PromptRow

__all__ = ["PromptCache", "StorePromptCache", "InMemoryPromptCache"]


@runtime_checkable
class PromptCache(Protocol):
    """Persists one frozen prompt; `get()` returns None before the first `set()`."""

    async def get(self) -> str | None:
        """The stored prompt, or None."""

    async def set(self, prompt: str) -> None:
        """Store `prompt`, replacing any earlier one."""


class StorePromptCache:
    """The frozen prompt of one namespace in the store's `prompts` table."""

    def __init__(self, store: Store, namespace: str) -> None:
        self.store = store
        self.namespace = namespace

    async def get(self) -> str | None:
        """The stored prompt of this namespace, or None."""
        rows = self.store.rows(
            PromptRow.select(PromptRow.prompt).where(PromptRow.namespace == self.namespace)
        )
        return rows[0][0] if rows else None

    async def set(self, prompt: str) -> None:
        """Store `prompt` for this namespace."""
        with self.store.write():
            self.store.run(
                PromptRow.insert(
                    namespace=self.namespace, prompt=prompt, updated_at=iso(now())
                ).on_conflict(
                    conflict_target=[PromptRow.namespace],
                    preserve=[PromptRow.prompt, PromptRow.updated_at],
                )
            )

    def clear(self) -> None:
        """Forget the stored prompt (the next freeze renders afresh)."""
        with self.store.write():
            self.store.run(PromptRow.delete().where(PromptRow.namespace == self.namespace))


class InMemoryPromptCache:
    """For sessions without a store: survives only as long as the object."""

    def __init__(self) -> None:
        self.prompt: str | None = None

    async def get(self) -> str | None:
        """The prompt, or None before the first `set`."""
        return self.prompt

    async def set(self, prompt: str) -> None:
        """Keep `prompt`."""
        self.prompt = prompt
