"""The audit suite's claim files: the TOML schema and its validation.

A claim file (``audits/README.md`` documents the schema) names a *target* -- a built-in of the
registry (:mod:`._registry`) or a user's importable callable ``"package.module:function"``
(:mod:`._user`) -- its parameters, the claim, the neighbouring inputs and a sample budget.
:func:`load_claim` validates one file into a :class:`~._spec.ClaimSpec`; :func:`load_suite` loads
a directory and builds every claim (:func:`._build.build`) before anything runs, so a malformed
suite fails fast with a :class:`~._spec.SuiteError` naming the file and the key.
"""

from __future__ import annotations

import math
import os
import tomllib
from pathlib import Path
from typing import Any

from .._results import HOLDS
from ._build import build
from ._one_run_claims import ONE_RUN, check_one_run
from ._registry import TARGETS, prefixed_target
from ._spec import _MIN_SAMPLES, EXPECT_FLOATING_POINT, EXPECTATIONS, FORMS, IDEALISED, ClaimSpec, SuiteError
from ._user import check_target_name, check_user_claim, is_user_target

__all__ = ["FORMS", "ClaimSpec", "SuiteError", "load_claim", "load_suite"]

_TOP_KEYS = {"name", "description", "target", "expect", "parameters", "claim", "neighbours", "audit", "mode"}
_AUDIT_KEYS = {"samples", "estimators", "directions", "orders", "float_bits"}


def _is_planted(file: Path, root: Path) -> bool:
    try:
        parts = file.resolve().relative_to(root.resolve()).parts[:-1]
    except ValueError:
        parts = file.parts[:-1]
    return "planted" in parts or file.parent.name == "planted"


def load_claim(file: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> ClaimSpec:
    """Read and validate one claim file (the target's parameters are checked by :func:`build`)."""
    path = Path(file)
    base = Path(root) if root is not None else path.parent
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise SuiteError(path, None, f"malformed TOML: {error}") from None
    except OSError as error:
        raise SuiteError(path, None, f"cannot read: {error}") from None
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise SuiteError(path, unknown[0], f"unknown key (allowed: {', '.join(sorted(_TOP_KEYS))})")
    planted = _is_planted(path, base)
    try:
        rel = path.resolve().relative_to(base.resolve())
        default_name = str(rel.with_suffix("")).replace(os.sep, "/")
    except ValueError:
        default_name = path.stem
    name = data.get("name", default_name)
    if not isinstance(name, str) or not name.strip():
        raise SuiteError(path, "name", f"expected a non-empty string, got {name!r}")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise SuiteError(path, "description", f"expected a string, got {description!r}")
    if data.get("mode", "repeated") != "repeated":  # issue 33: mode = "one-run"
        return _one_run_claim(path, data, name.strip(), description, planted)
    target = data.get("target")
    if target is None:
        raise SuiteError(path, "target", f"missing (one of: {', '.join(sorted(TARGETS))})")
    prefixed = isinstance(target, str) and prefixed_target(str(path), target) is not None  # e.g. "run:dist-dp-se"
    user = isinstance(target, str) and not prefixed and is_user_target(target)
    if prefixed:
        pass
    elif user:
        check_target_name(str(path), target)
    elif not isinstance(target, str) or target not in TARGETS:
        raise SuiteError(path, "target", f"unknown target {target!r} (one of: {', '.join(sorted(TARGETS))}; "
                         'or a user mechanism "package.module:function")')
    tables = {}
    for section in ("parameters", "claim", "neighbours", "audit"):
        value = data.get(section, {})
        if not isinstance(value, dict):
            raise SuiteError(path, section, f"expected a table [{section}], got {type(value).__name__}")
        tables[section] = value
    audit_table = tables["audit"]
    unknown = sorted(set(audit_table) - _AUDIT_KEYS)
    if unknown:
        raise SuiteError(path, f"audit.{unknown[0]}", f"unknown key (allowed: {', '.join(sorted(_AUDIT_KEYS))})")
    samples = audit_table.get("samples")
    if samples is None:
        raise SuiteError(path, "audit.samples", "missing: the sample budget (draws per input)")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < _MIN_SAMPLES:
        raise SuiteError(path, "audit.samples", f"expected an integer >= {_MIN_SAMPLES}, got {samples!r}")
    estimators = audit_table.get("estimators")
    if estimators is not None:
        if (not isinstance(estimators, list) or not estimators
                or any(e not in ("epsilon", "delta", "renyi") for e in estimators)):
            raise SuiteError(path, "audit.estimators", f'expected a list of "epsilon", "delta", "renyi", got {estimators!r}')
        estimators = tuple(estimators)
    directions = audit_table.get("directions", "both")
    if directions not in ("both", "forward", "backward"):
        raise SuiteError(path, "audit.directions", f'expected "both", "forward" or "backward", got {directions!r}')
    orders = audit_table.get("orders")
    if orders is not None:
        if (not isinstance(orders, list) or not orders
                or any(isinstance(o, bool) or not isinstance(o, (int, float)) or not 1 < o < math.inf for o in orders)):
            raise SuiteError(path, "audit.orders", f"expected a list of Renyi orders > 1, got {orders!r}")
        orders = tuple(float(o) for o in orders)
    float_bits = audit_table.get("float_bits", True)
    if not isinstance(float_bits, bool):
        raise SuiteError(path, "audit.float_bits", f"expected true or false, got {float_bits!r}")
    expect = _expectation(path, data, planted, float_bits)
    claim = tables["claim"]
    if user:  # a user mechanism states its claim (no guarantee object to read it from)
        _, orders = check_user_claim(str(path), claim, orders)
        return ClaimSpec(name.strip(), str(path), target, dict(tables["parameters"]), dict(claim), dict(tables["neighbours"]),
                         int(samples), estimators, directions, orders, expect, planted, description, float_bits)
    unknown = sorted(set(claim) - {"form", "epsilon"})
    if unknown:
        raise SuiteError(path, f"claim.{unknown[0]}", "unknown key (allowed: form, epsilon)")
    form = claim.get("form")
    if form is not None and form not in FORMS:
        raise SuiteError(path, "claim.form", f"expected one of {', '.join(FORMS)}, got {form!r}")
    if "epsilon" in claim:
        eps = claim["epsilon"]
        if form != "approx":
            raise SuiteError(path, "claim.epsilon", 'only for form = "approx" (delta is claimed at this epsilon)')
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < math.inf:
            raise SuiteError(path, "claim.epsilon", f"expected a number >= 0, got {eps!r}")
    elif form == "approx":
        raise SuiteError(path, "claim.epsilon", 'missing: form = "approx" claims delta at a stated epsilon')
    return ClaimSpec(name.strip(), str(path), target, dict(tables["parameters"]), dict(claim), dict(tables["neighbours"]),
                     int(samples), estimators, directions, orders, expect, planted, description, float_bits)


def _expectation(path: Path, data: dict[str, Any], planted: bool, float_bits: bool) -> str:
    """The file's ``expect``, checked against where it is (planted/ or not), its name and ``float_bits``.

    A claim about an idealised float mechanism (``float_bits = false``) is allowed only in a file
    whose name says ``idealised``, and it expects "violated-in-floating-point" (its default
    there): the mechanism as executed is not private, the real-arithmetic one is.
    """
    idealised = IDEALISED in path.name
    if not float_bits and not idealised:
        raise SuiteError(path, "audit.float_bits", f"false only in a claim file whose name contains {IDEALISED!r} (a claim "
                         "about the idealised, real-arithmetic mechanism; every other claim is audited as executed)")
    if "expect" not in data:
        if planted:
            raise SuiteError(path, "expect", "missing: a planted file states its expected verdict "
                             f"({', '.join(map(repr, EXPECTATIONS))})")
        return HOLDS if float_bits else EXPECT_FLOATING_POINT
    expect = data["expect"]
    if isinstance(expect, str):
        expect = expect.strip().replace(" ", "-")  # "violated in floating point" reads as the table shows it
    if expect not in EXPECTATIONS:
        raise SuiteError(path, "expect", f"expected one of {', '.join(map(repr, EXPECTATIONS))}, got {data['expect']!r}")
    if not float_bits and expect != EXPECT_FLOATING_POINT:
        raise SuiteError(path, "expect", f"a claim with float_bits = false expects {EXPECT_FLOATING_POINT!r} (its mechanism "
                         f"as executed is not private; the real-arithmetic claim must hold), got {data['expect']!r}")
    if not planted and expect not in (HOLDS, EXPECT_FLOATING_POINT):
        raise SuiteError(path, "expect", f'only files under planted/ may expect {expect!r}')
    if not planted and expect == EXPECT_FLOATING_POINT and not idealised:
        raise SuiteError(path, "expect", f"{expect!r} outside planted/ only in a claim file whose name contains {IDEALISED!r}")
    return str(expect)


def load_suite(path: str | os.PathLike[str]) -> list[ClaimSpec]:
    """All claims of a suite directory (every ``*.toml`` below it, sorted) or of one file.

    Every file is validated, including its target's parameters (:func:`build`), before anything
    runs: a malformed suite fails fast with a :class:`SuiteError` naming the file and the key.
    """
    root = Path(path)
    if root.is_dir():
        # ordinary claims first, then the planted bugs; each group by path
        files = sorted((p for p in root.rglob("*.toml") if p.is_file()), key=lambda p: (_is_planted(p, root), str(p)))
        if not files:
            raise SuiteError(root, None, "no *.toml claim files in this directory")
        base = root
    elif root.is_file():
        files = [root]
        base = root.parent.parent if root.parent.name == "planted" else root.parent
    else:
        raise SuiteError(root, None, "no such file or directory")
    specs = [load_claim(f, base) for f in files]
    seen: dict[str, str] = {}
    for spec in specs:
        if spec.name in seen:
            raise SuiteError(spec.file, "name", f"duplicate claim name {spec.name!r} (also in {seen[spec.name]})")
        seen[spec.name] = spec.file
        check_one_run(spec) if spec.mode == ONE_RUN else build(spec)  # validates the parameters, neighbours and claim form
    return specs


def _one_run_claim(path: Path, data: dict[str, Any], name: str, description: str, planted: bool) -> ClaimSpec:
    """A ``mode = "one-run"`` claim file (:mod:`._one_run_claims`): target, [parameters], [claim] only."""
    if data["mode"] != ONE_RUN:
        raise SuiteError(path, "mode", f'expected "repeated" (the default) or "{ONE_RUN}", got {data["mode"]!r}')
    for key in ("neighbours", "audit"):
        if key in data:
            raise SuiteError(path, key, "not used by a one-run claim (the canaries are its neighbours; one run its sample)")
    tables = {}
    for section in ("parameters", "claim"):
        value = data.get(section, {})
        if not isinstance(value, dict):
            raise SuiteError(path, section, f"expected a table [{section}], got {type(value).__name__}")
        tables[section] = value
    spec = ClaimSpec(name, str(path), str(data.get("target", "")), dict(tables["parameters"]), dict(tables["claim"]), {}, _MIN_SAMPLES,
                     expect=_expectation(path, data, planted, True), planted=planted, description=description, mode=ONE_RUN)
    check_one_run(spec)
    return spec
