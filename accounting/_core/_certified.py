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
#: The largest working precision a user may ask for (bits; see check_precision).
MAX_PRECISION = 4096


def check_precision(bits: object) -> int | None:
    """A user's ``precision=``: None (the default) or an integer number of bits in [24, MAX_PRECISION].

    More bits cost super-linearly (a Skellam curve at alpha = 2: 0.2 s at 4096 bits, 1.2 s at
    10^4, minutes at 5 x 10^4, 0.8 GB at 10^9; issue 15's fuzz harness) and no route needs them;
    the routes' own escalation (``working_precision``) is not bounded by this.
    """
    if bits is None:
        return None
    if isinstance(bits, bool) or not isinstance(bits, int) or not 24 <= bits <= MAX_PRECISION:
        raise AccountingError("precision", bits, f"an integer number of bits in [24, {MAX_PRECISION}]")
    return bits


@contextmanager
def working_precision(bits: int | None) -> Iterator[int]:
    """Run a block at ``bits`` of Arb precision (default :data:`DEFAULT_PRECISION`)."""
    bits = DEFAULT_PRECISION if bits is None else bits
    # the upper end: FLINT's precision is a C long (2^31 raised OverflowError); the routes' own
    # escalation stays far below 2^20
    if isinstance(bits, bool) or not isinstance(bits, int) or not 24 <= bits <= 1 << 20:
        raise AccountingError("precision", bits, "an integer number of bits in [24, 2^20]")
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
