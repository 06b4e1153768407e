"""Mechanism objects: their samplers follow the accountant's pmf they claim (one source of truth).

Each test draws N = 400,000 releases at a fixed seed and runs a chi-square test against the
accountant's certified pmf at false-alarm rate 1e-6 per test (Bonferroni over this file: 5e-6);
``power_at_tv`` asserts the test rejects any law 1% away in total variation with probability >
0.999 at this N. A wrong variant (the right sampler run at a 10% smaller scale while claiming the
stated one) must be rejected by the same test.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from _gof import integer_gof
from dpverify._executed._noise_mechanisms import (
    discrete_gaussian_mechanism,
    discrete_laplace_mechanism,
    gaussian_mechanism,
    randomized_response_mechanism,
    skellam_mechanism,
)

N = 400_000
ALPHA = 1e-6


def _pmf_table(mechanism, lo, hi):
    return np.exp([mechanism.log_pmf(k) for k in range(lo, hi + 1)])


@pytest.mark.parametrize(
    "build, wrong",
    [
        (lambda: discrete_laplace_mechanism(4), lambda: discrete_laplace_mechanism(3.6)),
        (lambda: discrete_gaussian_mechanism(9), lambda: discrete_gaussian_mechanism(Fraction(729, 100))),
        (lambda: skellam_mechanism(25.0), lambda: skellam_mechanism(25.0 * 0.81)),
    ],
    ids=["discrete-laplace", "discrete-gaussian", "skellam"],
)
def test_sampler_matches_the_accountant_pmf_and_a_wrong_scale_is_rejected(build, wrong):
    mechanism = build()
    lo, hi = -80, 80
    probs = _pmf_table(mechanism, lo, hi)
    tails = (1 - probs.sum()) / 2  # symmetric laws
    good = integer_gof(mechanism.release(0, np.random.default_rng(11), N), lo, probs, alpha=ALPHA, lower_tail=tails, upper_tail=tails)
    assert not good.rejected, str(good)
    assert good.power_at_tv(0.01) > 0.999
    bad = integer_gof(wrong().release(0, np.random.default_rng(12), N), lo, probs, alpha=ALPHA, lower_tail=tails, upper_tail=tails)
    assert bad.rejected, str(bad)


def test_release_shifts_by_the_query_value_and_claims_come_from_the_accountant():
    m = discrete_laplace_mechanism(4, sensitivity=2)
    assert m.guarantee.epsilon == 0.5
    assert m.log_pmf(5, value=5) == pytest.approx(m.log_pmf(0))
    draws = m.release(1000, np.random.default_rng(1), 1000)
    assert abs(np.median(draws) - 1000) <= 2
    assert gaussian_mechanism(2.0).baseline and "float baseline" in gaussian_mechanism(2.0).describe()


def test_randomized_response_flips_at_the_claimed_rate():
    """Flip rate 1/(1+e) = 0.2689 at eps = 1: a two-sided binomial test at 1e-6 on N draws
    (power > 0.999 against a rate 0.01 away); the biased coin 0.25 is rejected by the same test."""
    from scipy.stats import binomtest

    m = randomized_response_mechanism(1.0)
    flips = m.release(0, np.random.default_rng(5), N)
    assert binomtest(int(flips.sum()), N, 1 / (1 + math.e)).pvalue > ALPHA
    biased = np.random.default_rng(6).random(N) < 0.25
    assert binomtest(int(biased.sum()), N, 1 / (1 + math.e)).pvalue < ALPHA
    with pytest.raises(ValueError, match="value"):
        m.release(2, np.random.default_rng(0), 3)


def test_bad_input():
    with pytest.raises(ValueError, match="value"):
        discrete_laplace_mechanism(4).release(0.5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="mechanism"):
        gaussian_mechanism(1.0).log_pmf(0)
    with pytest.raises(ValueError, match="scale"):
        discrete_laplace_mechanism(-1)
