"""SDP-DPE (Li, Zhou & Ji, eq. (6)): the shuffled bit-message vector summation and its ledger.

- The ledger's per-user guarantee is recomputed independently (first, middle and last phase): with
  Google's dp_accounting PLD (pessimistic discretisation of the same Binomial pair, self-composed
  s times) the delta at the ledger's epsilon is <= the target delta, and at 0.97 x that epsilon it is above it (so the
  calibrated noise is not loose by more than 3 % in epsilon). Deterministic.
- Both simulation paths (per-user: every message materialised and permuted; aggregate: data bits
  plus N fair coins) follow the exact law of a coordinate's count, Bernoulli(x_1) * ... *
  Bernoulli(x_n) * Bin(n k, 1/2): Pearson chi-square at alpha = 1e-6 each (fixed seeds), and a
  wrong variant (one noise coin fewer in all) is rejected by the same test; precisions g = 1 and 3.
- The lazily evaluated Binomial pair (Arb log-gamma, Hoeffding tails) gives the exact-Fraction
  route's certified epsilon, and its tail bounds are above the true outside masses.
- The analyzer's estimate is unbiased: a z-test at alpha = 1e-6 on 20,000 releases, and the
  estimate without the noise centring is rejected.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from accounting import ApproxDP
from dpverify._bandits.linear import DPEConfig, run_linear, synthetic_instance
from accounting import Binomial, epsilon_routes
from accounting._mechanisms._binomial_pair import BinomialPair
from dpverify._bandits.linear._shuffle import ShuffleBits, _fair_coin_counts, _shuffled_counts, binomial_epsilon, calibrate_noise_bits, precision_for

from _gof import integer_gof

ALPHA = 1e-6


def _dp_accounting_delta(trials: int, compose: int, epsilon: float, sensitivity: int = 1, pessimistic: bool = True) -> float:
    from dp_accounting.pld import privacy_loss_distribution as pld

    logpmf = stats.binom.logpmf(np.arange(trials + 1), trials, 0.5)
    lower = {k: float(v) for k, v in enumerate(logpmf) if np.isfinite(v)}
    upper = {k + sensitivity: float(v) for k, v in enumerate(logpmf) if np.isfinite(v)}  # shifted by the sensitivity
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # dp_accounting's log-sum-exp overflows harmlessly at -inf losses
        warnings.simplefilter("ignore", RuntimeWarning)
        dist = pld.from_two_probability_mass_functions(lower, upper, pessimistic_estimate=pessimistic, value_discretization_interval=1e-4)
        return dist.self_compose(compose).get_delta_for_epsilon(epsilon)


@pytest.mark.slow
def test_ledger_states_the_recomputed_guarantee():
    delta = 1e-6
    result = run_linear("sdp-dpe", synthetic_instance(), 0, DPEConfig(horizon=6_000, epsilon=10.0, delta=delta))
    fed = [p for p in result.phases if p["clients"] > 0]
    assert fed, "the run collected feedback"
    spent = result.ledger.spent()
    assert isinstance(spent, ApproxDP) and spent.delta == delta
    assert spent.epsilon == pytest.approx(max(p["phase_epsilon"] for p in fed), rel=0, abs=0)
    assert spent.epsilon <= 10.0
    for p in fed:
        n, s, k = p["clients"], p["support_size"], p["noise_bits"]
        g = precision_for(n, "sqrt")
        assert k == calibrate_noise_bits(n, s, 10.0, delta, g)
        assert p["phase_epsilon"] == binomial_epsilon(n * k, s, delta, g)
    for p in (fed[0], fed[len(fed) // 2], fed[-1]):  # the independent recomputation (dp_accounting is slow)
        n, s, k, eps = p["clients"], p["support_size"], p["noise_bits"], p["phase_epsilon"]
        g = precision_for(n, "sqrt")
        # never under-reported: dp_accounting's optimistic delta (below the true one) at our eps is
        # within the target (ours, connect-the-dots, may sit below its pessimistic estimate, which
        # rounds every loss up)
        assert _dp_accounting_delta(n * k, s, eps, g, pessimistic=False) <= delta * (1 + 1e-6)
        assert _dp_accounting_delta(n * k, s, 0.97 * eps, g) > delta
        if k > 1:  # calibration is minimal: one noise bit fewer misses the target
            assert binomial_epsilon(n * (k - 1), s, delta, g) > 10.0


@pytest.mark.parametrize("trials, sensitivity, compose", [(60, 1, 5), (300, 3, 10), (2000, 1, 20)])
def test_lazy_binomial_pair_matches_the_exact_route(trials, sensitivity, compose):
    """The Arb/Hoeffding pair gives the same certified eps as the exact-Fraction Binomial route."""
    from accounting._mechanisms._binomial_pair import binomial_composition_epsilon

    lazy = binomial_composition_epsilon(trials, 0.5, sensitivity, compose, 1e-4)
    exact_route = epsilon_routes(Binomial(trials, 0.5, sensitivity), 1e-4, compose=compose, comparisons=False).epsilon
    assert lazy == pytest.approx(exact_route, rel=1e-9)


def test_lazy_binomial_pair_contract():
    pair = BinomialPair(50, 0.5, 2)
    assert math.isclose(float(pair.log_p(20).mid()), stats.binom.logpmf(20, 50, 0.5), rel_tol=1e-12)
    assert math.isclose(float(pair.log_q(22).mid()), stats.binom.logpmf(20, 50, 0.5), rel_tol=1e-12)
    assert not pair.log_p(-1).is_finite() and not pair.log_q(1).is_finite()
    for lo, hi in ((10, 40), (20, 30), (0, 25)):  # Hoeffding bounds hold: >= the true outside mass
        true = stats.binom.cdf(lo - 1, 50, 0.5) + stats.binom.sf(hi, 50, 0.5)
        assert float(pair.tail_p(lo, hi).upper()) >= true


def _count_law(x: np.ndarray, trials: int, g: int = 1) -> np.ndarray:
    """The exact law of sum_u xhat_u + Bin(trials, 1/2), xhat_u = floor(x_u g) + Bernoulli(frac)."""
    law = stats.binom.pmf(np.arange(trials + 1), trials, 0.5)
    for p in x * g:
        low, frac = int(np.floor(p)), p - np.floor(p)
        step = np.zeros(low + 2)
        step[low], step[low + 1] = 1 - frac, frac
        law = np.convolve(law, step)
    return law


@pytest.mark.parametrize("path, g", [("per-user", 1), ("per-user", 3), ("aggregate", 3)])
def test_count_follows_the_exact_law(path, g):
    """Power: with 40,000 draws the test rejects a one-coin-fewer variant (checked below)."""
    rng = np.random.default_rng({"per-user": 12, "aggregate": 13}[path] + g)
    x = np.array([0.2, 0.9, 0.5])
    n, k, draws = x.size, 3, 40_000
    scaled = x * g
    xhat = (np.floor(scaled) + (rng.random((draws, n)) < scaled - np.floor(scaled))).astype(np.int64)
    if path == "per-user":
        samples = np.array([_shuffled_counts(row[:, None], g, k, rng)[0] for row in xhat])
    else:
        samples = xhat.sum(axis=1) + np.array([_fair_coin_counts(n * k, 1, rng)[0] for _ in range(draws)])
    assert not integer_gof(samples, 0, _count_law(x, n * k, g), alpha=ALPHA).rejected
    wrong = xhat.sum(axis=1) + rng.binomial(n * k - 1, 0.5, size=draws)
    assert integer_gof(wrong, 0, _count_law(x, n * k, g), alpha=ALPHA).rejected


def test_fair_coin_counts_word_path():
    """The 64-bit popcount path (trials >= 64) against Bin(200, 1/2), alpha = 1e-6; 190 coins instead of 200 rejected."""
    rng = np.random.default_rng(5)
    law = stats.binom.pmf(np.arange(201), 200, 0.5)
    assert not integer_gof(_fair_coin_counts(200, 30_000, rng), 0, law, alpha=ALPHA).rejected
    assert integer_gof(_fair_coin_counts(190, 30_000, rng), 0, law, alpha=ALPHA).rejected


def test_estimate_is_unbiased():
    protocol = ShuffleBits(10.0, 1e-6, 1.0)  # precision g = ceil(sqrt(4)) = 2
    rng = np.random.default_rng(3)
    reports = np.array([[0.3, -0.8], [0.9, 0.1], [-0.2, 0.4], [0.0, 1.0]])
    n, s = reports.shape
    k = protocol.noise_bits(n, s)
    releases = np.array([protocol.release(reports, rng, path="aggregate") for _ in range(20_000)])
    sd = protocol.noise_sd(n, s)  # a variance proxy: >= the true sd
    z = (releases.mean(axis=0) - reports.mean(axis=0)) / (sd / math.sqrt(len(releases)))
    threshold = stats.norm.isf(ALPHA / (2 * s))
    assert np.all(np.abs(z) < threshold)
    # wrong variant: forgetting the noise centring n k / 2 (bias B k) is rejected
    uncentred = releases + 2.0 * (n * k / 2.0) / (n * protocol.g(n))
    z_wrong = (uncentred.mean(axis=0) - reports.mean(axis=0)) / (sd / math.sqrt(len(releases)))
    assert np.all(np.abs(z_wrong) > threshold)


def test_bad_input():
    from accounting._core._validation import AccountingError

    with pytest.raises(AccountingError, match="n"):
        calibrate_noise_bits(0, 3, 1.0, 1e-6)
    with pytest.raises(AccountingError, match="epsilon"):
        ShuffleBits(-1.0, 1e-6, 1.0)
