"""SDP-DPE's privatizer (Li, Zhou and Ji, eq. (6)): vector summation with bit messages in the shuffle model.

The protocol is the bit-message vector summation of Cheu, Joseph, Mao and Peng (2021) that the
paper builds on: randomised rounding to a precision g per coordinate, sent in unary as bits,
plus fair-coin noise bits:

- **R** (client u, report y^u in [-B, B]^s): for every coordinate j, x = (y_j + B) / (2B) in
  [0, 1] is rounded to xhat_j = floor(x g) + Bernoulli(x g - floor(x g)) in {0..g} (unbiased:
  E[xhat_j] = x g), sent as g messages (j, bit) of which xhat_j carry a 1, plus ``k`` noise
  messages (j, c), c ~ Bernoulli(1/2) fair coins: s (g + k) messages of 1 + ceil(log2 s) bits each
  (the coordinate index and the bit).
- **S** permutes all the messages uniformly at random.
- **A** counts, for each j, the 1-bits among the messages labelled j: C_j = sum_u xhat_j^u + Bin(n k, 1/2),
  and returns 2B ((C_j - n k / 2) / (n g)) - B, an unbiased estimate of the clients' average
  report (E[C_j] = g sum_u x_j^u + n k / 2).

The precision g trades communication for rounding noise: the paper's communication, O(d T^{3 alpha/2})
bits in all, i.e. O(d sqrt(|U_l|)) per client, is g = ceil(sqrt(n)) (the default,
``precision="sqrt"``); ``precision=1`` sends one rounding bit per coordinate (fewer messages, and
rounding noise of the order of B / sqrt(n), far above the privacy noise).

**Privacy, exactly.** The server's view is the shuffled multiset; since every coordinate gets
exactly n (g + k) messages, it is equivalent to the vector (C_1, ..., C_s). Replacing one client
changes each xhat_j by at most g, and the s noise counts are independent, so the view is the s-fold
composition of the Binomial mechanism Bin(N, 1/2) with sensitivity g, N = n k (a shift by
|j| < g is dominated by the shift by g: Bin(N, 1/2) is symmetric and log-concave, so its shifts
have monotone likelihood ratio and the optimal tests are thresholds; dominating pairs compose). Its Renyi curve is +inf (the supports differ), so the
certified (eps, delta) of the composition comes from the privacy-loss-distribution route (the
pair evaluated lazily in Arb with Hoeffding-bounded tails,
``accounting._mechanisms._binomial_pair``; equal to ``accounting.epsilon_routes`` on
``Binomial(N, 1/2, g)`` where that runs), and each phase is charged as ``ApproxDP(eps_l, delta)``. Clients are fresh in every phase (parallel composition).

**Noise bits.** Theorem 2 (iii) sets sigma_ns = O(B sqrt(d ln(d/delta)) / (eps |U_l|)) with the
constant unstated. The default ``k`` is the *smallest* number of noise bits per client per
coordinate whose exactly accounted s-fold composition meets the target (eps, delta) (calibrated
per (n, s) by bisection on the exact accountant). Beside it, :meth:`ShuffleBits.paper_form` gives the
k that the paper's formula with constant 1 would set (sd of the noise in the average = sigma_ns) and
*its* exactly accounted epsilon, so the reader sees what the unstated constant costs.

**Width.** The noise in the released average coordinate, (2B/(n g))(Bin(N, 1/2) - N/2) plus the
rounding error (2B/(n g)) sum_u (xhat^u - x^u g), is sub-Gaussian with variance proxy
B^2 (N + n) / (n g)^2 (Hoeffding: each fair coin and each rounding error, a centred variable in an
interval of length 1, is 1/4-sub-Gaussian), so ``noise_sd`` returns B sqrt(N + n) / (n g) and
Theorem 2's width term is sigma_n = 2 sigma_ns sqrt(S d) with that sigma_ns.

Sampling is exact: noise coins are integer random bits; the rounding coin compares a 53-bit
uniform with the float x g - floor(x g), whose law differs from the Bernoulli by at most 2^-53
(the privacy proof does not depend on that law: any xhat in {0..g} has sensitivity g).
The per-user path materialises every message and permutes each coordinate's block of messages
(n (g + k) bits) uniformly: the multiset the server receives is the same as under one global
permutation of all labelled messages, and the blocks keep memory at n (g + k) bytes.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from accounting import ApproxDP, AccountingError
from accounting.internal import binomial_composition_epsilon, check_positive, check_probability

from ._design import support_bound
from ._privatizers import VectorProtocol

__all__ = ["ShuffleBits", "binomial_epsilon", "calibrate_noise_bits", "precision_for", "shuffle_message_bits"]

#: the largest number of noise bits per client and coordinate the calibration searches
MAX_NOISE_BITS = 1 << 16
PRECISIONS = ("sqrt", 1)


def _check_count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise AccountingError(name, value, "an integer >= 1")
    return int(value)


def precision_for(n: int, precision: str | int) -> int:
    """g: ceil(sqrt(n)) for "sqrt" (the paper's communication), else the given integer >= 1."""
    n = _check_count("n", n)
    if precision == "sqrt":
        return math.isqrt(n - 1) + 1 if n > 1 else 1
    return _check_count("precision", precision)


@functools.lru_cache(maxsize=4096)
def binomial_epsilon(noise_trials: int, coordinates: int, delta: float, sensitivity: int = 1) -> float:
    """Certified eps at ``delta`` of the ``coordinates``-fold composition of Bin(noise_trials, 1/2) + shift ``sensitivity`` (PLD)."""
    return binomial_composition_epsilon(int(noise_trials), 0.5, int(sensitivity), int(coordinates), float(delta))


@functools.lru_cache(maxsize=1024)
def calibrate_noise_bits(n: int, s: int, epsilon: float, delta: float, precision: int = 1) -> int:
    """The smallest k >= 1 (noise bits per client per coordinate) with binomial_epsilon(n k, s, delta, g) <= epsilon."""
    n, s, g = _check_count("n", n), _check_count("s", s), _check_count("precision", precision)
    check_positive("epsilon", epsilon)
    check_probability("delta", delta)

    def meets(k: int) -> bool:
        return binomial_epsilon(n * k, s, delta, g) <= epsilon

    # Start at the Gaussian approximation's k (Bin(N, 1/2) ~ N(N/2, N/4): an s-fold shift by g is
    # mu-GDP with mu = 2 g sqrt(s / N)); it only steers the search, the exact route decides.
    k = max(1, min(MAX_NOISE_BITS, math.ceil(4 * g * g * s / (_gaussian_mu(epsilon, delta) ** 2 * n))))
    if meets(k):
        lo, hi = 0, k  # hi meets; find the smallest that does
        step = 1
        while k - step >= 1 and meets(k - step):
            hi = k - step
            step *= 2
        lo = max(0, k - step)
    else:
        lo, step = k, 1
        while not meets(lo + step):
            lo, step = lo + step, step * 2
            if lo + step > MAX_NOISE_BITS:
                raise AccountingError("epsilon", epsilon, f"a target reachable with <= {MAX_NOISE_BITS} noise bits per client and coordinate (n={n}, s={s}, g={g}, delta={delta})")
        hi = lo + step
    while hi - lo > 1:  # lo fails (or is 0), hi meets; eps decreases as the noise trials grow
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if meets(mid) else (mid, hi)
    return hi


def _gaussian_mu(epsilon: float, delta: float) -> float:
    """The mu of mu-GDP whose delta(epsilon) equals ``delta`` (float bisection; a starting point only)."""
    from scipy.stats import norm

    def gdp_delta(mu: float) -> float:
        return float(norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2))

    lo, hi = 1e-6, 1e3
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if gdp_delta(mid) < delta else (lo, mid)
    return lo


def shuffle_message_bits(s: int) -> int:
    """Bits of one message (j, bit): the coordinate index in ceil(log2 s) bits plus the bit."""
    s = _check_count("s", s)
    return 1 + (s - 1).bit_length()  # ceil(log2 s) in integers


class ShuffleBits(VectorProtocol):
    """SDP-DPE (eq. (6)): bit-message vector summation through a shuffler, exactly accounted."""

    model = "shuffle"

    def __init__(self, epsilon: float, delta: float, reward_bound: float, precision: str | int = "sqrt") -> None:
        check_positive("reward_bound", reward_bound)
        self.epsilon = float(check_positive("epsilon", epsilon))
        self.delta = float(check_probability("delta", delta))
        self.reward_bound = float(reward_bound)
        if precision != "sqrt":
            _check_count("precision", precision)
        self.precision = precision
        self.noise_multiplier = None  # no Gaussian noise (VectorProtocol's field)

    def g(self, n: int) -> int:
        return precision_for(n, self.precision)

    def noise_bits(self, n: int, s: int) -> int:
        return calibrate_noise_bits(int(n), int(s), self.epsilon, self.delta, self.g(n))

    def phase_epsilon(self, n: int, s: int) -> float:
        return binomial_epsilon(int(n) * self.noise_bits(n, s), int(s), self.delta, self.g(n))

    def guarantee(self, n: int, s: int) -> Any:
        return ApproxDP(self.phase_epsilon(n, s), self.delta)

    def paper_form(self, n: int, s: int, d: int) -> dict:
        """The k of Theorem 2 (iii) with constant 1 (noise sd in the average = B sqrt(d ln(d/delta)) / (eps n)) and its exact eps."""
        g = self.g(n)
        trials_needed = (g * math.sqrt(d * math.log(d / self.delta)) / self.epsilon) ** 2
        k = max(1, math.ceil(trials_needed / n))
        return {"noise_bits_per_coordinate": k, "noise_trials": n * k, "precision": g, "epsilon": binomial_epsilon(n * k, s, self.delta, g), "delta": self.delta, "route": "pld"}

    def messages_per_client(self, n: int, s: int) -> int:
        return s * (self.g(n) + self.noise_bits(n, s))

    def bits_per_client(self, n: int, s: int) -> int:
        return self.messages_per_client(n, s) * shuffle_message_bits(s)

    def noise_sd(self, n: int, s: int) -> float:
        trials = n * self.noise_bits(n, s)
        return self.reward_bound * math.sqrt(trials + n) / (n * self.g(n))

    def paper_width_sd(self, n: int, s: int, d: int) -> float:
        return 2.0 * self.noise_sd(n, s) * math.sqrt(support_bound(d) * d)

    def release(self, reports: np.ndarray, rng: np.random.Generator, *, path: str) -> np.ndarray:
        n, s = reports.shape
        g, k = self.g(n), self.noise_bits(n, s)
        bound = self.reward_bound
        scaled = (reports + bound) / (2.0 * bound) * g
        floor = np.floor(scaled)
        xhat = (floor + (rng.random((n, s)) < scaled - floor)).astype(np.int64)  # R: randomised rounding to {0..g}
        if path == "per-user":
            counts = _shuffled_counts(xhat, g, k, rng)
        else:  # the same law: the clients' ones plus N fair coins per coordinate
            counts = xhat.sum(axis=0) + _fair_coin_counts(n * k, s, rng)
        return 2.0 * bound * ((counts - n * k / 2.0) / (n * g)) - bound

    def describe(self) -> dict:
        return {
            "model": self.model,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "reward_bound": self.reward_bound,
            "precision": self.precision,
            "protocol": "bit-message vector summation (Cheu, Joseph, Mao, Peng 2021): g unary rounding bits + k fair-coin bits per coordinate, shuffled",
            "accounting": "s-fold composition of Binomial(n k, 1/2) with sensitivity g per phase, certified PLD; k calibrated per (n, s)",
        }


def _fair_coin_counts(trials: int, s: int, rng: np.random.Generator) -> np.ndarray:
    """For each of s coordinates, the number of heads among ``trials`` fair coins, from exact random bits."""
    words, rest = divmod(int(trials), 64)
    out = np.zeros(s, dtype=np.int64)
    if words:
        raw = rng.integers(0, np.iinfo(np.uint64).max, size=(s, words), dtype=np.uint64, endpoint=True)
        out += np.unpackbits(raw.view(np.uint8), axis=1).sum(axis=1, dtype=np.int64)
    if rest:
        out += rng.integers(0, 2, size=(s, rest), dtype=np.int64).sum(axis=1)
    return out


def _shuffled_counts(xhat: np.ndarray, g: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Per-user simulation: every client's messages for each coordinate, permuted, then counted.

    Client u's block for coordinate j is g unary bits (xhat ones) followed by k fair coins; the
    coordinate's n (g + k) messages are permuted uniformly and the analyzer counts the 1-bits.
    """
    n, s = xhat.shape
    unary = np.arange(g, dtype=np.int64)
    counts = np.empty(s, dtype=np.int64)
    for j in range(s):
        data = (unary[None, :] < xhat[:, j, None]).astype(np.int8)  # (n, g): xhat ones, then zeros
        coins = rng.integers(0, 2, size=(n, k), dtype=np.int8)  # R: k fair coins
        messages = np.concatenate([data, coins], axis=1).reshape(-1)
        shuffled = messages[rng.permutation(messages.size)]  # S
        counts[j] = int(shuffled.sum(dtype=np.int64))  # A: the number of 1-bits labelled j
    return counts
