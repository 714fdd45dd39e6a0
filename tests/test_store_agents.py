"""Agents: registry, archive, config sync, and the one-agent-per-session rule (issue 4)."""

import pytest

from store import (
    UNSET,
    AgentSpec,
    DuplicateAgentError,
    UnknownAgentError,
)
from tests.engine_helpers import integrity_error


def agent_rows(manager):
    return manager.store.query("SELECT * FROM agents ORDER BY id")


def test_create_get_list(manager):
    coder = manager.create_agent(
        "Coder",
        model="gpt-x",
        soul="You write code.",
        description="Writes code",
        config={"peers": ["Reviewer"]},
    )
    reviewer = manager.create_agent("reviewer")
    assert manager.get_agent(coder.id) == coder
    assert manager.get_agent_by_name("CODER") == coder
    assert manager.get_agent_by_name(" Coder ") == coder
    assert coder.config == {"peers": ["Reviewer"]} and coder.soul == "You write code."
    assert coder.archived_at is None and coder.created_at == coder.updated_at
    assert [a.name for a in manager.list_agents()] == ["Coder", "reviewer"]  # by name, any case
    assert manager.get_agent("nope") is None and manager.get_agent_by_name("nope") is None
    assert manager.get_agent_by_name(None) is None
    assert reviewer.model is None and reviewer.config == {}


@pytest.mark.parametrize("name", ["Coder", "coder", "  CODER  "])
def test_names_are_unique_whatever_the_case(manager, name):
    manager.create_agent("Coder")
    before = agent_rows(manager)
    with pytest.raises(DuplicateAgentError):
        manager.create_agent(name)
    assert agent_rows(manager) == before


def test_duplicate_id_is_refused(manager):
    manager.create_agent("One", id="a1")
    before = agent_rows(manager)
    with pytest.raises(DuplicateAgentError):
        manager.create_agent("Two", id="a1")
    assert agent_rows(manager) == before


def test_the_database_backs_the_unique_name(manager):
    manager.create_agent("Coder")
    with pytest.raises(integrity_error(manager.store)):
        manager.store.execute(
            "INSERT INTO agents (id, name, created_at, updated_at) "
            "VALUES ('x', 'CODER', '2026', '2026')"
        )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"name": ""},
        {"name": "   "},
        {"name": None},
        {"name": "x" * 65},
        {"name": "a\nb"},
        {"name": "ok", "model": 3},
        {"name": "ok", "soul": None},
        {"name": "ok", "description": 1},
        {"name": "ok", "config": ["a"]},
        {"name": "ok", "config": {"x": object()}},
        {"name": "ok", "config": {"x": float("nan")}},
    ],
)
def test_bad_agent_fields_are_refused_and_nothing_written(manager, kwargs):
    with pytest.raises(ValueError):
        manager.create_agent(**kwargs)
    assert agent_rows(manager) == []


def test_update_changes_only_what_is_given(manager):
    agent = manager.create_agent("Coder", model="m1", soul="s", config={"a": 1})
    updated = manager.update_agent(agent.id, model=None, description="Writes code")
    assert (updated.model, updated.soul, updated.description, updated.config) == (
        None,
        "s",
        "Writes code",
        {"a": 1},
    )
    assert updated.updated_at >= agent.updated_at
    assert manager.update_agent(agent.id) == updated  # nothing given: nothing changes
    assert manager.update_agent(agent.id, name="Coder2", config={}).config == {}
    assert manager.update_agent(agent.id, soul=UNSET).soul == "s"


def test_update_bad_input_changes_nothing(manager):
    agent = manager.create_agent("Coder")
    manager.create_agent("Other")
    before = agent_rows(manager)
    with pytest.raises(DuplicateAgentError):
        manager.update_agent(agent.id, name="other")
    with pytest.raises(ValueError):
        manager.update_agent(agent.id, model="m", config="not a dict")
    with pytest.raises(UnknownAgentError, match="ghost"):
        manager.update_agent("ghost", name="x")
    assert agent_rows(manager) == before
    assert manager.update_agent(agent.id, name="coder").name == "coder"  # its own name


def test_archive_and_restore(manager):
    agent = manager.create_agent("Coder")
    session = manager.create("chat", agent_id=agent.id)
    archived = manager.archive_agent(agent.id)
    assert archived.archived_at is not None
    assert manager.archive_agent(agent.id).archived_at == archived.archived_at
    assert manager.list_agents() == []
    assert manager.list_agents(include_archived=True) == [archived]
    assert manager.get_agent(agent.id) == archived  # still resolvable
    assert manager.get(session.id).agent_id == agent.id  # its sessions stay
    before = manager.count()
    with pytest.raises(UnknownAgentError, match="archived"):
        manager.create("new chat", agent_id=agent.id)
    assert manager.count() == before
    assert manager.restore_agent(agent.id).archived_at is None
    assert manager.create("new chat", agent_id=agent.id).agent_id == agent.id
    for call in (manager.archive_agent, manager.restore_agent):
        with pytest.raises(UnknownAgentError):
            call("ghost")


def test_a_session_runs_exactly_one_agent(manager):
    coder = manager.create_agent("Coder")
    other = manager.create_agent("Other")
    before = manager.count()
    with pytest.raises(UnknownAgentError, match="ghost"):
        manager.create("chat", agent_id="ghost")
    assert manager.count() == before
    ad_hoc = manager.create("chat")
    assert manager.set_agent(ad_hoc.id, coder.id).agent_id == coder.id
    assert manager.set_agent(ad_hoc.id, coder.id).agent_id == coder.id  # same: fine
    with pytest.raises(ValueError, match="exactly one agent"):
        manager.set_agent(ad_hoc.id, other.id)
    with pytest.raises(UnknownAgentError):
        manager.set_agent(manager.create("x").id, "ghost")
    assert manager.get(ad_hoc.id).agent_id == coder.id
    assert [s.id for s in manager.list(agent_id=coder.id)] == [ad_hoc.id]


def test_sync_creates_and_the_config_wins_for_fields_it_sets(manager):
    existing = manager.create_agent(
        "Coder",
        model="old",
        soul="edited in the app",
        description="d",
        config={"peers": ["A"], "theme": "x"},
    )
    synced = manager.sync_agents(
        [
            AgentSpec("coder", model="new", config={"peers": ["Reviewer"]}),
            {"name": "Reviewer", "soul": "You review.", "description": "Reviews"},
        ]
    )
    coder, reviewer = synced
    assert coder.id == existing.id and coder.name == "coder"
    assert (coder.model, coder.soul, coder.description) == ("new", "edited in the app", "d")
    assert coder.config == {"peers": ["Reviewer"], "theme": "x"}  # merged key by key
    assert (reviewer.soul, reviewer.description, reviewer.model) == ("You review.", "Reviews", None)
    assert [a.name for a in manager.list_agents()] == ["coder", "Reviewer"]


def test_sync_is_idempotent_and_restores_listed_agents(manager):
    specs = [AgentSpec("Coder", model="m"), AgentSpec("Reviewer")]
    first = manager.sync_agents(specs)
    assert manager.sync_agents(specs) == first  # unchanged: not even updated_at moves
    manager.archive_agent(first[1].id)
    assert manager.sync_agents(specs)[1].archived_at is None


def test_sync_can_archive_agents_the_config_dropped(manager):
    manager.sync_agents([AgentSpec("Coder"), AgentSpec("Reviewer")])
    kept = manager.sync_agents([AgentSpec("Coder")], archive_missing=True)
    assert [a.name for a in manager.list_agents()] == ["Coder"] == [a.name for a in kept]
    assert manager.get_agent_by_name("Reviewer").archived_at is not None
    manager.sync_agents([], archive_missing=True)
    assert manager.list_agents() == []


@pytest.mark.parametrize(
    "specs",
    [
        [AgentSpec("Coder"), AgentSpec("CODER")],
        [AgentSpec("Fine"), {"name": "Coder", "colour": "red"}],
        [AgentSpec("Fine"), {"model": "m"}],
        [AgentSpec("Fine"), AgentSpec("Bad", config={"x": {1, 2}})],
        [AgentSpec("Fine"), AgentSpec("")],
        [AgentSpec("Fine"), "Coder"],
        [AgentSpec("Fine"), AgentSpec("Bad", soul=5)],  # type: ignore[arg-type]  # bad input
    ],
)
def test_sync_bad_specs_write_nothing(manager, specs):
    manager.create_agent("Existing", model="keep")
    before = agent_rows(manager)
    with pytest.raises(ValueError):
        manager.sync_agents(specs)
    assert agent_rows(manager) == before
