"""Shared fixtures. Each engineer appends fixtures below; keep them small."""

from __future__ import annotations

import contextlib
import functools
import os
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import settings

from store import SessionManager, Store
from store.urls import redact_url

# Property tests check what each example gives, not how fast: on a loaded 2-core
# machine one example can outlast hypothesis's 200 ms deadline and fail the run.
settings.register_profile("chatui", deadline=None)
settings.load_profile("chatui")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """Every test gets its own CHATUI_HOME so nothing touches the real user dirs."""
    home = tmp_path_factory.mktemp("chatui-home")
    monkeypatch.setenv("CHATUI_HOME", str(home))
    return home


@pytest.fixture(autouse=True)
def _fresh_window_book():
    """The context windows learned are process-wide (one book per app run); a test must
    not inherit another's: a later loopback server on a reused port would be 'already
    asked' and never asked again."""
    import sys

    module = sys.modules.get("chatui.llm.windows")
    if module is not None:
        module.WINDOWS.clear()
    yield


# -- engines ------------------------------------------------------------------------
#
# The store's suite runs on SQLite and on PostgreSQL: in the modules below, every
# test that uses the `store` fixture (or `manager`, built on it) runs once per
# engine. The PostgreSQL half needs a server at CHATUI_TEST_POSTGRES_URL; without
# one it is skipped with the reason, unless CHATUI_REQUIRE_POSTGRES=1 (CI) makes
# that a failure. Each PostgreSQL test gets a schema of its own, dropped after it.

POSTGRES_URL: str = os.environ.get(
    "CHATUI_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
REQUIRE_POSTGRES = os.environ.get("CHATUI_REQUIRE_POSTGRES", "") == "1"
BOTH_ENGINES = {
    "test_auto_compaction",
    "test_context",
    "test_db_engines",
    "test_export_markdown",
    "test_export_roundtrip",
    "test_import_chatgpt",
    "test_import_llm",
    "test_import_llm_threads",
    "test_import_merge",
    "test_import_pi",
    "test_import_states",
    "test_manager",
    "test_store_agents",
    "test_store_attachments",
    "test_store_bad_input",
    "test_store_branch_memory",
    "test_store_compaction",
    "test_store_failure_advice",
    "test_store_history_walk",
    "test_store_lifecycle",
    "test_store_nul",
    "test_store_peers",
    "test_store_providers",
    "test_store_search_scripts",
    "test_store_snapshots",
    "test_store_storage",
    "test_tools",
    "test_tree",
}


_SKIPPED_ON_POSTGRES: list[str] = []


def pytest_terminal_summary(terminalreporter):
    """One line at the end saying the PostgreSQL half (or the browser tests) did not
    run, and why."""
    if _SKIPPED_BROWSER:
        terminalreporter.write_line(
            f"Browser tests SKIPPED ({len(_SKIPPED_BROWSER)} tests): {_SKIPPED_BROWSER[0]} "
            "(CHATUI_REQUIRE_BROWSER=1 makes this fail)",
            yellow=True,
            bold=True,
        )
    if _SKIPPED_ON_POSTGRES:
        terminalreporter.write_line(
            f"PostgreSQL half SKIPPED ({len(_SKIPPED_ON_POSTGRES)} tests): {_postgres_problem()}; "
            "set CHATUI_TEST_POSTGRES_URL to a server (CHATUI_REQUIRE_POSTGRES=1 makes this fail)",
            yellow=True,
            bold=True,
        )


def pytest_generate_tests(metafunc):
    module = metafunc.module.__name__.rsplit(".", 1)[-1]
    if "db_engine" in metafunc.fixturenames and module in BOTH_ENGINES:
        metafunc.parametrize("db_engine", ["sqlite", "postgres"], indirect=True)


@functools.cache
def _postgres_problem() -> str:
    """Why the PostgreSQL half cannot run ("" when the server answers)."""
    try:
        import psycopg

        psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
    except Exception as exc:  # any reason at all: say it and skip (or fail on CI)
        return f"no PostgreSQL server at {redact_url(POSTGRES_URL)} ({' '.join(str(exc).split())})"
    return ""


@contextlib.contextmanager
def postgres_schema() -> Iterator[str]:
    """A `Store` URL whose tables live in a fresh schema, dropped on exit."""
    import psycopg

    problem = _postgres_problem()
    if problem:
        if REQUIRE_POSTGRES:
            pytest.fail(f"{problem}; CHATUI_REQUIRE_POSTGRES=1 needs it")
        _SKIPPED_ON_POSTGRES.append(problem)
        pytest.skip(f"{problem}; set CHATUI_TEST_POSTGRES_URL to run the PostgreSQL half")
    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in POSTGRES_URL else "?"
    url = f"{POSTGRES_URL}{sep}options=-csearch_path%3D{schema}&application_name={schema}"
    try:
        yield url
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            # Connections a test left open (other threads') would hold the drop up.
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s AND pid <> pg_backend_pid()",
                (schema,),
            )
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def db_engine(request) -> str:
    """The engine under test: sqlite, or postgres too in the modules of BOTH_ENGINES."""
    return getattr(request, "param", "sqlite")


@pytest.fixture
def store_url(db_engine, tmp_path) -> Iterator[str]:
    """Where the test's database is: a file, or a PostgreSQL URL with its own schema."""
    if db_engine == "postgres":
        with postgres_schema() as url:
            yield url
    else:
        yield str(tmp_path / "test.db")


@pytest.fixture
def store(store_url):
    """The test's store: a file (peewee connections are per thread; files work across
    threads), or a PostgreSQL schema of its own."""
    with Store(store_url) as s:
        yield s


@pytest.fixture
def manager(store):
    return SessionManager(store)


@pytest.fixture(autouse=True, scope="session")
def _utc_clock():
    """Times render in UTC so screenshots and assertions do not depend on the machine."""
    import os
    import time

    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = old
    time.tzset()


# -- LLM side (engine, llm, demo) -------------------------------------------------


@pytest.fixture
def llm_server():
    """A scripted OpenAI-compatible server on 127.0.0.1 (see tests/llm_server.py)."""
    from tests.llm_server import LLMServer

    server = LLMServer().start()
    yield server
    server.stop()


FAKE_OPENAI_KEY = "sk-test-FAKEKEY-0123456789abcdefXYZ"


@pytest.fixture
def fake_key(monkeypatch):
    """A recognisable fake OPENAI_API_KEY; other providers' keys removed."""
    import os

    for name in list(os.environ):
        if name.endswith("_API_KEY"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_OPENAI_KEY)
    monkeypatch.setenv("CHATUI_DEMO_DELAY", "0")
    return FAKE_OPENAI_KEY


# A PostgreSQL schema of one's own (`pg_url`), a server of one's own (`pg_cluster`);
# see tests/pg_helpers.py.
from tests.pg_helpers import pg_cluster, pg_cluster_server, pg_url  # noqa: E402, F401

# pytest-xdist workers export COLUMNS=80 and LINES=24; a chatui started in tmux by a test
# would take them for its size (Rich reads them) and draw 80×24 in a wider window.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)
# An app's model process waits as the spare for the next app (chatui.llm.spare) when its
# app ends: in the suite every app would leave one behind for ten minutes, and one
# test's spare would serve another's app. None here; the spare's tests turn it on.
os.environ["CHATUI_SPARE_SECONDS"] = "0"

# -- a real browser (the HTML export) ------------------------------------------------
#
# Debian's chromium driven by the playwright package (its own browser download cannot
# be reached from these machines). Without it the tests skip, with one line at the end;
# CHATUI_REQUIRE_BROWSER=1 (CI) makes that a failure.

CHROMIUM = os.environ.get("CHATUI_TEST_CHROMIUM", "/usr/bin/chromium")
_SKIPPED_BROWSER: list[str] = []


def _browser_problem() -> str:
    """Why the browser tests cannot run ("" when they can)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (the test extra)"
    if not os.path.exists(CHROMIUM):
        return f"no chromium at {CHROMIUM} (apt-get install chromium)"
    return ""


@pytest.fixture
def browser():
    """A headless chromium (playwright `Browser`), or a skip saying why there is none.

    Per test, not per session: playwright's sync API holds an event loop on the thread
    while it runs, and a test may need `asyncio.run` (a CLI command) before it."""
    problem = _browser_problem()
    if problem:
        if os.environ.get("CHATUI_REQUIRE_BROWSER", "") == "1":
            pytest.fail(f"{problem}; CHATUI_REQUIRE_BROWSER=1 needs it")
        _SKIPPED_BROWSER.append(problem)
        pytest.skip(problem)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


# -- the order of the run -------------------------------------------------------------
#
# pytest-xdist's worksteal hands each worker a contiguous share of the collected tests
# and lets idle workers take from the tails of the others' shares; a test is never
# taken once it runs. A file of long tests that starts late in a share decides when
# the whole run ends (the 80-second fuzz of live chats, the tmux sessions). So the
# slowest files (seconds a file, measured on the 2-core machine) go first in the
# shares, spread so that each share starts with about as much of them; whole files,
# so that a module's fixtures are made once.
_SLOW_FILES: dict[str, int] = {
    "test_fuzz_live.py": 90,
    "test_tmux.py": 150,
    "test_llm_worker.py": 200,
    "test_tmux_live.py": 60,
    "test_export_roundtrip.py": 60,
    "test_fuzz_tools.py": 45,
    "test_engine_kill.py": 40,
    "test_reliability_kill.py": 40,
    "test_live_chats.py": 60,
    "test_security_keys.py": 35,
}


def pytest_collection_modifyitems(config, items):
    workerinput = getattr(config, "workerinput", None)
    workers = int(workerinput["workercount"]) if workerinput else 0
    if workers < 2:
        return
    files: dict[str, list] = {}
    rest = []
    for item in items:
        if item.path.name in _SLOW_FILES:
            files.setdefault(item.path.name, []).append(item)
        else:
            rest.append(item)
    heads: list[list] = [[] for _ in range(workers)]
    weight = [0] * workers
    for name in sorted(files, key=lambda n: -_SLOW_FILES[n]):
        lightest = weight.index(min(weight))
        heads[lightest].extend(files[name])
        weight[lightest] += _SLOW_FILES[name]
    # The shares as worksteal cuts them: what is left, divided by the workers left.
    ordered: list = []
    left = len(items)
    for share in range(workers):
        size = left // (workers - share)
        chunk = heads[share][:]
        while len(chunk) < size and rest:
            chunk.append(rest.pop(0))
        ordered.extend(chunk)
        left -= len(chunk)
    ordered.extend(rest)
    items[:] = ordered
