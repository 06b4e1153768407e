"""Statistical and unit tests of dpverify._executed._samplers against exact pmfs (tests/naive.py).

False alarms: every goodness-of-fit test below runs at a fixed seed with level
ALPHA = FAMILY_ALPHA / N_GOF_TESTS (Bonferroni), so the chance that a correct sampler fails any of
them is at most FAMILY_ALPHA = 1e-6. Nothing is retried. Power is computed in each test from the
binned null (tests/_gof.py, noncentral chi-square): with N = 10**6 draws each test rejects a law
whose binned distribution is 1% away in total variation with probability > 0.999, and the test
asserts that. The "wrong variant" tests check the reverse direction: a plausible bug is caught.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpverify._executed import _samplers as S
import naive
from _gof import counts_gof, integer_gof

FAMILY_ALPHA = 1e-6
N_GOF_TESTS = 34
ALPHA = FAMILY_ALPHA / N_GOF_TESTS
N = 1_000_000


def rng_for(label: str) -> np.random.Generator:
    """A fixed, test-specific stream (the label keeps the tests independent of their order)."""
    return np.random.default_rng([20240917, *label.encode()])


def check_fit(samples, lo, probs, lower=0.0, upper=0.0, *, tv_power=0.01, max_bins=200):
    res = integer_gof(samples, lo, probs, alpha=ALPHA, lower_tail=lower, upper_tail=upper, max_bins=max_bins)
    assert not res.rejected, str(res)
    if tv_power is not None:
        assert res.power_at_tv(tv_power) > 0.999, f"too weak: power {res.power_at_tv(tv_power)} at TV {tv_power}"
    return res


# ------------------------------------------------------------------------------------------------
# Exact laws
# ------------------------------------------------------------------------------------------------


def test_bernoulli_rational():
    """Bernoulli(1/3): 2-cell chi-square at N = 1e6, false alarm <= ALPHA."""
    x = S.bernoulli(rng_for("bern"), Fraction(1, 3), N)
    check_fit(x, 0, [2 / 3, 1 / 3])


@pytest.mark.parametrize("gamma", [Fraction(1, 3), Fraction(5, 2)])
def test_bernoulli_exp(gamma):
    """Bernoulli(exp(-gamma)) (CKS Alg. 1, with the floor(gamma) split) at N = 1e6."""
    x = S.bernoulli_exp(rng_for(f"bexp{gamma}"), gamma, N)
    p = math.exp(-float(gamma))
    check_fit(x, 0, [1 - p, p])


def test_geometric():
    """P[X = k] = (1 - e^{-1/b}) e^{-k/b}, b = 10/3, N = 1e6."""
    lo, probs, lower, upper = naive.geometric_pmf(Fraction(10, 3), 80)
    check_fit(S.geometric(rng_for("geom"), Fraction(10, 3), N), lo, probs, lower, upper)


@pytest.mark.parametrize("method", ["cks", "inversion"])
@pytest.mark.parametrize("scale", [Fraction(1), Fraction(3, 2), Fraction(1000)])
def test_discrete_laplace(scale, method):
    """Lap_Z(scale) against its closed form, N = 1e6, by CKS Algorithm 2 and by exact inversion (the
    scales cover the inversion sampler's shapes: no digit group (b = 1), one group of one digit with
    s = 2 (b = 3/2), one group of ten digits (b = 1000))."""
    half = int(40 * scale) + 5
    lo, probs, lower, upper = naive.discrete_laplace_pmf(scale, half)
    check_fit(S.discrete_laplace(rng_for(f"lap{scale}{method}"), scale, N, method=method), lo, probs, lower, upper)


def test_discrete_laplace_inversion_wrong_scale_is_rejected():
    """The inversion sampler at scale 3% too large (30.9 tested as 30) is rejected at N = 1e6: the
    same test as above, whose computed power against exactly that alternative is > 1 - 1e-6."""
    scale = Fraction(30)
    lo, probs, lower, upper = naive.discrete_laplace_pmf(scale, 1205)
    wrong = S.discrete_laplace(rng_for("lap-wrong"), scale * Fraction(103, 100), N, method="inversion")
    res = integer_gof(wrong, lo, probs, alpha=ALPHA, lower_tail=lower, upper_tail=upper)
    _, alt, alt_lo, alt_hi = naive.discrete_laplace_pmf(scale * Fraction(103, 100), 1205)
    assert res.power_against(alt, alt_lo, alt_hi) > 1 - 1e-6
    assert res.rejected, str(res)


@pytest.mark.parametrize("method", ["cks", "inversion"])
@pytest.mark.parametrize("sigma", ["0.5", "3", "1000"])
def test_discrete_gaussian(sigma, method):
    """N_Z(0, sigma^2) at sigma = 0.5, 3, 1000 against the mpmath pmf, N = 1e6 (2e6 at sigma =
    1000, where binning costs power against a 1% scale error), by CKS Algorithm 3 and with its
    candidates and acceptances by exact inversion (the acceptance's A = 0 and past-the-table paths
    are driven in tests/test_float_safe.py)."""
    sigma2 = Fraction(sigma) ** 2
    half = int(8 * Fraction(sigma)) + 3
    lo, probs, lower, upper = naive.discrete_gaussian_pmf(sigma2, half)
    x = S.discrete_gaussian(rng_for(f"dg{sigma}{method}"), sigma2, 2 * N if sigma == "1000" else N, method=method)
    res = check_fit(x, lo, probs, lower, upper)
    # the same test is sensitive to sigma 1% off: its computed power is essentially 1
    _, alt, alt_lo, alt_hi = naive.discrete_gaussian_pmf(sigma2 * Fraction(101, 100) ** 2, half)
    assert res.power_against(alt, alt_lo, alt_hi) > 0.999


@pytest.mark.parametrize("method", ["cks", "inversion"])
def test_discrete_gaussian_wrong_sigma_is_rejected(method):
    """A sampler with sigma 1% too large (sigma = 3.03 tested as 3) is rejected at N = 1e6.

    The computed power of this test against exactly that alternative is > 1 - 1e-6, so this test
    fails by chance with probability < 1e-6."""
    sigma2 = Fraction(9)
    lo, probs, lower, upper = naive.discrete_gaussian_pmf(sigma2, 30)
    wrong = S.discrete_gaussian(rng_for(f"dg-wrong{method}"), sigma2 * Fraction(101, 100) ** 2, N, method=method)
    res = integer_gof(wrong, lo, probs, alpha=ALPHA, lower_tail=lower, upper_tail=upper)
    _, alt, alt_lo, alt_hi = naive.discrete_gaussian_pmf(sigma2 * Fraction(101, 100) ** 2, 30)
    assert res.power_against(alt, alt_lo, alt_hi) > 1 - 1e-6
    assert res.rejected, str(res)


def test_naive_discrete_gaussian_matches_pmf():
    """The pure-Python CKS twin (the oracle's oracle) fits the pmf too: N = 20000, sigma = 3
    (power > 0.999 only against laws >= 5% away in binned total variation, computed)."""
    rnd = random.Random(7)
    x = [naive.naive_discrete_gaussian(rnd, Fraction(9)) for _ in range(20000)]
    lo, probs, lower, upper = naive.discrete_gaussian_pmf(Fraction(9), 30)
    res = check_fit(x, lo, probs, lower, upper, tv_power=None)
    assert res.power_at_tv(0.05) > 0.999


def test_discrete_gaussian_range():
    """The int64-exact range is enforced with a message naming sigma2 and the fix."""
    p, q, t, ymax = S.discrete_gaussian_range(Fraction(10**6))
    assert (p, q, t) == (10**6, 1, 1001) and ymax > 2000 * 1000
    with pytest.raises(ValueError, match="sigma2"):
        S.discrete_gaussian_range(0.1)  # the float 0.1 has denominator 2**55
    with pytest.raises(ValueError, match="sigma2"):
        S.discrete_gaussian_range(2**40)
    # near the top of the range (sigma ~ 13000 for integer sigma^2) and just beyond it
    S.discrete_gaussian_range(10**8 + 7)
    with pytest.raises(ValueError, match="truncation"):
        S.discrete_gaussian_range(10**9)


# ------------------------------------------------------------------------------------------------
# Polya
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("r", "beta", "n"), [(0.5, 0.5, N), (1 / 1024, math.exp(-1 / 32), 2 * N)])
def test_polya(r, beta, n):
    """Polya(r, beta) against the mpmath pmf (N = 1e6, 2e6)."""
    lo, probs, lower, upper = naive.polya_pmf(r, beta, 400)
    x = S.polya(rng_for(f"polya{r}"), r, beta, n)
    res = check_fit(x, lo, probs, lower, upper, tv_power=None, max_bins=n)
    assert res.power_at_tv(0.01) > 0.999


@pytest.mark.parametrize(
    ("r", "beta"),
    [(2.0**-24, math.exp(-1 / 4096)), (2.0**-10, math.exp(-1 / 32)), (0.5, 0.5), (1.0, 0.9)],
)
def test_polya_implemented_law_is_within_a_few_ulp(r, beta):
    """The law the float kernel implements (its thresholds on the 2**-53 grid, replicated in
    naive.implemented_polya_law) is within 64 * 2**-53 of the exact law in total variation
    (measured: 0.4 and 0.8 units of 2**-53 at the Theorem-1 shapes r = 2**-24, 2**-10; 2.4 at
    r = 1/2; 41 at r = 1, beta = 0.9, where the float cdf sums hundreds of terms). Deterministic."""
    import mpmath

    ctx = mpmath.MPContext()
    ctx.dps = 30
    rr, bb = ctx.mpf(r), ctx.mpf(beta)
    # beyond width the exact mass is < beta^width ~ e^-40 < 2**-57
    width = int(40 / (1 - beta)) + 200
    exact = [ctx.exp(naive.polya_log_pmf(ctx, rr, bb, 0))]
    for k in range(width - 1):
        exact.append(exact[-1] * bb * (k + rr) / (k + 1))
    implemented = naive.implemented_polya_law(r, beta, width)
    tv = 0.5 * float(ctx.fsum(abs(ctx.mpf(float(a)) - b) for a, b in zip(implemented, exact)))
    tv += 0.5 * float(abs(1 - ctx.fsum(exact)))  # exact mass beyond the grid (< 1e-20)
    assert tv < 64 * 2.0**-53, tv


def _nonzero_count(draw, total, chunk=10_000_000):
    return sum(int(np.count_nonzero(draw(min(chunk, total - i)))) for i in range(0, total, chunk))


def test_polya_tiny_shape_adds_noise():
    """r = 2**-24, beta = e^{-1/4096}: P[X > 0] = 1 - (1-beta)^r ~ 5e-7 must not be lost to
    underflow. 1e8 draws, so about 50 nonzeros are expected; 2-cell chi-square at level ALPHA.
    A sampler whose noise underflows to 0 (a float Gamma(2**-24) that rounds to 0, the failure
    named in DESIGN.md) is rejected by the same test with certainty: a zero count gives the
    statistic N q / (1 - q) ~ 50, above the critical value (~30)."""
    r, beta = 2.0**-24, math.exp(-1 / 4096)
    q = -math.expm1(r * math.log1p(-beta))
    total = 100_000_000
    rng = rng_for("polya-tiny")
    nonzero = _nonzero_count(lambda k: S.polya(rng, r, beta, k), total)
    res = counts_gof([total - nonzero, nonzero], [1 - q, q], alpha=ALPHA, min_expected=5, max_bins=total)
    assert not res.rejected, str(res)
    assert total * q / (1 - q) > res.critical_value
    assert counts_gof([total, 0], [1 - q, q], alpha=ALPHA, min_expected=5, max_bins=total).rejected


def _polya_sums(label, n, beta, reps):
    rng = rng_for(label)
    out = np.empty(reps, dtype=np.int64)
    chunk = max(1, 4_000_000 // n)
    for start in range(0, reps, chunk):
        k = min(chunk, reps - start)
        out[start : start + k] = S.polya_difference(rng, 1.0 / n, beta, (k, n)).sum(axis=1)
    return out


@pytest.mark.parametrize(("n", "reps"), [(2, N), (2**10, 200_000)])
def test_polya_difference_sums_to_discrete_laplace(n, reps):
    """Sum of n per-user gamma+ - gamma-, Polya(1/n, e^{-eps/g}), g = ceil(eps sqrt n), eps = 1,
    is Lap_Z(g/eps) (Theorem 1). reps sums per n; power > 0.999 against 1% TV at reps = 1e6 and
    against 2.5% TV at reps = 2e5 (computed in the test)."""
    eps = 1.0
    g = math.ceil(eps * math.sqrt(n))
    beta = math.exp(-eps / g)
    sums = _polya_sums(f"pd{n}", n, beta, reps)
    lo, probs, lower, upper = naive.discrete_laplace_pmf(Fraction(g), 40 * g)
    res = check_fit(sums, lo, probs, lower, upper, tv_power=None)
    assert res.power_at_tv(0.01 if reps >= N else 0.025) > 0.999


def test_polya_difference_wrong_beta_is_rejected():
    """The bug beta = e^{-eps} instead of e^{-eps/g} (noise g times too small) is rejected."""
    n, eps = 2**10, 1.0
    g = math.ceil(eps * math.sqrt(n))
    sums = _polya_sums("pd-wrong", n, math.exp(-eps), 20_000)
    lo, probs, lower, upper = naive.discrete_laplace_pmf(Fraction(g), 40 * g)
    res = integer_gof(sums, lo, probs, alpha=ALPHA, lower_tail=lower, upper_tail=upper)
    assert res.rejected, str(res)


@pytest.mark.parametrize(("n", "reps"), [(2, N), (2**10, 20_000)])
def test_skellam_sums(n, reps):
    """Sum of n per-user Sk(0, g^2/(n eps^2)), g = ceil(eps sqrt n), eps = 1, is Sk(0, g^2/eps^2)
    (Theorem 2 with s = 1). Power > 0.999 against 1% TV at 1e6 sums, 5% TV at 2e4 (computed)."""
    g = math.ceil(math.sqrt(n))
    rng = rng_for(f"sksum{n}")
    sums = np.concatenate(
        [S.skellam(rng, g * g / n, (min(reps - i, 4_000_000 // n), n)).sum(axis=1) for i in range(0, reps, 4_000_000 // n)]
    )
    lo, probs, lower, upper = naive.skellam_pmf(float(g * g), 12 * g + 10)
    res = check_fit(sums, lo, probs, lower, upper, tv_power=None)
    assert res.power_at_tv(0.01 if reps >= N else 0.05) > 0.999


def test_polya_difference_single_user_pmf():
    """gamma+ - gamma- itself (r = 1/4, beta = 0.7) against the exact convolution, N = 1e6."""
    lo, probs, lower, upper = naive.polya_difference_pmf(0.25, 0.7, 60)
    check_fit(S.polya_difference(rng_for("pd1"), 0.25, 0.7, N), lo, probs, lower, upper)


# ------------------------------------------------------------------------------------------------
# Skellam, binomial, continuous baselines
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mu", [3.0, 1e4, 1e9])
def test_skellam(mu):
    """Sk(0, mu) = Poisson(mu/2) - Poisson(mu/2) against e^{-mu} I_k(mu), N = 1e6."""
    half = int(12 * math.sqrt(mu)) + 10
    lo, probs, lower, upper = naive.skellam_pmf(mu, half)
    check_fit(S.skellam(rng_for(f"sk{mu}"), mu, N), lo, probs, lower, upper)


def test_skellam_tiny_variance():
    """mu = 1e-6: P[X != 0] = 1 - e^{-mu} I_0(mu) ~ 1e-6; 1e7 draws (~10 nonzero expected), 2-cell test."""
    from scipy import special

    mu = 1e-6
    q = 1.0 - float(special.ive(0, mu))
    x = S.skellam(rng_for("sk-tiny"), mu, 10 * N)
    res = integer_gof((x != 0).astype(np.int64), 0, [1 - q, q], alpha=ALPHA, min_expected=5, max_bins=x.size)
    assert not res.rejected, str(res)


def test_binomial():
    lo, probs, lower, upper = naive.binomial_pmf(20, 0.3)
    check_fit(S.binomial(rng_for("binom"), 20, 0.3, N), lo, probs, lower, upper)


@pytest.mark.parametrize(("sampler", "dist"), [(S.laplace, stats.laplace(scale=2.0)), (S.gaussian, stats.norm(scale=2.0))])
def test_continuous_baselines(sampler, dist):
    """Kolmogorov-Smirnov at level ALPHA, N = 2e5 (rejects a CDF shifted by 0.015 w.p. ~1)."""
    x = sampler(rng_for(sampler.__name__), 2.0, 200_000)
    assert stats.kstest(x, dist.cdf).pvalue >= ALPHA


# ------------------------------------------------------------------------------------------------
# Interface: validation, shapes, reproducibility
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda r: S.discrete_laplace(r, -1), "scale"),
        (lambda r: S.discrete_laplace(r, "abc"), "scale"),
        (lambda r: S.geometric(r, 0), "scale"),
        (lambda r: S.discrete_gaussian(r, 0), "sigma2"),
        (lambda r: S.discrete_gaussian(r, float("nan")), "sigma2"),
        (lambda r: S.bernoulli(r, Fraction(3, 2)), "p"),
        (lambda r: S.bernoulli_exp(r, -1), "gamma"),
        (lambda r: S.polya(r, 0.0, 0.5), "r"),
        (lambda r: S.polya(r, 0.5, 1.0), "beta"),
        (lambda r: S.polya(r, 0.5, 0.0), "beta"),
        (lambda r: S.polya(r, 1e6, 0.9), "r"),
        (lambda r: S.polya(r, 1e-310, 0.5), "r"),
        (lambda r: S.polya_difference(r, 1.0, -0.1), "beta"),
        (lambda r: S.skellam(r, -1.0), "variance"),
        (lambda r: S.skellam(r, 1e300), "variance"),
        (lambda r: S.binomial(r, -1, 0.5), "n"),
        (lambda r: S.binomial(r, 10, 1.5), "p"),
        (lambda r: S.laplace(r, 0.0), "scale"),
        (lambda r: S.gaussian(r, -2.0), "sigma"),
        (lambda r: S.discrete_laplace(r, 1, size=-3), "size"),
        (lambda r: S.discrete_laplace(r, 1, size=2.5), "size"),
    ],
)
def test_bad_parameters_raise_value_error_naming_them(call, name):
    with pytest.raises(ValueError, match=rf"^{name}="):
        call(np.random.default_rng(0))


def test_rng_must_be_a_generator():
    with pytest.raises(ValueError, match="^rng="):
        S.discrete_laplace(np.random.RandomState(0), 1)


def test_scalar_shape_and_reproducibility():
    a = S.discrete_gaussian(np.random.default_rng(5), 9, (3, 4))
    b = S.discrete_gaussian(np.random.default_rng(5), 9, (3, 4))
    assert a.shape == (3, 4) and a.dtype == np.int64 and np.array_equal(a, b)
    assert isinstance(S.discrete_laplace(np.random.default_rng(1), 2), int)
    assert S.polya(np.random.default_rng(1), 0.5, 0.5, 0).shape == (0,)


def test_decimal_strings_are_exact():
    """'0.1' is 1/10, and the rational reaches the kernel unchanged (Bernoulli(1/10) at N = 1e6)."""
    check_fit(S.bernoulli(rng_for("dec"), "0.1", N), 0, [0.9, 0.1])
