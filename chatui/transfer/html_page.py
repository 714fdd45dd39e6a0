"""One chat as one self-contained HTML page: every branch, the tree as a graph.

For showing a chat to someone who does not run chatui. The page is one file
with no network at all: its style and script are inline, allowed by hash in a
Content-Security-Policy that forbids everything else (no fetch, no remote
image, no other script), so a message that holds HTML or a link to a tracker
can do nothing when the page is opened.

- Every message of every branch is in the page, rendered from Markdown by
  markdown-it (raw HTML in a message is shown as text, `javascript:` links are
  dropped, an image stays a link), code highlighted by Pygments. Without the script the active
  branch shows (the rest is `hidden`), so the page reads even where scripts
  are off.
- The tree is an SVG graph (a row per message, branches side by side, as
  `git log --graph` draws them, each message's first words beside it). Clicking a node (or enter on it) shows the branch through that
  message, down to its newest reply, and marks the path in the graph; the
  ‹ › buttons of a message that has siblings step between them.
- Tool calls, their results, reasoning and the memory writes a reply made are
  collapsed (`<details>`), one click away.
- Attached files are in the page too: an image as a `data:` URI (the one kind
  of image the policy allows), a text file's words (open when short, collapsed
  when long); other types, and content the store no longer holds, are named.
- Control characters in messages are shown as escapes, as in the other exports.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from typing import Any

from store import Message, SessionInfo, Store, StoredWrite, format_size, session_writes

from .markdown import ROLE_NAMES, state_note
from .text import neutralise, one_line
from .tree import PathView, path_view

__all__ = ["html_page"]

STEP_X, STEP_Y, PAD, RADIUS = 16, 22, 12, 6
"""The graph's grid (px): a column per branch, a row per message."""
LABEL_CHARS = 28
"""Characters of a message's words beside its node."""


# -- Markdown and code ----------------------------------------------------------------


def _highlight(code: str, lang: str, _attrs: Any) -> str:
    """A fenced block's code as highlighted HTML (plain, escaped, for no or an unknown
    language: markdown-it escapes it when this returns "")."""
    if not lang:
        return ""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(lang.split()[0])
    except ClassNotFound:
        return ""
    return str(highlight(code, lexer, HtmlFormatter(nowrap=True)))


@cache
def _markdown() -> Callable[[str], str]:
    from markdown_it import MarkdownIt

    # html=False: a message's own HTML is text here, never markup.
    md = MarkdownIt("commonmark", {"html": False, "highlight": _highlight})
    md.enable(["table", "strikethrough"])
    # An image in a message would be a request to its server when the page opens (the
    # policy refuses it anyway): it stays a link, to follow by choice.
    md.disable("image")
    return md.render


def _code_css() -> str:
    from pygments.formatters import HtmlFormatter

    light = HtmlFormatter(style="friendly").get_style_defs(".body pre")
    dark = HtmlFormatter(style="monokai").get_style_defs(".body pre")
    return f"{light}\n@media (prefers-color-scheme: dark) {{\n{dark}\n}}"


def _esc(text: Any) -> str:
    return html.escape(neutralise(str(text)), quote=True)


def _when(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if value else ""


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2)


# -- messages ---------------------------------------------------------------------------


def _details(kind: str, summary: str, body_html: str) -> str:
    return (
        f'<details class="{kind}"><summary>{summary}</summary>'
        f'<div class="detail">{body_html}</div></details>'
    )


TEXT_OPEN_LINES = 20
"""A text file this short is shown open; a longer one is one click away."""


def _file(name: str, mime: str, data: bytes | None, size: int = 0) -> str:
    """An attached file in the page itself (nothing fetched when it opens): an image as
    a `data:` URI, a text file's words (collapsible), anything else named, as is content
    the store no longer holds (`data` None)."""
    from store import attachment_kind, data_url

    kind = attachment_kind(mime) if data is not None else "other"
    size = len(data) if data is not None else size
    label = f"{_esc(one_line(name, 80))} · {_esc(mime)} · {format_size(size)}"
    if kind == "image":
        assert data is not None
        return (
            f'<figure class="file"><img src="{data_url(mime, data)}" alt="{_esc(name)}">'
            f"<figcaption>{label}</figcaption></figure>"
        )
    if kind == "text":
        assert data is not None
        text = data.decode("utf-8", errors="replace")
        opened = " open" if text.count("\n") < TEXT_OPEN_LINES else ""
        return (
            f'<details class="file"{opened}><summary>File {label}</summary>'
            f'<div class="detail"><pre>{_esc(text)}</pre></div></details>'
        )
    missing = " · its content is not in the store" if data is None else ""
    return f'<p class="attachment">attachment: {label}{missing}</p>'


def _attachment(part: dict[str, Any], load: Callable[[dict[str, Any]], bytes]) -> str:
    """A chatui attachment (content stored once, by hash)."""
    from store import StoreError

    name, mime = str(part.get("name") or "attachment"), str(part.get("mime") or "")
    try:
        data: bytes | None = load(part)
    except StoreError:  # pruned, or a part copied from another store
        data = None
    return _file(name, mime, data, int(part.get("size") or 0))


def _imported_file(part: dict[str, Any]) -> str:
    """A `file` part an import kept (Pi, llm: base64 `data`; ChatGPT: only a pointer)."""
    from store import guess_mime

    name = str(part.get("filename") or "")
    mime = str(part.get("media_type") or "")
    encoded = part.get("data")
    if isinstance(encoded, str) and encoded:
        try:
            data = base64.b64decode(encoded, validate=True)
        except ValueError:
            data = None
        if data is not None:
            if not mime or mime.endswith("/*") or mime == "application/octet-stream":
                mime = guess_mime(name, data)  # "image/*": the bytes say which
            return _file(name or mime, mime, data)
    return f'<p class="attachment">file: {_esc(name or mime)}</p>'


def _parts(message: Message, load: Callable[[dict[str, Any]], bytes]) -> str:
    render = _markdown()
    out = []
    for part in message.parts:
        kind = part.get("type")
        if kind == "text":
            out.append(render(neutralise(str(part.get("text", "")))))
        elif kind == "reasoning":
            out.append(
                _details("reasoning", "Reasoning", render(neutralise(str(part.get("text", "")))))
            )
        elif kind == "tool-call":
            name = _esc(one_line(str(part.get("tool_name") or ""), 60))
            body = f"<pre>{_esc(_pretty(part.get('input')))}</pre>"
            out.append(_details("tool", f"Tool call <code>{name}</code>", body))
        elif kind == "tool-result":
            label = "Tool error" if part.get("is_error") else "Tool result"
            name = _esc(one_line(str(part.get("tool_name") or ""), 60))
            body = f"<pre>{_esc(_pretty(part.get('output')))}</pre>"
            out.append(_details("tool", f"{label} <code>{name}</code>", body))
        elif kind == "attachment":
            out.append(_attachment(part, load))
        elif kind == "file":
            out.append(_imported_file(part))
        else:
            out.append(f'<p class="attachment">[{_esc(one_line(str(kind), 40))} part]</p>')
    return "\n".join(out) or '<p class="empty">(empty)</p>'


def _writes(writes: list[StoredWrite]) -> str:
    out = []
    for w in writes:
        scope = "shared" if w.namespace.startswith("global") else "this chat"
        reverted = " · reverted" if w.reverted else ""
        summary = (
            f"Memory write: <code>{_esc(w.label)}</code> "
            f'<span class="muted">({scope}, by {_esc(w.origin)}{reverted})</span>'
        )
        out.append(_details("memory", summary, f"<pre>{_esc(w.content)}</pre>"))
    return "\n".join(out)


def _article(
    message: Message,
    view: PathView,
    shown: bool,
    writes: list[StoredWrite],
    load: Callable[[dict[str, Any]], bytes],
) -> str:
    role = message.role if message.role in ROLE_NAMES else "other"
    siblings = view.children.get(message.parent_id, [])
    head = [f'<span class="role">{_esc(ROLE_NAMES.get(message.role, message.role))}</span>']
    model = message.metadata.get("model") if message.role == "assistant" else None
    if model:
        head.append(f'<span class="muted">{_esc(one_line(str(model), 60))}</span>')
    head.append(f'<time class="muted">{_when(message.created_at)}</time>')
    if len(siblings) > 1:
        i = siblings.index(message.id)
        prev = siblings[i - 1] if i > 0 else ""
        after = siblings[i + 1] if i + 1 < len(siblings) else ""
        head.append(
            '<span class="fork">'
            f'<button class="sib" type="button" data-to="{_esc(prev)}"'
            f'{"" if prev else " disabled"} aria-label="previous branch">‹</button>'
            f"{i + 1}/{len(siblings)}"
            f'<button class="sib" type="button" data-to="{_esc(after)}"'
            f'{"" if after else " disabled"} aria-label="next branch">›</button></span>'
        )
    note = state_note(message)
    if note:
        head.append(f'<span class="state">{_esc(note[1])}</span>')
    if message.is_compaction:
        head.append('<span class="state">summary</span>')
    return (
        f'<article class="msg {role}" id="m-{_esc(message.id)}" data-id="{_esc(message.id)}" '
        f'data-parent="{_esc(message.parent_id or "")}"{"" if shown else " hidden"}>'
        f"<header>{' '.join(head)}</header>"
        f'<div class="body">{_parts(message, load)}{_writes(writes)}</div></article>'
    )


# -- the graph --------------------------------------------------------------------------


def _kinds(message: Message) -> str:
    """Words for a message without text: the tools it called or answered."""
    names = []
    for part in message.parts:
        kind = part.get("type")
        if kind == "tool-call":
            names.append(f"→ {part.get('tool_name')}")
        elif kind == "tool-result":
            names.append(f"← {part.get('tool_name')}")
        else:
            names.append(f"[{kind}]")
    return ", ".join(names)


def _layout(view: PathView) -> tuple[dict[str, tuple[int, int]], int, int]:
    """(message id → (column, row), columns, rows), as `git log --graph` draws: a row per
    message in depth-first order (so a message's words sit on its own line), its first
    child below it in its column, every other child in a new column to the right."""
    place: dict[str, tuple[int, int]] = {}
    column = -1
    # (message, column to take: None = a new one); children pushed in reverse so the
    # first child comes next and keeps the column.
    stack: list[tuple[str, int | None]] = [
        (root, None) for root in reversed(view.children.get(None, []))
    ]
    while stack:
        node, col = stack.pop()
        if col is None:
            column += 1
            col = column
        place[node] = (col, len(place))
        kids = view.children.get(node, [])
        for i, kid in reversed(list(enumerate(kids))):
            stack.append((kid, col if i == 0 else None))
    return place, column + 1, len(place)


def _newest_leaves(view: PathView) -> dict[str, str]:
    """Message id → the newest leaf under it (where a click on it leads, as in the app)."""
    order = {m.id: i for i, m in enumerate(view.tree)}
    best: dict[str, str] = {}
    for m in reversed(view.tree):  # children come after parents in the tree's order
        kids = view.children.get(m.id, [])
        if not kids:
            best[m.id] = m.id
        else:
            best[m.id] = max((best[k] for k in kids), key=order.__getitem__)
    return best


def _graph(view: PathView, on_path: set[str]) -> str:
    place, columns, rows = _layout(view)
    leaves = _newest_leaves(view)

    def xy(mid: str) -> tuple[int, int]:
        col, row = place[mid]
        return PAD + col * STEP_X, PAD + row * STEP_Y

    text_x = PAD + columns * STEP_X  # each node's words, right of every branch's column
    width = text_x + LABEL_CHARS * 7 + PAD
    height = PAD * 2 + max(rows - 1, 0) * STEP_Y
    edges, nodes = [], []
    for m in view.tree:
        x, y = xy(m.id)
        if m.parent_id in place:
            px, py = xy(m.parent_id)
            on = " on" if m.id in on_path else ""
            # Down its column; a branch bends right under its parent, then runs down its
            # own column, which holds nothing above it.
            shape = f"L{x} {y}" if x == px else f"Q{x} {py} {x} {py + STEP_Y} L{x} {y}"
            edges.append(f'<path class="edge{on}" data-to="{_esc(m.id)}" d="M{px} {py} {shape}"/>')
        role = m.role if m.role in ROLE_NAMES else "other"
        label = f"{ROLE_NAMES.get(m.role, m.role)}: {one_line(m.text or '', 80)}"
        on = " on" if m.id in on_path else ""
        snippet = one_line(m.text or _kinds(m), LABEL_CHARS)
        nodes.append(
            f'<g class="node {role}{on}" data-id="{_esc(m.id)}" data-leaf="{_esc(leaves[m.id])}" '
            f'tabindex="0" role="button" aria-label="{_esc(label)}">'
            f'<circle cx="{x}" cy="{y}" r="{RADIUS}"/>'
            f'<text x="{text_x}" y="{y + 4}">{_esc(snippet)}</text><title>{_esc(label)}</title></g>'
        )
    return (
        f'<svg class="graph" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">'
        f"{''.join(edges)}{''.join(nodes)}</svg>"
    )


# -- the page ---------------------------------------------------------------------------

_CSS = """
:root { color-scheme: light dark; --fg: #1d1d1f; --bg: #fbfbfa; --muted: #6b6b70;
  --line: #d8d8dc; --card: #ffffff; --user: #2f6fde; --assistant: #1f9d55; --tool: #b7791f;
  --other: #8a8a8f; --accent: #d6409f; }
@media (prefers-color-scheme: dark) { :root { --fg: #e8e8ea; --bg: #161618; --muted: #9a9aa0;
  --line: #3a3a40; --card: #1f1f23; } }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.55 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: var(--fg); background: var(--bg); }
body > header { padding: 16px 24px; border-bottom: 1px solid var(--line); }
h1 { font-size: 1.3em; margin: 0 0 4px; }
.muted, .meta { color: var(--muted); font-size: 0.9em; }
.layout { display: flex; align-items: flex-start; }
nav.tree { position: sticky; top: 0; max-height: 100vh; overflow: auto; flex: none;
  max-width: 40vw; padding: 12px; border-right: 1px solid var(--line); }
nav.tree h2 { font-size: 0.85em; text-transform: uppercase; color: var(--muted); margin: 0 0 8px; }
main { flex: 1; min-width: 0; max-width: 860px; padding: 12px 24px 48px; }
.graph .edge { fill: none; stroke: var(--line); stroke-width: 2; }
.graph .edge.on { stroke: var(--accent); }
.graph .node { cursor: pointer; outline: none; }
.graph .node circle { fill: var(--card); stroke: var(--other); stroke-width: 2; }
.graph .node.user circle { stroke: var(--user); }
.graph .node.assistant circle { stroke: var(--assistant); }
.graph .node.tool circle { stroke: var(--tool); }
.graph .node.on circle { fill: var(--accent); stroke: var(--accent); }
.graph .node.picked circle, .graph .node:focus circle { stroke: var(--fg); stroke-width: 3; }
.graph text { font-size: 12px; fill: var(--muted); }
.graph .node.on text { fill: var(--fg); }
.graph .node.picked text { font-weight: 600; }
article.msg { background: var(--card); border: 1px solid var(--line);
  border-left: 4px solid var(--other); border-radius: 6px; margin: 12px 0; padding: 8px 14px; }
article.user { border-left-color: var(--user); }
article.assistant { border-left-color: var(--assistant); }
article.tool { border-left-color: var(--tool); }
article.picked { outline: 2px solid var(--accent); }
article > header { display: flex; gap: 10px; align-items: baseline; flex-wrap: wrap; }
.role { font-weight: 600; }
.state { color: var(--accent); font-size: 0.9em; }
.fork { margin-left: auto; font-size: 0.9em; color: var(--muted); }
.fork button { border: 1px solid var(--line); background: transparent; color: inherit;
  border-radius: 4px; margin: 0 4px; cursor: pointer; }
.fork button:disabled { opacity: 0.3; cursor: default; }
.body pre { overflow-x: auto; padding: 8px 10px; border-radius: 4px;
  background: rgba(127, 127, 127, 0.1); }
.body code { font: 0.9em ui-monospace, "SFMono-Regular", Menlo, monospace; }
.body table { border-collapse: collapse; }
.body th, .body td { border: 1px solid var(--line); padding: 2px 8px; }
details { margin: 6px 0; border: 1px solid var(--line); border-radius: 4px; padding: 2px 8px; }
details > summary { cursor: pointer; color: var(--muted); }
details.memory > summary { color: var(--accent); }
.attachment, .empty { color: var(--muted); font-style: italic; }
figure.file { margin: 8px 0; }
figure.file img { max-width: 100%; max-height: 70vh; border: 1px solid var(--line);
  border-radius: 4px; }
figure.file figcaption, details.file > summary { color: var(--muted); font-size: 0.9em; }
section.compactions { margin-top: 24px; }
"""

_SCRIPT = """
(function () {
  "use strict";
  var articles = new Map(), nodes = new Map(), edges = new Map();
  document.querySelectorAll("article.msg").forEach(function (a) { articles.set(a.dataset.id, a); });
  document.querySelectorAll(".graph .node").forEach(function (n) { nodes.set(n.dataset.id, n); });
  document.querySelectorAll(".graph .edge").forEach(function (e) { edges.set(e.dataset.to, e); });
  function show(id) {
    var node = nodes.get(id);
    if (!node) { return; }
    var on = new Set(), at = node.dataset.leaf;
    while (at && articles.has(at)) { on.add(at); at = articles.get(at).dataset.parent; }
    articles.forEach(function (a, key) {
      a.hidden = !on.has(key);
      a.classList.toggle("picked", key === id);
    });
    nodes.forEach(function (n, key) {
      n.classList.toggle("on", on.has(key));
      n.classList.toggle("picked", key === id);
    });
    edges.forEach(function (e, key) { e.classList.toggle("on", on.has(key)); });
    articles.get(id).scrollIntoView({ block: "nearest" });
    try { history.replaceState(null, "", "#m-" + id); } catch (err) { /* file: pages */ }
  }
  nodes.forEach(function (n, id) {
    n.addEventListener("click", function () { show(id); });
    n.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); show(id); }
    });
  });
  document.querySelectorAll("button.sib").forEach(function (b) {
    b.addEventListener("click", function () { show(b.dataset.to); });
  });
  var wanted = decodeURIComponent(location.hash.slice(3));
  if (location.hash.indexOf("#m-") === 0 && nodes.has(wanted)) { show(wanted); }
})();
"""


def _loader(store: Store) -> Callable[[dict[str, Any]], bytes]:
    """An attachment part → its content; each content read once (branches and forks
    share parts, and a page shows every branch)."""
    from store import Attachments

    attachments = Attachments(store)
    by_hash = cache(attachments.get)
    return lambda part: by_hash(str(part.get("hash") or ""))


def _hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def html_page(store: Store, info: SessionInfo, through: str | None = None) -> str:
    """The chat as one HTML page, showing the branch through `through` (default: the
    active one) until another is picked in the graph.

    Raises:
        KeyError: `through` is not a message of this chat.
    """
    view = path_view(store, info, through)
    on_path = {m.id for m in view.path}
    load = _loader(store)
    by_message: dict[str, list[StoredWrite]] = {}
    for write in session_writes(store, info.id):
        if write.message_id:
            by_message.setdefault(write.message_id, []).append(write)
    # Depth-first order: any branch's messages come in conversation order, so the
    # script shows a branch by hiding the others, never by moving anything.
    order: list[Message] = []
    by_id = {m.id: m for m in view.tree}
    stack = list(reversed(view.children.get(None, [])))
    while stack:
        node = stack.pop()
        order.append(by_id[node])
        stack.extend(reversed(view.children.get(node, [])))
    articles = "\n".join(
        _article(m, view, m.id in on_path, by_message.get(m.id, []), load) for m in order
    )
    css = _CSS + _code_css()
    leaves = sum(1 for m in view.tree if not view.children.get(m.id))
    meta = [
        f"{view.total} message{'s' if view.total != 1 else ''}",
        f"{leaves} branch{'es' if leaves != 1 else ''}",
        f"created {_when(info.created_at)}",
    ]
    if info.model:
        meta.insert(0, f"model {_esc(one_line(info.model, 60))}")
    summaries = ""
    if view.compactions:
        items = "".join(
            _details(
                "summary",
                f"Summary of messages {_esc(c.from_message_id)} … {_esc(c.to_message_id)}",
                _markdown()(neutralise(c.summary)),
            )
            for c in view.compactions
        )
        summaries = f'<section class="compactions"><h2>Compaction summaries</h2>{items}</section>'
    policy = (
        f"default-src 'none'; style-src {_hash(css)}; script-src {_hash(_SCRIPT)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    title = _esc(one_line(info.name) or "Untitled")
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="chatui">\n'
        f"<title>{title}</title>\n<style>{css}</style></head>\n<body>\n"
        f'<header><h1>{title}</h1><p class="meta">{" · ".join(meta)} · '
        "click a message in the tree to read its branch</p></header>\n"
        '<div class="layout"><nav class="tree" aria-label="Conversation tree">'
        f"<h2>Tree</h2>{_graph(view, on_path)}</nav>\n"
        f'<main id="chat">\n{articles}\n{summaries}</main></div>\n'
        f"<script>{_SCRIPT}</script>\n</body></html>\n"
    )
