"""Linear bandit instances with a client population (Li, Zhou and Ji, Section III).

A :class:`LinearInstance` is the public part of the problem: the action set D (k rows in the unit
ball of R^d), the global parameter theta*, the client model and the reward bound B the
privatizers clip to. The client model is the paper's: user u has theta_u = theta* + xi_u with
xi_u ~ N(0, sigma^2 I_d) (sigma-sub-Gaussian), and observes <theta_u, x_t> + eta_{u,t}.

Per-round noise. The paper asks eta to be conditionally 1-sub-Gaussian *and* the local reward
to be bounded, |y| <= B (the privacy analysis needs the bound). We take eta_{u,t} uniform on
{-1, +1} (Rademacher): 1-sub-Gaussian with variance 1 and bounded, so both assumptions hold
as stated. A client's average over T_l(x) rounds is then (2 Binomial(T_l(x), 1/2) - T_l(x)) / T_l(x),
which the simulation draws exactly (the same law as T_l(x) separate rounds, at O(1) cost).
B is public and recorded: 2.5 by default, i.e. |<theta*, x>| <= 1 plus |eta| <= 1 plus 0.5 = 5 sigma
for the client term; reports are clipped to [-B, B] by the client (clipping is counted and
recorded; with these numbers it is a 5-sigma event).

Instances:

- :func:`synthetic_instance` — the paper's Section VI setting: d = 20, k = 1000 actions drawn
  uniformly from the unit ball, theta* uniform on the unit sphere, sigma = 0.1, population 1e5.
  The paper does not say how D and theta* were drawn; this is our choice, from a fixed
  instance seed (so every run and every algorithm sees the same instance).
- :func:`mslr_linear_instance` — the semi-synthetic MSLR-WEB10K instance shipped in
  ``dpverify/data`` (see ``shared/data/README.md``): 1000 real feature vectors (PCA to 19
  dimensions plus a constant, max norm 0.797) and a ridge fit theta with ||theta|| = 6.380.
  The paper assumes ||theta*|| <= 1, so theta is **rescaled to unit norm** (multiplied by
  1/6.380); the mean rewards and gaps shrink by the same factor (best 0.0646, gap 0.00402). The
  rescaling factor is recorded in ``provenance`` and in every result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np

from accounting import AccountingError
from accounting.internal import check_positive, check_positive_int

__all__ = ["LinearInstance", "mslr_linear_instance", "synthetic_instance"]


@dataclass(frozen=True, eq=False)
class LinearInstance:
    """A linear bandit instance with a client population (public information only)."""

    name: str
    actions: np.ndarray
    theta: np.ndarray
    sigma: float = 0.1
    population: int = 100_000
    reward_bound: float = 2.5
    provenance: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        actions = np.array(self.actions, dtype=np.float64)
        theta = np.array(self.theta, dtype=np.float64)
        if actions.ndim != 2 or actions.shape[0] < 1 or actions.shape[1] < 1:
            raise AccountingError("actions", f"array of shape {actions.shape}", "a (k, d) array with k, d >= 1")
        if not np.all(np.isfinite(actions)):
            raise AccountingError("actions", "non-finite entries", "finite action vectors")
        norms = np.linalg.norm(actions, axis=1)
        if norms.max() > 1 + 1e-12:
            raise AccountingError("actions", f"max norm {norms.max():.6g}", "actions in the unit ball (rescale them, visibly)")
        if theta.shape != (actions.shape[1],) or not np.all(np.isfinite(theta)):
            raise AccountingError("theta", f"array of shape {theta.shape}", f"a finite vector of shape ({actions.shape[1]},)")
        if np.linalg.norm(theta) > 1 + 1e-12:
            raise AccountingError("theta", f"norm {np.linalg.norm(theta):.6g}", "||theta*|| <= 1 (the paper's assumption; rescale it, visibly)")
        check_positive("sigma", self.sigma)
        check_positive_int("population", self.population)
        check_positive("reward_bound", self.reward_bound)
        means = actions @ theta
        if np.sum(means == means.max()) > 1:
            raise AccountingError("theta", "several optimal actions", "a unique optimal action (the paper assumes x* unique)")
        actions.setflags(write=False)
        theta.setflags(write=False)
        object.__setattr__(self, "actions", actions)
        object.__setattr__(self, "theta", theta)
        object.__setattr__(self, "sigma", float(self.sigma))
        object.__setattr__(self, "reward_bound", float(self.reward_bound))

    @property
    def k(self) -> int:
        return int(self.actions.shape[0])

    @property
    def d(self) -> int:
        return int(self.actions.shape[1])

    @property
    def means(self) -> np.ndarray:
        return self.actions @ self.theta

    @property
    def best(self) -> int:
        return int(np.argmax(self.means))

    @property
    def gaps(self) -> np.ndarray:
        means = self.means
        return means.max() - means

    def describe(self) -> dict[str, Any]:
        means = np.sort(self.means)[::-1]
        return {
            "name": self.name,
            "d": self.d,
            "k": self.k,
            "sigma": self.sigma,
            "population": self.population,
            "reward_bound": self.reward_bound,
            "noise": "Rademacher (+-1) per round",
            "best_mean": float(means[0]),
            "second_mean": float(means[1]) if means.size > 1 else None,
            "gap": float(means[0] - means[1]) if means.size > 1 else None,
            "theta_norm": float(np.linalg.norm(self.theta)),
            "max_action_norm": float(np.linalg.norm(self.actions, axis=1).max()),
            "provenance": dict(self.provenance),
        }


def synthetic_instance(
    *, d: int = 20, k: int = 1000, sigma: float = 0.1, population: int = 100_000, reward_bound: float = 2.5, instance_seed: int = 0
) -> LinearInstance:
    """The paper's synthetic setting: k actions uniform in the unit ball of R^d, theta* uniform on the sphere."""
    check_positive_int("d", d)
    check_positive_int("k", k)
    if isinstance(instance_seed, bool) or not isinstance(instance_seed, int) or instance_seed < 0:
        raise AccountingError("instance_seed", instance_seed, "an integer >= 0")
    rng = np.random.default_rng(np.random.SeedSequence(instance_seed, spawn_key=(0x11A,)))
    directions = rng.standard_normal((k, d))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    radii = rng.random(k) ** (1.0 / d)
    actions = directions * radii[:, None]
    theta = rng.standard_normal(d)
    theta /= np.linalg.norm(theta)
    return LinearInstance(
        "linear",
        actions,
        theta,
        sigma=sigma,
        population=population,
        reward_bound=reward_bound,
        provenance={"kind": "synthetic", "instance_seed": instance_seed, "actions": "uniform in the unit ball", "theta": "uniform on the unit sphere"},
    )


def _load(name: str) -> np.ndarray:
    with resources.files("dpverify").joinpath("data", name).open("rb") as handle:
        return np.load(handle, allow_pickle=False)


def mslr_linear_instance(*, sigma: float = 0.1, population: int = 100_000, reward_bound: float = 2.5) -> LinearInstance:
    """The semi-synthetic MSLR-WEB10K linear instance, theta rescaled to unit norm (recorded)."""
    actions = _load("mslr_linear_actions.npy")
    theta = _load("mslr_linear_theta.npy")
    norm = float(np.linalg.norm(theta))
    scale = 1.0 / norm
    return LinearInstance(
        "mslr-linear",
        actions,
        theta * scale,
        sigma=sigma,
        population=population,
        reward_bound=reward_bound,
        provenance={
            "kind": "semi-synthetic",
            "source": "MSLR-WEB10K (CC BY 4.0), shared/data/mslr_linear; see dpverify/data/ATTRIBUTION.md",
            "theta_norm_original": norm,
            "theta_rescaled_by": scale,
            "rescaling": "theta -> theta / ||theta|| (the paper assumes ||theta*|| <= 1); actions unchanged (max norm 0.797); mean rewards scale by the same factor",
        },
    )
