"""Secrets hygiene (issue 25 items 6 and 12): a password in `api_base` and a key an
endpoint echoes inside a reply never reach the screen's events, the database or an export;
the README offers password-less database URLs first; a readable config holding a
password is warned about; the `store` library creates its databases private.
"""

from __future__ import annotations

import os
import stat

from chatui import cli
from store import Store, StoreSessionProvider
from tests import llm_server as script
from tests.conftest import FAKE_OPENAI_KEY
from tests.test_engine import make_chat, of, run

PASSWORD = "hunter2-Wombat-77"


def everything_stored(path) -> bytes:
    """The database file and its WAL: what a reader of the disk would find."""
    return b"".join(
        p.read_bytes() for p in (path, path.with_name(path.name + "-wal")) if p.exists()
    )


async def test_a_password_in_api_base_is_never_shown_stored_or_exported(
    tmp_path, llm_server, fake_key, capsys
):
    from chatui.core.events import TurnFailed

    db = tmp_path / "chats.db"
    with Store(db) as store:
        base = llm_server.base_url.replace("http://", f"http://me:{PASSWORD}@")
        chat = make_chat(store, llm_server, api_base=base, max_retries=0)
        llm_server.script(script.error(401, "no such key"), script.error(500, "boom"))
        shown: list[str] = []
        for text in ("first", "second"):
            events = await run(chat.engine.send(chat.sid, text))
            failed = of(events, TurnFailed)
            assert failed, events
            shown += [failed[0].title, failed[0].detail, failed[0].hint]
        # A server that is not there: the connection error names the URL.
        refused = base.rsplit(":", 1)[0] + ":9/v1"
        chat = make_chat(store, llm_server, api_base=refused, max_retries=0, request_timeout=2.0)
        events = await run(chat.engine.send(chat.sid, "third"))
        failed = of(events, TurnFailed)
        shown += [failed[0].title, failed[0].detail, failed[0].hint]
        assert any("me:***@" in text for text in shown), shown  # the URL is named, redacted
        assert not [text for text in shown if PASSWORD in text]
        stored = [m.metadata for m in StoreSessionProvider(store, chat.sid).get_tree()]
        assert any(meta.get("error") for meta in stored), stored
    assert PASSWORD.encode() not in everything_stored(db)
    out = tmp_path / "all.json"
    assert cli.main(["export", "--all", "-o", str(out), "--db", str(db)]) == 0
    assert "error" in out.read_text() and PASSWORD not in out.read_text()
    capsys.readouterr()


async def test_a_key_echoed_inside_a_reply_is_not_stored_or_indexed(tmp_path, llm_server, fake_key):
    db = tmp_path / "chats.db"
    with Store(db) as store:
        chat = make_chat(store, llm_server)
        llm_server.script(
            script.text(f"Your key is {FAKE_OPENAI_KEY} and it works.", reasoning="echo it")
        )
        await run(chat.engine.send(chat.sid, "what is my key?"))
        reply = StoreSessionProvider(store, chat.sid).get_latest_leaf()
        assert reply is not None
        assert reply.text == "Your key is [redacted] and it works."
        assert (
            store.query(
                "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", ('"FAKEKEY"',)
            )[0][0]
            == 0
        )
        # An ordinary reply that talks about keys in code is left as the model wrote it.
        llm_server.script(script.text('api_key = os.environ["OPENAI_API_KEY"]'))
        await run(chat.engine.send(chat.sid, "show me code"))
        code = StoreSessionProvider(store, chat.sid).get_latest_leaf()
        assert code is not None and code.text == 'api_key = os.environ["OPENAI_API_KEY"]'
    assert FAKE_OPENAI_KEY.encode() not in everything_stored(db)


def test_the_store_library_creates_its_database_files_private(tmp_path):
    old = os.umask(0o022)
    try:
        db = tmp_path / "new" / "lib.db"
        with Store(db) as store:
            StoreSessionProvider  # noqa: B018 - the library alone, no chatui paths
            store.query("SELECT 1")
            modes = {
                p.name: stat.S_IMODE(p.stat().st_mode)
                for p in db.parent.iterdir()
                if p.name.startswith("lib.db")
            }
        assert modes and set(modes.values()) == {0o600}, {k: oct(v) for k, v in modes.items()}
    finally:
        os.umask(old)


def test_a_readable_config_holding_a_password_is_warned_about(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    monkeypatch.setenv("CHATUI_HOME", str(home))
    config = home / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'model = "demo"\ndatabase = "postgresql://me:{PASSWORD}@127.0.0.1:1/x"\n')
    config.chmod(0o644)
    from chatui.core.config import load_config

    load_config(config)
    warned = capsys.readouterr().err
    assert "config.toml" in warned and "0644" in warned and "chmod 600" in warned, warned
    assert PASSWORD not in warned
    config.chmod(0o600)
    load_config(config)
    assert capsys.readouterr().err == ""


def test_the_readme_offers_password_less_database_urls_first():
    from pathlib import Path

    from store import redact_urls_in

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    commands = [line for line in readme.splitlines() if "chatui" in line and "://" in line]
    assert commands
    # A password on a command line is visible to everyone in `ps`: no example puts one there.
    assert [line for line in commands if redact_urls_in(line) != line] == []
    assert "PGPASSWORD" in readme and ".pgpass" in readme
