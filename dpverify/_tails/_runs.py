"""Coverage of beta(b) inside real runs of Algorithm 1, and the exact-quantile radii option.

:func:`instrumented_run` is Algorithm 1 of the ICLR paper (batch successive elimination) with the
bandits package's pieces: the environment (:class:`BanditInstance` reward streams), the protocol
P = (R, S, A) of ``dpverify._executed._protocols`` (its ``estimate_sum``, per user or on the aggregate path
the protocol offers), the runner's batch loop (:func:`eliminate_in_batches`, with the elimination
rule) and Lemma 2's radius (:func:`lemma2_radius`). What it adds, through the loop's hooks: the
radius is a parameter, and every batch records, for each active arm, |mu_hat_a(b) - mu_a| against beta(b)
(mu_a the arm's exact mean, known to this harness only). The run is *covered* when the event E of
Lemma 2 holds: every active arm's mean lies within beta(b) in every batch.

Radii (``radius=``):

- ``"paper"``: Lemma 2 with the protocol's (sigma, h), exactly as the runner uses it;
- ``"exact"``: :func:`exact_radius`, Lemma 2's split of the failure budget per (arm, batch), scaled
  by c = 3/(2.5 pi^2/6) = 0.73 so that the union bound over all batches is 3p (Lemma 2's own
  split sums to 4.11p), each part at its exact quantile:
  beta*(b) = sqrt(log(4|Phi| b^2/(c p)) / (2 l)) + q(2 c p/(|Phi| b^2)) / (g l),
  where q(x) is the smallest integer with certified P[|Z| > q] <= x for the protocol's summed
  noise Z. The first term is Hoeffding applied to xhat_i/g, which lies in [0, 1] and has mean
  mu_a *exactly* (randomised rounding is unbiased): it covers the rewards and the rounding
  together, so the rounding share sqrt(n/2)/g of sigma is not needed at all. Lemma 2's union
  bound is unchanged (per arm and batch: p/(2|Phi| b^2) for Hoeffding, 2p/(|Phi| b^2) for the
  noise). Valid only where q <= tau (else the analyzer can wrap inside the radius): build the
  protocol with ``tau_p = lemma2_tau_p(p, K, T)``; otherwise the batch falls back to the
  trivially valid radius (counted in ``radius_beyond_tau``).
- ``"no-noise"``: the non-private radius (sigma = h = 0): a planted bug the coverage check must
  catch;
- a callable ``radius(protocol, n, b, active, p) -> float``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import numpy as np

from .._bandits._elimination import eliminate_in_batches, lemma2_radius, lemma2_tau_p, protocol_radius
from .._bandits._environments import BanditInstance, easy_instance, hard_instance
from .._executed._protocols import DistributedProtocol
from ._claims import noise_law

__all__ = ["RADII", "InstrumentedRun", "coverage_and_regret", "exact_radius", "instrumented_run", "lemma2_tau_p", "paper_instance", "paper_radius"]

RADII = ("paper", "exact", "no-noise")


def paper_radius(protocol: DistributedProtocol, n: int, b: int, active: int, p: float) -> float:
    """Lemma 2's beta(b) with the protocol's Assumption 1 constants: the runner's own radius."""
    return protocol_radius(protocol, p)(n, b, active)


def _no_noise_radius(protocol: DistributedProtocol, n: int, b: int, active: int, p: float) -> float:
    return lemma2_radius(n, b, active, p, 0.0, 0.0)


@lru_cache(maxsize=4096)
def _noise_quantile(protocol: DistributedProtocol, n: int, prob: float) -> int:
    return noise_law(protocol, n).quantile(prob)


def exact_radius(protocol: DistributedProtocol, n: int, b: int, active: int, p: float) -> float:
    """beta*(b): Hoeffding on xhat/g plus the exact noise quantile (module docstring).

    If the quantile exceeds the protocol's tau, the analyzer may wrap inside the radius and no
    quantile is valid for every reward vector: the radius falls back to (n g + tau)/(g n), which
    bounds every possible analyzer error (|A(yhat) - sum xhat/g| <= n + tau/g always), i.e. no
    elimination in that batch. Build the protocol with ``tau_p=lemma2_tau_p(...)`` to avoid it.
    """
    share = BUDGET_SCALE * p / (active * b * b)
    hoeffding = math.sqrt(math.log(2 / (share / 2)) / (2 * n))
    prob = min(2 * share, 0.999999)
    q = _noise_quantile(protocol, n, prob)
    params = protocol.parameters(n)
    if q > params.tau:
        q = n * params.g + params.tau
    return hoeffding + q / (params.g * n)


#: Lemma 2 spends p/(2|Phi| b^2) (Hoeffding) + 2p/(|Phi| b^2) (Assumption 1) per arm and batch,
#: i.e. (pi^2/6)(5/2) p = 4.11 p over all batches, not the 3p it states. beta* spends the same split
#: scaled by 3 / (2.5 pi^2/6), so that its union bound is exactly 3p.
BUDGET_SCALE = 3.0 / (2.5 * math.pi**2 / 6)


_RADIUS_FUNCS: dict[str, Callable[..., float]] = {"paper": paper_radius, "exact": exact_radius, "no-noise": _no_noise_radius}


@dataclass
class InstrumentedRun:
    """One run: pseudo-regret, whether E held, and per-batch records."""

    regret: float
    covered: bool
    batches: int
    first_miss: tuple[int, int] | None = None
    radius_beyond_tau: int = 0
    radii: list[float] = field(default_factory=list)
    final_active: list[int] = field(default_factory=list)


def _path(protocol: DistributedProtocol) -> str:
    # the aggregate path draws the summed noise once: the protocol offers it where it is the same law
    return "aggregate" if protocol.kind.aggregate_path else "per-user"


class _HarnessChannel:
    """The harness's trusted side: reward streams, the protocol run with one stream per arm, and
    the pseudo-regret (the runner's privatizers and ledger are not needed to measure coverage)."""

    def __init__(self, instance: BanditInstance, protocol: DistributedProtocol, env_seed, noise_seed, path: str) -> None:
        self._streams = instance.streams(env_seed)
        self._rngs = [np.random.Generator(np.random.PCG64(s)) for s in noise_seed.spawn(instance.k)]
        self._protocol = protocol
        self._path = path
        self._gaps = instance.gaps
        self.pulls = 0
        self.regret = 0.0

    def release(self, arm: int, n: int, label: str) -> float:
        rewards = self._streams.draw(arm, n)
        self.pulls += n
        self.regret += n * self._gaps[arm]
        return self._protocol.estimate_sum(rewards, self._rngs[arm], path=self._path)

    def pull_unreleased(self, arm: int, n: int) -> None:
        self._streams.draw(arm, n)
        self.pulls += n
        self.regret += n * self._gaps[arm]


def instrumented_run(
    instance: BanditInstance,
    protocol: DistributedProtocol,
    horizon: int,
    p: float,
    seed: np.random.SeedSequence,
    *,
    radius: str | Callable[..., float] = "paper",
    path: str | None = None,
) -> InstrumentedRun:
    """Algorithm 1 (l(b) = 2^b, forgetting, stop at T pulls) with per-batch coverage records.

    The batch loop is the runner's own (:func:`eliminate_in_batches`); what this adds is the
    radius as a parameter and the coverage check in its ``on_batch`` hook."""
    radius_fn = _RADIUS_FUNCS[radius] if isinstance(radius, str) else radius
    env_seed, noise_seed = seed.spawn(2)
    channel = _HarnessChannel(instance, protocol, env_seed, noise_seed, _path(protocol) if path is None else path)
    means_true = instance.means
    record = InstrumentedRun(0.0, True, 0)

    def observe(b: int, n: int, estimates: dict[int, float], beta: float) -> None:
        record.radii.append(beta)
        if isinstance(protocol, DistributedProtocol) and radius == "exact":
            q_part = beta - math.sqrt(math.log(4 * len(estimates) * b * b / (BUDGET_SCALE * p)) / (2 * n))
            if q_part * protocol.parameters(n).g * n > protocol.parameters(n).tau + 0.5:  # the fallback
                record.radius_beyond_tau += 1
        for arm, mu_hat in estimates.items():
            if abs(mu_hat - means_true[arm]) > beta and record.covered:
                record.covered = False
                record.first_miss = (b, arm)

    learner, b = eliminate_in_batches(
        channel,
        instance.k,
        horizon,
        lambda b, active: 2**b,
        lambda n, b, active: radius_fn(protocol, n, b, active, p),
        on_batch=observe,
    )
    record.regret = channel.regret
    record.batches = b
    record.final_active = list(learner.active)
    return record


def paper_instance(kind: str, seed: np.random.SeedSequence) -> BanditInstance:
    """The ICLR paper's synthetic instances (K = 10, clipped Gaussian rewards), means drawn from ``seed``."""
    if kind == "easy":
        return easy_instance(seed)
    if kind == "hard":
        return hard_instance(seed)
    raise ValueError(f"instance={kind!r} is invalid: expected 'easy' or 'hard'")


def coverage_and_regret(
    kind: str,
    protocol: DistributedProtocol,
    horizon: int,
    p: float,
    seeds: int,
    root: int,
    radius: str | Callable[..., float] = "paper",
) -> tuple[int, list[float], int]:
    """(misses, regrets, batches with radius beyond tau) over ``seeds`` runs; run i uses
    SeedSequence(root, spawn_key=(i,)) for its instance and SeedSequence(root, spawn_key=(i, 1)) for the run."""
    misses = 0
    regrets = []
    beyond = 0
    for i in range(seeds):
        inst = paper_instance(kind, np.random.SeedSequence(root, spawn_key=(i,)))
        run = instrumented_run(inst, protocol, horizon, p, np.random.SeedSequence(root, spawn_key=(i, 1)), radius=radius)
        misses += 0 if run.covered else 1
        regrets.append(run.regret)
        beyond += run.radius_beyond_tau
    return misses, regrets, beyond
