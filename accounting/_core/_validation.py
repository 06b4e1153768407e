"""Input validation shared by the whole toolkit: one place, one exception family.

Every public constructor and function checks its arguments here, so that bad input gets a
``ValueError`` that names the parameter, the value it received and the range it accepts.
Nothing is silently clipped. ``assert`` is never used for input checks (it vanishes under -O).
"""

from __future__ import annotations

import math
from fractions import Fraction
from numbers import Integral, Real

__all__ = [
    "AccountingError",
    "BudgetExceeded",
    "check_alpha",
    "check_nonnegative",
    "check_positive",
    "check_positive_int",
    "check_probability",
    "check_integer",
    "Probability",
    "probability",
]


class AccountingError(ValueError):
    """A parameter is outside its allowed range. Subclass of ``ValueError``."""

    def __init__(self, name: str, value: object, allowed: str, hint: str = "") -> None:
        self.name = name
        self.value = value
        self.allowed = allowed
        message = f"{name}={value!r} is invalid: expected {allowed}"
        if hint:
            message += f" ({hint})"
        self.hint = hint
        super().__init__(message)

    def __reduce__(self):
        # Errors raised in process-pool workers must pickle to reach the caller intact.
        return (type(self), (self.name, self.value, self.allowed, self.hint))


class BudgetExceeded(ValueError):
    """A ledger refused a charge because it would spend more than the budget.

    The ledger is unchanged when this is raised.
    """


def _is_real(value: object) -> bool:
    return isinstance(value, (Real, Fraction)) and not isinstance(value, bool)


def check_positive(name: str, value: object, *, allow_inf: bool = False) -> float | int | Fraction:
    """A real number > 0 (finite unless ``allow_inf``)."""
    if not _is_real(value):
        raise AccountingError(name, value, "a real number > 0")
    if isinstance(value, float) and math.isnan(value):
        raise AccountingError(name, value, "a real number > 0")
    if isinstance(value, float) and math.isinf(value) and not allow_inf:
        raise AccountingError(name, value, "a finite real number > 0")
    if value <= 0:  # type: ignore[operator]
        raise AccountingError(name, value, "a real number > 0")
    return value  # type: ignore[return-value]


def check_nonnegative(name: str, value: object, *, allow_inf: bool = False) -> float | int | Fraction:
    """A real number >= 0 (finite unless ``allow_inf``)."""
    if not _is_real(value) or (isinstance(value, float) and math.isnan(value)):
        raise AccountingError(name, value, "a real number >= 0")
    if isinstance(value, float) and math.isinf(value) and not allow_inf:
        raise AccountingError(name, value, "a finite real number >= 0")
    if value < 0:  # type: ignore[operator]
        raise AccountingError(name, value, "a real number >= 0")
    return value  # type: ignore[return-value]


class Probability(float):
    """A probability in (0, 1), validated once (:func:`probability`): a float (it computes and
    prints as its value) that :func:`check_probability` accepts without checking again. A
    query's delta is one (``accounting._core._planner.Query``), so the conversions, PLDs and closed
    forms it reaches do not validate it a second time, and need no unchecked twin."""

    __slots__ = ()


def probability(name: str, value: object) -> Probability:
    """``value`` checked to be a probability in (0, 1) (``ValueError`` naming ``name``
    otherwise), as a :class:`Probability` (a float: a Fraction is rounded to the nearest)."""
    if type(value) is Probability:
        return value
    number = float(check_probability(name, value))
    if not 0 < number < 1:  # a Fraction within an ulp of 0 or 1
        raise AccountingError(name, value, "a probability in (0, 1) that a float can hold")
    return Probability(number)


def check_probability(name: str, value: object, *, open_low: bool = True, open_high: bool = True) -> float | Fraction:
    """A probability in (0, 1) by default; the ends can be allowed. A :class:`Probability` is
    in (0, 1) by construction and returned at once."""
    if type(value) is Probability:
        return value
    lo = "(" if open_low else "["
    hi = ")" if open_high else "]"
    allowed = f"a probability in {lo}0, 1{hi}"
    if not _is_real(value) or (isinstance(value, float) and math.isnan(value)):
        raise AccountingError(name, value, allowed)
    low_bad = value <= 0 if open_low else value < 0  # type: ignore[operator]
    high_bad = value >= 1 if open_high else value > 1  # type: ignore[operator]
    if low_bad or high_bad:
        raise AccountingError(name, value, allowed)
    return value  # type: ignore[return-value]


def check_alpha(name: str, value: object) -> float | int | Fraction:
    """A Renyi order: a finite real number > 1."""
    if not _is_real(value) or (isinstance(value, float) and not math.isfinite(value)):
        raise AccountingError(name, value, "a finite real Renyi order > 1")
    if value <= 1:  # type: ignore[operator]
        raise AccountingError(name, value, "a finite real Renyi order > 1")
    return value  # type: ignore[return-value]


def check_integer(name: str, value: object, *, minimum: int | None = None) -> int:
    """An integer (an integral float such as 3.0 is refused: sensitivities must be typed exactly)."""
    allowed = "an integer" if minimum is None else f"an integer >= {minimum}"
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise AccountingError(name, value, allowed)
    if minimum is not None and value < minimum:
        raise AccountingError(name, value, allowed)
    return int(value)


def check_positive_int(name: str, value: object) -> int:
    return check_integer(name, value, minimum=1)


def check_k_ary(noise_parameter: object, num_buckets: object) -> Fraction:
    """dp_accounting's k-ary randomized response parameters, validated: the noise parameter as an
    exact Fraction in (0, 1] and an integer number of buckets >= 2."""
    p = Fraction(noise_parameter)
    if not (0 < p <= 1):
        raise AccountingError("noise_parameter", float(p), "a probability in (0, 1]")
    if isinstance(num_buckets, bool) or not isinstance(num_buckets, int) or num_buckets < 2:
        raise AccountingError("num_buckets", num_buckets, "an integer >= 2")
    return p
