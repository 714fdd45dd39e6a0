"""Attaching files and images in the app (issue 21), keys pressed through Pilot.

The model is the scripted server on 127.0.0.1 (`tests/llm_server.py`) called through
LiteLLM's real client: what a test asserts about a request is what reached the socket.
"""

from __future__ import annotations

import base64

from textual import events

from chatui.core.config import Config, ModelOptions
from chatui.tui.screens.dialogs import TextPrompt
from store import Attachments
from widgets import AttachmentTray, ChatInput, ChatNotice

from .app_helpers import make_app, notices, wait_until

SIZE = (140, 40)
MODEL = "openai/test-model"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


def vision_config(llm_server, **kwargs) -> Config:
    return Config(
        model=MODEL,
        api_base=llm_server.base_url,
        max_retries=1,
        models={MODEL: ModelOptions(vision=True)},
        **kwargs,
    )


def chat_notices(app) -> str:
    return "\n".join(n.plain for n in app.main.query(ChatNotice))


def tray(app) -> tuple[str, ...]:
    return app.main.query_one(AttachmentTray).labels


async def attach_with_ctrl_o(pilot, path) -> None:
    await pilot.press("ctrl+o")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, TextPrompt))
    await pilot.press(*str(path), "enter")
    await wait_until(pilot, lambda: not isinstance(pilot.app.screen, TextPrompt))


async def paste(pilot, text: str) -> None:
    # What the driver posts for a paste (or a file dropped on the terminal): the app
    # forwards it to the focused widget.
    pilot.app.post_message(events.Paste(text))
    await pilot.pause()


async def test_an_image_and_a_text_file_reach_the_request(store, llm_server, fake_key, tmp_path):
    photo = tmp_path / "cat.png"
    photo.write_bytes(PNG)
    text_file = tmp_path / "my notes.md"
    text_file.write_text("# Shopping\n- oat milk\n- 3 lemons\n")
    llm_server.text("A cat, and a shopping list.")
    app = make_app(store, vision_config(llm_server))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await attach_with_ctrl_o(pilot, photo)
        await paste(pilot, f"'{text_file}'")  # a dropped file: its path, quoted
        assert tray(app)[0] == "cat.png · image · 2.0 KB"
        assert tray(app)[1] == "my notes.md · 33 B · 11 tokens"
        assert app.main.query_one(ChatInput).text == ""  # the path was not typed
        await pilot.press(*"What is in these?", "enter")
        await wait_until(pilot, lambda: len(llm_server.requests) == 1 and not app.main.generating)
        content = llm_server.messages(0)[-1]["content"]
        assert content[0] == {"type": "text", "text": "What is in these?"}
        url = content[1]["image_url"]["url"]
        assert url == "data:image/png;base64," + base64.b64encode(PNG).decode()
        assert content[2]["type"] == "text"
        assert (
            content[2]["text"]
            == "[Attached file my notes.md]\n# Shopping\n- oat milk\n- 3 lemons\n"
        )
        question = app.main.snapshot.history[0]
        assert [p["name"] for p in question.attachments] == ["cat.png", "my notes.md"]
        assert tray(app) == ()  # sent: the tray is empty again
        view = app.main.chat_view.view_for(question.id)
        shown = str(view.query_one(".message--attachments").render())
        assert "cat.png · image/png · 2.0 KB" in shown
        assert Attachments(store).totals() == (2, len(PNG) + text_file.stat().st_size)


async def test_an_image_alone_is_sent_and_names_the_chat(store, llm_server, fake_key, tmp_path):
    photo = tmp_path / "holiday.png"
    photo.write_bytes(PNG)
    llm_server.text("A beach.")
    app = make_app(store, vision_config(llm_server))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await attach_with_ctrl_o(pilot, photo)
        await pilot.press("enter")  # nothing typed: the attachment is the message
        await wait_until(pilot, lambda: len(llm_server.requests) == 1 and not app.main.generating)
        assert [p["type"] for p in llm_server.messages(0)[-1]["content"]] == ["image_url"]
        assert app.main.chat.info.name == "holiday.png"


async def test_unsupported_and_oversized_files_are_refused(store, llm_server, fake_key, tmp_path):
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(b"%PDF-1.7\n" + b"\x00" * 100)
    big = tmp_path / "big.txt"
    big.write_text("x" * 4000)
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"GIF89a not a png")
    app = make_app(store, vision_config(llm_server, max_attachment_mb=0.001))  # ~1 KiB
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        # Each refusal checked as it comes (a toast expires: a loaded machine is slow).
        for path, words in (
            (pdf, ("report.pdf is application/pdf", "cannot be attached")),
            (
                big,
                ("big.txt is 3.9 KB", "the limit for an attachment is 1.0 KB", "max_attachment_mb"),
            ),
            (broken, ("broken.png: not a PNG image",)),
            (tmp_path / "missing.txt", ("missing.txt: no such file",)),
        ):
            await attach_with_ctrl_o(pilot, path)
            await wait_until(pilot, lambda words=words: all(w in notices(app) for w in words))
        assert tray(app) == () and Attachments(store).totals() == (0, 0)
        assert llm_server.requests == []


async def test_an_image_for_a_model_that_cannot_see_is_refused_and_kept(
    store, llm_server, fake_key, tmp_path
):
    photo = tmp_path / "cat.png"
    photo.write_bytes(PNG)
    config = Config(model=MODEL, api_base=llm_server.base_url, max_retries=1)  # vision unknown
    app = make_app(store, config)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await attach_with_ctrl_o(pilot, photo)
        await pilot.press(*"Who is this?", "enter")
        await wait_until(pilot, lambda: "cannot see images" in chat_notices(app))
        notice = chat_notices(app)
        assert "cat.png is an image" in notice and f'[models."{MODEL}"]' in notice
        assert notice.count("vision = true") == 1, notice  # said once, not in both parts
        assert llm_server.requests == []
        assert app.main.query_one(ChatInput).text == "Who is this?"  # nothing lost
        assert tray(app) == ("cat.png · image · 2.0 KB",)


async def test_pasting_text_types_it_and_backspace_removes_the_last_attachment(
    store, llm_server, fake_key, tmp_path, monkeypatch
):
    (tmp_path / "notes").write_text("a file named like a word")
    (tmp_path / "a b.txt").write_text("spaces in the name")
    monkeypatch.chdir(tmp_path)
    app = make_app(store, vision_config(llm_server))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        box = app.main.query_one(ChatInput)
        await paste(pilot, "notes")  # a word is typed, even with a file of that name here
        await wait_until(pilot, lambda: box.text == "notes")
        box.clear()
        await paste(pilot, str(tmp_path / "a\\ b.txt"))  # a shell-escaped path
        await paste(pilot, f"file://{tmp_path / 'notes'}")
        assert [label.split(" · ")[0] for label in tray(app)] == ["a b.txt", "notes"]
        await paste(pilot, str(tmp_path))  # a folder is no file: typed as it is
        await wait_until(pilot, lambda: box.text == str(tmp_path))
        box.clear()
        await pilot.press("backspace")
        assert [label.split(" · ")[0] for label in tray(app)] == ["a b.txt"]
        await pilot.press(*"x", "backspace", "backspace")  # a character first, then the file
        assert tray(app) == () and box.text == ""


# -- the engine: edits and branches keep references, old content is sent again -----


async def test_an_edited_question_keeps_its_attachments_and_history_resends_them(
    store, llm_server, fake_key
):
    from chatui.core.engine import ChatEngine
    from chatui.core.events import MessageStored
    from chatui.core.wiring import build_manager

    config = vision_config(llm_server)
    manager = build_manager(store, config)
    engine = ChatEngine(manager, config, flush_interval=0.0)
    sid = manager.create("pictures").id
    photo = Attachments(store).put("cat.png", "image/png", PNG)
    llm_server.text("A cat.")
    llm_server.text("Still a cat.")
    llm_server.text("Yes, the same cat.")
    events = [e async for e in engine.send(sid, "What is it?", attachments=[photo])]
    question = next(e.message for e in events if isinstance(e, MessageStored))
    events = [e async for e in engine.edit(sid, question.id, "And now?")]
    edited = next(e.message for e in events if isinstance(e, MessageStored))
    assert edited.parent_id == question.parent_id and edited.attachments == [photo]
    assert llm_server.messages(1)[-1]["content"][1]["type"] == "image_url"
    # A later turn on that branch sends the image of the earlier question again.
    [e async for e in engine.send(sid, "Sure?")]
    earlier = llm_server.messages(2)[-3]
    assert earlier["role"] == "user" and earlier["content"][1]["image_url"]["url"].endswith(
        base64.b64encode(PNG).decode()
    )
    assert Attachments(store).totals() == (1, len(PNG))  # one content for three requests
