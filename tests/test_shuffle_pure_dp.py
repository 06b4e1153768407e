"""Theorem 3 of the ICLR paper (pure DP via shuffling) stays unreproduced (issue 34, item 18).

The theorem simulates a relaxed SecAgg by a shuffle protocol of Cheu & Yan (2021) whose
construction we do not have. The obvious substitute -- Dist-DP-SE's per-user Pólya shares sent
through a shuffler, the analyzer seeing the multiset of messages y_i = xhat_i + eta_i mod m -- is
not pure eps-DP: at a small batch the multiset nearly reveals every user's xhat. This module
computes a certified lower bound on its pure epsilon, exactly (Arb balls, python-flint):

    view V = every message 0.  P_D(V) = P[eta = 0 mod m]^n with every xhat = 0;
    P_D'(V) = P[eta = -g mod m] P[eta = 0 mod m]^(n-1) when one user's xhat is g instead.
    P[eta = 0 mod m] >= P[gamma+ = 0] P[gamma- = 0] = (1 - beta)^(2/n);
    P[eta = -g mod m] <= P[|eta| >= g] <= 2 P[gamma >= g] (m > 2g: every wrap is farther),
    P[gamma >= g] = 1 - sum_{x < g} (1/n)_x / x! beta^x (1 - beta)^(1/n),  beta = e^(-eps/g),

so eps_pure >= log((1 - beta)^(2/n) / (2 P[gamma >= g])): 1.27 at n = 4, 3.16 at n = 16, 7.70 at
n = 1000, against the theorem's target eps = 1. The wrong variant: the same two views under
SecAgg (only the sum mod m is seen, Lap_Z(g/eps) by infinite divisibility) have log-ratio exactly
eps, so the computation does not overstate. And the accountant never certifies a pure guarantee
for a shuffle beyond its local randomizer's: amplification routes need delta > 0 (delta = 0 is
refused), and a pure budget of eps refuses a shuffled charge whose shares are the Pólya ones.
Not randomised (no sampling). CPU: well under 1 s.
"""

from __future__ import annotations

import math

import pytest
from flint import arb, ctx

import accounting as acc

EPS = 1.0


def _pure_lower_bound(n: int, eps: float) -> arb:
    """Certified lower bound (an Arb ball whose lower end is the bound) on the pure epsilon of
    Dist-DP-SE's shares behind a shuffler, batch size n, per Theorem 1's parameters."""
    g = math.ceil(eps * math.sqrt(n))
    r = arb(1) / n
    beta = (-arb(eps) / g).exp()
    p0 = (1 - beta) ** r  # P[gamma = 0]
    term, below = p0, arb(0)
    for x in range(g):  # P[gamma = x] = (r)_x / x! beta^x (1 - beta)^r, x < g
        below += term
        term = term * (r + x) / (x + 1) * beta
    return (p0 * p0 / (2 * (1 - below))).log()


@pytest.mark.parametrize("n, at_least", [(4, 1.27), (16, 3.16), (1000, 7.69)])
def test_polya_shares_behind_a_shuffler_are_not_pure_eps_dp(n, at_least):
    """The view 'every message 0' is e^(L) times likelier without the changed user, L > eps."""
    with ctx.workprec(200):
        bound = _pure_lower_bound(n, EPS)
        assert bound > EPS  # certified: the whole ball lies above the target
        assert bound > at_least


def test_the_same_views_under_secagg_have_ratio_exactly_e_eps():
    """The wrong variant: through SecAgg the analyzer sees Lap_Z(g/eps) plus the sum, and the same
    two views differ by exactly e^eps (the computation is not what makes the shuffle fail)."""
    n = 16
    g = math.ceil(EPS * math.sqrt(n))
    law = acc.PolyaDifferenceSum(n, scale=g / EPS, sensitivity=g)
    assert law.pure().epsilon == pytest.approx(EPS)
    with ctx.workprec(200):
        b = arb(g) / EPS
        ratio = ((-arb(0) / b).exp()) / ((-arb(g) / b).exp())  # P[Z = 0] / P[Z = -g] for Lap_Z(b)
        assert abs(ratio.log() - EPS) < 1e-50


def test_the_accountant_refuses_a_pure_claim_for_a_shuffled_polya_protocol():
    """Amplification by shuffling never gives delta = 0, and a pure budget of the theorem's eps
    refuses a shuffled charge whose shares are the Pólya ones (their local eps0 >= the bound)."""
    n = 1000
    with ctx.workprec(200):
        eps0 = float(_pure_lower_bound(n, EPS).lower())  # the shares' local eps is at least this
    shuffled = acc.ShuffledLDP(eps0, n)
    with pytest.raises(ValueError, match="delta"):
        acc.shuffle_routes(shuffled, 0.0)
    report = acc.shuffle_routes(shuffled, 1e-6)
    assert all(r.delta > 0 for r in report.alternatives)
    assert shuffled.pure().epsilon >= eps0 > EPS
    ledger = acc.Ledger(acc.PureDP(EPS))
    with pytest.raises(acc.BudgetExceeded):
        ledger.charge(shuffled, participants=range(n))
