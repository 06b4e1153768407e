"""Reference points: each computed by the accountant AND independently by mpmath in the test.

The mpmath references sum the Rényi series term by term with mpmath's own Bessel functions (no
recurrence, no tail bound, a window wide enough by inspection), at 40 digits.
"""

from __future__ import annotations

import mpmath
import pytest

from accounting._mechanisms import DiscreteGaussian, Skellam


def _ctx(dps: int = 40) -> mpmath.ctx_mp.MPContext:
    ctx = mpmath.MPContext()
    ctx.dps = dps
    return ctx


def _skellam_reference(mu: int, alphas, lo: int, hi: int, delta: int = 1):
    mp = _ctx()
    MU = mp.mpf(mu)
    needed = {abs(k) for k in range(lo, hi + 1)} | {abs(k - delta) for k in range(lo, hi + 1)}
    logp = {n: mp.log(mp.besseli(n, MU)) - MU for n in needed}
    out = {}
    for a in alphas:
        A = mp.mpf(a)
        terms = [A * logp[abs(k)] + (1 - A) * logp[abs(k - delta)] for k in range(lo, hi + 1)]
        top = max(terms)
        s = mp.fsum(mp.exp(t - top) for t in terms)
        out[a] = (top + mp.log(s)) / (A - 1)
    return out


# the values quoted in the brief / FORMULAS.md (to the digits given there)
QUOTED = {2: 0.0099996, 10: 0.049891, 100: 0.42908, 1000: 1.5772}
AGARWAL = {2: 0.010225, 10: 0.050625, 100: 0.505125, 1000: 5.015}


def test_skellam_mu100_reference_points():
    m = Skellam(100)
    curve = m.rdp()
    agarwal = m.closed_forms()["agarwal_2021_thm3.5"]
    # alpha = 1000 tilts the mass to k ~ -445; the window [-1100, 80] holds it with room to spare
    ref = _skellam_reference(100, list(QUOTED), -1100, 80)
    for a, quoted in QUOTED.items():
        got = curve(a)
        assert got >= ref[a]
        assert got - float(ref[a]) <= 1e-13 * float(ref[a])
        assert got == pytest.approx(quoted, rel=5e-5)
        assert agarwal(a) == pytest.approx(AGARWAL[a], rel=1e-12)


def test_skellam_mu100_alpha1e4_far_window():
    """alpha = 1e4 tilts the mass to k ~ -2540 (width ~23): the accountant sums only a window
    there (with proven remainders on both sides); the reference sums mpmath's Bessel values over
    [-3300, -1800], about +-30 widths around the mode."""
    ref = _skellam_reference(100, [10_000], -3300, -1800)[10_000]
    got = Skellam(100).rdp()(10_000)
    assert got >= ref
    assert got - float(ref) <= 1e-13 * float(ref)
    assert got == pytest.approx(3.1749348, rel=1e-7)


def test_skellam_mu4_alpha2():
    ref = _skellam_reference(4, [2], -80, 80)[2]
    got = Skellam(4).rdp()(2)
    assert ref <= got <= ref + 1e-14
    assert got == pytest.approx(0.24572, abs=5e-6)


def test_discrete_gaussian_alpha256_is_128():
    # the tilted mass sits at -(alpha-1) = -255: sum a window around it, not around 0
    mp = _ctx()
    A = mp.mpf(256)
    f = lambda k: mp.exp(-mp.mpf(k) ** 2 / 2)  # noqa: E731
    z = mp.fsum(f(k) for k in range(-60, 61))
    s = mp.fsum(f(k) ** A * f(k - 1) ** (1 - A) for k in range(-400, -100)) / z
    ref = mp.log(s) / (A - 1)
    got = DiscreteGaussian(1, 1).rdp()(256)
    assert abs(ref - 128) < 1e-30
    assert got == 128.0
    # the truncation trap: a sum cut at |k| <= 40 sigma around P's bulk gives ~37.4 (the brief
    # quotes ~38.2 for its cut; the exact cut matters little: it is a third of the truth)
    cut = mp.log(mp.fsum(f(k) ** A * f(k - 1) ** (1 - A) for k in range(-40, 41)) / z) / (A - 1)
    assert float(cut) < 40
