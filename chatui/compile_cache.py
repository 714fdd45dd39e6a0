"""Start-up: the code that dataclasses and regular expressions compile, kept between starts.

Measured with callgrind on the app's start to its first frame (issue 23): of the
instructions spent importing what a bare Textual app does not, about half went to
compiling code that is the same on every start. Each `@dataclass` builds the source
of its `__init__`, `__repr__`, `__eq__` (and, frozen, `__setattr__`...) and compiles
it with `exec` (~3-5 M instructions a class; chatui, its store and Textual make ~130
of them before the first frame), and every `re.compile` runs the pure-Python regex
parser and compiler (~120 patterns, Textual's CSS tokenizer's among them). Together
~420 M instructions, about 60 ms of CPU on the bench machine. Two more compile small
expressions: each `NamedTuple` and `namedtuple` class `eval`s its `__new__` from text
(~80 classes), and each `typing` forward reference (a type written as a string,
`Optional["Widget"]`) compiles that string (~260): ~30 M of the ~1,155 M before the
first frame (issue 23).

`install` puts a cache in front of both for the start-up only, `finish` takes it
away and writes what it learned: the same source text always compiles to the same
code, and the same pattern and flags to the same regex program, so a hit is exactly
what the compiler would have made. The first start after an install or an upgrade
compiles as before and writes the file (keyed by the Python version: another
interpreter ignores it); a file that cannot be read is ignored, one that cannot be
written is left as it is. Python versions whose internals differ are left alone.
"""

from __future__ import annotations

import marshal
import os
import sys

TYPE_CHECKING = False  # `chatui.launch` imports this module before `chatui ask` runs
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

__all__ = ["active", "finish", "install", "save"]

MAX_ENTRIES = 5_000
"""Beyond this many, the file keeps only what the last start used (each upgrade adds
the code of the classes and patterns it changed; nothing else ever removes them)."""

_KNOWN_INTERNALS = ((3, 11), (3, 12))
"""The versions whose `re._compiler.compile` `_program` follows step by step (and whose
`dataclasses` compiles with `exec`)."""

_STAMP = f"{sys.version} (2)"
"""The file's key: the interpreter, and the format ((2): `__init__`s compiled without
this module's `from __future__ import annotations`; earlier files had them as strings)."""

_state: _Cache | None = None


class _Cache:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.code: dict[str | tuple[str, str], Any] = {}
        self.patterns: dict[tuple[str | bytes, int], tuple[Any, ...]] = {}
        self.used_code: set[str | tuple[str, str]] = set()
        self.used_patterns: set[tuple[str | bytes, int]] = set()
        self.learned = False
        self.writable = False
        """Set by the first `save()`: only a start the app accepted writes the file."""
        self.compiler: Any = None
        self.original_compile: Any = None
        self._read()

    def _read(self) -> None:
        try:
            data = marshal.loads(self.path.read_bytes())
            if data["python"] == _STAMP:
                self.code, self.patterns = data["code"], data["patterns"]
        except Exception:  # missing, truncated, another format: start with none
            self.code, self.patterns = {}, {}

    def write(self) -> None:
        # Copies (one C call each): a thread compiling meanwhile cannot change them.
        code, patterns = dict(self.code), dict(self.patterns)
        if len(code) + len(patterns) > MAX_ENTRIES:
            code = {k: v for k, v in code.items() if k in self.used_code}
            patterns = {k: v for k, v in patterns.items() if k in self.used_patterns}
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            data = marshal.dumps({"python": _STAMP, "code": code, "patterns": patterns})
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temporary, self.path)  # a reader sees the old file or the new one
        except (OSError, ValueError):  # a cache never stops a start: the next one retries
            try:
                temporary.unlink()
            except OSError:  # not there, or no folder to hold it
                pass

    # -- dataclasses: `exec` of a generated source text ------------------------------

    def exec(self, source: Any, globals: Any = None, locals: Any = None) -> None:
        """`dataclasses` calls `exec(text, globals, ns)`: this name, set in its module,
        is found before the builtin."""
        if isinstance(source, str):
            source = self._compiled(source, "exec")
        exec(source, globals, locals)

    # -- namedtuple: `eval(text, namespace)`; typing's forward references: `compile` ---

    def eval(self, source: Any, globals: Any = None, locals: Any = None) -> Any:
        """`collections.namedtuple` calls `eval(text, namespace)` (set in its module)."""
        if isinstance(source, str) and globals is not None:
            source = self._compiled(source, "eval")
        return eval(source, globals, locals)

    def compile(self, source: Any, filename: Any, mode: str, *args: Any, **kwargs: Any) -> Any:
        """`typing.ForwardRef` calls `compile(text, "<string>", "eval")` (set in its
        module); any other call is Python's own."""
        if (
            isinstance(source, str)
            and filename == "<string>"
            and mode == "eval"
            and not (args or kwargs)
        ):
            return self._compiled(source, "eval")
        return compile(source, filename, mode, *args, **kwargs)

    def _compiled(self, source: str, mode: str) -> Any:
        """The code of `source` as the caller's own `compile` makes it (none of this
        module's `__future__` flags: a dataclass's `__init__` keeps real annotations)."""
        key: Any = source if mode == "exec" else (mode, source)
        code = self.code.get(key)
        if code is None:
            code = self.code[key] = compile(source, "<string>", mode, dont_inherit=True)
            self.learned = True
        self.used_code.add(key)
        return code

    # -- re: `re._compiler.compile(pattern, flags)` -----------------------------------

    def compile_pattern(self, pattern: Any, flags: int = 0) -> Any:
        compiler = self.compiler
        if not isinstance(pattern, str | bytes) or flags & compiler.SRE_FLAG_DEBUG:
            return self.original_compile(pattern, flags)
        key = (pattern, int(flags))
        program = self.patterns.get(key)
        if program is None:
            program = self.patterns[key] = _program(compiler, pattern, flags)
            self.learned = True
        self.used_patterns.add(key)
        final_flags, code, groups, groupindex, indexgroup = program
        return compiler._sre.compile(
            pattern, final_flags, code, groups, dict(groupindex), indexgroup
        )


def _program(compiler: Any, pattern: str | bytes, flags: int) -> tuple[Any, ...]:
    """What `re._compiler.compile` hands `_sre.compile` after the pattern, as plain
    values (its opcodes are int subclasses that marshal does not take)."""
    parsed = compiler._parser.parse(pattern, flags)
    code = [int(op) for op in compiler._code(parsed, flags)]
    groupindex = dict(parsed.state.groupdict)
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    return (
        int(flags | parsed.state.flags),
        code,
        parsed.state.groups - 1,
        groupindex,
        tuple(indexgroup),
    )


def install(path: Path) -> None:
    """Compile dataclasses and regexes through the cache in `path` until `finish()`
    (no-op when installed already, or on a Python whose internals are not known)."""
    global _state
    if _state is not None or sys.version_info[:2] not in _KNOWN_INTERNALS:
        return
    import collections
    import dataclasses
    import re._compiler as compiler
    import typing

    cache = _Cache(path)
    cache.compiler, cache.original_compile = compiler, compiler.compile
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    collections.eval = cache.eval  # type: ignore[attr-defined]
    typing.compile = cache.compile  # type: ignore[attr-defined]
    compiler.compile = cache.compile_pattern
    _state = cache


def active() -> bool:
    """True between `install()` and `finish()`."""
    return _state is not None


def save() -> None:
    """Write the file now if this start compiled anything new since the last write,
    and let `finish` write what is compiled after.

    The app calls it once its modules are imported and its config and database were
    accepted, before it starts (a no-op but on a start after an upgrade): a terminal
    closed right after the first frame (the bench's launches) would otherwise never
    get to `finish`. Nothing else writes the file: a refused start, `--help` or a
    command leaves the user's folders as they were."""
    cache = _state
    if cache is None:
        return
    cache.writable = True
    if cache.learned:
        cache.learned = False
        cache.write()


def finish() -> None:
    """Compile as Python does again; write the file if this start compiled anything new
    since `save()` (only after it: see there)."""
    global _state
    if _state is not None and _state.writable:
        save()
    cache, _state = _state, None
    if cache is None:
        return
    import collections
    import dataclasses
    import re._compiler as compiler
    import typing

    del dataclasses.exec  # type: ignore[attr-defined]
    del collections.eval  # type: ignore[attr-defined]
    del typing.compile  # type: ignore[attr-defined]
    compiler.compile = cache.original_compile
