"""The auditor's imports run one way (issue #23, items 1 and 2).

The graph is built with the standard library's ``ast`` from every ``import`` statement of the
source files, including imports inside functions (an import moved into a function to dodge a
cycle is still an edge here). ``from package import name`` is an edge to the package and, when
``name`` is a module of it, to that module too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import dpverify

ROOT = Path(dpverify.__file__).resolve().parent.parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(package: str) -> dict[str, Path]:
    base = ROOT.joinpath(*package.split("."))
    return {_module_name(p): p for p in sorted(base.rglob("*.py"))}


def import_graph(package: str = "dpverify") -> dict[str, set[str]]:
    """module -> the modules of ``package`` it imports (at any depth of its code)."""
    modules = _modules(package)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        here = name.split(".") if is_package else name.split(".")[:-1]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                source = ".".join(base + (node.module.split(".") if node.module else []))
                targets = [source] + [f"{source}.{alias.name}" for alias in node.names]
            else:
                continue
            edges.update(t for t in targets if t in modules and t != name)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (as a list of modules, first == last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _restricted(graph: dict[str, set[str]], prefix: str) -> dict[str, set[str]]:
    return {m: {t for t in e if t.startswith(prefix)} for m, e in graph.items() if m.startswith(prefix)}


def test_the_graph_sees_function_level_imports_and_cycles() -> None:
    """The checker itself: a function-level import is an edge, and a planted cycle is found
    (a checker that finds nothing would pass the tests below vacuously)."""
    graph = import_graph()
    # dpverify._audit._suite._gate imports the auditor inside run_claim (a worker-side import)
    assert "dpverify._audit._audit" in graph["dpverify._audit._suite._gate"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_auditor_has_no_import_cycle() -> None:
    """dpverify._audit (the suite's _registry, _schema, _user included) imports one way."""
    assert find_cycle(_restricted(import_graph(), "dpverify._audit")) is None


def test_tails_do_not_import_the_auditor() -> None:
    """Tails are not audits: the exact binomial intervals they share live in dpverify._statistics._confidence."""
    graph = import_graph()
    offending = {m: sorted(t for t in e if t.startswith("dpverify._audit")) for m, e in graph.items()
                 if m.startswith("dpverify._tails")}
    assert {m: e for m, e in offending.items() if e} == {}
    assert "dpverify._statistics._confidence" in graph["dpverify._tails._montecarlo"]
    assert not any(t.startswith("dpverify.") for t in graph["dpverify._statistics._confidence"])  # neutral: below both
