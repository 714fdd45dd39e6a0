"""A chat's send writes through queries compiled once, not built again each time (issue 22).

peewee renders a query's SQL anew on every execution: for the few statements a
send runs against its chat's row, its reply and its memory blocks, that
rendering (hundreds of node visits a statement) cost more than running them.
Every statement of a send's store work goes through `store.prepared`: the
second send builds nothing.
"""

import pytest

from store import Message, Session, SessionManager
from store.providers import StoreContextProvider


def count_builds(store, monkeypatch):
    """SQL contexts `store`'s database hands out: one per statement peewee renders."""
    built = []
    real = store.db.get_sql_context

    def counted(*args, **kwargs):
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(store.db, "get_sql_context", counted)
    return built


async def a_send(manager, session, block, number):
    """What a turn asks of the store: status, the reply and its flushes, usage, a block."""
    manager.set_status("chat", "active")
    await block.get()
    reply = Message(f"r{number}", "assistant", [{"type": "text", "text": "partial"}])
    await session.append_message(reply)
    for text in ("partial answer", "the whole answer"):
        reply.parts[0]["text"] = text
        session.update_message(reply)
    info = manager.add_usage("chat", 10, 5, 0.25)
    manager.set_status("chat", "idle", "done")
    return info


async def test_a_sends_store_work_builds_no_sql_after_the_first(store, monkeypatch):
    manager = SessionManager(store)
    manager.create("a chat", id="chat")
    session = Session(store).for_session("chat")
    block = StoreContextProvider(store, "chat", "notes", default="none yet")
    await block.set("remember this")
    await a_send(manager, session, block, 1)  # each query's first use compiles it

    built = count_builds(store, monkeypatch)
    info = await a_send(manager, session, block, 2)
    assert built == []
    # and what it did is what the built queries did
    assert (info.input_tokens, info.output_tokens, info.cost) == (20, 10, 0.5)
    assert manager.get("chat").status == "idle"
    assert session.get_message("r2").parts[0]["text"] == "the whole answer"
    assert await block.get() == "remember this"


async def test_the_prepared_writes_still_refuse_a_missing_chat(store):
    manager = SessionManager(store)
    from store.errors import UnknownSessionError

    with pytest.raises(UnknownSessionError):
        manager.set_status("nowhere", "idle")
    with pytest.raises(UnknownSessionError):
        manager.add_usage("nowhere", 1, 1, 0.0)
