"""Markdown export: one branch, with a note of every branch it does not show."""

from __future__ import annotations

import re

from chatui.transfer.markdown import render_markdown
from chatui.transfer.tree import path_view


def text(mid, role, body):
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": body}]}


async def branching_chat(manager):
    info = manager.create("Lisbon \x1b[2J trip", model="gpt-4o")
    await manager.append(info.id, text("q1", "user", "Flights to Lisbon?"))
    await manager.append(info.id, text("a1", "assistant", "TAP flies direct."))
    await manager.append(
        info.id,
        {
            "id": "a2",
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "text": "Budget matters."},
                {"type": "text", "text": "Ryanair is cheaper.\x1b]52;c;cHduZWQ=\x07"},
                {
                    "type": "tool-call",
                    "tool_call_id": "c1",
                    "tool_name": "set_context",
                    "input": {"label": "memory", "content": "likes cheap flights"},
                },
            ],
        },
        parent_id="q1",
    )
    await manager.append(
        info.id,
        {
            "id": "t1",
            "role": "tool",
            "parts": [
                {
                    "type": "tool-result",
                    "tool_call_id": "c1",
                    "tool_name": "set_context",
                    "output": "Saved.",
                }
            ],
        },
    )
    await manager.append(info.id, text("q2", "user", "Thanks"), parent_id="a1")
    return manager.get(info.id)


async def test_active_path_with_branch_note(manager):
    info = await branching_chat(manager)
    md = render_markdown(path_view(manager.store, info))
    assert md.startswith("# Lisbon \\x1b[2J trip\n")
    assert "TAP flies direct." in md and "Thanks" in md
    assert "Ryanair" not in md  # the other branch is not shown…
    assert "**Other branches:** 1 not shown, forking at message 2 (‹1/2›: 1 other)" in md
    assert "## 2 · Assistant ‹1/2›" in md  # …and where it forks is marked
    assert "3 shown of 5" in md
    assert "\x1b" not in md


async def test_the_other_branch_on_request(manager):
    info = await branching_chat(manager)
    md = render_markdown(path_view(manager.store, info, "a2"), through="a2")
    assert "the branch through `a2`" in md
    assert "Ryanair is cheaper.\\x1b]52;c;cHduZWQ=\\x07" in md
    assert "<details><summary>Reasoning</summary>" in md
    assert (
        '**Tool call** `set_context`\n\n```json\n{\n  "label": "memory",\n'
        '  "content": "likes cheap flights"\n}\n```' in md
    )
    assert "**Tool result** `set_context`\n\n```text\nSaved.\n```" in md
    assert "TAP" not in md


async def test_active_leaf_from_metadata_wins(manager):
    info = await branching_chat(manager)
    manager.update_metadata(info.id, active_leaf="t1")
    view = path_view(manager.store, manager.get(info.id))
    assert [m.id for m in view.path] == ["q1", "a2", "t1"]
    assert [(f.position, f.others) for f in view.forks] == [(2, ("a1",))]
    manager.update_metadata(info.id, active_leaf="gone")  # a stale hint is ignored
    assert path_view(manager.store, manager.get(info.id)).leaf == "q2"


async def test_empty_chat(manager):
    info = manager.create("Nothing yet")
    md = render_markdown(path_view(manager.store, info))
    assert "0 shown of 0" in md and "Other branches" not in md


async def test_message_ids_only_when_asked(manager):
    info = await branching_chat(manager)
    view = path_view(manager.store, info)
    assert "`q1`" not in render_markdown(view)
    shown = render_markdown(view, show_ids=True)
    assert "## 1 · User · " in shown and "· `q1`" in shown
    assert "*Other branches here: `a2`*" in shown


def test_code_and_tool_calls_are_whole_fenced_blocks():
    """Code-interpreter code is kept whole in a fence (not one line cut at 300)."""
    from chatui.transfer.markdown import fenced

    code = "\n".join(f"print({i})  # " + "x" * 50 for i in range(40))
    block = fenced(code, "python")
    assert block.startswith("```python\n") and code in block and block.endswith("\n```")
    tricky = fenced("a ``` inside\n````", "")
    assert tricky.startswith("`````\n") and tricky.endswith("\n`````")
    assert fenced({"q": 1}) == '```json\n{\n  "q": 1\n}\n```'


def reply(mid, body, **metadata):
    return {
        "id": mid,
        "role": "assistant",
        "parts": [{"type": "text", "text": body}] if body else [],
        "metadata": {"model": "gpt-4o", **metadata},
    }


async def replies_in_every_state(manager, session_id: str = "states0001"):
    """One chat whose path holds a reply in each state, as the engine stores them."""
    info = manager.create("Every state", model="gpt-4o", id=session_id)
    messages = [
        text("u1", "user", "One"),
        reply("done", "Finished answer.", status="complete"),
        text("u2", "user", "Two"),
        reply("stopped", "Half an ans", status="cancelled", incomplete=True),
        text("u3", "user", "Three"),
        reply("stopped-empty", "", status="cancelled", incomplete=True),
        text("u4", "user", "Four"),
        reply("failed", "", status="error", incomplete=True, error="rate limited (429)"),
        text("u5", "user", "Five"),
        reply("cut", "Cut off mid", status="streaming", incomplete=True),
    ]
    for message in messages:
        await manager.append(info.id, message)
    return manager.get(info.id)


async def test_every_reply_state_is_named_in_the_export(manager):
    """The export uses the chat pane's words and shows cancelled replies, never as finished."""
    info = await replies_in_every_state(manager)
    md = render_markdown(path_view(manager.store, info), show_ids=True)
    heads = {line.rsplit("`", 2)[-2]: line for line in md.splitlines() if line.startswith("## ")}
    assert re.match(r"## 2 · Assistant · \d{4}-", heads["done"])  # complete: no word
    assert heads["stopped"].startswith("## 4 · Assistant · cancelled · ")
    assert heads["stopped-empty"].startswith("## 6 · Assistant · cancelled · ")
    assert heads["failed"].startswith("## 8 · Assistant · error · ")
    assert heads["cut"].startswith("## 10 · Assistant · interrupted · ")
    assert "Half an ans" in md  # what arrived is kept and shown
    assert "> *cancelled — partial reply*" in md
    assert "> *cancelled before any text*" in md
    assert "> *error — rate limited (429)*" in md
    assert "> *incomplete — the reply was interrupted*" in md
    assert md.count("> *") == 4  # the complete reply has no note


async def test_a_reply_being_written_is_writing_not_interrupted(manager):
    """Only the process writing it knows: the app passes its live ids."""
    info = await replies_in_every_state(manager)
    view = path_view(manager.store, info)
    md = render_markdown(view, live={"cut"})
    assert "## 10 · Assistant · writing · " in md and "> *writing…*" in md
    assert "interrupted" not in md
    # a live id names only the reply being written: a finished one stays as it is
    assert "## 4 · Assistant · cancelled" in render_markdown(view, live={"stopped"})


async def test_export_from_the_app_passes_live_ids(manager, tmp_path):
    from chatui.transfer.files import export_chat

    info = await replies_in_every_state(manager)
    target = export_chat(manager, info.id, tmp_path / "a.md", "md", None, {"cut": "Cut off mid"})
    assert "Assistant · writing · " in target.read_text()
    plain = export_chat(manager, info.id, tmp_path / "b.md", "md").read_text()
    assert "Assistant · interrupted" in plain


async def test_attachments_are_named_not_inlined(manager):
    from store import Attachments

    info = manager.create("Pictures")
    photo = Attachments(manager.store).put(
        "cat \x1b[2J.png", "image/png", b"\x89PNG\r\n\x1a\n" + b"0" * 2040
    )
    await manager.append(
        info.id, {"id": "q1", "role": "user", "parts": [{"type": "text", "text": "Who?"}, photo]}
    )
    md = render_markdown(path_view(manager.store, manager.get(info.id)))
    assert "*[attachment: cat .png · image/png · 2.0 KB]*" in md  # escapes dropped at put
    assert "\x1b" not in md and "iVBOR" not in md  # named, the content never inlined


def test_a_chat_made_in_the_app_is_not_imported_from_chatui(manager):
    """Issue 20: `chatui show` and the Markdown export said "Imported from: chatui" for
    chats made in the app; only an imported chat names where it came from."""
    made = manager.create("Made here", source="chatui")  # as the app creates its chats
    assert "Imported from" not in render_markdown(path_view(manager.store, made))
    imported = manager.create("From ChatGPT", source="chatgpt:abc123")
    assert "- **Imported from:** chatgpt:abc123" in render_markdown(
        path_view(manager.store, imported)
    )


async def test_a_reply_another_live_process_writes_is_writing_in_chatui_show(manager):
    """`chatui show` runs in a process of its own: a reply the app is streaming carries
    its writer (host, pid), so it reads as being written, not interrupted; once that
    process is gone it is interrupted."""
    import os
    import subprocess
    import sys

    from store import writer_mark

    info = manager.create("Live elsewhere")
    await manager.append(info.id, text("q", "user", "Hi"))
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        mark = {**writer_mark(), "pid": writer.pid}
        live = text("a", "assistant", "Half of")
        live["metadata"] = {"status": "streaming", "incomplete": True, "writer": mark}
        await manager.append(info.id, live, "q")
        md = render_markdown(path_view(manager.store, manager.get(info.id)))
        assert "> *writing… in another window*" in md and "interrupted" not in md
    finally:
        writer.kill()
        writer.wait()
    md = render_markdown(path_view(manager.store, manager.get(info.id)))
    assert "> *incomplete — the reply was interrupted*" in md
    assert os.getpid() != mark["pid"]
