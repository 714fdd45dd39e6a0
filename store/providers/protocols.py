"""The four context-provider shapes, detected by duck typing (every method async)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = [
    "ContextProvider",
    "WritableContextProvider",
    "SkillProvider",
    "SearchProvider",
    "BranchAwareProvider",
    "is_branch_aware",
    "is_writable",
    "is_skill",
    "is_searchable",
    "can_set",
]


@runtime_checkable
class ContextProvider(Protocol):
    """Read-only: its text goes into the system prompt."""

    async def get(self) -> str | None:
        """The block's content (None or "" for an empty block)."""


@runtime_checkable
class WritableContextProvider(Protocol):
    """Writable by the model through `set_context`."""

    async def get(self) -> str | None:
        """The block's content."""

    async def set(self, content: str) -> None:
        """Replace the whole content (limits are checked before this is called)."""


@runtime_checkable
class BranchAwareProvider(Protocol):
    """Writable and told where each read and write happens (a chat and a message).

    `site` is a `store.BranchSite`. A session calls these instead of `get`/`set`
    when a provider has them, so a provider may keep one content per branch
    (`StoreContextProvider(..., branches=True)`) or record who wrote.
    """

    async def get_at(self, site: Any) -> str | None:
        """The content as seen from `site`."""

    async def set_at(self, content: str, site: Any) -> None:
        """Replace the content, the write made at `site`."""


@runtime_checkable
class SkillProvider(Protocol):
    """Keyed documents: `get()` lists them, `load(key)` returns one whole."""

    async def get(self) -> str | None:
        """The listing shown in the prompt: one line per document."""

    async def load(self, key: str) -> str | None:
        """The whole document (None or `UnknownSkillError` when there is none)."""


@runtime_checkable
class SearchProvider(Protocol):
    """Searchable entries: `get()` summarises, `search(query)` finds."""

    async def get(self) -> str | None:
        """A summary shown in the prompt (e.g. how many entries there are)."""

    async def search(self, query: str) -> str | list[str]:
        """The best matches for `query`, as text for the model."""


def _has(provider: Any, name: str) -> bool:
    return callable(getattr(provider, name, None))


def is_skill(provider: Any) -> bool:
    """Loadable: has `load(key)`."""
    return _has(provider, "load")


def is_searchable(provider: Any) -> bool:
    """Searchable: has `search(query)` (and is not loadable)."""
    return _has(provider, "search") and not is_skill(provider)


def can_set(provider: Any) -> bool:
    """Has `set`: writable, or a keyed block the model can add entries to."""
    return _has(provider, "set")


def is_branch_aware(provider: Any) -> bool:
    """Reads and writes take a site: has `get_at` and `set_at`."""
    return _has(provider, "get_at") and _has(provider, "set_at")


def is_writable(provider: Any) -> bool:
    """A plain writable block (skill and search providers are keyed, not writable)."""
    return can_set(provider) and not is_skill(provider) and not is_searchable(provider)
