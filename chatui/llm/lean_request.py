"""The OpenAI client's request body without its per-call type walk, when that walk changes nothing.

LiteLLM calls OpenAI-compatible servers through the `openai` client, whose
`chat.completions.create` first "transforms" the body against its TypedDicts:
for every message, content part and tool it reads the type hints and renames
keys that have an alias or formats values that have a format (dates, files).
For a chat of 50 exchanges that is about 20 ms of CPU per call (0.3 ms a
message), taken from a local model generating on the same cores.

The chat-completion parameters have no alias and no format anywhere in their
types (checked here, once, by walking them: a client whose types gain one keeps
its own transform), and the bodies chatui sends are plain JSON (decoded from the
app's pipe or built from stored messages). For such a body the transform only
drops the parameters not given, which is all `_lean` does; anything else (a
model object, a tuple, a date) goes through the client's own transform.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any, get_args, get_origin, get_type_hints

__all__ = ["install", "reshapes"]

log = logging.getLogger(__name__)

_JSON_SCALARS = (str, int, float, bool, type(None))


def reshapes(annotation: Any, seen: set[Any] | None = None) -> bool:
    """Whether the client's transform can change data of this type: an alias or a
    format (`PropertyInfo`) anywhere in it."""
    from openai._utils import PropertyInfo, is_typeddict

    seen = set() if seen is None else seen
    if get_origin(annotation) is Annotated:
        for meta in annotation.__metadata__:
            if isinstance(meta, PropertyInfo) and (meta.alias or meta.format):
                return True
        return reshapes(get_args(annotation)[0], seen)
    if is_typeddict(annotation):
        if annotation in seen:
            return False
        seen.add(annotation)
        hints = get_type_hints(annotation, include_extras=True)
        return any(reshapes(hint, seen) for hint in hints.values())
    return any(reshapes(arg, seen) for arg in get_args(annotation))


def _plain_json(value: Any) -> bool:
    """Only dicts with string keys, lists and JSON scalars, all the way down."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _JSON_SCALARS):
            continue
        if type(item) is dict:
            if not all(type(key) is str for key in item):
                return False
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
        else:
            return False
    return True


def install() -> bool:
    """Use `_lean` for the chat-completion bodies of the async client (idempotent);
    False when the client's types need its own transform (nothing changed)."""
    import openai.resources.chat.completions.completions as completions
    from openai._utils import is_given
    from openai.types.chat import completion_create_params as params

    original = completions.async_maybe_transform
    if getattr(original, "chatui_lean", False):
        return True
    plain = (params.CompletionCreateParamsStreaming, params.CompletionCreateParamsNonStreaming)
    if any(reshapes(kind) for kind in plain):
        log.info("the OpenAI client's chat parameters have aliases: its transform is kept")
        return False

    async def _lean(data: object, expected_type: object) -> Any:
        if expected_type in plain and type(data) is dict:
            given = {key: value for key, value in data.items() if is_given(value)}
            if _plain_json(given):
                return given
        return await original(data, expected_type)

    _lean.chatui_lean = True  # type: ignore[attr-defined]
    completions.async_maybe_transform = _lean  # type: ignore[assignment]
    return True
