"""compact_after: runs past the threshold; a failing compaction never loses a message (SPEC 4)."""

import pytest

from store import Session, StoreError, create_compact_function


def msg(mid, text, role="user"):
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": text}]}


async def test_auto_compaction_runs_over_threshold_and_keeps_originals(store):
    calls = []

    async def summarize(prompt):
        calls.append(prompt)
        return "## Topic\nx\n## Key Points\ny\n## Current State\nz\n## Open Items\nnone"

    s = (
        Session(store)
        .for_session("auto")
        .on_compaction(
            create_compact_function(
                summarize, protect_head=1, tail_token_budget=30, min_tail_messages=2
            )
        )
        .compact_after(120)
    )
    for i in range(12):
        await s.append_message(
            msg(f"m{i}", "lorem ipsum dolor sit amet " * 4, "user" if i % 2 == 0 else "assistant")
        )
    assert calls, "compaction should have run"
    assert any(m.is_compaction for m in s.get_history())
    assert len(s.get_raw_history()) == 12  # originals stay
    assert s.search("lorem")  # and stay searchable


async def test_failing_compaction_reports_and_keeps_the_message(store):
    errors = []

    async def broken(session):
        raise RuntimeError("summarizer down")

    s = (
        Session(store)
        .for_session("f")
        .on_compaction(broken)
        .compact_after(1)
        .on_compaction_error(errors.append)
    )
    stored = await s.append_message(msg("a", "do not lose me"))
    assert stored.id == "a" and s.get_message("a").text == "do not lose me"
    assert [str(e) for e in errors] == ["summarizer down"]


async def test_failing_compaction_without_handler_does_not_raise(store):
    async def broken(session):
        raise RuntimeError("down")

    s = Session(store).for_session("g").on_compaction(broken).compact_after(1)
    await s.append_message(msg("a", "still here"))
    assert s.get_message("a") is not None


async def test_async_error_handler_and_custom_counter(store):
    seen = []

    async def handler(exc):
        seen.append(type(exc).__name__)

    async def broken(session):
        raise ValueError("no")

    s = (
        Session(store)
        .for_session("h")
        .on_compaction(broken)
        .compact_after(10, token_counter=lambda msgs: 1000 * len(msgs))
        .on_compaction_error(handler)
    )
    await s.append_message(msg("a", "x"))
    assert seen == ["ValueError"]


async def test_under_threshold_does_not_compact(store):
    async def never(session):
        raise AssertionError("should not run")

    s = Session(store).for_session("u").on_compaction(never).compact_after(100_000)
    await s.append_message(msg("a", "short"))
    assert s.get_compactions() == []


async def test_compact_without_function_is_a_clear_error(store):
    with pytest.raises(StoreError, match="on_compaction"):
        await Session(store).compact()


async def test_manual_overlay_and_branch_isolation(store):
    s = Session(store).for_session("o")
    for i in range(5):
        await s.append_message(msg(f"m{i}", f"text {i}"))
    await s.append_message(msg("b2", "other branch"), "m2")
    s.add_compaction("Summary of 1-3", "m1", "m3")
    main = s.get_history("m4")
    assert [m.id for m in main][0] == "m0" and main[1].id.startswith("compaction_")
    assert main[1].text == "Summary of 1-3" and main[1].role == "assistant"
    assert [m.id for m in s.get_history("b2")] == ["m0", "m1", "m2", "b2"]
    with pytest.raises(ValueError):
        s.add_compaction("bad", "b2", "m4")
    with pytest.raises(ValueError):
        s.add_compaction("  ", "m1", "m2")
