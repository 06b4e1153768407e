"""Subsampling (accounting._amplification._subsampling): RDP at integer orders against an independent exact
computation, the chord between orders, the PLD route against dp_accounting, bad input."""

from __future__ import annotations

import math

import mpmath
import pytest

import accounting as acc
from accounting._privacy_loss._pld import PrivacyLossDistribution
from accounting._amplification._subsampling import PoissonSampled, SampledWithoutReplacement

mpmath.mp.dps = 50


def sgm_rdp_by_integration(q, sigma, alpha):
    """D_alpha(q N(1, s^2) + (1-q) N(0, s^2) || N(0, s^2)) by numerical integration of
    E_{x ~ N(0, s^2)} [(1 - q + q e^{(2x - 1)/(2 s^2)})^alpha]: independent of the binomial sum."""
    s = mpmath.mpf(sigma)
    q = mpmath.mpf(q)

    def f(x):
        ratio = 1 - q + q * mpmath.exp((2 * x - 1) / (2 * s * s))
        return ratio**alpha * mpmath.npdf(x, 0, s)

    moment = mpmath.quad(f, [-mpmath.inf, -10, 0, 0.5, 5, 20, mpmath.inf])
    return mpmath.log(moment) / (alpha - 1)


def sgm_add_direction_by_integration(q, sigma, alpha):
    """D_alpha(N(0, s^2) || q N(1, s^2) + (1-q) N(0, s^2)): the add direction, which MTZ 2019 show
    is never the larger one (so the curve may omit it); checked here, not assumed."""
    s = mpmath.mpf(sigma)
    q = mpmath.mpf(q)

    def f(x):
        ratio = 1 - q + q * mpmath.exp((2 * x - 1) / (2 * s * s))
        return ratio ** (1 - alpha) * mpmath.npdf(x, 0, s)

    return mpmath.log(mpmath.quad(f, [-mpmath.inf, -10, 0, 0.5, 5, 20, mpmath.inf])) / (alpha - 1)


@pytest.mark.parametrize("alpha", [2, 3, 8, 32])
def test_sampled_gaussian_rdp_equals_exact_integral_at_integer_orders(alpha):
    curve = PoissonSampled(acc.Gaussian(1, 1), 0.01).rdp()
    exact = sgm_rdp_by_integration(0.01, 1, alpha)
    ours = curve(alpha)
    assert ours >= exact
    assert ours - exact <= 1e-12 * (1 + abs(exact))
    assert ours >= sgm_add_direction_by_integration(0.01, 1, alpha)


def test_fractional_orders_lie_between_and_above():
    curve = PoissonSampled(acc.Gaussian(2, 1), 0.05).rdp()
    a = 5.5
    exact = sgm_rdp_by_integration(0.05, 2, mpmath.mpf(a))
    assert curve(a) >= exact  # the chord of the convex (alpha - 1) D_alpha lies above it
    assert curve(a) <= curve(6)


def test_a_wrong_formula_would_be_caught():
    """q^2 instead of q in the moment (a plausible slip) is rejected by the same comparison."""
    wrong = PoissonSampled(acc.Gaussian(1, 1), 0.01 ** 2).rdp()(8)
    assert abs(wrong - sgm_rdp_by_integration(0.01, 1, 8)) > 1e-6


def test_general_bound_is_above_exact_for_gaussian_and_amplifies_laplace():
    zw = PoissonSampled(acc.Laplace(1, 1), 0.1).rdp()
    base = acc.Laplace(1, 1).rdp()
    for alpha in (2, 4, 16):
        assert zw(alpha) < base(alpha)
    wor = SampledWithoutReplacement(acc.Laplace(1, 1), 10, 100).rdp()
    for alpha in (2, 4, 16):
        assert wor(alpha) < base(alpha)


def test_pure_amplification():
    eps = PoissonSampled(acc.Laplace(1, 1), 0.1).pure().epsilon
    assert eps == pytest.approx(math.log(1 + 0.1 * (math.e - 1)), rel=1e-12)
    assert eps >= math.log(1 + 0.1 * (math.e - 1))


def test_bad_input():
    with pytest.raises(ValueError, match="probability"):
        PoissonSampled(acc.Gaussian(1, 1), 1.5)
    with pytest.raises(ValueError, match="sample_size"):
        SampledWithoutReplacement(acc.Gaussian(1, 1), 20, 10)


def test_subsampled_gaussian_pld_brackets_dp_accounting():
    """q = 0.01, sigma = 1, 100 steps (the 1,000-step case is in the benchmark): ours within
    0.5% of dp_accounting's pessimistic PLD and above its optimistic one."""
    pytest.importorskip("dp_accounting")
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant as pa

    mech = PoissonSampled(acc.Gaussian(1, 1), 0.01)
    ours = PrivacyLossDistribution.from_pair(mech, discretisation=1e-3).self_compose(100).epsilon(1e-5)
    event = dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.0)), 100)
    pess = pa.PLDAccountant(value_discretization_interval=1e-3)
    pess.compose(event)
    from dp_accounting.pld import privacy_loss_distribution as pld

    opt = pld.from_gaussian_mechanism(1.0, sampling_prob=0.01, pessimistic_estimate=False, value_discretization_interval=1e-3, use_connect_dots=False)
    assert ours.epsilon <= pess.get_epsilon(1e-5) * 1.005
    assert ours.epsilon >= opt.self_compose(100).get_epsilon_for_delta(1e-5)
    assert ours.epsilon_lower <= ours.epsilon


def test_epsilon_routes_and_ledger_accept_subsampled():
    mech = PoissonSampled(acc.Gaussian(2, 1), 0.02)
    report = acc.epsilon_routes(mech, 1e-5, compose=10)
    routes = {a.route for a in report.alternatives}
    assert {"rdp-cks", "pld"} <= routes
    ledger = acc.Ledger(acc.ApproxDP(1.0, 1e-5))
    ledger.charge(mech)
    assert ledger.spent().epsilon < 1.0


def test_subsampled_discrete_laplace_pld_brackets_exact_hockey_stick():
    """Poisson-subsampled discrete Laplace through the integer mixture pair: the certified bracket
    holds the exact delta(eps) = max over add/remove of sum_x (P(x) - e^eps Q(x))_+, summed here
    in mpmath from the pmf (the two directions differ, so a one-direction slip would show)."""
    mech = PoissonSampled(acc.DiscreteLaplace(2, 1), 0.1)
    pld = PrivacyLossDistribution.from_pair(mech)
    t = mpmath.mpf(1) / 2
    c = mpmath.tanh(t / 2)
    q = mpmath.mpf("0.1")

    def f(x):
        return c * mpmath.exp(-t * abs(x))

    for eps in (0.02, 0.05):
        e = mpmath.exp(eps)
        remove = sum(max(0, q * f(x) + (1 - q) * f(x - 1) - e * f(x - 1)) for x in range(-300, 301))
        add = sum(max(0, f(x - 1) - e * (q * f(x) + (1 - q) * f(x - 1))) for x in range(-300, 301))
        lo, up = pld.delta_bounds(eps)
        assert lo <= max(remove, add) <= up
        assert up - max(remove, add) <= 1e-4
    assert remove != add


def test_rdp_route_of_a_subsampled_mechanism_is_labelled_an_upper_bound():
    """Its curve is a certified upper bound, not the exact divergence: the route must not say "exact"."""
    from accounting import Gaussian, PoissonSampled, epsilon_routes

    report = epsilon_routes(PoissonSampled(Gaussian(2.0), 0.05), 1e-5, compose=10, include_pld=False)
    rdp = next(r for r in report.alternatives if r.route == "rdp-cks")
    # (its name may say where the curve is exact -- MTZ at integer orders -- but the route's label is "upper bound")
    assert rdp.detail.startswith("RDP upper bound") and not rdp.detail.startswith("exact")
    plain = epsilon_routes(Gaussian(2.0), 1e-5, compose=10, include_pld=False, exhaustive=True)
    assert next(r for r in plain.alternatives if r.route == "rdp-cks").detail.startswith("exact RDP curve")
