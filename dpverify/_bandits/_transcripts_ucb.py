"""Transcripts of the LDP UCB family (Ren et al.): UCB1, LDP-UCB-L/-B/-LS/-BS on a reward table.

The local model: user t is recommended arm a_t by the UCB index over the previous responses,
and sends her curator's response to her reward table[t, a_t] (``LocalCurator.respond``).

- **server view**: every user's response, in order (one column per user; CTB's bits as 0/1);
- **public view**: the arm recommended to every user (one column per user).

Same code path: ``run_ucb`` with ``chunk = 1`` draws each user's response when she pulls (a
larger chunk pre-draws an arm's responses before knowing which users will pull it, which a
reward table cannot do), so :class:`UCBTranscript` records the plain runner's responses
(``LocalPrivatizer``'s hook) and the table's reward stream records the arms. :class:`UCBEngine`
runs many runs in lockstep over t: the index rule of ``_ucb_kernel`` vectorised over runs (the
same float operations, the same reservoir tie-breaking drawing the learner's stream at every
tie), every run's response at t drawn by one ``curator.respond`` call. With the plain runner's
streams and one run it reproduces the plain run bit for bit (tested); with many runs the law.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from accounting import Ledger, AccountingError

from .._executed._privatizer import private_stream
from ._results import RunRecord
from ._transcripts import VIEWS, Placement, TableInstance, TranscriptEngine
from ._ucb import UCB_ALGORITHMS, LocalCurator, UCBSetup, run_ucb

__all__ = ["UCBEngine", "UCBTranscript"]


class UCBTranscript:
    """A plain UCB run's responses (the privatizer's hook appends them) and its ledger."""

    def __init__(self) -> None:
        self.responses: list[np.ndarray] = []
        self.ledger: Ledger | None = None


def _reservoir(values: np.ndarray, eligible: np.ndarray, rng: np.random.Generator, prefer_small: bool) -> np.ndarray:
    """``_ucb_kernel``'s scan over arms, for every run at once: the best eligible arm (largest value,
    or smallest with ``prefer_small``), ties broken uniformly by reservoir sampling -- one uniform
    of ``rng`` at each tie, in arm order, as the kernel draws them. -1 where no arm is eligible."""
    runs, k = values.shape
    arm = np.full(runs, -1, dtype=np.int64)
    best = np.zeros(runs)
    ties = np.zeros(runs, dtype=np.int64)
    for a in range(k):
        v = values[:, a]
        ok = eligible[:, a]
        first = ok & (arm == -1)
        better = ok & (arm >= 0) & ((v < best) if prefer_small else (v > best))
        new = first | better
        arm[new], best[new], ties[new] = a, v[new], 1
        tie = ok & ~new & (arm >= 0) & (v == best)
        if tie.any():
            ties[tie] += 1
            who = np.flatnonzero(tie)
            switch = rng.random(who.size) * ties[who] < 1.0
            arm[who[switch]] = a
    return arm


@dataclass(frozen=True, eq=False)
class UCBEngine(TranscriptEngine):
    """A UCB-family algorithm in lockstep over many runs on one reward table (see the module docs)."""

    name: str
    algorithm: str
    epsilon: float | None
    arms: int
    horizon: int
    unit: str = "round"
    rows: int = field(init=False)
    curator: LocalCurator = field(init=False)

    def __post_init__(self) -> None:
        if self.algorithm not in UCB_ALGORITHMS:
            raise AccountingError("algorithm", self.algorithm, f"one of {tuple(UCB_ALGORITHMS)}")
        kind, _ = UCB_ALGORITHMS[self.algorithm]
        object.__setattr__(self, "curator", LocalCurator(kind, self.epsilon if kind.private else None))
        object.__setattr__(self, "rows", self.horizon)

    @classmethod
    def from_setup(cls, setup: UCBSetup, name: str = "") -> "UCBEngine":
        return cls(name or setup.algorithm, setup.algorithm, setup.epsilon, setup.instance.k, setup.horizon)

    @property
    def binary(self) -> bool:
        return self.curator.kind.binary

    def columns(self, view: str) -> list[str]:
        if view == "server":
            return [f"user {t}'s response" for t in range(self.horizon)]
        if view == "public":
            return [f"user {t}'s arm" for t in range(self.horizon)]
        raise AccountingError("view", view, f"one of {VIEWS}")

    def streams(self, rng: np.random.Generator) -> list[np.random.Generator]:
        return list(rng.spawn(2))  # the privatizer's and the learner's

    def plain_streams(self, seeds: dict[str, np.random.SeedSequence]) -> list[np.random.Generator]:
        return [private_stream(seeds["privatizer"]), np.random.Generator(np.random.PCG64(seeds["learner"]))]

    def run(self, table: np.ndarray, rngs: Sequence[np.random.Generator], reps: int, *, ledger: Any = None) -> dict[str, np.ndarray]:
        K, T = self.arms, self.horizon
        privatizer_rng, tie_rng = rngs
        if ledger is not None:
            if reps != 1:
                raise AccountingError("reps", reps, "1 when a ledger is charged (the ledger of one run)")
            if self.curator.kind.private:  # run_ucb admits T + K chunk users at once (chunk = 1)
                ledger.charge(self.curator.mechanism(), range(0, T + K), label=f"{self.curator.kind} users 0..{T + K - 1}")
        laplace_index = UCB_ALGORITHMS[self.algorithm][1]
        eps = float(self.epsilon) if self.epsilon is not None else 1.0
        counts = np.zeros((reps, K), dtype=np.int64)
        sums = np.zeros((reps, K))
        means = np.zeros((reps, K))
        rsqrt = np.zeros((reps, K))
        server = np.empty((reps, T), dtype=np.int64 if self.binary else np.float64)
        public = np.empty((reps, T), dtype=np.int64)
        rows = np.arange(reps)
        for t in range(T):
            if t < K:
                arm = np.full(reps, t, dtype=np.int64)
            else:
                logt = math.log(t)
                arm = np.full(reps, -1, dtype=np.int64)
                if laplace_index:  # under-sampled arms first: N <= 4 log(t + 1), the least pulled
                    arm = _reservoir(counts.astype(np.float64), counts <= 4.0 * math.log(t + 1.0), tie_rng, prefer_small=True)
                todo = arm == -1
                if todo.any():
                    c = math.sqrt(2.0 * logt)
                    if laplace_index:
                        c += math.sqrt(32.0 * logt) / eps
                    pick = _reservoir(means[todo] + c * rsqrt[todo], np.ones((int(todo.sum()), K), dtype=bool), tie_rng, prefer_small=False)
                    arm[todo] = pick
            rewards = table[t, arm]
            out = self.curator.respond(rewards, privatizer_rng)
            server[:, t] = out
            public[:, t] = arm
            sums[rows, arm] += out
            counts[rows, arm] += 1
            n = counts[rows, arm]
            means[rows, arm] = sums[rows, arm] / n
            rsqrt[rows, arm] = 1.0 / np.sqrt(n)
        return {"server": server, "public": public}

    # ---- neighbours ------------------------------------------------------------------------------

    def placements(self) -> list[Placement]:
        """Users 0..K-1 (the initial pull of each arm: her arm is known) and K..2K-1 (the first index decisions)."""
        out = [Placement(t, t, t, f"user {t} (round {t}: arm {t}'s initial pull)") for t in range(min(self.arms, self.horizon))]
        out += [Placement(t, t, -1, f"user {t} (round {t}: the first decisions of the index)") for t in range(self.arms, min(2 * self.arms, self.horizon))]
        return out

    def threshold_tables(self, placement: Placement, extremes: tuple[float, float]) -> list[tuple[np.ndarray, str]]:
        """Tables where the index decisions are close: every arm's mean 1/2 (ties), and a gap of 0.1."""
        out = []
        for gap in (0.0, 0.1):
            means = np.full(self.arms, 0.5 - gap / 2)
            means[0] = 0.5 + gap / 2
            out.append((np.tile(means, (self.rows, 1)), f"means {np.round(means, 3).tolist()} (index decisions {'tied' if gap == 0 else 'close'})"))
        return out

    # ---- the plain runner ------------------------------------------------------------------------

    def plain_run(self, setup: UCBSetup, table: np.ndarray, seeds: dict[str, np.random.SeedSequence]) -> tuple[RunRecord, UCBTranscript, list[int]]:
        transcript = UCBTranscript()
        instance = TableInstance.from_table(table)
        plain = replace(setup, instance=instance, chunk=1, transcript=transcript)
        record = run_ucb(plain, seeds)
        return record, transcript, instance.issued[-1].arms_drawn

    def flatten(self, transcript: UCBTranscript, arms: list[int]) -> dict[str, np.ndarray]:
        responses = np.concatenate(transcript.responses)[: self.horizon]
        return {"server": responses.astype(np.int64) if self.binary else responses, "public": np.asarray(arms[: self.horizon], dtype=np.int64)}
