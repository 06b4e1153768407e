"""Planted algorithm-level bugs: variants of the real runners that the run audit must catch (issue 24).

Each is a subclass of a transcript engine (``dpverify._bandits._transcripts``), which reproduces
the plain runner bit for bit, or a real protocol wrapped to do one thing wrong. None of them is
reachable from a runner: they exist only here, registered as run-audit algorithms named
``bug.*`` and used by ``audits/planted/run_*.toml`` (``target = "run:bug.<name>"``). The claim is
always what the (buggy) run's ledger records; the bug is in the algorithm around the mechanism:

- ``bug.dp-se-shared-laplace``: DP-SE with one Laplace draw per epoch added to every arm's sum,
  as the ICLR 2023 authors' released DP-SE does (the arms' differences are released exactly);
- ``bug.dist-dp-se-raw-elimination``: Dist-DP-SE whose elimination reads the un-noised batch means
  (the releases themselves are private);
- ``bug.dist-dp-se-returning-counted-once``: returning users (rows t mod N) whose ledger charges
  each batch as if its users were new, so a user in two batches is charged once;
- ``bug.dist-dp-se-shares-for-2n``: each user's Polya share calibrated for a batch of 2n users
  (Polya(1/(2n), e^(-eps/g))) in a SecAgg batch of n: the batch carries half its noise;
- ``bug.dist-dp-se-inverted-polya``: the Polya parameter e^(-g/eps) instead of e^(-eps/g) (the
  scale inverted, as in the authors' released code).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from ..._executed import _protocol_kernels as pk
from ..._bandits._elimination import UserPool
from ..._bandits._transcripts import EliminationEngine, release_views
from ..._executed._protocols import DistributedProtocol
from .._runs import RunAlgorithm, elimination_engine, register_run_algorithm

__all__ = ["InvertedPolyaScale", "RawMeanElimination", "ReturningCountedOnce", "SharedNoiseEpochs", "SharesForTwiceTheBatch"]


# ---- engines with a wrong step ------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SharedNoiseEpochs(EliminationEngine):
    """PLANTED DP-SE: one noise draw per epoch, added to every active arm's sum (the released code's
    ``mean + noise`` with a single Laplace value). The draw is the protocol's own release of a batch
    of zero rewards (its noise alone), from the first arm's stream."""

    def release_round(self, arms: list[int], rewards: list[np.ndarray], rngs: Sequence[np.random.Generator], reps: int) -> list[tuple[np.ndarray, np.ndarray]]:
        if not arms:
            return []
        _, noise = release_views(self.protocol, np.zeros(rewards[0].size), rngs[arms[0]], reps, self.path)
        return [(x.sum() + noise, x.sum() + noise) for x in rewards]


@dataclass(frozen=True, eq=False)
class RawMeanElimination(EliminationEngine):
    """PLANTED Algorithm 1 whose elimination rule reads each batch's un-noised mean sum(r) / n (the
    releases, and so the server's view, stay private)."""

    def decision_means(self, estimates: np.ndarray, rewards: list[np.ndarray], n: int) -> np.ndarray:
        raw = np.array([x.sum() / n for x in rewards])
        return np.broadcast_to(raw, estimates.shape)


@dataclass(frozen=True, eq=False)
class ReturningCountedOnce(EliminationEngine):
    """PLANTED returning users (the t-th pull is user t mod N) whose ledger is charged for the pulls'
    indices t instead of the users t mod N: every charge meets "new" users, so a user who takes
    part in two batches is charged for one."""

    def participants(self, pool: UserPool, start: int, n: int) -> range | np.ndarray:
        pool.take(n)
        return range(start, start + n)


# ---- protocols with a wrong parameter -----------------------------------------------------------


@dataclass(frozen=True)
class SharesForTwiceTheBatch(DistributedProtocol):
    """PLANTED Theorem 1: every user adds a Polya(1/(2n), e^(-eps/g)) share, the share of a batch of
    2n users, while the SecAgg batch has n: the summed noise is a Polya(1/2) difference, not Lap_Z."""

    def server_views(self, rewards: Any, rng: np.random.Generator, reps: int, *, path: str = "per-user") -> np.ndarray:
        x = np.asarray(rewards, dtype=np.float64)
        params = self.parameters(x.size)
        xg = pk._encode(x, params.g)
        args = pk._noise_params("polya", self.epsilon, params.g, 2 * x.size)
        out = np.empty(reps, dtype=np.int64)
        pk._server_views(rng, xg, params.m, *args, out)
        return out


@dataclass(frozen=True)
class InvertedPolyaScale(DistributedProtocol):
    """PLANTED Theorem 1 with the Polya parameter e^(-g/eps) instead of e^(-eps/g): the kernel is
    given eps' = g^2/eps, so its e^(-eps'/g) is the inverted one (almost no noise for g > eps)."""

    def server_views(self, rewards: Any, rng: np.random.Generator, reps: int, *, path: str = "per-user") -> np.ndarray:
        x = np.asarray(rewards, dtype=np.float64)
        params = self.parameters(x.size)
        return pk.server_views(rng, x, params.g, params.m, reps, "polya", eps=params.g * params.g / float(self.epsilon))


def _with_protocol(engine: EliminationEngine, kind: type) -> EliminationEngine:
    p = engine.protocol
    return replace(engine, protocol=kind(p.kind, p.epsilon, p.p, p.s, p.tau_p, p.underflow_correction))


def _as(engine: EliminationEngine, cls: type, **changes: Any) -> EliminationEngine:
    return cls(engine.name, engine.protocol, engine.arms, engine.horizon, engine.schedule, engine.radius,
               changes.get("population", engine.population), engine.path, engine.unit)


def _shared_laplace(**options: Any) -> EliminationEngine:
    return _as(elimination_engine("dp-se", **options), SharedNoiseEpochs)


def _raw_elimination(**options: Any) -> EliminationEngine:
    return _as(elimination_engine("dist-dp-se", **options), RawMeanElimination)


def _returning_once(*, population: int, **options: Any) -> EliminationEngine:
    # the protocol of a unique-users run at the configured eps (no calibration for returns)
    return _as(elimination_engine("dist-dp-se", **options), ReturningCountedOnce, population=population)


def _shares_for_2n(**options: Any) -> EliminationEngine:
    return _with_protocol(elimination_engine("dist-dp-se", **options), SharesForTwiceTheBatch)


def _inverted_polya(**options: Any) -> EliminationEngine:
    return _with_protocol(elimination_engine("dist-dp-se", **options), InvertedPolyaScale)


for _name, _summary, _build, _form in (
    ("bug.dp-se-shared-laplace", "PLANTED DP-SE, one noise draw per epoch shared by every arm (the released code)", _shared_laplace, "pure"),
    ("bug.dist-dp-se-raw-elimination", "PLANTED Dist-DP-SE eliminating on the un-noised batch means", _raw_elimination, "pure"),
    ("bug.dist-dp-se-returning-counted-once", "PLANTED Dist-DP-SE with returning users charged once for two batches", _returning_once, "pure"),
    ("bug.dist-dp-se-shares-for-2n", "PLANTED Dist-DP-SE with Polya shares of a 2n-user batch in a batch of n", _shares_for_2n, "pure"),
    ("bug.dist-dp-se-inverted-polya", "PLANTED Dist-DP-SE with the Polya scale inverted: e^(-g/eps)", _inverted_polya, "pure"),
):
    register_run_algorithm(RunAlgorithm(_name, _summary, _build, _form, planted=True))
