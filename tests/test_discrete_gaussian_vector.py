"""accounting's DiscreteGaussianVector: the certified (eps, delta) profile, the Renyi curve, zCDP, the trail.

Deterministic (no sampling): every check compares certified values with an independent route.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

import pytest

from accounting import ApproxDP, Ledger, gdp_delta, gdp_epsilon
from accounting._mechanisms import DiscreteGaussian, DiscreteGaussianPair, DiscreteGaussianVector
from accounting._mechanisms._discrete_gaussian_vector import sum_total_variation
from accounting._privacy_loss._pld import pld_delta

# (sigma, Delta, d) with integer sigma, so that the d-fold PLD of DiscreteGaussianPair (exact lattice)
# is an independent route; small enough for the direct CDF sums and, at sigma = 50, 100, the
# Euler-Maclaurin sums (d sigma^2 > 2^14)
CASES = [(3, 2, 1), (3, 2, 3), (10, 7, 5), (20, 20, 4), (50, 60, 2), (100, 150, 8)]


@pytest.mark.parametrize("sigma, sensitivity, d", CASES)
def test_delta_is_the_exact_composition_profile(sigma: int, sensitivity: int, d: int) -> None:
    """The reduction to one dimension agrees with the d-fold PLD of the one-coordinate pair: never
    below the PLD's certified *lower* bound (so it is not an under-report) and within 1e-9 relative
    of its upper bound (so it is tight). A wrong reduction, e.g. the variance sigma^2 instead of
    d sigma^2, is far off (checked at the first case with d > 1)."""
    mechanism = DiscreteGaussianVector(sigma * sigma, sensitivity, d)
    pair = DiscreteGaussianPair(sigma, sensitivity)
    for eps in (0.25, 1.0, 3.0):
        ours = mechanism.delta(eps)
        upper = pld_delta(pair, d, eps).delta
        lower = pld_delta(pair, d, eps, lower_bound=True).delta_lower
        assert lower <= ours <= upper * (1 + 1e-9) + 1e-300
    if d > 1:
        wrong = DiscreteGaussianVector(sigma * sigma, sensitivity * d, 1)  # shift d Delta but variance sigma^2
        assert abs(wrong.delta(1.0) - mechanism.delta(1.0)) > 1e-3


@pytest.mark.parametrize("sigma2, sensitivity, d, delta", [(9, 2, 3, 0.25), (10**8, 3084, 43, 0.25), (Fraction(10**8, 7), 500, 20, 1e-6), (99945481, 3084, 43, 1e-9)])
def test_epsilon_is_certified_and_tight(sigma2, sensitivity: int, d: int, delta: float) -> None:
    mechanism = DiscreteGaussianVector(sigma2, sensitivity, d)
    eps = mechanism.epsilon(delta)
    assert mechanism.delta(eps) <= delta < mechanism.delta(eps * (1 - 1e-8))
    # the continuous Gaussian of the same mu = sqrt(d) Delta / sigma is the limit (sigma = 3: 0.2% apart)
    mu = math.sqrt(d) * sensitivity / math.sqrt(float(sigma2))
    assert eps == pytest.approx(gdp_epsilon(mu, delta), rel=3e-3 if sigma2 == 9 else 1e-6)
    assert mechanism.approx_dp(eps) == ApproxDP(eps, mechanism.delta(eps))


def test_large_variance_matches_the_gaussian_profile() -> None:
    """At DP-DPE's parameters (sigma ~ 10^4 grid steps, d = 43) the Euler-Maclaurin route gives the
    analytic Gaussian's delta to 1e-9: the discrete noise costs nothing measurable."""
    mechanism = DiscreteGaussianVector(99945481, 3084, 43)
    mu = math.sqrt(43) * 3084 / math.sqrt(99945481)
    for eps in (0.5, 2.0, 10.0, 20.0):
        assert mechanism.delta(eps) == pytest.approx(gdp_delta(mu, eps), rel=1e-6, abs=1e-15)


def test_renyi_curve_and_zcdp() -> None:
    """d times the one-coordinate discrete Gaussian curve: the Gaussian line alpha rho at integer
    alpha, below it elsewhere; zCDP rho = d Delta^2 / (2 sigma^2)."""
    mechanism = DiscreteGaussianVector(Fraction(1, 4), 2, 3)  # sigma = 1/2: far from the continuous limit
    one = DiscreteGaussian(Fraction(1, 2), 2)
    rho = 3 * 4 / (2 / 4)
    assert mechanism.zcdp().rho == pytest.approx(rho, rel=1e-15) and mechanism.zcdp().rho >= rho
    curve, single = mechanism.rdp(), one.rdp()
    for alpha in (2, 3, 8):
        assert curve(alpha) == pytest.approx(alpha * rho, rel=1e-12)
    for alpha in (1.3, 2.25, 7.3):  # (alpha - 1) Delta not an integer
        assert curve(alpha) == pytest.approx(3 * single(alpha), rel=1e-12)
        assert curve(alpha) < alpha * rho * (1 - 1e-6)


def test_ledger_trail_round_trips() -> None:
    ledger = Ledger(ApproxDP(10.0, 0.25))
    mechanism = DiscreteGaussianVector(Fraction(10**8, 3), 3084, 43)
    ledger.charge(mechanism, range(5), label="phase 1")
    again = Ledger.from_json(ledger.to_json())
    assert again.charges[0].guarantee == mechanism and again.spent() == ledger.spent()


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: DiscreteGaussianVector(0, 1, 1), "sigma2"),
        (lambda: DiscreteGaussianVector(float("inf"), 1, 1), "sigma2"),
        (lambda: DiscreteGaussianVector(4, 1.0, 1), "sensitivity"),
        (lambda: DiscreteGaussianVector(4, 1, 0), "dimension"),
        (lambda: DiscreteGaussianVector(4, 1, 2).delta(-1.0), "epsilon"),
        (lambda: DiscreteGaussianVector(4, 1, 2).epsilon(1.0), "delta"),
        (lambda: DiscreteGaussianVector(Fraction(1, 10), 1, 40).delta(1.0), "sigma2"),  # too small for the reduction
    ],
)
def test_bad_input_names_the_parameter(call, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        call()


def test_sum_of_discrete_gaussians_is_certified_close_to_one() -> None:
    """The bound LDP-DPE's aggregate path relies on: the sum of n N_Z(0, sigma^2) vs N_Z(0, n sigma^2).
    Tiny at DP-DPE's sigma^2 (>= 10^3), vacuous (1.0) where the reduction does not apply, 0 for n = 1;
    checked against the exact sum (convolution) at sigma^2 = 4, n = 3."""
    assert sum_total_variation(3039, 21_619) < 2.0**-100
    assert sum_total_variation(Fraction(1, 4), 2) == 1.0
    assert sum_total_variation(9, 1) == 0.0
    k = np.arange(-60, 61)
    p = np.exp(-(k**2) / 8.0)
    p /= p.sum()
    w = np.convolve(np.convolve(p, p), p)  # the sum of 3 iid N_Z(0, 4) on [-180, 180]
    kk = np.arange(-180, 181)
    q = np.exp(-(kk**2) / 24.0)
    q /= q.sum()
    tv = 0.5 * np.abs(w - q).sum()
    assert tv <= sum_total_variation(4, 3) + 1e-15
