"""A finer grid must not loosen one release's certified delta (the delta(eps) sum's rounding bound).

The certified delta(eps) of a PLD side is sum_i c_i f_eps(L_i), summed in floats and rounded up.
The a-priori bound of :func:`_sum_upper` (2 (n + 2) u relative, for any summation order) grows with
the number of grid points n, so halving h doubled the excess: for the sigma = 2 release of
dp_accounting's ``test_mixture_of_gaussians_basic`` (P = 0.33 N(0) + 0.34 N(2) + 0.33 N(3),
Q = N(0), sigma = 2), delta(1) was 4.3e-13 above the exact value at h = 8e-4 and 3.4e-12 at
h = 1e-4, while the connect-the-dots masses themselves put it only 1e-16 .. 2e-16 above.
:func:`_sum_upper_tight` (math.fsum, correctly rounded, then rounded up) keeps it a few ulps above
at every h. Deterministic (no randomness); ~4 CPU seconds.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

from accounting._events._dp_event_mechanisms import GaussianMixtureShift
from accounting._privacy_loss import _pld
from accounting._privacy_loss._pld import PrivacyLossDistribution, _sum_upper_tight

#: how much delta(1) may move when h halves (a few ulps of 0.115 are ~1e-17; the old bound moved 2e-13)
GROWTH_TOLERANCE = 1e-15


def _exact_delta_at_one() -> mp.mpf:
    """delta(1) of the release (P || Q) in mpmath: x_1 with L(x_1) = 1 by bisection, then
    P(x > x_1) - e Q(x > x_1)."""
    mp.mp.dps = 40
    s = mp.mpf(2)
    law_p = [(mp.mpf(0), mp.mpf(33) / 100), (mp.mpf(2), mp.mpf(34) / 100), (mp.mpf(3), mp.mpf(33) / 100)]

    def loss(x):
        return mp.log(sum(w * mp.exp((2 * a * x - a * a) / (2 * s * s)) for a, w in law_p))

    lo, hi = mp.mpf(-50), mp.mpf(50)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if loss(mid) > 1 else (mid, hi)
    x = (lo + hi) / 2
    return sum(w * mp.ncdf((a - x) / s) for a, w in law_p) - mp.e * mp.ncdf(-x / s)


@pytest.fixture(scope="module")
def releases():
    mechanism = GaussianMixtureShift(2, [0, 2, 3], [0.33, 0.34, 0.33])
    return [PrivacyLossDistribution.from_pair(mechanism, discretisation=Fraction(h), lower_bound=False) for h in ("16/10000", "8/10000")]


def _deltas(releases) -> list[float]:
    return [pld.delta(1.0).delta for pld in releases]


def test_release_delta_does_not_grow_as_h_halves(releases):
    exact = _exact_delta_at_one()
    coarse, fine = _deltas(releases)
    for value in (coarse, fine):
        assert mp.mpf(value) >= exact  # certified: never under the true delta(1)
        assert mp.mpf(value) - exact < 1e-14  # (1 is a grid point of both: connect-the-dots is exact there)
    assert fine <= coarse + GROWTH_TOLERANCE


def test_wrong_variant_old_sum_bound_grows(releases, monkeypatch):
    """The same check rejects the a-priori summation bound (the bug): its excess doubles with n."""
    monkeypatch.setattr(_pld, "_sum_upper_tight", _pld._sum_upper)
    coarse, fine = _deltas(releases)
    assert not fine <= coarse + GROWTH_TOLERANCE


def test_tight_sums_bracket_the_exact_sum():
    """Fixed seed; non-negative floats over 300 orders of magnitude, subnormals included: the upper
    float is >= the exact (Fraction) sum and within 8 ulps of it, for every array. Deterministic given the seed; a sum rounded to nearest (no margin) fails the bracket on
    some of the arrays, which the last assertion shows."""
    rng = np.random.default_rng(20261206)
    missed = 0
    for trial in range(40):
        n = int(rng.integers(1, 3000))
        values = rng.random(n) * 10.0 ** rng.integers(-320, 5, n).astype(float)
        exact = sum((Fraction(float(v)) for v in values), Fraction(0))
        up = _sum_upper_tight(values)
        assert Fraction(up) >= exact
        assert up <= float(exact) * (1 + 16 * 2.0**-53) + 1e-322
        nearest = float(np.sum(values))
        missed += Fraction(nearest) < exact
    assert missed > 0
