"""The exact discrete Gaussian sampler's truncation (total variation <= 2^-100 per draw) is charged.

Dist-CDP-SE (ICLR 2023 Theorem 4): each of the n users adds N_Z(0, sigma^2) conditioned on
|X| <= ymax, so the server's view is within total variation n 2^-100 of the analysed
DiscreteGaussianSum's. No zCDP or Renyi guarantee absorbs that (a truncated law's privacy loss is
unbounded at the edge of its support): the charge is ``WithinTotalVariation(analysed, n 2^-100)``,
whose zCDP is the analysed law's with the total variation carried beside it, and every conversion to
(eps, delta) pays (1 + e^eps) t in delta. Deterministic (no sampling).
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

import accounting as acc
import naive
from accounting._ledgers._ledger_codec import guarantee_from_dict, guarantee_to_dict
from accounting._core._total_variation import WithinTotalVariation
from dpverify._executed._protocols import dist_cdp_protocol
from dpverify._executed._samplers import _truncation_tv_upper, discrete_gaussian_range

N = 64


def _protocol():
    return dist_cdp_protocol(Fraction(1), 10.0, 0.1)


def test_dist_cdp_charge_carries_the_users_truncation() -> None:
    """The charged guarantee says how far the executed law may be: n users, 2^-100 each. The former
    charge (the bare DiscreteGaussianSum) carried nothing and fails here."""
    protocol = _protocol()
    params = protocol.parameters(N)
    p, q, _, ymax = discrete_gaussian_range(params.per_user_variance)
    # the premise, recomputed in floats with a margin far above their rounding error
    sigma2 = p / q
    x = ymax + 1
    assert math.log(2) - x * x / (2 * sigma2) - math.log1p(-math.exp(-x / sigma2)) < -100 * math.log(2) + 1e-6
    assert _truncation_tv_upper(p, q, ymax) <= 2.0**-100
    charged = protocol.mechanism(N)
    assert isinstance(charged, WithinTotalVariation)
    assert charged.total_variation >= N * 2.0**-100
    assert charged.pure() is None  # a truncated law is not pure DP
    assert charged.zcdp() == charged.mechanism.zcdp()  # the analysed law's, t beside it
    assert guarantee_from_dict(guarantee_to_dict(charged)) == charged  # the trail keeps t


def test_conversion_to_epsilon_delta_pays_the_total_variation() -> None:
    """epsilon_routes of the charge: the analysed mechanism's certified eps at some delta' with
    delta' + (1 + e^eps) t <= delta (checked here with mpmath), and no smaller than the analysed
    mechanism's own eps at delta. At delta = 1e-22 the slack (1 + e^10.2) 64 2^-100 = 1.3e-24 is a
    relative 1.3e-2 of delta, so the eps moves visibly (a conversion that ignored t would not)."""
    charged = _protocol().mechanism(N)
    delta = 1e-22
    result = acc.epsilon_routes(charged, delta, include_pld=False)
    analysed = acc.epsilon_routes(charged.mechanism, delta, include_pld=False)
    assert result.epsilon > analysed.epsilon
    assert result.delta == delta
    tv = N * 2.0**-100
    ideal = naive.delta_minus_tv_slack(result.epsilon, delta, tv)
    # the analysed mechanism is (result.epsilon, ideal)-DP: its certified eps at ideal is below
    assert acc.epsilon_routes(charged.mechanism, ideal, include_pld=False).epsilon <= result.epsilon


def test_approx_ledger_pays_the_total_variation_and_zcdp_ledger_carries_it() -> None:
    charged = _protocol().mechanism(N)
    tv = N * 2.0**-100
    zledger = acc.Ledger(acc.ZCDP(2.0))
    zledger.charge(charged, range(N))
    zledger.charge(charged, range(N))  # the same users twice
    zledger.charge(charged, range(N, 2 * N))
    assert zledger.spent().rho >= 2 * charged.zcdp().rho
    assert zledger.total_variation() == 2 * tv  # the worst user's two charges
    # (eps, delta) budget: eps of the analysed sums at delta - (1 + e^eps_budget) 2 t
    budget = acc.ApproxDP(16.0, 1e-20)
    ledger = acc.Ledger(budget)
    ledger.charge(charged, range(N))
    ledger.charge(charged, range(N))
    ideal = naive.delta_minus_tv_slack(budget.epsilon, budget.delta, 2 * tv)
    expected = acc.Ledger(acc.ApproxDP(budget.epsilon, ideal))
    expected.charge(charged.mechanism, range(N))
    expected.charge(charged.mechanism, range(N))
    assert ledger.spent().epsilon == expected.spent().epsilon
    without = acc.Ledger(budget)
    without.charge(charged.mechanism, range(N))
    without.charge(charged.mechanism, range(N))
    assert ledger.spent().epsilon > without.spent().epsilon  # t is not free
    with pytest.raises(ValueError, match="pure-DP"):  # a pure-DP budget cannot take a truncated law
        acc.Ledger(acc.PureDP(100.0)).charge(charged, range(N))


def test_durable_ledger_keeps_and_reports_the_total_variation(tmp_path) -> None:
    """The charge round-trips through the durable store, and its total variation is read back."""
    charged = _protocol().mechanism(N)
    ledger = acc.Ledger.open(f"sqlite:///{tmp_path}/tv.db", acc.ZCDP(2.0), create=True)
    try:
        ledger.charge(charged, range(N))
        assert ledger.charges[0].guarantee == charged
        assert ledger.total_variation() == N * 2.0**-100
    finally:
        ledger.close()


def test_delta_at_epsilon_pays_the_total_variation() -> None:
    """delta(eps) of the charge (``delta_routes``, what ``CertifiedAccountant.get_delta`` runs): at
    least the analysed mechanism's certified delta(eps) plus (1 + e^eps) t, t = n 2^-100, recomputed
    with mpmath. A delta query that ignored t (the analysed mechanism's own delta) fails the bound."""
    import mpmath

    from accounting._routing._routes import delta_routes

    charged = _protocol().mechanism(N)
    eps = 8.0
    result = delta_routes(charged, eps)
    analysed = delta_routes(charged.mechanism, eps)
    with mpmath.workdps(50):
        slack = (1 + mpmath.e ** mpmath.mpf(eps)) * mpmath.mpf(charged.total_variation)
        assert mpmath.mpf(result.delta) >= mpmath.mpf(analysed.delta) + slack
        assert not mpmath.mpf(analysed.delta) >= mpmath.mpf(analysed.delta) + slack  # the wrong variant
