"""Start-up: Textual's parsed stylesheets, kept between starts.

Measured with callgrind from launch to the first full frame in tmux (issue 23):
Textual parsed the app's stylesheets on every start, ~87 M of the ~1,410 M
instructions before the first frame (its CSS tokenizer is pure Python; 21
sources, ~13k characters: Textual's own widgets' CSS, ours and the `.tcss` files).
The same text parsed with the same variables (the theme's colours) always gives
the same rules, so a start reads them from a file instead (pickled, ~50 kB).

`install` makes the app's stylesheet look its sources up in the file first; a
miss is parsed as Textual does and learned. `save` writes what the start learned
(called once the first screen is drawn: nothing waits for it), then learning
stops. The file is keyed by Textual's and Python's versions (another version
ignores it); an entry is used only with the variables it was parsed with (another
theme parses again) and only for the very same text and location; rules with
errors are never kept (Textual reports them as before). A file that cannot be
read is ignored, one that cannot be written is left as it is: a cache never stops
a start. Like `chatui.compile_cache`'s, the file lives in the private cache folder.
"""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path
from typing import Any

from textual.css.model import RuleSet
from textual.css.stylesheet import Stylesheet

from .lazy_parts import LazyPartsStylesheet

__all__ = ["CachedStylesheet", "install", "save", "textual_version"]

_Key = tuple[str, tuple[str, str], bool, int, str]

_state: _Cache | None = None


def textual_version() -> str | None:
    """Textual's installed version, from its `dist-info` folder (None: not found).
    `importlib.metadata` would read every installed package's metadata."""
    import textual

    folder = os.path.dirname(os.path.dirname(os.path.abspath(textual.__file__)))
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    for name in names:
        if name.startswith("textual-") and name.endswith(".dist-info"):
            return name[len("textual-") : -len(".dist-info")]
    return None


class _Cache:
    def __init__(self, path: Path, version: str) -> None:
        self.path = path
        self.stamp = (version, sys.version)
        self.variables: dict[str, str] | None = None
        self.rules: dict[_Key, list[RuleSet]] = {}
        self.learning = True
        self.learned = False
        self.parsed = 0
        """Sources parsed (not found in the cache) until `save()`: the first screen's."""
        self._checked: dict[str, str] | None = None
        """The stylesheet's variables last found equal to `variables` (see `_matches`)."""
        self._read()

    def _read(self) -> None:
        try:
            with open(self.path, "rb") as file:
                data = pickle.load(file)
            if data["stamp"] == self.stamp:
                self.variables, self.rules = dict(data["variables"]), dict(data["rules"])
        except Exception:  # missing, truncated, another format: start with none
            self.variables, self.rules = None, {}

    def _matches(self, variables: dict[str, str]) -> bool:
        """Whether `variables` are those the kept rules were parsed with. Compared once
        per dict: Textual re-parses every source each time a widget's default CSS is
        added (~70 lookups before the first frame), and comparing ~200 variables each
        time was ~6 M instructions of the start (issue 23). A stylesheet's variables
        change only by `set_variables`, which hands it a new dict."""
        if variables is self._checked:
            return True
        if self.variables != variables:
            return False
        self._checked = variables
        return True

    def get(self, key: _Key, variables: dict[str, str]) -> list[RuleSet] | None:
        if not self._matches(variables):
            return None
        return self.rules.get(key)

    def learn(self, key: _Key, variables: dict[str, str], rules: list[RuleSet]) -> None:
        if not self.learning:
            return
        self.parsed += 1
        if any(rule.errors for rule in rules):
            return
        if not self._matches(variables):  # another theme: what was kept is for the old one
            self.variables, self.rules = dict(variables), {}
            self._checked = variables
        self.rules[key] = rules
        self.learned = True

    def write(self) -> None:
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            data = pickle.dumps(
                {"stamp": self.stamp, "variables": self.variables, "rules": self.rules},
                protocol=pickle.HIGHEST_PROTOCOL,
            )
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temporary, self.path)  # a reader sees the old file or the new one
        except Exception:  # a cache never stops a start: the next one retries
            try:
                temporary.unlink()
            except OSError:  # not there, or no folder to hold it
                pass


class CachedStylesheet(LazyPartsStylesheet):
    """Textual's stylesheet, its sources' rules read from the cache when kept there (and
    its widgets' parts styled on first use, `lazy_parts`, as the app's own)."""

    def _parse_rules(
        self,
        css: str,
        read_from: tuple[str, str],
        is_default_rules: bool = False,
        tie_breaker: int = 0,
        scope: str = "",
    ) -> list[RuleSet]:
        cache = _state
        key: _Key = (css, read_from, is_default_rules, tie_breaker, scope)
        if cache is not None:
            rules = cache.get(key, self._variables)
            if rules is not None:
                return rules
        rules = super()._parse_rules(css, read_from, is_default_rules, tie_breaker, scope)
        if cache is not None:
            cache.learn(key, self._variables, rules)
        return rules


def install(app: Any, path: Path) -> None:
    """Parse `app`'s stylesheet through the cache in `path` (before the app runs: its
    sources are parsed when it starts). No-op where Textual's version is not found."""
    global _state
    stylesheet = getattr(app, "stylesheet", None)
    if type(stylesheet) not in (Stylesheet, LazyPartsStylesheet):  # already installed
        return
    version = textual_version()
    if version is None:
        return
    _state = _Cache(path, version)
    stylesheet.__class__ = CachedStylesheet


def save() -> None:
    """Write the file if this start parsed anything new, and stop learning (the
    stylesheets of later screens are parsed as Textual does)."""
    cache = _state
    if cache is None or not cache.learning:
        return
    cache.learning = False
    if cache.learned:
        cache.learned = False
        cache.write()
