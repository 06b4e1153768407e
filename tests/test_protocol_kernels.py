"""Tests of the per-user protocol P = (R, S, A) (dpverify._executed._protocol_kernels) and its aggregate path.

The server's view of each SecAgg protocol must equal in law (sum_i xhat_i + Z) mod m, with
sum xhat Poisson-binomial (the randomised rounding) and Z the summed noise; we compute that law
exactly (convolutions of exact pmfs from tests/naive.py, wrapped mod m) and test per-user and
aggregate views against it. False alarms: Bonferroni over N_GOF_TESTS tests at family rate 1e-6,
fixed seeds, no retries; each test states (and asserts) its computed power.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import naive
from _gof import integer_gof
from dpverify._executed import _protocol_kernels as P

FAMILY_ALPHA = 1e-6
N_GOF_TESTS = 11
ALPHA = FAMILY_ALPHA / N_GOF_TESTS

X8 = np.array([0.1, 0.5, 0.9, 0.0, 1.0, 1 / 3, 0.77, 0.25])


def rng_for(label: str) -> np.random.Generator:
    return np.random.default_rng([7041, *label.encode()])


def rounding_pmf(x, g):
    """Exact law of sum_i xhat_i: floor parts plus a Poisson-binomial over the float fractions."""
    xg = np.asarray(x, dtype=float) * g
    base = np.floor(xg)
    pmf = np.array([1.0])
    for f in xg - base:
        pmf = np.convolve(pmf, [1.0 - f, f])
    return int(base.sum()), pmf


def view_law(x, g, m, noise_lo, noise_probs):
    """Law of (sum xhat + Z) mod m on {0..m-1}."""
    s_lo, s_pmf = rounding_pmf(x, g)
    total = np.convolve(s_pmf, noise_probs)
    return naive.wrap_mod(s_lo + noise_lo, total, m)


def check_views(views, law, *, tv=0.01):
    res = integer_gof(views, 0, law, alpha=ALPHA)
    assert not res.rejected, str(res)
    assert res.power_at_tv(tv) > 0.999, res.power_at_tv(tv)
    return res


def theorem_params(n, eps, s=1.0, p=0.1, tau_kind=1):
    g = math.ceil(s * eps * math.sqrt(n))
    log_term = math.log(2 / p)
    tau = {
        1: math.ceil(g / eps * log_term),
        2: math.ceil(2 * g / eps * math.sqrt(log_term) + math.sqrt(2) * log_term),
        4: math.ceil(g / eps * math.sqrt(2 * log_term)),
    }[tau_kind]
    return g, tau, n * g + 2 * tau + 1


# ------------------------------------------------------------------------------------------------
# The view equals (sum xhat + Z) mod m in law: per user and aggregate
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["per_user", "aggregate"])
def test_view_law_theorem1(path):
    """Theorem 1, n = 8, eps = 1 (g = 3, Z ~ Lap_Z(3)), 1e6 views; power > 0.999 at 1% TV."""
    n, eps = 8, 1.0
    g, tau, m = theorem_params(n, eps)
    rng = rng_for(f"t1{path}")
    if path == "per_user":
        views = P.server_views(rng, X8, g, m, 1_000_000, "polya", eps=eps)
    else:
        views = P.aggregate_views(rng, X8, g, m, 1_000_000, "discrete_laplace", scale=Fraction(g) / Fraction(eps))
    lo, probs, _, _ = naive.discrete_laplace_pmf(Fraction(g), 60 * g)
    check_views(views, view_law(X8, g, m, lo, probs))


@pytest.mark.parametrize("path", ["per_user", "aggregate"])
def test_view_law_theorem2(path):
    """Theorem 2, n = 8, eps = 1, s = 1 (g = 3): per-user Sk(0, 9/8), total Sk(0, 9); 1e6 views."""
    n, eps = 8, 1.0
    g, tau, m = theorem_params(n, eps, tau_kind=2)
    rng = rng_for(f"t2{path}")
    if path == "per_user":
        views = P.server_views(rng, X8, g, m, 1_000_000, "skellam", eps=eps)
    else:
        views = P.aggregate_views(rng, X8, g, m, 1_000_000, "skellam", variance=g * g / eps**2)
    lo, probs, _, _ = naive.skellam_pmf(g * g / eps**2, 200)
    check_views(views, view_law(X8, g, m, lo, probs))


def test_view_law_theorem4_per_user():
    """Theorem 4, n = 4, eps = 1 (g = 2): per-user N_Z(0, 1); Z is the 4-fold convolution (not a
    discrete Gaussian); 1e6 views."""
    x = X8[:4]
    n, eps = 4, Fraction(1)
    g, tau, m = theorem_params(n, 1.0, tau_kind=4)
    views = P.server_views(rng_for("t4"), x, g, m, 1_000_000, "discrete_gaussian", eps=eps)
    lo1, p1, _, _ = naive.discrete_gaussian_pmf(Fraction(g * g, n), 30)
    probs = p1
    for _ in range(n - 1):
        probs = np.convolve(probs, p1)
    check_views(views, view_law(x, g, m, n * lo1, probs))


def test_aggregate_path_refuses_discrete_gaussian():
    with pytest.raises(ValueError, match="total_noise"):
        P.aggregate_views(rng_for("x"), X8, 3, 100, 10, "discrete_gaussian")


def test_randomize_then_secure_aggregate_matches_view_law():
    """R (randomize) and S (secure_aggregate) called separately give the same law as the fused
    kernel: 20000 runs of Theorem 1 at n = 8 (power > 0.999 at 5% TV, computed)."""
    n, eps = 8, 1.0
    g, tau, m = theorem_params(n, eps)
    rng = rng_for("r-then-s")
    views = [P.secure_aggregate(P.randomize(rng, X8, g, m, "polya", eps=eps), m) for _ in range(20_000)]
    lo, probs, _, _ = naive.discrete_laplace_pmf(Fraction(g), 60 * g)
    check_views(views, view_law(X8, g, m, lo, probs), tv=0.05)


def test_naive_twin_view_law():
    """The pure-Python twin (Fractions, random.Random) of R + S with Lap_Z noise fits the same law:
    Lap_Z(1) noise per user, 20000 runs, n = 3 (power > 0.999 at 5% TV)."""
    import random

    x, g, m = [0.1, 0.5, 0.9], 3, 40
    rnd = random.Random(3)
    views = [naive.naive_server_view(rnd, x, g, m, lambda r: naive.naive_discrete_laplace(r, Fraction(1))) for _ in range(20_000)]
    lo, one, _, _ = naive.discrete_laplace_pmf(Fraction(1), 60)
    probs = np.convolve(np.convolve(one, one), one)  # Z is the sum of the 3 users' noise
    check_views(views, view_law(x, g, m, 3 * lo, probs), tv=0.05)


# ------------------------------------------------------------------------------------------------
# Sums of per-user noise at scale: n = 2**20
# ------------------------------------------------------------------------------------------------


def _unwrap(views, m):
    return np.where(views > m // 2, views - m, views)


def test_per_user_polya_sum_is_discrete_laplace_at_n_2_20():
    """n = 2**20 users with x = 0, eps = 1 (g = 1024): the unwrapped view is the sum of 2**20
    per-user Polya differences and must be Lap_Z(1024). 400 runs (4e8 user draws); the computed
    power is > 0.99 against laws 25% away in binned TV (a scale error by 2x is > 30% away).
    The wrong variant beta = e^{-eps} gives noise ~1000x smaller and is rejected."""
    n, eps = 2**20, 1.0
    g, tau, m = theorem_params(n, eps)
    x = np.zeros(n)
    z = _unwrap(P.server_views(rng_for("n20"), x, g, m, 400, "polya", eps=eps), m)
    lo, probs, lower, upper = naive.discrete_laplace_pmf(Fraction(g), 40 * g)
    res = integer_gof(z, lo, probs, alpha=ALPHA, lower_tail=lower, upper_tail=upper)
    assert not res.rejected, str(res)
    assert res.power_at_tv(0.25) > 0.99
    # the bug: per-user beta = e^{-eps}; Z is then a sum of Polya(1/n, e^{-1}) differences
    wrong = _unwrap(P.server_views(rng_for("n20w"), x, 1, n + 2 * tau + 1, 400, "polya", eps=eps), n + 2 * tau + 1)
    assert integer_gof(wrong, lo, probs, alpha=ALPHA, lower_tail=lower, upper_tail=upper).rejected


def test_per_user_skellam_sum_at_n_2_10():
    """n = 2**10, eps = 1, s = 1 (g = 32): per-user Sk(0, 1) summed is Sk(0, 1024); 20000 runs
    (power > 0.999 at 5% TV)."""
    n, eps = 2**10, 1.0
    g, tau, m = theorem_params(n, eps, tau_kind=2)
    z = _unwrap(P.server_views(rng_for("sk10"), np.zeros(n), g, m, 20_000, "skellam", eps=eps), m)
    lo, probs, lower, upper = naive.skellam_pmf(g * g / eps**2, 400)
    res = integer_gof(z, lo, probs, alpha=ALPHA, lower_tail=lower, upper_tail=upper)
    assert not res.rejected, str(res)
    assert res.power_at_tv(0.05) > 0.999


@pytest.mark.slow
def test_per_user_skellam_sum_at_n_2_20():
    """n = 2**20, eps = 1, s = 1: per-user Sk(0, 1) summed is Sk(0, 2**20); 200 runs (2e8 users,
    ~15 s). Power > 0.99 against 30% binned TV."""
    n, eps = 2**20, 1.0
    g, tau, m = theorem_params(n, eps, tau_kind=2)
    z = _unwrap(P.server_views(rng_for("sk20"), np.zeros(n), g, m, 200, "skellam", eps=eps), m)
    lo, probs, lower, upper = naive.skellam_pmf(g * g / eps**2, 12 * g)
    res = integer_gof(z, lo, probs, alpha=ALPHA, lower_tail=lower, upper_tail=upper)
    assert not res.rejected, str(res)
    assert res.power_at_tv(0.3) > 0.99


# ------------------------------------------------------------------------------------------------
# Analyzer
# ------------------------------------------------------------------------------------------------


@given(
    n=st.integers(1, 2**24),
    g=st.integers(1, 10**6),
    tau=st.integers(0, 10**7),
    data=st.data(),
)
def test_analyzer_recovers_sum_when_noise_within_tau(n, g, tau, data):
    """If |Z| <= tau then A((S + Z) mod m) = (S + Z)/g exactly, for every S in [0, n g]."""
    m = n * g + 2 * tau + 1
    s_hat = data.draw(st.integers(0, n * g))
    z = data.draw(st.integers(-tau, tau))
    est = P.analyze((s_hat + z) % m, n, g, m, tau)
    assert est == (s_hat + z) / g


def test_analyzer_error_bounded_when_noise_within_tau():
    """End to end at n = 64, Theorem 1 with p = 0.1: |z - sum x| <= tau/g + n/g unless |Z| > tau,
    and P[|Z| > tau] = 2 e^{-(tau+1)/b}/(1 + e^{-1/b}) <= p (exact, b = g/eps). 20000 runs: the
    number of exceedances is at most the binomial quantile at level ALPHA."""
    n, eps = 64, 1.0
    g, tau, m = theorem_params(n, eps)
    x = rng_for("x64").random(n)
    est = P.analyzer_estimates(rng_for("an"), x, g, m, tau, 20_000, "polya", eps=eps)
    b = g / eps
    p_out = 2 * math.exp(-(tau + 1) / b) / (1 + math.exp(-1 / b))
    exceed = int(np.sum(np.abs(est - x.sum()) > tau / g + n / g))
    assert exceed <= stats.binom.isf(ALPHA, 20_000, p_out)


def test_disabling_underflow_correction_changes_estimates_not_views():
    """The planted utility bug: same views (privacy unchanged), but negative totals wrap to ~m/g."""
    n, eps = 16, 1.0
    g, tau, m = theorem_params(n, eps)
    x = np.zeros(n)
    v1 = P.server_views(rng_for("uf"), x, g, m, 2000, "polya", eps=eps)
    good = P.analyzer_estimates(rng_for("uf"), x, g, m, tau, 2000, "polya", eps=eps)
    bad = P.analyzer_estimates(rng_for("uf"), x, g, m, tau, 2000, "polya", eps=eps, underflow_correction=False)
    assert np.array_equal(good, P.analyze(v1, n, g, m, tau))
    assert np.array_equal(bad, v1 / g)
    wrapped = bad != good
    assert wrapped.any()
    assert np.allclose(bad[wrapped] - good[wrapped], m / g) and np.all(bad[wrapped] > n + tau / g)


def test_modular_sum_has_no_overflow_at_the_largest_theorem_parameters():
    """n = 2**24, s = 100, eps = 10: g = ceil(s eps sqrt n) = 4096000, m ~ 6.9e13 < 2**47; the
    Python-integer S agrees with the kernel's running reduction on messages near m."""
    n, eps, s = 2**24, 10.0, 100.0
    g, tau, m = theorem_params(n, eps, s=s, tau_kind=2)
    assert m < 2**47
    y = np.full(1000, m - 1, dtype=np.int64)
    assert P.secure_aggregate(y, m) == (1000 * (m - 1)) % m


# ------------------------------------------------------------------------------------------------
# Validation
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda r: P.server_views(r, X8, 3, 100, 10, "laplace", eps=1.0), "noise"),
        (lambda r: P.server_views(r, X8, 3, 100, 10, "polya"), "eps"),
        (lambda r: P.server_views(r, X8, 3, 100, 10, "polya", eps=-1.0), "eps"),
        (lambda r: P.server_views(r, X8, 3, 100, 10, "polya", eps=1e4), "eps"),
        (lambda r: P.server_views(r, X8, 3, 100, 10, "skellam", eps=1e-12), "eps"),
        (lambda r: P.server_views(r, [0.5, 1.5], 3, 100, 10), "x"),
        (lambda r: P.server_views(r, [0.5, float("nan")], 3, 100, 10), "x"),
        (lambda r: P.server_views(r, X8, 0, 100, 10), "g"),
        (lambda r: P.server_views(r, X8, 3, 24, 10), "m"),
        (lambda r: P.server_views(r, X8, 3, 100, -1), "reps"),
        (lambda r: P.server_views(r, X8, 3, 100, 10, "discrete_gaussian", eps=0.1), "sigma2"),
        (lambda r: P.aggregate_views(r, X8, 3, 100, 10, "discrete_laplace", scale=0), "scale"),
        (lambda r: P.aggregate_views(r, X8, 3, 100, 10, "skellam", variance=-1.0), "variance"),
        (lambda r: P.analyze(5, 8, 3, 100, -1), "tau"),
        (lambda r: P.secure_aggregate([1, 200], 100), "y"),
    ],
)
def test_bad_parameters_raise_value_error_naming_them(call, name):
    with pytest.raises(ValueError, match=rf"^{name}="):
        call(np.random.default_rng(0))
