"""The CLI on either engine (this module runs once per engine, see conftest): `--db`,
`CHATUI_DB` and the config's `database` open it; `db info` describes it."""

from __future__ import annotations

import json

from chatui.cli import main
from store import SessionManager, Store
from store.migrations import MIGRATIONS


def msg(mid, text):
    return {"id": mid, "role": "user", "parts": [{"type": "text", "text": text}]}


async def fill(store: Store) -> str:
    manager = SessionManager(store)
    chat = manager.create("Engines chat")
    await manager.append(chat.id, msg("a", "The runners were running to 这个组件很好 🎉"))
    await manager.append(chat.id, msg("b", "and then they rested"))
    return chat.id


async def test_db_info_describes_the_engine(store, store_url, engine, capsys):
    await fill(store)
    assert main(["--db", store_url, "db", "info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["engine"] == engine
    assert info["schema_version"] == info["latest_version"] == len(MIGRATIONS)
    assert info["last_migration"] == MIGRATIONS[-1][0]
    assert info["counts"]["sessions"] == 1 and info["counts"]["messages"] == 2
    assert info["size_bytes"] > 0
    assert main(["db", "info", "--db", store_url]) == 0
    out = capsys.readouterr().out
    assert f"engine:          {engine}" in out and "messages:        2" in out


async def test_commands_read_the_same_chats_on_both_engines(store, store_url, capsys):
    chat_id = await fill(store)
    assert main(["--db", store_url, "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [c["id"] for c in listed] == [chat_id]
    for query, hit in [
        ("run", "a"),
        ("组件", "a"),
        ("🎉", "a"),
        ('"they rested"', "b"),
        ("rest*", "b"),
        ("nothing OR then", "b"),
        ("and", "b"),
    ]:
        assert main(["--db", store_url, "search", query, "--json"]) == 0, query
        hits = json.loads(capsys.readouterr().out)
        assert [h["message_id"] for h in hits] == [hit], query


async def test_chatui_db_and_the_config_database_open_it(store, store_url, capsys, monkeypatch):
    chat_id = await fill(store)
    monkeypatch.setenv("CHATUI_DB", store_url)
    assert main(["list", "--json"]) == 0
    assert [c["id"] for c in json.loads(capsys.readouterr().out)] == [chat_id]
    monkeypatch.delenv("CHATUI_DB")
    from chatui import paths

    paths.config_file().parent.mkdir(parents=True, exist_ok=True)
    paths.config_file().write_text(f"database = {json.dumps(store_url)}\n")
    assert main(["list", "--json"]) == 0
    assert [c["id"] for c in json.loads(capsys.readouterr().out)] == [chat_id]
