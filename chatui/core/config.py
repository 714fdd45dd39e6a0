"""chatui's configuration: one TOML file read into one typed model.

Every field has a default, so a missing file is a working setup (the offline
`demo` model, a soul, a memory block). A file that is not valid TOML, or
holds a value of the wrong type, raises `ConfigError` with one line naming
the file and what is wrong; the file is never rewritten by chatui. API keys
never live here: LiteLLM reads them from the environment.
"""

from __future__ import annotations

import os
import string
import sys
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from . import paths

if TYPE_CHECKING:  # loaded by a config with an [mcp] table (`parse`), not at every start
    from ..mcp.settings import McpServer

__all__ = [
    "AgentConfig",
    "BlockConfig",
    "BlockKind",
    "BlockScope",
    "Config",
    "ConfigError",
    "ModelOptions",
    "OLLAMA_DEFAULT",
    "OLLAMA_PROVIDERS",
    "PersonaConfig",
    "TemplateConfig",
    "DEFAULT_BLOCKS",
    "load_config",
    "ollama_address",
    "parse_blocks",
]

BlockKind: TypeAlias = Literal["static", "writable", "searchable", "skills"]
BlockScope: TypeAlias = Literal["chat", "global"]
BranchNotes: TypeAlias = Literal["off", "ask", "always"]
BRANCH_NOTES = ("off", "ask", "always")
_KINDS = ("static", "writable", "searchable", "skills")
_SCOPES = ("chat", "global")

DEFAULT_SOUL = (
    "You are a helpful, direct assistant in a terminal chat app. Answer in Markdown. "
    "You have memory blocks shown below: when the user tells you something worth "
    "remembering about them or their work, save it with set_context. Use "
    "session_search to look through earlier chats when the user refers to them."
)


class ConfigError(Exception):
    """The config file cannot be used; the message is one line naming the file."""


@dataclass(frozen=True)
class BlockConfig:
    """One context block of every chat's system prompt."""

    label: str
    """Name the model and the sidebar use (`memory`, `soul`)."""
    kind: BlockKind = "writable"
    """static: fixed `text`; writable: the model edits it; searchable: keyed entries the
    model searches; skills: Markdown files in `path` the model loads on demand."""
    description: str | None = None
    """Shown in the prompt header and the sidebar."""
    max_tokens: int | None = None
    """Budget for the block; writes past it are refused."""
    text: str = ""
    """Content of a static block."""
    scope: BlockScope = "chat"
    """chat: each chat has its own content; global: one content shared by every chat."""
    path: str | None = None
    """Folder of a skills block (default: `skills/` beside the config file)."""


DEFAULT_BLOCKS: tuple[BlockConfig, ...] = (
    BlockConfig("soul", kind="static", text=DEFAULT_SOUL),
    BlockConfig(
        "memory",
        description="Facts about the user worth keeping across chats",
        max_tokens=1100,
        scope="global",
    ),
    BlockConfig("scratchpad", description="Working notes for this chat", max_tokens=600),
)


OLLAMA_PROVIDERS = ("ollama/", "ollama_chat/")
OLLAMA_DEFAULT = "http://localhost:11434"


def ollama_address() -> str:
    """Where an Ollama model runs when no `api_base` says: LiteLLM's own choice
    (`OLLAMA_API_BASE`, else Ollama's default port). Given as the model's `api_base`,
    it is asked for the window and listed in the model picker as a configured one is."""
    return os.environ.get("OLLAMA_API_BASE", "").strip().rstrip("/") or OLLAMA_DEFAULT


@dataclass(frozen=True)
class ModelOptions:
    """Per-model settings, from `[models."name"]` tables."""

    api_base: str | None = None
    """An OpenAI-compatible endpoint for this model (a local server, a proxy)."""
    context_window: int | None = None
    """Overrides LiteLLM's figure (needed for models LiteLLM does not know)."""
    vision: bool | None = None
    """The model takes images (overrides LiteLLM's table; needed for models it does not know)."""


@dataclass(frozen=True)
class AgentConfig:
    """A named agent: its own model, soul and blocks (see the agents section)."""

    name: str
    model: str | None = None
    soul: str = ""
    description: str = ""
    blocks: tuple[BlockConfig, ...] = ()
    skills_dir: str | None = None
    peers: tuple[str, ...] = ()
    """Agents this one may message (empty: every other agent)."""


@dataclass(frozen=True)
class PersonaConfig:
    """A named way to start a chat, from `[personas.NAME]`: its prompt, model,
    parameters and enabled tools (each optional: what is unset is the default)."""

    name: str
    prompt: str | None = None
    """The chat's system prompt (its soul), written when the chat is created."""
    model: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    """Model parameters (temperature, max_tokens, ...), checked as a chat's are."""
    tools: tuple[str, ...] | None = None
    """The tools the model is offered (None: every tool the chat has)."""
    description: str = ""


@dataclass(frozen=True)
class TemplateConfig:
    """A message with `{variables}`, from `[templates.NAME]`, filled in a small form."""

    name: str
    text: str
    description: str = ""

    @property
    def variables(self) -> tuple[str, ...]:
        """The names in braces, in order of first use (`{{` and `}}` are braces)."""
        seen: dict[str, None] = {}
        for _, name, _, _ in string.Formatter().parse(self.text):
            if name is not None:
                seen.setdefault(name, None)
        return tuple(seen)

    def fill(self, values: dict[str, str]) -> str:
        """The text with each variable replaced by its value."""
        return self.text.format_map(values)


@dataclass(frozen=True)
class Config:
    """Everything chatui reads from `config.toml`."""

    model: str = "demo"
    """The model new chats use: a LiteLLM name (`gpt-4o-mini`, `anthropic/claude-…`) or `demo`."""
    compaction_model: str | None = None
    """Model that writes compaction summaries (default: the chat's model)."""
    compact_at: float = 0.8
    """Auto-compact when the conversation fills this share of the context window."""
    branch_notes: BranchNotes = "off"
    """Leaving a branch for a sibling: "always" has the compaction model write a short
    note of what was tried there, "ask" asks each time, "off" never does."""
    theme: str | None = None
    """Theme name; the last one picked in the app is remembered when this is unset."""
    api_base: str | None = None
    """An OpenAI-compatible endpoint used for every model without its own."""
    request_timeout: float = 120.0
    """Seconds before a request to the model is given up."""
    max_tool_rounds: int = 8
    """Model calls one turn may make while it keeps calling tools."""
    max_retries: int = 2
    """Retries after a rate limit (429), honouring Retry-After."""
    max_live_replies: int = 3
    """Chats that may be writing a reply at once (a send beyond it is refused, saying so)."""
    max_attachment_mb: float = 20.0
    """The largest file that may be attached to a message, in MiB (bigger ones are refused)."""
    blocks: tuple[BlockConfig, ...] = DEFAULT_BLOCKS
    """The context blocks of every chat, in prompt order."""
    skills_dir: str | None = None
    """A folder of `*.md` skills offered to the model as a loadable block."""
    database: str | None = None
    """The database: a file path or a `postgresql://user@host/db` URL (default: the
    user data folder's `chats.db`; `CHATUI_DB` and `--db` take precedence)."""
    models: dict[str, ModelOptions] = field(default_factory=dict)
    agents: tuple[AgentConfig, ...] = ()
    personas: dict[str, PersonaConfig] = field(default_factory=dict)
    """`[personas.NAME]`: picked at ctrl+n and by `chatui ask --persona`."""
    templates: dict[str, TemplateConfig] = field(default_factory=dict)
    """`[templates.NAME]`: messages with `{variables}` (the palette's Use template)."""
    keys: dict[str, Any] = field(default_factory=dict)
    """`[keys]`: action = key, over the defaults (or a preset: `preset = "vim"`)."""
    mcp: tuple[McpServer, ...] = ()
    """MCP tool servers (`[mcp.servers.NAME]`), started after the first frame."""
    source: Path | None = None
    """The file this was read from (None: defaults)."""

    def options_for(self, model: str) -> ModelOptions:
        """The model's own options, with the global `api_base` as fallback; an Ollama
        model with neither is Ollama's at its own address (`ollama_address`)."""
        own = self.models.get(model, ModelOptions())
        api_base = own.api_base or self.api_base
        if api_base is None and model.startswith(OLLAMA_PROVIDERS):
            api_base = ollama_address()
        return ModelOptions(
            api_base=api_base,
            context_window=own.context_window,
            vision=own.vision,
        )

    @property
    def max_attachment_bytes(self) -> int:
        """`max_attachment_mb` in bytes."""
        return int(self.max_attachment_mb * 1024 * 1024)


# -- parsing -------------------------------------------------------------------

_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "str": ((str,), "a string"),
    "int": ((int,), "an integer"),
    "float": ((int, float), "a number"),
    "bool": ((bool,), "true or false"),
}


def _check(where: str, name: str, value: Any, kind: str, *, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    types, wanted = _TYPES[kind]
    if not isinstance(value, types) or (kind != "bool" and isinstance(value, bool)):
        raise ValueError(f"{where}{name} must be {wanted}, not {type(value).__name__}")
    return float(value) if kind == "float" else value  # type: ignore[arg-type]  # checked above


def _unknown(where: str, data: dict[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise ValueError(
            f"{where}unknown setting {extra[0]!r} (known: {', '.join(sorted(allowed))})"
        )


def _block(data: Any, where: str) -> BlockConfig:
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a table")
    _unknown(f"{where}: ", data, {f.name for f in fields(BlockConfig)})
    label = _check(f"{where}.", "label", data.get("label"), "str")
    if not label.strip():
        raise ValueError(f"{where}.label must not be empty")
    kind = data.get("kind", "writable")
    if kind not in _KINDS:
        raise ValueError(f"{where}.kind must be one of {', '.join(_KINDS)}, not {kind!r}")
    scope = data.get("scope", "chat")
    if scope not in _SCOPES:
        raise ValueError(f"{where}.scope must be one of {', '.join(_SCOPES)}, not {scope!r}")
    max_tokens = _check(f"{where}.", "max_tokens", data.get("max_tokens"), "int", optional=True)
    if max_tokens is not None and max_tokens <= 0:
        raise ValueError(f"{where}.max_tokens must be positive")
    return BlockConfig(
        label=label.strip(),
        kind=kind,
        scope=scope,
        max_tokens=max_tokens,
        description=_check(
            f"{where}.", "description", data.get("description"), "str", optional=True
        ),
        text=_check(f"{where}.", "text", data.get("text", ""), "str"),
        path=_check(f"{where}.", "path", data.get("path"), "str", optional=True),
    )


def _blocks(value: Any, where: str) -> tuple[BlockConfig, ...]:
    if not isinstance(value, list):
        raise ValueError(f"{where} must be an array of tables ([[{where}]])")
    blocks = tuple(_block(item, f"{where}[{i}]") for i, item in enumerate(value))
    labels = [b.label for b in blocks]
    for label in labels:
        if labels.count(label) > 1:
            raise ValueError(f"{where}: the label {label!r} is used twice")
    return blocks


def parse_blocks(value: Any, where: str = "blocks") -> tuple[BlockConfig, ...]:
    """Blocks from their TOML/JSON form (as `[[blocks]]` or an agent's `blocks`).

    Raises:
        ValueError: a block is malformed (the message says which and why).
    """
    return _blocks(value, where)


def _agent(data: Any, where: str) -> AgentConfig:
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a table")
    _unknown(f"{where}: ", data, {f.name for f in fields(AgentConfig)})
    name = _check(f"{where}.", "name", data.get("name"), "str")
    if not name.strip():
        raise ValueError(f"{where}.name must not be empty")
    peers = data.get("peers", [])
    if not isinstance(peers, list) or not all(isinstance(p, str) for p in peers):
        raise ValueError(f"{where}.peers must be a list of agent names")
    return AgentConfig(
        name=name.strip(),
        model=_check(f"{where}.", "model", data.get("model"), "str", optional=True),
        soul=_check(f"{where}.", "soul", data.get("soul", ""), "str"),
        description=_check(f"{where}.", "description", data.get("description", ""), "str"),
        blocks=_blocks(data["blocks"], f"{where}.blocks") if "blocks" in data else (),
        skills_dir=_check(f"{where}.", "skills_dir", data.get("skills_dir"), "str", optional=True),
        peers=tuple(peers),
    )


def _persona(name: str, data: Any) -> PersonaConfig:
    from .params import ParamsError, check_params  # the parameters' own rules

    where = f"personas.{name}"
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a table")
    _unknown(f"{where}: ", data, {"prompt", "model", "params", "tools", "description"})
    params = data.get("params", {})
    if not isinstance(params, dict):
        raise ValueError(f"{where}.params must be a table (params = {{ temperature = 0.3 }})")
    try:
        params = check_params(params, None)  # the names are checked against LiteLLM's on use
    except ParamsError as exc:
        raise ValueError(f"{where}.params: {exc}") from None
    tools = data.get("tools")
    if tools is not None and (
        not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools)
    ):
        raise ValueError(f"{where}.tools must be a list of tool names")
    prompt = _check(f"{where}.", "prompt", data.get("prompt"), "str", optional=True)
    if prompt is not None and not prompt.strip():
        raise ValueError(f"{where}.prompt must not be empty (leave it out for the default)")
    model = _check(f"{where}.", "model", data.get("model"), "str", optional=True)
    if model is not None and not model.strip():
        raise ValueError(f"{where}.model must not be empty")
    return PersonaConfig(
        name=name,
        prompt=prompt,
        model=model,
        params=params,
        tools=tuple(tools) if tools is not None else None,
        description=_check(f"{where}.", "description", data.get("description", ""), "str"),
    )


def _template(name: str, data: Any) -> TemplateConfig:
    where = f"templates.{name}"
    if isinstance(data, str):
        data = {"text": data}
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a table with a text (or the text itself)")
    _unknown(f"{where}: ", data, {"text", "description"})
    text = _check(f"{where}.", "text", data.get("text"), "str")
    if not text.strip():
        raise ValueError(f"{where}.text must not be empty")
    try:
        fields_ = list(string.Formatter().parse(text))
    except ValueError as exc:  # a lone { or }
        raise ValueError(f"{where}.text: {exc} (write {{{{ and }}}} for braces)") from None
    for _, field_name, spec, conversion in fields_:
        if field_name is None:
            continue
        if not field_name.isidentifier() or spec or conversion:
            raise ValueError(
                f"{where}.text: {{{field_name}{'!' + conversion if conversion else ''}"
                f"{':' + spec if spec else ''}}} is not a variable: use {{name}}"
            )
    description = _check(f"{where}.", "description", data.get("description", ""), "str")
    return TemplateConfig(name=name, text=text, description=description)


def _named_tables(data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a table of [{where}.NAME] tables")
    for name in data:
        if not name.strip():
            raise ValueError(f"{where}: a name must not be empty")
    return data


def _keys(data: Any, prefix: str = "") -> dict[str, Any]:
    """`[keys]` flattened to action id → keys (`app.new_chat = "f5"` is a dotted
    TOML key, read as a nested table). Checked when the app starts: a bad entry is a
    warning there, its default kept, never a refusal to start."""
    if not isinstance(data, dict):
        raise ValueError('keys must be a table ([keys] action = "key")')
    flat: dict[str, Any] = {}
    for name, value in data.items():
        if isinstance(value, dict):
            flat.update(_keys(value, f"{prefix}{name}."))
        else:
            flat[f"{prefix}{name}"] = value
    return flat


def parse_config(data: dict[str, Any], source: Path | None = None) -> Config:
    """Build a `Config` from parsed TOML.

    Raises:
        ValueError: a setting is unknown or has the wrong type (the message says which).
    """
    _unknown("", data, {f.name for f in fields(Config)} - {"source"})
    values: dict[str, Any] = {"source": source}
    for name, kind, optional in (
        ("model", "str", False),
        ("compaction_model", "str", True),
        ("theme", "str", True),
        ("api_base", "str", True),
        ("skills_dir", "str", True),
        ("database", "str", True),
        ("compact_at", "float", False),
        ("request_timeout", "float", False),
        ("max_tool_rounds", "int", False),
        ("max_retries", "int", False),
        ("max_live_replies", "int", False),
        ("max_attachment_mb", "float", False),
        ("branch_notes", "str", False),
    ):
        if name in data:
            values[name] = _check("", name, data[name], kind, optional=optional)
    if "model" in values and not values["model"].strip():
        raise ValueError("model must not be empty")
    if not 0.1 <= values.get("compact_at", 0.8) <= 1.0:
        raise ValueError("compact_at must be between 0.1 and 1.0 (a share of the context window)")
    if values.get("request_timeout", 1.0) <= 0:
        raise ValueError("request_timeout must be positive")
    if not 1 <= values.get("max_tool_rounds", 1) <= 100:
        raise ValueError("max_tool_rounds must be between 1 and 100")
    if not 0 <= values.get("max_retries", 0) <= 10:
        raise ValueError("max_retries must be between 0 and 10")
    if not 1 <= values.get("max_live_replies", 1) <= 20:
        raise ValueError("max_live_replies must be between 1 and 20")
    if not 0 < values.get("max_attachment_mb", 1.0) <= 1024:
        raise ValueError("max_attachment_mb must be more than 0 and at most 1024 (MiB)")
    if values.get("branch_notes", "off") not in BRANCH_NOTES:
        raise ValueError(f"branch_notes must be one of {', '.join(BRANCH_NOTES)}")
    if "blocks" in data:
        values["blocks"] = _blocks(data["blocks"], "blocks")
    if "models" in data:
        if not isinstance(data["models"], dict):
            raise ValueError('models must be a table of [models."name"] tables')
        models = {}
        for name, options in data["models"].items():
            where = f"models.{name!r}"
            if not isinstance(options, dict):
                raise ValueError(f"{where} must be a table")
            _unknown(f"{where}: ", options, {"api_base", "context_window", "vision"})
            models[name] = ModelOptions(
                api_base=_check(
                    f"{where}.", "api_base", options.get("api_base"), "str", optional=True
                ),
                context_window=_check(
                    f"{where}.",
                    "context_window",
                    options.get("context_window"),
                    "int",
                    optional=True,
                ),
                vision=_check(f"{where}.", "vision", options.get("vision"), "bool", optional=True),
            )
        values["models"] = models
    if "agents" in data:
        if not isinstance(data["agents"], list):
            raise ValueError("agents must be an array of tables ([[agents]])")
        agents = tuple(_agent(a, f"agents[{i}]") for i, a in enumerate(data["agents"]))
        names = [a.name for a in agents]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"agents: the name {name!r} is used twice")
        values["agents"] = agents
    if "personas" in data:
        values["personas"] = {
            name: _persona(name, table)
            for name, table in _named_tables(data["personas"], "personas").items()
        }
    if "templates" in data:
        values["templates"] = {
            name: _template(name, table)
            for name, table in _named_tables(data["templates"], "templates").items()
        }
    if "keys" in data:
        values["keys"] = _keys(data["keys"])
    if "mcp" in data:
        from ..mcp.settings import parse_mcp  # only a config with MCP servers loads it

        values["mcp"] = parse_mcp(data["mcp"])
    return Config(**values)


def load_config(path: Path | None = None) -> Config:
    """Read the config file (default location when `path` is None).

    A missing file gives the defaults.

    Raises:
        ConfigError: unreadable, not TOML, or a wrong setting — one line, naming the file.
    """
    path = path or paths.config_file()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Config()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror}") from exc
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: the config file is not UTF-8 text") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    try:
        config = parse_config(data, source=path)
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    _warn_if_readable_secret(path, raw.decode("utf-8"))
    return config


def _warn_if_readable_secret(path: Path, text: str) -> None:
    """One line on stderr when a config others can read holds a URL's password:
    chatui never rewrites the file, so the person has to tighten it."""
    from store import redact_urls_in

    try:
        loose = path.stat().st_mode & 0o077
    except OSError:
        return
    if loose and redact_urls_in(text) != text:
        print(
            f"chatui: warning: {path} holds a password and is readable by others "
            f"(mode {oct(path.stat().st_mode & 0o777)[2:].zfill(4)}): run `chmod 600 {path}`, "
            "or keep the password in PGPASSWORD or ~/.pgpass instead",
            file=sys.stderr,
        )
