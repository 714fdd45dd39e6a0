"""`chatui.tui.css_cache`: Textual's parsed stylesheets kept between starts, and a start
from the cache draws exactly what a start that parsed draws.

Its speed is measured by `bench/app_bench.py --startup-only`, never here.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from textual.css.stylesheet import Stylesheet

from chatui.tui import css_cache

from .app_helpers import make_app, populate, screen_runs


@pytest.fixture
def chats(store):
    return populate(store)


@pytest.fixture
def cache_file(tmp_path: Path):
    yield tmp_path / "cache" / "css.pickle"
    css_cache._state = None


async def _start(store, cache_file: Path, theme: str | None = None) -> tuple[list, int]:
    """One start through the cache: what the screen shows (text and colours), and how
    many of its stylesheets' sources it parsed (did not find in the cache) for its
    first screen."""
    app = make_app(store, warm_llm=False, model_process=False, theme=theme)
    css_cache.install(app, cache_file)
    assert isinstance(app.stylesheet, css_cache.CachedStylesheet)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.main.chat_input.cursor_blink = False  # the same screen at any moment
        await pilot.pause()
        await pilot.pause()
        runs = screen_runs(app)
    cache = css_cache._state
    assert cache is not None
    css_cache._state = None
    return runs, cache.parsed


async def test_a_second_start_parses_nothing_and_draws_the_same_screen(store, chats, cache_file):
    first, parsed = await _start(store, cache_file)
    assert parsed >= 15 and cache_file.exists()  # Textual's sources, ours, the .tcss
    assert cache_file.stat().st_mode & 0o077 == 0  # private, as the compile cache
    learned = cache_file.stat().st_mtime_ns
    second, parsed = await _start(store, cache_file)
    assert parsed == 0
    assert second == first
    assert cache_file.stat().st_mtime_ns == learned  # nothing new: nothing written


async def test_another_theme_parses_again_and_keeps_its_own_rules(store, cache_file):
    dark, _ = await _start(store, cache_file)
    light, parsed = await _start(store, cache_file, theme="chatui-light")
    assert parsed >= 15  # the variables (colours) differ: nothing kept for them is used
    assert light != dark
    again, parsed = await _start(store, cache_file, theme="chatui-light")
    assert parsed == 0 and again == light


@pytest.mark.parametrize(
    "content",
    [b"", b"not a pickle", pickle.dumps({"stamp": ("0.0.1", "other python"), "rules": {}})],
)
async def test_a_file_that_cannot_be_used_is_parsed_over(store, cache_file, content):
    reference, _ = await _start(store, cache_file)
    cache_file.write_bytes(content)
    runs, parsed = await _start(store, cache_file)
    assert parsed >= 15 and runs == reference
    _, parsed = await _start(store, cache_file)  # rewritten by the start that parsed
    assert parsed == 0


def test_rules_with_errors_are_never_kept(cache_file):
    stylesheet = Stylesheet(variables={})
    css_cache._state = css_cache._Cache(cache_file, "test")
    stylesheet.__class__ = css_cache.CachedStylesheet
    stylesheet.add_source("Bad { colour: red; }", read_from=("bad", ""))
    with pytest.raises(Exception):  # noqa: B017  # Textual's own error, as without the cache
        stylesheet.parse()
    assert css_cache._state.rules == {} and not css_cache._state.learned


class _Counted(dict[str, str]):
    """Variables that count how often they are compared."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        _Counted.compared += 1
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        _Counted.compared += 1
        return dict.__ne__(self, other)

    __hash__ = None  # type: ignore[assignment]


def _cached(cache_file: Path, variables: dict[str, str]) -> Stylesheet:
    css_cache._state = css_cache._Cache(cache_file, "test")
    stylesheet = Stylesheet(variables=variables)
    stylesheet.__class__ = css_cache.CachedStylesheet
    return stylesheet


def _add_and_parse(stylesheet: Stylesheet, count: int) -> None:
    """As widgets mount: each adds its default CSS, and the next styling parses all."""
    for i in range(count):
        stylesheet.add_source(f"#w{i} {{ color: $primary; }}", read_from=(f"w{i}", ""))
        stylesheet.parse()


def test_the_variables_are_compared_once_while_sources_are_added(cache_file):
    """Textual parses every source again whenever one is added: the stylesheet's
    variables are compared with the kept rules' once (issue 23), and new variables (a
    theme change) are still seen."""
    _add_and_parse(_cached(cache_file, {"primary": "#123456"}), 5)
    assert css_cache._state is not None
    css_cache._state.write()

    second = _cached(cache_file, _Counted(primary="#123456"))
    _Counted.compared = 0
    _add_and_parse(second, 5)  # 15 lookups
    assert css_cache._state.parsed == 0 and _Counted.compared == 1

    second.set_variables(_Counted(primary="#654321"))
    second.parse()
    assert css_cache._state.parsed == 5  # the new colour: parsed again, not kept rules
    assert second.rules[0].styles.color.hex == "#654321"


def test_no_textual_version_no_cache(store, cache_file, monkeypatch):
    monkeypatch.setattr(css_cache, "textual_version", lambda: None)
    app = make_app(store, warm_llm=False, model_process=False)
    css_cache.install(app, cache_file)
    assert not isinstance(app.stylesheet, css_cache.CachedStylesheet)
    assert css_cache._state is None


def test_textuals_version_is_found():
    import importlib.metadata

    assert css_cache.textual_version() == importlib.metadata.version("textual")
