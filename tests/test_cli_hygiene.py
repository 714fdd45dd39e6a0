"""The commands stay light: no textual, rich or litellm, and documented in the README."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from chatui.cli.commands import build_parser
from chatui.transfer.common import session_id_for
from tests.test_import_chatgpt import branching_conversation

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import json, sys
from chatui.cli import main
codes = [
    main(["import", sys.argv[1], "--from", "chatgpt"]),
    main(["list"]), main(["list", "--json"]),
    main(["search", "reverse"]), main(["search", "reverse", "--json"]),
    main(["show", sys.argv[2]]), main(["show", sys.argv[2], "--tree"]),
    main(["export", "--all", "--format", "md"]), main(["export", "--all", "--format", "jsonl"]),
    main(["export", "--all"]),
]
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("textual", "litellm", "rich"))
print(json.dumps({"codes": codes, "heavy": heavy}), file=sys.stderr)
"""


def test_commands_do_not_import_the_ui_or_the_llm_client(tmp_path):
    source = tmp_path / "conversations.json"
    source.write_text(json.dumps([branching_conversation()]))
    env = {"CHATUI_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(source), session_id_for("chatgpt:conv-1")[:8]],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report == {"codes": [0] * 10, "heavy": []}


def readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"README has no '## {title}' section"
    return match.group(1)


def test_every_command_and_option_is_in_the_readme():
    section = readme_section("Command line")
    parser = build_parser()
    options = {o for a in parser._actions for o in a.option_strings if o.startswith("--")}
    commands = parser._subparsers._group_actions[0].choices  # argparse keeps them here
    for name, sub in commands.items():
        assert f"chatui {name}" in section, name
        options |= {o for a in sub._actions for o in a.option_strings}
    missing = sorted(o for o in options - {"-h", "--help", "-o"} if o not in section)
    assert missing == []
    for code in range(6):
        assert re.search(rf"^\| `?{code}`? \|", section, re.M), f"exit code {code}"
