"""What every module of the audit suite shares: a validated claim file, its errors, typed table access.

:class:`ClaimSpec` is one validated claim file (made by :func:`._schema.load_claim`);
:class:`SuiteError` an error in the suite itself (exit code 2), naming the file and the key;
:class:`_Table` what target builders read their ``[parameters]`` and ``[neighbours]`` through
(errors name the key; unknown keys are errors). This module sits below the registry
(:mod:`._registry`), users' targets (:mod:`._user`), building (:mod:`._build`) and loading
(:mod:`._schema`), and imports none of them, so every import in the package runs one way.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping, Sequence

from .._results import HOLDS, VIOLATED

__all__ = ["EXPECTATIONS", "FORMS", "IDEALISED", "ClaimSpec", "SuiteError"]

FORMS = ("pure", "rdp", "zcdp", "approx")
_MIN_SAMPLES = 1000
#: ``expect = ...``: a violation the audit as executed must find, and in which arithmetic
EXPECT_FLOATING_POINT = "violated-in-floating-point"  # in floating point only: holds in real arithmetic
EXPECT_BOTH = "violated-in-both"
#: what a claim file may expect: "holds" (the default), or (planted files; the floating-point
#: one also in idealised files) a violation in any arithmetic, in floating point only, or in both
EXPECTATIONS = (HOLDS, VIOLATED, EXPECT_FLOATING_POINT, EXPECT_BOTH)
#: the word a claim file's name must contain to set ``float_bits = false`` (a claim about the
#: idealised, real-arithmetic mechanism) or, outside planted/, to expect a floating-point violation
IDEALISED = "idealised"


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
    #: ``false``: the claim is about the idealised, real-arithmetic mechanism (files named
    #: ``*idealised*`` only; they expect "violated-in-floating-point"). Every claim is audited as
    #: executed, with floating-point views; the real-arithmetic audit follows where they find a violation
    float_bits: bool = True
    #: ``mode = "one-run"``: a one-run canary audit of a run (:mod:`._one_run_claims`); else repeated draws
    mode: str = "repeated"


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

