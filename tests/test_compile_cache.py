"""`chatui.compile_cache`: what start-up compiles is kept, and a hit is what Python makes.

Its speed is measured by `bench/app_bench.py --startup-only`, never here.
"""

from __future__ import annotations

import collections
import dataclasses
import re
import re._compiler
import subprocess
import sys
import typing
import uuid
from pathlib import Path
from typing import Any

import pytest

from chatui import compile_cache, launch

pytestmark = pytest.mark.skipif(
    sys.version_info[:2] not in compile_cache._KNOWN_INTERNALS, reason="left alone here"
)


@pytest.fixture
def cache_file(tmp_path: Path):
    path = tmp_path / "cache" / "compiled.marshal"
    yield path
    compile_cache.finish()


def _made_class() -> type:
    """A dataclass whose generated source no other test makes (a fresh field name)."""
    name = f"f_{uuid.uuid4().hex}"
    return dataclasses.make_dataclass(
        "Point",
        [
            ("x", int),
            (name, str, dataclasses.field(default="a")),
            ("tags", list, dataclasses.field(default_factory=list)),
        ],
        frozen=True,
    )


def _start(path: Path, *, accepted: bool = True) -> compile_cache._Cache:
    """A start; `accepted`: one the app went on with (its `save()` before it runs)."""
    compile_cache.install(path)
    assert compile_cache._state is not None
    if accepted:
        compile_cache.save()
    return compile_cache._state


def test_a_start_that_is_not_the_apps_writes_nothing(cache_file):
    """A refused start (a bad config or database), `--help` or a command compiles
    through the cache but leaves the user's folders as they were."""
    cache = _start(cache_file, accepted=False)
    _made_class()
    assert cache.learned
    compile_cache.finish()
    assert not cache_file.exists() and not cache_file.parent.exists()


def test_a_second_start_compiles_nothing_and_gets_the_same_classes_and_patterns(cache_file):
    pattern = rf"(?P<word>\w+)-(\d+)-{uuid.uuid4().hex}"
    first = _start(cache_file)
    Point = _made_class()
    made = re.compile(pattern, re.IGNORECASE)
    assert first.learned
    compile_cache.finish()
    assert cache_file.exists() and oct(cache_file.stat().st_mode & 0o777) == "0o600"

    second = _start(cache_file)
    fields = [f.name for f in dataclasses.fields(Point)]
    Again = dataclasses.make_dataclass(
        "Point",
        [
            ("x", int),
            (fields[1], str, dataclasses.field(default="a")),
            ("tags", list, dataclasses.field(default_factory=list)),
        ],
        frozen=True,
    )
    re.purge()  # re's own cache would answer before the compiler is asked
    hit = re.compile(pattern, re.IGNORECASE)
    assert not second.learned  # every piece came from the file
    compile_cache.finish()

    a, b = Again(1), Again(1)
    assert a == b and a != Again(2)
    assert repr(a) == repr(Point(1))
    assert a.tags == [] and a.tags is not Again(1).tags
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.x = 3  # type: ignore[misc]
    text = f"Hello-42-{pattern.rsplit('-', 1)[1].upper()}"
    assert hit.match(text) and hit.match(text).groupdict() == made.match(text).groupdict()
    assert (hit.flags, hit.groups, dict(hit.groupindex)) == (
        made.flags,
        made.groups,
        dict(made.groupindex),
    )


def _made_tuple_and_reference() -> tuple[Any, typing.ForwardRef]:
    """A NamedTuple and a forward reference whose source no other test makes."""
    name = f"f_{uuid.uuid4().hex}"
    return typing.NamedTuple("Pair", [("x", int), (name, str)]), typing.ForwardRef(name)


def test_a_second_start_compiles_no_named_tuple_or_forward_reference(cache_file):
    """`NamedTuple` classes `eval` their `__new__` from text and forward references
    compile their string (~30 M instructions of the first frame, issue 23): both are
    kept, and what the file gives is what Python makes."""
    first = _start(cache_file)
    Pair, reference = _made_tuple_and_reference()
    assert first.learned
    compile_cache.finish()

    second = _start(cache_file)
    name = Pair._fields[1]
    Again = typing.NamedTuple("Pair", [("x", int), (name, str)])
    again = typing.ForwardRef(name)
    assert not second.learned  # every piece came from the file
    compile_cache.finish()

    assert Again(1, "a") == Pair(1, "a") and Again(x=2, **{name: "b"})[1] == "b"
    assert again == reference
    assert again._evaluate({name: int}, None, frozenset()) is int
    _start(cache_file)
    with pytest.raises(SyntaxError):  # a bad reference is an error as before
        typing.ForwardRef("not an expression (")


def test_a_cached_dataclass_init_has_the_annotations_python_gives_it(cache_file):
    """The cache compiles as `dataclasses` does, without `from __future__ import
    annotations` (that made `__init__`'s annotations strings)."""
    _start(cache_file)
    Point = _made_class()
    compile_cache.finish()
    _start(cache_file)
    Again = dataclasses.make_dataclass(
        "Point", [(f.name, f.type) for f in dataclasses.fields(Point)]
    )
    compile_cache.finish()
    assert Point.__init__.__annotations__["x"] is int
    assert Again.__init__.__annotations__["x"] is int


def test_finish_puts_pythons_own_compilers_back(cache_file):
    original = re._compiler.compile
    _start(cache_file)
    assert re._compiler.compile is not original and "exec" in vars(dataclasses)
    assert "eval" in vars(collections) and "compile" in vars(typing)
    compile_cache.finish()
    assert re._compiler.compile is original and "exec" not in vars(dataclasses)
    assert "eval" not in vars(collections) and "compile" not in vars(typing)
    assert not compile_cache.active()


@pytest.mark.parametrize("content", [b"", b"not marshal", b"\xe3garbage" * 10])
def test_an_unreadable_file_is_ignored_and_rewritten(cache_file, content):
    cache_file.parent.mkdir(parents=True)
    cache_file.write_bytes(content)
    cache = _start(cache_file)
    _made_class()
    assert cache.learned
    compile_cache.finish()
    assert _start(cache_file).code  # read back


def test_a_file_from_another_python_is_not_used(cache_file):
    import marshal

    _start(cache_file)
    _made_class()
    compile_cache.finish()
    data = marshal.loads(cache_file.read_bytes())
    data["python"] = "2.7.18"
    cache_file.write_bytes(marshal.dumps(data))
    assert _start(cache_file).code == {}


def test_past_its_limit_the_file_keeps_what_the_last_start_used(cache_file, monkeypatch):
    monkeypatch.setattr(compile_cache, "MAX_ENTRIES", 1)
    cache = _start(cache_file)
    cache.code["stale source"] = compile("pass", "<string>", "exec")
    _made_class()
    compile_cache.finish()
    assert "stale source" not in _start(cache_file).code


def test_the_first_screen_ends_it():
    """`launch.resume` (the app's first frame, or a command about to run) puts Python's
    compilers back; `chatui --version` never gets there and still does."""
    code = (
        "import sys, dataclasses\n"
        "from chatui import cli, compile_cache\n"
        "code = cli.main(['--version'])\n"
        "print(compile_cache.active(), 'exec' in vars(dataclasses))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split()[-2:] == ["False", "False"], out.stderr
    compile_cache.install(Path("/nonexistent/never-written"))
    assert compile_cache.active()
    launch.resume()
    assert not compile_cache.active()


def test_the_app_writes_it_for_the_next_start(monkeypatch):
    """Through the console script's path: what the start compiled is in the file of
    the cache folder once it is over."""
    from chatui import cli
    from chatui.core.paths import compile_cache_file

    learned: list[bool] = []

    class App:  # the app's start up to `ChatApp.run`, which is all this needs
        return_code = 0

        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def run(self) -> None:
            _made_class()
            learned.append(compile_cache._state is not None and compile_cache._state.learned)

    monkeypatch.setattr("chatui.tui.app.ChatApp", App)
    try:
        assert cli.main([]) == 0
    finally:
        launch.resume()
    assert learned == [True]
    assert compile_cache_file().exists()


def test_save_writes_before_the_end_and_only_what_is_new(cache_file):
    """The app saves once its modules are imported: a terminal closed right after the
    first frame never gets to `finish`. A start that learned nothing more writes nothing."""
    _start(cache_file)
    _made_class()
    compile_cache.save()
    assert compile_cache.active() and cache_file.exists()
    cache_file.unlink()
    compile_cache.save()
    compile_cache.finish()
    assert not cache_file.exists()


def test_a_cache_that_cannot_be_written_never_stops_the_start(cache_file):
    """Neither a value marshal refuses nor a folder that cannot be made raises: the
    file is left as it was."""
    cache = _start(cache_file)
    _made_class()
    cache.code["odd"] = object()  # marshal refuses it
    compile_cache.finish()
    assert not cache_file.exists()
    blocked = cache_file.parent.parent / "blocked"
    blocked.write_text("a file where the folder would be")
    _start(blocked / "cache" / "compiled.marshal")
    _made_class()
    compile_cache.finish()
