"""Optimal composition of pure DP: the exact (eps, delta) of composing eps_i-DP mechanisms.

k-fold composition (Kairouz, Oh & Viswanath 2015, "The composition theorem for differential
privacy", Thm 3.3): the k-fold (adaptive) composition of eps0-DP mechanisms is (eps, delta)-DP
for every eps >= 0 with

    delta(eps) = (1 + e^eps0)^-k  sum_{l=0}^{k} C(k, l) ( e^{(k-l) eps0} - e^{eps + l eps0} )_+ ,   (KOV Thm 3.3)

and no smaller delta holds for all eps0-DP mechanisms: binary randomized response RR(eps0)
attains it. Heterogeneous composition (Murtagh & Vadhan 2016, "The complexity of computing the
optimal composition of differential privacy", Thm 1.4 / Lemma 3.2): the composition of
eps_1, ..., eps_k-DP mechanisms has the same optimal delta as the product of the randomized
responses RR(eps_i), i.e.

    delta(eps) = E_{L}[ (1 - e^{eps - L})_+ ],   L = sum_i (+eps_i w.p. e^eps_i/(1+e^eps_i), -eps_i otherwise),

which is the privacy-loss distribution of the product of randomized responses. Computing it is
#P-hard in general (MV 2016), but it is exact and cheap when the eps_i take few distinct values:
with g groups of n_g equal values the loss takes prod (n_g + 1) values (l_g flips in group g).
Flip counts far from their mean n_g/(1 + e^eps_g) are dropped, their mass bounded by Hoeffding's
inequality (P(|l - n q| >= d) <= 2 e^{-2 d^2 / n}) and added to delta at its largest possible
contribution 1; the window is chosen so that this costs at most delta 2^-40.
The route planner (:mod:`accounting._routing._routes`) offers three routes and runs what its time budget
affords, the tightest answering: this exact enumeration (``optimal-composition``, cost ~ support
points, :func:`exact_support`), the product of randomized responses' PLD
(``optimal-composition-pld``: exact on one lattice, i.e. one distinct epsilon; connect-the-dots
between groups), and always the closed-form heterogeneous bound of KOV 2015 (Thm 3.5,
``kov-heterogeneous-bound``):

    eps = min{ sum eps_i,
               sum eps_i (e^eps_i - 1)/(e^eps_i + 1) + sqrt(2 sum eps_i^2 log(e + sqrt(sum eps_i^2)/delta)),
               sum eps_i (e^eps_i - 1)/(e^eps_i + 1) + sqrt(2 sum eps_i^2 log(1/delta)) }.     (KOV Thm 3.5)

Certification: every outcome's loss sum_g (n_g - 2 l_g) eps_g is exact (dyadic inputs), its
probability prod C(n_g, l_g) e^{-l_g eps_g} (1 + e^{-eps_g})^{-n_g} is an Arb ball (binomials
exact integers, exp in Arb), and delta(eps) is evaluated from upper endpoints. eps(delta) is
located with prefix sums (on the interval between two consecutive losses delta(eps) = A - e^eps B,
so eps = log((A - delta)/B)), then *certified* by a direct evaluation of delta at the candidate,
moved up until certified delta <= target: the returned eps is never below the true optimum.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Sequence

from flint import arb, fmpz

from .._core._certified import exact, upper_float, working_precision
from .._core._result import Result
from .._core._validation import AccountingError, check_positive, check_positive_int, check_probability

__all__ = [
    "EXACT_DETAIL",
    "KOV_DETAIL",
    "exact_support",
    "kov_heterogeneous_bound",
    "optimal_composition_exact",
]

_PRECISION = 128
#: Largest per-step epsilon accepted (measured: certified answers up to 1e20; NaN at 1e300).
_MAX_EPSILON0 = 1e15


#: the exact enumeration's account of itself
EXACT_DETAIL = ("optimal composition of pure DP (Kairouz-Oh-Viswanath 2015 / Murtagh-Vadhan 2016), exact over {outcomes} losses "
                "(tails < delta 2^-40, bounded), rounded up")
#: KOV's Thm 3.5 bound, as its route reports it
KOV_DETAIL = "Kairouz-Oh-Viswanath 2015 Thm 3.5 heterogeneous bound, rounded up"


def _groups(epsilons: Sequence[tuple[float | int | Fraction, int]]) -> list[tuple[float | int | Fraction, int]]:
    merged: dict[object, int] = {}
    for index, (eps0, count) in enumerate(epsilons):
        check_positive(f"epsilons[{index}]", eps0)
        if eps0 > _MAX_EPSILON0:  # Arb at _PRECISION bits loses the answer near 1e300 (issue 15's fuzz harness)
            raise AccountingError(f"epsilons[{index}]", eps0, f"a pure-DP epsilon in (0, {_MAX_EPSILON0:g}]")
        check_positive_int(f"counts[{index}]", count)
        merged[eps0] = merged.get(eps0, 0) + int(count)
    return list(merged.items())


def _window(n: int, eps0: object, delta: float, parts: int) -> tuple[int, int]:
    """Flip counts [lo, hi] outside which Bin(n, 1/(1+e^eps0)) has mass <= delta 2^-40 / parts (Hoeffding)."""
    q = 1.0 / (1.0 + math.exp(min(float(eps0), 700.0)))  # past e^700, q is 0 to a float (exp would overflow)
    # log(2 / tail) in logs: delta 2^-40 underflows to 0 for a subnormal delta (found by the CLI fuzz test)
    log_two_over_tail = math.log(2.0) - math.log(delta) + 40 * math.log(2.0) + math.log(parts)
    t = math.sqrt(n * log_two_over_tail / 2.0) + 1.0
    return max(0, math.floor(n * q - t)), min(n, math.ceil(n * q + t))


def _hoeffding_tail(n: int, e: arb, lo: int, hi: int) -> arb:
    """Certified P(l < lo) + P(l > hi) for l ~ Bin(n, q), q = 1/(1+e^eps0): each side is at most
    exp(-2 d^2 / n) with d the (non-negative) distance of the window's end from the mean n q."""
    q = 1 / (1 + e.exp())
    tail = arb(0)
    if lo > 0:
        d = n * q - lo
        tail += (-2 * d * d / n).exp() if d.lower() >= 0 else arb(1)
    if hi < n:
        d = hi - n * q
        tail += (-2 * d * d / n).exp() if d.lower() >= 0 else arb(1)
    return tail.upper()


def _outcomes(groups: list[tuple[object, int]], windows: list[tuple[int, int]]) -> tuple[list[tuple[arb, arb]], arb]:
    """(loss, P-mass) of every flip-count vector in the windows of the product of randomized
    responses, and a certified bound on the P-mass outside them (union over the groups)."""
    per_group = []
    outside = arb(0)
    for (eps0, n), (lo, hi) in zip(groups, windows):
        e = exact(eps0)
        # P(l flips) = C(n, l) p^(n-l) q^l = C(n, l) e^{-l eps0} (1 + e^{-eps0})^{-n}; the binomial
        # C(n, lo) is an exact integer (an Arb ball of it beyond 2^20 flips), then the ratio
        # C(n, l+1)/C(n, l) = (n - l)/(l + 1) carries it across the window
        ratio = (-e).exp()
        binomial = arb(fmpz.bin_uiui(n, lo)) if n <= 1 << 20 else arb.bin_uiui(n, lo)
        mass = binomial * (-(n * ratio.log1p()) - lo * e).exp()
        terms = []
        for flips in range(lo, hi + 1):
            terms.append(((n - 2 * flips) * e, mass))
            mass = mass * ratio * (n - flips) / (flips + 1)
        per_group.append(terms)
        outside += _hoeffding_tail(n, e, lo, hi)
    outcomes = []
    for combo in itertools.product(*per_group):
        loss = arb(0)
        mass = arb(1)
        for term_loss, term_mass in combo:
            loss += term_loss
            mass *= term_mass
        outcomes.append((loss, mass))
    return outcomes, outside


def _delta_upper(outcomes: list[tuple[arb, arb]], outside: arb, eps: arb) -> arb:
    """Certified upper endpoint of E[(1 - e^{eps - L})_+]: the outcomes, plus the mass outside
    the windows at its largest possible contribution 1."""
    total = outside.upper()
    for loss, mass in outcomes:
        if loss <= eps:  # certainly no contribution
            continue
        term = mass * (1 - (eps - loss).exp())
        upper = term.upper()
        if upper > 0:
            total += upper
    return total.upper()


def exact_support(groups: Sequence[tuple[object, int]], delta: float | Fraction) -> int:
    """How many support points the exact enumeration would hold (the cost of the exact route)."""
    windows = [_window(n, eps0, float(delta), len(groups)) for eps0, n in groups]
    support = 1
    for lo, hi in windows:
        support *= hi - lo + 1
    return support


def optimal_composition_exact(groups: Sequence[tuple[object, int]], delta: float | Fraction) -> Result:
    """The exact enumeration (module docstring) for validated ``groups`` and ``delta``: the route
    ``optimal-composition``'s value, with its ``outcomes`` (support points)."""
    groups = list(groups)
    # each group's flip count is kept to a window holding all but delta 2^-40 / (groups) of its mass
    windows = [_window(n, eps0, float(delta), len(groups)) for eps0, n in groups]
    with working_precision(_PRECISION):
        outcomes, outside = _outcomes(groups, windows)
        outcomes.sort(key=lambda item: item[0].mid(), reverse=True)
        target = exact(delta)
        if _delta_upper(outcomes, outside, arb(0)) <= target:
            return _exact_result(0.0, delta, len(outcomes), windows)
        # Locate: with the m largest losses included, delta = A_m - e^eps B_m on
        # [L_{m+1}, L_m); the first m with delta(L_{m+1}) >= target holds the solution.
        a = arb(0)
        b = arb(0)
        candidate = None
        for index, (loss, mass) in enumerate(outcomes):
            a += mass
            b += mass * (-loss).exp()
            next_loss = outcomes[index + 1][0] if index + 1 < len(outcomes) else arb(0)
            at_next = a - next_loss.exp() * b
            if at_next.mid() >= target.mid() or index + 1 == len(outcomes):
                numerator = a - target
                if numerator > 0:
                    candidate = upper_float((numerator / b).log())
                break
        if candidate is None or not math.isfinite(candidate) or candidate <= 0:
            candidate = upper_float(outcomes[0][0])
        # Certify, moving up until the certified delta is below the target.
        step = 1e-12
        eps = max(candidate, 0.0)
        while not (_delta_upper(outcomes, outside, exact(eps)) <= target):
            eps = eps * (1 + step) + 1e-300
            step *= 4
        return _exact_result(eps, delta, len(outcomes), windows)


def _exact_result(epsilon: float, delta: float | Fraction, losses: int, windows: list) -> Result:
    """The exact route's value: ``outcomes`` its support points (:func:`exact_support`), the
    detail the number of distinct losses enumerated."""
    support = 1
    for lo, hi in windows:
        support *= hi - lo + 1
    return Result(epsilon, float(delta), "optimal-composition", None, EXACT_DETAIL.format(outcomes=losses), outcomes=support)


def kov_heterogeneous_bound(groups: Sequence[tuple[float | int | Fraction, int]], delta: float | Fraction) -> float:
    """KOV 2015 Thm 3.5 for eps_i-DP steps (delta_i = 0), rounded up: the least of its three terms."""
    check_probability("delta", delta)  # (a query's validated delta passes at once: accounting._core._validation.Probability)
    with working_precision(_PRECISION):
        total = arb(0)
        drift = arb(0)
        squares = arb(0)
        for eps0, n in groups:
            e = exact(eps0)
            total += e * n
            drift += e * e.expm1() / (e.exp() + 1) * n
            squares += e * e * n
        d = exact(delta)
        second = drift + (2 * squares * (arb(1).exp() + squares.sqrt() / d).log()).sqrt()
        third = drift + (2 * squares * (-d.log())).sqrt()
        return min(upper_float(total), upper_float(second), upper_float(third))
