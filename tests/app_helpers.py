"""Helpers for app tests: a populated database and an app that runs on it."""

from __future__ import annotations

import asyncio
import html
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from rich.cells import cell_len
from textual.app import App
from textual.drivers.headless_driver import HeadlessDriver

from chatui.core.config import Config
from chatui.core.ui_state import UiState
from chatui.tui.app import ChatApp
from store import SessionManager, Store

T0 = datetime(2024, 10, 3, 9, 0, tzinfo=UTC)


def text(mid: str, role: str, body: str, minutes: int) -> dict:
    return {
        "id": mid,
        "role": role,
        "parts": [{"type": "text", "text": body}],
        "created_at": (T0 + timedelta(minutes=minutes)).isoformat(),
    }


def set_times(store: Store, session_id: str, minutes: int) -> None:
    stamp = (T0 + timedelta(minutes=minutes)).isoformat()
    with store.write():
        store.execute(
            "UPDATE sessions SET created_at = ?, updated_at = ? WHERE id = ?",
            (stamp, stamp, session_id),
        )


def populate(store: Store) -> dict[str, str]:
    """Three chats; "Lisbon trip" (newest) has a regenerated reply and an edited question.

    Tree of Lisbon trip:
        q1 "Plan three days in Lisbon"
        ├─ a1 "Day one: Alfama…"         (first reply)
        └─ a2 "Start in Belém…"          (regenerated; active)
           ├─ q2 "What about food?"  → a3 "Try pastéis de nata…"
           └─ q2b "And the museums?" → a4 "The Gulbenkian…"   (newest: active leaf)
    """
    manager = SessionManager(store)
    loop = asyncio.new_event_loop()
    ids = {}
    try:
        python = manager.create("Python help", id="chat-python", model="demo")
        loop.run_until_complete(
            manager.append_all(
                python.id,
                [
                    text("p1", "user", "How do I reverse a list in Python?", 0),
                    text(
                        "p2",
                        "assistant",
                        "Use `reversed(xs)` or slicing:\n\n```python\nxs[::-1]\n```",
                        1,
                    ),
                ],
            )
        )
        set_times(store, python.id, 5)
        ids["python"] = python.id
        recipes = manager.create("Soup recipes", id="chat-soup", model="demo")
        loop.run_until_complete(
            manager.append_all(
                recipes.id,
                [
                    text("s1", "user", "A quick tomato soup?", 10),
                    text("s2", "assistant", "Roast tomatoes with garlic, blend with stock.", 11),
                ],
            )
        )
        set_times(store, recipes.id, 15)
        ids["soup"] = recipes.id
        trip = manager.create("Lisbon trip", id="chat-lisbon", model="demo")
        sid = trip.id
        run = loop.run_until_complete
        run(manager.append(sid, text("q1", "user", "Plan three days in Lisbon", 20), None))
        run(
            manager.append(
                sid, text("a1", "assistant", "Day one: Alfama and the castle.", 21), "q1"
            )
        )
        run(
            manager.append(sid, text("a2", "assistant", "Start in Belém with the tower.", 22), "q1")
        )
        run(manager.append(sid, text("q2", "user", "What about food?", 23), "a2"))
        run(manager.append(sid, text("a3", "assistant", "Try pastéis de nata in Belém.", 24), "q2"))
        run(manager.append(sid, text("q2b", "user", "And the museums?", 25), "a2"))
        run(manager.append(sid, text("a4", "assistant", "The Gulbenkian is a must.", 26), "q2b"))
        set_times(store, sid, 30)
        ids["lisbon"] = sid
    finally:
        loop.close()
    return ids


def make_app(store: Store, config: Config | None = None, **kwargs) -> ChatApp:
    """An app on `store`, starting from a fresh UI state (unless one is given)."""
    kwargs.setdefault("ui_state", UiState())
    return ChatApp(store, config or Config(), **kwargs)


def notices(app) -> str:
    """The text of the notices (toasts) on the screen now (`run_test(notifications=True)`:
    Textual's tests draw none by default)."""
    return " ".join(str(toast.render()) for toast in app.screen.query("Toast"))


@dataclass(frozen=True)
class Run:
    """A run of text as the screen shows it: where, what, and in which colours."""

    line: int
    column: int
    text: str
    color: str
    """`#rrggbb` as drawn (reverse and dim applied)."""
    background: str | None
    """`#rrggbb`, or None for the terminal's own background."""


_SVG_LINE_HEIGHT = re.compile(r"line-height: ([\d.]+)px")
_SVG_CLASS = re.compile(r"\.(terminal-\d+-r\d+) \{ fill: (#[0-9a-f]{6})")
_SVG_RECT = re.compile(
    r'<rect fill="(#[0-9a-f]{6})" x="([\d.]+)" y="([\d.]+)" width="[\d.]+" '
    r'height="[\d.]+" shape-rendering="crispEdges"/>'
)
_SVG_TEXT = re.compile(
    r'<text class="(terminal-\d+-r\d+)" x="([\d.]+)" y="([\d.]+)" '
    r'textLength="([\d.]+)"[^>]*>([^<]*)</text>'
)


def screen_runs(app: App) -> list[Run]:
    """The screen as a user sees it, read from Textual's screenshot (`export_screenshot`,
    an SVG): each run of text with its colours, top to bottom, left to right. Text is as
    the app composed it (a control character in a cell stays in the run); runs of only
    spaces are not drawn as text, so they are not here."""
    svg = app.export_screenshot()
    found = _SVG_LINE_HEIGHT.search(svg)
    assert found, "no line height in the screenshot"
    height = float(found.group(1))
    colors = dict(_SVG_CLASS.findall(svg))
    backgrounds = {(x, int(float(y) // height)): fill for fill, x, y in _SVG_RECT.findall(svg)}
    runs = []
    for name, x, y, length, escaped in _SVG_TEXT.findall(svg):
        value = html.unescape(escaped).replace("\xa0", " ")
        if value == "\n":
            continue  # each line's end
        line = int(float(y) // height)
        column = round(float(x) / (float(length) / len(value)))
        runs.append(Run(line, column, value, colors[name], backgrounds.get((x, line))))
    return runs


def screen_lines(app: App) -> list[str]:
    """The screen's lines as a user reads them (from `screen_runs`)."""
    lines: dict[int, str] = {}
    for run in screen_runs(app):
        line = lines.get(run.line, "")
        lines[run.line] = line + " " * max(0, run.column - cell_len(line)) + run.text
    return [lines.get(n, "") for n in range(max(lines, default=-1) + 1)]


@dataclass
class Sent:
    """What the app has sent its terminal (`record_terminal`)."""

    frames: list[str] = field(default_factory=list)
    """Each frame drawn, first first: the text a terminal is sent, escape sequences and all."""
    controls: list[str] = field(default_factory=list)
    """Textual's other writes, between frames: the bell, the mouse pointer's shape, a copy
    to the clipboard."""


def record_terminal(app: App) -> Sent:
    """Keep what `app` sends its terminal. Run the app with `run_test(headless=False)`:
    Textual sends nothing to a headless driver. The driver here is headless in all but
    that (no terminal is touched), and only Textual's public driver interface is used:
    `App.driver_class`, and each frame written then flushed (a frame is the last write
    before a `flush`; Textual's other writes are never flushed)."""
    sent = Sent()
    pending: list[str] = []

    class Recorder(HeadlessDriver):
        @property
        def is_headless(self) -> bool:
            return False

        def write(self, data: str) -> None:
            pending.append(data)

        def flush(self) -> None:
            if pending:
                sent.frames.append(pending.pop())
                sent.controls.extend(pending)
                pending.clear()

    app.driver_class = Recorder
    return sent


LOOK_EVERY = 0.02
"""Seconds between two looks at a condition being waited for."""


async def fill_the_chat(app: App, pilot, count: int = 12):
    """The open chat, its stored messages drawn, with `count` more questions after them
    (12: longer than a 40-row screen, so everything in the chat scrolls). Returns the
    chat view; the caller settles the screen as its test needs."""
    from store import Message
    from widgets import MessageView

    await wait_until(pilot, lambda: len(app.screen.query(MessageView)) >= 4)
    chat = app.screen.chat_view  # type: ignore[attr-defined]
    for n in range(count):
        text = f"earlier {n}"
        await chat.add_message(
            Message(id=f"e{n}", role="user", parts=[{"type": "text", "text": text}])
        )
    return chat


async def wait_until(pilot, condition, seconds: float = 20.0) -> None:
    """Until `condition()` holds, letting the app run between looks (never a fixed wait).
    With no app (`pilot` None), the event loop runs between looks."""
    for _ in range(int(seconds / LOOK_EVERY)):
        if condition():
            return
        if pilot is None:
            await asyncio.sleep(LOOK_EVERY)
        else:
            await pilot.pause(LOOK_EVERY)
    raise AssertionError("timed out waiting")


def wait_until_sync(condition, seconds: float = 20.0, every: float = LOOK_EVERY):
    """`wait_until` for a test with no event loop (a subprocess, tmux, another thread
    doing the work): `condition()`'s first true value; AssertionError after `seconds`.
    `every`: seconds between looks (a look that runs a process is not free)."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(every)


def spy(
    monkeypatch, owner: object, name: str, note: Callable[..., object] | None = None
) -> list[object]:
    """Calls of `owner.name` from now on, each noted in the list returned: `note(*args,
    **kwargs)`, by default the first argument (None without one). The call goes on."""
    original = getattr(owner, name)
    calls: list[object] = []

    def noting(*args, **kwargs):
        calls.append(note(*args, **kwargs) if note else (args[0] if args else None))
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, noting)
    return calls
