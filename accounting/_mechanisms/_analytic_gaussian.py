"""The Gaussian mechanism exactly: Balle & Wang's analytic (eps, delta) curve, through mu-GDP.

The Gaussian mechanism N(0, sigma^2) on a query of l2-sensitivity Delta is mu-GDP with
mu = Delta / sigma (Dong, Roth & Su 2022, "Gaussian differential privacy", Thm 2.7), and its exact
privacy profile is (Balle & Wang 2018, "Improving the Gaussian mechanism...", Thm 8; DRS Cor. 2.13)

    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2),                  (BW 2018, Thm 8)

which with mu = Delta/sigma reads Phi(Delta/(2 sigma) - eps sigma/Delta) - e^eps Phi(-Delta/(2 sigma) - eps sigma/Delta).
Composition of Gaussian mechanisms is exact in GDP: releasing N(f_i, sigma_i^2) for i = 1..k
(adaptively or not) is mu-GDP with mu = sqrt(sum_i (Delta_i / sigma_i)^2) (DRS Cor. 3.3), and the
pair N(0, 1) vs N(mu, 1) is a dominating pair of the composition and is attained by it, so the
formula above is the exact profile of any (heterogeneous) composition of Gaussians, not a bound.

How it is certified
-------------------
- mu is formed in Arb from the exact inputs (floats are dyadic, Fractions via fmpq) and its
  *upper* endpoint is used: delta(eps) is increasing in mu (GDP curves are nested), so a larger mu
  can only over-report.
- delta(eps) is evaluated in Arb with Phi(x) = erfc(-x/sqrt 2)/2. The two terms nearly cancel when
  eps >> mu^2 (their ratio tends to 1 - mu^2/eps), so the precision is raised until the terms'
  relative radii are below 2^-60; the reported delta is the upper endpoint of the first minus the
  lower endpoint of the second (clamped at 0: the second term is >= 0), rounded up.
- eps(delta) is a certified bisection: delta(eps) is decreasing, the upper end of the bracket is
  kept only when its certified delta is <= the target, so the returned eps has certified
  delta(eps) <= delta (it is never below the true eps(delta)), and the bracket is narrowed to
  a relative width of 1e-13.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Iterable

from flint import arb

from .._core._certified import exact, upper_float, working_precision
from .._core._validation import AccountingError, check_nonnegative, check_positive, check_probability

__all__ = [
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "gdp_mu_for",
]

#: relative width of the final eps bracket (the issue asks for 1e-9; the bisection goes further)
_EPS_RELATIVE_WIDTH = 1e-13
#: precision ceiling for delta evaluations (only extreme eps/mu^2 ratios need more than ~200 bits)
_MAX_PRECISION = 4096
#: Largest mu accepted (a Gaussian of sigma / sensitivity = 1e-10 composed 1e12 times has mu = 1e16).
_MAX_MU = 1e100


def gdp_mu(terms: Iterable[tuple[float | int | Fraction, float | int | Fraction, int]]) -> arb:
    """An exact-input Arb ball for mu = sqrt(sum_i count_i (Delta_i / sigma_i)^2).

    ``terms`` holds (sensitivity, sigma, count) triples; the caller uses the upper endpoint.
    """
    total = arb(0)
    empty = True
    for sensitivity, sigma, count in terms:
        ratio = exact(sensitivity) / exact(sigma)
        total += ratio * ratio * count
        empty = False
    if empty:
        raise AccountingError("terms", (), "at least one (sensitivity, sigma, count) triple")
    return total.sqrt()


def _terms(mu: arb, eps: arb) -> tuple[arb, arb]:
    """The two terms Phi(-eps/mu + mu/2) and e^eps Phi(-eps/mu - mu/2) as Arb balls (BW 2018, Thm 8)."""
    root2 = arb(2).sqrt()
    a = eps / mu
    b = mu / 2
    # Phi(-a + b) = erfc((a - b)/sqrt 2)/2 and Phi(-a - b) = erfc((a + b)/sqrt 2)/2
    first = ((a - b) / root2).erfc() / 2
    second = ((a + b) / root2).erfc() * eps.exp() / 2
    return first, second


def _delta_upper_ball(mu_up: arb, eps: arb) -> arb:
    """An exact point >= delta(eps), as tight as a relative 2^-60 allows.

    delta = first - second with second >= 0, so first.upper - max(second.lower, 0) bounds it
    above even when Arb cannot enclose the second term usefully (e^eps times an erfc far in its
    tail, eps ~ 1e19: it returns a ball around 0; the second term is then a negligible fraction,
    ~ (eps/mu - mu/2)/(eps/mu + mu/2), of the first). Precision is doubled until both terms are
    tight (to 4096 bits), or until the first is and the second stays unresolved past 512 bits.
    """
    bits = 96
    while True:
        with working_precision(bits):
            first, second = _terms(mu_up, eps)
            second_low = second.lower() if second.lower() > 0 else arb(0)
            upper = first.upper() - second_low
        scale = abs(upper) * arb(2) ** -60
        first_ok = first.rad() <= scale
        second_ok = second.rad() <= scale
        if (first_ok and second_ok) or bits >= _MAX_PRECISION or (first_ok and not second.lower() > 0 and bits >= 512):
            with working_precision(bits):
                return upper.upper()
        bits *= 2


def _mu_upper(mu: float | int | Fraction | arb) -> arb:
    if isinstance(mu, arb):
        if not (mu > 0):
            raise AccountingError("mu", mu, "a ball of positive reals")
        return mu.upper()
    check_positive("mu", mu)
    if mu > _MAX_MU:  # delta(eps) is 1 to any precision there, and rho = mu^2 / 2 overflows a float (issue 15)
        raise AccountingError("mu", mu, f"a real number in (0, {_MAX_MU:g}]")
    return exact(mu)


def gdp_delta(mu: float | int | Fraction | arb, epsilon: float | int | Fraction) -> float:
    """Certified upper bound on delta(eps) of mu-GDP (the exact profile of a Gaussian mechanism)."""
    check_nonnegative("epsilon", epsilon)
    mu_up = _mu_upper(mu)
    value = upper_float(_delta_upper_ball(mu_up, exact(epsilon)))
    return min(max(value, 0.0), 1.0)


def _delta_at_most(mu_up: arb, eps: float, delta: arb) -> bool:
    """True when the certified delta(eps) is <= delta."""
    return bool(_delta_upper_ball(mu_up, exact(eps)) <= delta)


def gdp_epsilon(mu: float | int | Fraction | arb, delta: float | Fraction) -> float:
    """The least eps (up to 1e-13 relative, rounded up) whose certified delta(eps) is <= ``delta``.

    The returned value is never below the true eps(delta) of mu-GDP.
    """
    check_probability("delta", delta)  # (a query's validated delta passes at once)
    mu_up = _mu_upper(mu)
    target = exact(delta)
    if _delta_at_most(mu_up, 0.0, target):
        return 0.0
    # Upper end: the zCDP bound rho + 2 sqrt(rho log(1/delta)) (rho = mu^2/2) dominates the exact
    # value; it is still checked (certified) and doubled until it passes.
    with working_precision(None):
        rho = mu_up * mu_up / 2
        hi = upper_float(rho + 2 * (rho * (-target.log())).sqrt()) + 1e-12
    while not _delta_at_most(mu_up, hi, target):
        hi *= 2
        if not math.isfinite(hi):
            return math.inf
    lo = 0.0
    while hi - lo > _EPS_RELATIVE_WIDTH * hi:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:  # adjacent floats
            break
        if _delta_at_most(mu_up, mid, target):
            hi = mid
        else:
            lo = mid
    return hi


def gdp_mu_for(epsilon: float | int | Fraction, delta: float | Fraction, *, relative_width: float = 1e-12) -> float:
    """The largest mu (rounded down, up to ``relative_width``) with certified delta(eps; mu) <= ``delta``.

    Calibration: a Gaussian of sensitivity Delta released k times meets (eps, delta) when
    sigma >= Delta sqrt(k) / mu. The returned mu is certified (its delta is <= the target).
    """
    check_positive("epsilon", epsilon)
    check_probability("delta", delta)
    target = exact(delta)
    eps = exact(epsilon)

    def ok(mu: float) -> bool:
        return bool(_delta_upper_ball(exact(mu), eps) <= target)

    lo, hi = 1e-3, 1.0
    while not ok(lo):
        lo /= 2
        if lo < 1e-300:
            raise AccountingError("delta", delta, "a value reachable by some Gaussian at this epsilon")
    while ok(hi):
        lo, hi = hi, hi * 2
    while hi - lo > relative_width * lo:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo

