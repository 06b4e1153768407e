"""The packages' import graph has no cycle, counting imports inside functions too (issue #23).

The graph is built from the source with the standard library's ``ast``: every ``import`` and
``from ... import`` anywhere in a module (top level, functions, methods, ``TYPE_CHECKING`` blocks)
is an arrow from that module to the module it names inside ``accounting`` or ``dpverify``, and so
is a string literal that is exactly a project submodule's dotted name (the tables of modules imported
by name with ``importlib.import_module``: a lazy import is still an arrow). A
``from package import name`` where ``name`` is a submodule points at the submodule; otherwise at
the package's ``__init__``. A package's ``__init__`` re-exporting its submodules is an arrow like
any other, so a submodule that imports its own package's ``__init__`` closes a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("accounting", "dpverify")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([target] if target else []))


def import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports (anywhere in its body)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value and node.value in modules:
                targets = [node.value]  # a module named by a string: imported by name somewhere (import_module)
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node.level, node.module)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                while target and target not in modules:  # `import a.b.c` names a.b.c; keep the deepest known
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    edges = graph
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_graph_sees_function_level_imports():
    """The builder counts an import inside a function body (so a cycle hidden there is found)."""
    graph = import_graph()
    assert "dpverify._bandits._registry" in graph
    # a known function-level import of the code base: the CLI imports its command modules lazily or
    # eagerly, either way every dpverify module is reachable from the CLI's arrows
    reachable, frontier = set(), ["dpverify.cli"]
    while frontier:
        m = frontier.pop()
        if m not in reachable:
            reachable.add(m)
            frontier.extend(graph[m])
    assert "accounting._validation" in reachable


def test_cycle_finder_finds_a_planted_cycle():
    """The same finder reports a two-module cycle and a three-module one (it can fail)."""
    planted = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "p": {"p.x"}, "p.x": set()}  # p: a plain re-export
    assert sorted(cycles(planted)) == [["a", "b"], ["c", "d", "e"]]


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles (including function-level imports): " + "; ".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("source_prefix, forbidden_prefix", [
    ("dpverify._tails", "dpverify._audit"),   # tails are not audits: shared statistics live below both
    ("accounting", "dpverify"),               # the accountant is the bottom layer
])
def test_layers(source_prefix, forbidden_prefix):
    graph = import_graph()
    bad = sorted((s, t) for s, ts in graph.items() if s.startswith(source_prefix) for t in ts if t.startswith(forbidden_prefix))
    assert not bad, f"{source_prefix} imports {forbidden_prefix}: {bad}"
