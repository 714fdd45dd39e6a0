"""Database URLs: never taken for a file path, never shown with their password."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatui.cli import main
from chatui.cli.commands import UNREACHABLE
from store import (
    DatabaseFileError,
    DatabaseUnavailableError,
    SessionManager,
    Store,
    is_url,
    redact_url,
)
from store.urls import redact_urls_in

SECRET_URL = "postgresql://bob:hunter2@127.0.0.1:1/chats"


def test_urls_are_told_from_paths():
    assert is_url(SECRET_URL) and is_url("sqlite:///tmp/x.db")
    assert is_url(Path(SECRET_URL))  # flattened to "postgresql:/bob:…" by Path
    assert not is_url("chats.db") and not is_url("/tmp/a:b/chats.db") and not is_url(":memory:")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (SECRET_URL, "postgresql://bob:***@127.0.0.1:1/chats"),
        ("postgresql://bob@host/db", "postgresql://bob@host/db"),  # nothing to hide
        ("postgresql://:pw@host/db", "postgresql://:***@host/db"),
        (
            "postgresql://u:p%40ss@[::1]:5432/db?sslmode=require",
            "postgresql://u:***@[::1]:5432/db?sslmode=require",
        ),
        ("postgresql://u:pw@host:notaport/db", "postgresql://***"),
        ("chats.db", "chats.db"),
    ],
)
def test_redact_url(url, shown):
    assert redact_url(url) == shown


def test_redact_urls_in_free_text():
    text = f"connect to {SECRET_URL} failed; retried postgres:/a:b@c"
    assert "hunter2" not in redact_urls_in(text) and ":b@" not in redact_urls_in(text)


def test_a_sqlite_url_opens_that_file(tmp_path):
    path = tmp_path / "url.db"
    with Store(f"sqlite:///{path}") as store:
        SessionManager(store).create("via a URL")
    with Store(path) as store:
        assert [s.name for s in SessionManager(store).list()] == ["via a URL"]


@pytest.mark.parametrize("given", [SECRET_URL, Path(SECRET_URL)])
def test_a_server_that_does_not_answer_is_named_without_its_password_and_makes_no_folder(
    given, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DatabaseUnavailableError, match="cannot connect") as caught:
        Store(given)  # nothing listens on port 1
    assert "hunter2" not in str(caught.value) and "bob:***@127.0.0.1:1/chats" in str(caught.value)
    assert "hunter2" not in repr(caught.value.__cause__) and caught.value.__suppress_context__
    assert list(tmp_path.iterdir()) == []  # no "postgresql:" folder, no file


def test_a_url_of_another_engine_is_refused_without_its_password(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DatabaseFileError, match="postgresql://") as caught:
        Store("mysql://bob:hunter2@h/db")
    assert not isinstance(caught.value, DatabaseUnavailableError)
    assert "hunter2" not in str(caught.value) and "bob:***@" in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_a_wrong_password_is_never_shown(tmp_path):
    # The test server trusts every login, so a refused login is a missing database.
    url = "postgresql://postgres:hunter2@127.0.0.1:5432/no_such_db_here"
    with pytest.raises(DatabaseUnavailableError) as caught:
        Store(url)
    assert "hunter2" not in str(caught.value) and "postgres:***@" in str(caught.value)


def test_sqlite_urls_follow_playhouse_db_url(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for memory in ("sqlite://", "sqlite:///:memory:"):  # db_url: no path is in memory
        with Store(memory) as store:
            assert store.path == ":memory:"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [["list"], ["search", "x"]])
def test_cli_with_a_server_url_fails_with_one_redacted_line(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(["--db", SECRET_URL, *argv])
    out, err = capsys.readouterr()
    assert code == UNREACHABLE
    assert "hunter2" not in out + err and "bob:***@127.0.0.1:1/chats" in err
    assert len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_app_with_a_server_url_exits_3_without_its_password(capsys, tmp_path, monkeypatch):
    from chatui.tui.app import run

    monkeypatch.chdir(tmp_path)
    assert run(db_path=SECRET_URL) == 3
    _, err = capsys.readouterr()
    assert "hunter2" not in err and "bob:***@" in err
    assert list(tmp_path.iterdir()) == []
