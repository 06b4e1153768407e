"""Continuous PLDs (accounting._privacy_loss._pld_continuous): exact values, mixed compositions, dp_accounting.

Every check compares the certified bracket [lower, upper] with a value computed independently
here (closed forms evaluated in mpmath at 40 digits, one-dimensional integrals by mpmath quad),
so a wrong discretisation (losses rounded the wrong way, a mass formula off by a term) fails.
"""

from __future__ import annotations

import math
from fractions import Fraction
import warnings

import mpmath
import pytest

import accounting as acc
from accounting._privacy_loss._pld import PrivacyLossDistribution
from accounting._privacy_loss._pld_continuous import GaussianLoss, LaplaceLoss, MonotoneLossPair, _connect_the_dots

mpmath.mp.dps = 40
H = 1e-4


def laplace_delta(eps0, t):
    """delta(t) of Laplace with eps0 = Delta/b (both directions): 1 - e^{(t - eps0)/2} on
    [-eps0, eps0], 0 above, 1 - e^t below. Written from the loss law, independently of the module."""
    eps0, t = mpmath.mpf(eps0), mpmath.mpf(t)
    if t >= eps0:
        return mpmath.mpf(0)
    if t <= -eps0:
        return 1 - mpmath.exp(t)
    return 1 - mpmath.exp((t - eps0) / 2)


def laplace_two_fold(eps0, t):
    """delta of the 2-fold Laplace composition: E_{L1}[delta_1(t - L1)] over the Laplace loss law
    (atoms 1/2 at eps0, e^{-eps0}/2 at -eps0, density e^{(l - eps0)/2}/4 between)."""
    eps0 = mpmath.mpf(eps0)
    atoms = laplace_delta(eps0, t - eps0) / 2 + mpmath.exp(-eps0) / 2 * laplace_delta(eps0, t + eps0)
    cuts = sorted({-eps0, eps0, t - eps0, t + eps0} | set())
    cuts = [c for c in cuts if -eps0 <= c <= eps0]
    dens = mpmath.quad(lambda l: mpmath.exp((l - eps0) / 2) / 4 * laplace_delta(eps0, t - l), cuts)
    return atoms + dens


def gaussian_delta(m, t):
    """Balle & Wang's delta(t) for N(0,1) vs N(m,1)."""
    m, t = mpmath.mpf(m), mpmath.mpf(t)
    return mpmath.ncdf(m / 2 - t / m) - mpmath.exp(t) * mpmath.ncdf(-m / 2 - t / m)


def test_laplace_single_release_brackets_the_exact_curve():
    pld = PrivacyLossDistribution.from_pair(acc.Laplace(1, 1), discretisation=H)
    for eps in (0.0, 0.123456, 0.5, 0.77777, 0.99):
        r = pld.delta(eps)
        exact = laplace_delta(1, eps)
        assert r.delta_lower <= exact <= r.delta, eps
        # connect-the-dots interpolates e^t -> delta between grid points: error O(h^2)
        assert r.delta - exact <= 1e-8, (eps, r.delta - exact)


def test_laplace_two_fold_brackets_the_exact_integral():
    eps0 = 0.5
    pld = PrivacyLossDistribution.from_pair(acc.Laplace(2, 1), discretisation=H).self_compose(2)
    for eps in (0.1, 0.4, 0.9):
        exact = laplace_two_fold(eps0, eps)
        lo, up = pld.delta_bounds(eps)
        assert lo <= exact <= up, (eps, lo, exact, up)
        assert up - exact <= 1e-7


def test_laplace_with_randomized_response_lattice_case():
    """RR(eps1) has losses +-eps1 (P-masses p, 1-p), so the composition is exact in closed form:
    delta(t) = p delta_Lap(t - eps1) + (1 - p) delta_Lap(t + eps1)."""
    eps0, eps1 = 0.5, 0.25
    # +-eps1 lie on the dyadic grid; RR's loss balls straddle those points and are placed on them
    # with a certified shift of ~2^-90 (rounding them a whole step up would cost ~h |d delta/dt|)
    h = 2.0**-13
    lap = PrivacyLossDistribution.from_pair(acc.Laplace(2, 1), discretisation=h)
    rr = PrivacyLossDistribution.from_pair(acc.RandomizedResponse(eps1), discretisation=h)
    both = lap + rr
    p = mpmath.exp(eps1) / (1 + mpmath.exp(eps1))
    for eps in (0.05, 0.3, 0.6):
        exact = p * laplace_delta(eps0, eps - eps1) + (1 - p) * laplace_delta(eps0, eps + eps1)
        lo, up = both.delta_bounds(eps)
        assert lo <= exact <= up, (eps, lo, exact, up)
        assert up - exact <= 1e-7


def test_gaussian_single_release_brackets_balle_wang():
    pld = PrivacyLossDistribution.from_pair(acc.Gaussian(2, 1), discretisation=1e-3)
    for eps in (0.0, 0.3, 1.0):
        exact = gaussian_delta(0.5, eps)
        lo, up = pld.delta_bounds(eps)
        assert lo <= exact <= up
        assert up - exact <= 1e-6  # chord error between grid points, O(h^2)


def test_wrong_rounding_would_be_caught():
    """The same bracket check rejects a PLD whose losses were moved *down* (the optimistic side
    offered as the upper bound): its delta falls below the exact value."""
    pld = PrivacyLossDistribution.from_pair(acc.Laplace(1, 1), discretisation=1e-2)
    r = pld.delta(0.5)
    assert r.delta_lower < laplace_delta(1, 0.5) <= r.delta


def test_connect_the_dots_masses_are_a_probability_and_q_mass_at_most_one():
    from flint import arb

    from accounting import working_precision

    pair = GaussianLoss(1, 1)
    with working_precision(96):
        vec, inf = _connect_the_dots(pair, arb(1e-3), -9000, 9000)
    total = float(vec.sum()) + float(inf.mid())
    assert abs(total - 1) < 1e-9
    q_mass = sum(float(v) * math.exp(-(i - 9000) * 1e-3) for i, v in enumerate(vec))
    assert q_mass <= 1 + 1e-9
    assert min(vec) >= 0


def test_routes_use_the_continuous_pld():
    result = acc.epsilon_routes(acc.Laplace(10, 1), 1e-5, compose=50)
    routes = {a.route: a.epsilon for a in result.alternatives}
    assert "pld" in routes
    assert result.route == "pld"
    assert routes["pld"] < routes["rdp-cks"]


def test_continuous_refuses_a_lattice_step():
    with pytest.raises(ValueError, match="lattice_step"):
        PrivacyLossDistribution.from_pair(acc.Laplace(1, 1), lattice_step=0.5)


def test_user_written_monotone_loss_pair_is_accepted():
    class Shifted(MonotoneLossPair):
        symmetric = True

        def __init__(self):
            self.base = LaplaceLoss(1, 1)

        def hockey_stick(self, t):
            return self.base.hockey_stick(t)

        def survival_p(self, t):
            return self.base.survival_p(t)

        def survival_q(self, t):
            return self.base.survival_q(t)

        def loss_window(self, tail):
            return (-1.0, 1.0)

    class Mech(acc.Mechanism):
        def monotone_loss_pair(self):
            return Shifted()

    up = PrivacyLossDistribution.from_pair(Mech(), discretisation=H).delta(0.5).delta
    assert up == PrivacyLossDistribution.from_pair(acc.Laplace(1, 1), discretisation=H).delta(0.5).delta


# ---- against dp_accounting at the same grid ---------------------------------------------------


def _dp_accounting():
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as pld

    return pld


@pytest.mark.parametrize("k", [1, 10, 200])
def test_laplace_not_above_dp_accounting_pessimistic(k):
    dpa = _dp_accounting()
    ours = PrivacyLossDistribution.from_pair(acc.Laplace(5, 1), discretisation=H).self_compose(k).epsilon(1e-5)
    theirs = dpa.from_laplace_mechanism(5, sensitivity=1, value_discretization_interval=H).self_compose(k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optimistic = dpa.from_laplace_mechanism(5, sensitivity=1, value_discretization_interval=H, pessimistic_estimate=False).self_compose(k)
    pess = theirs.get_epsilon_for_delta(1e-5)
    # the same connect-the-dots grid; ours also adds the certified float error of its FFTs (~1e-7 relative)
    assert ours.epsilon <= pess * (1 + 1e-6)
    assert ours.epsilon >= optimistic.get_epsilon_for_delta(1e-5)
    assert ours.epsilon_lower <= pess


def test_mixed_laplace_gaussian_discrete_against_dp_accounting():
    dpa = _dp_accounting()
    ours = (
        PrivacyLossDistribution.from_pair(acc.Laplace(4, 1), discretisation=H).self_compose(5)
        + PrivacyLossDistribution.from_pair(acc.Gaussian(3, 1), discretisation=H).self_compose(5)
        + PrivacyLossDistribution.from_pair(acc.DiscreteLaplace(4, 1), discretisation=H).self_compose(5)
    ).epsilon(1e-6)
    theirs = (
        dpa.from_laplace_mechanism(4, sensitivity=1, value_discretization_interval=H).self_compose(5)
        .compose(dpa.from_gaussian_mechanism(3, sensitivity=1, value_discretization_interval=H).self_compose(5))
        .compose(dpa.from_discrete_laplace_mechanism(1 / 4, sensitivity=1, value_discretization_interval=H).self_compose(5))
    )
    pess = theirs.get_epsilon_for_delta(1e-6)
    assert ours.epsilon_lower <= pess
    assert ours.epsilon <= pess * (1 + 1e-6)


def test_phi_many_encloses_direct_erfc():
    """The anchored Taylor evaluation of Phi overlaps Arb's erfc at every point and is as narrow
    (relative radius <= 1e-20; a wrong anchor or coefficient scale would give disjoint balls)."""
    from flint import arb

    from accounting import working_precision
    from accounting._privacy_loss._pld_continuous import _phi, _phi_many

    with working_precision(96):
        points = [arb(-12) + i * arb(0.0137) for i in range(1800)]
        many = _phi_many(points)
        for p, v in zip(points[::37], many[::37]):
            direct = _phi(p)
            assert v.overlaps(direct)
            assert float(v.rad()) <= 1e-20 * float(abs(direct.mid())) + 1e-40


def test_route_grid_coarsens_for_wide_loss_windows():
    """A Gaussian with sigma << Delta has a loss window ~2 z Delta/sigma wide: the route's step grows
    (powers of 2 from 1e-4) to keep <= AUTO_POINTS points, and the result stays above the exact
    Balle-Wang value."""
    from accounting._privacy_loss._pld_continuous import AUTO_POINTS, default_discretisation

    pair = GaussianLoss(Fraction(1, 10), 1)
    h = default_discretisation(pair)
    lo, hi = pair.loss_window(1e-18)
    assert h > 1e-4 and (hi - lo) / h <= AUTO_POINTS
    assert default_discretisation(GaussianLoss(1, 1)) == 1e-4
    r = acc.pld_delta(acc.Gaussian(Fraction(1, 10), 1), 1, 60.0)
    assert r.delta >= gaussian_delta(10, 60)


def test_atom_split_convolution_bound_holds_exactly():
    """_convolve_split's l1 error bound against the exact convolution (integer arithmetic on the
    floats' exact values), for a vector with heavy atoms; the bound is below the unsplit one
    (here the direct-sum bound), and the same check rejects a split that forgets the a' * B term."""
    import numpy as np

    from accounting._privacy_loss._pld import _convolve_floats, _convolve_split

    rng = np.random.default_rng(3)
    a = rng.random(400) * 1e-4
    a[[0, 57, 399]] = [0.3, 0.2, 0.25]
    a /= a.sum()
    b = rng.random(350) * 1e-4
    b[[3, 200]] = [0.4, 0.35]
    b /= b.sum()

    scale = 1 << 1100
    ai = [int(Fraction(x) * scale) for x in a]
    bi = [int(Fraction(x) * scale) for x in b]
    exact = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(ai):
        if x:
            for j, y in enumerate(bi):
                exact[i + j] += x * y

    def l1_error(z):
        return sum(abs(Fraction(float(v)) - Fraction(e, scale * scale)) for v, e in zip(z, exact))

    z, bound = _convolve_split(a, b, False)
    assert l1_error(z) <= bound
    assert bound < _convolve_floats(a, b, False)[1]
    # wrong variant: drop the a' * B term (what a sloppy split would do)
    ar = a.copy()
    ar[np.argpartition(a, -16)[-16:]] = 0
    missing = np.convolve(ar, np.where(np.isin(np.arange(len(b)), np.argpartition(b, -16)[-16:]), b, 0))
    assert l1_error(z - missing) > bound


# ---- the fast single-release build (blocks of Taylor series, mirrored second direction) ------------


def _pointwise_masses(pair, h, n_lo, n_hi, bits=192):
    """The connect-the-dots masses from delta evaluated point by point in Arb at ``bits`` (the
    slow route, independent of the blocks, the series and the mirror identity): balls containing
    the exact masses, ~1e-20 relative wide or narrower where they matter."""
    from flint import arb

    from accounting import working_precision

    with working_precision(bits):
        hb = arb(h)
        d = pair.hockey_stick_many([n * hb for n in range(n_lo, n_hi + 1)])
        em1, ep = hb.expm1(), hb.exp()
        masses = [(1 - d[0]) + (d[1] - d[0]) / em1]
        masses += [((d[i + 1] - d[i]) - ep * (d[i] - d[i - 1])) / em1 for i in range(1, len(d) - 1)]
        masses.append((d[-1] - d[-2]) / (-hb).expm1())
        return masses


def _fast_build_check(q, sigma, h):
    """(masses certainly below the exact value, largest excess over it in units of 1e-13 of the
    mass plus 2e-30 / release) of both directions of the Poisson-subsampled Gaussian built the
    fast way at the default precision. Interior masses only for the excess: the two end masses
    come from a four-point formula whose cancellation at 96 bits costs ~1e-25 absolute."""
    from flint import arb

    from accounting import working_precision
    from accounting._privacy_loss._pld_continuous import _grid, monotone_loss_directions

    pair = acc.PoissonSampled(acc.Gaussian(sigma), q).monotone_loss_pair()
    with working_precision(96):
        directions = monotone_loss_directions(pair, h, 1e-18, False)
    below, excess = 0, 0.0
    for direction, p in zip(directions, (pair, pair.reversed())):
        n_lo, n_hi = _grid(p, h, 1e-18)
        exact = _pointwise_masses(p, h, n_lo, n_hi)
        fast = direction.upper.vec
        assert len(fast) == len(exact)
        with working_precision(192):
            below += sum(bool(arb(float(f)) < e) for f, e in zip(fast, exact))
            slack = 2e-30 / len(fast)
            excess = max(excess, max(float(((arb(float(f)) - e) / (1e-13 * e + slack)).mid()) for f, e in zip(fast[1:-1], exact[1:-1])))
    return below, excess


@pytest.mark.parametrize("q, sigma, h", [(0.01, 1.0, 1e-3), (0.05, 2.0, 2e-3)])
def test_fast_build_masses_are_upper_bounds_within_1e13(q, sigma, h):
    """The blockwise masses (P||Q) and the mirrored ones (Q||P = e^t times P||Q at -t) against
    masses from delta evaluated point by point in Arb at 192 bits: never below the exact value,
    at most 1e-13 above it relative (the blocks accept 5e-14 plus roundings) plus 2e-30 per
    release (their allowance for tiny masses)."""
    below, excess = _fast_build_check(q, sigma, h)
    assert below == 0
    assert excess <= 1


def test_fast_build_without_its_rounding_error_bound_is_caught(monkeypatch):
    """The wrong variant: the floats taken as the masses with no rounding error accounted (unit
    roundoff 0 in the Horner bound, the coefficients' conversion and the final round-ups). Float
    rounding then puts many masses below the exact values, which the comparison above reports."""
    import accounting._privacy_loss._pld_continuous as continuous

    monkeypatch.setattr(continuous, "_U", 0.0)
    below, _ = _fast_build_check(0.01, 1.0, 1e-3)
    assert below > 100


def test_fast_build_mirror_without_its_rounding_is_caught(monkeypatch):
    """The wrong variant of the mirrored direction: w_{Q||P}(t) = e^t w_{P||Q}(-t) with e^t taken
    from the lower certified powers and the products not rounded up; masses fall below the exact
    values."""
    import accounting._privacy_loss._pld_continuous as continuous
    from accounting._core._certified import lower_float
    from accounting._privacy_loss._pld_measure import _certified_powers

    def unrounded(mirror, h, n_lo):
        count = len(mirror)
        low, _ = _certified_powers((-h).exp(), count)
        return lower_float(((n_lo + count - 1) * h).exp()) * low[::-1] * mirror[::-1]

    monkeypatch.setattr(continuous, "_mirrored_masses", unrounded)
    below, _ = _fast_build_check(0.01, 1.0, 1e-3)
    assert below > 0


def test_delta_series_from_the_slope_encloses_the_direct_series():
    """delta's Taylor coefficients from delta' = -e^t Q(L > t) (one erfc: _Series.raw) overlap
    those of delta's own formula evaluated on an Arb series (two erfcs), at points and on a ball,
    and are no wider: a wrong sign, shift or factor in survival_q_series would give disjoint
    balls."""
    from flint import arb, arb_series, ctx

    from accounting import working_precision
    from accounting._privacy_loss._pld_continuous import _Series

    pair = acc.PoissonSampled(acc.Gaussian(1.0), 0.01).monotone_loss_pair()
    series = _Series(pair)
    with working_precision(96):
        for t0 in (arb(0.25), arb(1.5), arb(4.0), arb(2.0, 0.05)):
            slope = series.raw(False, t0, 40)
            saved = ctx.cap
            try:
                ctx.cap = 40
                direct = pair.hockey_stick_series(arb_series([t0, 1])).coeffs()
            finally:
                ctx.cap = saved
            assert all(a.overlaps(b) for a, b in zip(slope, direct))
            assert float(slope[-1].rad()) <= float(direct[-1].rad())
