"""Context blocks, the system-prompt format, freeze/refresh and prompt caching (SPEC 3)."""

import pytest

from store import (
    BANNER,
    ContextConfig,
    ContextLimitError,
    DuplicateBlockError,
    ReadOnlyBlockError,
    Session,
    StaticProvider,
    Store,
    StoreSearchProvider,
    StoreSkillProvider,
    UnknownBlockError,
)


def build(store, sid="s"):
    return (
        Session.create(store)
        .for_session(sid)
        .with_context(
            "soul", description="Identity", provider=StaticProvider("You are a helpful assistant.")
        )
        .with_context("memory", description="Learned facts", max_tokens=1100)
    )


async def test_banner_format_exact(store):
    s = build(store)
    await s.replace_context_block("memory", "User likes coffee.")
    prompt = await s.freeze_system_prompt()
    tokens = s.get_context_block("memory").tokens
    pct = tokens * 100 // 1100
    assert prompt == (
        f"{BANNER}\nSOUL (Identity) [readonly]\n{BANNER}\nYou are a helpful assistant.\n\n"
        f"{BANNER}\nMEMORY (Learned facts) [{pct}% — {tokens}/1100 tokens] [writable]\n"
        f"{BANNER}\nUser likes coffee."
    )
    assert len(BANNER) == 46 and set(BANNER) == {"═"}


async def test_empty_readonly_omitted_empty_writable_kept(store):
    s = (
        Session(store)
        .for_session("e")
        .with_context("soul", provider=StaticProvider(""))
        .with_context("memory")
    )
    prompt = await s.freeze_system_prompt()
    assert "SOUL" not in prompt
    assert prompt == f"{BANNER}\nMEMORY [writable]\n{BANNER}"


async def test_searchable_and_loadable_tags(store):
    search = StoreSearchProvider(store, "kb")
    await search.set("k1", "the deploy runbook")
    skills = StoreSkillProvider(store, "sk")
    await skills.set("api-ref", "API docs", "API Reference")
    s = (
        Session(store)
        .for_session("t")
        .with_context("knowledge", description="KB", provider=search)
        .with_context("skills", provider=skills)
    )
    prompt = await s.freeze_system_prompt()
    assert "KNOWLEDGE (KB) [searchable]" in prompt
    assert "SKILLS [loadable]" in prompt
    assert "api-ref" in prompt
    kinds = {b.label: (b.is_searchable, b.is_skill) for b in s.get_context_blocks()}
    assert kinds == {"knowledge": (True, False), "skills": (False, True)}


async def test_blocks_in_declaration_order_and_fields(store):
    s = build(store)
    blocks = s.get_context_blocks()
    assert [b.label for b in blocks] == ["soul", "memory"]
    soul, memory = blocks
    assert soul.writable is False and soul.content == "You are a helpful assistant."
    assert memory.writable is True and memory.max_tokens == 1100 and memory.content == ""
    assert s.get_context_block("nope") is None


async def test_replace_and_append(store):
    s = build(store)
    await s.replace_context_block("memory", "User likes coffee.")
    await s.append_context_block("memory", "User prefers dark roast.")
    assert s.get_context_block("memory").content == "User likes coffee.\nUser prefers dark roast."
    # durable: a new Session object on the same store sees it
    assert build(store).get_context_block("memory").content.endswith("dark roast.")


async def test_limit_raises_and_changes_nothing(store):
    s = Session(store).for_session("l").with_context("memory", max_tokens=5)
    await s.replace_context_block("memory", "short")
    with pytest.raises(ContextLimitError):
        await s.replace_context_block("memory", "this is far too long for five tokens " * 3)
    with pytest.raises(ContextLimitError):
        await s.append_context_block("memory", "and more words here please")
    assert s.get_context_block("memory").content == "short"


async def test_readonly_and_unknown_blocks(store):
    s = build(store)
    with pytest.raises(ReadOnlyBlockError):
        await s.replace_context_block("soul", "new soul")
    with pytest.raises(UnknownBlockError):
        await s.append_context_block("ghost", "x")
    assert s.get_context_block("soul").content == "You are a helpful assistant."


async def test_add_and_remove_context(store):
    s = build(store)
    await s.add_context("notes", description="Extension notes", max_tokens=500)
    assert [b.label for b in s.get_context_blocks()] == ["soul", "memory", "notes"]
    with pytest.raises(DuplicateBlockError):
        await s.add_context("notes")
    assert s.remove_context("notes") is True
    assert s.remove_context("notes") is False


async def test_freeze_is_stable_until_refresh(store):
    s = build(store)
    first = await s.freeze_system_prompt()
    await s.replace_context_block("memory", "New fact.")
    assert await s.freeze_system_prompt() == first
    refreshed = await s.refresh_system_prompt()
    assert "New fact." in refreshed
    assert await s.freeze_system_prompt() == refreshed


async def test_cached_prompt_survives_restart(tmp_path):
    path = tmp_path / "c.db"
    with Store(path) as store:
        s = build(store).with_cached_prompt()
        await s.replace_context_block("memory", "Fact one.")
        frozen = await s.freeze_system_prompt()
    with Store(path) as store:
        s = build(store).with_cached_prompt()
        await s.replace_context_block("memory", "Fact two.")
        assert await s.freeze_system_prompt() == frozen  # a new process, same prompt
        assert "Fact two." in await s.refresh_system_prompt()
    with Store(path) as store:
        assert "Fact two." in await build(store).with_cached_prompt().freeze_system_prompt()


async def test_without_cache_a_new_process_renders_afresh(tmp_path):
    path = tmp_path / "n.db"
    with Store(path) as store:
        s = build(store)
        await s.freeze_system_prompt()
        await s.replace_context_block("memory", "Later fact.")
    with Store(path) as store:
        assert "Later fact." in await build(store).freeze_system_prompt()


async def test_direct_constructor_with_context_configs(store):
    s = Session(
        store,
        context=[
            ContextConfig(label="memory", description="Notes", max_tokens=500),
            ContextConfig(label="soul", provider=StaticProvider("You are helpful.")),
        ],
        session_id="direct",
    )
    assert [b.label for b in s.get_context_blocks()] == ["memory", "soul"]


async def test_block_storage_is_namespaced_by_session(store):
    a = build(store, "a")
    b = build(store, "b")
    await a.replace_context_block("memory", "only a")
    assert b.get_context_block("memory").content == ""


async def test_builder_order_does_not_matter(store):
    s1 = Session(store).with_cached_prompt().for_session("o").with_context("memory")
    s2 = Session(store).with_context("memory").for_session("o").with_cached_prompt()
    await s1.replace_context_block("memory", "same")
    assert await s1.freeze_system_prompt() == await s2.freeze_system_prompt()


@pytest.mark.parametrize(
    "bad", [dict(label=""), dict(label="x", max_tokens=0), dict(label="x", max_tokens="10")]
)
def test_bad_context_config(bad):
    with pytest.raises(ValueError):
        ContextConfig(**bad)


async def test_custom_async_provider_loaded_on_first_async_use(store):
    import asyncio

    class Slow:
        async def get(self):
            await asyncio.sleep(0)
            return "from the network"

    s = Session(store).for_session("slow").with_context("remote", provider=Slow())
    assert "from the network" in await s.freeze_system_prompt()
    assert s.get_context_block("remote").content == "from the network"
