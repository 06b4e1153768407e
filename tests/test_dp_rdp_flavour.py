"""The RDP flavour of the dp_accounting drop-in (``CertifiedRdpAccountant``, issue 31 items 1-3).

Deterministic (no randomness). What is checked, each against an independent reference:

- Poisson repeat-and-select (Papernot & Steinke 2022, Thm 6) of a Gaussian: the reported RDP is
  never below the exact value (mpmath, 40 digits) nor below a binary64 evaluation of the same
  closed form (dp_accounting's test's reference), and at most 1e-9 relative above the exact
  value; the float enclosure contains both. Wrong variant: without the outward rounding the float
  reference exceeds ours at some order (so the comparison has power).
- ``real_orders=False`` converts at the given orders only (dp_accounting's answer and order); the
  default also searches real orders (smaller, certified). Wrong variant: the default's order is
  not one of the given orders.
- The fractional-order integral of A_alpha - 1 encloses mpmath's value. Wrong variant: sigma 1%
  off is outside the enclosure.
- Ranking the given orders by the float approximation and certifying the best few finds the
  same epsilon as certifying every given order. Wrong variant: ranking reversed is worse.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import accounting as acc

dp = pytest.importorskip("dp_accounting")
from dp_accounting import dp_event as E  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant as ra  # noqa: E402

from accounting._interop import _dp_accounting_compat as compat  # noqa: E402
from accounting._events import _dp_event_mechanisms as mechanisms  # noqa: E402
from accounting._core._certified import exact, working_precision  # noqa: E402


def _float_thm6(order: float, sigma: float, mean: float) -> float:
    """dp_accounting's test's reference (rdp_privacy_accountant_test, Poisson repeat-and-select),
    the same operations in the same order."""
    eps = math.log1p(1 / (order - 1))
    x = (eps * sigma - 0.5 / sigma) / math.sqrt(2)
    y = (eps * sigma + 0.5 / sigma) / math.sqrt(2)
    delta = math.erfc(x) / 2 - math.exp(eps) * math.erfc(y) / 2
    return order * 0.5 / (sigma**2) + mean * delta + math.log(mean) / (order - 1)


def _exact_thm6(order: float, sigma: float, mean: float) -> mpmath.mpf:
    mpmath.mp.dps = 40
    o, s, m = mpmath.mpf(order), mpmath.mpf(sigma), mpmath.mpf(mean)
    eps = mpmath.log1p(1 / (o - 1))
    x = (eps * s - mpmath.mpf(0.5) / s) / mpmath.sqrt(2)
    y = (eps * s + mpmath.mpf(0.5) / s) / mpmath.sqrt(2)
    delta = mpmath.erfc(x) / 2 - mpmath.exp(eps) * mpmath.erfc(y) / 2
    return o * mpmath.mpf(0.5) / s**2 + m * delta + mpmath.log(m) / (o - 1)


def _repeat_and_select(sigma: float, mean: float):
    return acc.CertifiedRdpAccountant().compose(E.RepeatAndSelectDpEvent(E.GaussianDpEvent(sigma), mean, np.inf))


@pytest.mark.parametrize("sigma, mean", [(1000.0, 1e9), (1.0, 1e9), (0.001, 1.0)])
def test_poisson_repeat_and_select_covers_its_float_reference(sigma, mean):
    """At every default order: exact <= ours <= exact (1 + 1e-9) + 1e-300, float reference <= ours,
    and the enclosure of binary64 evaluations contains the float reference and the exact value
    (rounding errors of zero are one of the evaluations it covers)."""
    accountant = _repeat_and_select(sigma, mean)
    for order, ours in zip(accountant._orders, accountant._rdp):
        exact_value = _exact_thm6(order, sigma, mean)
        reference = _float_thm6(order, sigma, mean)
        assert exact_value <= ours <= exact_value * (1 + 1e-9) + 1e-300, order
        assert reference <= ours, order
        with working_precision(None):
            ball = mechanisms._float_thm6_enclosure(exact(float(order)), Fraction(sigma), Fraction(mean))
        assert ball.contains(exact(reference)), order
        assert ball.contains(exact(Fraction(mpmath.nstr(exact_value, 35)))), order


def test_without_the_outward_rounding_the_float_reference_exceeds_ours(monkeypatch):
    """The wrong variant: the certified value alone (no float enclosure) is below the float
    reference at some order for sigma 1000, mean 1e9 (the erfc difference's cancellation times the
    mean: ~7e-12 relative) -- dp_accounting's test failed this way."""
    monkeypatch.setattr(mechanisms, "_float_noise_multiplier", lambda mechanism: None)
    accountant = _repeat_and_select(1000.0, 1e9)
    assert any(_float_thm6(o, 1000.0, 1e9) > r for o, r in zip(accountant._orders, accountant._rdp))


LAPLACE_ORDERS = [1.0, 1 + 1e-6, 1.1 - 1e-6, 1.1 + 1e-6, 1e10]


def test_real_orders_false_converts_at_the_given_orders_as_dp_accounting():
    """100 Laplace releases of eps 1 (dp_accounting's test_laplace_repetition): with
    real_orders=False, ours is dp_accounting's epsilon (1e-12 relative) at its order, 1e10, and
    get_delta answers at a given order; the default searches real orders too: a smaller certified
    epsilon, never below the certified PLD accountant's (the tightest route we have), at an order
    that is not one of the given ones (the wrong variant for code indexing ``orders``)."""
    event = E.SelfComposedDpEvent(E.LaplaceDpEvent(1.0), 100)
    given = acc.CertifiedRdpAccountant(orders=LAPLACE_ORDERS, real_orders=False).compose(event)
    theirs = ra.RdpAccountant(orders=LAPLACE_ORDERS).compose(event)
    eps, order = given.get_epsilon_and_optimal_order(1e-10)
    their_eps, their_order = theirs.get_epsilon_and_optimal_order(1e-10)
    assert eps == pytest.approx(their_eps, rel=1e-12) and order == their_order
    assert given.get_delta_and_optimal_order(99.0)[1] in LAPLACE_ORDERS
    real = acc.CertifiedRdpAccountant(orders=LAPLACE_ORDERS).compose(event)
    real_eps, real_order = real.get_epsilon_and_optimal_order(1e-10)
    pld = acc.CertifiedAccountant().compose(event).get_epsilon(1e-10)
    assert pld <= real_eps < 0.85 * eps
    assert real_order not in LAPLACE_ORDERS
    with pytest.raises(ValueError, match="real_orders"):
        acc.CertifiedRdpAccountant(real_orders="no")


@pytest.mark.parametrize("q, s, alpha", [(0.01, 1.0, 7.8), (0.01, 2.5, 1.5), (0.5, 0.7, 2.5)])
def test_fractional_order_integral_encloses_mpmath(q, s, alpha):
    """log A_alpha of the Poisson-subsampled Gaussian at a non-integer order: Arb's enclosure
    contains mpmath's quadrature of A - 1 at 40 digits and is 1e-8 relative wide at most; the
    wrong variant (sigma 1% larger) is outside it."""
    mpmath.mp.dps = 40
    qm, sm, am = mpmath.mpf(q), mpmath.mpf(s), mpmath.mpf(alpha)

    def integrand(z):
        return mpmath.npdf(z, 0, sm) * ((1 - qm + qm * mpmath.exp((2 * z - 1) / (2 * sm * sm))) ** am - 1)

    reference = mpmath.log1p(mpmath.quad(integrand, [-mpmath.inf, -5 * sm, 0, 0.5, am, am + 5 * sm, mpmath.inf]))
    reference_ball = exact(Fraction(mpmath.nstr(reference, 35)))
    with working_precision(None):
        ours = mechanisms.sgm_log_moment_fractional(Fraction(q), Fraction(s), exact(alpha))
        wrong = mechanisms.sgm_log_moment_fractional(Fraction(q), Fraction(s) * Fraction(101, 100), exact(alpha))
    assert ours.contains(reference_ball)
    assert float(ours.rad()) <= 1e-8 * abs(float(reference))
    assert not wrong.contains(reference_ball)


def _every_given_order(accountant, delta: float) -> float:
    """The smallest certified CKS epsilon over every given order (the scan the ranking replaces)."""
    from accounting._core._certified import upper_float
    from accounting._core._conversions import _epsilon_at

    curve = accountant._order_curve()
    best = math.inf
    with working_precision(None):
        log_inv = (1 / exact(delta)).log()
        for alpha in accountant._orders:
            if 1 < alpha < math.inf:
                best = min(best, upper_float(_epsilon_at(curve, exact(float(alpha)), log_inv, "cks")))
    return best


@pytest.mark.parametrize("event", [
    E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.01, E.GaussianDpEvent(1.0)), 1000),
    E.ComposedDpEvent([E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.02, E.GaussianDpEvent(0.8)), 300),
                       E.SelfComposedDpEvent(E.LaplaceDpEvent(20.0), 10), E.GaussianDpEvent(5.0)]),
], ids=["dp-sgd", "mixed"])
def test_ranked_orders_match_the_full_scan(event, monkeypatch):
    """With real_orders=False, certifying the 3 given orders the float approximation ranks best
    gives the full scan's epsilon (1e-12 relative); the wrong variant (ranking reversed) does not."""
    accountant = acc.CertifiedRdpAccountant(real_orders=False).compose(event)
    full = _every_given_order(accountant, 1e-5)
    assert accountant.get_epsilon(1e-5) == pytest.approx(full, rel=1e-12)
    ranked = compat._ranked
    monkeypatch.setattr(compat, "_ranked", lambda *args: (ranked(*args)[0][::-1], ranked(*args)[1]))
    reversed_ = acc.CertifiedRdpAccountant(real_orders=False).compose(event)
    assert reversed_.get_epsilon(1e-5) > full * 1.01
