"""A change feed: which chats other connections (other processes, other machines) changed.

    watcher = ChangeWatcher(store)
    ...
    for session_id in watcher.poll():   # cheap; call it a few times a second
        refresh(session_id)

One interface, one mechanism per engine:

- SQLite: `PRAGMA data_version` changes when another connection commits to
  the file, so a poll with nothing new costs one pragma and no query. When it
  has changed, the sessions whose `updated_at` (every message write, rename,
  status change bumps it) or whose memory blocks moved past what was last
  seen are reported.
- PostgreSQL: triggers on `sessions` and `context_blocks` send
  `NOTIFY chatui_changes, '<schema> <id>'` when a write commits (see the
  migration `m009_change_notifications`); the watcher LISTENs on a
  connection of its own and a poll reads what has arrived without a round
  trip. A dropped listening connection is reopened, and what changed while
  it was down is found by `updated_at`, as on SQLite.

Either way the watcher's own connection's writes are not reported: the
caller made them. A block's namespace is its session id, or
"{session id}/{label}", or a shared one ("global"); the first part is reported.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any, Protocol

from peewee import fn

from .clock import iso, now
from .db import Store
from .engines.pg_text import unescape
from .schema import ContextBlockRow, SessionRow

__all__ = ["CHANNEL", "ChangeWatcher"]

CHANNEL = "chatui_changes"
"""The PostgreSQL notification channel the change triggers send on."""

RECOVERY_MARGIN = timedelta(seconds=5)
"""How far before the last good poll a reconnected listener looks for missed changes
(reporting a chat twice costs a redraw; missing one costs a stale screen)."""

log = logging.getLogger(__name__)


class _Feed(Protocol):
    def poll(self) -> set[str]: ...

    def close(self) -> None: ...


class ChangeWatcher:
    """Reports the ids of sessions other connections changed since the last `poll()`.

    Use it from one thread (SQLite's `data_version` is per connection, and
    peewee's connections are per thread). `close()` releases what it holds
    (PostgreSQL: its listening connection).
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._feed: _Feed = _PostgresFeed(store) if _is_postgres(store) else _SqliteFeed(store)

    def poll(self) -> set[str]:
        """Ids of sessions changed by others since the last poll (empty when none)."""
        return self._feed.poll()

    def close(self) -> None:
        """Stop watching (safe to call twice)."""
        self._feed.close()

    def __enter__(self) -> ChangeWatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_postgres(store: Store) -> bool:
    return store.engine_name == "postgres"


class _Stamps:
    """What changed since a time, from the `updated_at` stamps of sessions and blocks."""

    def __init__(self, store: Store, since: str | None = None) -> None:
        self.store = store
        self._since = since if since is not None else self._latest()
        # What is already there at the last stamp is not news (unless a time was given).
        self._seen: dict[tuple[str, str], str] = (
            self._changed_since(self._since) if since is None else {}
        )

    def _latest(self) -> str:
        s, b = SessionRow, ContextBlockRow
        rows = self.store.rows(s.select(fn.MAX(s.updated_at)))
        blocks = self.store.rows(b.select(fn.MAX(b.updated_at)))
        return max(rows[0][0] or "", blocks[0][0] or "")

    def _changed_since(self, since: str) -> dict[tuple[str, str], str]:
        s, b = SessionRow, ContextBlockRow
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

    def fresh(self) -> set[str]:
        """Sessions whose stamps moved since the last call."""
        # ">=" with the last stamp seen: a write in the same microsecond as the
        # previous one is not missed; `_seen` keeps it from being reported twice.
        changed = self._changed_since(self._since)
        fresh = {key: stamp for key, stamp in changed.items() if self._seen.get(key) != stamp}
        if changed:
            self._since = max(changed.values())
            self._seen = {k: v for k, v in changed.items() if v == self._since}
        return {name.split("/", 1)[0] for (_, name) in fresh}


class _SqliteFeed:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._version = self._data_version()
        self._stamps = _Stamps(store)

    def _data_version(self) -> int:
        return int(self.store.query("PRAGMA data_version")[0][0])

    def poll(self) -> set[str]:
        version = self._data_version()
        if version == self._version:
            return set()
        self._version = version
        return self._stamps.fresh()

    def close(self) -> None:
        pass


class _PostgresFeed:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._schema = str(store.query("SELECT current_schema()")[0][0])
        self._listener: Any = None
        self._down_since: str | None = None
        """When the listener was lost: what changed since is found by stamps."""
        self._last_ok = now()
        self._listen()

    def _listen(self) -> None:
        import psycopg  # the PostgreSQL engine's driver; never imported for SQLite

        db = self.store.db
        conn = psycopg.connect(dbname=db.database, autocommit=True, **db.connect_params)
        conn.execute(f"LISTEN {CHANNEL}")
        self._listener = conn

    def _own_pid(self) -> int:
        # The watcher's thread's connection; asked again each time, since a
        # reconnection gives it a new backend.
        return int(self.store.query("SELECT pg_backend_pid()")[0][0])

    def poll(self) -> set[str]:
        if self._listener is None or self._listener.closed:
            return self._recover()
        try:
            notes = [(n.pid, n.payload) for n in self._listener.notifies(timeout=0)]
        except Exception:  # the server went away: listen again when it is back
            log.info("the change listener lost its connection; reconnecting", exc_info=True)
            self._drop()
            return self._recover()
        self._last_ok = now()
        if not notes:
            return set()
        own = self._own_pid()
        changed: set[str] = set()
        for pid, payload in notes:
            schema, _, name = unescape(payload).partition(" ")  # ids are escaped there
            if schema == self._schema and pid != own and name:
                changed.add(name.split("/", 1)[0])
        return changed

    def _drop(self) -> None:
        if self._listener is not None:
            try:
                self._listener.close()
            except Exception:
                pass
        self._listener = None
        if self._down_since is None:
            # A lost connection can read as "nothing new" once before it fails,
            # and another machine's clock may run behind: look back a margin.
            self._down_since = iso(self._last_ok - RECOVERY_MARGIN)

    def _recover(self) -> set[str]:
        """Listen again; report what the stamps say changed while nobody listened."""
        since = self._down_since or iso(now())
        try:
            self._listen()
            missed = _Stamps(self.store, since).fresh()
        except Exception:
            log.debug("the database is still unreachable", exc_info=True)
            self._drop()
            return set()
        self._down_since = None
        return missed

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
