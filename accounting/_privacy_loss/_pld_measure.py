"""The measures a privacy-loss distribution is made of, shared by :mod:`accounting._privacy_loss._pld` and
:mod:`accounting._privacy_loss._pld_continuous` (both build them; only the first composes them).

A *side* is a measure on a grid {origin + (offset + i) step} plus an atom at +inf, either
dominating the true PLD (the upper side: pessimistic) or dominated by it (the lower side), with
its masses as Arb balls (``poly``) or as floats with a certified l1 error (``vec``, ``err``); a
*direction* holds the upper side and, optionally, the lower one, of (P || Q) or (Q || P). The
pessimism argument behind every operation on them is in :mod:`accounting._privacy_loss._pld`'s docstring; this
module holds the data and the certified float helpers (directed sums, upper/lower floats of
balls) that both builders need, so that neither imports the other's internals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np
from flint import arb

from .._core._certified import exact
from .._core._validation import AccountingError, check_positive

_U = 2.0**-53
_SUBNORMAL = 5e-324
#: Default P-mass outside the output window (placed on the +inf atom).
DEFAULT_TAIL_MASS = 1e-18
#: Default mass that one truncation may drop from each end after a convolution.
DEFAULT_TRUNCATION = 1e-15
#: Default discretisation width when the losses are not on a lattice (``from_pair``).
DEFAULT_DISCRETISATION = 1e-4


# ----------------------------------------------------------------------------------------------
# small certified helpers


def _is_neg_inf(ball: arb) -> bool:
    return (not ball.is_finite()) and bool(ball < 0)


def _float_up(x: float) -> float:
    return math.nextafter(x, math.inf)


def _ball_of(lo: float, hi: float) -> arb:
    """An Arb ball containing the float interval [lo, hi]."""
    return arb(lo).union(arb(hi))


def _floats_of_balls(balls: Sequence[arb], upper: bool) -> np.ndarray:
    """Vectorised certified endpoints: floats >= (upper) or <= (lower, clamped at 0) each ball."""
    n = len(balls)
    mids = np.empty(n)
    rads = np.empty(n)
    for i, b in enumerate(balls):
        if not b.is_finite():
            raise ArithmeticError("a mass enclosure is not finite: raise the precision")
        mids[i] = float(b.mid())
        rads[i] = float(b.rad())
    # float(mid) and float(rad) are each within u relative (+ subnormal spacing) of the exact
    # values; the margin 8u (|m| + r) + 4 * 2^-1074 covers both conversions and the two roundings
    # of the expression itself.
    margin = 8 * _U * (np.abs(mids) + rads) + 4 * _SUBNORMAL * ((mids != 0) | (rads != 0))
    if upper:
        out = mids + rads + margin
        return np.maximum(out, 0.0)
    out = mids - rads - margin
    return np.maximum(out, 0.0)


def _certified_powers(ratio: arb, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Floats lo_j <= ratio^j <= hi_j, j = 0..count-1, for a positive ball ``ratio``.

    ratio^j is the product of the factors ratio^(2^i) over the bits i of j (each factor a
    certified float bound from Arb: bit_length(count) Arb squarings, not count products), and a
    float product of b factors is within (1 + u)^b - 1 <= 1.01 b u of the exact product of those
    floats; both ends are widened by that. An upper end that underflows is raised to 1e-300 (a
    valid, negligible bound). The products are formed by doubling the table (entries m..2m-1 are
    entries 0..m-1 times ratio^m): the same factors as per bit, in contiguous slices instead of
    masked updates (~5x faster)."""
    bits = max(1, (count - 1).bit_length())
    lo = np.ones(count)
    hi = np.ones(count)
    factor = ratio
    from .._core._certified import lower_float, upper_float

    m = 1
    for _ in range(bits):
        f_lo, f_hi = lower_float(factor), upper_float(factor)
        top = min(2 * m, count)
        with np.errstate(over="ignore", under="ignore"):
            lo[m:top] = lo[: top - m] * f_lo
            hi[m:top] = hi[: top - m] * f_hi
        factor = factor * factor
        m *= 2
    margin = 1.01 * (bits + 1) * _U
    lo = np.maximum(lo * (1 - margin), 0.0)
    hi = hi * (1 + margin)
    hi = np.where(hi < 1e-290, hi + 1e-300, hi)
    return lo, hi


def _sum_upper(values: np.ndarray) -> float:
    """A float >= the exact sum of non-negative floats (any summation order)."""
    n = len(values)
    if n == 0:
        return 0.0
    s = float(np.sum(values))
    return _float_up(s * (1 + 2 * (n + 2) * _U) + n * _SUBNORMAL)


def _sum_lower(values: np.ndarray) -> float:
    n = len(values)
    if n == 0:
        return 0.0
    s = float(np.sum(values))
    return max(0.0, math.nextafter(s * (1 - 2 * (n + 2) * _U), -math.inf))


def _as_exact_real(name: str, value: object) -> arb:
    if isinstance(value, arb):
        if not value.is_finite():
            raise AccountingError(name, value, "a finite real number")
        return value
    if isinstance(value, str):
        value = Fraction(value)
    check_positive(name, value)
    return exact(value)  # type: ignore[arg-type]


def _step_key(value: object, ball: arb) -> str:
    """A key identifying a grid step exactly (two PLDs compose only on equal keys)."""
    if isinstance(value, (int, Fraction)) and not isinstance(value, bool):
        return f"q:{Fraction(value)}"
    if isinstance(value, float):
        return f"q:{Fraction(value)}"
    if isinstance(value, str):
        return f"q:{Fraction(value)}"
    if ball.is_exact():
        m, e = ball.man_exp()
        return f"d:{int(m)}:{int(e)}"
    return f"ball:{ball.str(radius=True, more=True)}"


# ----------------------------------------------------------------------------------------------
# one side of one direction: a (dominating or dominated) measure on origin + n*step  and +inf


class _Side:
    """A measure on the grid {origin + (offset + i) * step} plus two atoms at +inf.

    ``upper=True``: dominates the true PLD (after raising every grid loss by ``shift``);
    ``upper=False``: is dominated by it (after lowering every grid loss by ``shift``).
    Exactly one of ``poly`` (arb engine) and ``vec`` (float engine, l1 error ``err``) is set.

    The +inf mass is kept in two balls, because only one of them belongs to the mechanism:
    ``inf`` is the *genuine* atom (outputs with Q = 0 < P, composed exactly), ``truncated`` (upper
    side) the mass put at +inf by truncation (outputs outside the window, masses cut after a
    convolution, the mass outside an FFT window): an upper bound, added to delta like the atom
    (f_eps(+inf) = 1), and the measure of how far the side is from exact. ``moved`` (upper side)
    is the mass raised inside the grid by a low-end truncation (to the lowest kept point): it is
    in ``poly``/``vec`` already and moves delta by at most its mass. On a lower side
    ``truncated`` records mass dropped (never added to anything) and ``moved`` is 0.
    """

    __slots__ = ("upper", "offset", "poly", "vec", "err", "inf", "shift", "origin", "truncated", "moved", "recipe", "factor")

    def __init__(self, upper, offset, poly, vec, err, inf, shift, origin, truncated, recipe=None, moved=None):
        self.upper = upper
        self.offset = int(offset)
        self.poly = poly
        self.vec = vec
        self.err = float(err)
        self.inf = inf
        self.shift = shift
        self.origin = origin
        self.truncated = truncated
        self.moved = arb(0) if moved is None else moved
        # a float upper side that is a product of powers of releases (accounting._privacy_loss._pld_fft_power):
        # its delta(eps) is certified from the recipe (tilted single-FFT passes), vec/err being
        # the untilted pass, usable as any float side
        self.recipe = recipe
        # the side as one release of the single-FFT route (accounting._privacy_loss._pld._factors_of), built once
        self.factor = None

    @property
    def engine(self) -> str:
        return "arb" if self.poly is not None else "float"

    def length(self) -> int:
        return (self.poly.degree() + 1) if self.poly is not None else len(self.vec)

    def finite_mass(self) -> arb:
        """A ball containing the (dominating/dominated) measure's finite mass."""
        if self.poly is not None:
            if self.poly.degree() < 0:
                return arb(0)
            return self.poly(1)
        hi = _sum_upper(self.vec) + self.err
        lo = max(0.0, _sum_lower(self.vec) - self.err)
        return _ball_of(lo, _float_up(hi))

    def atom(self) -> arb:
        """A ball containing all the +inf mass the side's delta counts (genuine + truncated on an
        upper side; the genuine atom on a lower side, which drops truncations)."""
        return self.inf + self.truncated if self.upper else self.inf

    def truncation(self) -> arb:
        """A ball whose upper end bounds the effect of every truncation on delta (upper side)."""
        return self.truncated + self.moved

    def to_float(self) -> "_Side":
        if self.poly is None:
            return self
        coeffs = self.poly.coeffs()
        vec = _floats_of_balls(coeffs, self.upper) if coeffs else np.zeros(0)
        return _Side(self.upper, self.offset, None, vec, 0.0, self.inf, self.shift, self.origin, self.truncated, moved=self.moved)

    def endpoint_vector(self) -> tuple[np.ndarray, float]:
        """(c_hat, E): floats and an l1 error for evaluating sums against functions in [0, 1]."""
        if self.poly is not None:
            coeffs = self.poly.coeffs()
            vec = _floats_of_balls(coeffs, self.upper) if coeffs else np.zeros(0)
            return vec, 0.0
        return self.vec, self.err




@dataclass(frozen=True)
class _Direction:
    name: str
    upper: _Side
    lower: _Side | None

