"""Bandit environments: arm reward laws, the papers' instances, and per-arm reward streams.

An instance is a tuple of :class:`ArmLaw` (one reward law per arm, rewards in [0, 1]) plus a
name and the options that built it. Rewards are drawn on the *trusted side* only (the
environment object held by a runner's feedback channel), never by a learner.

Common random numbers. Every arm has its own stream (a ``SeedSequence`` child of the run's
environment seed); the j-th pull of arm a always uses the j-th variate of arm a's stream
(uniform, or standard normal for the Gaussian law), whatever the algorithm and however the pulls
are batched (numpy's ``random``/``standard_normal`` consume the bit stream sequentially, so
drawing 5 then 3 values equals drawing 8). Two algorithms run with the same seed therefore see
the same reward for the j-th pull of every arm: comparisons are paired.

Instances (FORMULAS.md A and B, data/README.md):

- ``easy`` / ``hard``: K = 10, means U[0.25, 0.75] / U[0.45, 0.55] drawn per run, Gaussian
  rewards of sd ``reward_sd`` (0.1: the ICLR paper does not state it) clipped to [0, 1];
- ``ren-bernoulli``: Ren et al.'s 20 Bernoulli arms 0.9, 5 x 0.8, 5 x 0.7, 5 x 0.6, 4 x 0.5;
- ``ren-mixed``: the same means, 0.9 and 0.6 Bernoulli, 0.8 Beta(4, 1), 0.7 uniform on {0.4, 1},
  0.5 uniform on [0, 1];
- ``mslr``: the K = 50 empirical MSLR-WEB10K instance shipped in ``dpverify/data`` (reward =
  label / ``label_scale``, 4 by default).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numba
import numpy as np
from scipy.special import ndtr

from accounting._validation import AccountingError, check_positive, check_positive_int

__all__ = [
    "ArmLaw",
    "BanditInstance",
    "RewardStreams",
    "bernoulli_instance",
    "clipped_gaussian_instance",
    "easy_instance",
    "hard_instance",
    "mslr_instance",
    "ren_bernoulli_instance",
    "ren_mixed_instance",
]

_KINDS = ("bernoulli", "clipped-gaussian", "beta-a-1", "two-point", "uniform", "categorical")


@dataclass(frozen=True)
class ArmLaw:
    """One arm's reward law on [0, 1].

    kinds and parameters:
      bernoulli (mu,); clipped-gaussian (mu, sd): clip(N(mu, sd^2), 0, 1);
      beta-a-1 (a,): Beta(a, 1), sampled as U^(1/a); two-point (x0, x1): each w.p. 1/2;
      uniform (lo, hi); categorical (v_0..v_k-1, p_0..p_k-1): value v_i w.p. p_i.
    """

    kind: str
    params: tuple[float, ...]

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise AccountingError("kind", self.kind, f"one of {_KINDS}")
        p = self.params
        if self.kind == "bernoulli" and not (len(p) == 1 and 0 <= p[0] <= 1):
            raise AccountingError("params", p, "(mu,) with mu in [0, 1] for a Bernoulli arm")
        if self.kind == "clipped-gaussian" and not (len(p) == 2 and math.isfinite(p[0]) and p[1] > 0):
            raise AccountingError("params", p, "(mu, sd) with sd > 0 for a clipped Gaussian arm")
        if self.kind == "beta-a-1" and not (len(p) == 1 and p[0] > 0):
            raise AccountingError("params", p, "(a,) with a > 0 for a Beta(a, 1) arm")
        if self.kind in ("two-point", "uniform") and not (len(p) == 2 and 0 <= p[0] <= p[1] <= 1):
            raise AccountingError("params", p, "(lo, hi) with 0 <= lo <= hi <= 1")
        if self.kind == "categorical":
            k = len(p) // 2
            values, probs = np.asarray(p[:k]), np.asarray(p[k:])
            if len(p) % 2 or k == 0 or values.min() < 0 or values.max() > 1 or probs.min() < 0 or abs(probs.sum() - 1) > 1e-9:
                raise AccountingError("params", p, "(values..., probs...) with values in [0, 1] and probabilities summing to 1")

    @property
    def mean(self) -> float:
        """The exact mean of the law (for the clipped Gaussian, of the clipped variable)."""
        p = self.params
        if self.kind == "bernoulli":
            return p[0]
        if self.kind == "clipped-gaussian":
            mu, sd = p
            # E[clip(X, 0, 1)] = E[X; 0<X<1] + P[X >= 1], X ~ N(mu, sd^2)
            a, b = (0 - mu) / sd, (1 - mu) / sd
            phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
            inside = mu * (ndtr(b) - ndtr(a)) + sd * (phi(a) - phi(b))
            return float(inside + (1 - ndtr(b)))
        if self.kind == "beta-a-1":
            return p[0] / (p[0] + 1)
        if self.kind in ("two-point", "uniform"):
            return (p[0] + p[1]) / 2
        k = len(p) // 2
        return float(np.dot(p[:k], p[k:]))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """The next ``n`` rewards of this arm's stream (see the module docstring on pairing)."""
        p = self.params
        if self.kind == "clipped-gaussian":
            out = np.empty(n, dtype=np.float64)
            _clipped_gaussian(rng, float(p[0]), float(p[1]), out)
            return out
        u = rng.random(n)
        if self.kind == "bernoulli":
            return (u < p[0]).astype(np.float64)
        if self.kind == "beta-a-1":
            return u ** (1.0 / p[0])
        if self.kind == "two-point":
            return np.where(u < 0.5, p[0], p[1])
        if self.kind == "uniform":
            return p[0] + (p[1] - p[0]) * u
        k = len(p) // 2
        values = np.asarray(p[:k])
        cdf = np.cumsum(p[k:])
        cdf[-1] = 1.0
        return values[np.minimum(np.searchsorted(cdf, u, side="right"), k - 1)]


@numba.njit(cache=True)
def _clipped_gaussian(rng, mu, sd, out):
    # One fused pass (draw, scale, clip) instead of four numpy passes over the batch; the
    # Generator's normal stream is numpy's, so the law is the same N(mu, sd^2) clipped to [0, 1].
    for i in range(out.size):
        x = mu + sd * rng.standard_normal()
        out[i] = 0.0 if x < 0.0 else (1.0 if x > 1.0 else x)


@dataclass(frozen=True)
class BanditInstance:
    """K arms with their reward laws; ``means``/``gaps`` are exact; ``options`` records how it was built."""

    name: str
    arms: tuple[ArmLaw, ...]
    options: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if len(self.arms) < 2:
            raise AccountingError("arms", len(self.arms), "at least 2 arms")

    @property
    def k(self) -> int:
        return len(self.arms)

    @property
    def means(self) -> np.ndarray:
        return np.array([arm.mean for arm in self.arms])

    @property
    def gaps(self) -> np.ndarray:
        m = self.means
        return m.max() - m

    @property
    def best_arm(self) -> int:
        return int(np.argmax(self.means))

    def describe(self) -> dict:
        return {"name": self.name, "k": self.k, "means": self.means.tolist(), "laws": [a.kind for a in self.arms], "options": self.options}

    def streams(self, seed: np.random.SeedSequence) -> "RewardStreams":
        return RewardStreams(self, seed)


def children(seed: np.random.SeedSequence, count: int) -> list[np.random.SeedSequence]:
    """The ``count`` children of ``seed``, as ``spawn`` would give them on a fresh SeedSequence.

    Unlike ``seed.spawn``, this does not depend on (or change) how often ``seed`` was spawned
    before, so using one run's seeds twice gives the same streams.
    """
    return [
        np.random.SeedSequence(seed.entropy, spawn_key=tuple(seed.spawn_key) + (i,), pool_size=seed.pool_size)
        for i in range(count)
    ]


class RewardStreams:
    """The trusted side's reward source: one independent stream per arm (common random numbers)."""

    __slots__ = ("_instance", "_rngs", "_drawn")

    def __init__(self, instance: BanditInstance, seed: np.random.SeedSequence) -> None:
        self._instance = instance
        self._rngs = [np.random.Generator(np.random.PCG64(s)) for s in children(seed, instance.k)]
        self._drawn = np.zeros(instance.k, dtype=np.int64)

    def draw(self, arm: int, n: int) -> np.ndarray:
        """The next ``n`` rewards of ``arm``."""
        self._drawn[arm] += n
        return self._instance.arms[arm].sample(self._rngs[arm], n)

    @property
    def drawn(self) -> np.ndarray:
        return self._drawn.copy()


# ---- the papers' instances ----------------------------------------------------------------------


def bernoulli_instance(means: Any, name: str = "bernoulli") -> BanditInstance:
    return BanditInstance(name, tuple(ArmLaw("bernoulli", (float(m),)) for m in means), {"means": [float(m) for m in means]})


def clipped_gaussian_instance(means: Any, sd: float = 0.1, name: str = "gaussian") -> BanditInstance:
    check_positive("reward_sd", sd)
    return BanditInstance(name, tuple(ArmLaw("clipped-gaussian", (float(m), float(sd))) for m in means), {"reward_sd": sd})


def _uniform_means(seed: np.random.SeedSequence, k: int, lo: float, hi: float) -> np.ndarray:
    return np.random.Generator(np.random.PCG64(seed)).uniform(lo, hi, size=k)


def easy_instance(seed: np.random.SeedSequence, *, k: int = 10, reward_sd: float = 0.1) -> BanditInstance:
    """ICLR Fig. 1(a, b): K = 10 means U[0.25, 0.75] (drawn from ``seed``), clipped Gaussian rewards."""
    check_positive_int("k", k)
    inst = clipped_gaussian_instance(_uniform_means(seed, k, 0.25, 0.75), reward_sd, "easy")
    return BanditInstance("easy", inst.arms, {"k": k, "reward_sd": reward_sd, "means_law": "U[0.25, 0.75]"})


def hard_instance(seed: np.random.SeedSequence, *, k: int = 10, reward_sd: float = 0.1) -> BanditInstance:
    """ICLR Fig. 1(c): K = 10 means U[0.45, 0.55], clipped Gaussian rewards."""
    check_positive_int("k", k)
    inst = clipped_gaussian_instance(_uniform_means(seed, k, 0.45, 0.55), reward_sd, "hard")
    return BanditInstance("hard", inst.arms, {"k": k, "reward_sd": reward_sd, "means_law": "U[0.45, 0.55]"})


REN_MEANS = (0.9,) + (0.8,) * 5 + (0.7,) * 5 + (0.6,) * 5 + (0.5,) * 4


def ren_bernoulli_instance() -> BanditInstance:
    """Ren et al. Fig. 1(a-d): 20 Bernoulli arms; arm 0 (0.9) is optimal."""
    return bernoulli_instance(REN_MEANS, "ren-bernoulli")


def ren_mixed_instance() -> BanditInstance:
    """Ren et al. Fig. 1(e, f): 0.9, 0.6 Bernoulli; 0.8 Beta(4, 1); 0.7 uniform on {0.4, 1}; 0.5 U[0, 1]."""
    laws = []
    for m in REN_MEANS:
        if m in (0.9, 0.6):
            laws.append(ArmLaw("bernoulli", (m,)))
        elif m == 0.8:
            laws.append(ArmLaw("beta-a-1", (4.0,)))
        elif m == 0.7:
            laws.append(ArmLaw("two-point", (0.4, 1.0)))
        else:
            laws.append(ArmLaw("uniform", (0.0, 1.0)))
    return BanditInstance("ren-mixed", tuple(laws), {"means": list(REN_MEANS)})


def mslr_label_counts() -> np.ndarray:
    """The shipped K = 50 label counts (arms x labels 0..4), best arm first."""
    text = resources.files("dpverify").joinpath("data/mslr_k50_label_counts.csv").read_text()
    rows = list(csv.reader(text.splitlines()))
    if rows[0] != ["arm", "n0", "n1", "n2", "n3", "n4"]:
        raise AccountingError("mslr_k50_label_counts.csv header", rows[0], "arm,n0,n1,n2,n3,n4")
    return np.array([[int(v) for v in r[1:]] for r in rows[1:]], dtype=np.int64)


def mslr_instance(*, label_scale: float = 4.0) -> BanditInstance:
    """ICLR Fig. 1(d-f), on the shipped 10,000-row MSLR-WEB10K sample: reward = label / label_scale."""
    check_positive("label_scale", label_scale)
    if label_scale < 4:
        raise AccountingError("label_scale", label_scale, "a value >= 4 (labels go up to 4; rewards must lie in [0, 1])")
    counts = mslr_label_counts()
    values = tuple(float(v) / label_scale for v in range(5))
    arms = []
    for row in counts:
        probs = row / row.sum()
        arms.append(ArmLaw("categorical", values + tuple(float(q) for q in probs)))
    return BanditInstance("mslr", tuple(arms), {"label_scale": label_scale, "source": "dpverify/data/mslr_k50_label_counts.csv"})
