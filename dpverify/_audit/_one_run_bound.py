"""The one-run lower bound on epsilon (Steinke, Nasr & Jagielski, NeurIPS 2023), certified.

Setting (their Section 3): m canaries, each canary's bit S_i a fair coin (included or not, or a
reward bit 0/1); the mechanism runs once on the canaries; an attacker reads the output and makes
r guesses (abstaining on the other m - r canaries), W of them correct. r must be fixed before the
run. Their main theorem: if the mechanism is (eps, delta)-DP in each canary's bit, then for every v

    P[W >= v] <= f(v) + 2 m delta max_{i = 1..m} (f(v - i) - f(v)) / i,
    f(v) = P[Binomial(r, p) >= v],   p = e^eps / (1 + e^eps).

The audit rejects "(eps, delta)-DP" when the right-hand side at the observed v is <= beta; the
lower bound is a rejected eps. Why any rejected eps is a valid report (no monotonicity needed):
(eps_true, delta)-DP implies (eps, delta)-DP for every eps >= eps_true, so with
H(v) = inf_{eps >= eps_true} g(eps, v) we have P[W >= v] <= H(v) for every v; the event "some
eps >= eps_true is rejected" is {H(W) <= beta}, contained in {W >= v0} for the least v0 with
H(v0) <= beta, whose probability is at most H(v0) <= beta.

**One error budget.** The r guesses may go both ways (guess "in" on the highest scores, "out"
on the lowest): they are one test of one count W at level beta. An attacker who bounds the two
directions separately must split beta between them (:func:`one_run_epsilon_two_sided`, beta/2
each); running each direction at the full beta and keeping the larger bound is the invalid
variant jax_privacy's PR #270 removed (its level is 1 - (1 - beta)^2, tested exactly).

**Arithmetic.** The search for eps runs in floats (scipy's regularized incomplete beta); the
reported eps is then *certified*: the right-hand side is evaluated at that float eps in Arb
interval arithmetic (python-flint: ``beta_lower`` for f, the pmf recursion for the delta term,
whose maximum over i is bounded above including the i not evaluated), and the eps is stepped down
until the upper end of the ball is <= beta. The reported lower bound is therefore rounded *down*.
"""

from __future__ import annotations

import math

import numpy as np
from flint import arb, ctx
from scipy import special, stats

from accounting import AccountingError

__all__ = ["one_run_bound_rhs", "one_run_epsilon", "one_run_epsilon_two_sided", "one_run_rhs_float"]

_PREC = 128


def _check(m: int, guesses: int, correct: int, level: float, delta: float = 0.0) -> None:
    """Validate one-run counts (also used by the f-DP form, :mod:`._one_run_fdp`)."""
    if not (isinstance(m, (int, np.integer)) and m >= 1):
        raise AccountingError("canaries", m, "an integer >= 1 (the canaries with a random bit)")
    if not (isinstance(guesses, (int, np.integer)) and 0 <= guesses <= m):
        raise AccountingError("guesses", guesses, f"an integer in [0, m] = [0, {m}]")
    if not (isinstance(correct, (int, np.integer)) and 0 <= correct <= guesses):
        raise AccountingError("correct", correct, f"an integer in [0, guesses] = [0, {guesses}]")
    if not (0.0 < level < 1.0):
        raise AccountingError("level", level, "a probability in (0, 1) (one minus the confidence)")
    if not (0.0 <= delta < 1.0):
        raise AccountingError("delta", delta, "a probability in [0, 1)")


# ---- floats: the search --------------------------------------------------------------------------


def one_run_rhs_float(epsilon: float, delta: float, m: int, guesses: int, correct: int) -> float:
    """The theorem's right-hand side at ``correct`` in floats (the search only; never reported)."""
    r, v = int(guesses), int(correct)
    p = special.expit(epsilon)
    f_v = 1.0 if v <= 0 else (0.0 if v > r else float(special.betainc(v, r - v + 1, p)))
    if delta == 0.0 or v <= 0:
        return f_v
    j = np.arange(v - 1, -1, -1)  # v-1, v-2, ..., 0: f(v - i) - f(v) = sum_{j=v-i}^{v-1} pmf(j)
    window = np.cumsum(stats.binom.pmf(j, r, p))
    best = float(np.max(window / np.arange(1, v + 1)))
    best = max(best, (1.0 - f_v) / (v + 1)) if m > v else best  # i > v: f(v - i) = 1
    return min(1.0, f_v + 2.0 * m * delta * best)


# ---- Arb: the certificate ------------------------------------------------------------------------


def one_run_bound_rhs(epsilon: float, delta: float, m: int, guesses: int, correct: int) -> arb:
    """The theorem's right-hand side at ``correct``, as an Arb ball containing it (eps a float, exact)."""
    r, v = int(guesses), int(correct)
    old = ctx.prec
    ctx.prec = _PREC
    try:
        p = 1 / (1 + (-arb(float(epsilon))).exp())
        if v <= 0:
            f_v = arb(1)
        elif v > r:
            f_v = arb(0)
        else:
            f_v = p.beta_lower(v, r - v + 1, regularized=True)
        if delta == 0.0 or v <= 0:
            return f_v
        # pmf(v-1), then pmf(j-1) = pmf(j) * j / (r - j + 1) * (1 - p) / p
        j = v - 1
        pmf = (arb(r + 1).lgamma() - arb(j + 1).lgamma() - arb(r - j + 1).lgamma() + j * p.log() + (r - j) * (1 - p).log()).exp()
        ratio = (1 - p) / p
        window = arb(0)
        best_upper = 0.0
        i = 0
        while True:
            i += 1
            window += pmf
            term_upper = float((window / i).upper())
            best_upper = max(best_upper, term_upper)
            if j == 0 or 1.0 / (i + 1) <= best_upper:
                break
            pmf = pmf * j / (r - j + 1) * ratio
            j -= 1
        # the i not evaluated: (f(v - i) - f(v)) / i <= 1 / i <= 1 / (i + 1)
        if i < m:
            best_upper = max(best_upper, 1.0 / (i + 1))
        best = arb(best_upper)  # an upper bound of the maximum (upper endpoints of every term)
        return f_v + 2 * arb(m) * arb(float(delta)) * best
    finally:
        ctx.prec = old


def _certified(epsilon: float, delta: float, m: int, r: int, v: int, level: float) -> bool:
    return bool(one_run_bound_rhs(epsilon, delta, m, r, v) <= arb(float(level)))


def one_run_epsilon(m: int, guesses: int, correct: int, *, level: float = 0.05, delta: float = 0.0) -> float:
    """The one-run lower bound on epsilon at confidence 1 - ``level``, certified and rounded down.

    ``m``: canaries with a fair random bit; ``guesses``: how many were guessed (fixed before the
    run); ``correct``: how many guesses were right. ``delta``: the delta of the (eps, delta)
    hypothesis (0: pure eps). Returns 0.0 when no eps >= 0 is rejected.
    """
    _check(m, guesses, correct, level, delta)
    r, v = int(guesses), int(correct)
    g = lambda e: one_run_rhs_float(e, delta, m, r, v)  # noqa: E731
    if r == 0 or g(0.0) > level:
        return 0.0
    lo, hi = 0.0, 1.0
    while g(hi) <= level:
        lo, hi = hi, 2.0 * hi
        if hi > 1e4:
            break
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if g(mid) <= level:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * max(1.0, hi):
            break
    # certify: step down until Arb proves the right-hand side <= level at the reported float
    eps = lo
    step = max(1e-12, 1e-9 * eps)
    for _ in range(60):
        if eps <= 0.0:
            return 0.0
        if _certified(eps, delta, m, r, v, level):
            return float(eps)
        eps = max(0.0, eps - step)
        step *= 2.0
    return 0.0


def one_run_epsilon_two_sided(m: int, positive: tuple[int, int], negative: tuple[int, int], *, level: float = 0.05,
                              delta: float = 0.0) -> float:
    """Both directions bounded separately under *one* error budget: each at ``level / 2``, the larger kept.

    ``positive`` / ``negative``: (guesses, correct) of the "in" and the "out" guesses. (Counting
    both in one test, :func:`one_run_epsilon` on the sums, is usually tighter.)"""
    half = level / 2.0
    return max(one_run_epsilon(m, positive[0], positive[1], level=half, delta=delta),
               one_run_epsilon(m, negative[0], negative[1], level=half, delta=delta))


def p_of(epsilon: float) -> float:
    """e^eps / (1 + e^eps): the best accuracy an eps-DP guess of a fair bit can have."""
    return 1.0 / (1.0 + math.exp(-epsilon))
