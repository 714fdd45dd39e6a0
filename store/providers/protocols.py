"""The four context-provider shapes, detected by duck typing (every method async)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = [
    "ContextProvider",
    "WritableContextProvider",
    "SkillProvider",
    "SearchProvider",
    "is_writable",
    "is_skill",
    "is_searchable",
    "can_set",
]


@runtime_checkable
class ContextProvider(Protocol):
    """Read-only: its text goes into the system prompt."""

    async def get(self) -> str | None: ...


@runtime_checkable
class WritableContextProvider(Protocol):
    """Writable by the model through `set_context`."""

    async def get(self) -> str | None: ...
    async def set(self, content: str) -> None: ...


@runtime_checkable
class SkillProvider(Protocol):
    """Keyed documents: `get()` lists them, `load(key)` returns one whole."""

    async def get(self) -> str | None: ...
    async def load(self, key: str) -> str | None: ...


@runtime_checkable
class SearchProvider(Protocol):
    """Searchable entries: `get()` summarises, `search(query)` finds."""

    async def get(self) -> str | None: ...
    async def search(self, query: str) -> str | list[str]: ...


def _has(provider: Any, name: str) -> bool:
    return callable(getattr(provider, name, None))


def is_skill(provider: Any) -> bool:
    return _has(provider, "load")


def is_searchable(provider: Any) -> bool:
    return _has(provider, "search") and not is_skill(provider)


def can_set(provider: Any) -> bool:
    return _has(provider, "set")


def is_writable(provider: Any) -> bool:
    """A plain writable block (skill and search providers are keyed, not writable)."""
    return can_set(provider) and not is_skill(provider) and not is_searchable(provider)
