"""Themes as data: TOML files turned into validated Textual `Theme`s.

Bundled themes live in the `themes` package; a user's own go in
`<config dir>/themes/*.toml`. chatui's colour tokens (roles, gauges, branch
marks) are theme `variables`; themes that do not set them (Textual's built-in
ones) get them derived from their own palette, so every theme works.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

from themes import THEMES_DIR

from ..core import paths

__all__ = [
    "DEFAULT_DARK",
    "DEFAULT_LIGHT",
    "TOKENS",
    "ThemeError",
    "derived_tokens",
    "load_theme",
    "load_themes",
]

log = logging.getLogger(__name__)

DEFAULT_DARK = "chatui-dark"
DEFAULT_LIGHT = "chatui-light"
TOKENS = (
    "role-user",
    "role-assistant",
    "role-tool",
    "gauge-ok",
    "gauge-warn",
    "gauge-over",
    "branch-mark",
)
_COLOURS = (
    "primary",
    "secondary",
    "accent",
    "warning",
    "error",
    "success",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
)


class ThemeError(ValueError):
    """A theme file that cannot be used (the message names the file)."""


def _colour(where: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ThemeError(f"{where} must be a colour string")
    try:
        Color.parse(value)
    except ColorParseError as exc:
        raise ThemeError(f"{where}: {value!r} is not a colour") from exc
    return value


def load_theme(path: Path) -> Theme:
    """Read and validate one theme file.

    Raises:
        ThemeError: not TOML, a missing name or primary, an unknown key or a bad colour.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ThemeError(f"{path}: cannot read theme: {exc}") from exc
    allowed = {"name", "dark", "variables", *_COLOURS}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ThemeError(f"{path}: unknown key {unknown[0]!r}")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ThemeError(f"{path}: a theme needs a name")
    if "primary" not in data:
        raise ThemeError(f"{path}: a theme needs a primary colour")
    colours = {key: _colour(f"{path}: {key}", data[key]) for key in _COLOURS if key in data}
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeError(f"{path}: dark must be true or false")
    variables = data.get("variables", {})
    if not isinstance(variables, dict):
        raise ThemeError(f"{path}: [variables] must be a table")
    for key, value in variables.items():
        if key not in TOKENS:
            raise ThemeError(f"{path}: unknown token {key!r} (known: {', '.join(TOKENS)})")
        _colour(f"{path}: variables.{key}", value)
    return Theme(name=name.strip(), dark=dark, variables=dict(variables), **colours)  # type: ignore[arg-type]  # colours: str values, checked above


def load_themes(folders: Iterable[Path] | None = None) -> list[Theme]:
    """Bundled themes, then the user's; a broken file is logged and skipped."""
    if folders is None:
        folders = (THEMES_DIR, paths.config_dir() / "themes")
    themes: list[Theme] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        for file in sorted(folder.glob("*.toml")):
            try:
                themes.append(load_theme(file))
            except ThemeError as exc:
                log.warning("skipping theme: %s", exc)
    return themes


def derived_tokens(variables: Mapping[str, str]) -> dict[str, str]:
    """chatui's tokens from a theme's generated Textual variables (for themes without them)."""
    return {
        "role-user": variables.get("accent", variables["primary"]),
        "role-assistant": variables["primary"],
        "role-tool": variables.get("text-muted", variables["foreground"]),
        "gauge-ok": variables.get("success", variables["primary"]),
        "gauge-warn": variables.get("warning", variables["primary"]),
        "gauge-over": variables.get("error", variables["primary"]),
        "branch-mark": variables.get("warning", variables["primary"]),
    }
