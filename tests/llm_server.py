"""A scripted OpenAI-compatible server on 127.0.0.1 for tests.

Tests queue the responses the "model" gives (`server.script(text("Hi"))`),
point LiteLLM at `server.base_url` and then read `server.requests` to see
exactly what the model was sent. It speaks just enough of the OpenAI wire
format for the real LiteLLM client: `POST /v1/chat/completions` (streamed as
SSE in chunked transfer encoding, or plain JSON) and `GET /v1/models`.

Faults are scripted the same way: HTTP errors in OpenAI's error shape, a
stream cut off mid-token (the connection is closed without the final chunk),
malformed chunks, and a hang that outlasts the client's timeout.

`llama_cpp_python(n_ctx)` makes the server behave as llama-cpp-python's does
(issue 22): tools reach the prompt only with a `tool_choice`; an automatic
tool choice is never streamed: a streamed request whose scripted answer is a
tool call gets what llama-cpp-python 0.3 sends when its model picks a tool (the
error is raised inside the stream it already began): a 200 with no event, and
the connection closed under the client, which learns it only when it sends its
next request there (`streamed_tool_choice = "refuse"`: an error saying so, as
its message reads, instead); text streams as usual; a prompt longer than
`n_ctx` gets an empty 200 when streamed and a context-length 400 otherwise;
`/v1/models` says nothing of the window; a streamed reply never ends with
usage, whatever the client asks (a whole reply has it); prompt tokens are
counted by one toy tokenizer (`count_tokens`), which `/extras/tokenize` and
`/tokenize` expose.

`ollama = True` adds Ollama's own API (`/api/tags`, `/api/chat`; see the attribute).
"""

from __future__ import annotations

import io
import json
import re
import select
import socket
import struct
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

__all__ = [
    "LLMServer",
    "count_tokens",
    "render_prompt",
    "Scripted",
    "broken_stream",
    "context_length_error",
    "error",
    "hang",
    "json_reply",
    "malformed",
    "text",
    "tool_calls",
]


@dataclass
class Scripted:
    """One scripted answer to one chat-completions request."""

    kind: str
    text: str = ""
    calls: list[tuple[str, str, str]] = field(default_factory=list)
    """(id, name, arguments JSON) of tool calls."""
    delay: float = 0.0
    """Seconds between streamed chunks."""
    usage: tuple[int, int] | None = (12, 7)
    """(prompt_tokens, completion_tokens) sent when the client asks for usage."""
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 30.0
    """How long a hang lasts (it also ends when the server stops)."""
    finish_reason: str | None = None
    lines: list[str] = field(default_factory=list)
    """Raw SSE `data:` payloads for malformed streams."""
    reasoning: str = ""


def _words(value: str) -> list[str]:
    """Split into word-sized deltas whose concatenation is exactly `value`."""
    return re.findall(r"\s*\S+|\s+$", value)


def text(
    value: str,
    *,
    delay: float = 0.0,
    usage: tuple[int, int] | None = (12, 7),
    finish_reason: str = "stop",
    reasoning: str = "",
) -> Scripted:
    """A streamed (or, for non-streamed requests, plain) text reply, word by word.

    `reasoning` is streamed first as `reasoning_content` deltas (as reasoning models do).
    """
    return Scripted(
        "text",
        text=value,
        delay=delay,
        usage=usage,
        finish_reason=finish_reason,
        reasoning=reasoning,
    )


def tool_calls(
    *calls: tuple[str, Any] | tuple[str, str, Any],
    text_before: str = "",
    delay: float = 0.0,
    usage: tuple[int, int] | None = (20, 9),
) -> Scripted:
    """Streamed tool calls: each call is (name, arguments) or (id, name, arguments).

    Arguments may be a dict (encoded here) or a raw string (sent as-is, so a
    test can send invalid JSON). They are split across several chunks the
    way OpenAI does.
    """
    normalised = []
    for i, call in enumerate(calls):
        if len(call) == 2:
            call_id, name, args = f"call_{i}_{uuid.uuid4().hex[:6]}", call[0], call[1]
        else:
            call_id, name, args = call
        raw = args if isinstance(args, str) else json.dumps(args)
        normalised.append((call_id, name, raw))
    return Scripted(
        "tools",
        text=text_before,
        calls=normalised,
        delay=delay,
        usage=usage,
        finish_reason="tool_calls",
    )


def json_reply(value: str, *, usage: tuple[int, int] | None = (12, 7)) -> Scripted:
    """A non-streamed chat completion, whatever the request asked for."""
    return Scripted("json", text=value, usage=usage)


def error(
    status: int,
    message: str = "",
    *,
    code: str | None = None,
    type: str = "invalid_request_error",
    headers: dict[str, str] | None = None,
    body: Any = None,
) -> Scripted:
    """An HTTP error in OpenAI's `{"error": {...}}` shape (or a raw `body`)."""
    if body is None:
        body = {
            "error": {
                "message": message or f"error {status}",
                "type": type,
                "param": None,
                "code": code,
            }
        }
    return Scripted("error", status=status, body=body, headers=dict(headers or {}))


def context_length_error() -> Scripted:
    """OpenAI's 400 for a prompt longer than the model's window."""
    return error(
        400,
        "This model's maximum context length is 8192 tokens. However, your "
        "messages resulted in 9000 tokens. Please reduce the length of the "
        "messages.",
        code="context_length_exceeded",
    )


def broken_stream(value: str, *, delay: float = 0.0) -> Scripted:
    """Stream `value` word by word, then drop the connection mid-token (no [DONE])."""
    return Scripted("broken", text=value, delay=delay)


def malformed(*lines: str, text_before: str = "") -> Scripted:
    """A stream whose `data:` payloads include garbage (after `text_before` streamed)."""
    return Scripted(
        "malformed", text=text_before, lines=list(lines) or ["{this is not json", "[1, 2"]
    )


def hang(seconds: float = 30.0, *, text_before: str = "") -> Scripted:
    """Answer nothing (or stream `text_before` first) for `seconds`."""
    return Scripted("hang", text=text_before, seconds=seconds)


class LLMServer:
    """The running server. Start with `start()`, stop with `stop()` (or use the fixture)."""

    def __init__(self, model_ids: tuple[str, ...] = ("test-model",)) -> None:
        self.queue: deque[Scripted] = deque()
        self.requests: list[dict[str, Any]] = []
        """JSON bodies of every chat-completions request, in arrival order."""
        self.request_times: list[float] = []
        self.request_headers: list[dict[str, str]] = []
        self.request_paths: list[str] = []
        """The path each of `requests` was sent to."""
        self.default: Scripted | None = None
        """Answer used when the queue is empty (None: a 500 saying the script ran out)."""
        self.model_ids = model_ids
        self.strict = False
        """Reject (500, as llama.cpp's templates do) messages a strict server refuses:
        an assistant message without string `content`, a tool message without its id."""
        self.model_info: dict[str, Any] = {}
        """Extra fields of every `/v1/models` entry (`context_length`, `meta`, …)."""
        self.props: Any = None
        """llama.cpp's `GET /props` answer (None: 404)."""
        self.ollama_show: Any = None
        """Ollama's `POST /api/show` answer (None: 404)."""
        self.ollama = False
        """Speak Ollama's own API as well: `GET /api/tags` lists `model_ids`, and
        `POST /api/chat` answers the script in Ollama's shape (a stream of JSON lines,
        tool calls with their arguments as objects, usage as `prompt_eval_count` and
        `eval_count` on the last line), and the root's `/chat/completions` is 404 (Ollama
        serves it only under `/v1`). `POST /api/chat` is 404 otherwise, as on llama.cpp;
        `/v1/...` is served either way, as Ollama serves it too."""
        self.info_delay = 0.0
        """Seconds every model-info route waits before answering (a slow server)."""
        self.info_gate: threading.Event | None = None
        """When set to an event, every model-info route waits until the test sets it (a
        server slower than anything the app does meanwhile, however loaded the machine)."""
        self.info_requests: list[str] = []
        """Paths of model-info requests, in arrival order."""
        self.function_calling = True
        self.streamed_tool_choice = "empty"
        """In llama-cpp-python mode, a streamed automatic tool choice that would call a
        tool: "empty" (a 200 with no event, then the connection reset when the client
        sends its next request on it: llama-cpp-python 0.3.36, measured) or "refuse" (a
        500 saying "Automatic streaming tool choice is not supported")."""
        self.tool_call_room = 0
        """In llama-cpp-python mode, the tokens a tool call takes past its prompt: a whole
        call whose model picks a tool with less room left in the window gets what
        llama-cpp-python 0.3.36 sends when the window fills as the call is written
        (measured, a 1,484-token prompt in a 1,536 window): a 500 saying "could not
        broadcast input array from shape (49152,) into shape (0,)"."""
        self.count_gate: threading.Event | None = None
        """When set to an event, every whole call of one token (a count asked in the
        background) waits for it before it is answered: a count the server has not
        begun, queued behind its lock as llama-cpp-python answers one request at a
        time. One whose client left meanwhile is dropped unanswered, as llama-cpp-python
        drops a whole call whose client left before its model was invoked."""
        self._count_slots: list[str | None] = []
        """What came of each count that waited at `count_gate`, by arrival (None: waiting)."""
        self.dropped = 0
        """Requests that arrived on a connection the server had let go (and were reset)."""
        self.n_ctx: int | None = None
        """Set by `llama_cpp_python()`: the strict llama-cpp-python mode's window."""
        self.prompt_tokens: list[int] = []
        """In llama-cpp-python mode: each request's prompt tokens as the server counted."""
        self.tokenize_requests: list[dict[str, Any]] = []
        self.tokenize_shape = "llama"
        """In llama-cpp-python mode, the tokenize route's shape: "llama" (llama.cpp's
        `/tokenize` {"content"} and `/extras/tokenize` {"input"}) or "vllm" (only
        `/tokenize` {"prompt"}, 400 for anything else)."""
        self.stream_usage = True
        """False: a streamed reply never ends with usage, whatever the client asks
        (llama-cpp-python's server, so `llama_cpp_python()` sets it); a whole reply
        still has it."""
        self.tokenize_bos = False
        """The tokenize routes add a BOS token to every text, as llama-cpp-python's
        `/extras/tokenize` does for a model that takes one (the prompt has one BOS)."""
        self.honours_max_tokens = False
        """Cut a whole (not streamed) reply at the request's `max_tokens` (toy tokens):
        its text, or a tool call's arguments mid-JSON, as llama-cpp-python does for a
        named tool choice: `finish_reason` "tool_calls" all the same for a call (measured,
        0.3.36), "length" for text; `completion_tokens` is the cap. (Its
        chatml-function-calling ignores `max_tokens` with an automatic tool choice.)"""
        self.counted_usage = False
        """Report usage as a server that counts but has no tokenize route (Ollama): the
        rendered prompt (`render_prompt`, tools included) and the reply's text by the toy
        tokenizer; each prompt's count goes to `prompt_tokens` too."""
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ------------------------------------------------------------

    def script(self, *responses: Scripted) -> LLMServer:
        """Queue answers; each request takes the next one."""
        with self._lock:
            self.queue.extend(responses)
        return self

    def text(self, value: str, **kwargs: Any) -> LLMServer:
        return self.script(text(value, **kwargs))

    def tool_calls(self, *calls: Any, **kwargs: Any) -> LLMServer:
        return self.script(tool_calls(*calls, **kwargs))

    def error(self, status: int, message: str = "", **kwargs: Any) -> LLMServer:
        return self.script(error(status, message, **kwargs))

    def llama_cpp_python(self, n_ctx: int = 2048, *, function_calling: bool = True) -> LLMServer:
        """Behave as llama-cpp-python's server with a `chatml-function-calling` template
        and a window of `n_ctx` tokens (see the module's docstring). `function_calling`
        False: its default template, which drops the tools (and so streams anything)."""
        self.n_ctx = n_ctx
        self.function_calling = function_calling
        self.stream_usage = False
        return self

    def _peek(self) -> Scripted | None:
        with self._lock:
            return self.queue[0] if self.queue else self.default

    def _next(self) -> Scripted | None:
        with self._lock:
            if self.queue:
                return self.queue.popleft()
            return self.default

    @property
    def counts(self) -> list[str]:
        """What came of the counts that waited at `count_gate`, "answered" or "dropped",
        in the order they arrived, up to the first one still waiting: the gate wakes
        them all at once, and a later count's thread may finish first."""
        outcomes: list[str] = []
        with self._lock:
            for outcome in self._count_slots:
                if outcome is None:
                    break
                outcomes.append(outcome)
        return outcomes

    # -- lifecycle --------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._httpd is not None
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LLMServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), daemon=True, name="llm-server"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True when the server is stopping (handlers end early)."""
        return self._stopping.wait(seconds)

    # -- reading what was sent ---------------------------------------------------

    @property
    def last(self) -> dict[str, Any]:
        return self.requests[-1]

    def messages(self, index: int = -1) -> list[dict[str, Any]]:
        return self.requests[index]["messages"]


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients hanging up mid-stream is what these tests do on purpose


class _Handler(BaseHTTPRequestHandler):
    owner: LLMServer
    protocol_version = "HTTP/1.1"
    _broken_off = False
    """The server let this connection go after a stream it broke off (llama-cpp-python's
    error inside a started stream); the client does not know yet."""

    def handle_one_request(self) -> None:
        if not self._broken_off:
            super().handle_one_request()
            return
        self.close_connection = True
        try:
            if cast(io.BufferedReader, self.rfile).peek(
                1
            ):  # its next request, on a gone connection
                with self.owner._lock:
                    self.owner.dropped += 1
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep tests quiet
        pass

    # -- plumbing ---------------------------------------------------------------

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _usage(self, reply: Scripted) -> tuple[int, int]:
        """The reply's usage; in llama-cpp-python mode the prompt as the server counted."""
        prompt, completion = reply.usage or (0, 0)
        if (self.owner.n_ctx is not None or self.owner.counted_usage) and self.owner.prompt_tokens:
            prompt = self.owner.prompt_tokens[-1]
        if self.owner.counted_usage:
            completion = count_tokens(reply.text)
        return prompt, completion

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, payload: str) -> None:
        data = f"data: {payload}\n\n".encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_stream(self) -> None:
        self._chunk("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _cut(self) -> None:
        """Drop the connection without finishing the chunked body."""
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(2)
        except OSError:
            pass

    # -- routes -------------------------------------------------------------------

    def _info(self, payload: Any) -> None:
        owner = self.owner
        with owner._lock:
            owner.info_requests.append(self.path)
        if owner.info_delay:
            owner.wait(owner.info_delay)
        gate = owner.info_gate
        while gate is not None and not gate.wait(0.05) and not owner._stopping.is_set():
            pass
        if payload is None:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
        elif isinstance(payload, bytes):
            self._send_raw(payload)
        else:
            self._send_json(200, payload)

    def _send_raw(self, data: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        path = self.path.rstrip("/")
        if path.endswith("/models"):
            self._info(
                {
                    "object": "list",
                    "data": [
                        {
                            "id": m,
                            "object": "model",
                            "created": 0,
                            "owned_by": "tests",
                            **self.owner.model_info,
                        }
                        for m in self.owner.model_ids
                    ],
                }
            )
        elif path.endswith("/props"):
            self._info(self.owner.props)
        elif path.endswith("/api/tags") and self.owner.ollama:
            self._info({"models": [{"name": m, "model": m} for m in self.owner.model_ids]})
        else:
            self._send_json(
                404,
                {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}},
            )

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/").endswith("/api/show"):
            self._info(self.owner.ollama_show)
            return
        if self.owner.n_ctx is not None and self.path.rstrip("/").endswith("/tokenize"):
            self._tokenize(raw)
            return
        ollama = self.owner.ollama and self.path.rstrip("/").endswith("/api/chat")
        if self.owner.ollama and self.path.rstrip("/") == "/chat/completions":
            self._send_json(404, {"error": "404 page not found"})  # Ollama: only under /v1
            return
        if not ollama and not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(
                404,
                {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}},
            )
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send_json(
                400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}}
            )
            return
        owner = self.owner
        with owner._lock:
            owner.requests.append(body)
            owner.request_paths.append(self.path)
            owner.request_times.append(time.monotonic())
            owner.request_headers.append({k.lower(): v for k, v in self.headers.items()})
        if owner.count_gate is not None and not body.get("stream") and body.get("max_tokens") == 1:
            with owner._lock:
                slot = len(owner._count_slots)
                owner._count_slots.append(None)
            owner.count_gate.wait()
            left = self._client_left()
            with owner._lock:
                owner._count_slots[slot] = "dropped" if left else "answered"
            if left:
                self.close_connection = True
                return
        problem = strict_problem(body) if owner.strict else None
        if problem is not None:
            self._send_json(500, {"error": {"message": problem, "type": "server_error"}})
            return
        if ollama:
            reply = owner._next()
            if reply is None:
                self._send_json(500, {"error": "the test script has no response left"})
            else:
                self._ollama_answer(body, reply)
            return
        if owner.n_ctx is not None and self._llama_cpp_python(body):
            return
        if owner.counted_usage:
            tokens = count_tokens(render_prompt(body.get("messages") or [], body.get("tools")))
            with owner._lock:
                owner.prompt_tokens.append(tokens)
        reply = owner._next()
        if reply is None:
            self._send_json(
                500,
                {
                    "error": {
                        "message": "the test script has no response left",
                        "type": "server_error",
                    }
                },
            )
            return
        self._answer(body, reply)

    def _client_left(self) -> bool:
        """The client closed its side of the connection (its request is read whole)."""
        try:
            ready, _, _ = select.select([self.connection], [], [], 0)
            return bool(ready) and not self.connection.recv(1, socket.MSG_PEEK)
        except OSError:
            return True

    def _tokenize(self, raw: bytes) -> None:
        """llama.cpp's `/tokenize` ({"content"}) and llama-cpp-python's
        `/extras/tokenize` ({"input"}), or vLLM's `/tokenize` ({"prompt"}): the toy
        tokenizer's tokens."""
        vllm = self.owner.tokenize_shape == "vllm"
        try:
            body = json.loads(raw)
            value = body.get("prompt") if vllm else body.get("content", body.get("input"))
        except (ValueError, AttributeError):
            value = None
        if vllm and (not self.path.rstrip("/").endswith("/tokenize") or "/extras" in self.path):
            self._send_json(404, {"detail": "Not Found"})
            return
        if vllm and not isinstance(value, str):
            self._send_json(400, {"object": "error", "message": "prompt: Field required"})
            return
        if not isinstance(value, str):
            self._send_json(422, {"detail": "content must be a string"})
            return
        with self.owner._lock:
            self.owner.tokenize_requests.append(body)
        tokens = list(range(count_tokens(value) + (1 if self.owner.tokenize_bos else 0)))
        extra = {"count": len(tokens), "max_model_len": self.owner.n_ctx} if vllm else {}
        self._send_json(200, {**extra, "tokens": tokens})

    def _llama_cpp_python(self, body: dict[str, Any]) -> bool:
        """The strict mode's refusals; True when the request was answered here."""
        owner = self.owner
        assert owner.n_ctx is not None
        tools = body.get("tools") if body.get("tool_choice") and owner.function_calling else None
        if tools and body.get("stream") and body.get("tool_choice") == "auto":
            if owner.streamed_tool_choice == "empty":
                upcoming = owner._peek()
                if upcoming is not None and upcoming.kind == "tools":
                    self._start_stream()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    self._broken_off = True
                    return True
                # Otherwise its model chose to answer in words: streamed as usual.
            else:
                self._send_json(
                    500,
                    {
                        "error": {
                            "message": "Automatic streaming tool choice is not supported",
                            "type": "internal_server_error",
                        }
                    },
                )
                return True
        tokens = count_tokens(render_prompt(body.get("messages") or [], tools))
        with owner._lock:
            owner.prompt_tokens.append(tokens)
        upcoming = owner._peek()
        if (
            tools
            and not body.get("stream")
            and upcoming is not None
            and upcoming.kind == "tools"
            and tokens <= owner.n_ctx < tokens + owner.tool_call_room
        ):
            owner._next()  # that call is lost with the error
            message = "could not broadcast input array from shape (49152,) into shape (0,)"
            self._send_json(500, {"error": {"message": message, "type": "internal_server_error"}})
            return True
        if tokens <= owner.n_ctx:
            return False
        if body.get("stream"):  # what llama-cpp-python does: 200, and not a byte more
            self._start_stream()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            return True
        self._send_json(
            400,
            {
                "error": {
                    "message": f"This model's maximum context length is {owner.n_ctx} tokens."
                    f" However, you requested {tokens} tokens ({tokens} in the messages, 0 in"
                    " the completion). Please reduce the length of the messages or completion.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
        )
        return True

    def _ollama_answer(self, body: dict[str, Any], reply: Scripted) -> None:
        """The script in Ollama's `/api/chat` shape (text and tool calls)."""
        model = body.get("model", "test-model")
        prompt, completion = reply.usage or (0, 0)
        calls = [
            {"function": {"name": name, "arguments": json.loads(arguments or "{}")}}
            for _, name, arguments in reply.calls
        ]

        def line(content: str, *, done: bool = False, tool_calls: Any = None) -> dict[str, Any]:
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if tool_calls:
                message["tool_calls"] = tool_calls
            answer: dict[str, Any] = {
                "model": model,
                "created_at": "2026-11-27T00:00:00Z",
                "message": message,
                "done": done,
            }
            if done:
                answer |= {
                    "done_reason": "stop",
                    "prompt_eval_count": prompt,
                    "eval_count": completion,
                }
            return answer

        if reply.kind == "error":  # Ollama's shape: the message alone
            said = reply.body.get("error") if isinstance(reply.body, dict) else reply.body
            said = said.get("message") if isinstance(said, dict) else said
            self._send_json(reply.status, {"error": str(said)})
            return
        if not body.get("stream", True):
            self._send_json(200, line(reply.text, done=True, tool_calls=calls))
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(answer: dict[str, Any]) -> None:
            data = json.dumps(answer).encode() + b"\n"
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        for word in _words(reply.text):
            if reply.delay:
                self.owner.wait(reply.delay)
            send(line(word))
        if calls:
            send(line("", tool_calls=calls))
        send(line("", done=True))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _answer(self, body: dict[str, Any], reply: Scripted) -> None:
        model = body.get("model", "test-model")
        stream = bool(body.get("stream"))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        include_usage = include_usage and self.owner.stream_usage
        if reply.kind == "error":
            self._send_json(reply.status, reply.body, reply.headers)
            return
        if reply.kind == "json" or (not stream and reply.kind in ("text", "tools")):
            usage = self._usage(reply)
            cap = body.get("max_tokens")
            if self.owner.honours_max_tokens and isinstance(cap, int):
                reply, usage = _capped(reply, cap, usage)
            self._send_json(200, _completion(model, reply, usage))
            return
        if reply.kind == "hang" and not reply.text:
            self.owner.wait(reply.seconds)
            self._cut()
            return
        self._start_stream()
        chunk_id = f"chatcmpl-{uuid.uuid4().hex[:12]}"

        def delta(d: dict[str, Any], finish: str | None = None) -> None:
            self._chunk(
                json.dumps(
                    {
                        "id": chunk_id,
                        "object": "chat.completion.chunk",
                        "created": int(time.time()),
                        "model": model,
                        "choices": [{"index": 0, "delta": d, "finish_reason": finish}],
                    }
                )
            )

        delta({"role": "assistant", "content": ""})
        for word in _words(reply.reasoning):
            delta({"reasoning_content": word})
        for word in _words(reply.text):
            if reply.delay:
                if self.owner.wait(reply.delay):
                    return self._cut()
            delta({"content": word})
        if reply.kind == "broken":
            # Half of a JSON chunk, then the connection goes: a token cut in two.
            partial = b'data: {"id": "x", "choices": [{"delta": {"content": "trunc'
            self.wfile.write(f"{len(partial) + 40:x}\r\n".encode() + partial)
            return self._cut()
        if reply.kind == "hang":
            self.owner.wait(reply.seconds)
            return self._cut()
        if reply.kind == "malformed":
            for line in reply.lines:
                self._chunk(line)
            delta({}, "stop")
            self._end_stream()
            return
        for index, (call_id, name, args) in enumerate(reply.calls):
            delta(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
            step = max(1, len(args) // 3)
            for start in range(0, len(args), step):
                if reply.delay and self.owner.wait(reply.delay):
                    return self._cut()
                delta(
                    {
                        "tool_calls": [
                            {"index": index, "function": {"arguments": args[start : start + step]}}
                        ]
                    }
                )
        delta({}, reply.finish_reason or "stop")
        if include_usage and reply.usage is not None:
            prompt, completion = self._usage(reply)
            self._chunk(
                json.dumps(
                    {
                        "id": chunk_id,
                        "object": "chat.completion.chunk",
                        "created": int(time.time()),
                        "model": model,
                        "choices": [],
                        "usage": {
                            "prompt_tokens": prompt,
                            "completion_tokens": completion,
                            "total_tokens": prompt + completion,
                        },
                    }
                )
            )
        self._end_stream()


def strict_problem(body: dict[str, Any]) -> str | None:
    """What llama.cpp's server (its Jinja chat templates) would refuse in a request."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "user", "assistant", "tool"):
            return f"messages[{i}]: unknown role {role!r}"
        if "content" not in message:
            return f"messages[{i}]: Expected 'content' (template rendering failed)"
        content = message["content"]
        if role == "assistant" and not isinstance(content, str):
            return f"messages[{i}]: assistant content must be a string, got {content!r}"
        if role == "tool" and not message.get("tool_call_id"):
            return f"messages[{i}]: a tool message needs its tool_call_id"
    return None


_TOKEN = re.compile(r"<\|\w+\|>|\w+|[^\w\s]")


def count_tokens(value: str) -> int:
    """The toy tokenizer of the llama-cpp-python mode: a special token, a word or a
    punctuation mark is one token (whitespace is free)."""
    return len(_TOKEN.findall(value))


def render_prompt(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """The prompt as a ChatML template renders it (tools in the system part)."""
    out = []
    if tools:
        out.append("<|im_start|>system\nfunctions:\n" + json.dumps(tools) + "<|im_end|>\n")
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        calls = message.get("tool_calls") or []
        text = (content or "") + "".join(json.dumps(c.get("function")) for c in calls)
        out.append(f"<|im_start|>{message.get('role')}\n{text}<|im_end|>\n")
    return "".join(out) + "<|im_start|>assistant\n"


def _capped(reply: Scripted, cap: int, usage: tuple[int, int]) -> tuple[Scripted, tuple[int, int]]:
    """`reply` cut at `cap` toy tokens (its text, else its first call's arguments)."""
    value = reply.text or (reply.calls[0][2] if reply.calls else "")
    found = list(_TOKEN.finditer(value))
    if len(found) <= cap:
        return reply, usage
    cut = value[: found[cap - 1].end()] if cap > 0 else ""
    if reply.text:
        return replace(reply, text=cut, finish_reason="length"), (usage[0], cap)
    call_id, name, _ = reply.calls[0]
    return replace(reply, calls=[(call_id, name, cut)]), (usage[0], cap)


def _completion(
    model: str, reply: Scripted, usage: tuple[int, int] | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in reply.calls
        ]
    prompt, completion = usage or reply.usage or (0, 0)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.calls else reply.finish_reason or "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }
