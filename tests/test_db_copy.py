"""`chatui db copy SRC DST`: a whole history moved between databases, all or nothing."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from chatui.cli import main
from store import (
    Attachments,
    PeerRouter,
    SessionManager,
    Store,
    StoreContextProvider,
    StorePromptCache,
    StoreSearchProvider,
    StoreSessionProvider,
    StoreSkillProvider,
    copy_database,
)
from store.schema import MODELS, LoadedSkillRow


def msg(mid, text, role="user"):
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": text}]}


async def populate(store: Store) -> dict[str, str]:
    """A history that leaves a row in every table the store has."""
    manager = SessionManager(store)
    project = manager.create_project("Launch")
    alice = manager.create_agent("Alice", model="m-a", description="Plans")
    bob = manager.create_agent("Bob", model="m-b", description="Budgets")
    chat = manager.create("Plan the launch", model="demo", project_id=project.id, agent_id=alice.id)
    provider = StoreSessionProvider(store, chat.id)
    provider.append_message(msg("q1", "when do we ship the zeppelin?"), None)
    provider.append_message(msg("a1", "Friday, weather allowing.", "assistant"), "q1")
    provider.append_message(msg("a2", "Monday at the latest.", "assistant"), "q1")  # a branch
    sheet = Attachments(store).put("budget.csv", "text/csv", b"item,crowns\nzeppelin,40000\n")
    question = msg("q2", "and the budget?")
    provider.append_message({**question, "parts": [*question["parts"], sheet]}, "a2")
    provider.add_compaction("they talked about shipping", "q1", "a2")
    await StoreContextProvider(store, chat.id, "memory").set("Ana likes zeppelins")
    await StoreContextProvider(store, "global", "human").set("The user is Ana")
    await StoreSearchProvider(store, f"{chat.id}/notes").set("budget", "forty thousand crowns")
    await StoreSkillProvider(store, chat.id).set("howto", "Steps: one, two", "How to ship")
    await StorePromptCache(store, chat.id).set("You are a planner.")
    with store.write():
        store.run(
            LoadedSkillRow.insert(
                namespace=chat.id, label="skills", key="howto", tool_call_id="t1", message_id="a1"
            )
        )
    manager.set_status(chat.id, "idle", "resting")
    manager.add_usage(chat.id, 120, 45, 0.02)

    async def run_turn(session_id):
        await manager.append(session_id, msg(f"r-{session_id[:6]}", "Bob: 40k", "assistant"))
        return "Bob: 40k"

    router = PeerRouter(manager, run_turn)
    await router.send(chat.id, "Bob", "What is the budget?", wait=True)
    other = manager.create("Old chat")
    await manager.append(other.id, msg("x", "something deleted"))
    manager.delete(other.id)
    return {"chat": chat.id, "bob": bob.id}


def table_rows(store: Store) -> dict[str, list[tuple]]:
    """Every row of every table, in key order: the copy must hold exactly these."""
    out = {}
    for model in MODELS:
        key: Any = model._meta.primary_key
        order = (
            [model._meta.fields[n] for n in key.field_names]
            if hasattr(key, "field_names")
            else [key]
        )
        out[model._meta.table_name] = store.rows(model.select().order_by(*order))
    return out


def export_all(location: str, capsys) -> str:
    capsys.readouterr()
    assert main(["--db", location, "export", "--all", "--format", "json"]) == 0
    return capsys.readouterr().out


@pytest.fixture
async def source(tmp_path):
    path = str(tmp_path / "source.db")
    with Store(path) as store:
        await populate(store)
    return path


async def test_populate_reaches_every_table(source):
    with Store(source) as store:
        empty = [table for table, rows in table_rows(store).items() if not rows]
    assert empty == []


def test_sqlite_to_sqlite_and_back_is_identical(source, tmp_path, capsys):
    middle, back = str(tmp_path / "middle.db"), str(tmp_path / "back.db")
    assert main(["db", "copy", source, middle]) == 0
    out = capsys.readouterr().out
    assert "copied" in out and "messages:" in out
    assert main(["db", "copy", middle, back, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["copied"]["messages"] >= 6 and report["replaced"] == {}
    assert export_all(back, capsys) == export_all(source, capsys)
    with Store(source) as a, Store(back) as b:
        assert table_rows(a) == table_rows(b)
        assert b.integrity_check() == []


async def test_the_copy_searches_and_keeps_growing(source, tmp_path):
    dst = str(tmp_path / "copy.db")
    with Store(source) as src, Store(dst) as target:
        copy_database(src, target)
    with Store(dst) as target:
        manager = SessionManager(target)
        hits = manager.search("zeppelin")
        assert {h.id for h in hits} == {"q1"}
        [info] = [i for i in manager.list() if i.name == "Plan the launch"]
        assert [h.id for h in manager.search("crowns")] == []  # entries are not messages
        assert StoreSearchProvider(target, f"{info.id}/notes").find("crowns")
        # New rows follow the copied ones: append order ("latest") still means something.
        await manager.append(info.id, msg("q3", "one more zeppelin question"))
        history = StoreSessionProvider(target, info.id).get_history()
        assert history[-1].id == "q3"
        assert {h.id for h in manager.search("zeppelin")} == {"q1", "q3"}
        assert target.integrity_check() == []


def test_a_non_empty_destination_is_refused_and_left_alone(source, tmp_path, capsys):
    dst = str(tmp_path / "busy.db")
    with Store(dst) as store:
        SessionManager(store).create("mine")
        before = table_rows(store)
    assert main(["db", "copy", source, dst]) == 4
    err = capsys.readouterr().err
    assert "not empty" in err and "--replace" in err
    with Store(dst) as store:
        assert table_rows(store) == before


def test_replace_clears_the_destination_first(source, tmp_path, capsys):
    dst = str(tmp_path / "busy.db")
    with Store(dst) as store:
        SessionManager(store).create("mine")
    assert main(["db", "copy", source, dst, "--replace", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["replaced"]["sessions"] == 1
    assert export_all(dst, capsys) == export_all(source, capsys)


def test_a_failure_mid_copy_leaves_no_trace(source, tmp_path, capsys, monkeypatch):
    import store.db_copy as db_copy

    def broken(store):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(db_copy, "_rebuild_search_indexes", broken)
    existing = str(tmp_path / "empty.db")
    Store(existing).close()
    with pytest.raises(OSError):
        main(["db", "copy", source, existing])
    with Store(existing) as store:
        assert all(not rows for rows in table_rows(store).values())
    new = tmp_path / "new.db"
    with pytest.raises(OSError):
        main(["db", "copy", source, str(new)])
    assert not new.exists() and not (tmp_path / "new.db-wal").exists()


def test_copying_a_database_onto_itself_is_refused(source, capsys):
    assert main(["db", "copy", source, source, "--replace"]) == 4
    assert "same database" in capsys.readouterr().err
    with Store(source) as store:
        assert SessionManager(store).list()


def test_bad_sources_and_destinations(source, tmp_path, capsys):
    missing = tmp_path / "nope.db"
    dst = tmp_path / "dst.db"
    assert main(["db", "copy", str(missing), str(dst)]) == 4
    err = capsys.readouterr().err
    assert "source:" in err and "no database there" in err
    assert not missing.exists() and not dst.exists()

    assert main(["db", "copy", source, "mysql://u:sekret@127.0.0.1/x"]) == 4
    err = capsys.readouterr().err
    assert "destination:" in err and "sekret" not in err and "u:***@" in err

    assert main(["db", "copy", "postgresql://u:sekret@127.0.0.1:1/x", str(dst)]) == 7
    err = capsys.readouterr().err
    assert "source:" in err and "sekret" not in err and "127.0.0.1:1" in err
    assert not dst.exists()

    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("hello")
    assert main(["db", "copy", str(not_a_db), str(dst)]) == 4
    assert "not a SQLite database" in capsys.readouterr().err

    assert main(["db", "copy", source]) == 2  # DST missing: usage


def test_a_destination_from_a_newer_chatui_is_refused(source, tmp_path, capsys):
    dst = tmp_path / "newer.db"
    with Store(dst) as store:
        store.execute(
            "INSERT INTO schema_migrations (name, applied_at) VALUES ('m999_future', 'x')"
        )
    assert main(["db", "copy", source, str(dst)]) == 4
    err = capsys.readouterr().err
    assert "destination:" in err and "newer version" in err
    conn = sqlite3.connect(dst)
    assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
    conn.close()


def test_sqlite_to_postgresql_and_back_is_identical(source, tmp_path, capsys, pg_url):
    back = str(tmp_path / "back.db")
    assert main(["db", "copy", source, pg_url]) == 0
    assert export_all(pg_url, capsys) == export_all(source, capsys)
    assert main(["db", "copy", pg_url, back]) == 0
    assert export_all(back, capsys) == export_all(source, capsys)
    with Store(source) as a, Store(back) as b, Store(pg_url) as pg:
        assert table_rows(a) == table_rows(b) == table_rows(pg)
        assert b.integrity_check() == [] and pg.integrity_check() == []
        manager = SessionManager(pg)
        assert {h.id for h in manager.search("zeppelin")} == {"q1"}


async def test_postgresql_copy_keeps_growing_and_refuses_when_full(source, pg_url, capsys):
    assert main(["db", "copy", source, pg_url]) == 0
    with Store(pg_url) as pg:
        manager = SessionManager(pg)
        [info] = [i for i in manager.list() if i.name == "Plan the launch"]
        await manager.append(info.id, msg("q3", "one more zeppelin question"))
        assert StoreSessionProvider(pg, info.id).get_history()[-1].id == "q3"
        assert {h.id for h in manager.search("zeppelin")} == {"q1", "q3"}
        manager.create("another")  # status_changes' sequence follows the copied rows
        before = table_rows(pg)
    assert main(["db", "copy", source, pg_url]) == 4
    assert "not empty" in capsys.readouterr().err
    with Store(pg_url) as pg:
        assert table_rows(pg) == before


def test_a_failed_copy_into_postgresql_leaves_it_empty(source, pg_url, monkeypatch):
    import store.db_copy as db_copy

    def broken(store):
        raise RuntimeError("the server went away")

    monkeypatch.setattr(db_copy, "_rebuild_search_indexes", broken)
    with pytest.raises(RuntimeError):
        main(["db", "copy", source, pg_url])
    with Store(pg_url) as pg:
        assert all(not rows for rows in table_rows(pg).values())
