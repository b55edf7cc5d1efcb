"""The harness's own shape: no import cycle among core's modules (module-level or inside a
function: both run), no goal branch outside core/goals/, and a measuring child of readable
size."""
from __future__ import annotations

import ast
import re

from core import REPO_ROOT

CORE = REPO_ROOT / "core"


def _module(path) -> str:
    rel = path.relative_to(REPO_ROOT).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path) -> set[str]:
    """Every core module `path` imports, anywhere in the file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def core_graph() -> dict[str, set[str]]:
    modules = {_module(p): p for p in CORE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        graph[name] = {m for m in imports_of(path) if m in modules and m != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules, or None (depth-first search)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None
    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_core_has_no_import_cycle():
    cycle = find_cycle(core_graph())
    assert cycle is None, "import cycle in core: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_planted_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_goal_branch_outside_core_goals():
    pattern = re.compile(r'goal ?[!=]=|"goodput"|"compile_time"|"simulated_cost"')
    found = [f"{p.relative_to(REPO_ROOT)}:{i}: {line.strip()}"
             for root in ("core", "cli") for p in sorted((REPO_ROOT / root).rglob("*.py"))
             if "goals" not in p.relative_to(REPO_ROOT).parts
             for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []


def test_the_child_stays_small():
    lines = len((CORE / "child.py").read_text().splitlines())
    assert lines <= 600, f"core/child.py has {lines} lines; the measuring session only (≤ 600)"
