"""`Session`: one conversation tree plus its context blocks, tools and compaction.

Design notes:
- The builder methods only record configuration; storage and providers are
  resolved on first use, so their order does not matter.
- `Session` accepts a `Store` (the SQLite default) or any `SessionProvider`.
- Block contents are cached in the session and refreshed from providers on
  `refresh_system_prompt()`, on writes through the session, and on first use.
- The frozen system prompt never changes behind the model's back: tool writes
  are durable at once; the prompt changes on `refresh_system_prompt()`.
- A session reads and writes its blocks at a branch (`set_branch`, default
  the latest leaf). Providers with `get_at`/`set_at` are told where
  (`BranchSite`): with `with_branch_memory()` the session's own blocks keep
  one content per branch; others may just record who wrote.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .block_writes import BranchSite, StoredWrite, shared_paths
from .compaction import CompactFunction
from .context import (
    ContextBlock,
    ContextConfig,
    InMemoryProvider,
    make_block,
    render_system_prompt,
    run_now,
)
from .db import Store
from .errors import (
    ContextLimitError,
    DuplicateBlockError,
    ReadOnlyBlockError,
    StoreError,
    UnknownBlockError,
    UnknownMessageError,
)
from .messages import LATEST, Latest, Message, MessageLike, SearchResult, StoredCompaction
from .overlays import apply_compactions
from .prompts import InMemoryPromptCache, PromptCache, StorePromptCache
from .providers import StoreContextProvider
from .providers.protocols import is_branch_aware, is_writable
from .schema import LoadedSkillRow
from .storage import SessionProvider, StoreSessionProvider
from .tokens import TokenCounter, estimate_message_tokens, estimate_string_tokens

if TYPE_CHECKING:
    from .tools import Tool

__all__ = ["Session", "CompactFunction", "CompactionErrorHandler"]

log = logging.getLogger(__name__)

CompactionErrorHandler = Callable[[BaseException], Any]


class Session:
    """A conversation tree with context blocks, memory tools and compaction.

    Args:
        storage: a `Store`, or any object implementing `SessionProvider`.
        context: block configurations (the direct-constructor form).
        session_id: the id that namespaces messages and block storage.
        touch_session: with a `Store`, keep the `sessions` row's `updated_at`
            current on every write and refuse writes once it is soft-deleted
            (`SessionManager` turns this on for the sessions it hands out).
    """

    def __init__(
        self,
        storage: Store | SessionProvider,
        *,
        context: list[ContextConfig] | None = None,
        session_id: str = "default",
        touch_session: bool = False,
    ) -> None:
        if not isinstance(storage, Store) and not isinstance(storage, SessionProvider):
            raise TypeError("Session needs a Store or an object implementing SessionProvider")
        self._storage = storage
        self._session_id = session_id
        self._configs: list[ContextConfig] = []
        for config in context or []:
            self._add_config(config)
        self._provider: SessionProvider | None = None
        self._block_providers: dict[str, Any] = {}
        self._contents: dict[str, str] = {}
        self._cache_prompt = False
        self._prompt_cache: PromptCache | None = None
        self._prompt_cache_arg: PromptCache | None = None
        self._frozen: str | None = None
        self._compact_fn: CompactFunction | None = None
        self._compact_threshold: int | None = None
        self._token_counter: TokenCounter = estimate_message_tokens
        self._on_compaction_error: CompactionErrorHandler | None = None
        self._touch_session = touch_session
        self._loaded_skills: set[tuple[str, str]] = set()
        self._branch_memory = False
        self._branch: str | None = None

    # -- builder ----------------------------------------------------------------

    @classmethod
    def create(cls, storage: Store | SessionProvider) -> Session:
        """Start a builder (same as `Session(storage)`)."""
        return cls(storage)

    def for_session(self, session_id: str) -> Session:
        """The id that namespaces messages and block storage (before first use)."""
        if self._provider is not None:
            raise StoreError("for_session() must be called before the session is used")
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("session_id must be a non-empty string")
        self._session_id = session_id
        return self

    def with_context(
        self,
        label: str,
        *,
        description: str | None = None,
        max_tokens: int | None = None,
        provider: Any = None,
    ) -> Session:
        """Declare a block; no provider means the store's writable block for this session."""
        self._add_config(ContextConfig(label, description, max_tokens, provider))
        return self

    def with_branch_memory(self) -> Session:
        """Memory per branch for the blocks this session stores itself (no provider given).

        A write then belongs to the message it was made at (`set_branch`), and a
        block's content on a branch is the newest write on that branch's path:
        a write on one branch is invisible on its siblings and its parent.
        Off by default: a block holds one content for the whole tree.
        """
        if self._block_providers:
            raise StoreError("with_branch_memory() must be called before the blocks are used")
        self._branch_memory = True
        return self

    def with_cached_prompt(self, provider: PromptCache | None = None) -> Session:
        """Persist the frozen prompt (in the store by default) so it survives restarts."""
        self._cache_prompt = True
        self._prompt_cache_arg = provider
        return self

    def on_compaction(self, fn: CompactFunction) -> Session:
        """The function `compact()` and auto-compaction run (see `create_compact_function`)."""
        self._compact_fn = fn
        return self

    def compact_after(self, threshold: int, token_counter: TokenCounter | None = None) -> Session:
        """Auto-compact after an append once history plus prompt exceed `threshold` tokens."""
        if not isinstance(threshold, int) or threshold <= 0:
            raise ValueError("compact_after threshold must be a positive integer")
        self._compact_threshold = threshold
        if token_counter is not None:
            self._token_counter = token_counter
        return self

    def on_compaction_error(self, handler: CompactionErrorHandler) -> Session:
        """Receive the exception of a failed auto-compaction (sync or async handler)."""
        self._on_compaction_error = handler
        return self

    def _add_config(self, config: ContextConfig) -> None:
        if any(c.label == config.label for c in self._configs):
            raise DuplicateBlockError(f"a context block {config.label!r} already exists")
        self._configs.append(config)

    # -- plumbing ---------------------------------------------------------------

    @property
    def session_id(self) -> str:
        """The id that namespaces this session."""
        return self._session_id

    @property
    def store(self) -> Store | None:
        """The `Store` behind this session, or None with a custom provider."""
        return self._storage if isinstance(self._storage, Store) else None

    @property
    def provider(self) -> SessionProvider:
        """The message storage (resolved on first use)."""
        if self._provider is None:
            if isinstance(self._storage, Store):
                self._provider = StoreSessionProvider(
                    self._storage, self._session_id, touch_session=self._touch_session
                )
            else:
                self._provider = self._storage
        return self._provider

    def _block_provider(self, config: ContextConfig) -> Any:
        provider = self._block_providers.get(config.label)
        if provider is None:
            if config.provider is not None:
                provider = config.provider
            elif isinstance(self._storage, Store):
                provider = StoreContextProvider(
                    self._storage, self._session_id, config.label, branches=self._branch_memory
                )
            else:
                provider = InMemoryProvider()
            self._block_providers[config.label] = provider
        return provider

    def _config(self, label: str) -> ContextConfig:
        for config in self._configs:
            if config.label == label:
                return config
        known = ", ".join(c.label for c in self._configs) or "none"
        raise UnknownBlockError(f"no context block {label!r} (blocks: {known})")

    def _prompt_store(self) -> PromptCache | None:
        if not self._cache_prompt:
            return None
        if self._prompt_cache is None:
            if self._prompt_cache_arg is not None:
                self._prompt_cache = self._prompt_cache_arg
            elif isinstance(self._storage, Store):
                self._prompt_cache = StorePromptCache(self._storage, self._session_id)
            else:
                self._prompt_cache = InMemoryPromptCache()
        return self._prompt_cache

    # -- messages ---------------------------------------------------------------

    async def append_message(
        self, message: MessageLike, parent_id: str | None | Latest = LATEST
    ) -> Message:
        """Store a message (see SPEC 3); may auto-compact, never losing the message."""
        stored = self.provider.append_message(Message.coerce(message), parent_id)
        if self._branch is None:  # the latest leaf moved: per-branch contents may differ
            for config in self._configs:
                if is_branch_aware(self._block_providers.get(config.label)):
                    self._contents.pop(config.label, None)
        if self._compact_fn is not None and self._compact_threshold is not None:
            await self._maybe_compact(stored.id)
        return stored

    def update_message(self, message: MessageLike, *, final: bool = True) -> None:
        """Replace the content of the message with that id (search follows).

        `final=False` says a later rewrite supersedes this one (a streaming reply's
        flush): the store may commit it without waiting for the disk (`Store`'s
        `durability`). Other providers are called as the protocol says.
        """
        message = Message.coerce(message)
        if not final and isinstance(self.provider, StoreSessionProvider):
            self.provider.update_message(message, final=False)
        else:
            self.provider.update_message(message)

    def delete_messages(self, message_ids: list[str]) -> None:
        """Delete messages; their children move up to the deleted message's parent."""
        self.provider.delete_messages(list(message_ids))

    def clear_messages(self) -> None:
        """Delete every message, compaction and loaded-skill mark of the session."""
        self.provider.clear_messages()
        self._loaded_skills.clear()

    def get_history(self, leaf_id: str | None = None) -> list[Message]:
        """Root → leaf (the latest leaf by default) with compaction overlays applied."""
        path = self.provider.get_history(leaf_id)
        if not path:
            return path
        compactions = self.provider.get_compactions()
        return apply_compactions(path, compactions) if compactions else path

    def get_raw_history(self, leaf_id: str | None = None) -> list[Message]:
        """Root → leaf without overlays (what the database holds)."""
        return self.provider.get_history(leaf_id)

    def get_message(self, message_id: str) -> Message | None:
        """One stored message, or None."""
        return self.provider.get_message(message_id)

    def get_latest_leaf(self) -> Message | None:
        """The most recently appended message without children, or None."""
        return self.provider.get_latest_leaf()

    def get_branches(self, message_id: str) -> list[Message]:
        """The children of a message, oldest first (siblings are branches)."""
        return self.provider.get_branches(message_id)

    def get_path_length(self, leaf_id: str | None = None) -> int:
        """Number of stored messages on the path to `leaf_id` (overlays not applied)."""
        return self.provider.get_path_length(leaf_id)

    def search(self, query: str, limit: int = 20) -> list[SearchResult]:
        """FTS5 over this session's messages, best first; never raises on query syntax."""
        return self.provider.search_messages(query, limit)

    def get_tree(self) -> list[Message]:
        """Every message of every branch, parents before children.

        In append order when the provider has `get_tree` (the store's does);
        otherwise breadth-first from the roots (`get_roots` if the provider
        has it, else the root of the latest path).
        """
        get_tree = getattr(self.provider, "get_tree", None)
        if get_tree is not None:
            return get_tree()
        get_roots = getattr(self.provider, "get_roots", None)
        seen: list[Message] = []
        stack = list(get_roots()) if get_roots else self.provider.get_history()[:1]
        while stack:
            node = stack.pop(0)
            seen.append(node)
            stack.extend(self.provider.get_branches(node.id))
        return seen

    def get_branch_position(self, message_id: str) -> tuple[int, int]:
        """(1-based index among its siblings, number of siblings) of a message."""
        message = self.provider.get_message(message_id)
        if message is None:
            raise UnknownMessageError(f"no message {message_id!r}")
        if message.parent_id is None:
            roots = getattr(self.provider, "get_roots", None)
            siblings = roots() if roots else [message]
        else:
            siblings = self.provider.get_branches(message.parent_id)
        ids = [m.id for m in siblings]
        return ids.index(message_id) + 1, len(ids)

    def latest_leaf_under(self, message_id: str) -> str:
        """The newest leaf below a message: where switching to that branch lands."""
        finder = getattr(self.provider, "latest_leaf_under", None)
        if finder is not None:
            return finder(message_id)
        node = message_id
        while children := self.provider.get_branches(node):
            node = children[-1].id
        return node

    # -- compaction -------------------------------------------------------------

    def add_compaction(self, summary: str, from_id: str, to_id: str) -> StoredCompaction:
        """Overlay `summary` on the path from_id … to_id (both must be on one path)."""
        if not isinstance(summary, str) or not summary.strip():
            raise ValueError("a compaction needs a non-empty summary")
        path_ids = [m.id for m in self.provider.get_history(to_id)]
        if from_id not in path_ids:
            raise ValueError(f"{from_id!r} is not on the path to {to_id!r}")
        return self.provider.add_compaction(summary, from_id, to_id)

    def get_compactions(self) -> list[StoredCompaction]:
        """Every overlay of the session, oldest first."""
        return self.provider.get_compactions()

    async def compact(self) -> StoredCompaction | None:
        """Run the compaction function now; None when there was nothing to compact."""
        if self._compact_fn is None:
            raise StoreError("no compaction function: configure one with on_compaction()")
        return await self._compact_fn(self)

    async def estimate_tokens(self, leaf_id: str | None = None) -> int:
        """Estimated tokens of the history plus the system prompt."""
        history = self.get_history(leaf_id)
        prompt = self._frozen if self._frozen is not None else await self._render()
        return self._token_counter(history) + estimate_string_tokens(prompt)

    async def _maybe_compact(self, leaf_id: str) -> None:
        try:
            assert self._compact_threshold is not None
            if await self.estimate_tokens(leaf_id) > self._compact_threshold:
                await self.compact()
        except Exception as exc:  # the message is stored; compaction is best effort
            handler = self._on_compaction_error
            if handler is None:
                log.warning("auto-compaction of %s failed: %s", self._session_id, exc)
                return
            try:
                result = handler(exc)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("on_compaction_error handler failed")

    # -- context blocks ---------------------------------------------------------

    @property
    def branch(self) -> str | None:
        """The message blocks are read and written at (None: the latest leaf)."""
        return self._branch

    def set_branch(self, message_id: str | None) -> None:
        """Read and write blocks at `message_id` from now on (None: the latest leaf).

        The branch's path decides what a per-branch block holds; a write is
        recorded against this message. Cached contents are dropped when it moves.
        """
        if message_id is not None and not isinstance(message_id, str):
            raise TypeError("a branch is named by a message id")
        if message_id != self._branch:
            self._branch = message_id
            self._contents.clear()

    def _site(self, at: str | None = None, origin: str = "model") -> BranchSite:
        message_id = at if at is not None else self._branch
        if message_id is None:
            leaf = self.provider.get_latest_leaf()
            message_id = leaf.id if leaf is not None else None
        return BranchSite(self._session_id, message_id, origin)

    def _own_position(self, at: str | None) -> bool:
        """Whether a read at `at` is a read at the session's branch (so it may be cached)."""
        return at is None or at == self._branch

    async def _read(self, config: ContextConfig, at: str | None = None) -> str:
        provider = self._block_provider(config)
        if is_branch_aware(provider):
            value = await provider.get_at(self._site(at))
        else:
            value = await provider.get()
        return "" if value is None else str(value)

    async def _load(self, config: ContextConfig) -> str:
        content = await self._read(config)
        self._contents[config.label] = content
        return content

    def _content_now(self, config: ContextConfig) -> str:
        if config.label not in self._contents:
            provider = self._block_provider(config)
            reading = provider.get_at(self._site()) if is_branch_aware(provider) else provider.get()
            done, value = run_now(reading)
            if not done:
                return ""  # an I/O provider: loaded on the first async call
            self._contents[config.label] = "" if value is None else str(value)
        return self._contents[config.label]

    def get_context_block(self, label: str) -> ContextBlock | None:
        """The block as last loaded, or None for an unknown label."""
        for config in self._configs:
            if config.label == label:
                return make_block(config, self._block_provider(config), self._content_now(config))
        return None

    def get_context_blocks(self) -> list[ContextBlock]:
        """Every block, in declaration order."""
        return [make_block(c, self._block_provider(c), self._content_now(c)) for c in self._configs]

    async def load_context(self, at: str | None = None) -> list[ContextBlock]:
        """Reload every block from its provider and return them.

        Args:
            at: read as seen from this message (a branch shown on screen)
                without moving the session's own branch; None: the session's.
        """
        with shared_paths():  # the blocks read along one path: it is walked once
            if not self._own_position(at):
                blocks = []
                for config in self._configs:
                    content = await self._read(config, at)
                    blocks.append(make_block(config, self._block_provider(config), content))
                return blocks
            for config in self._configs:
                await self._load(config)
        return self.get_context_blocks()

    def _writable_provider(self, label: str) -> tuple[ContextConfig, Any]:
        config = self._config(label)
        provider = self._block_provider(config)
        if not is_writable(provider):
            raise ReadOnlyBlockError(f"context block {label!r} is read-only")
        return config, provider

    def _check_limit(self, config: ContextConfig, content: str) -> None:
        if config.max_tokens is not None:
            tokens = estimate_string_tokens(content)
            if tokens > config.max_tokens:
                raise ContextLimitError(
                    f"{config.label!r} would hold {tokens} tokens; its limit is {config.max_tokens}"
                )

    async def _write(
        self, config: ContextConfig, provider: Any, content: str, at: str | None, origin: str
    ) -> None:
        if is_branch_aware(provider):
            await provider.set_at(content, self._site(at, origin))
        else:
            await provider.set(content)
        if self._own_position(at):
            self._contents[config.label] = content
        else:  # the write may be on the session's own branch too: read it again
            self._contents.pop(config.label, None)

    async def replace_context_block(
        self, label: str, content: str, *, at: str | None = None, origin: str = "model"
    ) -> ContextBlock:
        """Write a block's whole content through its provider.

        Args:
            at: the message the write belongs to (None: the session's branch).
            origin: who writes, recorded with the write: "model" or "user".

        Raises:
            UnknownBlockError, ReadOnlyBlockError, ContextLimitError (nothing written).
        """
        if not isinstance(content, str):
            raise TypeError("block content must be a string")
        config, provider = self._writable_provider(label)
        self._check_limit(config, content)
        await self._write(config, provider, content, at, origin)
        return make_block(config, provider, content)

    async def append_context_block(
        self, label: str, content: str, *, at: str | None = None, origin: str = "model"
    ) -> ContextBlock:
        """Append to a block, adding a newline separator when needed (`at`, `origin`:
        as `replace_context_block`)."""
        if not isinstance(content, str):
            raise TypeError("block content must be a string")
        config, provider = self._writable_provider(label)
        current = await self._read(config, at)
        joined = (
            current
            + (
                "\n"
                if current
                and not current.endswith("\n")
                and content
                and not content.startswith("\n")
                else ""
            )
            + content
        )
        self._check_limit(config, joined)
        await self._write(config, provider, joined, at, origin)
        return make_block(config, provider, joined)

    def block_history(self, label: str) -> list[StoredWrite]:
        """Every recorded write of a block, oldest first ([] when its provider keeps none)."""
        history = getattr(self._block_provider(self._config(label)), "history", None)
        return list(history()) if callable(history) else []

    def revert_block_write(self, label: str, seq: int) -> StoredWrite:
        """Undo one recorded write of a block (it counts on no branch any more).

        Raises:
            UnknownBlockError; ReadOnlyBlockError when the provider keeps no history;
            UnknownWriteError, ValueError (reverted already) from the provider.
        """
        provider = self._block_provider(self._config(label))
        revert = getattr(provider, "revert", None)
        if not callable(revert):
            raise ReadOnlyBlockError(f"context block {label!r} keeps no history to revert")
        reverted: StoredWrite = revert(seq)
        self._contents.pop(label, None)
        return reverted

    async def add_context(
        self,
        label: str,
        description: str | None = None,
        max_tokens: int | None = None,
        provider: Any = None,
    ) -> ContextBlock:
        """Add a block at runtime; the frozen prompt changes on refresh."""
        config = ContextConfig(label, description, max_tokens, provider)
        self._add_config(config)
        await self._load(config)
        block = self.get_context_block(label)
        assert block is not None
        return block

    def remove_context(self, label: str) -> bool:
        """Remove a block (its stored content stays); whether it existed."""
        before = len(self._configs)
        self._configs = [c for c in self._configs if c.label != label]
        self._block_providers.pop(label, None)
        self._contents.pop(label, None)
        return len(self._configs) != before

    def block_provider(self, label: str) -> Any:
        """The provider behind a block (for tools and advanced callers)."""
        return self._block_provider(self._config(label))

    # -- system prompt ----------------------------------------------------------

    async def _render(self) -> str:
        for config in self._configs:
            if config.label not in self._contents:
                await self._load(config)
        return render_system_prompt(self.get_context_blocks())

    async def freeze_system_prompt(self) -> str:
        """The prompt as first rendered; stable across block changes and restarts."""
        if self._frozen is not None:
            return self._frozen
        cache = self._prompt_store()
        if cache is not None:
            cached = await cache.get()
            if cached is not None:
                self._frozen = cached
                return cached
        self._frozen = await self._render()
        if cache is not None:
            await cache.set(self._frozen)
        return self._frozen

    async def refresh_system_prompt(self) -> str:
        """Reload every block, re-render, persist and return the new prompt."""
        for config in self._configs:
            await self._load(config)
        prompt = render_system_prompt(self.get_context_blocks())
        cache = self._prompt_store()
        # `_frozen` is what this session persisted or read last: an unchanged prompt
        # (most turns: memory did not change) costs no write.
        if cache is not None and prompt != self._frozen:
            await cache.set(prompt)
        self._frozen = prompt
        return self._frozen

    # -- tools ------------------------------------------------------------------

    async def tools(self) -> dict[str, Tool]:
        """The memory tools this session's blocks bring (see SPEC 3)."""
        from .tools import session_tools

        return session_tools(self)

    # Loaded-skill bookkeeping, persisted with the store when there is one.

    def _skill_namespace(self) -> str:
        return self._session_id

    def mark_skill_loaded(self, label: str, key: str, loaded: bool) -> None:
        """Remember (or forget) that a skill document is loaded into the conversation."""
        store = self.store
        if store is None:
            (self._loaded_skills.add if loaded else self._loaded_skills.discard)((label, key))
            return
        with store.write():
            if loaded:
                store.run(
                    LoadedSkillRow.insert(
                        namespace=self._skill_namespace(), label=label, key=key
                    ).on_conflict_ignore()
                )
            else:
                store.run(
                    LoadedSkillRow.delete().where(
                        LoadedSkillRow.namespace == self._skill_namespace(),
                        LoadedSkillRow.label == label,
                        LoadedSkillRow.key == key,
                    )
                )

    def loaded_skills(self) -> set[tuple[str, str]]:
        """(label, key) of every skill document loaded and not unloaded."""
        store = self.store
        if store is None:
            return set(self._loaded_skills)
        rows = store.rows(
            LoadedSkillRow.select(LoadedSkillRow.label, LoadedSkillRow.key).where(
                LoadedSkillRow.namespace == self._skill_namespace()
            )
        )
        return {(r[0], r[1]) for r in rows}

    def __repr__(self) -> str:
        return f"Session({self._session_id!r}, blocks={[c.label for c in self._configs]})"
