"""Built-in providers: directory skills, search entries, skills; their blocks and tools."""

import pytest

from store import (
    BANNER,
    DirectorySkillProvider,
    Session,
    StoreSearchProvider,
    StoreSkillProvider,
    UnknownSkillError,
)


@pytest.fixture
def skills_dir(tmp_path):
    folder = tmp_path / "skills"
    folder.mkdir()
    (folder / "deploy.md").write_text(
        "---\ndescription: How we ship\n---\n# Deploy\nStep 1. Step 2.\n", encoding="utf-8"
    )
    (folder / "review.md").write_text("# Code review checklist\nLook at tests.\n", encoding="utf-8")
    (folder / "plain.md").write_text("no heading here\n", encoding="utf-8")
    (folder / "notes.txt").write_text("not a skill", encoding="utf-8")
    (folder / "bad.md").write_bytes(b"\xff\xfe not utf-8")
    return folder


async def test_directory_skills_listing_and_load(skills_dir):
    provider = DirectorySkillProvider(skills_dir)
    listing = await provider.get()
    assert listing == (
        "- deploy: How we ship\n- plain\n- review: Code review checklist"
    )  # bad.md left out, .txt ignored
    assert await provider.load("deploy") == "# Deploy\nStep 1. Step 2.\n"  # no front matter
    assert (await provider.load("review")).startswith("# Code review")


@pytest.mark.parametrize("key", ["../secret", "a/b", "..", ".hidden", "", " deploy", "x\x00", None])
async def test_directory_skills_refuse_bad_keys(skills_dir, key):
    (skills_dir.parent / "secret.md").write_text("top secret")
    before = sorted(p.name for p in skills_dir.iterdir())
    provider = DirectorySkillProvider(skills_dir)
    with pytest.raises(UnknownSkillError, match="invalid skill key"):
        await provider.load(key)
    with pytest.raises(UnknownSkillError, match="invalid skill key"):
        await provider.set(key, "overwrite")
    assert sorted(p.name for p in skills_dir.iterdir()) == before
    assert (skills_dir.parent / "secret.md").read_text() == "top secret"


@pytest.mark.parametrize("key", ["missing", "notes", "bad"])
async def test_directory_skills_missing_or_unreadable(skills_dir, key):
    with pytest.raises(UnknownSkillError):
        await DirectorySkillProvider(skills_dir).load(key)


async def test_directory_skills_refuse_symlinks_out_of_the_folder(skills_dir, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\nprivate")
    (skills_dir / "link.md").symlink_to(outside)
    provider = DirectorySkillProvider(skills_dir)
    assert "link" not in (await provider.get())
    with pytest.raises(UnknownSkillError):
        await provider.load("link")
    with pytest.raises(UnknownSkillError):
        await provider.set("link", "overwrite")
    assert outside.read_text() == "# Outside\nprivate"


async def test_directory_skills_set_writes_front_matter(tmp_path, store):
    provider = DirectorySkillProvider(tmp_path / "new-folder")
    assert await provider.get() is None
    await provider.set("howto", "Do the thing.", "How to\ndo it")
    assert (
        tmp_path / "new-folder" / "howto.md"
    ).read_text() == "---\ndescription: How to do it\n---\nDo the thing."
    assert await provider.get() == "- howto: How to do it"
    s = Session(store).for_session("d").with_context("skills", provider=provider)
    tools = await s.tools()
    assert await tools["load_context"](label="skills", key="howto") == "Do the thing."
    out = await tools["load_context"](label="skills", key="../../etc/passwd")
    assert out.startswith("Error:")


async def test_empty_searchable_and_loadable_blocks_are_kept(store):
    s = (
        Session(store)
        .for_session("e")
        .with_context("kb", provider=StoreSearchProvider(store, "empty-kb"))
        .with_context("skills", provider=StoreSkillProvider(store, "empty-skills"))
    )
    prompt = await s.freeze_system_prompt()
    assert prompt == (
        f"{BANNER}\nKB [searchable]\n{BANNER}\nNo entries indexed yet.\n\n"
        f"{BANNER}\nSKILLS [loadable]\n{BANNER}"
    )


async def test_search_provider_counts_and_returns_the_top_ten(store):
    kb = StoreSearchProvider(store, "kb")
    assert await kb.get() == "No entries indexed yet."
    await kb.set("only", "one giraffe")
    assert await kb.get() == "1 entry indexed."
    for i in range(14):
        await kb.set(f"k{i:02d}", "giraffe " * (i + 1) + "facts")
    assert await kb.get() == "15 entries indexed."
    hits = kb.find("giraffe")
    assert len(hits) == 10 and hits[0][0] == "k13"  # most matches first
    text = await kb.search("giraffe")
    assert text.count("[k") == 10
    assert await kb.search("okapi") == "No results for 'okapi'."
    assert StoreSearchProvider(store, "other").find("giraffe") == []  # namespaced
    await kb.set("only", "now about zebras")
    assert ("only", "now about zebras") in kb.find("zebra") and len(kb.find("giraffe")) == 10
    assert await kb.delete("only") and not await kb.delete("only")
    assert kb.find("zebra") == [] and store.integrity_check() == []


@pytest.mark.parametrize("key,content", [("", "x"), ("  ", "x"), (None, "x"), ("k", 3)])
async def test_search_and_skill_set_refuse_bad_input(store, key, content):
    kb, skills = StoreSearchProvider(store, "kb"), StoreSkillProvider(store, "sk")
    with pytest.raises((ValueError, TypeError)):
        await kb.set(key, content)
    with pytest.raises((ValueError, TypeError)):
        await skills.set(key, content)
    assert kb.entries() == [] and await skills.get() is None


async def test_set_context_on_a_search_block_saves_a_keyed_entry(store):
    kb = StoreSearchProvider(store, "kb")
    s = Session(store).for_session("kb").with_context("knowledge", max_tokens=20, provider=kb)
    tool = (await s.tools())["set_context"]
    out = await tool(
        label="knowledge", content="The office wifi is 'guest'.", metadata={"title": "Office Wifi"}
    )
    assert out == "Saved entry 'office-wifi' in 'knowledge'."
    assert kb.entries() == [("office-wifi", "The office wifi is 'guest'.")]
    untitled = await tool(label="knowledge", content="Parking is on level 2.")
    assert untitled.startswith("Saved entry 'parking-is-on-level-2-")
    too_long = await tool(label="knowledge", content="word " * 100)
    assert too_long.startswith("Error:") and len(kb.entries()) == 2


async def test_unknown_skill_key_changes_nothing(store):
    skills = StoreSkillProvider(store, "sk")
    await skills.set("deploy", "Step 1.")
    with pytest.raises(UnknownSkillError):
        await skills.load("nope")
    s = Session(store).for_session("u").with_context("skills", provider=skills)
    tools = await s.tools()
    out = await tools["load_context"](label="skills", key="nope")
    assert out.startswith("Error:") and s.loaded_skills() == set()
    unload = await tools["unload_context"](label="skills", key="deploy")
    assert unload.startswith("Error:")
    wrong_label = await tools["load_context"](label="nope", key="deploy")
    assert wrong_label.startswith("Error:") and s.loaded_skills() == set()


async def test_clear_messages_forgets_loaded_skills(store):
    skills = StoreSkillProvider(store, "sk")
    await skills.set("deploy", "Step 1.")
    s = Session(store).for_session("c").with_context("skills", provider=skills)
    await (await s.tools())["load_context"](label="skills", key="deploy")
    assert s.loaded_skills() == {("skills", "deploy")}
    s.clear_messages()
    assert s.loaded_skills() == set()
