"""The f-DP form of the one-run bound (Mahloujifar, Melis & Chaudhuri, "Auditing f-Differential Privacy in
One Run", ICML 2025), issue 33.

Setting as in :mod:`._one_run_bound`: m canaries with fair bits, an attacker that makes c guesses
(abstaining on the rest, c fixed before the run) of which C are right. The hypothesis is now a
whole trade-off curve f (the mechanism is f-DP in every canary's bit), not one (eps, delta) pair.

**The recursion** (their Algorithm "upper bound on the probability of c' correct guesses"; the
form with the two safeguards of jax_privacy's ``_epsilon_one_run_fdp``). Write
b(x) = 1 - f(x) (the largest TPR at FPR x) and b^-1(r) = inf {x : b(x) >= r} (the least wrong-guess
mass that a right-guess mass r forces). With R_j = E[C 1{C >= j}] / m and H_j = E[(c - C) 1{C >= j}] / m:

- f-DP in canary k's bit, applied to the test "T_k = 1 and C_-k >= j - 1" (and its mirror), averaged
  over the canaries with the convexity of b^-1, gives H_{j-1} >= b^-1(R_j) for j = 1..c;
- R_{i} - R_{i+1} = i P[C = i] / m and H_i - H_{i+1} = (c - i) P[C = i] / m, so
  R_i = R_{i+1} + i / (c - i) (H_i - H_{i+1});
- and R_0 + H_0 = c / m (exactly c guesses).

If P[C >= c'] >= tau, the least mass the constraints allow is reached with all of that event's mass
at C = c' (r = tau c'/m, h = tau (c - c')/m) and, going down i = c'-1..0, h_i = max(h_{i+1},
b^-1(r_{i+1})) (P[C = i] >= 0: the ``max``), r_i = min(1, r_{i+1} + i/(c - i) (h_i - h_{i+1})) (a
probability: the cap, which can only weaken the test). If then r_0 + h_0 > c/m the constraints
cannot hold: P[C >= c'] < tau. The test of f at level beta is this with tau = beta.

**Curves.** A curve is an :class:`accounting.TradeOffCurve` (the accountant's one type), read as the upper envelope of (eps_j, delta_j) curves,
f(x) = max_j max(0, 1 - delta_j - e^eps_j x, e^-eps_j (1 - delta_j - x)): pure eps ((eps, 0)),
(eps, delta), or a mechanism's certified delta(eps) profile on a grid of eps (each pair a valid
(eps, delta) guarantee, so the envelope is below the true f: testing it is conservative). Then
b^-1(r) = max(0, max_j (r - delta_j) e^-eps_j, max_j 1 - delta_j - e^eps_j (1 - r)).

**Arithmetic.** The recursion runs in floats (numba); a reported rejection is re-checked in mpmath
at 40 digits (:func:`fdp_rejects_mp`, written apart), and an epsilon found by bisection in floats
is stepped down until the mpmath check confirms it.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from accounting import AccountingError, TradeOffCurve

from ._one_run_bound import _check

__all__ = ["blow_up_inverse", "fdp_epsilon", "fdp_mu", "fdp_rejects", "fdp_rejects_mp", "fdp_total_mass", "gdp_curve"]


def gdp_curve(mu: float, points: int = 64) -> TradeOffCurve:
    """mu-GDP's curve from below, as an :class:`accounting.TradeOffCurve`: the envelope of its exact
    (eps, delta(eps)) pairs on a grid of eps (delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2),
    nudged up by 1e-12 relative for float error), so testing it is conservative."""
    from scipy.stats import norm

    mu = float(mu)
    if not (math.isfinite(mu) and mu > 0):
        raise AccountingError("mu", mu, "a finite real > 0")
    grid = np.linspace(0.0, mu * mu / 2 + 8 * mu, points)
    deltas = norm.cdf(-grid / mu + mu / 2) - np.exp(grid) * norm.cdf(-grid / mu - mu / 2)
    deltas = np.clip(deltas * (1 + 1e-12) + 1e-300, 0.0, 1 - 1e-15)
    return TradeOffCurve(tuple(float(e) for e in grid), tuple(float(d) for d in deltas), source=f"{mu:.6g}-GDP lower envelope")


def blow_up_inverse(curve: TradeOffCurve, r: float) -> float:
    """b^-1(r): the least FPR of a test whose TPR is r (floats)."""
    return float(_blow_up_inverse(float(r), np.asarray(curve.epsilons), np.asarray(curve.deltas)))


@numba.njit(cache=True)
def _blow_up_inverse(r, eps, delta):
    best = 0.0
    for j in range(eps.size):
        a = (r - delta[j]) * math.exp(-eps[j])
        b = 1.0 - delta[j] - math.exp(eps[j]) * (1.0 - r)
        best = max(best, a)
        best = max(best, b)
    return best


@numba.njit(cache=True)
def _total_mass(eps, delta, m, c, v, tau):
    r = tau * v / m
    h = tau * (c - v) / m
    for i in range(v - 1, -1, -1):
        h_new = max(h, _blow_up_inverse(r, eps, delta))
        if h_new == h:  # P[C = i] = 0 here: nothing changes below
            break
        r = min(r + (i / (c - i)) * (h_new - h), 1.0)
        h = h_new
    return r + h


def fdp_total_mass(curve: TradeOffCurve, m: int, guesses: int, correct: int, tau: float) -> float:
    """r_0 + h_0 of the recursion started at tau (floats): the least guess mass / m if P[C >= correct] >= tau."""
    return float(_total_mass(np.asarray(curve.epsilons, dtype=np.float64), np.asarray(curve.deltas, dtype=np.float64),
                             float(m), int(guesses), int(correct), float(tau)))


def fdp_rejects_mp(curve: TradeOffCurve, m: int, guesses: int, correct: int, level: float, dps: int = 40) -> bool:
    """The same test in mpmath at ``dps`` digits (the certificate of a float rejection)."""
    import mpmath as mp

    with mp.workdps(dps):
        eps = [mp.mpf(e) for e in curve.epsilons]
        dl = [mp.mpf(d) for d in curve.deltas]
        up = [mp.e ** e for e in eps]
        down = [1 / u for u in up]

        def binv(x):
            return max([mp.mpf(0)] + [(x - d) * w for d, w in zip(dl, down)] + [1 - d - u * (1 - x) for d, u in zip(dl, up)])

        c, v, mm = int(guesses), int(correct), mp.mpf(m)
        r, h = mp.mpf(level) * v / mm, mp.mpf(level) * (c - v) / mm
        for i in range(v - 1, -1, -1):
            h_new = max(h, binv(r))
            if h_new == h:
                break
            r = min(r + mp.mpf(i) / (c - i) * (h_new - h), mp.mpf(1))
            h = h_new
        return bool(r + h > mp.mpf(c) / mm)


def fdp_rejects(curve: TradeOffCurve, m: int, guesses: int, correct: int, *, level: float = 0.05, certify: bool = True) -> bool:
    """Whether (guesses, correct) out of m canaries rejects "f-DP in every canary's bit" at level ``level``.

    A float rejection is confirmed in mpmath (``certify``); the float margin 1e-9 makes a
    borderline case fall on the side of not rejecting."""
    _check(m, guesses, correct, level)
    if guesses == 0 or correct == 0:
        return False
    total = fdp_total_mass(curve, m, guesses, correct, level)
    if not total > guesses / m * (1 + 1e-9):
        return False
    return fdp_rejects_mp(curve, int(m), int(guesses), int(correct), level) if certify else True


def fdp_epsilon(m: int, guesses: int, correct: int, *, level: float = 0.05, delta: float = 0.0) -> float:
    """The f-DP form's lower bound on epsilon: the largest eps whose (eps, delta) curve the recursion
    rejects at ``level`` (bisection in floats, then stepped down until mpmath confirms); 0.0 if none."""
    _check(m, guesses, correct, level)
    if not 0.0 <= delta < 1.0:
        raise AccountingError("delta", delta, "a probability in [0, 1)")
    if guesses == 0 or correct == 0:
        return 0.0

    def rejects(e: float) -> bool:
        return fdp_total_mass(TradeOffCurve.from_approx_dp(e, delta), m, guesses, correct, level) > guesses / m * (1 + 1e-9)

    if not rejects(0.0):
        return 0.0
    lo, hi = 0.0, 1.0
    while rejects(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e3:
            break
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if rejects(mid) else (lo, mid)
        if hi - lo <= 1e-10 * max(1.0, hi):
            break
    eps, step = lo, max(1e-10, 1e-8 * lo)
    for _ in range(40):
        if eps <= 0.0:
            return 0.0
        if fdp_rejects_mp(TradeOffCurve.from_approx_dp(eps, delta), int(m), int(guesses), int(correct), level):
            return float(eps)
        eps = max(0.0, eps - step)
        step *= 2.0
    return 0.0


def fdp_mu(m: int, guesses: int, correct: int, *, level: float = 0.05, certify: bool = True) -> float:
    """The f-DP form's mu-GDP lower bound: the largest mu whose GDP curve (from below, :func:`gdp_curve`)
    the recursion rejects at ``level`` (bisection in floats; with ``certify`` stepped down until mpmath
    confirms); 0.0 if none. Meaningful for Gaussian-like mechanisms, valid for all."""
    _check(m, guesses, correct, level)
    if guesses == 0 or correct == 0:
        return 0.0

    def rejects(mu: float) -> bool:
        return fdp_total_mass(gdp_curve(mu), m, guesses, correct, level) > guesses / m * (1 + 1e-9)

    lo, hi = 0.0, 0.05
    if not rejects(hi):
        return 0.0
    while rejects(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 64:
            break
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if rejects(mid) else (lo, mid)
        if hi - lo <= 1e-6 * max(1.0, hi):
            break
    if not certify:
        return float(lo)
    mu, step = lo, max(1e-6, 1e-5 * lo)
    for _ in range(30):
        if mu <= 0.0:
            return 0.0
        if fdp_rejects_mp(gdp_curve(mu), int(m), int(guesses), int(correct), level):
            return float(mu)
        mu = max(0.0, mu - step)
        step *= 2.0
    return 0.0
