"""The packages' import graph has no cycle, counting imports inside functions too (issue #23).

The graph is built from the source with the standard library's ``ast``: every ``import`` and
``from ... import`` anywhere in a module (top level, functions, methods, ``TYPE_CHECKING`` blocks)
is an arrow from that module to the module it names inside ``accounting`` or ``dpverify``, and so
is a string literal that is exactly a project submodule's dotted name (the tables of modules imported
by name with ``importlib.import_module``: a lazy import is still an arrow). A
``from package import name`` where ``name`` is a submodule points at the submodule; otherwise at
the package's ``__init__``. A package's ``__init__`` re-exporting its submodules is an arrow like
any other, so a submodule that imports its own package's ``__init__`` closes a cycle.

Layers (issue 30, item 5): the floors are folders. ``FLOORS`` lists them bottom to top:
``accounting``'s private folders (``_core``, ``_privacy_loss``, ``_mechanisms``, ``_amplification``,
``_events``, ``_routing``, then ``_ledgers`` / ``_interop`` / ``_papers``); ``accounting`` itself and
:mod:`accounting.internal` (the one documented interface to the layers above); ``dpverify``'s core
(``_executed``, ``_statistics``, ``_presentation``); ``_bandits``; ``_audit`` and ``_tails``; ``_cli``;
``dpverify.cli`` and ``dpverify.testing``. Every module sits in one floor's folder (no flat private
module), a module imports only from its own folder or a lower floor, and ``dpverify`` never reaches
past ``accounting``'s public API and the interface into a private module: checked on the graph and,
line by line, on every form a private import can take (``from accounting._x import``, ``import
accounting._x``, ``from accounting import _x``, an attribute ``accounting._x`` of an imported
``accounting``, ``import_module("accounting._x")``).
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
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


@functools.lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    """The parsed source of one file (parsed once per session: several tests walk every file)."""
    return ast.parse(path.read_text(), filename=str(path))


@functools.lru_cache(maxsize=None)
def import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports (anywhere in its body); built once per session (read-only)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(_tree(path)):
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
    assert "accounting._core._validation" in reachable


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


# ---- layers (issue 30, item 5) ---------------------------------------------------------------------

#: the documented interface between ``accounting`` and the layers above it
INTERFACE = "accounting.internal"
#: the floors, bottom to top; each entry is a *unit*: a folder (subpackage, with everything in it) or
#: one module (the packages' ``__init__`` and their public entry points). A module imports only from
#: its own unit or from a unit on a lower floor (units on one floor do not import each other).
FLOORS: tuple[tuple[str, ...], ...] = (
    ("accounting._core",),           # values, validation, certified arithmetic, the mechanism, pair and route contracts
    ("accounting._privacy_loss",),   # privacy-loss distributions (PLD)
    ("accounting._mechanisms",),     # the mechanisms (analytic Gaussian, mixture loss beside them)
    ("accounting._amplification",),  # subsampling, shuffling
    ("accounting._events",),         # dp_accounting's event trees as subjects
    ("accounting._routing",),        # the routes, calibration, optimal composition
    ("accounting._ledgers", "accounting._interop", "accounting._papers"),
    ("accounting", INTERFACE),       # the public API and the one documented interface
    # dpverify's core; the package __init__ re-exports lazily (PEP 562: strings, no arrows), so it sits here
    ("dpverify", "dpverify._executed", "dpverify._statistics", "dpverify._presentation"),
    ("dpverify._bandits",),
    ("dpverify._audit", "dpverify._tails"),
    ("dpverify._cli",),
    ("dpverify.cli", "dpverify.testing"),  # the console script's target and the pytest helpers
)
#: the first floor of dpverify: from here on only accounting's public API and the interface are visible
DPVERIFY_FLOOR = next(i for i, units in enumerate(FLOORS) if "dpverify" in units)
_UNITS = {unit: i for i, units in enumerate(FLOORS) for unit in units}
_PRIVATE_NAME = re.compile(r"^accounting\._\w")


def unit_of(module: str) -> str | None:
    """The unit (folder or module) ``module`` belongs to, or None if it sits on no floor."""
    if module in _UNITS:
        return module
    parts = module.split(".")
    for k in range(len(parts) - 1, 1, -1):  # the deepest folder, never the bare package (a flat module is on no floor)
        if (prefix := ".".join(parts[:k])) in _UNITS:
            return prefix
    return None


def floor(module: str) -> int:
    unit = unit_of(module)
    if unit is None:
        raise KeyError(f"{module} sits on no floor: move it into a floor's folder (FLOORS in {__name__})")
    return _UNITS[unit]


def layer_violations(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every arrow that goes up a floor, across a floor to a sibling unit, or from dpverify past the
    interface into a private module of accounting."""
    bad = []
    for s, ts in graph.items():
        for t in ts:
            if unit_of(s) == unit_of(t):
                continue
            if floor(t) >= floor(s) or (floor(s) >= DPVERIFY_FLOOR and floor(t) < floor(INTERFACE)):
                bad.append((s, t))
    return sorted(bad)


def private_accounting_imports(source: str | ast.Module) -> list[tuple[int, str]]:
    """(line, text) of every place ``source`` (text or a parsed module) imports or reaches a private
    module of ``accounting`` other than through the interface (the forms listed in the module docstring)."""
    tree = ast.parse(source) if isinstance(source, str) else source
    aliases = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names if a.name == "accounting"}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if _PRIVATE_NAME.match(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if _PRIVATE_NAME.match(node.module):
                found.append((node.lineno, f"from {node.module} import ..."))
            elif node.module == "accounting":
                found += [(node.lineno, f"from accounting import {a.name}") for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            if node.attr.startswith("_") and not node.attr.startswith("__"):
                found.append((node.lineno, f"{node.value.id}.{node.attr}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"accounting\._\w+(\.\w+)*", node.value):
            found.append((node.lineno, repr(node.value)))
    return found


def test_every_private_module_sits_on_a_floor():
    """Floors are folders: every module is a unit of FLOORS or inside a unit's folder (a flat private
    module, e.g. one added by a merge at ``accounting/_x.py``, fails here until it is moved)."""
    stray = sorted(m for m in _modules() if unit_of(m) is None)
    assert not stray, f"modules on no floor (move each into a floor's folder): {stray}"


def test_every_floor_unit_names_a_module():
    """A renamed folder must be renamed here too (else its modules would sit on no floor)."""
    modules = _modules()
    assert INTERFACE in modules
    missing = [u for u in _UNITS if u not in modules]
    assert not missing, f"floor units naming no module: {missing}"


def test_layers_only_downward():
    bad = layer_violations(import_graph())
    assert not bad, "imports going up a floor, across one, or past the interface: " + "; ".join(f"{s} -> {t}" for s, t in bad)


def test_each_folder_sits_on_one_floor():
    """The folders' own graph (an arrow between two units when a module of one imports a module of the
    other) is a chain of floors: every arrow goes strictly down, so it has no cycle either."""
    graph = import_graph()
    arrows = {(unit_of(s), unit_of(t)) for s, ts in graph.items() for t in ts if unit_of(s) != unit_of(t)}
    assert all(_UNITS[a] > _UNITS[b] for a, b in arrows), sorted((a, b) for a, b in arrows if _UNITS[a] <= _UNITS[b])
    assert not cycles({u: {b for a, b in arrows if a == u} for u in _UNITS})
    # the floors are real: each folder of accounting below the public API is imported by the floor above it or higher
    used = {b for _, b in arrows}
    assert {u for u in _UNITS if u.startswith("accounting._")} <= used


def test_layer_check_rejects_a_planted_upward_or_private_arrow():
    """The wrong variants: the same check flags an arrow up a floor, one across a floor, one into a
    private module from dpverify, and a flat module that sits on no floor."""
    planted = {
        "dpverify._executed._samplers": {"accounting", INTERFACE},             # allowed
        "dpverify._bandits._ucb": {"dpverify._executed._samplers"},            # allowed: down a floor
        "accounting._routing._routes": {"accounting._core._certified"},        # allowed: down several floors
        "accounting._mechanisms._binary": {"accounting._mechanisms._approx"},  # allowed: within its folder
        "dpverify._executed._protocols": {"dpverify._audit._audit"},           # core -> upper
        "dpverify._executed._noise": {"accounting._core._certified"},          # past the interface
        "accounting._ledgers._ledger": {INTERFACE},                            # the interface is above the private floors
        "accounting._privacy_loss._pld": {"accounting._mechanisms._binary"},   # up a floor inside accounting
        "accounting._ledgers._durable": {"accounting._interop._opacus_compat"},  # across a floor
    }
    assert layer_violations(planted) == [
        ("accounting._ledgers._durable", "accounting._interop._opacus_compat"),
        ("accounting._ledgers._ledger", INTERFACE),
        ("accounting._privacy_loss._pld", "accounting._mechanisms._binary"),
        ("dpverify._executed._noise", "accounting._core._certified"),
        ("dpverify._executed._protocols", "dpverify._audit._audit"),
    ]
    assert unit_of("accounting._flat_example") is None and unit_of("dpverify._flat") is None
    with pytest.raises(KeyError, match="sits on no floor"):
        layer_violations({"accounting._flat_example": {"accounting._core._certified"}})


def test_dpverify_imports_no_private_accounting_module():
    """Every dpverify module, line by line: only ``accounting`` and ``accounting.internal``."""
    offenders = {
        name: hits
        for name, path in _modules().items()
        if name.startswith("dpverify") and (hits := private_accounting_imports(_tree(path)))
    }
    assert not offenders, f"private accounting imports in dpverify (use accounting or {INTERFACE}): {offenders}"


@pytest.mark.parametrize("source", [
    "from accounting._core._validation import check_positive",
    "from accounting._mechanisms._binomial_pair import binomial_composition_epsilon",
    "import accounting._core._certified",
    "import accounting._core._certified as c",
    "from accounting import Ledger, _durable",
    "import accounting as acc\nx = acc._routes.pld_bracket",
    "def f():\n    from accounting._ledgers._ledger import _user_groups\n    return _user_groups",
    "import importlib\nm = importlib.import_module('accounting._routing._routes')",
])
def test_private_import_check_rejects_each_form(source):
    """The wrong variants: each form of a private import is found (the check can fail)."""
    assert private_accounting_imports(source), source


def test_private_import_check_accepts_the_interface():
    allowed = (
        "import accounting\nimport accounting as acc\nfrom accounting import Ledger, AccountingError\n"
        "from accounting.internal import exact, check_positive\nimport accounting.internal\n"
        "x = acc.__all__ + [accounting.Ledger]\ns = 'accounting._core._validation is private'\n"
    )
    assert private_accounting_imports(allowed) == []


def test_interface_is_documented_and_re_exports():
    """Each name of the interface is named in its docstring, is the private module's own object
    (a re-export, not a copy), and is not also public (a name is either API or interface)."""
    import accounting
    import accounting.internal as interface

    doc = interface.__doc__ or ""
    undocumented = [n for n in interface.__all__ if f"``{n}(" not in doc]
    assert not undocumented, f"interface names missing from its docstring: {undocumented}"
    for name in interface.__all__:
        obj = getattr(interface, name)
        home = inspect.getmodule(obj)
        assert home is not None and home.__name__.startswith("accounting._"), (name, home)
    assert not set(interface.__all__) & set(accounting.__all__)
