"""`chatui ask`: one turn from the shell, stored as a chat like any other.

The prompt comes from the arguments and/or standard input (`cat log | chatui ask
"explain"`: the piped text first, then the words). The turn runs through the
app's own path: `Workspace.start_reply` (a reply job on `ChatEngine`), so the
chat, its branch and its memory writes are stored exactly as the app stores
them, and it opens in the app with its tree.

Where the reply goes is an `Output`: plain text as it arrives when stdout is
not a terminal (a script gets the model's words, byte for byte), Markdown
rendered by rich when it is (`chatui.tui.shell_markdown`), or one JSON object
at the end (`--json`). Failures map to exit codes by kind (`exits`).

Design notes:
- A turn that stores nothing (no API key) removes the chat it made, as the app
  does: an empty chat must not linger in the list.
- A reader that goes away (`| head -1`) cancels the reply: what arrived is
  stored, marked cancelled, and the command ends quietly (`run` maps the
  broken pipe). ctrl+c does the same and exits 130.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from typing import IO, TYPE_CHECKING, Any, Protocol

from store.text import plain

from ..transfer.text import neutralise, one_line
from .base import BAD_INPUT, NOT_FOUND, OK, USAGE, CliError, _open, _resolve
from .exits import code_for_failure

if TYPE_CHECKING:
    from ..core.config import Config

__all__ = ["AskRequest", "Output", "add_ask_command", "ask", "cmd_ask", "read_prompt"]

MAX_STDIN = 8 * 1024 * 1024
"""The most standard input `ask` takes (bytes): a prompt, not a data set."""


@dataclass(frozen=True)
class AskRequest:
    """Everything one `chatui ask` needs, as plain data (it may travel to another
    process as JSON)."""

    prompt: str
    name: str
    """The new chat's name (from the words given, else the piped text)."""
    db: str | None = None
    model: str | None = None
    agent: str | None = None
    persona: str | None = None
    continue_last: bool = False
    chat: str | None = None
    at: str | None = None
    attachments: tuple[str, ...] = ()
    """Files sent with the prompt (absolute paths: the asking shell's folder applied)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AskRequest:
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in known})


class Output(Protocol):
    """Where a turn's words go as they arrive."""

    def text(self, delta: str) -> None: ...

    def notice(self, text: str) -> None: ...

    def finish(self, result: dict[str, Any]) -> None: ...


@dataclass
class _Turn:
    """What one turn produced, gathered from its events."""

    session_id: str
    name: str
    model: str
    user_id: str | None = None
    reply_id: str | None = None
    texts: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    status: str = "complete"
    usage: dict[str, float] = field(
        default_factory=lambda: {"input_tokens": 0, "output_tokens": 0, "cost": 0.0}
    )
    failure: tuple[str, str, str] | None = None
    """(kind, title, detail) of the failure that ended the turn."""

    def result(self, code: int) -> dict[str, Any]:
        error = None
        if self.failure is not None:
            kind, title, detail = self.failure
            error = {"kind": kind, "title": title, "detail": detail, "exit_code": code}
        return {
            "chat_id": self.session_id,
            "chat_name": self.name,
            "user_message_id": self.user_id,
            "reply_id": self.reply_id,
            "model": self.model,
            "status": self.status,
            "text": "".join(self.texts),
            "reasoning": "".join(self.reasoning),
            "usage": self.usage,
            "error": error,
        }


# -- the prompt ---------------------------------------------------------------------


def read_prompt(
    words: list[str], stdin: IO[bytes] | None, *, attached: tuple[str, ...] = ()
) -> tuple[str, str]:
    """The prompt and a name for a new chat, from the words and piped input (`stdin`
    None: a terminal, nothing piped). With files `attached` the prompt may be empty
    (the chat is named after the first file).

    Raises:
        CliError: nothing to ask (USAGE), or input that is not UTF-8 text or too large
            (BAD_INPUT).
    """
    asked = " ".join(words).strip()
    piped = ""
    if stdin is not None:
        data = stdin.read(MAX_STDIN + 1)
        if len(data) > MAX_STDIN:
            raise CliError(
                f"standard input is larger than {MAX_STDIN // (1024 * 1024)} MB; "
                "ask about a part of it",
                BAD_INPUT,
            )
        try:
            piped = data.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            raise CliError(
                f"standard input is not UTF-8 text (byte {exc.start}); "
                "pipe text, not a binary file",
                BAD_INPUT,
            ) from None
    if not asked and not piped and not attached:
        raise CliError("nothing to ask: give a prompt, or pipe text in", USAGE)
    prompt = f"{piped}\n\n{asked}" if piped and asked else (asked or piped)
    first_file = os.path.basename(attached[0]) if attached else ""
    # Named as the question reads, not as it is marked up ("**Why** `pip`" → "Why pip").
    return prompt, one_line(plain(asked or piped) or first_file, 48)


def _stdin() -> IO[bytes] | None:
    stream = sys.stdin
    if stream is None or stream.closed or stream.isatty():
        return None
    return stream.buffer


# -- the turn -------------------------------------------------------------------------


def open_database(db: str | None) -> AbstractContextManager[Any]:
    """The database of `--db` (None: the configured one), created if missing."""
    return _open(argparse.Namespace(db=db), create=True)


async def ask(
    request: AskRequest,
    out: Output,
    *,
    opener: Callable[[str | None], AbstractContextManager[Any]] = open_database,
    config: Config | None = None,
) -> int:
    """Run one turn for `request`, its words to `out`; returns the exit code.

    `opener`: how the database is had (the ask process keeps one open across turns).
    `config`: the config as the caller read it for this turn (read here if None).

    Raises:
        CliError: no such chat, message or agent; conflicting options.
        BrokenPipeError: the reader went away (the reply was cancelled, kept).
    """
    from ..core.config import ConfigError, load_config
    from ..core.workspace import JobsFull, Workspace

    if config is None:
        try:
            config = load_config()
        except ConfigError as exc:
            raise CliError(str(exc), USAGE) from exc
    with opener(request.db) as store:
        workspace = Workspace(store, config, launch_model=request.model)
        try:
            attached = _attach(workspace, request.attachments)  # before any chat is made
            turn, parent = await _target(workspace, store, request)
            relay = _Relay(turn, out)
            unsubscribe = workspace.subscribe(relay.take)
            try:
                workspace.start_reply(
                    turn.session_id,
                    "send",
                    text=request.prompt,
                    parent_id=parent,
                    model=request.model if (request.chat or request.continue_last) else None,
                    attachments=attached,
                )
            except (JobsFull, RuntimeError) as exc:
                raise CliError(str(exc), USAGE) from exc
            try:
                code = await _drain(workspace, turn, relay)
            finally:
                unsubscribe()
                if turn.user_id is None and not (request.chat or request.continue_last):
                    workspace.discard_if_empty(turn.session_id)
        finally:
            await workspace.shutdown()
    out.finish(turn.result(code))
    return code


def _attach(workspace: Any, files: tuple[str, ...]) -> list[Any]:
    """The files checked and stored, as the app's tray does (`Workspace.attach_file`).

    Raises:
        CliError: one cannot be attached (BAD_INPUT; nothing is sent).
    """
    from ..core.workspace import AttachRefused

    attached = []
    for path in files:
        try:
            attached.append(workspace.attach_file(path))
        except AttachRefused as exc:
            raise CliError(str(exc), BAD_INPUT) from None
    return attached


async def _target(workspace: Any, store: Any, request: AskRequest) -> tuple[_Turn, Any]:
    """The chat the turn goes to and the message it answers (LATEST: the newest
    message; a new chat is created here)."""
    from store import LATEST

    from ..core.facts import choose_model
    from .base import _resolve_message

    if request.at and not (request.chat or request.continue_last):
        raise CliError("--at goes with --chat ID or -c (the message is in that chat)", USAGE)
    if request.chat and request.continue_last:
        raise CliError("give --chat ID or -c, not both", USAGE)
    if request.chat or request.continue_last:
        if request.agent or request.persona:
            which = "--agent" if request.agent else "--persona"
            raise CliError(f"{which} starts a new chat; this chat has its own", USAGE)
        if request.chat:
            info = _resolve(store, request.chat)
            if info.deleted_at is not None:
                raise CliError(
                    f"chat {info.id[:12]} is deleted (restore it in the app first)", NOT_FOUND
                )
        else:
            info = workspace.newest_chat()
            if info is None:
                raise CliError("no chat to continue yet (ask without -c first)", NOT_FOUND)
        chat = workspace.open(info.id, info)
        parent = _resolve_message(store, info, request.at) if request.at else chat.active_leaf
        agent = workspace._runtime.agent(info.agent_id)
        model = request.model or choose_model(info, agent, workspace.config).model
        return _Turn(info.id, info.name, model), parent if parent else LATEST
    agent = None
    if request.agent:
        wanted = request.agent.strip().lower()
        agent = next((a for a in workspace.agents() if a.name.lower() == wanted), None)
        if agent is None:
            names = ", ".join(a.name for a in workspace.agents()) or "none configured"
            raise CliError(f"no agent {one_line(request.agent)!r} (agents: {names})", NOT_FOUND)
    agent_id = agent.id if agent else None
    persona = None
    if request.persona:  # as ctrl+n starts a persona's chat: checked, then created with it
        from ..core.params import ParamsError
        from ..core.workspace import UnknownPersona

        try:
            persona = await workspace.check_persona(request.persona, agent_id)
        except UnknownPersona as exc:
            raise CliError(str(exc), NOT_FOUND) from None
        except ParamsError as exc:
            raise CliError(str(exc), USAGE) from None
        model = request.model or workspace.persona_model(persona, agent_id)
    else:
        model = request.model or choose_model(None, agent, workspace.config).model
    info = workspace.create_chat(request.name, model=model, agent_id=agent_id, persona=persona)
    return _Turn(info.id, info.name, model), LATEST


class _Relay:
    """The turn's events, taken as the job emits them: a piece of the reply goes to the
    output at once, inside the event's own call (through a queue it would wait for the
    job's task to finish with every chunk already read, the reply's end included, before
    the first word was printed)."""

    def __init__(self, turn: _Turn, out: Output) -> None:
        self.turn = turn
        self.out = out
        self.ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        """Done at the job's end, or failed with what the output raised (a broken pipe)."""
        self._wrote = False
        self._separate = False

    def take(self, event: Any) -> None:
        if getattr(event, "session_id", None) != self.turn.session_id or self.ended.done():
            return
        try:
            if self._take(event):
                self.ended.set_result(None)
        except Exception as exc:  # the reader went away: `_drain` stops the reply
            self.ended.set_exception(exc)

    def _take(self, event: Any) -> bool:
        """One event into the turn and the output; True at the job's end."""
        from ..core.events import (
            JobEnded,
            MessageStored,
            Notice,
            ReplyDelta,
            ReplyFinished,
            ReplyStarted,
            TurnFailed,
            UsageRecorded,
        )

        turn, out = self.turn, self.out
        match event:
            case MessageStored(message=message) if message.role == "user":
                turn.user_id = message.id
            case ReplyStarted(message=message, model=model):
                turn.reply_id, turn.model = message.id, model
                self._separate = self._wrote  # a reply after a tool round: a paragraph apart
            case ReplyDelta(text=text, kind="text") if text:
                if self._separate:
                    turn.texts.append("\n\n")
                    self._separate = False
                    out.text("\n\n")
                turn.texts.append(text)
                self._wrote = True
                out.text(text)
            case ReplyDelta(text=text, kind="reasoning"):
                turn.reasoning.append(text)
            case ReplyFinished(message=message, status=status):
                turn.reply_id = message.id
                turn.status = status
            case UsageRecorded():
                turn.usage["input_tokens"] += event.input_tokens
                turn.usage["output_tokens"] += event.output_tokens
                turn.usage["cost"] += event.cost
            case Notice(text=text):
                out.notice(text)
            case TurnFailed():
                turn.failure = (event.kind, event.title, event.detail)
            case JobEnded(outcome=outcome, failure=failure, storage=storage):
                if outcome == "failed" and turn.failure is None:
                    text, title = failure or ("", "The reply failed")
                    turn.failure = ("storage" if storage else "unknown", title, text)
                if outcome == "cancelled":
                    turn.status = "cancelled"
                return True
        return False


async def _drain(workspace: Any, turn: _Turn, relay: _Relay) -> int:
    """Until the turn's job ends (its events go to the output as they come, `_Relay`);
    returns the exit code."""
    try:
        await relay.ended
    except (BrokenPipeError, asyncio.CancelledError):
        # The reader went away, or ctrl+c: stop the reply; what arrived is stored.
        workspace.cancel_reply(turn.session_id)
        await asyncio.shield(workspace.wait_for_replies(turn.session_id))
        raise
    if turn.failure is None:
        return OK
    if turn.status != "cancelled":
        turn.status = "error"
    return code_for_failure(turn.failure[0])


# -- outputs --------------------------------------------------------------------------


class PlainOutput:
    """The model's words as they arrive, unchanged (stdout is a pipe or a file)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.last = "\n"

    def text(self, delta: str) -> None:
        self.stream.write(delta)
        self.stream.flush()
        self.last = delta[-1:] or self.last

    def notice(self, text: str) -> None:
        print(f"chatui: {one_line(text)}", file=sys.stderr)

    def finish(self, result: dict[str, Any]) -> None:
        if self.last != "\n":
            self.stream.write("\n")
        self.stream.flush()
        _report(result)


class JsonOutput:
    """Nothing while the reply streams; one JSON object at the end (`--json`)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def text(self, delta: str) -> None:
        pass

    def notice(self, text: str) -> None:
        print(f"chatui: {one_line(text)}", file=sys.stderr)

    def finish(self, result: dict[str, Any]) -> None:
        from ..transfer.exports import json_text

        self.stream.write(json_text(result) + "\n")
        self.stream.flush()
        _report(result)


class TerminalOutput(PlainOutput):
    """Markdown rendered by rich as it streams (stdout is a terminal)."""

    def __init__(self, stream: IO[str]) -> None:
        super().__init__(stream)
        # The one drawing module the CLI uses, loaded only for a terminal.
        from ..tui.shell_markdown import MarkdownStream

        self.markdown = MarkdownStream(stream)

    def text(self, delta: str) -> None:
        self.markdown.add(neutralise(delta))  # model output must not act on the terminal

    def finish(self, result: dict[str, Any]) -> None:
        self.markdown.close()
        _report(result)


def _report(result: dict[str, Any]) -> None:
    """A failure's one line on stderr (the words that arrived stay on stdout)."""
    line = error_line(result)
    if line:
        print(line, file=sys.stderr)


def error_line(result: dict[str, Any]) -> str | None:
    """The line a failed turn prints on stderr (None: it did not fail)."""
    error = result.get("error")
    if not error:
        return None
    what = f"{error['title']}: {error['detail']}" if error["detail"] else error["title"]
    return f"chatui: error: {one_line(what, 400)}"


def make_output(as_json: bool, stream: IO[str]) -> Output:
    """The output for `stream`: JSON, rendered Markdown on a terminal, else plain text."""
    if as_json:
        return JsonOutput(stream)
    if stream.isatty():
        return TerminalOutput(stream)
    return PlainOutput(stream)


# -- the command ----------------------------------------------------------------------


def request_from(
    args: argparse.Namespace, stdin: IO[bytes] | None, cwd: str | None = None
) -> AskRequest:
    """The `ask` that parsed `args` (and the piped `stdin`) ask for; `cwd`: the folder
    relative `-a` paths are in (default: this process's).

    Raises:
        CliError: nothing to ask, or piped input that cannot be a prompt.
    """
    folder = cwd or os.getcwd()
    files = tuple(os.path.join(folder, os.path.expanduser(p)) for p in args.attach or ())
    prompt, name = read_prompt(args.prompt, stdin, attached=files)
    return AskRequest(
        prompt=prompt,
        name=name,
        db=args.db,
        model=getattr(args, "model", None),
        agent=args.agent,
        persona=args.persona,
        continue_last=args.continue_last,
        chat=args.chat,
        at=args.at,
        attachments=files,
    )


def cmd_ask(args: argparse.Namespace) -> int:
    request = request_from(args, _stdin())
    out = make_output(args.json, sys.stdout)
    return asyncio.run(ask(request, out))


def add_ask_command(
    command: Callable[..., argparse.ArgumentParser],
) -> None:
    p = command(
        "ask",
        cmd_ask,
        "Ask a model from the shell: one turn, streamed to stdout, stored as a chat.",
        'cat error.log | chatui ask "what went wrong?"',
    )
    p.add_argument(
        "prompt", nargs="*", metavar="PROMPT", help="the question (after any piped text)"
    )
    p.add_argument(
        "--model",
        metavar="NAME",
        default=argparse.SUPPRESS,
        help="the model (a new chat keeps it; in an existing chat, this turn only)",
    )
    p.add_argument("--agent", metavar="NAME", help="a new chat runs this agent")
    p.add_argument(
        "--persona",
        metavar="NAME",
        help="a new chat starts as this persona of the config (prompt, model, parameters)",
    )
    p.add_argument(
        "-c",
        "--continue",
        dest="continue_last",
        action="store_true",
        help="continue the most recent chat, on its active branch",
    )
    p.add_argument("--chat", metavar="ID", help="continue this chat (id or unique prefix)")
    p.add_argument(
        "--at",
        metavar="MESSAGE",
        help="with --chat/-c: answer this message (a new branch if it has replies)",
    )
    p.add_argument(
        "-a",
        "--attach",
        action="append",
        metavar="FILE",
        help="send this image or text file with the prompt (repeat for more)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object at the end")
