"""Your own keys: `[keys]` in the config (action = key), over Textual's keymap.

Every binding has an id (`app.new_chat`, `message.edit`, `tree.down`, ...): the
action a `[keys]` entry names. The app hands the result to `App.set_keymap`,
so Textual rebinds; nothing here dispatches a key.

Design notes:
- A bad entry never stops the app: it is left out with a warning that says
  why, and the action keeps its default key. Unknown key names, empty keys
  and a printable key for an action that spends tokens are bad (keys that
  spend tokens take ctrl: a sentence typed on a focused message must never
  regenerate anything).
- `preset = "vim"` adds vim movement where printable keys do not belong to
  the input: j/k in lists, ctrl+d/ctrl+u and g/G-like jumps in the tree,
  h/l between a message's sibling branches; the entries after it win.
- The actions and their default keys (F1, the README's reference) are read
  from the bindings themselves (`catalogue`), loaded when asked for: the
  screens they live in are not on the first frame's path.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from textual.binding import Binding
from textual.keys import Keys, _character_to_key

__all__ = [
    "PRESETS",
    "SPENDS_TOKENS",
    "Action",
    "catalogue",
    "check_key",
    "resolve_keys",
    "unknown_actions",
]

SPENDS_TOKENS = frozenset(
    {
        "message.regenerate",
        "message.regenerate_with",
        "message.continue",
        "chat.regenerate",
        "chat.continue",
        "tree.regenerate",
        "tree.regenerate_with",
        "tree.continue",
    }
)
"""Actions that call the model: never on a printable key."""

PRESETS: dict[str, dict[str, str]] = {
    "vim": {
        "list.down": "down,j",
        "list.up": "up,k",
        "tree.page_down": "pagedown,ctrl+d",
        "tree.page_up": "pageup,ctrl+u",
        "tree.first": "home,ctrl+home",
        "tree.last": "end,G",
        "message.previous": "left,h",
        "message.next": "right,l",
    }
}
"""Named sets of `[keys]` entries (`preset = "vim"`)."""

_MODIFIERS = frozenset({"ctrl", "shift", "alt", "meta", "super", "hyper"})
_NAMED = frozenset(k.value for k in Keys) | frozenset(
    _character_to_key(chr(c)) for c in range(32, 127)
)
"""Every key name Textual knows: its `Keys` and the names of printable characters
(`question_mark`, `left_square_bracket`, ...)."""

_BOUND = (
    ("chatui.tui.app", "ChatApp"),
    ("chatui.tui.screens.main", "MainScreen"),
    ("widgets.chat_input", "ChatInput"),
    ("chatui.tui.chat_pane", "ChatPane"),
    ("widgets.message_view", "MessageView"),
    ("widgets.message_tree", "MessageTree"),
    ("widgets.context_sidebar", "ContextSidebar"),
    ("widgets.token_gauge", "TokenGauge"),
    ("chatui.tui.screens.chat_list", "ChatListScreen"),
    ("chatui.tui.screens.search", "SearchScreen"),
    ("chatui.tui.screens.model_picker", "ModelPicker"),
    ("chatui.tui.screens.agent_picker", "AgentPicker"),
    ("chatui.tui.screens.persona_picker", "PersonaPicker"),
    ("chatui.tui.screens.prompt", "PromptScreen"),
    ("chatui.tui.screens.help", "HelpScreen"),
    ("chatui.tui.screens.memory", "BlockScreen"),
    ("chatui.tui.screens.compare", "CompareScreen"),
    ("chatui.tui.screens.tree", "TreeScreen"),
    ("chatui.tui.screens.originals", "OriginalsScreen"),
    ("chatui.tui.screens.dialogs", "TextPrompt"),
    ("chatui.tui.screens.dialogs", "Confirm"),
    ("chatui.tui.screens.template_form", "TemplateForm"),
    ("chatui.tui.screens.tool_approval", "ToolApprovalScreen"),
)
"""Where chatui's bindings live (module, class), in the order F1 lists them."""

_WHERE = {
    "ChatApp": "anywhere",
    "MainScreen": "anywhere",
    "ChatInput": "input",
    "ChatPane": "input",
    "MessageView": "message",
    "MessageTree": "tree",
    "ContextSidebar": "sidebar",
    "TokenGauge": "sidebar gauge",
    "ChatListScreen": "chat list",
    "SearchScreen": "search",
    "ModelPicker": "model picker",
    "AgentPicker": "lists",
    "PersonaPicker": "persona picker",
    "PromptScreen": "f2",
    "HelpScreen": "f1",
    "BlockScreen": "block editor",
    "CompareScreen": "compare",
    "TreeScreen": "full-screen tree",
    "OriginalsScreen": "originals",
    "TextPrompt": "dialogs",
    "Confirm": "questions",
    "TemplateForm": "template form",
    "ToolApprovalScreen": "tool approval",
}


@dataclass(frozen=True)
class Action:
    """One rebindable action: its id, default keys, what it does and where."""

    id: str
    keys: str
    description: str
    where: str


def catalogue() -> list[Action]:
    """Every action with an id, once each (the first class that binds it says where)."""
    seen: dict[str, Action] = {}
    for module_name, class_name in _BOUND:
        try:
            owner: Any = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):  # a screen another branch has not landed
            continue
        for klass in inspect.getmro(owner):
            for binding in vars(klass).get("BINDINGS", ()):
                if isinstance(binding, Binding) and binding.id and binding.id not in seen:
                    seen[binding.id] = Action(
                        binding.id,
                        binding.key,
                        binding.description,
                        _WHERE.get(class_name, class_name),
                    )
    return list(seen.values())


def check_key(key: str) -> str | None:
    """Why `key` (one key, `ctrl+x` style) is no key Textual knows; None when it is."""
    parts = key.split("+")
    base, modifiers = parts[-1], parts[:-1]
    if not base:
        return f"{key!r} names no key"
    bad = [m for m in modifiers if m not in _MODIFIERS]
    if bad:
        return f"{bad[0]!r} in {key!r} is no modifier (ctrl, shift, alt, meta, super)"
    if len(base) != 1 and base not in _NAMED:
        return f"{key!r} is no key name (e.g. ctrl+o, f5, pageup, j)"
    return None


def _printable(key: str) -> bool:
    parts = key.split("+")
    base, modifiers = parts[-1], set(parts[:-1]) - {"shift"}
    if modifiers:
        return False
    return (
        len(base) == 1
        or base == "space"
        or base in {_character_to_key(chr(c)) for c in range(33, 127)}
    )


def resolve_keys(entries: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    """`[keys]` (flattened: action id → keys) as a Textual keymap, and a warning for
    each entry left out (its action keeps its default)."""
    keymap: dict[str, str] = {}
    warnings: list[str] = []
    preset = entries.get("preset")
    if preset is not None:
        if preset in PRESETS:
            keymap.update(PRESETS[preset])
        else:
            warnings.append(
                f"keys: unknown preset {preset!r} (presets: {', '.join(sorted(PRESETS))})"
            )
    for action, value in entries.items():
        if action == "preset":
            continue
        if not isinstance(value, str):
            warnings.append(f"keys.{action}: {value!r} is not a string of keys; its default stays")
            continue
        keys = [k.strip() for k in value.split(",")]
        problem = next((p for p in map(check_key, keys) if p), None)
        if not any(keys) or problem:
            warnings.append(f"keys.{action}: {problem or 'no key given'}; its default stays")
            continue
        if action in SPENDS_TOKENS and any(_printable(k) for k in keys):
            warnings.append(
                f"keys.{action}: it calls the model, so it takes ctrl (or alt), not "
                f"{value!r} (typing must never spend tokens); its default stays"
            )
            continue
        keymap[action] = ",".join(keys)
    return keymap, warnings


def unknown_actions(keymap: Mapping[str, str], known: set[str]) -> list[str]:
    """A warning for each keymap entry that names no action."""
    import difflib

    warnings = []
    for action in keymap:
        if action not in known:
            close = difflib.get_close_matches(action, sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else " (F1 lists the actions)"
            warnings.append(f"keys: no action {action!r}{hint}; ignored")
    return warnings
