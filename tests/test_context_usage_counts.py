"""The next request's measure indents each tool's schema once, not on every measure (issue 22)."""

import json

from chatui.core import context_usage
from store import Tool


def test_a_tools_schema_is_indented_once_for_every_measure(monkeypatch):
    indented = []
    real = json.dumps

    def dumps(value, **kwargs):
        if kwargs.get("indent"):
            indented.append(value)
        return real(value, **kwargs)

    monkeypatch.setattr(context_usage.json, "dumps", dumps)
    parameters = {"type": "object", "properties": {"path": {"type": "string", "title": "Chemin ✓"}}}
    tool = Tool("read_a_file_once", "Reads a file.", parameters, lambda path: path)
    requests = [context_usage.next_request([], {tool.name: tool}, "m") for _ in range(3)]
    assert len(indented) == 1  # was 3: a Python-encoded dump each measure
    # the text F2 shows is what indenting the schema as sent gives
    shown = real(tool.to_openai(), ensure_ascii=False, indent=2)
    assert [r.tools[0].schema for r in requests] == [shown] * 3
