"""The audit suite's claim files: the TOML schema, its validation, and typed access to a table.

A claim file (``audits/README.md`` documents the schema) names a *target* -- a built-in of the
registry (:mod:`._registry`) or a user's importable callable ``"package.module:function"``
(:mod:`._user`) -- its parameters, the claim, the neighbouring inputs and a sample budget.
:func:`load_claim` validates one file into a :class:`ClaimSpec`; :func:`load_suite` loads a
directory and builds every claim before anything runs, so a malformed suite fails fast with a
:class:`SuiteError` naming the file and the key. :class:`_Table` is what target builders read
their ``[parameters]`` and ``[neighbours]`` through (errors name the key; unknown keys are errors).
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping, Sequence

from .._results import HOLDS, VIOLATED

__all__ = ["FORMS", "ClaimSpec", "SuiteError", "load_claim", "load_suite"]

FORMS = ("pure", "rdp", "zcdp", "approx")
_TOP_KEYS = {"name", "description", "target", "expect", "parameters", "claim", "neighbours", "audit"}
_AUDIT_KEYS = {"samples", "estimators", "directions", "orders", "float_bits"}
_MIN_SAMPLES = 1000


class SuiteError(Exception):
    """An error in the suite itself (exit code 2): names the file and the offending key."""

    def __init__(self, file: str | os.PathLike[str], key: str | None, message: str) -> None:
        self.file = str(file)
        self.key = key
        where = f"{self.file}: {key}: " if key else f"{self.file}: "
        super().__init__(where + message)



# ------------------------------------------------------------------------------------------------
# The claim files
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimSpec:
    """One validated claim file."""

    name: str
    file: str
    target: str
    parameters: Mapping[str, Any]
    claim: Mapping[str, Any]
    neighbours: Mapping[str, Any]
    samples: int
    estimators: tuple[str, ...] | None = None
    directions: str = "both"
    orders: tuple[float, ...] | None = None
    expect: str = HOLDS
    planted: bool = False
    description: str = ""
    #: audit the floating-point representation of float outputs (``audit(float_bits=...)``); a claim
    #: about the real-arithmetic mechanism sets ``float_bits = false`` under ``[audit]``
    float_bits: bool = True

    @property
    def weight(self) -> float:
        """A rough cost (for scheduling the longest claims first)."""
        from ._registry import _TARGETS_COST

        per_draw = _TARGETS_COST.get(self.target, 1.0)
        n = self.parameters.get("n", 1) if isinstance(self.parameters.get("n", 1), int) else 1
        return self.samples * per_draw * max(1.0, n / 16)


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
    from ._registry import TARGETS, prefixed_target
    from ._user import check_target_name, check_user_claim, is_user_target

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
    if "expect" in data:
        expect = data["expect"]
        if expect not in (HOLDS, VIOLATED):
            raise SuiteError(path, "expect", f'expected "holds" or "violated", got {expect!r}')
        if not planted and expect != HOLDS:
            raise SuiteError(path, "expect", 'only files under planted/ may expect "violated"')
    elif planted:
        raise SuiteError(path, "expect", 'missing: a planted file states its expected verdict ("violated" or "holds")')
    else:
        expect = HOLDS
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
    from ._registry import build

    specs = [load_claim(f, base) for f in files]
    seen: dict[str, str] = {}
    for spec in specs:
        if spec.name in seen:
            raise SuiteError(spec.file, "name", f"duplicate claim name {spec.name!r} (also in {seen[spec.name]})")
        seen[spec.name] = spec.file
        build(spec)  # validates the parameters, neighbours and claim form
    return specs


# ------------------------------------------------------------------------------------------------
# Typed access to a TOML table, with errors naming the file and the key
# ------------------------------------------------------------------------------------------------

_REQUIRED = object()


class _Table:
    def __init__(self, spec: ClaimSpec, section: str, table: Mapping[str, Any]) -> None:
        self._spec = spec
        self._section = section
        self._table = dict(table)
        self._used: set[str] = set()

    def error(self, key: str, message: str) -> SuiteError:
        return SuiteError(self._spec.file, f"{self._section}.{key}", message)

    def _get(self, key: str, default: Any) -> Any:
        self._used.add(key)
        if key in self._table:
            return self._table[key]
        if default is _REQUIRED:
            raise self.error(key, f"missing (required by target {self._spec.target!r})")
        return default

    def number(self, key: str, default: Any = _REQUIRED, *, positive: bool = True, minimum: float | None = None,
               maximum: float | None = None) -> float:
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.error(key, f"expected a finite number, got {value!r}")
        if positive and value <= 0:
            raise self.error(key, f"expected a number > 0, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(key, f"expected a number >= {minimum:g}, got {value!r}")
        if maximum is not None and value > maximum:
            raise self.error(key, f"expected a number <= {maximum:g}, got {value!r}")
        return float(value)

    def rational(self, key: str, default: Any = _REQUIRED) -> Fraction:
        """A positive exact rational: an integer, a float (read exactly) or a string "p/q" or "0.1"."""
        value = self._get(key, default)
        try:
            if isinstance(value, bool):
                raise ValueError
            q = Fraction(value) if isinstance(value, (int, float, str)) else None
        except (ValueError, ZeroDivisionError):
            q = None
        if q is None or q <= 0:
            raise self.error(key, f'expected a positive rational (an integer, a number or a string like "7/2"), got {value!r}')
        return q

    def integer(self, key: str, default: Any = _REQUIRED, *, minimum: int = 1, maximum: int = 2**31) -> int:
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            raise self.error(key, f"expected an integer in [{minimum}, {maximum}], got {value!r}")
        return int(value)

    def choice(self, key: str, options: Sequence[str], default: Any = _REQUIRED) -> str:
        value = self._get(key, default)
        if value not in options:
            raise self.error(key, f"expected one of {', '.join(map(repr, options))}, got {value!r}")
        return str(value)

    def boolean(self, key: str, default: Any = _REQUIRED) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {value!r}")
        return value

    def pair(self, key: str, default: Any = _REQUIRED, *, integer: bool = False, lo: float | None = None,
             hi: float | None = None) -> tuple[Any, Any]:
        value = self._get(key, default)
        ok = isinstance(value, (list, tuple)) and len(value) == 2 and all(
            not isinstance(v, bool) and isinstance(v, int if integer else (int, float)) for v in value)
        if ok and lo is not None:
            ok = all(lo <= v <= hi for v in value)  # type: ignore[operator]
        if not ok or value[0] == value[1]:
            kind = "integers" if integer else "numbers"
            rng = f" in [{lo:g}, {hi:g}]" if lo is not None else ""
            raise self.error(key, f"expected two different {kind}{rng} [value in D, value in D'], got {value!r}")
        return (int(value[0]), int(value[1])) if integer else (float(value[0]), float(value[1]))

    def remaining(self) -> dict[str, Any]:
        """Every key not read yet, marked read (a user mechanism's keyword arguments)."""
        rest = {k: v for k, v in self._table.items() if k not in self._used}
        self._used.update(rest)
        return rest

    def done(self) -> None:
        unknown = sorted(set(self._table) - self._used)
        if unknown:
            allowed = ", ".join(sorted(self._used)) or "none"
            raise self.error(unknown[0], f"unknown key for target {self._spec.target!r} (allowed: {allowed})")

