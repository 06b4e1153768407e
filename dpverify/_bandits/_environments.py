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
import functools
import math
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numba
import numpy as np
from scipy.special import ndtr

from accounting import AccountingError
from accounting.internal import check_positive, check_positive_int

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

    def rounded_law(self, g: int) -> np.ndarray:
        """The law of one user's randomised rounding xhat = floor(g x) + Bernoulli(frac(g x)), x ~ this arm.

        A float64 vector P[xhat = k], k = 0..g (the ICLR protocols' first step). For a point mass
        at v the mass splits between floor(g v) and floor(g v) + 1 (as the per-user path rounds
        the float g v); for a density f on a cell [j/g, (j+1)/g) the cell's mass P_j goes to j + 1
        with probability g E[x - j/g | cell], i.e. M_j = g E[(x - j/g); cell] to j + 1 and P_j - M_j
        to j. Its mean is g E[x] (rounding is unbiased; tested). Float arithmetic: this is the
        simulated *data*, not the privacy noise, whose laws stay exact.
        """
        g = check_positive_int("g", g)
        p = self.params
        if self.kind == "bernoulli":
            return _point_masses(g, np.array([0.0, 1.0]), np.array([1.0 - p[0], p[0]]))
        if self.kind == "two-point":
            return _point_masses(g, np.array(p), np.array([0.5, 0.5]))
        if self.kind == "categorical":
            k = len(p) // 2
            return _point_masses(g, np.asarray(p[:k]), np.asarray(p[k:]))
        if self.kind == "uniform" and p[0] == p[1]:
            return _point_masses(g, np.array([p[0]]), np.array([1.0]))
        if self.kind == "clipped-gaussian":
            law = np.empty(g + 1)
            _clipped_gaussian_rounded_law(float(p[0]), float(p[1]), g, law)
            return law
        edges = np.arange(g + 1) / g
        if self.kind == "uniform":
            lo, hi = p
            left, right = np.clip(edges[:-1], lo, hi), np.clip(edges[1:], lo, hi)
            mass = (right - left) / (hi - lo)
            moment = g * ((right - edges[:-1]) ** 2 - (left - edges[:-1]) ** 2) / (2 * (hi - lo))
        else:  # beta-a-1: F(x) = x^a, E[x; x <= t] = a t^(a+1) / (a + 1)
            a = p[0]
            mass = np.diff(edges**a)
            moment = g * (a / (a + 1) * np.diff(edges ** (a + 1)) - edges[:-1] * mass)
        mass = np.maximum(mass, 0.0)
        moment = np.clip(moment, 0.0, mass)
        law = np.zeros(g + 1)
        law[:-1] += mass - moment
        law[1:] += moment
        return law / law.sum()


def _point_masses(g: int, values: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Rounded law of a discrete reward (values with probabilities), as the per-user path rounds it."""
    law = np.zeros(g + 1)
    scaled = values * float(g)  # the float product the per-user path splits into floor + fraction
    base = np.floor(scaled)
    frac = scaled - base
    base = base.astype(np.int64)
    np.add.at(law, base, probs * (1.0 - frac))
    up = frac > 0
    np.add.at(law, base[up] + 1, probs[up] * frac[up])
    return law


@numba.njit(cache=True)
def _clipped_gaussian_rounded_law(mu, sd, g, out):
    # ArmLaw.rounded_law for clip(N(mu, sd^2), 0, 1) in one pass over the g cells [j/g, (j+1)/g):
    # mass P_j from the smaller tail (relative accuracy far from mu), first moment
    # E[(x - j/g); cell] = (mu - j/g) P_j + sd (phi(z_j) - phi(z_j+1)); the clipped atoms at 0 and 1.
    # tail(z) is the smaller of P[Z <= z] and P[Z > z]: one erfc per cell edge.
    inv_sqrt2 = 1.0 / math.sqrt(2.0)
    inv_sqrt2pi = 1.0 / math.sqrt(2.0 * math.pi)
    for j in range(g + 1):
        out[j] = 0.0
    z0 = (0.0 - mu) / sd
    tail0 = 0.5 * math.erfc(abs(z0) * inv_sqrt2)
    pdf0 = math.exp(-0.5 * z0 * z0) * inv_sqrt2pi
    cdf0 = tail0 if z0 <= 0.0 else 1.0 - tail0
    out[0] += cdf0  # x clipped to 0
    total = cdf0
    for j in range(g):
        a = j / g
        z1 = ((j + 1) / g - mu) / sd
        tail1 = 0.5 * math.erfc(abs(z1) * inv_sqrt2)
        pdf1 = math.exp(-0.5 * z1 * z1) * inv_sqrt2pi
        if z0 > 0.0:  # both edges above the mean: difference of upper tails
            mass = tail0 - tail1
        elif z1 <= 0.0:  # both below: difference of lower tails
            mass = tail1 - tail0
        else:  # the cell holds the mean
            mass = 1.0 - tail0 - tail1
        if mass < 0.0:
            mass = 0.0
        moment = g * ((mu - a) * mass + sd * (pdf0 - pdf1))
        if moment < 0.0:
            moment = 0.0
        elif moment > mass:
            moment = mass
        out[j] += mass - moment
        out[j + 1] += moment
        total += mass
        z0, tail0, pdf0 = z1, tail1, pdf1
    sf = tail0 if z0 >= 0.0 else 1.0 - tail0  # P[x >= 1], z0 now at x = 1
    out[g] += sf  # x clipped to 1
    total += sf
    for j in range(g + 1):
        out[j] /= total


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

    @functools.cached_property
    def _exact_means(self) -> np.ndarray:
        return np.array([arm.mean for arm in self.arms])  # each a closed form with ndtr: computed once

    @property
    def means(self) -> np.ndarray:
        return self._exact_means.copy()

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

    __slots__ = ("_instance", "_rngs", "_drawn", "_laws")

    def __init__(self, instance: BanditInstance, seed: np.random.SeedSequence) -> None:
        self._instance = instance
        self._laws: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._rngs = [np.random.Generator(np.random.PCG64(s)) for s in children(seed, instance.k)]
        self._drawn = np.zeros(instance.k, dtype=np.int64)

    def draw(self, arm: int, n: int) -> np.ndarray:
        """The next ``n`` rewards of ``arm``."""
        self._drawn[arm] += n
        return self._instance.arms[arm].sample(self._rngs[arm], n)

    def rounded_sum(self, arm: int, n: int, g: int) -> int:
        """sum_i xhat_i of the next ``n`` users of ``arm``, rounded at resolution ``g`` (the aggregate path).

        The users' randomised roundings are iid with law ``ArmLaw.rounded_law(g)``, so their
        histogram is Multinomial(n, law): drawn in O(g), not O(n). It uses the arm's stream but not
        variate-for-variate as :meth:`draw` does, so common random numbers hold between runs on
        the aggregate path, not between the aggregate and the per-user path.
        """
        key = (arm, g)
        found = self._laws.get(key)
        if found is None:
            found = self._laws[key] = (self._instance.arms[arm].rounded_law(g), np.arange(g + 1, dtype=np.int64))
        law, values = found
        self._drawn[arm] += n
        return int(self._rngs[arm].multinomial(n, law) @ values)

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
