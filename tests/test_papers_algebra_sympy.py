"""The papers' algebra, checked with sympy: the discrete Laplace law of FORMULAS.md and its Renyi curve.

FORMULAS.md (Theorem 1, Dist-DP-SE) gives Lap_Z(b) as P[X = x] = (e^{1/b} - 1)/(e^{1/b} + 1) e^{-|x|/b}.
sympy sums the law symbolically (r = e^{-1/b} written as 1/(1 + u), u > 0, so that the geometric
series provably converge): its mass is 1, its tail P[X >= t] is e^{-t/b}/(1 + e^{-1/b}) (FORMULAS.md),
and the order-alpha Renyi divergence of Lap_Z(b) from Lap_Z(b) + 1 (sensitivity 1) is
D_alpha = log((e^{(alpha-1)/b} + e^{-alpha/b})/(1 + e^{-1/b}))/(alpha - 1). The certified curve of
``accounting.DiscreteLaplace(b)`` (Arb, rounded up) must then lie in [D_alpha, D_alpha (1 + 1e-12)]
at every (b, alpha) below: an upper bound, and tight. Deterministic; the wrong variant it rejects
is a curve off by a factor in the sensitivity (``DiscreteLaplace(b, 2)``) or one below the exact
value (an under-report).
"""

from __future__ import annotations

import pytest

sp = pytest.importorskip("sympy")

import accounting as acc  # noqa: E402

POINTS = [(1.0, 1.5), (1.0, 100.0), (2.5, 2.0), (10.0, 10.0), (0.5, 3.0)]


def _derived():
    u, alpha, b = sp.symbols("u alpha b", positive=True)
    k, t = sp.symbols("k t", integer=True, positive=True)
    r = 1 / (1 + u)  # r = e^{-1/b} in (0, 1)
    c = (1 / r - 1) / (1 / r + 1)  # (e^{1/b} - 1)/(e^{1/b} + 1)
    geometric = lambda first: sp.summation(r ** (k - 1 + first), (k, 1, sp.oo))  # noqa: E731  sum_{j >= first} r^j
    mass = sp.simplify(c * (1 + 2 * geometric(1)))
    tail = sp.simplify(c * r**t * geometric(0))  # P[X >= t] = c sum_{j >= t} r^j, t >= 1
    # sum_k P(k)^alpha Q(k)^(1-alpha), Q(k) = P(k - 1), the exponent of r being alpha |k| + (1-alpha) |k-1|:
    # k <= 0 gives r^{1 - alpha} r^j (j = -k >= 0), k >= 1 gives r^alpha r^j (j = k - 1 >= 0)
    total = c * (r ** (1 - alpha) * geometric(0) + r**alpha * geometric(0))
    return u, alpha, b, t, r, mass, tail, sp.simplify(total)


def test_discrete_laplace_law_and_renyi_curve_derived_by_sympy():
    u, alpha, b, t, r, mass, tail, total = _derived()
    assert mass == 1
    assert sp.simplify(tail - r**t / (1 + r)) == 0
    closed = (r ** (1 - alpha) + r**alpha) / (1 + r)
    assert sp.simplify(total - closed) == 0
    divergence = sp.log(closed) / (alpha - 1)
    for scale, order in POINTS:
        exact = divergence.subs({u: sp.exp(sp.Rational(1) / sp.nsimplify(scale)) - 1, alpha: sp.nsimplify(order)})
        reference = sp.N(exact, 40)
        in_band = lambda value: reference <= value <= reference * (1 + sp.Rational(1, 10**12))  # noqa: E731
        certified = acc.DiscreteLaplace(scale).rdp().evaluate([order])[0]
        assert in_band(certified), (scale, order, certified, reference)
        # the wrong variants: the curve at sensitivity 2, or an under-report by 1e-9 relative
        assert not in_band(acc.DiscreteLaplace(scale, 2).rdp().evaluate([order])[0])
        assert not in_band(certified * (1 - 1e-9))
