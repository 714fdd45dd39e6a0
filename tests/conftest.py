"""Shared fixtures. Each engineer appends fixtures below; keep them small."""

from __future__ import annotations

import pytest

from store import SessionManager, Store


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """Every test gets its own CHATUI_HOME so nothing touches the real user dirs."""
    home = tmp_path_factory.mktemp("chatui-home")
    monkeypatch.setenv("CHATUI_HOME", str(home))
    return home


@pytest.fixture
def store(tmp_path):
    """A file-backed store (peewee connections are per thread; files work across threads)."""
    with Store(tmp_path / "test.db") as s:
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


# A PostgreSQL schema of one's own (`pg_url`); see tests/pg_helpers.py.
from tests.pg_helpers import pg_url  # noqa: E402, F401
