"""The import graph of pipeline/, jobs/ and examples/ has no cycle but one (issue 33).

Contracts (pyproject.toml, `lint-imports`) forbid named arrows; a cycle between two modules of
one layer is no contract's business, and each one ties two modules that can then only be
understood together. The one kept: `commands/query` runs its query in a bounded child process
(`query_bounds`), which calls back into the query itself.
"""

from __future__ import annotations

import sys

import grimp

ALLOWED = [["pipeline.commands.query", "pipeline.commands.query_bounds"]]


def cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module) & modules:
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in sorted(modules):
        if module not in index:
            visit(module)
    return sorted(found)


def test_the_only_import_cycle_is_the_bounded_query() -> None:
    graph = grimp.build_graph("pipeline", "jobs", "examples")
    ours = {m for m in graph.modules if m.split(".")[0] in ("pipeline", "jobs", "examples")}
    assert cycles(graph, ours) == ALLOWED


def test_a_cycle_is_found() -> None:
    graph = grimp.ImportGraph()
    for module in ("a", "b", "c"):
        graph.add_module(module)
    graph.add_import(importer="a", imported="b")
    graph.add_import(importer="b", imported="a")
    graph.add_import(importer="b", imported="c")
    assert cycles(graph, {"a", "b", "c"}) == [["a", "b"]]
