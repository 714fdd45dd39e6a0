"""A change feed: which chats other connections (other processes) changed.

    watcher = ChangeWatcher(store)
    ...
    for session_id in watcher.poll():   # cheap; call it every ~0.5 s
        refresh(session_id)

On SQLite, `PRAGMA data_version` changes when another connection commits to
the file, so a poll with nothing new costs one pragma and no query. When it
has changed, the sessions whose `updated_at` (every message write, rename,
status change bumps it) or whose memory blocks moved past what was last seen
are reported. The watcher's own connection's writes are not reported: the
caller made them. (PostgreSQL will use LISTEN/NOTIFY behind the same API.)
"""

from __future__ import annotations

from peewee import fn

from .db import Store
from .schema import ContextBlock, SessionRow

__all__ = ["ChangeWatcher"]


class ChangeWatcher:
    """Reports the ids of sessions other connections changed since the last `poll()`.

    Use it from one thread (SQLite's `data_version` is per connection, and
    peewee's connections are per thread).
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._version = self._data_version()
        self._since = self._latest()
        # What is already there at the last stamp is not news.
        self._seen: dict[tuple[str, str], str] = self._changed_since(self._since)

    def _data_version(self) -> int:
        if self.store.engine_name != "sqlite":
            # No such counter on PostgreSQL: every poll reads the stamps (two
            # indexed queries) until the LISTEN/NOTIFY feed replaces this.
            self._polls = getattr(self, "_polls", 0) + 1
            return self._polls
        return int(self.store.query("PRAGMA data_version")[0][0])

    def _latest(self) -> str:
        s, b = SessionRow, ContextBlock
        rows = self.store.rows(s.select(fn.MAX(s.updated_at)))
        blocks = self.store.rows(b.select(fn.MAX(b.updated_at)))
        return max(rows[0][0] or "", blocks[0][0] or "")

    def _changed_since(self, since: str) -> dict[tuple[str, str], str]:
        s, b = SessionRow, ContextBlock
        changed: dict[tuple[str, str], str] = {}
        for sid, stamp in self.store.rows(
            s.select(s.id, s.updated_at).where(s.updated_at >= since)
        ):
            changed[("s", sid)] = stamp
        for namespace, stamp in self.store.rows(
            b.select(b.namespace, b.updated_at).where(b.updated_at >= since)
        ):
            changed[("b", namespace)] = stamp
        return changed

    def poll(self) -> set[str]:
        """Ids of sessions changed by others since the last poll (empty when none)."""
        version = self._data_version()
        if version == self._version:
            return set()
        self._version = version
        # ">=" with the last stamp seen: a write in the same microsecond as the
        # previous one is not missed; `_seen` keeps it from being reported twice.
        changed = self._changed_since(self._since)
        fresh = {key: stamp for key, stamp in changed.items() if self._seen.get(key) != stamp}
        if changed:
            self._since = max(changed.values())
            self._seen = {k: v for k, v in changed.items() if v == self._since}
        # A block's namespace is its session id, or "{session id}/{label}".
        return {name.split("/", 1)[0] for (_, name) in fresh}
