"""Estimator-level tests of the auditor: exact binomial bounds, the Renyi box certificate, and
statistical checks of each estimator on mechanisms with known privacy.

Statistical tests use fixed seeds (CI is deterministic) and a stated error budget: every audit
here runs at family-wise alpha = 1e-6, so a correct mechanism is flagged with probability at most
1e-6 per test (the bounds are lower confidence bounds valid at that level). Power is stated per
test: the sample sizes are chosen so that the wrong variant's true parameter exceeds the claim by
a margin several times the bound's slack, and the same test, run on the wrong variant, must
report "violated". Nothing is retried.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import binom

from accounting._core._guarantees import ApproxDP, PureDP, ZCDP
from accounting._core._pairs import FinitePair
from dpverify._audit import NeighbourPair, audit, cp_lower, cp_upper, rate_interval, sequential_level
from dpverify._audit._estimators import _box, renyi_box_lower

ALPHA = 1e-6


# ---- mechanisms with known privacy ---------------------------------------------------------


def randomized_response(keep: float):
    """Binary randomized response keeping the bit w.p. ``keep``: eps = log(keep / (1 - keep))."""

    def mechanism(bit, rng, size):
        stay = rng.random(size) < keep
        return np.where(stay, bit, 1 - bit)

    return mechanism


def rr_keep(eps: float) -> float:
    return math.exp(eps) / (1 + math.exp(eps))


def discrete_laplace(scale: float):
    """x + Lap_Z(scale) (difference of two geometrics): eps = sensitivity / scale."""
    p = 1 - math.exp(-1 / scale)

    def mechanism(x, rng, size):
        return x + rng.geometric(p, size) - rng.geometric(p, size)

    return mechanism


def rr_renyi(eps: float, order: float) -> float:
    p = rr_keep(eps)
    q = 1 - p
    return math.log(p**order * q ** (1 - order) + q**order * p ** (1 - order)) / (order - 1)


def rr_delta(eps_true: float, eps: float) -> float:
    p = rr_keep(eps_true)
    return max(0.0, p - math.exp(eps) * (1 - p))


# ---- exact binomial bounds -----------------------------------------------------------------


def test_clopper_pearson_closed_forms():
    n, a = 50, 0.05
    assert cp_upper(0, n, a) == pytest.approx(1 - a ** (1 / n), rel=1e-12)
    assert cp_lower(n, n, a) == pytest.approx(a ** (1 / n), rel=1e-12)
    assert cp_lower(0, n, a) == 0.0
    assert cp_upper(n, n, a) == 1.0


@pytest.mark.parametrize("k", [1, 7, 25, 49])
def test_clopper_pearson_inverts_the_binomial_tail(k):
    """At the lower bound p_L, P[X >= k] = level; at the upper bound p_U, P[X <= k] = level."""
    n, level = 50, 0.01
    lo = float(cp_lower(k, n, level))
    hi = float(cp_upper(k, n, level))
    assert binom.sf(k - 1, n, lo) == pytest.approx(level, rel=1e-8)
    assert binom.cdf(k, n, hi) == pytest.approx(level, rel=1e-8)


def test_clopper_pearson_coverage_is_at_least_nominal():
    """Exact coverage of the one-sided bounds at several p (a computation, not a simulation)."""
    n, level = 40, 0.05
    ks = np.arange(n + 1)
    lows = cp_lower(ks, n, level)
    highs = cp_upper(ks, n, level)
    for p in np.linspace(0.01, 0.99, 37):
        pmf = binom.pmf(ks, n, p)
        assert pmf[lows > p].sum() <= level + 1e-12
        assert pmf[highs < p].sum() <= level + 1e-12


def test_sequential_levels_sum_to_alpha():
    total = sum(sequential_level(0.05, j) for j in range(1, 200_000))
    assert total <= 0.05
    assert total > 0.05 * 0.9999


def test_rate_interval_brackets_the_rate():
    lo, hi = rate_interval(50, 1000)
    assert lo < 0.05 < hi
    assert rate_interval(0, 1000)[0] == 0.0


# ---- the Renyi box certificate -------------------------------------------------------------


def _slsqp_min(order, pl, pu, ql, qu, rng, starts=8):
    bins = len(pl)

    def f(x):
        t = order * np.log(np.maximum(x[:bins], 1e-300)) + (1 - order) * np.log(np.maximum(x[bins:], 1e-300))
        m = t.max()
        return (m + math.log(np.exp(t - m).sum())) / (order - 1)

    best = math.inf
    cons = [{"type": "eq", "fun": lambda x: x[:bins].sum() - 1}, {"type": "eq", "fun": lambda x: x[bins:].sum() - 1}]
    bounds = list(zip(pl, pu)) + list(zip(np.maximum(ql, 1e-12), qu))
    for _ in range(starts):
        x0 = np.r_[rng.uniform(pl, pu), rng.uniform(np.maximum(ql, 1e-12), qu)]
        res = minimize(f, x0, method="SLSQP", bounds=bounds, constraints=cons, options={"maxiter": 500, "ftol": 1e-14})
        if res.success and abs(res.x[:bins].sum() - 1) < 1e-8 and abs(res.x[bins:].sum() - 1) < 1e-8:
            best = min(best, max(float(res.fun), 0.0))
    return best


def test_renyi_certificate_is_a_lower_bound_of_the_box_minimum_and_nearly_attains_it():
    """Weak duality: the certificate never exceeds any feasible value (here SLSQP's minimum);
    and it is within 1e-4 of it (the tangent at the minimiser's ratios is exact)."""
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(24):
        bins = int(rng.integers(2, 7))
        p = rng.dirichlet(np.ones(bins))
        q = rng.dirichlet(np.ones(bins))
        n = int(rng.choice([100, 1000, 100_000]))
        a = rng.multinomial(n, p).astype(float)
        b = rng.multinomial(n, q).astype(float)
        box = _box(a, n, b, n, 0.05)
        order = float(rng.choice([1.5, 2.0, 4.0, 8.0, 16.0]))
        lb, _ = renyi_box_lower(order, *box, start=(a + 0.5) / (b + 0.5))
        best = _slsqp_min(order, *box, rng, starts=4)
        if math.isfinite(best):
            checked += 1
            assert lb <= best + 1e-9
            assert lb >= best - 1e-4
    assert checked >= 20


def test_renyi_certificate_on_a_point_box_is_the_divergence():
    p = np.array([0.5, 0.3, 0.2])
    q = np.array([0.2, 0.3, 0.5])
    for order in (1.5, 2.0, 5.0):
        exact = math.log(np.sum(p**order * q ** (1 - order))) / (order - 1)
        lb, _ = renyi_box_lower(order, p, p, q, q, start=p / q)
        assert lb == pytest.approx(exact, rel=1e-7)
        assert lb <= exact


def test_renyi_certificate_is_zero_for_an_infeasible_box():
    lo = np.array([0.6, 0.6])
    hi = np.array([0.7, 0.7])
    assert renyi_box_lower(2.0, lo, hi, lo, hi, start=np.ones(2))[0] == 0.0


# ---- epsilon -------------------------------------------------------------------------------


def test_epsilon_holds_for_correct_randomized_response_and_is_tight():
    """RR at eps = 1, 4e5 samples: false alarm <= 1e-6; the bound is within 3% of the truth."""
    rep = audit(randomized_response(rr_keep(1.0)), (0, 1), PureDP(1.0), samples=400_000, alpha=ALPHA, seed=11)
    assert rep.verdict == "holds"
    for r in rep:
        assert 0.97 <= r.lower_bound <= 1.0
        assert r.confidence == pytest.approx(1 - ALPHA / 2)


def test_epsilon_flags_biased_randomized_response():
    """A coin kept w.p. 0.8 (true eps = log 4 = 1.386) claimed at eps = 1: with 4e5 samples the
    bound's slack (< 0.03 at this alpha) is far below the 0.386 gap, so power is ~1."""
    rep = audit(randomized_response(0.8), (0, 1), PureDP(1.0), samples=400_000, alpha=ALPHA, seed=11)
    assert rep.verdict == "violated"
    assert all(r.verdict == "violated" and 1.3 < r.lower_bound <= math.log(4) for r in rep)


def test_epsilon_on_discrete_laplace_correct_and_wrong_claim():
    """Lap_Z(1) with sensitivity 1 has eps = 1 exactly: claimed 1 holds, claimed 0.9 is violated."""
    mech = discrete_laplace(1.0)
    good = audit(mech, (0, 1), PureDP(1.0), samples=10**6, alpha=ALPHA, seed=5)
    bad = audit(mech, (0, 1), PureDP(0.9), samples=10**6, alpha=ALPHA, seed=5)
    assert good.verdict == "holds" and min(r.lower_bound for r in good) > 0.97
    assert bad.verdict == "violated"


def test_epsilon_on_continuous_laplace_uses_threshold_events():
    """Continuous Laplace(1) on neighbours 0, 1: eps = 1; binned events reach > 0.95."""

    def laplace(x, rng, size):
        return x + rng.laplace(0.0, 1.0, size)

    # float_bits=False: the real-arithmetic claim (the float implementation leaks through its low bits)
    rep = audit(laplace, (0.0, 1.0), PureDP(1.0), samples=10**6, alpha=ALPHA, seed=2, float_bits=False)
    assert rep.verdict == "holds"
    assert min(r.lower_bound for r in rep) > 0.95
    assert audit(laplace, (0.0, 1.0), PureDP(0.85), samples=10**6, alpha=ALPHA, seed=2, float_bits=False).verdict == "violated"


# ---- infinite epsilon ----------------------------------------------------------------------


def _leaky(x, rng, size):
    """Half the time releases x exactly: outputs {x, x + 5}; disjoint supports for x = 0, 1."""
    coin = rng.integers(0, 2, size)
    return np.where(coin == 0, x, x + 5)


def _leaky_log_pmf(x, outputs):
    outputs = np.asarray(outputs)
    return np.where((outputs == x) | (outputs == x + 5), math.log(0.5), -math.inf)


def test_infinite_epsilon_from_a_declared_log_pmf_is_reported_as_inf():
    rep = audit(_leaky, (0, 1), PureDP(1.0), samples=1000, alpha=ALPHA, log_pmf=_leaky_log_pmf,
                estimators=["epsilon", "renyi"])
    assert rep.verdict == "violated"
    assert all(r.lower_bound == math.inf for r in rep)
    assert "declared" in rep.results[0].method


def test_infinite_epsilon_from_an_integer_pair_law():
    half = Fraction(1, 2)
    law = FinitePair.from_masses([half, 0, 0, 0, 0, half, 0], [0, half, 0, 0, 0, 0, half])
    rep = audit(_leaky, NeighbourPair(0, 1, "leaky", law), PureDP(1.0), samples=1000, alpha=ALPHA)
    assert [r.lower_bound for r in rep] == [math.inf, math.inf]


def test_without_a_law_an_unseen_output_gives_a_finite_bound():
    """No pmf: never seeing an output in N draws bounds its probability by CP only -- finite."""
    rep = audit(_leaky, (0, 1), PureDP(1.0), samples=1000, alpha=ALPHA)
    assert rep.verdict == "violated"
    for r in rep:
        assert math.isfinite(r.lower_bound) and r.lower_bound > 1.0
        assert r.estimate == math.inf


def test_a_declared_law_does_not_make_a_correct_mechanism_infinite():
    keep = rr_keep(1.0)
    p = Fraction(keep).limit_denominator(10**12)
    law = FinitePair.from_masses([p, 1 - p], [1 - p, p])
    rep = audit(randomized_response(keep), NeighbourPair(0, 1, "rr", law), PureDP(1.0), samples=10**4, alpha=ALPHA)
    assert rep.verdict == "holds" and all(math.isfinite(r.lower_bound) for r in rep)


# ---- delta ---------------------------------------------------------------------------------


def test_delta_at_the_claimed_epsilon():
    """RR at eps = 1 is (0.5, delta)-DP with delta = p - e^0.5 (1 - p) = 0.2883 exactly.
    Claimed at that delta it holds; claimed at delta = 0.25 it is violated (gap 0.038, slack
    < 0.01 at 4e5 samples)."""
    mech = randomized_response(rr_keep(1.0))
    true = rr_delta(1.0, 0.5)
    ok = audit(mech, (0, 1), ApproxDP(0.5, true), samples=400_000, alpha=ALPHA, seed=3)
    bad = audit(mech, (0, 1), ApproxDP(0.5, 0.25), samples=400_000, alpha=ALPHA, seed=3)
    assert ok.verdict == "holds" and all(true - 0.01 < r.lower_bound <= true for r in ok)
    assert bad.verdict == "violated"


# ---- Renyi ---------------------------------------------------------------------------------


def test_renyi_holds_for_the_tight_zcdp_of_randomized_response_and_flags_half_of_it():
    """eps-DP RR is eps tanh(eps/2)-zCDP (tight at alpha -> 1); claiming half of its zCDP
    parameter is violated at small alpha."""
    eps = 1.0
    mech = randomized_response(rr_keep(eps))
    rho = PureDP(eps).to_zcdp().rho
    ok = audit(mech, (0, 1), ZCDP(rho), samples=400_000, alpha=ALPHA, seed=4)
    bad = audit(mech, (0, 1), ZCDP(rho / 2), samples=400_000, alpha=ALPHA, seed=4)
    assert ok.verdict == "holds"
    assert bad.verdict == "violated"
    for r in ok:
        for order, lower in zip(r.details["orders"], r.details["lower"]):
            assert lower <= rr_renyi(eps, order) + 1e-12 or lower == 0.0


def test_renyi_lower_bounds_are_close_to_the_exact_divergence():
    eps = 1.0
    rep = audit(randomized_response(rr_keep(eps)), (0, 1), PureDP(eps), estimators=["renyi"], samples=10**6,
                alpha=ALPHA, seed=9, orders=(2.0, 8.0))
    for r in rep:
        for order, lower in zip(r.details["orders"], r.details["lower"]):
            assert 0.95 * rr_renyi(eps, order) <= lower <= rr_renyi(eps, order)


def test_chosen_events_place_keys_first_seen_in_the_bound_sample_by_their_rule():
    """Events are chosen on the selection sample's keys; the bound sample may show new keys. Each
    event's rule fixes it on the whole output space: a singleton stays one key, a tail takes the
    new keys beyond its threshold, a likelihood-ratio union takes a never-ranked key exactly when
    the fixed unseen-cell ratio reaches its threshold."""
    from dpverify._audit._estimators import Counts, _Event
    from dpverify._audit._views import DiscreteView

    def counts(keys, p_a, q_a):
        z = np.zeros(len(keys), dtype=np.int64)
        return Counts(DiscreteView(), np.asarray(keys), np.asarray(p_a), np.asarray(q_a), z, z, z, z)

    chosen_on = counts([1, 3], [5, 1], [1, 5])
    grown = counts([0, 1, 2, 3, 4], [0, 5, 0, 1, 0], [0, 1, 0, 5, 0])
    mask = np.array([True, False])
    assert _Event(0, mask, "singleton", ("key", 1)).on(grown).mask.tolist() == [False, True, False, False, False]
    assert _Event(0, mask, "upper tail", ("upper", 3)).on(grown).mask.tolist() == [False, False, False, True, True]
    assert _Event(0, mask, "lower tail", ("lower", 1)).on(grown).mask.tolist() == [True, True, False, False, False]
    r_unseen = float(grown.log_ratio_rank()[0])  # the smoothed ratio of a cell with no ranking counts
    r_first = float(chosen_on.log_ratio_rank()[0])
    assert r_first > r_unseen
    assert _Event(0, mask, "likelihood-ratio", ("ratio", r_first)).on(grown).mask.tolist() == [False, True, False, False, False]
    assert _Event(0, mask, "likelihood-ratio", ("ratio", r_unseen)).on(grown).mask.tolist() == [True, True, True, False, True]
    # rows as keys (unordered views): the singleton matches the whole row
    rows = Counts(DiscreteView(), np.array([[0, 1], [1, 0], [1, 1]]), *([np.zeros(3, dtype=np.int64)] * 6))
    assert _Event(0, np.array([True]), "singleton", ("key", np.array([1, 0]))).on(rows).mask.tolist() == [False, True, False]
