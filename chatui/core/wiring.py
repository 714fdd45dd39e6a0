"""Turning a `Config` into the store objects a chat runs on.

Block scopes map to provider namespaces: a `chat` block lives under the
session id (so fork copies it and purge removes it) and keeps one content
per branch, a `global` block under one shared namespace every chat sees
(each write still records its chat and message).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from store import (
    DirectorySkillProvider,
    SessionManager,
    StaticProvider,
    Store,
    StoreContextProvider,
    StoreSearchProvider,
)

from . import paths
from .config import BlockConfig, Config

__all__ = ["GLOBAL_NAMESPACE", "block_provider", "build_manager", "skills_path"]

GLOBAL_NAMESPACE = "global"


def skills_path(value: str | None) -> Path:
    """A skills folder from config (relative paths are beside the config file)."""
    if not value:
        return paths.config_dir() / "skills"
    path = Path(value).expanduser()
    return path if path.is_absolute() else paths.config_dir() / path


def block_provider(
    store: Store, block: BlockConfig, global_namespace: str = GLOBAL_NAMESPACE
) -> Any:
    """The provider for a block: an object, a factory `f(session_id)`, or None (default).

    Args:
        global_namespace: where `global` blocks live (each agent has its own).
    """
    if block.kind == "static":
        return StaticProvider(block.text)
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
