"""Tight composition through privacy-loss distributions (PLDs), with certified upper bounds.

What is computed
----------------
For a discrete mechanism with neighbouring output laws P = M(D), Q = M(D') on the integers (an
:class:`~accounting.IntegerPair`), the privacy loss of the output k is L(k) = log(P(k)/Q(k)),
and its law under k ~ P is the privacy-loss distribution of the pair (P || Q); L = +inf where
Q(k) = 0 < P(k). The hockey-stick divergence is a functional of that law,

    delta(eps) = sum_k (P(k) - e^eps Q(k))_+ = E_{L ~ PLD}[ f_eps(L) ],
    f_eps(x) = (1 - e^{eps - x})_+          (f_eps(+inf) = 1),

and the non-adaptive k-fold (or heterogeneous) composition M_1 x ... x M_k has privacy loss
L_1 + ... + L_k with independent summands, so its PLD is the *convolution* of the PLDs. Both
directions (P || Q) and (Q || P) are built; the reported delta(eps) is the larger of the two and
eps(delta) the larger of the two solutions (an (eps, delta) guarantee for the symmetric
neighbouring relation). This module does not decide which pair is the worst case for a
mechanism: that is the mechanism's ``output_pair()`` contract (for the shift families of
:mod:`accounting._mechanisms` the shift by the full sensitivity). Adaptive composition is
covered where the pair is a dominating pair of every step (Zhu, Dong & Wang 2022).

How it is certified (the pessimism argument)
---------------------------------------------
Everything rests on one monotonicity fact: f_eps is non-decreasing on [-inf, +inf] with values
in [0, 1]. Hence, if L' >= L almost surely under some coupling (L' *dominates* L), then
E f_eps(L') >= E f_eps(L) for every eps, and if L'_i >= L_i for each i with independent pairs,
then sum L'_i >= sum L_i, so the composition of dominating PLDs dominates the composed PLD.
This is the argument of Meiser & Mohammadi (CCS 2018, "Tight on budget?"), Koskela, Jälkö &
Honkela (AISTATS 2020) and of dp_accounting's ``pessimistic_estimate=True``: rounding every loss
*up* to a grid yields a PLD that dominates the true one; it need not itself be the PLD of any
pair of laws, and nothing here needs that. The operations used, each of which only moves
probability mass upwards or adds mass (never lowers E f_eps because f_eps >= 0), are:

1. *Grid rounding.* Each loss is placed on a grid origin + n * step:
   - **exact lattice** (discrete Laplace with integer sensitivity, discrete Gaussian, randomized
     response, ...): the losses already sit on a lattice, detected from their Arb enclosures or
     given as ``lattice_step``; each loss L is assigned its lattice point G and a certified
     ``shift`` s = max(0, sup(L - G)) is kept (of the order of 2^-precision). Composition adds
     shifts, and delta is evaluated with every grid loss raised by the total shift, so
     L_true <= G + s holds for every composed outcome: exact up to that shift;
   - **pessimistic discretisation** with width h (Skellam, ...): n = ceil(L / h), decided with
     certified comparisons (n h >= sup of L's ball), so the grid loss is >= the true loss.
2. *Tails of the output law.* Outputs outside a window [lo, hi] carry P-mass at most the pair's
   certified ``tail_p(lo, hi)``; that bound is placed at +inf (f_eps(+inf) = 1 >= any f_eps
   value) as *truncated mass*. Outputs with Q(k) = 0 go to the genuine +inf atom, exactly.
3. *Truncation after each convolution.* Mass dropped from the low-loss end is added to the
   lowest kept grid point (moved up); mass dropped from the high end (and, in the single-FFT
   route, the Chernoff bound of the mass outside the window) is truncated mass at +inf.
   The rounding of these sums is covered (Arb balls, or an l1 error term in the float engine).
   The two +inf masses are kept apart (``_Side.inf``, ``_Side.truncated``) and composed apart
   (an outcome with a truncated part is truncated); delta adds both. The genuine atom belongs
   to the mechanism; the truncated mass (with the mass moved up) bounds how far the computed
   delta is from the measure's own, so it decides whether a lattice PLD may be called exact
   (``Result.truncation_negligible``; :mod:`accounting._routing._pld_route`).
4. *Masses.* The exact engine keeps masses as Arb balls; evaluating delta uses their upper
   endpoints (a pointwise larger measure, so a larger E f_eps since f_eps >= 0). The float
   engine keeps floats c_hat and a certified l1 distance E to a dominating measure c, and
   |sum (c - c_hat) f_eps| <= E since 0 <= f_eps <= 1; it is added to delta.

The *optimistic* twin of every step (round losses down, drop the tail mass, drop low-end
truncations, move high-end truncations down to the highest kept point, use lower endpoints and
subtract E) gives a measure dominated by the true PLD, hence a certified *lower* bound. Every
result carries both: ``epsilon`` (certified upper) and ``epsilon_lower`` (certified lower), the
sandwich inside which the true value lies. In discretised mode the two are at most about
2 k h apart in eps (each loss moves by < h either way); in exact-lattice mode only the
truncation masses and ball radii separate them.

Engines and their rounding
--------------------------
- ``"arb"``: masses as Arb balls in an ``arb_poly``; composition by ``arb_poly`` multiplication
  and k-fold composition by repeated squaring (binary powering) with truncation after every
  product (python-flint's ``arb_poly.__pow__`` is far slower and cannot truncate). Used by
  default on exact lattices.
- ``"float"``: float64 masses, convolution by real FFT (scipy.fft). The forward error of each
  FFT product is bounded by the standard radix-2 analysis (Higham, *Accuracy and Stability of
  Numerical Algorithms*, 2nd ed., Thm 24.2, with Brent, Percival & Zimmermann's bound for the
  complex products):
      ||z_hat - a*b||_2 <= (2 rho + 3u) ||a||_2 ||b||_1 + rho ||a||_1 ||b||_2 + 2 rho^2 sqrt(N) ||a||_2 ||b||_2,
      rho = m eta / (1 - m eta),  eta = mu + gamma_4 (sqrt 2 + mu),  m = ceil(log2 N) + 2,
  with twiddle-factor error mu = 8u and the whole bound multiplied by a safety factor 4 for the
  mixed-radix and real-packing passes of pocketfft (u = 2^-53); the l1 error of the M useful
  entries is at most sqrt(M) times that. This bound is the one *assumption* of the float engine
  (the arb engine needs none); products with a short factor use direct summation with the
  rigorous bound gamma_n ||a||_1 ||b||_1. Errors propagate through products as
  E(ab) <= E_a (||b_hat||_1 + E_b) + ||a_hat||_1 E_b + (fresh error); negative FFT noise is
  clamped to 0, which cannot increase the distance to a non-negative measure. The final sum
  sum c_hat_n f(L_n) is formed with f evaluated from Arb enclosures of e^{eps - L} (one per block,
  times Arb enclosures of e^{-j step}), IEEE products and an explicit summation error term,
  so delta evaluation is rigorous given only IEEE-754 basic operations.
  Default for discretised PLDs, where the grid holds millions of points.
- ``"float"``, one pass (:mod:`accounting._privacy_loss._pld_fft_power`): a composition of float releases
  (self-composition and heterogeneous composition of sides without float error) is formed as
  dp_accounting forms one, by one forward FFT per release, an elementwise power and one inverse
  FFT on a cyclic window with certified Chernoff tails, and certified by a componentwise error
  analysis read through an exponentially tilted pass: the FFT error reaches delta(eps) scaled by
  a Chernoff bound of the tail at eps (about delta itself), so the certified eps is within float
  noise of the exact eps of the discretised PLD (below dp_accounting's estimate for the Laplace
  and mixed compositions of issue #12). Repeated squaring remains for everything else.

Searching eps(delta)
--------------------
delta(eps) is non-increasing in eps. A float estimate from suffix sums (sum_{L_n > eps} c_n and
a log-sum-exp of c_n e^{-L_n}) locates eps* with estimated delta(eps*) = delta by bisection;
eps* itself is then *certified* (certified delta(eps) <= delta), and moved up by steps growing
geometrically from 1e-13 eps* until it is. So ``epsilon`` is an eps whose certified delta is
<= delta, within the certified error (and ~1e-13 relative) of the smallest such eps on this PLD. The lower bound is searched the
same way (largest eps whose certified lower delta is > delta, so the true eps(delta) exceeds it).
If the +inf atom alone exceeds delta, eps = inf.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Sequence

import numpy as np
import scipy.fft
from flint import arb, arb_poly

from .._core._certified import DEFAULT_PRECISION, exact, lower_float, upper_float, working_precision
from .._core._mechanism_base import Mechanism
from .._core._pairs import IntegerPair
from .._core._result import Result
from ._pld_continuous import MonotoneLossPair, continuous_loss_pair, default_discretisation, monotone_loss_directions
from ._pld_fft_power import Factor, PowerRecipe, combined, powered
from ._pld_measure import (
    _SUBNORMAL,
    _certified_powers,
    _U,
    DEFAULT_DISCRETISATION,
    DEFAULT_TAIL_MASS,
    DEFAULT_TRUNCATION,
    _as_exact_real,
    _Direction,
    _float_up,
    _floats_of_balls,
    _is_neg_inf,
    _Side,
    _step_key,
    _sum_lower,
    _sum_upper,
)
from .._core._renamed import renamed_keywords
from .._core._validation import (
    AccountingError,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_probability,
)

__all__ = [
    "PrivacyLossDistribution",
    "pld_delta",
    "pld_epsilon",
]

_BLOCK = 2048
_SPARSE_PAIRS = 4_000_000
_MAX_LATTICE_POINTS = 4_000_000
_DIRECT_CONVOLUTION = 256


def _fft_error_l2(n_fft: int, a1: float, a2: float, b1: float, b2: float) -> float:
    """The (assumed standard) l2 forward-error bound of an FFT convolution (module docstring)."""
    m = math.ceil(math.log2(max(n_fft, 2))) + 2
    mu = 8 * _U
    gamma4 = 4 * _U / (1 - 4 * _U)
    eta = mu + gamma4 * (math.sqrt(2) + mu)
    rho = m * eta / (1 - m * eta)
    bound = (2 * rho + 3 * _U) * a2 * b1 + rho * a1 * b2 + 2 * rho * rho * math.sqrt(n_fft) * a2 * b2
    return 4.0 * bound * (1 + 1e-10)


def _norms(v: np.ndarray) -> tuple[float, float]:
    n = len(v)
    l1 = _sum_upper(v)
    l2 = _float_up(math.sqrt(_sum_upper(v * v) * (1 + 4 * _U)) * (1 + 4 * _U)) + n * 0.0
    return l1, l2


def _convolve_floats(a: np.ndarray, b: np.ndarray, square: bool) -> tuple[np.ndarray, float]:
    """(z_hat, bound) with ||z_hat - a*b||_1 <= bound; z_hat clamped at 0."""
    na, nb = len(a), len(b)
    m_out = na + nb - 1
    a1, a2 = _norms(a)
    b1, b2 = (a1, a2) if square else _norms(b)
    ia = np.flatnonzero(a)
    ib = ia if square else np.flatnonzero(b)
    if min(na, nb) <= _DIRECT_CONVOLUTION or len(ia) * len(ib) <= _SPARSE_PAIRS:
        # direct summation: entry n sums at most min(nnz_a, nnz_b) products, in any order
        if len(ia) * len(ib) <= _SPARSE_PAIRS:
            pos = (ia[:, None] + ib[None, :]).ravel()
            val = (a[ia][:, None] * b[ib][None, :]).ravel()
            z = np.bincount(pos, weights=val, minlength=m_out)[:m_out]
        else:
            z = np.convolve(a, b)
        n = min(len(ia), len(ib)) + 2
        bound = (n * _U / (1 - n * _U)) * a1 * b1 * (1 + 1e-10)
    else:
        n_fft = scipy.fft.next_fast_len(m_out, real=True)
        fa = scipy.fft.rfft(a, n_fft)
        fb = fa if square else scipy.fft.rfft(b, n_fft)
        z = scipy.fft.irfft(fa * fb, n_fft)[:m_out]
        bound = math.sqrt(m_out) * _fft_error_l2(n_fft, a1, a2, b1, b2)
    np.maximum(z, 0.0, out=z)
    return z, _float_up(bound)


#: Heavy entries (atoms) of each factor convolved directly by :func:`_convolve_split`.
_SPLIT_ATOMS = 16
_SPLIT_MAX_LENGTH = 1 << 18


def _convolve_split(a: np.ndarray, b: np.ndarray, square: bool) -> tuple[np.ndarray, float]:
    """(z_hat, bound) like :func:`_convolve_floats`, with the heaviest entries taken out first.

    The FFT error bound grows with the factors' l2 norms, which a few heavy entries dominate (the
    atoms of a Laplace or randomized-response PLD and their compositions). With A, B the
    ``_SPLIT_ATOMS`` largest entries of a, b and a', b' the rest (an exact split: each entry goes
    to one part), a * b = A * b + a' * B + a' * b'. The first two are direct sums (shifted adds),
    the last an FFT of small-norm vectors. Each entry of z_hat is a float sum of at most
    2 _SPLIT_ATOMS + 1 non-negative terms (products rounded once), so its error is at most
    gamma_{2m+3} times the exact sum of those terms, plus the FFT bound of a' * b'."""
    na, nb = len(a), len(b)
    m = _SPLIT_ATOMS
    if min(na, nb) <= max(_DIRECT_CONVOLUTION, 4 * m) or na + nb > _SPLIT_MAX_LENGTH:
        # long factors: the shifted adds would cost more than the FFT; the early (short) products
        # matter most anyway, since an error made there is carried through every later squaring
        return _convolve_floats(a, b, square)
    ia = np.argpartition(a, -m)[-m:]
    ib = ia if square else np.argpartition(b, -m)[-m:]
    heavy = float(np.dot(a[ia], a[ia]))
    if heavy < 0.5 * float(np.dot(a, a)):
        return _convolve_floats(a, b, square)
    ar = a.copy()
    ar[ia] = 0.0
    br = ar if square else b.copy()
    if not square:
        br[ib] = 0.0
    if not (ar.any() and br.any()):  # every mass is an atom: nothing left for the FFT
        rest, fft_bound = np.zeros(na + nb - 1), 0.0
    else:
        rest, fft_bound = _convolve_floats(ar, br, square)
    z = np.array(rest, dtype=np.float64)
    for i in ia:
        if a[i] != 0.0:
            z[i : i + nb] += a[i] * b
    for j in ib:
        if b[j] != 0.0:
            z[j : j + na] += b[j] * ar
    gamma = (2 * m + 3) * _U / (1 - (2 * m + 3) * _U)
    terms = _sum_upper(a[ia]) * _sum_upper(b) + _sum_upper(b[ib]) * _sum_upper(ar) + _sum_upper(rest) + fft_bound
    bound = fft_bound + gamma * terms * (1 + 1e-10)
    np.maximum(z, 0.0, out=z)
    return z, _float_up(bound)


def _multiply(s1: _Side, s2: _Side) -> _Side:
    """The convolution of two sides of the same bound direction (no truncation)."""
    if s1.engine != s2.engine:
        s1, s2 = s1.to_float(), s2.to_float()
    m1, m2 = s1.finite_mass(), s2.finite_mass()
    # pairs of outcomes: finite x finite is the product below; a genuine +inf atom with a finite
    # or genuine outcome is genuine; any pair with a truncated outcome is truncated (and a pair
    # with a moved outcome is moved: the effect of a truncation scales by the other's mass)
    inf = s1.inf * m2 + s2.inf * m1 + s1.inf * s2.inf
    if s1.upper:
        inf = arb(0).union(inf.upper())
        total1, total2 = m1 + s1.inf + s1.truncated, m2 + s2.inf + s2.truncated
        truncated = arb(0).union((s1.truncated * total2 + s2.truncated * (m1 + s1.inf)).upper())
        moved = arb(0).union((s1.moved * total2 + s2.moved * total1).upper())
    else:
        inf = inf.nonnegative_part()
        truncated = s1.truncated + s2.truncated
        moved = arb(0)
    offset = s1.offset + s2.offset
    shift = s1.shift + s2.shift
    origin = s1.origin + s2.origin
    if s1.poly is not None:
        poly = s1.poly * s1.poly if s1 is s2 else s1.poly * s2.poly
        return _Side(s1.upper, offset, poly, None, 0.0, inf, shift, origin, truncated, moved=moved)
    z, fresh = _convolve_split(s1.vec, s2.vec, s1 is s2)
    # whole-measure norms of the computed measures (finite part + +inf atom)
    a1 = _sum_upper(s1.vec) + upper_float(s1.atom().abs_upper())
    b1 = _sum_upper(s2.vec) + upper_float(s2.atom().abs_upper())
    err = s1.err * (b1 + s2.err) + a1 * s2.err + fresh
    return _Side(s1.upper, offset, None, z, _float_up(err * (1 + 8 * _U)), inf, shift, origin, truncated, moved=moved)


def _cut_count(values: np.ndarray, tau: float) -> int:
    """How many leading entries have cumulative sum <= tau (cumsum on growing prefixes only)."""
    n = len(values)
    chunk = 4096
    while True:
        head = np.cumsum(values[: min(n, chunk)])
        count = int(np.searchsorted(head, tau, side="right"))
        if count < len(head) or len(head) == n:
            return count
        chunk *= 4


def _truncate(side: _Side, tau: float) -> _Side:
    """Drop up to ``tau`` (approximate) mass from each end, pessimistically (or optimistically).

    upper side: low-end mass added to the lowest kept point, high-end mass to +inf;
    lower side: low-end mass dropped, high-end mass added to the highest kept point.
    """
    if side.poly is not None:
        coeffs = side.poly.coeffs()
        n = len(coeffs)
        if n == 0:
            return side
        approx = np.array([float(c.mid()) + float(c.rad()) for c in coeffs])
    else:
        approx = side.vec
        n = len(approx)
        if n == 0:
            return side
    # cut while the cumulative (approximate) mass stays <= tau; exact zeros are always cut
    lo_cut = _cut_count(approx, tau)
    hi_cut = _cut_count(approx[::-1], tau)
    if lo_cut + hi_cut >= n:
        keep_one = int(np.argmax(approx))
        lo_cut, hi_cut = keep_one, n - 1 - keep_one
    if lo_cut == 0 and hi_cut == 0:
        return side
    kept_lo, kept_hi = lo_cut, n - hi_cut  # kept slice [kept_lo, kept_hi)
    truncated = side.truncated
    moved = side.moved
    if side.poly is not None:
        low_mass = sum(coeffs[:lo_cut], arb(0))
        high_mass = sum(coeffs[kept_hi:], arb(0))
        kept = list(coeffs[kept_lo:kept_hi])
        if side.upper:
            kept[0] = kept[0] + low_mass
            truncated = arb(0).union((truncated + high_mass).upper())  # to +inf, counted in delta
            moved = arb(0).union((moved + low_mass).upper())
        else:
            kept[-1] = kept[-1] + high_mass
            truncated = truncated + low_mass
        return _Side(side.upper, side.offset + kept_lo, arb_poly(kept), None, 0.0, side.inf, side.shift, side.origin, truncated, moved=moved)
    vec = side.vec
    low = vec[:lo_cut]
    high = vec[kept_hi:]
    kept = vec[kept_lo:kept_hi].copy()
    err = side.err
    if side.upper:
        low_up = _sum_upper(low)
        high_up = _sum_upper(high)
        # adding the moved mass to one float: the sum and the addition each round
        old = kept[0]
        kept[0] = kept[0] + float(np.sum(low))
        err += 2 * (len(low) + 2) * _U * (low_up + old) + 2 * _SUBNORMAL
        truncated = arb(0).union((truncated + arb(high_up)).upper())  # to +inf, counted in delta
        moved = arb(0).union((moved + arb(low_up)).upper())
    else:
        high_up = _sum_upper(high)
        low_up = _sum_upper(low)
        old = kept[-1]
        kept[-1] = kept[-1] + float(np.sum(high))
        err += 2 * (len(high) + 2) * _U * (high_up + old) + 2 * _SUBNORMAL
        truncated = truncated + arb(low_up)
    return _Side(side.upper, side.offset + kept_lo, None, kept, _float_up(err), side.inf, side.shift, side.origin, truncated, moved=moved)


def _factors_of(side: _Side, step: arb):
    """The side as a product of powers of releases (accounting._privacy_loss._pld_fft_power), or None.

    Any float upper side with no float error is an exact measure (its floats and its atom) and
    so a release; a lattice origin o is folded into the
    grid as o = n0 step + r (offset + n0, every loss raised by the exact r >= 0 through the shift:
    the same measure). A side built from releases by the single-FFT route carries its recipe."""
    if side.recipe is not None:
        return side.recipe.factors
    if side.factor is not None:
        return side.factor
    if not side.upper or side.vec is None or not side.origin.is_exact():
        return None  # (an Arb side stays in the Arb engine, as asked)
    flat = side
    if flat.err != 0.0 or len(flat.vec) == 0 or not bool(side.moved == 0):
        return None
    n0 = math.floor(float((side.origin / step).mid()))
    rem = side.origin - n0 * step
    while not bool(rem >= 0):
        n0 -= 1
        rem = side.origin - n0 * step
    side.factor = (Factor(flat.vec, side.offset + n0, arb(side.inf.upper()), 1, arb((side.shift + rem).upper()), arb(side.truncated.upper())),)
    return side.factor


def _side_of_recipe(factors, step: arb) -> _Side | None:
    """The untilted single-FFT pass as a float side carrying its recipe (None if too large)."""
    try:
        recipe = PowerRecipe.build(factors, float(step.mid()), step)
    except (ArithmeticError, ValueError, OverflowError):  # extreme losses: repeated squaring instead
        return None
    if recipe.too_large():
        return None
    return _RecipeSide(recipe, arb(recipe.shift.upper()))


def _compose_upper(s1: _Side, s2: _Side, tau: float, step: arb) -> _Side:
    """The composition of two upper sides: one FFT pass when both are products of releases."""
    f1, f2 = _factors_of(s1, step), _factors_of(s2, step)
    if f1 is not None and f2 is not None:
        fast = _side_of_recipe(combined(f1, f2), step)
        if fast is not None:
            return fast
    return _truncate(_multiply(s1, s2), tau)


def _power(side: _Side, k: int, tau: float, step: arb | None = None) -> _Side:
    """k-fold self-convolution: one FFT pass for a product of releases (``step`` given), else
    binary powering, truncating after every product."""
    if step is not None and k > 1:
        factors = _factors_of(side, step)
        if factors is not None:
            fast = _side_of_recipe(powered(factors, k), step)
            if fast is not None:
                return fast
    result: _Side | None = None
    base = side
    while True:
        if k & 1:
            result = base if result is None else _truncate(_multiply(result, base), tau)
        k >>= 1
        if not k:
            break
        base = _truncate(_multiply(base, base), tau)
    if result is None:  # only for k < 1, which the public callers refuse
        raise AccountingError("k", k, "an integer >= 1")
    return result


def _lower_factors(side: _Side, step: arb):
    """A lower side as one release of the single-FFT route: its floats (lower endpoints: exact
    values of a dominated measure), the +inf atom dropped (dominated still), the lattice origin
    folded into the offset and the remainder r into the recipe's shift, which then holds r - s
    (every grid loss of a lower side is lowered by its shift s)."""
    if side.factor is not None:
        return side.factor
    if side.upper or side.vec is None or side.err != 0.0 or len(side.vec) == 0 or not side.origin.is_exact():
        return None
    n0 = math.floor(float((side.origin / step).mid()))
    rem = side.origin - n0 * step
    side.factor = (Factor(side.vec, side.offset + n0, arb(0), 1, rem - side.shift),)
    return side.factor


def _lower_side_of(factors, step: arb) -> _Side | None:
    """The composition of lower releases in one untilted FFT pass, as a lower side: the cyclic
    result y_hat (clamped at 0) carries every mass of the composition on the window plus the mass
    wrapped in from outside it, and its FFT error; so sum y_hat f - ||y_hat - y||_1 - W, with W
    the Chernoff bounds of the mass outside the window (f <= 1), is at most the true sum (y >=
    c pointwise only through the wrapped mass, and max(y_hat, 0) <= c + |y_hat - y| + wrap).
    Both are put in the side's l1 error, which a lower side subtracts. None when too large."""
    try:
        recipe = PowerRecipe.build(factors, float(step.mid()), step)
    except (ArithmeticError, ValueError, OverflowError):
        return None
    if recipe.too_large():
        return None
    with working_precision(DEFAULT_PRECISION):
        passed = recipe.tilted(0.0)
        wrapped = upper_float(recipe.tails[0] + recipe.tails[1])
    err = _float_up((math.sqrt(len(passed.vec)) * passed.err_l2 + wrapped) * (1 + 4 * _U))
    truncated = arb(wrapped)
    return _Side(False, recipe.window[0], None, passed.vec, err, arb(0), -recipe.shift, arb(0), truncated)


def _compose_lower(s1: _Side, s2: _Side, tau: float, step: arb) -> _Side:
    """The composition of two lower sides: one untilted FFT pass when both are releases."""
    f1, f2 = _lower_factors(s1, step), _lower_factors(s2, step)
    if f1 is not None and f2 is not None:
        fast = _lower_side_of(combined(f1, f2), step)
        if fast is not None:
            fast.factor = combined(f1, f2)
            return fast
    return _truncate(_multiply(s1, s2), tau)


def _power_lower(side: _Side, k: int, tau: float, step: arb) -> _Side:
    """k-fold self-convolution of a lower side: one untilted FFT pass (issue 23, item 10), else
    repeated squaring."""
    factors = _lower_factors(side, step) if k > 1 else None
    if factors is not None:
        fast = _lower_side_of(powered(factors, k), step)
        if fast is not None:
            fast.factor = powered(factors, k)
            return fast
    return _power(side, k, tau)


# ----------------------------------------------------------------------------------------------
# delta(eps) on one side


def _powers_table(step: arb, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Certified float lower/upper bounds of e^{-j step}, j = 0..count-1."""
    return _certified_powers((-step).exp(), count)


def _sum_upper_tight(values: np.ndarray) -> float:
    """A float >= the exact sum of non-negative floats, within a few ulps of it for any length:
    :func:`_sum_upper`'s a-priori bound (2 (n + 2) u relative, for any summation order) grows with
    the number of terms, so a finer grid made the certified delta of one release looser (the
    mixture-of-Gaussians release of dp_accounting's test at sigma = 2: 4.3e-13 over the exact
    connect-the-dots value at h = 8e-4, 3.4e-12 at h = 1e-4, against 1e-16 .. 2e-16 from the
    masses themselves). :func:`math.fsum` returns the exact sum of the floats correctly rounded
    (Shewchuk's partials; the docs allow an error in the last bit on builds with double rounding),
    so s (1 + 4u) rounded up once more is >= the exact sum; the smaller of both bounds is kept."""
    coarse = _sum_upper(values)
    try:
        s = math.fsum(memoryview(np.ascontiguousarray(values, dtype=np.float64)))  # Python floats without a list: 1.7x faster than tolist()
    except OverflowError:
        return coarse
    if not math.isfinite(s):
        return coarse
    return min(coarse, _float_up(s * (1 + 4 * _U) + 2 * _SUBNORMAL_FLOAT))


_SUBNORMAL_FLOAT = 5e-324


class _Evaluator:
    """Certified sum_n c_n f_eps(L_n) for one side, plus a fast float estimate for searching."""

    def __init__(self, side: _Side, step: arb, step_float: float) -> None:
        self.side = side
        self.step = step
        self.step_float = step_float
        self.vec, self.err = side.endpoint_vector()
        self.inf = side.inf
        # an upper side's truncated mass sits at +inf beside the genuine atom: both count in delta
        self.atom = side.atom()
        # grid loss of entry i, corrected by the shift: L_i = base + i * step
        if side.upper:
            self.base = side.origin + side.offset * step + side.shift
        else:
            self.base = side.origin + side.offset * step - side.shift
        self.base_float = float(self.base.mid())
        self._suffix: tuple[np.ndarray, np.ndarray] | None = None
        self._table: tuple[np.ndarray, np.ndarray] | None = None
        self.estimate_err = self.err  # the error the float estimate adds (upper side)

    # ---- certified -------------------------------------------------------------------------

    def certified(self, eps: arb) -> float:
        """Upper side: a float >= delta_side(eps); lower side: a float <= it."""
        vec = self.vec
        n = len(vec)
        upper = self.side.upper
        t = eps - self.base  # f(L_i) = (1 - e^{t - i step})_+
        # first index whose term can be positive: i step > t
        i0 = math.floor(float(t.mid()) / self.step_float) - 1
        i0 = max(0, min(n, i0))
        # every i < i0 must satisfy i step <= t (then f = 0), certified
        while i0 > 0 and not bool((t - (i0 - 1) * self.step).lower() >= 0):
            i0 -= 1
        total = 0.0
        count = n - i0
        if count > 0:
            if self._table is None:
                # blocks short enough that e^{-j step} does not underflow inside one (a huge lattice
                # step, e.g. a discrete Gaussian with sigma << Delta, would otherwise zero the
                # table and make every f_eps its worst case, 1)
                self._table = _powers_table(self.step, min(_BLOCK, n, max(1, int(600.0 / max(self.step_float, 1e-300)))))
            g_lo, g_hi = self._table
            block = len(g_lo)
            # per block of the table's length, e^{t - start step} in Arb (rounded down for the
            # upper side, up for the lower) times the table: every product formed in one numpy
            # pass (a loop of short ones cost more in overhead than in arithmetic)
            starts = range(i0, n, block)
            rounded = lower_float if upper else upper_float
            factors = np.repeat([rounded((t - start * self.step).exp()) for start in starts], block)[:count]
            table = np.tile(g_lo if upper else g_hi, len(starts))[:count]
            with np.errstate(over="ignore", invalid="ignore"):  # inf * 0 (an underflowed table entry)
                x = factors * table
            if upper:
                # f <= 1 holds: a NaN (inf * 0) passes np.maximum and becomes 1 in np.fmin
                f = np.fmin(1.0, np.maximum(0.0, 1.0 - x) + 3 * _U)
            else:
                f = np.fmax(0.0, (1.0 - x) - 3 * _U)  # NaN (inf * 0) becomes 0
            terms = vec[i0:] * f
            # products c*f each round (relative u): folded into the summation margin
            # (the lower side keeps the a-priori bound: a tighter one would move every recorded delta_lower)
            total = _sum_upper_tight(terms * (1 + 2 * _U)) if upper else _sum_lower(terms * (1 - 2 * _U))
        if upper:
            return upper_float(arb(total) + self.atom.upper() + arb(self.error_term(eps)))
        return max(0.0, lower_float(arb(total) + self.inf.lower() - arb(self.err)))

    def error_term(self, eps: arb) -> float:
        """A bound of |sum_n (c_n - c_hat_n) f_eps(L_n)| (the l1 error here)."""
        return self.err

    def floor(self) -> float:
        """A float >= lim_{eps -> inf} of the certified delta(eps) (the +inf atoms and errors)."""
        return upper_float(self.atom.upper() + arb(self.err))

    # ---- estimate (not certified; used to locate eps before certifying) --------------------

    def estimate(self, eps: float) -> float:
        vec = self.vec
        n = len(vec)
        if self._suffix is None:
            # suffix sums from the first non-zero entry on (a tilted pass is 0 below loss 0)
            first = int(np.argmax(vec > 0)) if n and vec.any() else n
            tail = vec[first:]
            losses = self.base_float + (first + np.arange(len(tail))) * self.step_float
            with np.errstate(divide="ignore"):
                logw = np.log(tail) - losses
            s0 = np.cumsum(tail[::-1])[::-1]
            s1 = np.logaddexp.accumulate(logw[::-1])[::-1] if len(tail) else logw
            self._suffix = (s0, s1, first)
        s0, s1, first = self._suffix
        i = math.floor((eps - self.base_float) / self.step_float) + 1
        i = max(0, max(0, i) - first)
        extra = float(self.atom.mid()) + (self.estimate_err if self.side.upper else -self.err)
        if i >= len(s0):
            return extra
        value = s0[i] - math.exp(min(700.0, eps + s1[i])) if math.isfinite(s1[i]) else s0[i]
        return max(0.0, value) + extra

    def search(self, delta: float) -> float:
        """An eps (float) with estimated delta(eps) ~= delta; 0 if delta(0) <= delta already."""
        if self.estimate(0.0) <= delta:
            return 0.0
        lo = 0.0
        hi = max(1.0, self.base_float + len(self.vec) * self.step_float + 1.0)
        if self.estimate(hi) > delta:
            return math.inf
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            if self.estimate(mid) > delta:
                lo = mid
            else:
                hi = mid
        return hi


class _RecipeEvaluator:
    """Certified delta(eps) of a side built by one FFT pass (:mod:`accounting._privacy_loss._pld_fft_power`).

    delta(eps) is read from a pass tilted by the Chernoff-optimal lambda at eps (the untilted
    pass when lambda = 0 or when the tilt overflows); eps(delta) is searched and certified on one
    pass tilted by the lambda of the Chernoff (RDP-style) bound at delta. Every pass bounds the
    same dominating measure, so each choice of lambda is sound; it only moves the error term."""

    def __init__(self, side: "_RecipeSide", step: arb, step_float: float) -> None:
        self.side = side
        self.recipe = side.recipe
        self.step = step
        self.step_float = step_float
        self._passes: dict[float, _Evaluator] = {}
        self._lambdas: dict[float, float] = {}

    def at(self, lam: float) -> _Evaluator:
        try:
            p = self.recipe.tilted(lam)
        except ArithmeticError:  # a tilt too steep for the window: the untilted pass
            if lam == 0.0:
                raise
            p = self.recipe.tilted(0.0)
        ev = self._passes.get(p.lam)
        if ev is None:
            side = _Side(True, p.offset, None, p.vec, 0.0, arb(0).union(p.infinite.upper()), self.side.shift, arb(0), p.truncated)
            ev = _Evaluator(side, self.step, self.step_float)
            ev.error_term = lambda eps, p=p: p.err_on_delta(eps, self.step, self.side.shift)  # type: ignore[method-assign]
            ev.floor = lambda p=p: upper_float(p.atom.upper())  # type: ignore[method-assign]
            ev.estimate_err = 0.0  # the search locates eps on the floats; certification adds errors
            self._passes[p.lam] = ev
        return ev

    def _worth_tilting(self, lam: float, eps: float) -> float:
        """lam, or 0 if the untilted pass's error factor sqrt(#points above eps) is estimated
        smaller than the tilted one, Z e^{-lam eps} sqrt(I(lam)/h + (lam e)^-2) (a choice of pass,
        not a bound: both are certified)."""
        if lam <= 0.0:
            return 0.0
        b, n = self.recipe.window
        above = max(1.0, n - max(0.0, eps / self.step_float - b))
        integral = 1 / (2 * lam) - 2 / (2 * lam + 1) + 1 / (2 * lam + 2)
        log_tilted = self.recipe.log_chernoff(lam) - lam * eps + 0.5 * math.log(max(integral, 0.0) / self.step_float + (lam * math.e) ** -2)
        return lam if log_tilted < 0.5 * math.log(above) else 0.0

    def pass_for(self, eps: arb) -> _Evaluator:
        """The pass delta(eps) is read from."""
        # the recipe's losses are unshifted (n h): its lambdas are chosen at eps - shift (a lattice
        # origin folded into the shift moves every loss by up to a step per release)
        key = float(f"{float(eps.mid()) - float(self.side.shift.mid()):.4g}")  # nearby eps share one lambda (and one pass)
        lam = self._lambdas.get(key)
        if lam is None:
            lam = self._lambdas[key] = self._worth_tilting(self.recipe.best_lambda(key), key)
        return self.at(lam)

    def certified(self, eps: arb) -> float:
        return self.pass_for(eps).certified(eps)

    def for_delta(self, delta: float) -> _Evaluator:
        lam = self.recipe.rdp_lambda(delta)
        # the Chernoff eps at that lambda locates eps(delta) roughly (an upper bound of it)
        eps_guess = (self.recipe.log_chernoff(lam) + math.log(1 / delta)) / lam  # (unshifted losses, as the lambdas)
        return self.at(self._worth_tilting(lam, eps_guess))


class _RecipeSide(_Side):
    """A float upper side given by a recipe; its untilted pass (vec, err) is computed on demand,
    since eps(delta) and delta(eps) are read from tilted passes."""

    __slots__ = ("_plain",)

    def __init__(self, recipe, shift: arb) -> None:
        self._plain = None
        infinite = arb(upper_float(recipe.inf_atom))
        truncated = arb(upper_float(recipe.trunc_atom + recipe.tails[0] + recipe.tails[1]))
        super().__init__(True, recipe.window[0], None, None, 0.0, arb(0).union(infinite.upper()), shift, arb(0), truncated, recipe)

    def _pass(self):
        if self._plain is None:
            self._plain = self.recipe.tilted(0.0)
        return self._plain

    @property  # type: ignore[override]
    def vec(self):
        return self._pass().vec

    @vec.setter
    def vec(self, value) -> None:  # _Side.__init__ stores None; the pass provides the vector
        pass

    @property  # type: ignore[override]
    def err(self):
        p = self._pass()
        return _float_up(math.sqrt(len(p.vec)) * p.err_l2 * (1 + 4 * _U))

    @err.setter
    def err(self, value) -> None:
        pass

    def length(self) -> int:
        return self.recipe.window[1]


def _evaluator_for(side: _Side, step: arb, step_float: float) -> _Evaluator:
    return _RecipeEvaluator(side, step, step_float) if side.recipe is not None else _Evaluator(side, step, step_float)


def _certified_epsilon_upper(ev: _Evaluator, delta: float, prec: int) -> tuple[float, float]:
    """(eps, certified delta(eps)) with certified delta(eps) <= delta (eps may be inf)."""
    with working_precision(prec):
        if ev.floor() > delta:
            return math.inf, 1.0
        guess = ev.search(delta)
        if math.isinf(guess):
            guess = ev.base_float + len(ev.vec) * ev.step_float + 1.0
        d0 = ev.certified(arb(0.0))
        if d0 <= delta:
            return 0.0, d0
        # start at the float estimate itself: the certified bound is then tried at eps within
        # 1e-13 relative of the estimate, and raised geometrically until it certifies
        eps = guess
        bump = max(abs(guess) * 1e-13, 1e-15)
        for _ in range(200):
            d = ev.certified(arb(eps))
            if d <= delta:
                return eps, d
            eps = eps + bump
            bump *= 4
        raise ArithmeticError("could not certify an epsilon for this delta (precision too low?)")


#: Relative distance from the true value within which a result may be called exact (the
#: planner's cross-check uses the same: accounting._core._planner)
EXACT_TOLERANCE = 1e-9


def _truncation_slack(ev: _Evaluator, eps: arb) -> float:
    """A float >= the amount by which the upper side's certified delta(eps) may exceed the delta
    of the same measure without its truncations, beyond rounding: the truncated and moved masses
    and the float error (once in the side, once added). (The lattice shift, a certified excess of
    the order of 2^-precision per release, is rounding here as in every exact claim; on a side
    built by one FFT pass it also holds the lattice origin, an exact part of the losses.)"""
    side = ev.side
    return upper_float(side.truncation().abs_upper() + arb(2 * ev.error_term(eps)))


def _rounding_floor(ev: _Evaluator, eps: arb, certified: float) -> float:
    """A float <= the exact sum over the side's floats and atoms behind ``certified`` (the
    evaluator's own rounding up undone: the summation margin 2(n + 3)u relative, the upper floats
    of the masses 16u relative, and the 3u added to each f_eps of the terms above eps)."""
    vec = ev.vec
    n = len(vec)
    i0 = max(0, min(n, math.floor(lower_float((eps - ev.base) / ev.step)) - 1))
    above = _sum_upper(vec[i0:]) if i0 < n else 0.0
    rel = 2 * (n + 3) * _U + 16 * _U
    return (certified - 4 * _U * above) / (1 + rel) * (1 - 4 * _U)


def _epsilon_truncation_negligible(ev: _Evaluator, eps: float, delta: float, prec: int) -> bool:
    """True when the truncation-free measure's eps(delta) is certified above
    eps (1 - EXACT_TOLERANCE): so truncation did not move the reported eps beyond that."""
    if eps == 0.0:
        return True  # nothing can be below 0
    if not math.isfinite(eps):
        return False
    with working_precision(prec):
        e = arb(eps * (1 - EXACT_TOLERANCE))
        floor = _rounding_floor(ev, e, ev.certified(e))
        return floor - _truncation_slack(ev, e) > delta


def _delta_truncation_negligible(ev: _Evaluator, eps: arb, delta_up: float) -> bool:
    """True when truncation (and the float error) cannot account for more than EXACT_TOLERANCE
    of the certified delta(eps)."""
    return _truncation_slack(ev, eps) + (delta_up - _rounding_floor(ev, eps, delta_up)) <= EXACT_TOLERANCE * delta_up


def _certified_epsilon_lower(ev: _Evaluator, delta: float, prec: int) -> float:
    """A float eps with certified lower delta(eps) > delta (so the true eps(delta) > eps), or 0."""
    with working_precision(prec):
        if lower_float(ev.inf.lower() - arb(ev.err)) > delta:
            return math.inf
        guess = ev.search(delta)
        if math.isinf(guess):
            return 0.0
        eps = guess * (1 - 1e-10) - 1e-12
        bump = max(abs(guess) * 1e-9, 1e-12)
        for _ in range(200):
            if eps <= 0:
                return 0.0
            if ev.certified(arb(eps)) > delta:
                return eps
            eps -= bump
            bump *= 4
        return 0.0


# ----------------------------------------------------------------------------------------------
# construction from an IntegerPair


def _resolve_pair(subject: object) -> IntegerPair:
    if isinstance(subject, IntegerPair):
        return subject
    pair = subject.output_pair() if isinstance(subject, Mechanism) else None
    if isinstance(pair, IntegerPair):
        return pair
    raise AccountingError(
        "mechanism_pair",
        subject,
        "an IntegerPair or a mechanism whose output_pair() returns one",
    )


def _loss_atoms(
    pair: IntegerPair, forward: bool, lo: int, hi: int, logs: list[tuple[arb, arb]]
) -> tuple[list[tuple[arb, arb]], arb, arb]:
    """(losses with masses, Q=0 mass, certified tail bound) for one direction on [lo, hi]."""
    atoms: list[tuple[arb, arb]] = []
    zero_q = arb(0)
    for x, (lp, lq) in zip(range(lo, hi + 1), logs):
        a, b = (lp, lq) if forward else (lq, lp)
        if _is_neg_inf(a):
            continue
        if not a.is_finite():
            raise ArithmeticError(f"log-mass enclosure at {x} is not finite")
        mass = a.exp()
        if _is_neg_inf(b):
            zero_q = zero_q + mass
            continue
        atoms.append((a - b, mass))
    tail = pair.tail_p(lo, hi) if forward else pair.tail_q(lo, hi)
    return atoms, zero_q, tail


def _detect_lattice(all_losses: Sequence[arb]) -> tuple[arb, str] | None:
    """An exact dyadic step on which every loss (nearly) sits, or None. Certification is by the
    shift bound computed afterwards, never by this heuristic."""
    mids = sorted({float(L.mid()) for L in all_losses})
    distinct: list[float] = []
    for v in mids:
        if not distinct or v - distinct[-1] > 1e-9 * (1 + abs(v)):
            distinct.append(v)
    if len(distinct) == 1:
        return arb(1), "d:1"
    gaps = [b - a for a, b in zip(distinct, distinct[1:])]
    g = min(gaps)
    span = distinct[-1] - distinct[0]
    for m in range(1, 13):
        step = g / m
        if span / step > _MAX_LATTICE_POINTS:
            return None
        ok = all(abs((v - distinct[0]) / step - round((v - distinct[0]) / step)) < 1e-6 for v in distinct)
        if ok:
            # refine the step at full precision from the widest pair of losses
            lo_ball = min(all_losses, key=lambda L: float(L.mid()))
            hi_ball = max(all_losses, key=lambda L: float(L.mid()))
            count = round(span / step)
            refined = (hi_ball - lo_ball) / count
            step_exact = arb(refined.mid())
            m_, e_ = step_exact.man_exp()
            return step_exact, f"d:{int(m_)}:{int(e_)}"
    return None


def _lattice_index(loss: arb, origin: arb, step: arb) -> tuple[int, arb, arb]:
    """Nearest lattice index and the certified excesses sup(L - G), sup(G - L)."""
    n = round(float(((loss - origin) / step).mid()))
    grid = origin + n * step
    return n, (loss - grid).upper(), (grid - loss).upper()


def _bounds_of_balls(balls: Sequence[arb]) -> tuple[np.ndarray, np.ndarray]:
    """Certified floats lo <= every point of each (finite) ball <= hi, vectorised (the margins of
    :func:`_floats_of_balls`, both ways)."""
    n = len(balls)
    mids = np.empty(n)
    rads = np.empty(n)
    for i, b in enumerate(balls):
        mids[i] = float(b.mid())
        rads[i] = float(b.rad())
    margin = 8 * _U * (np.abs(mids) + rads) + 4 * _SUBNORMAL
    return mids - rads - margin, mids + rads + margin


#: Grid steps the spread handles (its weights come from a Taylor series certified on [0, 1]).
MAX_SPREAD_STEP = 1.0
_E_TERMS = 22


def _one_minus_exp(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Certified floats lo <= 1 - e^{-x} <= hi for 0 <= x <= 1, from IEEE basic operations only.

    Nested Horner form 1 - e^{-x} = x q_1, q_k = 1 - (x/(k+1)) q_{k+1}, q_K = 1 (K = 22): every
    q_k lies in [1/2, 1] and each step contracts the error of the next by x/(k+1) <= 1/2 while
    adding at most 2.5u, so |q_1 - fl(q_1)| <= 5u and the product x q_1 is within 11u relative;
    truncating q_K costs at most 2 x^{K-1}/K! <= 2/22! < 1e-20 relative. Both margins are taken
    with room to spare (16u + 1e-20)."""
    q = np.ones_like(x)
    for k in range(_E_TERMS - 1, 0, -1):
        q = 1.0 - (x / (k + 1)) * q
    value = x * q
    rel = 16 * _U + 1e-20
    return value * (1 - rel), value * (1 + rel)


def _grid_steps(x: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """(j, r): integers j and floats r >= 0 with j h + r >= x exactly (reals) and r < h + tiny,
    r as small as the floats allow: the grid point below x and an upper bound of the excess."""
    j = np.floor(x / h)
    for _ in range(3):  # the float quotient may be off by one either way: settle j
        jh = j * h
        r = x - jh
        low = r < 0
        high = r >= h
        if not (low.any() or high.any()):
            break
        j = j - low + high
    jh = j * h
    r = x - jh
    # fl(j h) and fl(x - fl(j h)) each round: |r - (x - j h)| <= u |j h| + u |r| (+ subnormals)
    r = r + _U * (np.abs(jh) + np.abs(r)) * 1.01 + 4 * _SUBNORMAL
    bump = r >= h
    if bump.any():  # r in [h, h + tiny): one grid point up (h - r exact by Sterbenz)
        j = j + bump
        r = np.where(bump, np.maximum(r - h, 0.0) + 4 * _SUBNORMAL, r)
    return j.astype(np.int64), r


def _accumulate(index: np.ndarray, weight: np.ndarray, upper: bool) -> tuple[int, np.ndarray]:
    """(offset, vec): the weights summed per grid index, rounded up (upper) or down: a bin fed
    by n entries is a float sum of n non-negative terms, within gamma_n (< 2(n + 2)u) of exact."""
    if len(index) == 0:
        return 0, np.zeros(0)
    offset = int(index.min())
    pos = index - offset
    size = int(pos.max()) + 1
    vec = np.bincount(pos, weights=weight, minlength=size)
    count = np.bincount(pos, minlength=size)
    rel = 2 * (count + 2) * _U
    vec = vec * (1 + rel) + (count > 0) * _SUBNORMAL if upper else np.maximum(vec * (1 - rel), 0.0)
    return offset, vec


def _spread(losses_up: np.ndarray, masses_up: np.ndarray, h: float) -> tuple[int, np.ndarray]:
    """Connect-the-dots onto the grid h Z: each atom (mass c at loss L <= losses_up) is split
    between the grid points j h <= L' < (j + 1) h around L' = j h + r >= L (the certified upper
    bound of :func:`_grid_steps`) as

        b = c (1 - e^{-r}) / (1 - e^{-h})  at (j + 1) h,     a = c - b  at j h,

    which keeps its P-mass c and its Q-mass c e^{-L'} (Doroshenko et al. 2022's split). In the
    variable y = e^{-L} this is a mean-preserving spread of the atom, and
    (1 - e^{eps} y Y)_+ is convex in y for any independent Y >= 0 (the rest of a composition),
    so by Jensen the split can only raise delta(eps), of this release and of any composition it
    enters (the argument of the module docstring, in the convex order instead of the stochastic
    one); raising L to L' first is a stochastic increase. Weights are taken as upper floats (a
    pointwise larger measure: larger delta again). The error is second order in h per release
    (rounding every loss up costs first order: k h / 2 in eps after k releases)."""
    if h > MAX_SPREAD_STEP:
        raise AccountingError("discretisation", h, f"a grid step in (0, {MAX_SPREAD_STEP:g}] (the spread's certified weights)")
    if len(losses_up) == 0:
        return 0, np.zeros(0)
    j, r = _grid_steps(losses_up, h)
    e_lo_h, e_hi_h = _one_minus_exp(np.array([h]))
    e_lo_r, e_hi_r = _one_minus_exp(np.minimum(r, h))
    b = masses_up * (e_hi_r / e_lo_h[0]) * (1 + 4 * _U)
    a = masses_up * np.maximum(e_hi_h[0] - e_lo_r, 0.0) / e_lo_h[0] * (1 + 4 * _U)
    return _accumulate(np.concatenate([j, j + 1]), np.concatenate([a, b]), True)


def _round_down_onto(losses_lo: np.ndarray, masses_lo: np.ndarray, h: float) -> tuple[int, np.ndarray]:
    """The optimistic twin: each atom moved down to the grid point j h <= its loss (certified:
    j from the quotient lowered by its rounding error), masses as lower floats."""
    if len(losses_lo) == 0:
        return 0, np.zeros(0)
    q = losses_lo / h
    j = np.floor(q - (4 * _U * np.abs(q) + 1e-12)).astype(np.int64)
    return _accumulate(j, masses_lo, False)


def _side_losses(side: _Side, step: arb) -> tuple[np.ndarray, np.ndarray]:
    """Certified float bounds (lo, hi) of the grid losses origin + (offset + i) step (+/- shift)."""
    base = side.origin + side.offset * step + (side.shift if side.upper else -side.shift)
    b_lo, b_hi = lower_float(base), upper_float(base)
    s_lo, s_hi = lower_float(step), upper_float(step)
    n = side.length()
    i = np.arange(n, dtype=np.float64)
    mid = 0.5 * (b_lo + b_hi) + i * (0.5 * (s_lo + s_hi))
    err = 0.5 * (b_hi - b_lo) + i * (0.5 * (s_hi - s_lo)) + 4 * _U * (np.abs(mid) + i * abs(s_hi) + abs(b_hi)) + 4 * _SUBNORMAL
    return mid - err, mid + err


def _regrid_side(side: _Side, step: arb, h: float) -> _Side:
    """The side on the grid h Z (origin 0, no shift): spread (upper) or rounded down (lower)."""
    vec, err = side.endpoint_vector()
    lo, hi = _side_losses(side, step)
    keep = vec > 0
    if side.upper:
        offset, out = _spread(hi[keep], vec[keep], h)
        err = _float_up(err * (1 + 1e-12))  # the spread maps l1 errors to at most themselves (+ weight rounding)
        # (known, left as is: for err = 0 this is 5e-324, not 0, which bars the regridded release from
        # the single-FFT composition (_factors_of needs err == 0); the mixture-of-Gaussians test
        # of dp_accounting at a 14 s budget then gives 1.0000048e-6 instead of 9.9999939e-7. Keeping
        # 0 at 0 is sound (the spread rounds its weights up) but loosens 3 golden entries by <= 2e-12)
    else:
        offset, out = _round_down_onto(lo[keep], vec[keep], h)
    return _Side(side.upper, offset, None, out, err, side.inf, arb(0), arb(0), side.truncated, moved=side.moved)


def _discretised_side(atoms, zero_q: arb, tail: arb, upper: bool, h: float, engine: str) -> _Side:
    """A side on the grid h Z from atoms off any lattice: connect-the-dots spread (upper side) or
    rounded down (lower side), :func:`_spread`."""
    losses = [L for L, _ in atoms]
    masses = [m for _, m in atoms]
    lo, hi = _bounds_of_balls(losses) if atoms else (np.zeros(0), np.zeros(0))
    if upper:
        offset, vec = _spread(hi, _floats_of_balls(masses, upper=True) if atoms else np.zeros(0), h)
        inf = arb(0).union(zero_q.upper())  # genuine: Q = 0 < P
        truncated = arb(0).union(tail.upper())  # the outputs outside the window
    else:
        offset, vec = _round_down_onto(lo, _floats_of_balls(masses, upper=False) if atoms else np.zeros(0), h)
        inf = zero_q.nonnegative_part()
        truncated = arb(0)
    if engine == "arb":  # the floats are exact values of the (dominating / dominated) measure
        return _Side(upper, offset, arb_poly([arb(float(v)) for v in vec]), None, 0.0, inf, arb(0), arb(0), truncated)
    return _Side(upper, offset, None, vec, 0.0, inf, arb(0), arb(0), truncated)


def _build_side(
    indexed: list[tuple[int, arb]],
    zero_q: arb,
    tail: arb,
    upper: bool,
    shift: arb,
    origin: arb,
    engine: str,
) -> _Side:
    buckets: dict[int, arb] = {}
    for n, mass in indexed:
        buckets[n] = buckets.get(n, arb(0)) + mass
    if upper:
        inf = arb(0).union(zero_q.upper())  # genuine: Q = 0 < P
        truncated = arb(0).union(tail.upper())  # the outputs outside the window
    else:
        inf = zero_q.nonnegative_part()
        truncated = arb(0)
    offset = min(buckets) if buckets else 0
    size = max(buckets) - offset + 1 if buckets else 0
    if engine == "arb":
        coeffs = [buckets.get(offset + i, arb(0)) for i in range(size)]
        return _Side(upper, offset, arb_poly(coeffs), None, 0.0, inf, shift, origin, truncated)
    # only the occupied bins are converted (empty bins are exact zeros; a fine grid is mostly empty)
    vec = np.zeros(size)
    if buckets:
        keys = sorted(buckets)
        vec[np.asarray(keys) - offset] = _floats_of_balls([buckets[key] for key in keys], upper)
    return _Side(upper, offset, None, vec, 0.0, inf, shift, origin, truncated)


# ----------------------------------------------------------------------------------------------
# public class



class PrivacyLossDistribution:
    """The PLDs (both directions) of a discrete mechanism, with certified composition.

    Build with :meth:`from_pair`; compose with :meth:`compose` / ``+`` (heterogeneous, same grid)
    and :meth:`self_compose` (k-fold); read :meth:`delta` and :meth:`epsilon`, which return
    :class:`~accounting._core._result.Result` objects (certified upper bounds, with the optimistic lower bounds beside
    them). See the module docstring for the method and its proof of pessimism.
    """

    __slots__ = ("_directions", "_step", "_step_key", "_step_float", "_discretisation", "_precision", "_truncation", "_compositions", "_label")

    def __init__(self, directions, step, step_key, discretisation, precision, truncation, compositions, label):
        self._directions: tuple[_Direction, ...] = tuple(directions)
        self._step: arb = step
        self._step_key: str = step_key
        self._step_float = float(step.mid())
        self._discretisation = discretisation
        self._precision = precision
        self._truncation = truncation
        self._compositions = compositions
        self._label = label

    # ---- construction ----------------------------------------------------------------------

    @classmethod
    def from_pair(
        cls,
        mechanism_pair: object,
        *,
        discretisation: float | Fraction | str | None = None,
        lattice_step: float | Fraction | str | arb | None = None,
        tail_mass: float = DEFAULT_TAIL_MASS,
        truncation: float = DEFAULT_TRUNCATION,
        engine: str = "auto",
        lower_bound: bool = True,
        precision: int | None = None,
    ) -> "PrivacyLossDistribution":
        """The PLD of one release of ``mechanism_pair`` (an IntegerPair or a mechanism).

        - ``discretisation=h``: pessimistic rounding of every loss up to a multiple of h
          (and down, for the lower bound).
        - ``lattice_step=s``: the losses are multiples of s (e.g. ``Fraction(1, 20)``); checked,
          with the certified shift recorded. PLDs built on the same ``lattice_step`` (or the same
          ``h``) can be composed with each other.
        - neither: an exact lattice is detected from the loss enclosures if there is one,
          otherwise h = ``DEFAULT_DISCRETISATION``.

        ``tail_mass``: P-mass left outside the output window (goes to the +inf atom);
        ``truncation``: mass that one truncation may drop from each end after a convolution;
        ``engine``: ``"arb"``, ``"float"`` or ``"auto"`` (arb on exact lattices, float otherwise);
        ``lower_bound``: also build the optimistic twin (for ``epsilon_lower``).
        """
        # continuous mechanisms (a monotone privacy loss): connect-the-dots, accounting._privacy_loss._pld_continuous
        loss_pair = continuous_loss_pair(mechanism_pair)
        if loss_pair is not None:
            if lattice_step is not None or engine == "arb":
                raise AccountingError("lattice_step" if lattice_step is not None else "engine", lattice_step if lattice_step is not None else engine, "None / 'auto' / 'float' for a continuous mechanism (it has no lattice)")
            return cls._from_monotone_loss(loss_pair, discretisation, tail_mass, truncation, lower_bound, precision)
        return cls._from_integer_pair(_resolve_pair(mechanism_pair), discretisation, lattice_step, tail_mass, truncation, engine, lower_bound,
                                      precision, DEFAULT_DISCRETISATION)

    @classmethod
    def _from_integer_pair(cls, pair: IntegerPair, discretisation, lattice_step, tail_mass, truncation, engine, lower_bound, precision,
                           fallback: float) -> "PrivacyLossDistribution":
        """:meth:`from_pair` for an integer pair; ``fallback`` is the grid step used when neither
        ``discretisation`` nor ``lattice_step`` is given and the losses sit on no lattice."""
        check_probability("tail_mass", tail_mass)
        check_probability("truncation", truncation)
        if engine not in ("auto", "arb", "float"):
            raise AccountingError("engine", engine, "one of 'auto', 'arb', 'float'")
        if discretisation is not None and lattice_step is not None:
            raise AccountingError("lattice_step", lattice_step, "None when discretisation is given")
        h_value = None
        if discretisation is not None:
            if isinstance(discretisation, str):
                discretisation = Fraction(discretisation)
            check_positive("discretisation", discretisation)
            h_value = discretisation
        with working_precision(precision) as prec:
            fwd = pair.loss_atoms(True)
            if fwd is not None:  # the PLD in closed form: no output window, no tail
                bwd = pair.loss_atoms(False)
            else:
                lo, hi = pair.window(tail_mass)
                logs = [(pair.log_p(x), pair.log_q(x)) for x in range(lo, hi + 1)]
                fwd = _loss_atoms(pair, True, lo, hi, logs)
                bwd = _loss_atoms(pair, False, lo, hi, logs)
            all_losses = [L for L, _ in fwd[0]] + [L for L, _ in bwd[0]]
            mode = "discretised"
            step: arb
            step_key: str
            if h_value is None and lattice_step is not None:
                step = _as_exact_real("lattice_step", lattice_step)
                step_key = _step_key(lattice_step, step)
                mode = "lattice"
            elif h_value is None:
                found = _detect_lattice(all_losses) if all_losses else (arb(1), "d:1")
                if found is not None:
                    step, step_key = found
                    mode = "lattice"
                else:
                    h_value = fallback
            if mode == "discretised":
                step = exact(h_value)  # type: ignore[arg-type]
                step_key = _step_key(h_value, step)
            # "auto": float masses (upper floats of the Arb balls: exact values of a dominating
            # measure), so that compositions take the single-FFT route; "arb" keeps the balls
            chosen = "float" if engine == "auto" else engine
            directions = []
            step_float = float(step.mid())
            for name, (atoms, zero_q, tail) in (("P||Q", fwd), ("Q||P", bwd)):
                if mode == "lattice":
                    # origin: a lattice point for an explicit step, else the smallest loss
                    if lattice_step is not None or not atoms:
                        origin = arb(0)
                    else:
                        origin = arb(min(atoms, key=lambda t: float(t[0].mid()))[0].mid())
                    indexed = []
                    s_up = arb(0)
                    s_dn = arb(0)
                    for L, mass in atoms:
                        n, up_ex, dn_ex = _lattice_index(L, origin, step)
                        indexed.append((n, mass))
                        if bool(up_ex > s_up):
                            s_up = up_ex
                        if bool(dn_ex > s_dn):
                            s_dn = dn_ex
                    tolerance = step * arb(2.0**-20)  # a lattice up to ball radii; s is certified anyway
                    if not (bool(s_up < tolerance) and bool(s_dn < tolerance)):
                        raise AccountingError(
                            "lattice_step",
                            lattice_step if lattice_step is not None else step_float,
                            "a step on whose multiples every privacy loss lies",
                            "pass discretisation=h for losses off a lattice",
                        )
                    up = _build_side(indexed, zero_q, tail, True, arb(s_up.upper()), origin, chosen)
                    low = _build_side(indexed, zero_q, tail, False, arb(s_dn.upper()), origin, chosen) if lower_bound else None
                else:
                    up = _discretised_side(atoms, zero_q, tail, True, step_float, chosen)
                    low = _discretised_side(atoms, zero_q, tail, False, step_float, chosen) if lower_bound else None
                directions.append(_Direction(name, up, low))
            directions = _merge_symmetric(directions)
            disc: float | str = "exact lattice" if mode == "lattice" else float(h_value)  # type: ignore[arg-type]
            return cls(directions, step, step_key, disc, prec, float(truncation), 1, type(pair).__name__)

    @classmethod
    def _from_monotone_loss(cls, pair: MonotoneLossPair, discretisation, tail_mass, truncation, lower_bound, precision) -> "PrivacyLossDistribution":
        """Connect-the-dots on the grid h Z (:mod:`accounting._privacy_loss._pld_continuous`); composes with every
        PLD on the same h, and with any other PLD after :meth:`regrid`."""
        h_value = DEFAULT_DISCRETISATION if discretisation is None else discretisation
        if isinstance(h_value, str):
            h_value = Fraction(h_value)
        check_positive("discretisation", h_value)
        check_probability("tail_mass", tail_mass)
        check_probability("truncation", truncation)
        with working_precision(precision) as prec:
            h = exact(h_value)
            directions = monotone_loss_directions(pair, h_value, tail_mass, lower_bound)
            return cls(directions, h, _step_key(h_value, h), float(h_value), prec, float(truncation), 1, pair.describe())

    # ---- properties ------------------------------------------------------------------------

    @property
    def discretisation(self) -> float | str:
        return self._discretisation

    @property
    def compositions(self) -> int:
        return self._compositions

    @property
    def truncated_mass(self) -> float:
        """A float >= the mass any direction truncated (put at +inf, counted in delta, or raised
        to the lowest kept grid point): a bound of truncation's effect on delta."""
        with working_precision(self._precision):
            return max(upper_float(d.upper.truncation().abs_upper()) for d in self._directions)

    @property
    def infinite_loss_mass(self) -> float:
        """A float >= the genuine +inf atom (outputs with Q = 0 < P) of the worse direction."""
        with working_precision(self._precision):
            return max(upper_float(d.upper.inf.abs_upper()) for d in self._directions)

    @property
    def directions(self) -> tuple[str, ...]:
        return tuple(d.name for d in self._directions)

    @property
    def step(self) -> float:
        """The grid step (the lattice step, or h) as a float."""
        return self._step_float

    def loss_span(self) -> float:
        """The width of the largest side's grid, in loss units (a size for cost estimates)."""
        return self.grid_size() * self._step_float

    def grid_size(self) -> int:
        """The largest number of grid points held by any side (a cost measure)."""
        return max(max(d.upper.length(), d.lower.length() if d.lower else 0) for d in self._directions)

    # ---- composition -----------------------------------------------------------------------

    def regrid(self, discretisation: float | Fraction | str) -> "PrivacyLossDistribution":
        """This PLD on the grid h Z (origin 0): every atom of the upper sides spread onto its two
        neighbouring grid points (connect-the-dots: sound for this release and for every
        composition it enters, :func:`_spread`), every atom of the lower sides moved down. PLDs
        built on different grids compose through it (:meth:`compose` regrids by itself); a
        coarser grid also makes later compositions cheaper, at an error second order in h."""
        h_value = Fraction(discretisation) if isinstance(discretisation, str) else discretisation
        check_positive("discretisation", h_value)
        h = float(h_value)
        with working_precision(self._precision):
            step = exact(h_value)
            out = [
                _Direction(d.name, _regrid_side(d.upper, self._step, h), _regrid_side(d.lower, self._step, h) if d.lower is not None else None)
                for d in self._directions
            ]
        return PrivacyLossDistribution(out, step, _step_key(h_value, step), h, self._precision, self._truncation, self._compositions, self._label)

    def _on_common_grid(self, other: "PrivacyLossDistribution") -> tuple["PrivacyLossDistribution", "PrivacyLossDistribution"]:
        """Both PLDs on one grid: unchanged if they share it, else regridded onto the finest grid
        step either is discretised with (at most ``DEFAULT_DISCRETISATION``)."""
        if not isinstance(other, PrivacyLossDistribution):
            raise AccountingError("other", other, "a PrivacyLossDistribution")
        if other._step_key == self._step_key:
            return self, other
        steps = [p._discretisation for p in (self, other) if isinstance(p._discretisation, float)]
        h = min(steps + [DEFAULT_DISCRETISATION])
        key = _step_key(h, exact(h))
        return tuple(p if p._step_key == key else p.regrid(h) for p in (self, other))  # type: ignore[return-value]

    def compose(self, other: "PrivacyLossDistribution") -> "PrivacyLossDistribution":
        """Heterogeneous composition: this release followed by ``other``. PLDs on different grids
        (an exact lattice and a discretised one, two steps h) are first put on a common grid
        (:meth:`regrid`), so PLDs built with defaults compose."""
        self, other = self._on_common_grid(other)
        tau = min(self._truncation, other._truncation)
        prec = max(self._precision, other._precision)
        mine = {d.name: d for d in _expand(self._directions)}
        theirs = {d.name: d for d in _expand(other._directions)}
        out = []
        with working_precision(prec):
            if len(self._directions) == 1 and len(other._directions) == 1:
                names = [self._directions[0].name]
                mine = {names[0]: self._directions[0]}
                theirs = {names[0]: other._directions[0]}
            else:
                names = ["P||Q", "Q||P"]
            for name in names:
                a, b = mine[name], theirs[name]
                up = _compose_upper(a.upper, b.upper, tau, self._step)
                low = None
                if a.lower is not None and b.lower is not None:
                    low = _compose_lower(a.lower, b.lower, tau, self._step)
                out.append(_Direction(name, up, low))
        disc = self._discretisation if self._discretisation == other._discretisation else f"{self._discretisation} + {other._discretisation}"
        return PrivacyLossDistribution(out, self._step, self._step_key, disc, prec, tau, self._compositions + other._compositions, f"{self._label} + {other._label}")

    def __add__(self, other: "PrivacyLossDistribution") -> "PrivacyLossDistribution":
        if not isinstance(other, PrivacyLossDistribution):
            return NotImplemented
        return self.compose(other)

    @renamed_keywords(k="compose")
    def self_compose(self, compose: int) -> "PrivacyLossDistribution":
        """``compose``-fold composition (binary powering); equal, up to truncation, to that many
        compositions (``k=``: former name, deprecated)."""
        check_positive_int("compose", compose)
        k = compose
        if k == 1:
            return self
        out = []
        with working_precision(self._precision):
            for d in self._directions:
                up = _power(d.upper, k, self._truncation, self._step)
                low = _power_lower(d.lower, k, self._truncation, self._step) if d.lower is not None else None
                out.append(_Direction(d.name, up, low))
        return PrivacyLossDistribution(
            out, self._step, self._step_key, self._discretisation, self._precision, self._truncation, self._compositions * k, f"{k} x {self._label}"
        )

    times = self_compose

    # ---- queries ---------------------------------------------------------------------------

    def _evaluators(self) -> list[tuple[str, _Evaluator, _Evaluator | None]]:
        with working_precision(self._precision):
            return [
                (d.name, _evaluator_for(d.upper, self._step, self._step_float), _Evaluator(d.lower, self._step, self._step_float) if d.lower is not None else None)
                for d in self._directions
            ]

    def delta_bounds(self, epsilon: float) -> tuple[float | None, float]:
        """(certified lower, certified upper) bounds of delta(epsilon)."""
        result = self.delta(epsilon)
        return result.delta_lower, result.delta

    def delta(self, epsilon: float | int | Fraction) -> Result:
        """delta(eps) = max over directions of sum_L mass * (1 - e^{eps - L})_+ + mass(+inf)."""
        check_nonnegative("epsilon", epsilon)
        with working_precision(self._precision):
            eps_ball = exact(epsilon)
            best_name, best_up, best_low, best_ev = "", -1.0, None, None
            for name, ev_up, ev_low in self._evaluators():
                up = ev_up.certified(eps_ball)
                low = ev_low.certified(eps_ball) if ev_low is not None else None
                if up > best_up:
                    best_name, best_up, best_ev = name, up, ev_up
                if low is not None:
                    best_low = low if best_low is None else max(best_low, low)
            if isinstance(best_ev, _RecipeEvaluator):  # the pass that certified it
                best_ev = best_ev.pass_for(eps_ball)
            negligible = _delta_truncation_negligible(best_ev, eps_ball, best_up) if best_ev is not None else None
            return Result(
                epsilon=float(epsilon) if not isinstance(epsilon, Fraction) else upper_float(eps_ball),
                delta=min(1.0, best_up),
                route="pld",
                discretisation=self._discretisation,
                direction=best_name,
                truncated_mass=self.truncated_mass,
                compositions=self._compositions,
                epsilon_lower=None,
                delta_lower=best_low,
                detail=self._detail(),
                infinite_loss_mass=self.infinite_loss_mass,
                truncation_negligible=negligible,
            )

    def epsilon(self, delta: float) -> Result:
        """The smallest eps found with certified delta(eps) <= ``delta`` (module docstring)."""
        check_probability("delta", delta)  # (a query's validated delta passes at once)
        best_name, best_eps, best_d, best_low, best_ev = "", -1.0, 1.0, None, None
        for name, ev_up, ev_low in self._evaluators():
            if isinstance(ev_up, _RecipeEvaluator):
                ev_up = ev_up.for_delta(float(delta))
            eps, d = _certified_epsilon_upper(ev_up, float(delta), self._precision)
            if eps > best_eps:
                best_name, best_eps, best_d, best_ev = name, eps, d, ev_up
            if ev_low is not None:
                low = _certified_epsilon_lower(ev_low, float(delta), self._precision)
                best_low = low if best_low is None else max(best_low, low)
        return Result(
            epsilon=best_eps,
            delta=float(delta),
            route="pld",
            discretisation=self._discretisation,
            direction=best_name,
            truncated_mass=self.truncated_mass,
            compositions=self._compositions,
            epsilon_lower=best_low,
            delta_lower=None,
            detail=self._detail() + f"; certified delta(epsilon) = {best_d:.6g}",
            infinite_loss_mass=self.infinite_loss_mass,
            truncation_negligible=_epsilon_truncation_negligible(best_ev, best_eps, float(delta), self._precision) if best_ev is not None else None,
        )

    def _detail(self) -> str:
        with working_precision(self._precision):
            shifts = [upper_float(d.upper.shift) for d in self._directions]
            errs = [d.upper.err for d in self._directions if d.upper.recipe is None] or [0.0]
            engines = sorted({d.upper.engine if d.upper.recipe is None else "float (one FFT pass, tilted)" for d in self._directions})
        grid = f"h={self._discretisation!r}" if self._discretisation != "exact lattice" else f"exact lattice step {self._step_float!r}, loss shift <= {max(shifts):.3g}"
        errors = f"float l1 error <= {max(errs):.3g}" if any(d.upper.recipe is None for d in self._directions) else "FFT error bounded per query"
        return f"{self._label}; {grid}; engine {'/'.join(engines)}; {errors}; grid points {self.grid_size()}"

    def __repr__(self) -> str:
        return f"PrivacyLossDistribution({self._detail()})"


def _expand(directions: Sequence[_Direction]) -> list[_Direction]:
    """Both named directions (a merged symmetric direction stands for both)."""
    if len(directions) == 1:
        d = directions[0]
        return [_Direction("P||Q", d.upper, d.lower), _Direction("Q||P", d.upper, d.lower)]
    return list(directions)


def _merge_symmetric(directions: list[_Direction]) -> list[_Direction]:
    """One computation for both directions when their single-release PLDs (nearly) coincide.

    On a common index range, the pointwise maximum of the two upper sides' masses (and of their
    +inf atoms and shifts) dominates each of them, and the pointwise minimum of the lower sides
    is dominated by each; so composing the merged side once certifies both directions. The
    merge is done only when the two differ by at most ``_MERGE_L1`` in l1 (e.g. only in the
    far tails, as for a symmetric noise law read on a window centred on one of the two laws),
    so it costs at most that much mass per release.
    """
    a, b = directions
    up = _combine(a.upper, b.upper)
    if up is None:
        return directions
    low = None
    if a.lower is not None and b.lower is not None:
        low = _combine(a.lower, b.lower)
        if low is None:
            return directions
    return [_Direction("P||Q = Q||P", up, low)]


_MERGE_L1 = 1e-15


def _aligned(s: _Side, lo: int, hi: int) -> tuple[np.ndarray, float]:
    vec, err = s.endpoint_vector()
    out = np.zeros(hi - lo)
    out[s.offset - lo : s.offset - lo + len(vec)] = vec
    return out, err


def _combine(s: _Side, t: _Side) -> _Side | None:
    """The merged side (max for upper, min for lower), or None if they differ too much."""
    if s.engine != t.engine or s.upper != t.upper:
        return None
    if not (s.origin.is_exact() and t.origin.is_exact() and bool(s.origin == t.origin)):
        return None
    lo = min(s.offset, t.offset)
    hi = max(s.offset + s.length(), t.offset + t.length())
    u, eu = _aligned(s, lo, hi)
    v, ev = _aligned(t, lo, hi)
    diff = float(np.sum(np.abs(u - v))) + abs(float(s.inf.mid()) - float(t.inf.mid())) + abs(float(s.truncated.mid()) - float(t.truncated.mid()))
    if diff > _MERGE_L1:
        return None
    shift = arb(max(s.shift.upper(), t.shift.upper()).upper())
    truncated = arb(max(s.truncated.upper(), t.truncated.upper()).upper())
    moved = arb(max(s.moved.upper(), t.moved.upper()).upper())
    if s.upper:
        inf = arb(0).union(max(s.inf.upper(), t.inf.upper()).upper())
    else:
        inf = arb(min(s.inf.lower(), t.inf.lower()).lower()).nonnegative_part()
    if s.poly is not None:
        cs = [arb(0)] * (hi - lo)
        ct = [arb(0)] * (hi - lo)
        for i, c in enumerate(s.poly.coeffs()):
            cs[s.offset - lo + i] = c
        for i, c in enumerate(t.poly.coeffs()):
            ct[t.offset - lo + i] = c
        # the union contains both masses, hence their max and their min
        coeffs = [x.union(y) for x, y in zip(cs, ct)]
        return _Side(s.upper, lo, arb_poly(coeffs), None, 0.0, inf, shift, s.origin, truncated, moved=moved)
    vec = np.maximum(u, v) if s.upper else np.minimum(u, v)
    return _Side(s.upper, lo, None, vec, max(eu, ev), inf, shift, s.origin, truncated, moved=moved)


# ----------------------------------------------------------------------------------------------
# one-call helpers


#: Above this many releases the routes' grid is refined (:func:`grid_for`).
_REFINE_FROM = 10_000


def grid_for(releases: int) -> float:
    """The routes' grid step for a composition of ``releases`` releases.

    1e-4 (dp_accounting's default, and the literature's) up to 10^4 releases, refined as
    releases^(-1/4) beyond. Every discretisation the routes use is connect-the-dots (an atom
    split between its two neighbouring grid points), whose error is second order in h per
    release; measured on DP-SGD (Poisson q = 0.01, sigma = 1), h = 1e-4 sits 4e-6 to 7e-6
    relative above the h -> 0 limit from 10^3 to 10^5 steps, slowly growing with k: the mild
    refinement keeps it flat. Any h is sound; the planner coarsens it further when the cost
    estimate exceeds the time budget."""
    if releases <= _REFINE_FROM:
        return DEFAULT_DISCRETISATION
    return DEFAULT_DISCRETISATION * (_REFINE_FROM / releases) ** 0.25


def release_kind(subject: object) -> str | None:
    """How one release gets its PLD: ``"continuous"`` (a monotone-loss pair: connect-the-dots),
    ``"integer"`` (an integer output pair: exact lattice or spread onto a grid), or None."""
    if continuous_loss_pair(subject) is not None:
        return "continuous"
    if isinstance(subject, IntegerPair) or (isinstance(subject, Mechanism) and isinstance(subject.output_pair(), IntegerPair)):
        return "integer"
    return None


def release_pld(subject: object, h: float, *, lower_bound: bool = False, tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossDistribution:
    """One release's PLD as every route builds it: on the exact lattice of its losses when there
    is one (integer pairs), else on the grid h Z by connect-the-dots (a continuous pair whose loss
    window would hold more than ``AUTO_POINTS`` points at h is put on 2^j h). Built anew each call:
    the route planner hands the PLDs it built while planning to the run itself
    (:class:`accounting._routing._pld_route.PldRoute`), and a caller asking several questions of one PLD
    keeps it (:meth:`PrivacyLossDistribution.epsilon` and :meth:`~PrivacyLossDistribution.delta`
    answer any number of them)."""
    continuous = continuous_loss_pair(subject)
    if continuous is not None:
        return PrivacyLossDistribution.from_pair(continuous, discretisation=default_discretisation(continuous, h), lower_bound=lower_bound, tail_mass=tail_mass)
    return PrivacyLossDistribution._from_integer_pair(_resolve_pair(subject), None, None, tail_mass, DEFAULT_TRUNCATION, "auto", lower_bound, None, h)


def _pld_for(mechanism_pair: object, k: int, discretisation, lattice_step, kwargs) -> PrivacyLossDistribution:
    """The PLD the routes build (:func:`release_pld`), unless a grid or another option is given."""
    lower = kwargs.pop("lower_bound", True)
    if discretisation is None and lattice_step is None and set(kwargs) <= {"tail_mass"}:
        return release_pld(mechanism_pair, grid_for(k), lower_bound=lower, **kwargs)
    if discretisation is None and lattice_step is None:
        continuous = continuous_loss_pair(mechanism_pair)
        if continuous is None:
            kw = {"tail_mass": DEFAULT_TAIL_MASS, "truncation": DEFAULT_TRUNCATION, "engine": "auto", "precision": None, **kwargs}
            return PrivacyLossDistribution._from_integer_pair(_resolve_pair(mechanism_pair), None, None, kw["tail_mass"], kw["truncation"], kw["engine"],
                                                              lower, kw["precision"], grid_for(k))
        discretisation = default_discretisation(continuous, grid_for(k))
    return PrivacyLossDistribution.from_pair(mechanism_pair, discretisation=discretisation, lattice_step=lattice_step, lower_bound=lower, **kwargs)


@renamed_keywords(k="compose")
def pld_epsilon(
    mechanism_pair: object,
    compose: int,
    delta: float,
    *,
    discretisation: float | Fraction | None = None,
    lattice_step: float | Fraction | str | arb | None = None,
    **kwargs,
) -> Result:
    """Certified eps(delta) of the ``compose``-fold composition of one mechanism, through its PLD
    (``k=``: the former name of ``compose``, deprecated).

    Exact lattice when the losses sit on one; otherwise connect-the-dots on the grid
    h = ``discretisation`` or :func:`grid_for` (compose): the PLD route of :func:`accounting.epsilon_routes`
    builds the same PLD, so both give the same number. Other keywords go to
    :meth:`PrivacyLossDistribution.from_pair` (``lower_bound=True`` by default here: the
    certified bracket [epsilon_lower, epsilon]).
    """
    check_positive_int("compose", compose)
    check_probability("delta", delta)
    if discretisation is not None:
        check_positive("discretisation", discretisation)
    pld = _pld_for(mechanism_pair, compose, discretisation, lattice_step, kwargs)
    return pld.self_compose(compose).epsilon(delta)


@renamed_keywords(k="compose")
def pld_delta(
    mechanism_pair: object,
    compose: int,
    epsilon: float,
    *,
    discretisation: float | Fraction | None = None,
    lattice_step: float | Fraction | str | arb | None = None,
    **kwargs,
) -> Result:
    """Certified delta(eps) of the ``compose``-fold composition of one mechanism, through its PLD
    (``k=``: the former name of ``compose``, deprecated)."""
    check_positive_int("compose", compose)
    check_nonnegative("epsilon", epsilon)
    if discretisation is not None:
        check_positive("discretisation", discretisation)
    pld = _pld_for(mechanism_pair, compose, discretisation, lattice_step, kwargs)
    return pld.self_compose(compose).delta(epsilon)
