"""dp_accounting's calibrate_dp_mechanism with our accountants as the factory (issue 31, item 4).

Deterministic. The issue's DP-SGD case: Poisson q = 0.01, 1,000 steps, target eps 1 at delta 1e-5,
from the bracket starting at sigma = 0.3 (eps ~70 there: the most expensive PLD of the search).
dp_accounting's Brent search, run with ``CertifiedAccountant`` as the fresh-accountant factory,
returns a noise multiplier within its tolerance (1e-4) of the smallest sigma ours certifies
(1.41463084, found by bisection to 1e-8 outside CI), and ours is *certified* there (our epsilon
at the returned sigma is at most the target); dp_accounting's own PLDAccountant agrees there (1e-4
relative). ``accounting.calibrate`` (the route planner's search) from the same bracket returns a
sigma within the same tolerance, certified by its own answer. The RDP flavour as the factory
calibrates against dp_accounting's RdpAccountant: a sigma at most theirs (ours is tighter) and
certified. Wrong variant: a sigma 1% smaller than the calibrated one overspends the target (so
the checks can fail). CPU: ~7 s (two calibrations through the PLD from sigma = 0.3), measured in
the report of issue 31.
"""

from __future__ import annotations

import pytest

import accounting as acc

dp = pytest.importorskip("dp_accounting")
from dp_accounting import dp_event as E  # noqa: E402
from dp_accounting import mechanism_calibration as mc  # noqa: E402
from dp_accounting.pld import pld_privacy_accountant as pa  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant as ra  # noqa: E402

TARGET_EPS, TARGET_DELTA = 1.0, 1e-5
TOL = 1e-4
#: the bracket of issue 31 item 4, starting at sigma = 0.3
BRACKET = (0.3, 5.0)


def _dp_sgd(sigma: float):
    return E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(sigma)), 1000)


def _ours(sigma: float) -> float:
    return acc.CertifiedAccountant().compose(_dp_sgd(sigma)).get_epsilon(TARGET_DELTA)


def test_calibrate_dp_mechanism_and_our_calibrate_from_sigma_0_3():
    sigma = mc.calibrate_dp_mechanism(acc.CertifiedAccountant, _dp_sgd, TARGET_EPS, TARGET_DELTA, mc.ExplicitBracketInterval(*BRACKET), tol=TOL)
    at_sigma = _ours(sigma)
    assert at_sigma <= TARGET_EPS  # certified
    assert pa.PLDAccountant().compose(_dp_sgd(sigma)).get_epsilon(TARGET_DELTA) == pytest.approx(at_sigma, rel=1e-4)
    assert _ours(sigma - 2 * TOL) > TARGET_EPS  # within the tolerance of the smallest certified sigma
    own = acc.calibrate(lambda s: acc.PoissonSampled(acc.Gaussian(s), 0.01), TARGET_EPS, TARGET_DELTA, compose=1000, lower=BRACKET[0],
                        upper=BRACKET[1], relative_tolerance=TOL)
    assert own.achieved.epsilon <= TARGET_EPS
    assert abs(own.parameter - sigma) <= 2 * TOL
    assert _ours(0.99 * sigma) > TARGET_EPS  # the wrong variant


def test_calibrate_dp_mechanism_with_the_rdp_flavour():
    ours = mc.calibrate_dp_mechanism(acc.CertifiedRdpAccountant, _dp_sgd, TARGET_EPS, TARGET_DELTA, mc.ExplicitBracketInterval(*BRACKET), tol=TOL)
    theirs = mc.calibrate_dp_mechanism(ra.RdpAccountant, _dp_sgd, TARGET_EPS, TARGET_DELTA, mc.ExplicitBracketInterval(*BRACKET), tol=TOL)
    assert acc.CertifiedRdpAccountant().compose(_dp_sgd(ours)).get_epsilon(TARGET_DELTA) <= TARGET_EPS
    assert ours <= theirs + TOL
    assert acc.CertifiedRdpAccountant().compose(_dp_sgd(0.99 * ours)).get_epsilon(TARGET_DELTA) > TARGET_EPS
