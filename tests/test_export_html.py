"""`chatui export --format html`: one self-contained page, opened in a real browser
(Debian's chromium through playwright; see the `browser` fixture in conftest).

The chat is made the way a user makes one: `chatui ask` through LiteLLM's real
client against the scripted server, with a memory write, a tool round and two
branches.
"""

from __future__ import annotations

import json
import re

import pytest

from chatui.cli import main
from chatui.core import paths
from store import SessionManager, Store
from tests.llm_server import LLMServer, text, tool_calls
from tests.test_cli_ask import ask, write_config

HOSTILE = "<script>alert(1)</script> [click](javascript:alert(2)) ![x](http://tracker.test/p.png)"


@pytest.fixture
def chat(capsys, monkeypatch):
    """A chat of two branches: q1 (memory write, tool round, a reply with code) then
    q2 → a2 on one branch, q3 → a3 (the newest, active) on the other."""
    server = LLMServer().start()
    write_config(server.base_url)
    server.script(
        tool_calls(("c1", "set_context", {"label": "memory", "content": "User likes trains."})),
        text(f"Here is **a plan**:\n\n```python\nprint('hi')\n```\n\n{HOSTILE}"),
        text("Trains are fine."),
        text("Buses too."),
    )
    try:
        code, out, _ = ask(capsys, monkeypatch, "--json", "plan a trip")
        assert code == 0
        first = json.loads(out)
        assert ask(capsys, monkeypatch, "-c", "by train?")[0] == 0
        at = ["--chat", first["chat_id"], "--at", first["reply_id"]]
        assert ask(capsys, monkeypatch, *at, "by bus?")[0] == 0
    finally:
        server.stop()
    with Store(paths.default_db()) as store:
        tree = SessionManager(store).get_session(first["chat_id"]).get_tree()
    ids = {m.text: m.id for m in tree if m.text}
    return first["chat_id"], ids


def export(capsys, tmp_path, chat_id: str, *extra: str):
    target = tmp_path / "chat.html"
    code = main(["export", chat_id, "--format", "html", "-o", str(target), *extra])
    capsys.readouterr()
    assert code == 0
    return target


def test_the_page_holds_every_branch_and_nothing_reaches_out(capsys, tmp_path, chat):
    chat_id, ids = chat
    page = export(capsys, tmp_path, chat_id).read_text(encoding="utf-8")
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy and "default-src 'none'" in policy.group(1)
    assert "'unsafe-inline'" not in policy.group(1)
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert 'href="javascript:' not in page
    assert not re.search(r"<(?:link|iframe|object|embed)\b", page)
    assert len(re.findall(r"<script\b", page)) == 1  # ours, inline, allowed by its hash
    for words in ("plan a trip", "Trains are fine.", "by bus?", "Buses too.", "User likes trains."):
        assert words in page
    hidden = re.findall(r'<article [^>]*data-id="([^"]+)"[^>]* hidden>', page)
    assert set(hidden) == {ids["by train?"], ids["Trains are fine."]}  # the other branch


def visible(page) -> list[str]:
    return page.eval_on_selector_all(
        "article.msg:not([hidden]) .body > p:first-child",
        "els => els.map(e => e.textContent)",
    )


def test_in_a_browser_clicking_a_branch_in_the_graph_shows_it(capsys, tmp_path, chat, browser):
    chat_id, ids = chat
    target = export(capsys, tmp_path, chat_id)
    page = browser.new_page()
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(target.as_uri())
    page.wait_for_load_state("load")
    # The active branch first: the newest one.
    assert visible(page)[-2:] == ["by bus?", "Buses too."]
    assert "by train?" not in visible(page)
    # Code is highlighted (Pygments' classes, styled): `print` is a builtin.
    builtin = page.locator("article.msg .body pre code .nb").first
    assert builtin.text_content() == "print"
    assert builtin.evaluate("e => getComputedStyle(e).color") != page.locator(
        "article.msg .body pre code"
    ).first.evaluate("e => getComputedStyle(e).color")
    # Click the other branch's question in the graph: its branch shows, to its end.
    page.click(f'.graph .node[data-id="{ids["by train?"]}"]')
    shown = visible(page)
    assert shown[0] == "plan a trip" and shown[-2:] == ["by train?", "Trains are fine."]
    assert "by bus?" not in shown
    assert page.locator(f'.graph .node[data-id="{ids["Trains are fine."]}"].on').count() == 1
    assert page.locator(f'.graph .node[data-id="{ids["Buses too."]}"].on').count() == 0
    # The sibling buttons step back to the other branch.
    page.click(f'article[data-id="{ids["by train?"]}"] button.sib:not([disabled])')
    assert visible(page)[-2:] == ["by bus?", "Buses too."]
    # Tool calls and memory writes are collapsed, one click away.
    memory = page.locator("details.memory").first
    assert memory.get_attribute("open") is None
    written = memory.locator("pre")
    assert written.text_content() == "User likes trains." and not written.is_visible()
    memory.locator("summary").click()
    assert written.is_visible()
    tool = page.locator("details.tool").first
    assert "set_context" in tool.locator("summary").text_content()
    # A message's HTML stayed text, and nothing left the page.
    assert page.evaluate("() => document.querySelectorAll('.body script, .body img').length") == 0
    assert errors == []
    assert [u for u in requests if not u.startswith("file:")] == []
    page.close()


def test_the_graph_works_from_the_keyboard_and_a_link(capsys, tmp_path, chat, browser):
    chat_id, ids = chat
    target = export(capsys, tmp_path, chat_id)
    page = browser.new_page()
    page.goto(f"{target.as_uri()}#m-{ids['Trains are fine.']}")
    assert visible(page)[-1] == "Trains are fine."  # a link to a message opens its branch
    page.focus(f'.graph .node[data-id="{ids["Buses too."]}"]')
    page.keyboard.press("Enter")
    assert visible(page)[-1] == "Buses too."
    page.close()


def test_branch_option_and_bad_input(capsys, tmp_path, chat):
    chat_id, ids = chat
    page = export(capsys, tmp_path, chat_id, "--branch", ids["by train?"][:10]).read_text()
    hidden = re.findall(r'<article [^>]*data-id="([^"]+)"[^>]* hidden>', page)
    assert set(hidden) == {ids["by bus?"], ids["Buses too."]}
    assert main(["export", chat_id, "--format", "html", "--branch", "nope"]) == 1
    assert main(["export", "--all", "--format", "html"]) == 2  # one page per chat: a folder
    assert "-o FOLDER" in capsys.readouterr().err
    folder = tmp_path / "pages"
    assert main(["export", "--all", "--format", "html", "-o", str(folder)]) == 0
    [written] = folder.iterdir()
    assert written.suffix == ".html" and (written.stat().st_mode & 0o777) == 0o600


def tiny_png(width: int = 3, height: int = 2) -> bytes:
    """A real PNG (a browser decodes it: its natural size is what the test reads)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@pytest.fixture
def attached_chat(capsys, monkeypatch, tmp_path) -> str:
    """A chat asked with an image, a short and a long text file (`chatui ask -a`; made
    before the browser starts: playwright's loop would refuse `ask`'s own)."""
    photo, notes, long = tmp_path / "red.png", tmp_path / "notes.txt", tmp_path / "log.txt"
    photo.write_bytes(tiny_png())
    notes.write_text("Platform 4, <b>not</b> 5.\nBring snacks.\n")
    long.write_text("".join(f"line {i}\n" for i in range(200)))
    server = LLMServer().start()
    write_config(server.base_url, '[models."test-model"]\nvision = true\n')
    server.script(text("A red rectangle, and your notes."))
    try:
        code, out, _ = ask(
            capsys, monkeypatch, "--json", "-a", photo, "-a", notes, "-a", long, "what is this?"
        )
        assert code == 0, _
    finally:
        server.stop()
    return str(json.loads(out)["chat_id"])


def test_attachments_are_in_the_page_itself(capsys, tmp_path, attached_chat, browser):
    """An image is inlined as a data: URI (it draws, nothing is fetched); a text file's
    words are shown, collapsible; the page stays one file."""
    target = export(capsys, tmp_path, attached_chat)
    html = target.read_text(encoding="utf-8")
    assert "data:image/png;base64," in html and "Platform 4, &lt;b&gt;not&lt;/b&gt; 5." in html
    page = browser.new_page()
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(target.as_uri())
    page.wait_for_load_state("load")
    image = page.locator("figure.file img")
    assert image.count() == 1
    # Decoded by the browser (the policy allows data: images and nothing else).
    assert image.evaluate("e => [e.complete, e.naturalWidth, e.naturalHeight]") == [True, 3, 2]
    assert "red.png" in page.locator("figure.file figcaption").text_content()
    files = page.locator("details.file")
    assert files.count() == 2
    short, longer = files.nth(0), files.nth(1)
    # A short text file is open; its markup is text. A long one is a click away.
    assert short.locator("pre").is_visible()
    assert short.locator("pre").text_content() == "Platform 4, <b>not</b> 5.\nBring snacks.\n"
    assert not longer.locator("pre").is_visible()
    longer.locator("summary").click()
    assert longer.locator("pre").is_visible() and "line 199" in longer.locator("pre").inner_text()
    assert errors == []
    assert [u for u in requests if not u.startswith(("file:", "data:"))] == []
    page.close()
