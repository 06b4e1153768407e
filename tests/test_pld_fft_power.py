"""One-FFT-pass PLD composition (accounting._privacy_loss._pld_fft_power): error bounds and soundness.

Each check compares with a value computed independently here: exact integer arithmetic on the
floats' exact values (the convolution powers), mpmath closed forms (Gaussian composition), the
exact-lattice Arb engine (discrete Laplace), and dp_accounting's pessimistic PLD at the same grid.
The soundness checks include the wrong variant they must reject (a window whose lost tail is not
put on the +inf atom).
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from flint import arb

import accounting as acc
import accounting._privacy_loss._pld_fft_power as fp
from accounting._privacy_loss._pld import PrivacyLossDistribution, _Evaluator, _RecipeEvaluator, _Side

H = 1e-4
SCALE = 1 << 1100  # every float in play is an integer multiple of 2^-1100 (subnormals excepted)


def _exact_power(factors, scale=SCALE):
    """The exact product of powers (Fractions), on grid indices from sum k offset."""
    out = [1]
    for f in factors:
        vi = [Fraction(float(x)) * scale for x in f.vec]
        assert all(v.denominator == 1 for v in vi)  # the floats' exact values, no rounding
        vi = [int(v) for v in vi]
        for _ in range(f.k):
            new = [0] * (len(out) + len(vi) - 1)
            for i, x in enumerate(out):
                if x:
                    for j, y in enumerate(vi):
                        if y:
                            new[i + j] += x * y
            out = new
    power = sum(f.k for f in factors)
    return [Fraction(x, scale**power) for x in out]


def _factors(rng):
    a = rng.random(40) * 1e-3
    a[[5, 31]] = [0.45, 0.5]  # two atoms (the heavy-entry split is used)
    a /= a.sum() * (1 + 1e-9)
    b = rng.random(25)
    b /= b.sum() * (1 + 1e-9)
    return (
        fp.Factor(a, -20, arb(0), 6, arb(0)),
        fp.Factor(b, -3, arb(1e-12), 3, arb(0)),
    )


def test_pass_l2_error_bound_holds_against_exact_arithmetic():
    """||y_hat - y||_2 <= err_l2 for the untilted pass, y the exact convolution power (whole
    support, no wrap-around); the bound is small (<= 1e-14) and not absurdly loose."""
    rng = np.random.default_rng(11)
    factors = _factors(rng)
    recipe = fp.PowerRecipe.build(factors, H, arb(H))
    b, n = recipe.window
    assert b == sum(f.k * f.offset for f in factors) and recipe.tails[0] == 0  # the whole support
    p = recipe.tilted(0.0)
    exact = _exact_power(factors)
    err2 = sum((Fraction(float(p.vec[q])) - (exact[q] if q < len(exact) else 0)) ** 2 for q in range(n))
    actual = math.sqrt(float(err2))
    assert actual <= p.err_l2, (actual, p.err_l2)
    assert p.err_l2 <= 1e-13
    # the atom: (m_a + 0)^6 (m_b + 1e-12)^3 - m_a^6 m_b^3 ~ 3e-12
    assert 2.9e-12 <= float(p.atom.mid()) <= 3.1e-12


@pytest.mark.parametrize("lam", [0.0, 3.0, 20.0])
def test_certified_delta_of_a_pass_is_at_least_the_exact_delta(lam):
    """Every pass (untilted and tilted) certifies delta(eps) >= the exact delta of the composed
    measure (mpmath from the exact power), and within 1e-13 of it where delta is not tiny."""
    rng = np.random.default_rng(5)
    factors = _factors(rng)
    recipe = fp.PowerRecipe.build(factors, H, arb(H))
    exact = _exact_power(factors)
    first = sum(f.k * f.offset for f in factors)
    atom = float(sum(fp._composed_atom(factors), arb(0)).mid())  # (genuine, truncated)
    p = recipe.tilted(lam)
    side = _Side(True, p.offset, None, p.vec, 0.0, p.infinite, arb(0), arb(0), p.truncated)  # (the evaluator adds both)
    ev = _Evaluator(side, arb(H), H)
    ev.error_term = lambda eps: p.err_on_delta(eps, arb(H), arb(0))
    mpmath.mp.dps = 40
    for eps in (0.0, 0.002, 0.004, 0.006):
        truth = mpmath.mpf(atom)
        for q, c in enumerate(exact):
            loss = mpmath.mpf(first + q) * mpmath.mpf(H)
            if loss > eps and c:
                truth += mpmath.mpf(c.numerator) / c.denominator * (1 - mpmath.exp(eps - loss))
        up = ev.certified(arb(eps))
        assert up >= truth, (lam, eps, up, truth)
        assert up - truth <= 1e-13 + 1e-9 * truth, (lam, eps, up - truth)


def test_wrap_around_window_keeps_the_bound_and_the_lost_tail_is_needed():
    """A window far too short for the composition (tail 1e-3 left outside on each side): the
    certified delta stays above the exact value (the Chernoff bound of the mass above the window
    is on the +inf atom); dropping that bound (the wrong variant) goes below the exact value."""
    rng = np.random.default_rng(2)
    a = np.zeros(60)
    a[[0, 7, 15, 22, 30, 41, 50, 59]] = 0.05 + rng.random(8)
    a /= a.sum() * (1 + 1e-9)
    k = 40
    factors = (fp.Factor(a, -30, arb(0), k, arb(0)),)
    saved = fp.WINDOW_TAIL
    try:
        fp.WINDOW_TAIL = 1e-3
        recipe = fp.PowerRecipe.build(factors, 1e-3, arb(1e-3))
    finally:
        fp.WINDOW_TAIL = saved
    b, n = recipe.window
    assert n < k * 59 + 1 and float(recipe.tails[0].mid()) > 0  # a real wrap-around
    exact = _exact_power(factors, 1 << 80)  # the entries are >= 2^-20: multiples of 2^-80
    first = k * -30
    p = recipe.tilted(0.0)
    side = _Side(True, p.offset, None, p.vec, 0.0, p.infinite, arb(0), arb(0), p.truncated)  # (the evaluator adds both)
    ev = _Evaluator(side, arb(1e-3), 1e-3)
    ev.error_term = lambda eps: p.err_on_delta(eps, arb(1e-3), arb(0))
    top_loss = (b + n - 1) * 1e-3
    eps = top_loss - 0.004  # just below the window's top: the lost upper tail matters here
    truth = sum(float(c) * (1 - math.exp(eps - (first + q) * 1e-3)) for q, c in enumerate(exact) if (first + q) * 1e-3 > eps)
    assert ev.certified(arb(eps)) >= truth
    wrong = _Side(True, p.offset, None, p.vec, 0.0, arb(0), arb(0), arb(0), arb(0))
    wrong_ev = _Evaluator(wrong, arb(1e-3), 1e-3)
    wrong_ev.error_term = ev.error_term
    assert wrong_ev.certified(arb(eps)) < truth


def test_one_pass_agrees_with_the_exact_lattice_engine():
    """Discrete Laplace (scale 20, Delta 10: losses multiples of 0.1, on the grid h = 1e-3): the
    float one-pass composition of 100 releases is >= the exact-lattice Arb bracket's lower end and
    within 1e-9 relative of its upper end (the certified FFT error of the untilted pass, read at
    eps = 2 where delta ~ 0.95, is ~3e-11)."""
    mech = acc.DiscreteLaplace(20, 10)
    lattice = PrivacyLossDistribution.from_pair(mech, lattice_step=Fraction(1, 10)).self_compose(100)
    fast = PrivacyLossDistribution.from_pair(mech, discretisation=Fraction(1, 1000), lower_bound=False).self_compose(100)
    assert fast._directions[0].upper.recipe is not None
    for eps in (2.0, 5.0, 8.0):
        lo, up = lattice.delta_bounds(eps)
        ours = fast.delta(eps).delta
        assert ours >= lo, (eps, ours, lo)
        assert ours <= up * (1 + 1e-9), (eps, ours, up)


def test_gaussian_composition_never_below_the_analytic_value():
    """100 Gaussian(sigma = 10) releases compose exactly to Gaussian(sigma = 1) (mu-GDP): the
    certified eps(1e-5) and delta(eps) are >= the Balle-Wang values and within 1e-5 relative (the
    connect-the-dots chord gap, O(h^2) per release, is ~1.5e-6 relative on delta here)."""
    mpmath.mp.dps = 40

    def exact_delta(eps):
        eps = mpmath.mpf(eps)
        return mpmath.ncdf(mpmath.mpf(1) / 2 - eps) - mpmath.exp(eps) * mpmath.ncdf(-mpmath.mpf(1) / 2 - eps)

    pld = PrivacyLossDistribution.from_pair(acc.Gaussian(10, 1), discretisation=H, lower_bound=False).self_compose(100)
    for eps in (0.5, 2.0, 4.0):
        up = pld.delta(eps).delta
        truth = exact_delta(eps)
        assert up >= truth and up - truth <= 1e-5 * truth + 1e-15
    r = pld.epsilon(1e-5)
    exact_eps = mpmath.findroot(lambda e: exact_delta(e) - mpmath.mpf("1e-5"), 4.0)
    assert r.epsilon >= exact_eps
    assert r.epsilon <= exact_eps * (1 + 1e-5)


def test_evaluator_dispatch_uses_a_tilted_pass_for_small_delta():
    pld = PrivacyLossDistribution.from_pair(acc.Laplace(10, 1), discretisation=H, lower_bound=False).self_compose(1000)
    up = pld._directions[0].upper
    ev = _RecipeEvaluator(up, pld._step, pld._step_float)
    assert ev.for_delta(1e-5) is not ev.at(0.0)  # the search runs on a tilted pass
    assert ev._worth_tilting(0.0, 3.0) == 0.0


def _dp_accounting():
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as pld

    return pld


def test_thousand_fold_laplace_at_most_dp_accounting_at_the_same_grid():
    """Issue #12: 1,000-fold Laplace (b = 10), connect-the-dots at h = 1e-4: our certified eps is
    at most dp_accounting's pessimistic (float, uncertified) estimate and above its optimistic one."""
    dpa = _dp_accounting()
    ours = PrivacyLossDistribution.from_pair(acc.Laplace(10, 1), discretisation=H, lower_bound=False).self_compose(1000).epsilon(1e-5)
    pess = dpa.from_laplace_mechanism(10.0, value_discretization_interval=H).self_compose(1000).get_epsilon_for_delta(1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt = dpa.from_laplace_mechanism(10.0, value_discretization_interval=H, pessimistic_estimate=False, use_connect_dots=False)
    assert ours.epsilon <= pess, (ours.epsilon, pess)
    assert ours.epsilon >= opt.self_compose(1000).get_epsilon_for_delta(1e-5)


def test_mixed_composition_at_most_dp_accounting_at_the_same_grid():
    """Issue #12: 100 Laplace(10) + 100 Gaussian(10) + 100 discrete Laplace(10) at h = 1e-4."""
    dpa = _dp_accounting()
    ours = (
        PrivacyLossDistribution.from_pair(acc.Laplace(10, 1), discretisation=H, lower_bound=False).self_compose(100)
        + PrivacyLossDistribution.from_pair(acc.Gaussian(10, 1), discretisation=H, lower_bound=False).self_compose(100)
        + PrivacyLossDistribution.from_pair(acc.DiscreteLaplace(10, 1), discretisation=H, lower_bound=False).self_compose(100)
    ).epsilon(1e-5)
    kw = {"value_discretization_interval": H}
    pess = (
        dpa.from_laplace_mechanism(10.0, **kw).self_compose(100)
        .compose(dpa.from_gaussian_mechanism(10.0, **kw).self_compose(100))
        .compose(dpa.from_discrete_laplace_mechanism(0.1, 1, **kw).self_compose(100))
    ).get_epsilon_for_delta(1e-5)
    assert ours.epsilon <= pess, (ours.epsilon, pess)
    assert ours.epsilon >= pess * (1 - 1e-6)  # the same discretisation: equal up to float noise


def test_skellam_at_the_same_grid_is_tighter_than_dp_accounting():
    """Issue #12's Skellam comparison (tightness part; the time is in the benchmark): our
    certified eps of 1,000 Skellam(mu = 100) releases at h = 1e-4 is below dp_accounting's
    pessimistic estimate at the same h (ours splits each loss between its two grid neighbours,
    connect-the-dots, second order in h; dp_accounting rounds each pmf loss up, first order: 0.3 %
    here), and stays above our own certified lower bound (the optimistic twin)."""
    dpa = _dp_accounting()
    from scipy import stats

    from accounting._mechanisms._skellam import SkellamPair

    ks = np.arange(-320, 321)
    lp = stats.skellam.logpmf(ks, 50, 50)
    lower = {int(x): float(v) for x, v in zip(ks, lp)}
    upper = {int(x) + 1: float(v) for x, v in zip(ks, lp)}
    theirs = dpa.from_two_probability_mass_functions(lower, upper, value_discretization_interval=1e-4).self_compose(1000).get_epsilon_for_delta(1e-5)
    ours = PrivacyLossDistribution.from_pair(SkellamPair(100, 1), discretisation=1e-4).self_compose(1000).epsilon(1e-5)
    assert ours.epsilon < theirs * (1 - 1e-3)
    assert ours.epsilon_lower < ours.epsilon


def _exact_dft(t: np.ndarray, n: int, j: int) -> complex:
    with mpmath.workdps(40):
        total = mpmath.fsum(mpmath.mpf(float(x)) * mpmath.expjpi(-2 * mpmath.mpf(j * m % n) / n) for m, x in enumerate(t) if x)
        return complex(total)


def test_direct_dft_on_a_sparse_vector_is_within_its_bound():
    """A few atoms on a long grid (a Binomial pair's PLD): the direct DFT skips the all-zero
    32-entry blocks, and each transformed value stays within eta of the exact DFT (mpmath, 40
    digits), whose size is a few ulps of ||t||_1; leaving out a nonzero block instead (the wrong
    variant) moves some value far outside eta."""
    n = 1 << 14
    rng = np.random.default_rng(5)
    t = np.zeros(9000)
    atoms = np.sort(rng.choice(len(t), size=12, replace=False))
    t[atoms] = rng.random(12)
    freqs = np.sort(rng.choice(n // 2 + 1, size=40, replace=False))
    g, eta = fp._direct_dft(t, n, freqs, float(t.sum()), 0.0)
    assert 0 < eta < 1e-13 * t.sum()
    exact = np.array([_exact_dft(t, n, int(j)) for j in freqs])
    assert np.all(np.abs(g - exact) <= eta)
    dropped = t.copy()
    dropped[atoms[-1]] = 0.0  # a block the engine must not skip
    g_wrong, _ = fp._direct_dft(dropped, n, freqs, float(t.sum()), 0.0)
    assert np.any(np.abs(g_wrong - exact) > eta)

def test_certified_powers_bracket_arb_powers():
    """The doubling table of certified powers: lo_j <= ratio^j <= hi_j against Arb's powers
    (ratios below and above 1, lengths around powers of 2) within 1e-14 relative."""
    import numpy as np
    from flint import arb

    from accounting import working_precision
    from accounting._privacy_loss._pld_measure import _certified_powers

    with working_precision(96):
        for ratio in ((-arb("0.001")).exp(), arb("1.0003"), arb(3) / 7):
            for count in (1, 2, 3, 1024, 1025, 5000):
                lo, hi = _certified_powers(ratio, count)
                assert len(lo) == len(hi) == count
                for j in sorted({0, count // 2, count - 1} | set(range(0, count, 37))):
                    assert arb(lo[j]) <= ratio**j <= arb(hi[j])
                assert np.all(hi <= lo * (1 + 1e-14) + 1e-300)


def test_twiddle_tables_are_within_one_rounding_of_exact():
    """Both twiddle tables hold e^{-2 pi i r s / n} with each component within one rounding of
    the exact value plus 1e-25 (the Arb ball's width): within the u per component (absolute:
    the entries have modulus 1) that _direct_dft's error bound counts. Checked against acb's exp
    at 192 bits, every entry."""
    from flint import acb, arb

    from accounting import working_precision
    from accounting._privacy_loss._pld_fft_power import _TWIDDLE_CACHE, _twiddle_tables

    u = 2.0**-53
    for n in (4096, 12000, 65536 + 7):
        with working_precision(96):
            _TWIDDLE_CACHE.pop(n, None)
            coarse, fine, block = _twiddle_tables(n)
        with working_precision(192):
            for table, stride in ((coarse, block), (fine, 1)):
                for r in range(len(table)):
                    z = acb(0, -2 * arb.pi() / n * (r * stride)).exp()
                    for got, exact in ((table[r].real, z.real), (table[r].imag, z.imag)):
                        assert abs(arb(got) - exact) <= u * abs(exact) + 1e-25
