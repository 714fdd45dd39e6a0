"""Turning a `Config` into the store objects a chat runs on.

Block scopes map to provider namespaces: a `chat` block lives under the
session id (so fork copies it and purge removes it) and keeps one content
per branch, a `global` block under one shared namespace every chat sees
(each write still records its chat and message).

A `static` block (the soul) is the config's text until a person rewrites it
for one chat (`ChatPrompt`): that write is branch-aware like memory, and the
model never gets a tool for it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from store import (
    BranchSite,
    DirectorySkillProvider,
    SessionManager,
    Store,
    StoreContextProvider,
    StoredWrite,
    StoreSearchProvider,
)

from . import paths
from .config import BlockConfig, Config

__all__ = [
    "GLOBAL_NAMESPACE",
    "ChatPrompt",
    "block_provider",
    "build_manager",
    "skills_path",
]

GLOBAL_NAMESPACE = "global"


def skills_path(value: str | None) -> Path:
    """A skills folder from config (relative paths are beside the config file)."""
    if not value:
        return paths.config_dir() / "skills"
    path = Path(value).expanduser()
    return path if path.is_absolute() else paths.config_dir() / path


class ChatPrompt:
    """A configured static block (the soul) that each chat may rewrite for itself.

    Read-only to the model: it has no `set`, so no tool is offered for it (a
    person writes it through `set_at`, as the memory editor writes). Its writes
    are kept per branch under the chat's namespace, so a fork takes them along
    and a sibling branch keeps the prompt it had; where no write is seen, the
    config's text.
    """

    def __init__(self, store: Store, session_id: str, label: str, default: str) -> None:
        self._writes = StoreContextProvider(
            store, session_id, label, branches=True, default=default
        )
        self.default = default

    async def get(self) -> str:
        return await self._writes.get()

    async def get_at(self, site: BranchSite) -> str:
        return await self._writes.get_at(site)

    async def set_at(self, content: str, site: BranchSite) -> None:
        self._writes.write_at(content, site)

    def write_at(self, content: str, site: BranchSite) -> None:
        """`set_at` without an event loop (a persona's prompt, written with its chat)."""
        self._writes.write_at(content, site)

    def history(self) -> list[StoredWrite]:
        return self._writes.history()

    def revert(self, seq: int) -> StoredWrite:
        return self._writes.revert(seq)

    def __repr__(self) -> str:
        return f"ChatPrompt({self._writes.namespace!r}, {self._writes.label!r})"


def block_provider(
    store: Store, block: BlockConfig, global_namespace: str = GLOBAL_NAMESPACE
) -> Any:
    """The provider for a block: an object, a factory `f(session_id)`, or None (default).

    Args:
        global_namespace: where `global` blocks live (each agent has its own).
    """
    if block.kind == "static":
        label, text = block.label, block.text
        return lambda sid: ChatPrompt(store, sid, label, text)
    if block.kind == "skills":
        return DirectorySkillProvider(skills_path(block.path))
    if block.kind == "searchable":
        if block.scope == "global":
            return StoreSearchProvider(store, f"{global_namespace}/{block.label}")
        factory: Callable[[str], Any] = lambda sid: StoreSearchProvider(  # noqa: E731
            store, f"{sid}/{block.label}"
        )
        return factory
    if block.scope == "global":
        return StoreContextProvider(store, global_namespace, block.label)
    return None  # the store's per-session writable block


def build_manager(
    store: Store,
    config: Config,
    blocks: tuple[BlockConfig, ...] | None = None,
    *,
    skills_dir: str | None = None,
    global_namespace: str = GLOBAL_NAMESPACE,
) -> SessionManager:
    """A `SessionManager` whose chats carry the configured blocks and cached prompts.

    Args:
        blocks: the blocks (default: the config's); an agent passes its own.
        skills_dir: a skills folder to offer (default: the config's).
        global_namespace: where `global` blocks live.
    """
    # Chat blocks keep one content per branch; global ones stay shared.
    manager = SessionManager(store).with_cached_prompt().with_branch_memory()
    blocks = config.blocks if blocks is None else blocks
    for block in blocks:
        manager.with_context(
            block.label,
            description=block.description,
            max_tokens=block.max_tokens,
            provider=block_provider(store, block, global_namespace),
        )
    skills = skills_dir or config.skills_dir
    if skills and not any(b.kind == "skills" for b in blocks):
        manager.with_context(
            "skills",
            description="Documents you can load when relevant",
            provider=DirectorySkillProvider(skills_path(skills)),
        )
    return manager
