"""dp_accounting's calibrate_dp_mechanism with our accountant as the factory (issue 31, item 4).

Deterministic. dp_accounting's Brent search, run with ``CertifiedAccountant`` as the fresh-
accountant factory, returns a noise multiplier at which dp_accounting's own PLDAccountant reports
the target epsilon (1e-3 relative: both are tight on the Poisson-subsampled Gaussian), and ours is
*certified* there: our epsilon at the returned sigma is at most the target. The bracket starts away
from 0.3 (the sigma = 0.3 start, whose cost estimate the planner work of issue 30 fixes, is left to
that work). Wrong variant: a sigma 10% smaller overspends the target (so the check can fail).
"""

from __future__ import annotations

import pytest

import accounting as acc

dp = pytest.importorskip("dp_accounting")
from dp_accounting import dp_event as E  # noqa: E402
from dp_accounting import mechanism_calibration as mc  # noqa: E402
from dp_accounting.pld import pld_privacy_accountant as pa  # noqa: E402

TARGET_EPS, TARGET_DELTA = 1.0, 1e-5


def _dp_sgd(sigma: float):
    return E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.05, E.GaussianDpEvent(sigma)), 20)


def test_calibrate_dp_mechanism_with_the_certified_accountant():
    sigma = mc.calibrate_dp_mechanism(acc.CertifiedAccountant, _dp_sgd, TARGET_EPS, TARGET_DELTA, mc.LowerEndpointAndGuess(0.5, 2.0), tol=1e-3)
    theirs = pa.PLDAccountant().compose(_dp_sgd(sigma)).get_epsilon(TARGET_DELTA)
    assert theirs == pytest.approx(TARGET_EPS, rel=1e-3)
    assert acc.CertifiedAccountant().compose(_dp_sgd(sigma)).get_epsilon(TARGET_DELTA) <= TARGET_EPS
    assert acc.CertifiedAccountant().compose(_dp_sgd(0.9 * sigma)).get_epsilon(TARGET_DELTA) > TARGET_EPS
