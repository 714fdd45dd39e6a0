"""The offline `demo` model: a LiteLLM custom provider that needs no key.

It runs through LiteLLM's real streaming path (`acompletion(stream=True)` →
`CustomStreamWrapper`), so everything after the provider is exercised as it
is with a real model. Its answers are rule-based but useful enough to try
every feature: it streams word by word, saves facts with `set_context` when
asked to remember something, searches past chats with `session_search`,
asks another agent with `message_agent` ("ask the researcher …"),
writes Markdown with code when asked for code, and answers compaction
prompts with the four summary sections.

The provider class subclasses LiteLLM's `CustomLLM`, so it is built by
`register()`, which `chatui.llm` calls right after importing LiteLLM;
importing this module does not import LiteLLM.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from store import estimate_string_tokens

from .demo_names import DEMO_CONTEXT_WINDOW, DEMO_MODEL, DEMO_PROVIDER

__all__ = [
    "DEMO_CONTEXT_WINDOW",
    "DEMO_MODEL",
    "DEMO_PROVIDER",
    "DEMO_DELAY_ENV",
    "DemoReply",
    "make_provider",
    "plan_reply",
    "register",
    "stream_reply",
]

DEMO_DELAY_ENV = "CHATUI_DEMO_DELAY"
"""Seconds between streamed words (default 0.02; tests set 0)."""
DEFAULT_DELAY = 0.02


@dataclass(frozen=True)
class DemoReply:
    """What the demo model answers: text, or one tool call."""

    text: str = ""
    tool_name: str | None = None
    arguments: dict[str, Any] | None = None


# -- understanding the conversation -------------------------------------------------

_REMEMBER = [
    (re.compile(r"\bremember\s+(?:that\s+)?(?P<fact>.+)", re.I | re.S), "{fact}"),
    (re.compile(r"\bmy name is\s+(?P<fact>[^.,;!?\n]+)", re.I), "The user's name is {fact}."),
    (re.compile(r"^\s*note:\s*(?P<fact>.+)", re.I | re.S), "{fact}"),
]
_SEARCH = [
    re.compile(
        r"\bsearch\s+(?:(?:my|our|the)\s+)?(?:(?:past|old|earlier|previous)\s+)?"
        r"(?:chats?\s+|conversations?\s+)?for\s+(?P<q>.+)",
        re.I | re.S,
    ),
    re.compile(
        r"\bwhat did (?:we|i|you) (?:say|talk|discuss|decide)\s+(?:about|on)\s+(?P<q>.+)",
        re.I | re.S,
    ),
    re.compile(
        r"\bfind (?:the )?(?:chat|conversation)s?\s+(?:about|on|with)\s+(?P<q>.+)", re.I | re.S
    ),
]
_RECALL = re.compile(
    r"\b(what(?:'s| is) my name|what do you (?:know|remember)|"
    r"who am i|what have you (?:saved|remembered))\b",
    re.I,
)
_MINE = re.compile(r"\bwhat(?:'s| is| are| was| were) my (?P<thing>[\w' -]+?)\s*\??\s*$", re.I)
""""what is my favourite colour?": answered from the memory block's lines on it."""
_CODE = re.compile(r"\b(code|function|script|snippet|program|implement|example in)\b", re.I)
_GREETING = re.compile(r"^\s*(hi|hello|hey|good (?:morning|afternoon|evening))\b[\s!.]*$", re.I)
_LANGUAGES = {
    "python": (
        'def greet(name: str) -> str:\n    """Say hello."""\n    return f"Hello, '
        '{name}!"\n\n\nprint(greet("world"))'
    ),
    "javascript": "function greet(name) {\n  return `Hello, ${name}!`;\n}\n\nconsole.log("
    'greet("world"));',
    "rust": 'fn greet(name: &str) -> String {\n    format!("Hello, {name}!")\n}\n\nfn main() '
    '{\n    println!("{}", greet("world"));\n}',
    "go": 'package main\n\nimport "fmt"\n\nfunc greet(name string) string {\n\treturn '
    'fmt.Sprintf("Hello, %s!", name)\n}\n\nfunc main() {\n\tfmt.Println(greet("world"))'
    "\n}",
    "bash": 'greet() {\n  echo "Hello, $1!"\n}\n\ngreet world',
    "sql": "SELECT name, count(*) AS messages\nFROM chats\nGROUP BY name\nORDER BY messages DESC;",
}
_SUMMARY_MARK = "<conversation>"
_ASK = re.compile(
    r"\b(?:ask|message|tell)\s+(?:the\s+)?(?P<agent>[\w-]+)(?:\s+agent)?\s*[,:]?\s*"
    r"(?:(?:to|about|whether|if|for)\s+)?(?P<q>.+)",
    re.I | re.S,
)


def _text(content: Any) -> str:
    """The text of an OpenAI message `content` (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


_ATTACHED = re.compile(r"^\[Attached file (?P<name>[^\]\n]+?)\]\n", re.M)


def _attachments(content: Any) -> tuple[str, list[str]]:
    """A user message's own words, and a line on each file it carried (an image part,
    or a text part headed `[Attached file name]` as `chatui.core.convert` writes it)."""
    if not isinstance(content, list):
        return _text(content), []
    words, files = [], []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "image_url":
            files.append("an image, which I cannot see: I am the demo model")
            continue
        text = str(part.get("text", ""))
        head = _ATTACHED.match(text)
        if head is None:
            words.append(text)
            continue
        body = text[head.end() :]
        lines = body.splitlines()
        first = next((line.strip() for line in lines if line.strip()), "")
        line = f"**{head.group('name')}**, {len(lines)} line{'s' if len(lines) != 1 else ''}"
        files.append(line + (f", beginning *{first[:80]}*" if first else ", empty"))
    return " ".join(words), files


def _tool_names(tools: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    names = {}
    for tool in tools or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name"):
            names[str(function["name"])] = function
    return names


def _agent_names(message_agent: dict[str, Any]) -> list[str]:
    """The agents `message_agent` may reach (its `agent` enum)."""
    props = (message_agent.get("parameters") or {}).get("properties") or {}
    return [str(n) for n in (props.get("agent") or {}).get("enum") or []]


def _memory_label(set_context: dict[str, Any]) -> str | None:
    labels = (
        ((set_context.get("parameters") or {}).get("properties") or {}).get("label") or {}
    ).get("enum") or []
    if "memory" in labels:
        return "memory"
    return str(labels[0]) if labels else None


def _block(system: str, label: str) -> str:
    """The content of block `label` in a rendered system prompt ("" when absent/empty)."""
    match = re.search(
        rf"═+\n{re.escape(label.upper())}\b[^\n]*\n═+\n(?P<body>.*?)(?=\n\n═|\Z)", system, re.S
    )
    return match.group("body").strip() if match else ""


def _third_person(fact: str) -> str:
    """ "my X" → "The user's X", "I like X" → "The user likes X" (so memory reads clearly)."""
    fact = re.sub(r"^my\b", "The user's", fact, flags=re.I)
    fact = re.sub(r"^(?:I am|I'm)\b", "The user is", fact)
    fact = re.sub(r"^I have\b", "The user has", fact)
    match = re.match(r"^I (\w+)\b", fact)
    if match:
        verb = match.group(1)
        if re.search(r"[^aeiou]y$", verb):
            verb = verb[:-1] + "ies"
        elif re.search(r"(?:s|sh|ch|x|o)$", verb):
            verb += "es"
        else:
            verb += "s"
        fact = f"The user {verb}{fact[match.end() :]}"
    return re.sub(r"\bmy\b", "their", fact)


def _clean_fact(raw: str) -> str:
    fact = raw.strip().strip("\"'“”").strip()
    fact = _third_person(re.sub(r"\s+", " ", fact))
    fact = fact[:1].upper() + fact[1:]
    if fact and fact[-1] not in ".!?":
        fact += "."
    return fact[:400]


def _summary(prompt: str) -> str:
    body = prompt.split(_SUMMARY_MARK, 1)[1].split("</conversation>", 1)[0]
    lines = [ln.strip() for ln in body.strip().splitlines() if ln.strip()]
    user = [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("user:")]
    assistant = [ln for ln in lines if ln.startswith("assistant:")]
    topic = user[0][:120] if user else "A conversation with the demo model"
    points = [f"- {u[:160]}" for u in user[-6:]] or ["- (no user messages)"]
    previous = re.search(r"<previous-summary>\n(.*?)\n</previous-summary>", prompt, re.S)
    if previous:
        points.insert(0, "- Earlier: " + " ".join(previous.group(1).split())[:200])
    return (
        f"## Topic\n{topic}\n\n## Key Points\n"
        + "\n".join(points)
        + f"\n\n## Current State\n{len(user)} user and {len(assistant)} assistant messages "
        "were summarised.\n\n## Open Items\n- Continue from the latest message."
    )


def plan_reply(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> DemoReply:
    """Decide the demo model's answer to an OpenAI-format conversation."""
    system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") == "system")
    convo = [m for m in messages if m.get("role") != "system"]
    if not convo:
        return DemoReply("Hello! I am the offline demo model. Say something and I will answer.")
    last = convo[-1]
    available = _tool_names(tools)

    if last.get("role") == "tool":
        # After our own tool call: confirm in words what the tool reported.
        calls = {
            c.get("id"): c.get("function", {})
            for m in convo
            if m.get("role") == "assistant"
            for c in (m.get("tool_calls") or [])
        }
        name = (calls.get(last.get("tool_call_id")) or {}).get("name", "")
        result = _text(last.get("content"))
        if result.startswith("Error:"):
            return DemoReply(f"That did not work: {result[6:].strip()}")
        if name == "set_context":
            args = json.loads((calls.get(last.get("tool_call_id")) or {}).get("arguments") or "{}")
            return DemoReply(
                f"Got it — I saved this to my **{args.get('label', 'memory')}** "
                f"block:\n\n> {args.get('content', '')}\n\nIt is in my system "
                "prompt from your next message on."
            )
        if name == "message_agent":
            args = json.loads((calls.get(last.get("tool_call_id")) or {}).get("arguments") or "{}")
            return DemoReply(
                f"I asked **{args.get('agent', 'the other agent')}**. It says:\n\n> {result}"
            )
        if name == "session_search":
            if result.startswith("No past messages"):
                return DemoReply(f"I searched your past chats: {result}")
            hits = re.split(r"\n\n(?=\[)", result)
            shown = "\n\n".join(hits[:3])
            return DemoReply(
                f"I found {len(hits)} match{'es' if len(hits) != 1 else ''} in "
                f"your past chats:\n\n{shown}"
            )
        return DemoReply(f"The tool answered:\n\n```\n{result[:1500]}\n```")

    said, files = _attachments(last.get("content"))
    said = said.strip()
    if files and last.get("role") == "user":
        return DemoReply(
            "You attached " + "; ".join(files) + ".\n\nI am the offline demo model, so "
            "I only say what arrived. Pick a real model with ctrl+l to ask about it."
        )
    if _SUMMARY_MARK in said and "Summarise the conversation" in said:
        return DemoReply(_summary(said))
    mine = _MINE.search(said)
    if mine and not _RECALL.search(said):
        asked = {w for w in re.findall(r"\w+", mine.group("thing").lower()) if len(w) > 2}
        memory = _block(system, "memory")
        lines = [
            line for line in memory.splitlines() if asked & set(re.findall(r"\w+", line.lower()))
        ]
        if lines:
            return DemoReply("From my memory block:\n\n" + "\n".join(f"> {line}" for line in lines))
        return DemoReply(
            f"I have nothing about your {mine.group('thing')} in memory. Tell me with "
            "*remember that …* and I will save it."
        )
    if _RECALL.search(said):
        memory = _block(system, "memory")
        if memory:
            return DemoReply(f"Here is what I have in memory:\n\n{memory}")
        return DemoReply(
            "My memory block is empty. Tell me something with *remember that …* and I will save it."
        )
    if "set_context" in available:
        label = _memory_label(available["set_context"])
        for pattern, template in _REMEMBER:
            match = pattern.search(said)
            if match and label:
                fact = _clean_fact(template.format(fact=match.group("fact").strip()))
                return DemoReply(
                    tool_name="set_context",
                    arguments={"label": label, "content": fact, "action": "append"},
                )
    if "message_agent" in available:
        # "ask the researcher when the museum opens": a hop to another agent, offline.
        match = _ASK.search(said)
        names = {n.lower(): n for n in _agent_names(available["message_agent"])}
        if match and match.group("agent").lower() in names:
            question = match.group("q").strip()
            return DemoReply(
                tool_name="message_agent",
                arguments={"agent": names[match.group("agent").lower()], "text": question[:1000]},
            )
    if "session_search" in available:
        for pattern in _SEARCH:
            match = pattern.search(said)
            if match:
                query = match.group("q").strip().rstrip("?.!").strip("\"'“”")
                return DemoReply(tool_name="session_search", arguments={"query": query[:200]})
    if _CODE.search(said):
        language = next(
            (lang for lang in _LANGUAGES if re.search(rf"\b{lang}\b", said, re.I)), "python"
        )
        return DemoReply(
            f"Here is a small {language} example:\n\n```{language}\n"
            f"{_LANGUAGES[language]}\n```\n\nIt defines a greeting and prints it. "
            "(I am the demo model, so every program I write is this one.)"
        )
    if _GREETING.match(said):
        return DemoReply(
            "Hello! I am chatui's **offline demo model**. Things to try:\n\n"
            "- *remember that I like green tea* — I save it to my memory block\n"
            "- *search for tea* — I search your past chats\n"
            "- *write some python code* — Markdown with a code block\n"
            "- press **r** to regenerate, **e** to edit: both make branches\n\n"
            "Pick a real model with **ctrl+l** when you have an API key."
        )
    words = said.split()
    keywords = sorted(
        {w.strip(".,!?;:\"'()[]").lower() for w in words if len(w) > 6}, key=len, reverse=True
    )[:3]
    first = re.split(r"(?<=[.!?])\s", said, maxsplit=1)[0]
    summary = f"You wrote {len(words)} word{'s' if len(words) != 1 else ''}"
    if keywords:
        summary += ", mostly about " + ", ".join(f"*{k}*" for k in keywords)
    return DemoReply(
        f"{summary}.\n\n> {first[:300]}\n\nI am the offline demo model, so I can "
        "only echo and summarise. Say *remember that …* to try memory, or pick a "
        "real model with ctrl+l."
    )


# -- the provider -------------------------------------------------------------------


def _pieces(text: str) -> list[str]:
    """Word-sized pieces whose concatenation is exactly `text`."""
    return re.findall(r"\s*\S+|\s+$", text)


def _usage(
    messages: list[dict[str, Any]], reply: DemoReply, tools: list[dict[str, Any]] | None
) -> dict[str, int]:
    # A server that renders the tools counts them: without them, the sidebar's figure
    # fell from the estimate's ~560 to ~290 once the demo's first reply was counted.
    prompt = sum(4 + estimate_string_tokens(_text(m.get("content"))) for m in messages)
    prompt += sum(estimate_string_tokens(json.dumps(t, ensure_ascii=False)) for t in tools or [])
    out = estimate_string_tokens(reply.text) + (
        estimate_string_tokens(json.dumps(reply.arguments)) if reply.arguments else 0
    )
    return {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out}


def _delay(fixed: float | None) -> float:
    if fixed is not None:
        return fixed
    try:
        return max(0.0, float(os.environ.get(DEMO_DELAY_ENV, DEFAULT_DELAY)))
    except ValueError:
        return DEFAULT_DELAY


async def stream_reply(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, delay: float | None = None
) -> AsyncIterator[dict[str, Any]]:
    """The demo's answer as LiteLLM `GenericStreamingChunk` dicts, word by word."""
    reply = plan_reply(messages, tools)
    pause = _delay(delay)
    for piece in _pieces(reply.text):
        if pause:
            await asyncio.sleep(pause)
        yield {
            "text": piece,
            "is_finished": False,
            "finish_reason": "",
            "usage": None,
            "index": 0,
            "tool_use": None,
        }
    if reply.tool_name:
        yield {
            "text": "",
            "is_finished": False,
            "finish_reason": "",
            "usage": None,
            "index": 0,
            "tool_use": {
                "id": f"call_demo_{uuid.uuid4().hex[:10]}",
                "type": "function",
                "function": {"name": reply.tool_name, "arguments": json.dumps(reply.arguments)},
                "index": 0,
            },
        }
    yield {
        "text": "",
        "is_finished": True,
        "finish_reason": "tool_calls" if reply.tool_name else "stop",
        "usage": _usage(messages, reply, tools),
        "index": 0,
        "tool_use": None,
    }


def make_provider(litellm: Any, delay: float | None = None) -> Any:
    """An instance of the demo's `CustomLLM` subclass (built here so that importing
    this module does not import LiteLLM)."""

    class DemoLLM(litellm.CustomLLM):
        """LiteLLM custom provider behind `--model demo`."""

        async def astreaming(self, *args: Any, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
            messages = kwargs.get("messages") or []
            tools = (kwargs.get("optional_params") or {}).get("tools")
            async for chunk in stream_reply(messages, tools, delay):
                yield chunk

        async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
            messages = kwargs.get("messages") or []
            tools = (kwargs.get("optional_params") or {}).get("tools")
            reply = plan_reply(messages, tools)
            response = kwargs.get("model_response") or litellm.ModelResponse()
            response.choices[0].message.content = reply.text
            response.model = f"{DEMO_PROVIDER}/{DEMO_MODEL}"
            response.usage = litellm.Usage(**_usage(messages, reply, tools))
            return response

    return DemoLLM()


def register(litellm: Any) -> None:
    """Add the demo provider to `litellm.custom_provider_map` (once)."""
    if not any(item.get("provider") == DEMO_PROVIDER for item in litellm.custom_provider_map):
        litellm.custom_provider_map.append(
            {"provider": DEMO_PROVIDER, "custom_handler": make_provider(litellm)}
        )
