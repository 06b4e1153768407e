"""Certified arithmetic: Arb ball enclosures (python-flint) and directed rounding to floats.

Every number the accountant hands back is the upper (or, where stated, lower) endpoint of a
rigorous Arb enclosure, converted to a Python float with the rounding directed the safe way.
Exact inputs are turned into exact balls (floats are dyadic rationals, so ``arb(float)`` is exact;
``Fraction`` goes through ``fmpq``); no float ever enters an enclosure with a rounding error.

Precision is always local: ``with working_precision(bits):`` wraps python-flint's
``ctx.workprec``; nothing here sets global precision.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from fractions import Fraction
from typing import Iterator

from flint import arb, ctx, fmpq

from ._validation import AccountingError

__all__ = [
    "DEFAULT_PRECISION",
    "exact",
    "lower_float",
    "upper_float",
    "working_precision",
]

#: Default working precision in bits for certified evaluation. Results are certified at any
#: precision; more bits only make the enclosures (and so the reported bounds) tighter.
DEFAULT_PRECISION = 96


@contextmanager
def working_precision(bits: int | None) -> Iterator[int]:
    """Run a block at ``bits`` of Arb precision (default :data:`DEFAULT_PRECISION`)."""
    bits = DEFAULT_PRECISION if bits is None else bits
    if isinstance(bits, bool) or not isinstance(bits, int) or bits < 24:
        raise AccountingError("precision", bits, "an integer number of bits >= 24")
    with ctx.workprec(bits):
        yield bits


def exact(value: int | float | Fraction | str | arb) -> arb:
    """An exact Arb ball for a real number given as int, float, Fraction or decimal string.

    Decimal strings are read as exact rationals (``"0.1"`` is 1/10, not the nearest double).
    """
    if isinstance(value, arb):
        return value
    if isinstance(value, bool):
        raise AccountingError("value", value, "a real number")
    if isinstance(value, int):
        return arb(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise AccountingError("value", value, "a finite real number")
        return arb(value)
    if isinstance(value, str):
        value = Fraction(value)
    if isinstance(value, Fraction):
        q = fmpq(value.numerator, value.denominator)
        ball = arb(q)
        return ball
    raise AccountingError("value", value, "an int, float, Fraction or decimal string")


def upper_float(ball: arb) -> float:
    """The smallest float >= every point of ``ball`` (``inf`` if the ball is unbounded above)."""
    if ball.is_nan():
        raise ArithmeticError("enclosure is NaN: the computation lost all precision")
    upper = ball.upper()
    if not upper.is_finite():
        return math.inf
    candidate = float(upper.mid())
    if math.isinf(candidate):
        return candidate
    while arb(candidate) < upper:
        candidate = math.nextafter(candidate, math.inf)
    return candidate


def lower_float(ball: arb) -> float:
    """The largest float <= every point of ``ball`` (``-inf`` if unbounded below)."""
    if ball.is_nan():
        raise ArithmeticError("enclosure is NaN: the computation lost all precision")
    lower = ball.lower()
    if not lower.is_finite():
        return -math.inf
    candidate = float(lower.mid())
    if math.isinf(candidate):
        return candidate
    while arb(candidate) > lower:
        candidate = math.nextafter(candidate, -math.inf)
    return candidate
