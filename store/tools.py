"""Tools the model calls to manage its own memory.

Invariant: a tool never raises for anything the model sends. Bad arguments,
unknown labels, limits and provider failures come back as a string starting
with `Error:` so the model can read it and try again; nothing is written
unless the whole write is valid.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .context import ContextBlock
from .db import Store
from .errors import ContextError
from .message_search import search_messages
from .providers.history import format_hits
from .providers.protocols import can_set, is_searchable, is_skill, is_writable
from .search import query_problem
from .tokens import estimate_string_tokens

if TYPE_CHECKING:
    from .messages import Message, MessageLike


class Session(Protocol):
    """What the context tools use of a `store.Session` (a protocol, so this module
    needs no import of `session`, which imports it: no cycle)."""

    def get_context_block(self, label: str) -> ContextBlock | None: ...
    def get_context_blocks(self) -> list[ContextBlock]: ...
    async def load_context(self) -> list[ContextBlock]: ...
    async def replace_context_block(self, label: str, content: str) -> ContextBlock: ...
    async def append_context_block(self, label: str, content: str) -> ContextBlock: ...
    def block_provider(self, label: str) -> Any: ...
    def mark_skill_loaded(self, label: str, key: str, loaded: bool) -> None: ...
    def loaded_skills(self) -> set[tuple[str, str]]: ...
    def get_tree(self) -> list[Message]: ...
    def update_message(self, message: MessageLike) -> None: ...


__all__ = ["Tool", "session_tools", "session_search_tool", "key_from"]

log = logging.getLogger(__name__)

ToolFunction = Callable[..., Awaitable[str]]
UNLOADED_NOTE = (
    "[skill {key!r} of {label!r} was unloaded to free context; load_context loads it again]"
)


@dataclass
class Tool:
    """A function the model can call, with its JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: ToolFunction = field(repr=False)

    def to_openai(self) -> dict[str, Any]:
        """The `{"type": "function", "function": {...}}` dict LiteLLM/OpenAI take."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    async def __call__(self, /, **arguments: Any) -> str:  # `self` may be a model's key
        """Run the tool; bad arguments and failures come back as `Error: …`, never raised."""
        problem = validate_arguments(self.parameters, arguments)
        if problem:
            return f"Error: {problem}"
        try:
            result: Any = self.fn(**arguments)
            if inspect.isawaitable(result):
                result = await result
        except ContextError as exc:
            return f"Error: {exc}"
        except Exception as exc:  # a provider failed; the model should hear why
            log.warning("tool %s failed", self.name, exc_info=True)
            return f"Error: {self.name} failed: {exc}"
        return result if isinstance(result, str) else json.dumps(result, default=str)

    async def call_json(self, arguments: str | dict[str, Any] | None) -> str:
        """Call with the raw JSON argument string a model produced."""
        if arguments is None or arguments == "":
            parsed: Any = {}
        elif isinstance(arguments, str):
            try:
                parsed = json.loads(arguments)
            except json.JSONDecodeError as exc:
                return f"Error: arguments are not valid JSON ({exc.msg})"
        else:
            parsed = arguments
        if not isinstance(parsed, dict):
            return "Error: arguments must be a JSON object"
        return await self(**parsed)


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "object": (dict,),
    "boolean": (bool,),
    "array": (list,),
}


def validate_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """The first problem with `arguments` against a flat JSON schema, or None."""
    properties: dict[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in arguments or arguments[name] is None:
            return f"missing required argument {name!r}"
    for name, value in arguments.items():
        spec = properties.get(name)
        if spec is None:
            return f"unknown argument {name!r} (expected: {', '.join(properties)})"
        if value is None and name not in schema.get("required", []):
            continue
        expected = _TYPES.get(spec.get("type", ""), (object,))
        if isinstance(value, bool) and bool not in expected:
            return f"{name!r} must be {spec.get('type')}, not boolean"
        if not isinstance(value, expected):
            return f"{name!r} must be {spec.get('type')}, not {type(value).__name__}"
        if "enum" in spec and value not in spec["enum"]:
            return f"{name!r} must be one of {', '.join(map(str, spec['enum']))}, not {value!r}"
        if isinstance(value, dict) and "properties" in spec:
            for sub, subvalue in value.items():
                subspec = spec["properties"].get(sub)
                if subspec is None:
                    return f"unknown key {sub!r} in {name!r}"
                if subvalue is not None and not isinstance(
                    subvalue, _TYPES.get(subspec.get("type", ""), (object,))
                ):
                    return f"{name}.{sub} must be {subspec.get('type')}"
        if spec.get("type") == "integer":
            low, high = spec.get("minimum"), spec.get("maximum")
            if (low is not None and value < low) or (high is not None and value > high):
                return f"{name!r} must be between {low} and {high}"
    return None


def key_from(title: str | None, content: str) -> str:
    """A stable key for a keyed entry: slug of the title, else of the content."""
    source = title if title and title.strip() else content
    slug = re.sub(r"[^\w]+", "-", source.lower(), flags=re.UNICODE).strip("-")[:48].strip("-")
    if title and title.strip() and slug:
        return slug
    digest = hashlib.sha1(content.encode()).hexdigest()[:8]
    return f"{slug[:32].strip('-') or 'entry'}-{digest}"


def _labels(session: Session) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {"writable": [], "settable": [], "skill": [], "search": []}
    for block in session.get_context_blocks():
        provider = session.block_provider(block.label)
        if is_skill(provider):
            groups["skill"].append(block.label)
        elif is_searchable(provider):
            groups["search"].append(block.label)
        if is_writable(provider) or (
            (is_skill(provider) or is_searchable(provider)) and can_set(provider)
        ):
            groups["settable"].append(block.label)
    return groups


def _describe(session: Session, labels: list[str]) -> str:
    lines = []
    for label in labels:
        block = session.get_context_block(label)
        if block is None:
            continue
        budget = f", limit {block.max_tokens} tokens" if block.max_tokens else ""
        about = f": {block.description}" if block.description else ""
        lines.append(f"- {label} [{block.kind}]{about}{budget}")
    return "\n".join(lines)


def session_tools(session: Session) -> dict[str, Tool]:
    """Build the tools a session's blocks bring (empty when no block needs one)."""
    groups = _labels(session)
    tools: dict[str, Tool] = {}
    if groups["settable"]:
        tools["set_context"] = _set_context(session, groups["settable"])
    if groups["skill"]:
        tools["load_context"] = _load_context(session, groups["skill"])
        tools["unload_context"] = _unload_context(session, groups["skill"])
    if groups["search"]:
        tools["search_context"] = _search_context(session, groups["search"])
    return tools


def _check_block_limit(session: Session, label: str, content: str) -> str | None:
    block = session.get_context_block(label)
    if block and block.max_tokens and estimate_string_tokens(content) > block.max_tokens:
        return (
            f"Error: that entry is {estimate_string_tokens(content)} tokens; {label!r} "
            f"allows {block.max_tokens} per entry. Shorten it."
        )
    return None


def _set_context(session: Session, labels: list[str]) -> Tool:
    async def set_context(
        label: str, content: str, action: str = "replace", metadata: dict[str, Any] | None = None
    ) -> str:
        provider = session.block_provider(label)
        if is_skill(provider) or is_searchable(provider):
            metadata = metadata or {}
            title = metadata.get("title")
            key = key_from(title, content)
            if problem := _check_block_limit(session, label, content):
                return problem
            if is_skill(provider):
                await provider.set(key, content, metadata.get("description") or title)
            else:
                await provider.set(key, content)
            await session.load_context()
            return f"Saved entry {key!r} in {label!r}."
        if action == "append":
            block = await session.append_context_block(label, content)
        else:
            block = await session.replace_context_block(label, content)
        budget = f" ({block.tokens}/{block.max_tokens} tokens used)" if block.max_tokens else ""
        verb = "Appended to" if action == "append" else "Replaced"
        return f"{verb} {label!r}{budget}. It will be in the system prompt from the next turn."

    return Tool(
        name="set_context",
        description=(
            "Write to one of your memory blocks. Writable blocks: `replace` (default) "
            "overwrites, `append` adds a line. Keyed blocks (searchable/loadable) store an "
            "entry whose key comes from metadata.title. Stay within each block's token "
            "limit.\nBlocks:\n" + _describe(session, labels)
        ),
        parameters={
            "type": "object",
            "properties": {
                "label": {"type": "string", "enum": labels, "description": "Block to write."},
                "content": {"type": "string", "description": "Text to write."},
                "action": {
                    "type": "string",
                    "enum": ["replace", "append"],
                    "description": "replace (default) or append.",
                },
                "metadata": {
                    "type": "object",
                    "description": "For keyed blocks: the entry's title and description.",
                    "properties": {"title": {"type": "string"}, "description": {"type": "string"}},
                },
            },
            "required": ["label", "content"],
        },
        fn=set_context,
    )


def _load_context(session: Session, labels: list[str]) -> Tool:
    async def load_context(label: str, key: str) -> str:
        document = await session.block_provider(label).load(key)
        if document is None:
            return f"Error: no document {key!r} in {label!r}; see the listing in the system prompt"
        session.mark_skill_loaded(label, key, True)
        return str(document)

    return Tool(
        name="load_context",
        description=(
            "Load a whole document from a loadable block by its key (the keys are listed in "
            "the system prompt). Unload it with unload_context when done.\nBlocks:\n"
            + _describe(session, labels)
        ),
        parameters={
            "type": "object",
            "properties": {
                "label": {"type": "string", "enum": labels},
                "key": {"type": "string", "description": "Document key from the listing."},
            },
            "required": ["label", "key"],
        },
        fn=load_context,
    )


def _unload_context(session: Session, labels: list[str]) -> Tool:
    async def unload_context(label: str, key: str) -> str:
        if (label, key) not in session.loaded_skills():
            return f"Error: {key!r} of {label!r} is not loaded"
        call_ids = set()
        messages = session.get_tree()
        for message in messages:
            for part in message.tool_calls:
                args = part.get("input")
                if (
                    part.get("tool_name") == "load_context"
                    and isinstance(args, dict)
                    and args.get("label") == label
                    and args.get("key") == key
                ):
                    call_ids.add(part.get("tool_call_id"))
        note = UNLOADED_NOTE.format(key=key, label=label)
        for message in messages:
            changed = False
            for part in message.tool_results:
                if part.get("tool_call_id") in call_ids and part.get("output") != note:
                    part["output"] = note
                    changed = True
            if changed:
                session.update_message(message)
        session.mark_skill_loaded(label, key, False)
        return f"Unloaded {key!r} from {label!r}; it stays available to load again."

    return Tool(
        name="unload_context",
        description="Unload a document loaded with load_context to free context space.",
        parameters={
            "type": "object",
            "properties": {
                "label": {"type": "string", "enum": labels},
                "key": {"type": "string"},
            },
            "required": ["label", "key"],
        },
        fn=unload_context,
    )


def _search_context(session: Session, labels: list[str]) -> Tool:
    async def search_context(label: str, query: str) -> str:
        result = await session.block_provider(label).search(query)
        if isinstance(result, list):
            result = "\n\n".join(str(r) for r in result)
        return str(result) if result else f"No results for {query!r} in {label!r}."

    return Tool(
        name="search_context",
        description="Full-text search within a searchable block.\nBlocks:\n"
        + _describe(session, labels),
        parameters={
            "type": "object",
            "properties": {
                "label": {"type": "string", "enum": labels},
                "query": {"type": "string", "description": "Words to look for."},
            },
            "required": ["label", "query"],
        },
        fn=search_context,
    )


def session_search_tool(store: Store) -> Tool:
    """`session_search(query, limit=10)`: every live conversation, all branches."""

    async def session_search(query: str, limit: int = 10) -> str:
        hits = search_messages(store, query, limit)
        found = format_hits(store, hits) or f"No past messages match {query!r}."
        note = query_problem(query)  # the model can write a better query next time
        return f"{note}\n\n{found}" if note else found

    return Tool(
        name="session_search",
        description="Search every past conversation (all chats, all branches) by words. "
        "Returns chat name, role, date and a snippet for each hit.",
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to look for."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 50,
                    "description": "Most results to return (default 10).",
                },
            },
            "required": ["query"],
        },
        fn=session_search,
    )
