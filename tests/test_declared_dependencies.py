"""Runtime dependencies are the ones imported, and every third-party import is declared (issue 30, item 7).

Read from the source with the standard library's ``ast`` (every ``import`` anywhere in a module of
``accounting`` or ``dpverify``, functions included), against ``pyproject.toml``:

- every runtime dependency is imported by the packages (sympy was declared and imported nowhere: it
  is a test dependency now; mpmath is a runtime one since the one-run f-DP test re-checks in it);
- every third-party module the packages import is declared: a runtime dependency, or an extra;
- a module declared only in an extra is optional: it is imported inside a function (never when the
  package is imported) and either named in ``dpverify._cli._optional.EXTRAS`` (whose ``require`` names
  the extra) or inside a ``try`` that handles ``ImportError``.

Deterministic. The wrong variants it rejects are shown on made-up inputs: a declared dependency
that is never imported, an undeclared import, an optional import at module level.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("accounting", "dpverify")
#: distribution name -> the module it installs, where they differ
MODULE_OF = {"python-flint": "flint", "scikit-learn": "sklearn", "dp-accounting": "dp_accounting", "prv-accountant": "prv_accountant",
             "pytest-xdist": "xdist", "psycopg": "psycopg"}


def _distribution(requirement: str) -> str:
    name = requirement
    for mark in ("[", ">", "<", "=", "!", "~", ";", " "):
        name = name.split(mark)[0]
    return name.strip().lower()


def _module(requirement: str) -> str:
    name = _distribution(requirement)
    return MODULE_OF.get(name, name.replace("-", "_"))


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = {_module(r) for r in project["dependencies"]}
    extras = {extra: {_module(r) for r in requirements} for extra, requirements in project["optional-dependencies"].items()}
    return runtime, extras


def _guarded(parents: list[ast.AST]) -> bool:
    """Inside a ``try`` one of whose handlers catches ImportError (or ModuleNotFoundError)."""
    for node in parents:
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
                if any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError") for n in names):
                    return True
    return False


def third_party_imports(sources: dict[str, str]) -> list[tuple[str, str, bool, bool]]:
    """(file, top-level module, inside a function, guarded by ``except ImportError``) of every
    import of a module outside the standard library and the two packages."""
    out = []
    for name, text in sources.items():
        def visit(node: ast.AST, parents: list[ast.AST]) -> None:
            modules = []
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in PACKAGES and top != "__future__":
                    in_function = any(isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) for p in parents)
                    out.append((name, top, in_function, _guarded(parents)))
            for child in ast.iter_child_nodes(node):
                visit(child, parents + [node])

        visit(ast.parse(text), [])
    return out


def _sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def problems(imports: list[tuple[str, str, bool, bool]], runtime: set[str], extras: dict[str, set[str]], optional: set[str]) -> list[str]:
    """What is wrong with ``imports`` against the declared dependencies (empty: nothing)."""
    found = []
    imported = {top for _, top, _, _ in imports}
    for module in sorted(runtime - imported):
        found.append(f"runtime dependency {module!r} is imported nowhere in {PACKAGES} (move it to an extra)")
    in_extras = set().union(*extras.values()) if extras else set()
    for path, top, in_function, guarded in imports:
        if top in runtime:
            continue
        if top not in in_extras:
            found.append(f"{path}: imports {top!r}, declared neither as a dependency nor in an extra")
        elif not in_function and not guarded:
            found.append(f"{path}: imports the optional {top!r} at module level (unguarded): importing the package needs it")
        elif top not in optional and not guarded:
            found.append(f"{path}: imports the optional {top!r} without naming its extra (dpverify._cli._optional.EXTRAS or except ImportError)")
    return found


def test_runtime_dependencies_are_the_imported_ones():
    from dpverify._cli._optional import EXTRAS

    runtime, extras = _declared()
    optional = {module.split(".")[0] for module in EXTRAS}
    assert problems(third_party_imports(_sources()), runtime, extras, optional) == []
    # the test extra installs everything the tests import that the packages do not
    assert {"sympy", "mpmath"} <= extras["test"]


def test_the_check_rejects_the_wrong_variants():
    runtime, extras = {"numpy", "sympy"}, {"learn": {"sklearn"}}
    clean = {"a.py": "import numpy\nimport sympy\ndef f():\n    import sklearn\n"}
    assert problems(third_party_imports(clean), runtime, extras, {"sklearn"}) == []
    unused = {"a.py": "import numpy\n"}
    assert any("'sympy' is imported nowhere" in p for p in problems(third_party_imports(unused), runtime, extras, {"sklearn"}))
    undeclared = {"a.py": "import numpy, sympy, requests\n"}
    assert any("'requests', declared neither" in p for p in problems(third_party_imports(undeclared), runtime, extras, set()))
    top_level = {"a.py": "import numpy, sympy\nimport sklearn\n"}
    assert any("at module level" in p for p in problems(third_party_imports(top_level), runtime, extras, {"sklearn"}))
    unnamed = {"a.py": "import numpy, sympy\ndef f():\n    import sklearn\n"}
    assert any("without naming its extra" in p for p in problems(third_party_imports(unnamed), runtime, extras, set()))
    guarded = {"a.py": "import numpy, sympy\ntry:\n    import sklearn\nexcept ImportError:\n    sklearn = None\n"}
    assert problems(third_party_imports(guarded), runtime, extras, set()) == []
