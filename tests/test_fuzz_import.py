"""Every input format, fuzzed (issue 25): any file either imports and then shows,
searches, exports and re-imports identically, or is refused in one line (exit 3) with
nothing written. Never a traceback, never a partial write.

Each example starts from a good file of its format (a chatui JSON or JSONL export, a
ChatGPT `conversations.json` or its zip, a Pi session, an llm `logs.db`) and swaps a
few of its values, anywhere in the tree, for hostile ones: JSON nested thousands deep,
integers of thousands of digits, lone surrogates, times that overflow when made UTC,
counts past 2^64, NaN, lists where objects belong, strings where numbers do. The
store's own API gets the same treatment for a message's parts, metadata and usage.

`make test` runs a bounded number of examples per format (`CHATUI_FUZZ_EXAMPLES`,
default 20); `make soak` runs 10,000 per format (`bench/soak_bench.py --fuzz`).
"""

from __future__ import annotations

import atexit
import copy
import functools
import io
import json
import os
import shutil
import sqlite3
import tempfile
import zipfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatui import cli
from chatui.transfer.files import ImportProblem, import_file
from store import SessionManager, Store, StoreSessionProvider, document_entries, export_session
from tests.test_import_chatgpt import branching_conversation
from tests.test_import_llm import llm_logs
from tests.test_import_pi import pi_session

EXAMPLES = int(os.environ.get("CHATUI_FUZZ_EXAMPLES", "20"))
COUNTS = os.environ.get("CHATUI_FUZZ_COUNT_FILE")
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=EXAMPLES <= 50,  # `make test`: the same examples every run
    suppress_health_check=list(HealthCheck),
    database=None,
)

# Placeholders put in the tree, then spelled out in the file's text: json.dumps cannot
# write these values itself.
DEEP, HUGE, NAN = "\x00deep\x00", "\x00huge\x00", "\x00nan\x00"
RAW = {
    json.dumps(DEEP): "[" * 3000 + "]" * 3000,
    json.dumps(HUGE): "9" * 5000,
    json.dumps(NAN): "NaN",
}

HOSTILE = st.one_of(
    st.sampled_from(
        [
            DEEP,
            HUGE,
            NAN,
            "\ud800",
            "x\udfffy",
            "0001-01-01T00:00:00+05:00",
            "9999-12-31T23:59:59-05:00",
            "not a time",
            "",
            "3",
            2**64,
            2**63,
            -(2**63) - 1,
            -1,
            1e308,
            -1e20,
            None,
            True,
            [],
            {},
            [1, 2],
            {"type": 7},
            {"type": "text", "text": 42},
        ]
    ),
    st.integers(),
    st.floats(),
    st.text(max_size=30),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


def slots(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON tree a value can be swapped (the root excluded)."""
    found = [path] if path else []
    if isinstance(value, dict):
        for key, inner in value.items():
            found += slots(inner, (*path, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            found += slots(inner, (*path, i))
    return found


def swapped(tree: Any, changes: list[tuple[int, Any]]) -> Any:
    tree = json.loads(json.dumps(tree))
    for pick, value in changes:
        places = slots(tree)
        if not places:
            break
        *head, last = places[pick % len(places)]
        holder = tree
        for step in head:
            holder = holder[step]
        holder[last] = copy.deepcopy(value)  # HOSTILE's objects are shared: never alias
    return tree


def dumps(value: Any) -> str:
    text = json.dumps(value)
    for placeholder, raw in RAW.items():
        text = text.replace(placeholder, raw)
    return text


CHANGES = st.lists(st.tuples(st.integers(0, 10**6), HOSTILE), min_size=1, max_size=3)


_running = [""]  # the format whose example runs (for `outcome`)


def count(fmt: str) -> None:
    """One example of `fmt` begins (the soak counts them)."""
    _running[0] = fmt
    if COUNTS:
        with open(COUNTS, "a") as fh:
            fh.write(fmt + "\n")


def outcome(what: str) -> None:
    """How the example ended: "refused" (one line, nothing written) or "imported"
    (then shown, searched, exported and re-imported); the soak reports the shares."""
    if COUNTS:
        with open(COUNTS, "a") as fh:
            fh.write(f"{_running[0]}:{what}\n")


def cli_run(*argv: Any) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def everything(store: Store) -> list[dict[str, Any]]:
    """Every chat as an export document, without the times an import sets."""
    docs = []
    for info in SessionManager(store).list(oldest_first=True, include_archived=True):
        doc = export_session(store, info.id)
        doc["session"].pop("updated_at", None)
        doc.pop("exported_at", None)
        docs.append(doc)
    return docs


@functools.cache
def _empty_database() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="fuzz-empty-"))
    atexit.register(shutil.rmtree, folder, True)
    Store(folder / "empty.db").close()
    return folder / "empty.db"


def new_store(path: Path) -> Store:
    """A new, empty chatui database at `path`: a copy of one made once per process.
    Running every migration for each example's two databases took half its time;
    the migrations have tests of their own (tests/test_migrations.py)."""
    shutil.copyfile(_empty_database(), path)
    return Store(path)


def check(path: Path, fmt: str) -> None:
    """The promise, for one file: imported whole and readable everywhere, or refused
    in one line with nothing written."""
    with (
        tempfile.TemporaryDirectory(prefix="fuzz-") as folder,
        new_store(Path(folder) / "chats.db") as store,
    ):
        try:
            report = import_file(store, path, fmt)
        except ImportProblem as exc:  # `chatui import` prints it in one line, exit 3
            assert "\n" not in str(exc) and str(exc)
            assert store.query("SELECT count(*) FROM messages")[0][0] == 0
            assert store.query("SELECT count(*) FROM sessions")[0][0] == 0
            outcome("refused")
            return
        assert not report.rejected or report.chats  # a partial import wrote the good ones
        docs = everything(store)
        manager = SessionManager(store)
        for info in manager.list(include_archived=True):
            provider = StoreSessionProvider(store, info.id)
            for message in provider.get_tree():
                assert isinstance(message.text, str)
                words = [w for w in message.text.split() if w.isalnum()][:1]
                if words:
                    manager.search(words[0], limit=3)
            # The readers a person uses: `show`, `show --tree`, `show --json`, Markdown.
            for extra in ([], ["--tree"], ["--json"]):
                code, _, err = cli_run("--db", Path(folder) / "chats.db", "show", info.id, *extra)
                assert code == 0, err
        export = Path(folder) / "export.json"
        code, _, err = cli_run("--db", Path(folder) / "chats.db", "export", "--all", "-o", export)
        assert code == 0, err
        code, _, err = cli_run(
            "--db", Path(folder) / "chats.db", "export", "--all", "--format", "md"
        )
        assert code == 0, err
        with new_store(Path(folder) / "again.db") as again:
            import_file(again, export, "chatui")
            assert everything(again) == docs
    outcome("imported")


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


def chatui_document() -> dict[str, Any]:
    with Store(":memory:") as store:
        manager = SessionManager(store)
        info = manager.create("Fuzzed", id="f0f0f0f0")
        provider = StoreSessionProvider(store, info.id)
        provider.append_message(
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello there"}]}
        )
        provider.append_message(
            {
                "id": "a1",
                "role": "assistant",
                "parts": [
                    {"type": "reasoning", "text": "think"},
                    {"type": "text", "text": "general kenobi"},
                ],
                "metadata": {"model": "m", "status": "done"},
                "token_usage": {"input": 3, "output": 2, "cost": 0.5},
            }
        )
        return export_session(store, info.id)


CHATUI_DOC = chatui_document()


@FUZZ
@given(changes=CHANGES)
def test_chatui_json(changes):
    count("chatui-json")
    with tempfile.TemporaryDirectory() as folder:
        check(write(Path(folder), "x.json", dumps(swapped(CHATUI_DOC, changes))), "chatui")


@FUZZ
@given(changes=CHANGES, line=st.integers(0, 100))
def test_chatui_jsonl(changes, line):
    count("chatui-jsonl")
    entries = list(document_entries(CHATUI_DOC))
    entries[line % len(entries)] = swapped(entries[line % len(entries)], changes)
    with tempfile.TemporaryDirectory() as folder:
        check(write(Path(folder), "x.jsonl", "\n".join(dumps(e) for e in entries)), "chatui")


@FUZZ
@given(changes=CHANGES)
def test_chatgpt(changes):
    count("chatgpt")
    with tempfile.TemporaryDirectory() as folder:
        text = dumps(swapped([branching_conversation()], changes))
        check(write(Path(folder), "conversations.json", text), "chatgpt")


@FUZZ
@given(changes=CHANGES, line=st.integers(0, 100))
def test_pi(changes, line):
    count("pi")
    entries = pi_session()
    entries[line % len(entries)] = swapped(entries[line % len(entries)], changes)
    with tempfile.TemporaryDirectory() as folder:
        check(write(Path(folder), "s.jsonl", "\n".join(dumps(e) for e in entries)), "pi")


LLM_CELLS = st.tuples(
    st.sampled_from(
        [
            ("responses", "prompt"),
            ("responses", "response"),
            ("responses", "datetime_utc"),
            ("responses", "input_tokens"),
            ("responses", "output_tokens"),
            ("responses", "conversation_id"),
            ("responses", "id"),
            ("responses", "model"),
            ("conversations", "name"),
            ("conversations", "id"),
            ("tool_calls", "arguments"),
            ("tool_calls", "name"),
            ("tool_results", "output"),
        ]
    ),
    st.one_of(
        st.sampled_from(
            ["\ud800", "0001-01-01T00:00:00+05:00", "[" * 3000, "9" * 5000, b"\xff\xfe", 2**63 - 1]
        ),
        st.integers(-(2**63), 2**63 - 1),
        st.floats(allow_nan=False),
        st.text(max_size=20),
        st.none(),
    ),
)


@FUZZ
@given(cells=st.lists(LLM_CELLS, min_size=1, max_size=3))
def test_llm(cells):
    count("llm")
    with tempfile.TemporaryDirectory() as folder:
        path = llm_logs(Path(folder) / "logs.db")
        conn = sqlite3.connect(path)
        for (table, column), value in cells:
            if isinstance(value, str):
                value = value.encode("utf-8", "surrogatepass")  # sqlite3 stores the bytes
            one = f"WHERE rowid = (SELECT min(rowid) FROM {table})"  # ids stay unique
            try:
                if isinstance(value, bytes):
                    conn.execute(f"UPDATE {table} SET {column} = CAST(? AS TEXT) {one}", (value,))
                else:
                    conn.execute(f"UPDATE {table} SET {column} = ? {one}", (value,))
            except sqlite3.IntegrityError:
                pass  # a NOT NULL column: the file keeps its value
        conn.commit()
        conn.close()
        check(path, "llm")


ZIP_TRICKS = st.sampled_from(["plain", "encrypted", "unknown-method", "bomb", "two-files"])


@FUZZ
@given(changes=CHANGES, trick=ZIP_TRICKS)
def test_chatgpt_zip(changes, trick):
    count("zip")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "export.zip"
        text = dumps(swapped([branching_conversation()], changes))
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            if trick == "bomb":
                archive.writestr("conversations.json", "[" + " " * 30_000_000 + "]")
            else:
                archive.writestr("conversations.json", text)
            if trick == "two-files":
                archive.writestr("chat.html", "<html></html>")
        if trick in ("encrypted", "unknown-method"):
            raw = bytearray(path.read_bytes())
            at = raw.find(b"PK\x01\x02")  # the central directory's entry
            local = 0
            if trick == "encrypted":
                raw[local + 6] |= 1
                raw[at + 8] |= 1
            else:
                raw[local + 8 : local + 10] = (99).to_bytes(2, "little")
                raw[at + 10 : at + 12] = (99).to_bytes(2, "little")
            path.write_bytes(bytes(raw))
        check(path, "chatgpt")


# -- the store API: the message and usage shapes it takes ------------------------------

PART = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": HOSTILE}),
    st.fixed_dictionaries({"type": st.just("reasoning"), "text": HOSTILE}),
    st.fixed_dictionaries(
        {"type": st.just("tool-call"), "tool_call_id": HOSTILE, "tool_name": HOSTILE,
         "input": HOSTILE}
    ),
    st.dictionaries(st.sampled_from(["type", "text", "output", "name"]), HOSTILE, max_size=3),
    HOSTILE,
)  # fmt: skip


@FUZZ
@given(
    parts=st.one_of(st.lists(PART, max_size=3), HOSTILE),
    usage=st.one_of(
        st.none(), HOSTILE, st.dictionaries(st.sampled_from(["input", "output", "cost"]), HOSTILE)
    ),
    metadata=st.one_of(st.dictionaries(st.text(max_size=5), HOSTILE, max_size=2), HOSTILE),
)
def test_store_api(parts, usage, metadata):
    """What `append_message` accepts, every reader shows; what it refuses, it refuses
    with ValueError before writing anything."""
    count("store-api")
    placeholders = {DEEP: [[[]]], HUGE: 10**100, NAN: float("nan")}

    def real(value: Any) -> Any:
        if isinstance(value, str):
            return placeholders.get(value, value)
        if isinstance(value, list):
            return [real(v) for v in value]
        if isinstance(value, dict):
            return {k: real(v) for k, v in value.items()}
        return value

    raw = {"id": "m1", "role": "assistant", "parts": real(parts), "metadata": real(metadata)}
    if usage is not None:
        raw["token_usage"] = real(usage)
    with tempfile.TemporaryDirectory() as folder, new_store(Path(folder) / "s.db") as store:
        manager = SessionManager(store)
        info = manager.create("api", id="a0a0a0a0")
        provider = StoreSessionProvider(store, info.id)
        try:
            provider.append_message(raw)
        except ValueError:
            assert store.query("SELECT count(*) FROM messages")[0][0] == 0
            outcome("refused")
            return
        (message,) = provider.get_tree()
        assert isinstance(message.text, str)
        for extra in ([], ["--tree"], ["--json"]):
            code, _, err = cli_run("--db", Path(folder) / "s.db", "show", info.id, *extra)
            assert code == 0, err
        export = Path(folder) / "e.json"
        assert cli_run("--db", Path(folder) / "s.db", "export", info.id, "-o", export)[0] == 0
        with new_store(Path(folder) / "again.db") as again:
            import_file(again, export, "chatui")
            assert everything(again) == everything(store)
    outcome("imported")


@pytest.mark.parametrize("fmt", ["chatgpt", "chatui", "pi", "llm"])
def test_a_refusal_is_one_line_and_exit_3(tmp_path, fmt):
    bad = tmp_path / "bad.json"
    bad.write_text("[" * 5000 + "]" * 5000)
    code, out, err = cli_run("import", bad, "--from", fmt, "--db", tmp_path / "x.db")
    assert code == 3, err
    assert err.count("\n") == 1 and err.startswith("chatui: error: ") and "Traceback" not in err
