"""SDP-DPE's privatizer (Li, Zhou and Ji, eq. (6)): vector summation with bit messages in the shuffle model.

The protocol is the bit-message vector summation of Cheu, Joseph, Mao and Peng (2021) that the
paper builds on, with one bit of randomised rounding per coordinate:

- **R** (client u, report y^u in [-B, B]^s): for every coordinate j, x = (y_j + B) / (2B) in
  [0, 1] is rounded to the bit b_j ~ Bernoulli(x) (unbiased: E[b_j] = x), and the client sends
  the message (j, b_j) plus ``k`` noise messages (j, c), c ~ Bernoulli(1/2) fair coins: s (k + 1)
  messages of 1 + ceil(log2 s) bits each (the coordinate index and the bit).
- **S** permutes all n s (k + 1) messages uniformly at random.
- **A** counts, for each j, the 1-bits among the messages labelled j: C_j = sum_u b_j^u + Bin(n k, 1/2),
  and returns 2B ((C_j - n k / 2) / n) - B, an unbiased estimate of the clients' average report
  (E[C_j] = sum_u x_j^u + n k / 2).

**Privacy, exactly.** The server's view is the shuffled multiset; since every coordinate gets
exactly n (k + 1) messages, it is equivalent to the vector (C_1, ..., C_s). Replacing one client
changes each b_j by at most 1, and the s noise counts are independent, so the view is the s-fold
composition of the Binomial mechanism Bin(N, 1/2) with sensitivity 1, N = n k
(``accounting.Binomial``; the shift by -1 or 0 is dominated by the shift by +1 because Bin(N, 1/2)
is symmetric, and dominating pairs compose). Its Renyi curve is +inf (the supports differ), so the
certified (eps, delta) of the composition comes from the privacy-loss-distribution route of
``accounting.epsilon_routes`` (the exact hockey-stick of the composed pair), and each phase is
charged as ``ApproxDP(eps_l, delta)``. Clients are fresh in every phase (parallel composition).

**Noise bits.** Theorem 2 (iii) sets sigma_ns = O(B sqrt(d ln(d/delta)) / (eps |U_l|)) with the
constant unstated. The default ``k`` is the *smallest* number of noise bits per client per
coordinate whose exactly accounted s-fold composition meets the target (eps, delta) (calibrated
per (n, s) by bisection on the exact accountant). Beside it, :meth:`ShuffleBits.paper_form` gives the
k that the paper's formula with constant 1 would set (sd of the noise in the average = sigma_ns) and
*its* exactly accounted epsilon, so the reader sees what the unstated constant costs.

**Width.** The noise in the released average coordinate, (2B/n)(Bin(N, 1/2) - N/2) plus the
rounding error (2B/n) sum_u (b^u - x^u), is sub-Gaussian with variance proxy B^2 (N + n) / n^2
(Hoeffding: each fair coin and each rounding bit is 1/4-sub-Gaussian), so ``noise_sd`` returns
B sqrt(N + n) / n and Theorem 2's width term is sigma_n = 2 sigma_ns sqrt(S d) with that sigma_ns.

Sampling is exact: noise coins are integer random bits; the rounding bit compares a 53-bit
uniform with the float x, whose law differs from Bernoulli(x) by at most 2^-53 (the privacy
proof does not depend on that law: any bit has sensitivity 1).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from accounting import ApproxDP, Binomial, epsilon_routes
from accounting._validation import AccountingError, check_positive, check_probability

from ._design import support_bound
from ._privatizers import VectorProtocol

__all__ = ["ShuffleBits", "binomial_epsilon", "calibrate_noise_bits", "shuffle_message_bits"]

#: the largest number of noise bits per client and coordinate the calibration searches
MAX_NOISE_BITS = 1 << 16


@functools.lru_cache(maxsize=4096)
def binomial_epsilon(noise_trials: int, coordinates: int, delta: float) -> tuple[float, str]:
    """Certified eps at ``delta`` of the ``coordinates``-fold composition of Bin(noise_trials, 1/2), sensitivity 1.

    Returns (epsilon, route) from ``accounting.epsilon_routes`` (the smallest certified route:
    the exact PLD of the composed pair for this mechanism).
    """
    report = epsilon_routes(Binomial(int(noise_trials), 0.5, 1), delta, compose=int(coordinates), comparisons=False)
    return float(report.epsilon), str(report.route)


@functools.lru_cache(maxsize=1024)
def calibrate_noise_bits(n: int, s: int, epsilon: float, delta: float) -> int:
    """The smallest k >= 1 (noise bits per client per coordinate) with binomial_epsilon(n k, s, delta) <= epsilon."""
    for name, value in (("n", n), ("s", s)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise AccountingError(name, value, "an integer >= 1")
    check_positive("epsilon", epsilon)
    check_probability("delta", delta)

    def meets(k: int) -> bool:
        return binomial_epsilon(n * k, s, delta)[0] <= epsilon

    if meets(1):
        return 1
    lo, hi = 1, 2
    while not meets(hi):  # doubling: lo fails, hi is the first power of two that meets
        lo, hi = hi, 2 * hi
        if hi > MAX_NOISE_BITS:
            raise AccountingError("epsilon", epsilon, f"a target reachable with <= {MAX_NOISE_BITS} noise bits per client and coordinate (n={n}, s={s}, delta={delta})")
    while hi - lo > 1:  # eps is decreasing in the number of noise trials
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if meets(mid) else (mid, hi)
    return hi


def shuffle_message_bits(s: int) -> int:
    """Bits of one message (j, bit): the coordinate index in ceil(log2 s) bits plus the bit."""
    return 1 + max(1, math.ceil(math.log2(s))) if s > 1 else 1


class ShuffleBits(VectorProtocol):
    """SDP-DPE (eq. (6)): bit-message vector summation through a shuffler, exactly accounted."""

    model = "shuffle"

    def __init__(self, epsilon: float, delta: float, reward_bound: float) -> None:
        check_positive("reward_bound", reward_bound)
        self.epsilon = float(check_positive("epsilon", epsilon))
        self.delta = float(check_probability("delta", delta))
        self.reward_bound = float(reward_bound)
        self.noise_multiplier = float("nan")  # no Gaussian noise: kept for VectorProtocol's interface

    def noise_bits(self, n: int, s: int) -> int:
        return calibrate_noise_bits(int(n), int(s), self.epsilon, self.delta)

    def phase_epsilon(self, n: int, s: int) -> float:
        return binomial_epsilon(int(n) * self.noise_bits(n, s), int(s), self.delta)[0]

    def guarantee(self, n: int, s: int) -> Any:
        return ApproxDP(self.phase_epsilon(n, s), self.delta)

    def paper_form(self, n: int, s: int, d: int) -> dict:
        """The k of Theorem 2 (iii) with constant 1 (noise sd in the average = B sqrt(d ln(d/delta)) / (eps n)) and its exact eps."""
        target_sd_sq = d * math.log(d / self.delta) / self.epsilon**2  # (n sigma_ns / B)^2 = N
        k = max(1, math.ceil(target_sd_sq / n))
        eps, route = binomial_epsilon(n * k, s, self.delta)
        return {"noise_bits_per_coordinate": k, "noise_trials": n * k, "epsilon": eps, "delta": self.delta, "route": route}

    def messages_per_client(self, n: int, s: int) -> int:
        return s * (self.noise_bits(n, s) + 1)

    def bits_per_client(self, n: int, s: int) -> int:
        return self.messages_per_client(n, s) * shuffle_message_bits(s)

    def noise_sd(self, n: int, s: int) -> float:
        trials = n * self.noise_bits(n, s)
        return self.reward_bound * math.sqrt(trials + n) / n

    def paper_width_sd(self, n: int, s: int, d: int) -> float:
        return 2.0 * self.noise_sd(n, s) * math.sqrt(support_bound(d) * d)

    def release(self, reports: np.ndarray, rng: np.random.Generator, *, path: str) -> np.ndarray:
        n, s = reports.shape
        k = self.noise_bits(n, s)
        bound = self.reward_bound
        x = (reports + bound) / (2.0 * bound)
        data_bits = (rng.random((n, s)) < x).astype(np.int64)  # R: randomised rounding, one bit per coordinate
        if path == "per-user":
            counts = _shuffled_counts(data_bits, k, rng)
        else:  # the same law: sum of the data bits plus N fair coins per coordinate
            counts = data_bits.sum(axis=0) + _fair_coin_counts(n * k, s, rng)
        return 2.0 * bound * ((counts - n * k / 2.0) / n) - bound

    def describe(self) -> dict:
        return {
            "model": self.model,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "reward_bound": self.reward_bound,
            "protocol": "bit-message vector summation (Cheu, Joseph, Mao, Peng 2021): 1 rounding bit + k fair-coin bits per coordinate, shuffled",
            "accounting": "s-fold composition of Binomial(n k, 1/2), sensitivity 1, exact PLD (accounting.epsilon_routes)",
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


def _shuffled_counts(data_bits: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Per-user simulation: every client's messages (j, bit), all permuted, then counted per coordinate.

    The analyzer only ever sees the permuted message array.
    """
    n, s = data_bits.shape
    coordinate = np.tile(np.arange(s, dtype=np.int64), n * (k + 1))  # message labels
    noise = rng.integers(0, 2, size=(n, k, s), dtype=np.int64)  # R: k fair coins per coordinate
    bits = np.concatenate([data_bits[:, None, :], noise], axis=1).reshape(-1)
    order = rng.permutation(bits.size)  # S: a uniform permutation of all messages
    shuffled_labels, shuffled_bits = coordinate[order], bits[order]
    return np.bincount(shuffled_labels, weights=shuffled_bits, minlength=s).astype(np.int64)  # A
