"""Mechanism guarantees: closed forms, relations, certification, composition, validation, pairs."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from flint import arb
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting._core._certified import exact, upper_float, working_precision
from accounting._core._conversions import rdp_to_delta, rdp_to_epsilon
from accounting._core._guarantees import RDP, ZCDP, PureDP
from accounting._mechanisms import (
    BernoulliCurator,
    Binomial,
    DiscreteGaussian,
    DiscreteGaussianSum,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    PolyaDifferenceSum,
    RandomizedResponse,
    Skellam,
)
from accounting._mechanisms import _skellam
from accounting._papers._paper_params import theorem2_claimed_rdp, theorem2_corrected_rdp, theorem2_parameters

ALPHAS = [1.01, 1.5, 2, 2.75, 5, 10, 33.3, 100, 1000]


def mp_ctx(dps: int = 50) -> mpmath.ctx_mp.MPContext:
    ctx = mpmath.MPContext()
    ctx.dps = dps
    return ctx


# ---------------------------------------------------------------------------------------------
# closed forms pinned


def test_gaussian_rdp_is_alpha_delta2_over_2sigma2():
    g = Gaussian(2.0, 3.0)
    for a in ALPHAS:
        with working_precision(None):
            expected = upper_float(exact(a) * 9 / 8)
        assert g.rdp()(a) == expected
    assert g.zcdp() == ZCDP(9 / 8)
    assert g.pure() is None


@pytest.mark.parametrize("scale,delta", [(1.0, 1.0), (0.5, 1.0), (3.0, 2.0)])
def test_laplace_matches_mironov_2017(scale, delta):
    mp = mp_ctx()
    lam = mp.mpf(scale) / delta
    for a in ALPHAS:
        A = mp.mpf(a)
        ref = mp.log(A / (2 * A - 1) * mp.exp((A - 1) / lam) + (A - 1) / (2 * A - 1) * mp.exp(-A / lam)) / (A - 1)
        got = Laplace(scale, delta).rdp()(a)
        assert got >= ref
        assert got - ref <= 1e-14 * max(1.0, float(ref))
    eps = Laplace(scale, delta).pure().epsilon  # Delta/b rounded *up*
    assert Fraction(eps) >= Fraction(delta) / Fraction(scale)
    assert eps <= math.nextafter(delta / scale, math.inf)


@pytest.mark.parametrize("cls", [RandomizedResponse, BernoulliCurator])
def test_randomized_response_exact(cls):
    mp = mp_ctx()
    eps = 0.7
    p = mp.e**eps / (1 + mp.e**eps)
    m = cls(eps)
    for a in ALPHAS:
        A = mp.mpf(a)
        ref = mp.log(p**A * (1 - p) ** (1 - A) + (1 - p) ** A * p ** (1 - A)) / (A - 1)
        got = m.rdp()(a)
        assert ref <= got <= ref + 1e-14
        assert got <= RDP.pure(eps)(a) * (1 + 1e-14)
    assert m.pure() == PureDP(eps)
    assert abs(m.zcdp().rho - float(eps * mp.tanh(eps / 2))) < 1e-15
    pair = m.output_pair()
    assert abs(float(pair.log_p(1).mid()) - float(mp.log(p))) < 1e-14
    assert float(pair.tail_p(0, 1).upper()) == 0.0


# ---------------------------------------------------------------------------------------------
# relations


def test_skellam_below_agarwal():
    for mu in (4, 100, 2500):
        m = Skellam(mu)
        agarwal = m.closed_forms()["agarwal_2021_thm3.5"]
        for a in ALPHAS:
            assert m.rdp()(a) <= agarwal(a)


def test_discrete_gaussian_below_gaussian_equal_at_integers():
    for sigma, delta in ((1, 1), (0.3, 2), (4.5, 3)):
        m = DiscreteGaussian(sigma, delta)
        gauss = m.zcdp().to_rdp()
        for a in ALPHAS:
            value, bound = m.rdp()(a), gauss(a)
            assert value <= bound
            if float(a).is_integer():
                assert value == pytest.approx(bound, rel=1e-15)
        # strictly below off the integers (visible in floats only for small sigma: the gap is
        # of order e^{-2 pi^2 sigma^2})
        if sigma <= 1:
            off = 1.5 if delta % 2 else 1.25
            assert m.rdp()(off) < gauss(off)


@pytest.mark.parametrize(
    "mechanism",
    [
        DiscreteLaplace(2.0, 3),
        Laplace(0.8),
        Gaussian(1.5),
        DiscreteGaussian(0.7, 2),
        Skellam(30),
        RandomizedResponse(1.3),
        DiscreteGaussianSum(3, 1.0, 1),
    ],
    ids=lambda m: m.family,
)
def test_curves_non_decreasing(mechanism):
    grid = [1 + 0.05 * i for i in range(1, 20)] + [3, 7, 20, 64, 300, 2000]
    values = mechanism.rdp().evaluate(grid)
    for x, y in zip(values, values[1:]):
        assert y >= x * (1 - 1e-15)


def test_discrete_laplace_below_pure():
    for b, d in ((1.0, 1), (2.0, 3), (0.25, 2), (10, 1)):
        m = DiscreteLaplace(b, d)
        tight = RDP.pure(m.epsilon)
        for a in ALPHAS + [1e4]:
            v = m.rdp()(a)
            assert v <= m.epsilon
            assert v <= tight(a) * (1 + 1e-15)
        if d == 1:  # Delta = 1: the discrete Laplace pair *is* the pure-DP extremal one at alpha -> inf
            assert m.rdp()(1e4) == pytest.approx(m.epsilon, rel=1e-3)


def test_discrete_laplace_brute_force():
    mp = mp_ctx(40)
    b, d = mp.mpf(2), 3
    c = mp.tanh(1 / (2 * b))
    for a in (1.01, 2, 7.5):
        A = mp.mpf(a)
        s = mp.nsum(lambda k: c * mp.exp(-(A * abs(k) + (1 - A) * abs(k - d)) / b), [-mp.inf, mp.inf])
        ref = mp.log(s) / (A - 1)
        got = DiscreteLaplace(2.0, 3).rdp()(a)
        assert ref <= got <= ref + 1e-13


def test_polya_sum_is_discrete_laplace():
    m = PolyaDifferenceSum(64, 5.0, 2)
    law = DiscreteLaplace(5.0, 2)
    assert m.law == law
    assert m.pure() == law.pure()
    for a in (1.5, 3, 40):
        assert m.rdp()(a) == law.rdp()(a)
    assert m.polya_r == Fraction(1, 64)
    assert abs(float(m.polya_beta().mid()) - math.exp(-0.2)) < 1e-15


def test_discrete_gaussian_sum_brute_force():
    mp = mp_ctx(40)
    n, sigma, d = 3, 0.7, 2
    W = 40
    base = {x: mp.exp(-mp.mpf(x) ** 2 / (2 * mp.mpf(sigma) ** 2)) for x in range(-W, W + 1)}
    z = sum(base.values())
    cur = {0: mp.mpf(1)}
    for _ in range(n):
        nxt: dict = {}
        for k, v in cur.items():
            for x, p in base.items():
                nxt[k + x] = nxt.get(k + x, 0) + v * p / z
        cur = nxt
    m = DiscreteGaussianSum(n, sigma, d)
    for a in (1.5, 2, 3.3, 20):
        A = mp.mpf(a)
        ref = mp.log(sum(cur[k] ** A * cur[k - d] ** (1 - A) for k in cur if k - d in cur)) / (A - 1)
        got = m.rdp()(a)
        assert ref - 1e-12 <= got <= ref + 1e-12 * max(1, float(ref))
    # sum is more private than one discrete Gaussian; KLS bound dominates at sigma >= 1/2
    kls = DiscreteGaussianSum(8, 1.0).closed_forms()["kairouz_2021_prop13"]
    exact_curve = DiscreteGaussianSum(8, 1.0).rdp()
    for a in (2, 10, 100):
        assert exact_curve(a) <= kls.to_rdp()(a)
        assert exact_curve(a) <= DiscreteGaussian(1.0).rdp()(a)


def test_discrete_gaussian_sum_fallback_is_labelled():
    m = DiscreteGaussianSum(1 << 13, 2.0)
    assert not m.exact_route
    curve = m.rdp()
    assert "fallback" in curve.describe()
    assert curve(2) <= m.closed_forms()["kairouz_2021_prop13"].to_rdp()(2)
    assert m.output_pair() is None


def test_binomial_rdp_is_infinite_and_delta_exact():
    m = Binomial(40, 0.5, 1)
    assert m.rdp()(2) == math.inf
    assert m.pure() is None
    mp = mp_ctx(40)
    pmf = [mp.binomial(40, k) / mp.mpf(2) ** 40 for k in range(41)]
    P, Q = pmf + [0], [0] + pmf
    for eps in (0.1, 1.0, 2.5):
        e = mp.e**eps
        ref = max(sum(max(0, a - e * b) for a, b in zip(A, B)) for A, B in ((P, Q), (Q, P)))
        got = m.delta(eps)
        assert ref <= got <= ref * (1 + 1e-14) + 1e-300
    asym = Binomial(10, Fraction(1, 3), 2)
    assert 0 < asym.delta(0.5) < 1


def test_iclr_theorem2_printed_and_corrected():
    # the paper's parameters come from accounting._papers._paper_params (the single source)
    params = theorem2_parameters(1.0, 10, 100, 0.1)
    assert params.g == 100 and params.total_variance == 10000
    m = Skellam(params.total_variance, params.g, params.g)
    printed, corrected = theorem2_claimed_rdp(1.0, 10), theorem2_corrected_rdp(1.0, 10, 100)
    agarwal = m.closed_forms()["agarwal_2021_thm3.5"]
    for a in (2, 10, 100, 1000):
        assert corrected(a) == agarwal(a)
        assert m.rdp()(a) <= corrected(a) <= printed(a)
    # as printed, the large-alpha branch uses 3 eps^2/(2s) = 0.15 where it should be 3 eps^2/(2g) = 0.015
    assert printed(1000) == pytest.approx(500 + 0.15, rel=1e-12)
    assert corrected(1000) == pytest.approx(500 + 0.015, rel=1e-12)
    with pytest.raises(ValueError, match="s="):
        theorem2_corrected_rdp(1.0, 0.5, 10)
    with pytest.raises(ValueError, match="n="):
        theorem2_corrected_rdp(1.0, 10, 0)


# ---------------------------------------------------------------------------------------------
# certification: never below a reference at twice the precision


def _reference(curve: RDP, alpha: float, bits: int) -> float:
    with working_precision(2 * bits):
        return float(curve.ball(alpha).mid())


finite_alpha = st.floats(min_value=1.001, max_value=3000, allow_nan=False, allow_infinity=False)


@settings(deadline=None, max_examples=25)
@given(
    b=st.floats(min_value=0.05, max_value=50),
    d=st.integers(min_value=1, max_value=6),
    alpha=finite_alpha,
)
def test_discrete_laplace_certified(b, d, alpha):
    curve = DiscreteLaplace(b, d).rdp()
    assert curve(alpha) >= _reference(curve, alpha, 96)


@settings(deadline=None, max_examples=25)
@given(
    sigma=st.floats(min_value=0.1, max_value=30),
    d=st.integers(min_value=1, max_value=5),
    alpha=finite_alpha,
)
def test_discrete_gaussian_certified(sigma, d, alpha):
    curve = DiscreteGaussian(sigma, d).rdp()
    assert curve(alpha) >= _reference(curve, alpha, 96)


@settings(deadline=None, max_examples=15)
@given(
    mu=st.floats(min_value=0.5, max_value=400),
    d=st.integers(min_value=1, max_value=3),
    alpha=st.floats(min_value=1.001, max_value=500),
)
def test_skellam_certified(mu, d, alpha):
    curve = Skellam(mu, d).rdp()
    assert curve(alpha) >= _reference(curve, alpha, 96)


@settings(deadline=None, max_examples=20)
@given(
    eps=st.floats(min_value=0.01, max_value=8),
    alpha=finite_alpha,
    which=st.sampled_from(["laplace", "rr"]),
)
def test_continuous_and_binary_certified(eps, alpha, which):
    curve = (Laplace(1.0, eps) if which == "laplace" else RandomizedResponse(eps)).rdp()
    assert curve(alpha) >= _reference(curve, alpha, 96)


def test_skellam_bessel_ratio_bounds_hold():
    """The Amos/Segura bounds the Skellam left-tail proof uses, checked against Arb's Bessel values."""
    with working_precision(160):
        for x in (0.3, 4, 100, 3000):
            X = arb(x)
            for nu in (0, 1, 7, 50, 400, 5000):
                q = X.bessel_i(nu + 1, scaled=True) / X.bessel_i(nu, scaled=True)
                h = arb(2 * nu + 1) / 2
                upper = X / (h + (h * h + X * X).sqrt())
                lower = X / (h + ((h + 1) ** 2 + X * X).sqrt())
                assert q < upper and q > lower


def test_skellam_table_matches_arb_bessel():
    with working_precision(96):
        table = _skellam._table(37, 300, 140)
        for n in (0, 1, 36, 37, 150, 299):
            direct = arb(37).bessel_i(n, scaled=True).log()
            assert table.logs[n].overlaps(direct)


# ---------------------------------------------------------------------------------------------
# k-fold composition in one call equals k separate compositions


COMPOSABLE = [
    DiscreteLaplace(3.0, 2),
    PolyaDifferenceSum(16, 3.0, 2),
    Laplace(2.0),
    Gaussian(3.0),
    DiscreteGaussian(1.3, 1),
    DiscreteGaussianSum(4, 1.0, 1),
    Skellam(50),
    RandomizedResponse(0.9),
    BernoulliCurator(0.9),
]


@pytest.mark.parametrize("mechanism", COMPOSABLE, ids=lambda m: m.family)
@pytest.mark.parametrize("k", [1, 3, 17])
def test_k_fold_composition(mechanism, k):
    # times(k) multiplies the upper endpoint by k; sequence adds k copies. Both are certified;
    # at 96 bits they differ only by the rounding of k additions (relative 2^-90 per operation),
    # well inside 1e-13 relative after rounding up to floats.
    curve = mechanism.rdp()
    for a in (1.3, 2, 9.5, 200):
        one = curve.times(k)(a)
        many = RDP.sequence([curve] * k)(a)
        assert one == pytest.approx(many, rel=1e-13)
        assert one >= k * curve(a) * (1 - 1e-15)
    if mechanism.pure() is not None:
        assert mechanism.pure().times(k) == PureDP(mechanism.pure().epsilon).compose(*[mechanism.pure()] * (k - 1)) or (
            mechanism.pure().times(k).epsilon == pytest.approx(sum([mechanism.pure().epsilon] * k), rel=1e-15)
        )
    if mechanism.zcdp() is not None:
        z = mechanism.zcdp()
        assert z.times(k).rho == pytest.approx(z.compose(*[z] * (k - 1)).rho if k > 1 else z.rho, rel=1e-15)


# ---------------------------------------------------------------------------------------------
# pairs


@pytest.mark.parametrize(
    "mechanism",
    [DiscreteLaplace(2.5, 2), DiscreteGaussian(1.7, 2), Skellam(20, 2), DiscreteGaussianSum(3, 1.0, 2)],
    ids=lambda m: m.family,
)
def test_pair_contract(mechanism):
    pair = mechanism.output_pair()
    lo, hi = pair.window(1e-12)
    with working_precision(96):
        mass_p = sum((pair.log_p(k).exp() for k in range(lo, hi + 1)), arb(0))
        mass_q = sum((pair.log_q(k).exp() for k in range(lo, hi + 1)), arb(0))
        assert (mass_p + pair.tail_p(lo, hi)).upper() >= 1
        assert (mass_q + pair.tail_q(lo, hi)).upper() >= 1
        assert mass_p.lower() <= 1 and mass_q.lower() <= 1
        assert float(pair.tail_p(lo, hi).upper()) <= 1e-12
        d = getattr(mechanism, "sensitivity", None) or mechanism.l1_sensitivity
        assert pair.log_q(d + 1).overlaps(pair.log_p(1))


def test_discrete_laplace_pair_tails_exact():
    pair = DiscreteLaplace(2.0, 1).output_pair()
    with working_precision(96):
        inside = sum((pair.log_p(k).exp() for k in range(-3, 6)), arb(0))
        assert (inside + pair.tail_p(-3, 5)).overlaps(arb(1))
        assert pair.tail_p(5, 4).overlaps(arb(1))


# ---------------------------------------------------------------------------------------------
# validation


@pytest.mark.parametrize(
    "build,name",
    [
        (lambda: Laplace(-1.0), "scale"),
        (lambda: Laplace(1.0, 0), "sensitivity"),
        (lambda: Gaussian(0.0), "sigma"),
        (lambda: Gaussian(-2.0), "sigma"),
        (lambda: DiscreteLaplace(0, 1), "scale"),
        (lambda: DiscreteLaplace(1.0, 1.5), "sensitivity"),
        (lambda: DiscreteLaplace(1.0, 2.0), "sensitivity"),
        (lambda: DiscreteLaplace(float("nan"), 1), "scale"),
        (lambda: PolyaDifferenceSum(0, 1.0), "n"),
        (lambda: Skellam(-1.0), "variance"),
        (lambda: Skellam(10, 0), "l1_sensitivity"),
        (lambda: Skellam(10, 2, 3), "l2_sensitivity"),
        (lambda: DiscreteGaussian(1.0, 0), "sensitivity"),
        (lambda: DiscreteGaussian(float("inf")), "sigma"),
        (lambda: DiscreteGaussianSum(0, 1.0), "n"),
        (lambda: DiscreteGaussianSum(2, -1.0), "sigma"),
        (lambda: RandomizedResponse(0.0), "epsilon"),
        (lambda: BernoulliCurator(-1.0), "epsilon"),
        (lambda: Binomial(0, 0.5), "trials"),
        (lambda: Binomial(10, 1.0), "p"),
        (lambda: Binomial(10, 0.5, 1.0), "sensitivity"),
    ],
)
def test_bad_input_names_parameter(build, name):
    with pytest.raises(ValueError, match=rf"{name}="):
        build()


def test_families_and_descriptions():
    for m in COMPOSABLE + [Binomial(10, 0.5)]:
        assert isinstance(m.family, str) and m.family
        text = m.describe()
        assert isinstance(text, str) and "\n" not in text
    for m in (DiscreteLaplace(1.0), DiscreteGaussian(1.0), Skellam(10), Binomial(5, 0.5)):
        assert m.output_pair() is not None
    assert Laplace(1.0).output_pair() is None


# ---------------------------------------------------------------------------------------------
# Skellam: the proven remainders hold for any window (windows only affect tightness)


def _skellam_truth(mu, delta: int, alpha: float) -> arb:
    with working_precision(192):
        return _skellam.skellam_rdp_ball(mu, delta, exact(alpha))


@pytest.mark.parametrize(
    "mu,delta,alpha,informative_at_least",
    [(100, 1, 1e4, 1), (4, 3, 50.0, 2), (102400, 160, 1000.0, 2), (37, 50, 3000.0, 2), (1000, 7, 777.7, 2)],
)
def test_skellam_far_window_remainders_hold_for_narrow_windows(mu, delta, alpha, informative_at_least):
    """Sections 3 and 5 of the Skellam module: shrinking the summed window [-n1, -n0] around the
    tilted mode may loosen the value (or give +inf), never push it below the truth. (For Delta = 1
    the Amos-based ratio bounds have little room: the planned window is about the narrowest one
    they certify.)"""
    law = _skellam._float_law(mu)
    plan = _skellam._plan(law, delta, alpha, 96)
    assert plan[0] == "far"
    _, n1, n0, K, top, _ = plan
    truth = _skellam_truth(mu, delta, alpha)
    nstar = int(law.mode(np.array([alpha - 1.0]), delta)[0][0])
    informative = 0
    for shrink in (0.0, 0.03, 0.1, 0.3, 0.6, 0.85):
        lo = n0 + int(shrink * max(0, nstar - n0))
        hi = n1 - int(shrink * max(0, n1 - nstar))
        lo = max(1, min(lo, hi))
        with working_precision(96):
            table = _skellam._Table(mu, hi + delta, 240, lo=lo)
            ball = _skellam._far_sum(mu, Fraction(mu), delta, exact(alpha), 200, table, lo, hi, K, top)
        if ball is None or not ball.is_finite():
            continue
        assert ball.upper() >= truth.lower()
        informative += 1
    assert informative >= informative_at_least


@pytest.mark.parametrize("mu,delta,alpha", [(100, 1, 2.0), (37, 50, 1.7), (4, 3, 11.0), (102400, 160, 5.0)])
def test_skellam_full_window_remainders_hold_for_narrow_windows(mu, delta, alpha):
    law = _skellam._float_law(mu)
    plan = _skellam._plan(law, delta, alpha, 96, allow_far=False)
    _, n1, K, top, _ = plan
    truth = _skellam_truth(mu, delta, alpha)
    half_delta = max(1, (delta + 1) // 2)
    informative = 0
    for shrink in (0.0, 0.05, 0.2, 0.4, 0.7, 0.9):
        n1s = int(n1 * (1 - shrink))
        Ks = max(half_delta, int(K * (1 - shrink)))
        with working_precision(96):
            table = _skellam._Table(mu, max(n1s + delta, Ks), 240)
            ball = _skellam._full_sum(mu, Fraction(mu), delta, exact(alpha), 200, table, n1s, Ks, top)
        if not ball.is_finite():
            continue
        assert ball.upper() >= truth.lower()
        informative += 1
    assert informative >= 2


@pytest.mark.parametrize("mu,delta,am1", [(100, 1, 99.0), (3000, 7, 500.0), (102400, 160, 50.0), (4, 3, 9.5), (30, 2, 0.25)])
def test_skellam_lambda_and_rho_bounds_against_bessel_ratios(mu, delta, am1):
    """lambda(m) <= every term ratio T(-(j+1))/T(-j), j <= m; rho(n) >= every one with j >= n
    (sections 3 and 5), checked on Arb's Bessel values."""
    N = 1200
    with working_precision(160):
        m = arb(mu)
        logs = [m.bessel_i(n, scaled=True).log() for n in range(N + delta + 2)]
        a, b = arb(am1) + 1, arb(am1)
        ratio = [a * (logs[j + 1] - logs[j]) - b * (logs[j + 1 + delta] - logs[j + delta]) for j in range(N)]
        for n in range(0, N, 37):
            lam = _skellam._lambda_bound(m, n, delta, b).log()
            assert all(ratio[j].upper() >= lam.lower() for j in range(0, n + 1))
            rho = _skellam._rho_bound(m, n, delta, b, Fraction(mu)).log()
            assert all(ratio[j].lower() <= rho.upper() for j in range(n, N))


# ---------------------------------------------------------------------------------------------
# float approximations: accurate, fast, never raise; they steer the search, never lower it


APPROX_CASES = [
    Skellam(0.5),
    Skellam(4, 3),
    Skellam(100),
    Skellam(10_000),
    Skellam(102400, 160),
    Skellam(37, 50),
    DiscreteGaussian(1.0),
    DiscreteGaussian(0.3, 2),
    DiscreteGaussian(4.5, 3),
    DiscreteGaussianSum(3, 0.7, 2),
    DiscreteGaussianSum(8, 1.0, 1),
    DiscreteGaussianSum(1 << 13, 2.0),
    DiscreteLaplace(2.0, 3),
    DiscreteLaplace(1000.0, 1),
    PolyaDifferenceSum(16, 3.0, 2),
    Laplace(1.0),
    Laplace(0.05, 2.0),
    Gaussian(2.0, 3.0),
    RandomizedResponse(0.01),
    BernoulliCurator(2.5),
]


@pytest.mark.parametrize("mechanism", APPROX_CASES, ids=repr)
def test_approx_matches_certified_value(mechanism):
    """The mechanism's own curve to 1e-9 relative (it is ~1e-11); its closed-form RDP curves to
    1e-6 (RDP.pure's float form, outside this package, loses digits as alpha -> 1 at small eps)."""
    alphas = [1.001, 1.5, 2.0, 7.3, 64.0, 1000.5, 1e5]
    curves = [(mechanism.rdp(), 1e-9)] + [(c, 1e-6) for c in mechanism.closed_forms().values() if isinstance(c, RDP)]
    for curve, tolerance in curves:
        approx = curve.approx(np.array(alphas))
        assert approx is not None, curve.describe()
        for a, value in zip(alphas, approx):
            certified = curve(a)
            assert abs(value - certified) <= tolerance * certified, (curve.describe(), a, value, certified)


def test_theorem2_corrected_approx_matches():
    curve = theorem2_corrected_rdp(0.5, 10, 1024)
    for a in (1.001, 2.0, 64.0, 1e5):
        assert curve.approx(np.array([a]))[0] == pytest.approx(curve(a), rel=1e-12)


def test_approx_never_raises():
    weird = np.array([1.0, 0.5, -3.0, np.nan, np.inf, 1 + 1e-15, 1e300, 2.0])
    for mechanism in APPROX_CASES + [Binomial(10, 0.5)]:
        out = mechanism.rdp().approx(weird)
        assert out.shape == weird.shape
        if not isinstance(mechanism, Binomial):
            assert np.isfinite(out[-1])
    assert np.all(np.isinf(Binomial(10, 0.5).rdp().approx(np.array([2.0, 10.0]))))


def test_skellam_approx_is_monotone_and_tracks_the_certified_curve():
    """The Dist-RDP-SE batch mechanism (mu = g^2/eps^2, Delta = g) on the search's 2049 orders:
    the float guide is finite, non-decreasing, and within 1e-6 of the certified curve where
    checked (its speed is measured in benchmarks/, not asserted here)."""
    curve = Skellam(102400, 160).rdp()
    grid = 1 + np.exp(np.linspace(math.log(1.0001 - 1), math.log(1e6 - 1), 2049))
    values = curve.approx(grid)
    assert np.all(np.isfinite(values))
    assert np.all(np.diff(values) >= -1e-12 * values[1:])
    for i in (0, 1024, 1500):
        assert values[i] == pytest.approx(curve(float(grid[i])), rel=1e-6)


SEARCH_CASES = {
    "skellam-mu100": lambda: Skellam(100).rdp(),
    "skellam-mu4-delta3": lambda: Skellam(4, 3).rdp(),
    "skellam-dist-rdp-se": lambda: Skellam(102400, 160).rdp(),
    "skellam-dist-rdp-se-100-returns": lambda: Skellam(102400, 160).rdp().times(100),
    "skellam-agarwal": lambda: Skellam(102400, 160).closed_forms()["agarwal_2021_thm3.5"].times(10),
    "discrete-gaussian": lambda: DiscreteGaussian(1.0).rdp(),
    "discrete-gaussian-small-sigma": lambda: DiscreteGaussian(0.3, 2).rdp().times(5),
    "discrete-gaussian-sum": lambda: DiscreteGaussianSum(4, 1.0, 1).rdp(),
    "discrete-laplace": lambda: DiscreteLaplace(2.0, 3).rdp(),
    "laplace": lambda: Laplace(1.0).rdp().times(20),
    "gaussian": lambda: Gaussian(2.0, 1.0).rdp(),
    "randomized-response": lambda: RandomizedResponse(0.7).rdp().times(50),
    "mixed": lambda: Skellam(100).rdp() + DiscreteLaplace(3.0, 1).rdp() + DiscreteGaussian(2.0).rdp(),
    "binomial": lambda: Binomial(10, 0.5).rdp(),
}


@pytest.mark.parametrize("name", list(SEARCH_CASES))
def test_float_guided_search_no_worse_than_certified_search(name):
    curve = SEARCH_CASES[name]()
    plain = RDP.from_function(curve.ball, "x")
    assert plain.approx(np.array([2.0])) is None
    guided = rdp_to_epsilon(curve, 1e-6)
    certified = rdp_to_epsilon(plain, 1e-6)
    assert guided.epsilon <= certified.epsilon * (1 + 1e-9)
    if math.isfinite(certified.epsilon) and name.startswith("skellam-mu"):
        eps = certified.epsilon
        assert rdp_to_delta(curve, eps).delta <= rdp_to_delta(plain, eps).delta * (1 + 1e-9)
