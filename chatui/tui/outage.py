"""The app stays up while the database does not answer.

A PostgreSQL server that stops (or restarts, or whose network goes) fails every
read until it is back: a redraw, the sidebar's facts, the chat list, a key's
action. Textual ends a widget's message loop on the first exception a handler
raises (and the app with it), so the app's own message pumps — the app, its
screens, the chat pane — take `SurvivesOutage` first among their bases: a
handler that failed because the store says the server is unreachable
(`Store.unreachable`) is abandoned, what it had not changed stays as it was
(handlers read before they draw), the app says so once in a while
(`OutageNotices`), and the loop goes on to the next message. Any other exception
is Textual's, as before. A reply being written meanwhile is the engine's to keep
(`core.replies`).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

from store import Store

if TYPE_CHECKING:
    from textual.message_pump import MessagePump

    _Pump = MessagePump
else:
    _Pump = object

__all__ = ["OutageNotices", "SurvivesOutage"]

log = logging.getLogger(__name__)

TOAST_SECONDS = 8.0
"""The notice is shown at most once in this long (while the server is down every
read fails, and a keypress may make several)."""


class _Notifier(Protocol):
    def notify(
        self, message: str, *, title: str = ..., severity: Any = ..., timeout: Any = ...
    ) -> None: ...


class OutageNotices:
    """Whether an exception is an unreachable database, and the toast that says so."""

    def __init__(self, store: Store, app: _Notifier) -> None:
        self.store = store
        self.app = app
        self._told = -TOAST_SECONDS

    def absorb(self, exc: BaseException) -> bool:
        """True (and said) when `exc` is the database not answering; False otherwise."""
        if not self.store.unreachable(exc):
            return False
        log.warning("a read failed: the database is unreachable", exc_info=exc)
        now = time.monotonic()
        if now - self._told > TOAST_SECONDS:
            self._told = now
            self.app.notify(
                f"The database ({self.store.path}) does not answer; the screen shows what "
                "was read last. chatui keeps trying; nothing you typed is lost.",
                title="Database unreachable",
                severity="error",
                timeout=TOAST_SECONDS,
            )
        return True


class SurvivesOutage(_Pump):
    """A message pump whose handlers may fail on an unreachable database (see the
    module's notes). First among the class's bases."""

    async def _dispatch_message(self, message: Any) -> Any:
        try:
            return await super()._dispatch_message(message)
        except Exception as exc:
            notices = getattr(self.app, "outage", None)
            if isinstance(notices, OutageNotices) and notices.absorb(exc):
                return None
            raise
