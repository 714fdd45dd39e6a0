"""No import cycles anywhere in store, widgets or chatui (issue 15).

grimp builds the import graph the way import-linter does — `TYPE_CHECKING`
imports and imports inside functions included — so a cycle hidden behind either
is still found. A cycle is a pair of modules each reachable from the other.
"""

from __future__ import annotations

import grimp

PACKAGES = ("store", "widgets", "chatui")


def _cycles(graph) -> list[list[str]]:
    found = []
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in graph.modules:
                continue
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back:
                found.append([module, *back])
    return found


def test_no_import_cycles():
    graph = grimp.build_graph(*PACKAGES)
    assert _cycles(graph) == []


def test_the_check_finds_a_cycle_when_there_is_one():
    graph = grimp.ImportGraph()
    for name in ("pkg", "pkg.a", "pkg.b"):
        graph.add_module(name)
    graph.add_import(importer="pkg.a", imported="pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.a")
    assert _cycles(graph) == [["pkg.a", "pkg.b", "pkg.a"], ["pkg.b", "pkg.a", "pkg.b"]]
