"""A SessionProvider written here, in memory, runs a full session (SPEC 3 custom storage)."""

import itertools
from datetime import UTC, datetime

from store import (
    LATEST,
    ContextConfig,
    Message,
    SearchResult,
    Session,
    SessionProvider,
    StaticProvider,
    StoredCompaction,
    create_compact_function,
)


class MemoryProvider:
    def __init__(self):
        self.messages: dict[str, Message] = {}
        self.order: list[str] = []
        self.compactions: list[StoredCompaction] = []
        self.ids = itertools.count()

    def get_message(self, message_id):
        return self.messages.get(message_id)

    def get_history(self, leaf_id=None):
        leaf = leaf_id or (self.get_latest_leaf().id if self.order else None)
        path = []
        while leaf is not None:
            m = self.messages[leaf]
            path.append(m)
            leaf = m.parent_id
        return path[::-1]

    def get_latest_leaf(self):
        parents = {m.parent_id for m in self.messages.values()}
        for mid in reversed(self.order):
            if mid not in parents:
                return self.messages[mid]
        return None

    def get_branches(self, message_id):
        return [self.messages[i] for i in self.order if self.messages[i].parent_id == message_id]

    def get_path_length(self, leaf_id=None):
        return len(self.get_history(leaf_id))

    def append_message(self, message, parent_id=LATEST):
        if message.id in self.messages:
            return self.messages[message.id]
        if parent_id is LATEST:
            leaf = self.get_latest_leaf()
            parent_id = leaf.id if leaf else None
        message.parent_id = parent_id
        message.created_at = message.created_at or datetime.now(UTC)
        self.messages[message.id] = message
        self.order.append(message.id)
        return message

    def update_message(self, message):
        message.parent_id = self.messages[message.id].parent_id
        self.messages[message.id] = message

    def delete_messages(self, ids):
        for i in ids:
            self.messages.pop(i, None)
            if i in self.order:
                self.order.remove(i)

    def clear_messages(self):
        self.messages.clear()
        self.order.clear()
        self.compactions.clear()

    def add_compaction(self, summary, from_id, to_id):
        c = StoredCompaction(str(next(self.ids)), "mem", summary, from_id, to_id, datetime.now(UTC))
        self.compactions.append(c)
        return c

    def get_compactions(self):
        return list(self.compactions)

    def search_messages(self, query, limit=20):
        return [
            SearchResult(m.id, m.role, m.text, m.created_at, "mem")
            for m in self.messages.values()
            if query.lower() in m.text.lower()
        ][:limit]


def msg(mid, text, role="user"):
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": text}]}


async def test_in_memory_provider_runs_a_full_session():
    provider = MemoryProvider()
    assert isinstance(provider, SessionProvider)

    async def summarize(prompt):
        return "## Topic\nT\n## Key Points\nK\n## Current State\nC\n## Open Items\nO"

    session = (
        Session(
            provider,
            context=[
                ContextConfig(label="soul", provider=StaticProvider("Be brief.")),
                ContextConfig(label="memory", max_tokens=200),
            ],
        )
        .with_cached_prompt()
        .on_compaction(
            create_compact_function(
                summarize, protect_head=1, tail_token_budget=10, min_tail_messages=2
            )
        )
    )
    for i in range(8):
        await session.append_message(
            msg(f"m{i}", f"message number {i} " * 5, "user" if i % 2 == 0 else "assistant")
        )
    await session.append_message(msg("alt", "another branch", "assistant"), "m6")
    assert [m.id for m in session.get_branches("m6")] == ["m7", "alt"]
    tools = await session.tools()
    assert (await tools["set_context"](label="memory", content="Likes brevity.")).startswith(
        "Replaced"
    )
    assert "Likes brevity." in await session.refresh_system_prompt()
    result = await session.compact()
    assert result is not None
    history = session.get_history("m7")
    assert history[0].id == "m0" and history[1].id.startswith("compaction_")
    assert len(session.get_history("m7")) < 8
    assert session.search("branch")[0].id == "alt"
