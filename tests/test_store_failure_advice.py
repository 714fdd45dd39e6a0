"""A failed write is explained in its engine's terms: a SQLite file's disk and
permissions, or what happened to a PostgreSQL server (a lost connection, its
full disk, a read-only server, missing grants), never the other engine's words.
"""

from __future__ import annotations

import sqlite3

import peewee
import psycopg
import pytest
from psycopg import errors

from chatui.core.events import TurnFailed
from chatui.core.jobs import JobEnded, ReplyJobs
from store import DatabaseUnavailableError, SessionManager, Store, StoreSessionProvider
from tests.test_engine import make_chat, run

from .pg_helpers import SERVER


def wrapped(exc: Exception) -> Exception:
    """`exc` as peewee raises it from a driver call."""
    try:
        with peewee.__exception_wrapper__:  # type: ignore[attr-defined]  # peewee's own
            raise exc
    except Exception as peewee_error:
        return peewee_error
    raise AssertionError("not raised")


@pytest.fixture
def pg_store(pg_url):
    with Store(pg_url) as store:
        yield store


def test_sqlite_speaks_of_the_disk_and_the_file(tmp_path):
    with Store(tmp_path / "chat.db") as store:
        advice = store.failure_advice(sqlite3.OperationalError("database or disk is full"))
        assert not store.unreachable(sqlite3.OperationalError("unable to open database file"))
        assert store.answers()
    assert "disk space" in advice and "file" in advice


def test_a_lost_connection_is_said_so(pg_store):
    store = pg_store
    chat = SessionManager(store).create("chat")
    with pytest.raises(peewee.DatabaseError) as failed, store.write():
        pid = store.query("SELECT pg_backend_pid()")[0][0]
        with psycopg.connect(SERVER, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        StoreSessionProvider(store, chat.id).append_message(
            {"id": "m", "role": "user", "parts": []}
        )
    advice = store.failure_advice(failed.value)
    assert "connection to the PostgreSQL server" in advice and store.path in advice
    assert "disk" not in advice and "file" not in advice


def test_a_read_only_server_is_said_so(pg_store):
    store = pg_store
    store.execute("SET default_transaction_read_only = on")
    with pytest.raises(peewee.DatabaseError) as failed:
        SessionManager(store).create("chat")
    assert "accepts no writes" in store.failure_advice(failed.value)


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (errors.DiskFull("could not extend file"), "disk is full"),
        (
            psycopg.OperationalError("could not extend file: No space left on device"),
            "disk is full",
        ),
        (errors.InsufficientPrivilege("permission denied for table messages"), "grants"),
        (errors.TooManyConnections("sorry, too many clients already"), "max_connections"),
        (errors.OutOfMemory("out of memory"), "out of memory"),
        (errors.QueryCanceled("canceling statement due to statement timeout"), "cancelled"),
        (errors.AdminShutdown("terminating connection due to administrator command"), "lost"),
        (errors.CannotConnectNow("the database system is starting up"), "lost"),
        (psycopg.OperationalError("consuming input failed: server closed the connection"), "lost"),
        (errors.UniqueViolation("duplicate key"), "is running and has free disk space"),
    ],
)
def test_each_server_failure_has_its_words(pg_store, error, words):
    store = pg_store
    advice = store.failure_advice(wrapped(error))
    assert words in advice and store.path in advice
    assert "file" not in advice
    # Only a server that is away is one to wait for (a reply is kept meanwhile).
    assert store.unreachable(wrapped(error)) is (words == "lost")


def test_odd_exceptions_get_the_general_words(pg_store):
    store = pg_store
    cyclic_a, cyclic_b = RuntimeError("a"), RuntimeError("b")
    cyclic_a.__context__, cyclic_b.__context__ = cyclic_b, cyclic_a
    selfish = ValueError()
    selfish.args = (selfish,)
    for exc in (ValueError("x"), cyclic_a, selfish, OSError(28, "No space left on device")):
        assert "PostgreSQL server" in store.failure_advice(exc)
    unavailable = DatabaseUnavailableError("cannot connect")
    assert "connection to the PostgreSQL server" in store.failure_advice(unavailable)


async def test_the_chat_says_it_in_the_engines_words(
    store, db_engine, llm_server, fake_key, monkeypatch
):
    chat = make_chat(store, llm_server)
    gone = wrapped(errors.AdminShutdown("terminating connection due to administrator command"))
    full = sqlite3.OperationalError("database or disk is full")
    failure = gone if db_engine == "postgres" else full

    def refuse(self, message, parent_id=None):
        raise failure

    monkeypatch.setattr(StoreSessionProvider, "append_message", refuse)
    [failed] = await run(chat.engine.send(chat.sid, "hello"))
    assert isinstance(failed, TurnFailed) and failed.kind == "storage"
    assert failed.hint.startswith("Nothing was sent.")
    if db_engine == "postgres":
        assert "connection to the PostgreSQL server" in failed.hint
        assert "disk" not in failed.hint
    else:
        assert "disk space" in failed.hint

    async def broken_turn():
        raise failure
        yield  # an async generator

    events: list = []
    jobs = ReplyJobs(chat.manager)
    jobs.subscribe(events.append)
    jobs.start(chat.sid, "send", broken_turn())
    await jobs.wait(chat.sid)
    [ended] = [e for e in events if isinstance(e, JobEnded)]
    assert ended.storage and ended.advice == store.failure_advice(failure)
