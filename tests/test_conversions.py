"""RDP / zCDP -> (eps, delta): certified, optimised over real alpha, never optimistic."""

import math

import mpmath
import pytest
from hypothesis import given
from hypothesis import strategies as st

from accounting import (
    RDP,
    PureDP,
    advanced_composition,
    appendix_i_per_batch,
    epsilon_routes,
    rdp_to_delta,
    rdp_to_epsilon,
    zcdp_epsilon_closed_form,
    zcdp_to_epsilon,
)


def _cks_objective(rho, delta, alpha, dps=50):
    with mpmath.workdps(dps):
        a, r, d = mpmath.mpf(alpha), mpmath.mpf(rho), mpmath.mpf(delta)
        return r * a + mpmath.log(1 / (a * d)) / (a - 1) + mpmath.log(1 - 1 / a)


def _dense_minimum(rho, delta):
    with mpmath.workdps(30):
        f = lambda t: _cks_objective(rho, delta, 1 + mpmath.exp(t), dps=30)
        return min(f(mpmath.mpf(-9) + i * mpmath.mpf(25) / 4000) for i in range(4001))


@pytest.mark.parametrize("rho, delta", [(0.5, 1e-6), (0.005, 1e-5), (2.0, 1e-9), (1e-4, 1e-3)])
def test_zcdp_conversion_is_the_infimum_and_certified(rho, delta):
    result = zcdp_to_epsilon(rho, delta)
    # certified at the order it reports ...
    assert result.epsilon >= _cks_objective(rho, delta, result.alpha)
    # ... and as good as a dense search over real alpha (the infimum), to 1e-9
    assert result.epsilon <= float(_dense_minimum(rho, delta)) * (1 + 1e-9)
    # and better than the closed form
    assert result.epsilon < zcdp_epsilon_closed_form(rho, delta)


def test_cks_conversion_never_worse_than_mironov():
    for rho in (0.001, 0.1, 1.0):
        curve = RDP.zcdp(rho)
        assert rdp_to_epsilon(curve, 1e-6).epsilon <= rdp_to_epsilon(curve, 1e-6, conversion="mironov").epsilon


@given(rho=st.floats(1e-4, 5.0), d1=st.floats(1e-12, 0.5), d2=st.floats(1e-12, 0.5))
def test_conversion_is_monotone_in_delta(rho, d1, d2):
    lo, hi = sorted((d1, d2))
    assert zcdp_to_epsilon(rho, hi).epsilon <= zcdp_to_epsilon(rho, lo).epsilon + 1e-12


def test_delta_of_epsilon_is_dual_to_epsilon_of_delta():
    curve = RDP.zcdp(0.3)
    eps = rdp_to_epsilon(curve, 1e-6).epsilon
    assert rdp_to_delta(curve, eps).delta <= 1e-6 * (1 + 1e-6)
    assert rdp_to_delta(curve, eps * 0.95).delta > 1e-6


def test_composition_is_additive_in_the_exponent():
    a, b = RDP.zcdp(0.1), RDP.pure(0.5)
    for alpha in (1.5, 4, 64):
        assert (a + b)(alpha) >= a(alpha) + b(alpha) - 1e-15
        assert (a + b)(alpha) <= (a(alpha) + b(alpha)) * (1 + 1e-15)


def test_pure_routes_pick_the_better_of_basic_and_rdp():
    # 100-fold composition of 0.1-DP: basic gives 10; the RDP route gives far less at delta = 1e-6,
    # and the optimal composition theorem (exact for pure DP) less again.
    # (exhaustive: the exact optimal composition would otherwise end the search, rightly)
    report = epsilon_routes(PureDP(0.1), 1e-6, compose=100, exhaustive=True)
    assert report.route.startswith("optimal-composition")  # by enumeration or by the lattice PLD: both exact
    by_route = {r.route: r.epsilon for r in report.alternatives}
    assert abs(by_route["optimal-composition"] / by_route["optimal-composition-pld"] - 1) < 1e-9
    assert by_route["optimal-composition"] < by_route["rdp-cks"]
    basic = by_route["pure"]
    assert basic >= 10 and by_route["rdp-cks"] < 0.55 * basic
    # one release: never worse than the pure guarantee itself (with delta > 0 it may be a bit better)
    one = epsilon_routes(PureDP(0.1), 1e-6)
    assert one.epsilon <= 0.1 and one.route.startswith("optimal-composition")


def test_advanced_composition_and_appendix_i():
    adv = advanced_composition(PureDP(0.01), 1000, 1e-6)
    with mpmath.workdps(30):
        expected = mpmath.sqrt(2000 * mpmath.log(10**6)) * 0.01 + 1000 * 0.01 * mpmath.expm1(0.01)
    assert float(expected) <= adv.epsilon <= float(expected) * (1 + 1e-14)
    per_batch = appendix_i_per_batch(0.5, 1e-6, 10)
    # composing the per-batch guarantee B times by advanced composition gives back at most (0.5, 1e-6)
    total = advanced_composition(per_batch, 10, 1e-6 / 2)
    assert total.epsilon <= 0.5 + 0.01 and total.delta <= 1e-6 * (1 + 1e-12)
    with pytest.raises(ValueError, match="epsilon"):
        appendix_i_per_batch(2.0, 1e-6, 10)


def test_bad_input():
    with pytest.raises(ValueError, match="delta"):
        rdp_to_epsilon(RDP.zcdp(0.1), 0.0)
    with pytest.raises(ValueError, match="conversion"):
        rdp_to_epsilon(RDP.zcdp(0.1), 1e-5, conversion="magic")
    with pytest.raises(ValueError, match="compose"):
        epsilon_routes(PureDP(1.0), 1e-5, compose=0)
    assert math.isfinite(zcdp_to_epsilon(1e-8, 0.4).epsilon)
