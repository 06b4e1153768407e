"""Bandit loops written as a user would, against the public pieces only (issue 32).

Everything here uses what ``import dpverify`` offers and nothing private: the loop protocol
(``run.pull``, ``run.privatizer``, ``run.ledger``, ``run.rng``; ``dpverify._audit._loops``),
``dpverify.BatchProtocol`` for a home-made privatizer and ``dpverify.central_laplace_protocol``
(DP-SE's float-safe curator). The suite's claim files name them as
``target = "run:dpverify._audit._suite._user_loops:<loop>"`` (``audits/runs/user_*.toml`` hold,
``audits/planted/user_*.toml`` must be caught).

:func:`elimination` is successive elimination on doubling batches (every active arm gets 2^b
users in batch b, each batch's sum is released by the privatizer, an arm is dropped when its
mean is 2 radius below the best); the planted loops are it with one realistic mistake each. Six
leak only, or much more, on particular data (the base tables the run audit generates: every
reward 0, every reward 1, mixed 0/1 users) or only in the first batch; the seventh only through
the changed user's exact rewards:

- :func:`zero_sum_unnoised`: a batch whose sum is 0 is released as 0, without noise;
- :func:`saturated_unnoised`: a batch of all ones (a raw count of ones equal to n) is released exactly;
- :func:`warmup_unnoised`: batches of fewer than 4 users (the first) are released without noise;
- :func:`rounding_coin_reads_reward`: a one-bit report per batch, its rounding coin biased by the raw mean;
- :func:`count_of_ones_published`: the number of exact-1 rewards of the last batch published when >= 5;
- :func:`range_sensitivity`: noise scaled by the batch's observed range (none on a constant batch);
- :func:`rr_skips_exact_rewards`: randomized response that skips the coin when a reward is exactly 0 or 1;

and three whatever the data: :func:`noise_for_the_mean` (noise calibrated for the mean, sum
released), :func:`fixed_seed` (a privatizer seeded with a constant "for reproducibility"),
:func:`raw_mean_reported` (each batch's empirical mean reported). The correct variants:
:func:`elimination`, :func:`clipped_estimates` (estimates clipped to [0, 1]: post-processing),
:func:`rr_biased` (randomized response of a randomly rounded bit, not debiased: biased, private).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

import dpverify
from accounting import PureDP

__all__ = [
    "clipped_estimates",
    "count_of_ones_published",
    "elimination",
    "fixed_seed",
    "noise_for_the_mean",
    "range_sensitivity",
    "raw_mean_reported",
    "rounding_coin_reads_reward",
    "rr_biased",
    "rr_skips_exact_rewards",
    "saturated_unnoised",
    "warmup_unnoised",
    "zero_sum_unnoised",
]


def elimination(run: Any, epsilon: float = 1.0, *, protocol: Any = None, private: Any = None,
                report: Callable[..., list[float]] | None = None, clip: bool = False) -> list[float]:
    """Successive elimination on doubling batches; returns each arm's elimination batch (0: never)
    and whatever ``report(b, arm, rewards, estimate)`` adds (the public view)."""
    private = private or run.privatizer(protocol or dpverify.central_laplace_protocol(epsilon))
    active, eliminated, extra, b = list(range(run.arms)), [0] * run.arms, [], 1
    while len(active) > 1 and run.remaining >= len(active) * 2 ** b:
        n, means = 2 ** b, {}
        for a in active:
            rewards, users = run.pull(a, n)
            means[a] = private.release_sum(rewards, users, label=f"b={b} arm={a}").estimate / n
            if clip:
                means[a] = min(max(means[a], 0.0), 1.0)
            if report is not None:
                extra += report(b, a, rewards, means[a])
        radius = math.sqrt(math.log(4 * run.horizon * run.arms) / (2 * n)) + math.log(4 * run.horizon) / (epsilon * n)
        for a in [a for a in active if means[a] < max(means.values()) - 2 * radius]:
            active.remove(a)
            eliminated[a] = b
        b += 1
    return eliminated + extra


@functools.lru_cache(maxsize=64)
def _curator(epsilon: float) -> Any:
    """DP-SE's curator at ``epsilon`` (made once per value: its exact scale is Fraction work)."""
    return dpverify.central_laplace_protocol(epsilon)


class _Wrapped(dpverify.BatchProtocol):
    """A home-made privatizer around DP-SE's curator that keeps its guarantee (and may break it)."""

    def __init__(self, epsilon: float) -> None:
        self.inner = dpverify.central_laplace_protocol(epsilon)
        self.epsilon = epsilon
        self.name = f"home-made({self.inner.name})"

    def mechanism(self, n: int) -> Any:
        return self.inner.mechanism(n)

    def assumption1(self, n: int, p: float) -> tuple[float, float]:
        return self.inner.assumption1(n, p)

    def estimate_sum(self, rewards: np.ndarray, rng: np.random.Generator, *, path: str = "per-user") -> float:
        return self.inner.estimate_sum(rewards, rng, path=path)


# ---- correct variants -------------------------------------------------------------------------------


def clipped_estimates(run: Any, epsilon: float = 1.0) -> list[float]:
    """CORRECT: every estimate clipped to [0, 1] and each batch's clipped mean published (post-processing)."""
    return elimination(run, epsilon, clip=True, report=lambda b, a, rewards, mean: [mean])


class _RandomizedResponse(dpverify.BatchProtocol):
    """Each user's reward rounded to a bit by a coin of bias r, the bit flipped w.p. 1/(1 + e^eps);
    the analyzer releases the number of ones (not debiased). Per user: a function of her reward
    alone, eps-DP (the rounding is part of her randomizer)."""

    skip_exact = False

    def __init__(self, epsilon: float) -> None:
        self.epsilon = epsilon
        self.name = "randomized response"

    def mechanism(self, n: int) -> Any:
        return PureDP(self.epsilon)

    def assumption1(self, n: int, p: float) -> tuple[float, float]:
        return math.sqrt(n / 2), 0.0

    def estimate_sum(self, rewards: np.ndarray, rng: np.random.Generator, *, path: str = "per-user") -> float:
        bits = rng.random(rewards.size) < rewards
        flip = rng.random(rewards.size) < 1 / (1 + math.exp(self.epsilon))
        if self.skip_exact:  # PLANTED: "a reward of exactly 0 or 1 needs no coin"
            flip &= (rewards > 0) & (rewards < 1)
        return float(np.sum(bits ^ flip))


def rr_biased(run: Any, epsilon: float = 1.0) -> list[float]:
    """CORRECT: elimination on randomized-response counts (biased towards 1/2, private)."""
    return elimination(run, epsilon, protocol=_RandomizedResponse(epsilon))


# ---- planted: leaks on particular data ---------------------------------------------------------------


class _ZeroSumUnnoised(_Wrapped):
    def estimate_sum(self, rewards: np.ndarray, rng: np.random.Generator, *, path: str = "per-user") -> float:
        if rewards.sum() == 0:  # PLANTED: "nothing to hide in an empty batch"
            return 0.0
        return self.inner.estimate_sum(rewards, rng, path=path)


def zero_sum_unnoised(run: Any, epsilon: float = 1.0) -> list[float]:
    """PLANTED: a batch whose rewards sum to 0 is released as 0 without noise."""
    return elimination(run, epsilon, protocol=_ZeroSumUnnoised(epsilon))


class _SaturatedUnnoised(_Wrapped):
    def estimate_sum(self, rewards: np.ndarray, rng: np.random.Generator, *, path: str = "per-user") -> float:
        if np.count_nonzero(rewards == 1) == rewards.size:  # PLANTED: a saturated batch "is public anyway"
            return float(rewards.size)
        return self.inner.estimate_sum(rewards, rng, path=path)


def saturated_unnoised(run: Any, epsilon: float = 1.0) -> list[float]:
    """PLANTED: a batch in which every reward is exactly 1 is released exactly."""
    return elimination(run, epsilon, protocol=_SaturatedUnnoised(epsilon))


class _WarmupUnnoised(_Wrapped):
    def estimate_sum(self, rewards: np.ndarray, rng: np.random.Generator, *, path: str = "per-user") -> float:
        if rewards.size < 4:  # PLANTED: the warm-up batches are "too small to matter"
            return float(rewards.sum())
        return self.inner.estimate_sum(rewards, rng, path=path)


def warmup_unnoised(run: Any, epsilon: float = 1.0) -> list[float]:
    """PLANTED: the first batch (2 users per arm) is released without noise."""
    return elimination(run, epsilon, protocol=_WarmupUnnoised(epsilon))


def rounding_coin_reads_reward(run: Any, epsilon: float = 1.0) -> list[float]:
    """PLANTED: a one-bit report per batch and arm (the estimate stochastically rounded), its coin
    biased by the batch's raw mean instead of the private estimate."""
    return elimination(run, epsilon, report=lambda b, a, rewards, mean: [float(run.rng.random() < rewards.mean())])


def count_of_ones_published(run: Any, epsilon: float = 1.0) -> list[float]:
    """PLANTED: "k-anonymity": the number of users whose reward is exactly 1 in a batch of 8 or
    more is published when at least 5 (suppressed as 0 below)."""

    def report(b: int, a: int, rewards: np.ndarray, mean: float) -> list[float]:
        ones = int(np.count_nonzero(rewards == 1))
        return [float(ones if ones >= 5 else 0)] if rewards.size >= 8 else []

    return elimination(run, epsilon, report=report)


class _RangeSensitivity(_Wrapped):
    def estimate_sum(self, rewards: np.ndarray, rng: np.random.Generator, *, path: str = "per-user") -> float:
        spread = float(rewards.max() - rewards.min())  # PLANTED: sensitivity read off the data
        if spread == 0:
            return float(rewards.sum())
        return _curator(self.epsilon / spread).estimate_sum(rewards, rng, path=path)


def range_sensitivity(run: Any, epsilon: float = 1.0) -> list[float]:
    """PLANTED: noise scaled by the batch's observed range max - min (none on a constant batch)."""
    return elimination(run, epsilon, protocol=_RangeSensitivity(epsilon))


class _RRSkipsExact(_RandomizedResponse):
    skip_exact = True


def rr_skips_exact_rewards(run: Any, epsilon: float = 1.0) -> list[float]:
    """PLANTED: randomized response that flips no coin for a reward of exactly 0 or 1."""
    return elimination(run, epsilon, protocol=_RRSkipsExact(epsilon))


# ---- planted: leaks on any data ------------------------------------------------------------------------


class _NoiseForTheMean(_Wrapped):
    def estimate_sum(self, rewards: np.ndarray, rng: np.random.Generator, *, path: str = "per-user") -> float:
        # PLANTED: the noise of the batch *mean* (sensitivity 1/n), scaled back onto the sum
        return _curator(self.epsilon * rewards.size).estimate_sum(rewards, rng, path=path)


def noise_for_the_mean(run: Any, epsilon: float = 1.0) -> list[float]:
    """PLANTED: Laplace noise of scale 1/(n eps) on the sum (the mean's calibration); the ledger charges eps."""
    return elimination(run, epsilon, protocol=_NoiseForTheMean(epsilon))


def fixed_seed(run: Any, epsilon: float = 1.0) -> list[float]:
    """PLANTED: the privatizer seeded with a constant "for reproducible runs": the same noise every run."""
    private = run.privatizer(dpverify.central_laplace_protocol(epsilon), seed=np.random.SeedSequence(2024))
    return elimination(run, epsilon, private=private)


def raw_mean_reported(run: Any, epsilon: float = 1.0) -> list[float]:
    """PLANTED: each batch's report carries the arm's empirical mean (the raw rewards), not the estimate."""
    return elimination(run, epsilon, report=lambda b, a, rewards, mean: [float(rewards.mean())])
