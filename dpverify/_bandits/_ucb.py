"""UCB1 and the LDP UCB family of Ren, Zhou, Liu & Shroff (FORMULAS.md B), with local curators.

Parties. The **curators** (:class:`LocalCurator`, trusted side, one per user) turn a reward into
a private response: CTL(eps) = r + Laplace(1/eps), CTB(eps) = Bernoulli((r e^eps + 1 - r)/(1 + e^eps)),
CTL-S / CTB-S apply the sigmoid s(r) = 1/(1 + e^-r) first; ``identity`` is UCB1's non-private
"curator". A :class:`LocalPrivatizer` binds a curator to the run's ledger: it admits a cohort of
users (one ledger charge: each user answers one query, so the cohort's per-user spend is the
curator's guarantee) and then answers only for admitted, unused users. The **learner** is a numba
kernel that reads responses from per-arm buffers and never sees a reward; when an arm's buffer is
empty the kernel returns, and the trusted side refills it with the next rewards of that arm's
stream (common random numbers) passed through the curator.

Indices (t = pulls so far, N = pulls of the arm, mu = mean of its responses):
UCB1 / LDP-UCB-B / -BS: mu + sqrt(2 log t / N);
LDP-UCB-L / -LS: mu + sqrt(2 log t / N) + sqrt(32 log t / (eps^2 N)), and any arm with
N <= 4 log(t + 1) is pulled first (the least-pulled such arm). Every algorithm starts by pulling
each arm once. Ties (in the index, or among under-sampled arms) are broken uniformly at random with
the learner's own generator (Ren et al.'s instance has its optimal arm at index 0, where
first-index tie-breaking would favour it). Privatised responses are never clipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

import accounting as acc
from accounting._mechanisms import BernoulliCurator, Laplace
from accounting._validation import AccountingError, BudgetExceeded, check_positive, check_positive_int

from ._environments import BanditInstance
from ._results import RunRecord, checkpoints, ledger_summary

__all__ = ["CURATORS", "LocalCurator", "LocalPrivatizer", "UCB_ALGORITHMS", "run_ucb"]

CURATORS = ("identity", "ctl", "ctb", "ctl-s", "ctb-s")
#: algorithm -> (curator, laplace-style index)
UCB_ALGORITHMS = {
    "ucb1": ("identity", False),
    "ldp-ucb-l": ("ctl", True),
    "ldp-ucb-b": ("ctb", False),
    "ldp-ucb-ls": ("ctl-s", True),
    "ldp-ucb-bs": ("ctb-s", False),
}


@dataclass(frozen=True)
class LocalCurator:
    """A local randomizer of Ren et al. and its guarantee from ``accounting``."""

    kind: str
    epsilon: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in CURATORS:
            raise AccountingError("curator", self.kind, f"one of {CURATORS}")
        if self.kind != "identity":
            check_positive("epsilon", self.epsilon)

    def guarantee(self) -> Any:
        """CTB(-S): BernoulliCurator(eps); CTL(-S): Laplace(1/eps, sensitivity 1) (inputs in [0, 1])."""
        if self.kind == "identity":
            return None
        if self.kind in ("ctb", "ctb-s"):
            return BernoulliCurator(self.epsilon)
        return Laplace(scale=1 / float(self.epsilon), sensitivity=1)

    @property
    def bits(self) -> int:
        return 1 if self.kind in ("ctb", "ctb-s") else 64

    def respond(self, rewards: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        x = rewards
        if self.kind in ("ctl-s", "ctb-s"):
            x = 1.0 / (1.0 + np.exp(-x))
        if self.kind == "identity":
            return x.copy()
        if self.kind in ("ctl", "ctl-s"):
            return x + rng.laplace(0.0, 1.0 / self.epsilon, size=x.size)
        e = math.exp(self.epsilon)
        prob = (x * e + 1.0 - x) / (1.0 + e)
        return (rng.random(x.size) < prob).astype(np.float64)


class LocalPrivatizer:
    """A curator bound to a ledger: admit a cohort (charge first), then answer each admitted user once."""

    def __init__(self, curator: LocalCurator, ledger: acc.Ledger | None, seed: np.random.SeedSequence) -> None:
        if curator.kind != "identity" and ledger is None:
            raise AccountingError("ledger", None, "an accounting.Ledger for a private curator")
        self._curator = curator
        self._ledger = ledger
        self._rng = np.random.Generator(np.random.PCG64(seed))
        self._admitted_stop = 0
        self._next_user = 0
        self.transcript: list[np.ndarray] | None = None  # a run audit's recording of every response, or None

    def admit(self, users: int) -> None:
        """Charge the ledger for users [stop, stop + users), each to answer one query."""
        check_positive_int("users", users)
        cohort = range(self._admitted_stop, self._admitted_stop + users)
        if self._ledger is not None:
            self._ledger.charge(self._curator.guarantee(), cohort, label=f"{self._curator.kind} users {cohort.start}..{cohort.stop - 1}")
        self._admitted_stop = cohort.stop

    def respond(self, rewards: np.ndarray) -> np.ndarray:
        n = rewards.size
        if self._next_user + n > self._admitted_stop:
            raise BudgetExceeded(
                f"{n} responses requested but only {self._admitted_stop - self._next_user} admitted users are left; admit (charge) first"
            )
        self._next_user += n
        out = self._curator.respond(rewards, self._rng)
        if self.transcript is not None:
            self.transcript.append(out)
        return out


# ---- the learner kernel ---------------------------------------------------------------------------


@numba.njit(cache=True)
def _ucb_kernel(t, horizon, laplace_index, eps, counts, sums, buf, buf_pos, buf_len, tie_rng, times, snap, next_snap, pending):
    """Run the UCB loop until the horizon (return -1) or an empty buffer (return that arm).

    ``buf[a, buf_pos[a]:buf_len[a]]`` are arm a's unread responses. ``snap[i]`` receives the
    pull counts when t reaches ``times[i]``. Returns (status, t, next_snap). A returned arm is the
    one already chosen: the caller passes it back as ``pending`` so the choice (and its tie-break
    draws) is not made twice. The index of arm a is
    mean[a] + c(t) / sqrt(N_a) with c(t) = sqrt(2 log t) (+ sqrt(32 log t) / eps for the Laplace
    index): mean and 1/sqrt(N) are updated only for the pulled arm.
    """
    k = counts.size
    means = np.zeros(k)
    rsqrt = np.zeros(k)
    for a in range(k):
        if counts[a] > 0:
            means[a] = sums[a] / counts[a]
            rsqrt[a] = 1.0 / math.sqrt(counts[a])
    while t < horizon:
        arm = -1
        if pending >= 0:
            arm = pending
            pending = -1
        elif t < k:
            arm = t  # initialisation: each arm once
        else:
            logt = math.log(t)
            if laplace_index:
                # under-sampled arms first: N <= 4 log(t + 1), least-pulled, ties at random
                thresh = 4.0 * math.log(t + 1.0)
                best = -1
                ties = 0
                for a in range(k):
                    if counts[a] <= thresh:
                        if best == -1 or counts[a] < counts[best]:
                            best = a
                            ties = 1
                        elif counts[a] == counts[best]:
                            ties += 1
                            if tie_rng.random() * ties < 1.0:
                                best = a
                arm = best
            if arm == -1:
                c = math.sqrt(2.0 * logt)
                if laplace_index:
                    c += math.sqrt(32.0 * logt) / eps
                best_val = -np.inf
                ties = 0
                for a in range(k):
                    val = means[a] + c * rsqrt[a]
                    if val > best_val:
                        best_val = val
                        arm = a
                        ties = 1
                    elif val == best_val:
                        ties += 1
                        if tie_rng.random() * ties < 1.0:
                            arm = a
        if buf_pos[arm] >= buf_len[arm]:
            return arm, t, next_snap
        sums[arm] += buf[arm, buf_pos[arm]]
        buf_pos[arm] += 1
        counts[arm] += 1
        means[arm] = sums[arm] / counts[arm]
        rsqrt[arm] = 1.0 / math.sqrt(counts[arm])
        t += 1
        while next_snap < times.size and times[next_snap] == t:
            for a in range(k):
                snap[next_snap, a] = counts[a]
            next_snap += 1
    return -1, t, next_snap


@dataclass(frozen=True)
class UCBSetup:
    instance: BanditInstance
    horizon: int
    algorithm: str
    epsilon: float | None
    realised: bool = False
    delta: float = 1e-6
    chunk: int = 4096
    checkpoint_count: int = 60
    transcript: Any = None  # a run audit's recorder (dpverify._bandits._transcripts_ucb), or None


def run_ucb(setup: UCBSetup, seeds: dict[str, np.random.SeedSequence], run_index: int = 0) -> RunRecord:
    """One run of a UCB-family algorithm (names in ``UCB_ALGORITHMS``)."""
    if setup.algorithm not in UCB_ALGORITHMS:
        raise AccountingError("algorithm", setup.algorithm, f"one of {tuple(UCB_ALGORITHMS)}")
    T = check_positive_int("horizon", setup.horizon)
    inst = setup.instance
    k = inst.k
    if T < k:
        raise AccountingError("horizon", T, f"at least K = {k} (every arm is pulled once first)")
    curator_kind, laplace_index = UCB_ALGORITHMS[setup.algorithm]
    curator = LocalCurator(curator_kind, setup.epsilon if curator_kind != "identity" else None)
    ledger = None
    if curator_kind != "identity":
        ledger = acc.Ledger(curator.guarantee().pure(), name=setup.algorithm)  # the accountant's certified eps
    privatizer = LocalPrivatizer(curator, ledger, seeds["privatizer"])
    if setup.transcript is not None:  # a run audit's recording (chunk = 1: each response drawn at its pull)
        setup.transcript.ledger = ledger
        privatizer.transcript = setup.transcript.responses
    # T pulls need at most T + K * chunk responses drawn (each arm's buffer may hold up to a chunk
    # of unread responses at the end): that cohort of unique users is charged before any response.
    privatizer.admit(T + k * setup.chunk)
    streams = inst.streams(seeds["environment"])
    tie_rng = np.random.Generator(np.random.PCG64(seeds["learner"]))
    chunk = setup.chunk
    buf = np.zeros((k, chunk))
    buf_pos = np.zeros(k, dtype=np.int64)
    buf_len = np.zeros(k, dtype=np.int64)
    counts = np.zeros(k, dtype=np.int64)
    sums = np.zeros(k)
    times = checkpoints(T, setup.checkpoint_count)
    snap = np.zeros((times.size, k), dtype=np.int64)
    rewards_kept: list[list[np.ndarray]] = [[] for _ in range(k)]
    t, next_snap, pending = 0, 0, -1
    eps = float(setup.epsilon) if setup.epsilon is not None else 1.0
    while True:
        status, t, next_snap = _ucb_kernel(t, T, laplace_index, eps, counts, sums, buf, buf_pos, buf_len, tie_rng, times, snap, next_snap, pending)
        if status < 0:
            break
        pending = status
        rewards = streams.draw(status, chunk)  # trusted side: next rewards of this arm's stream
        if setup.realised:
            rewards_kept[status].append(rewards)
        buf[status, :] = privatizer.respond(rewards)
        buf_pos[status] = 0
        buf_len[status] = chunk
    gaps = inst.gaps
    if setup.realised:
        best = float(inst.means.max())
        csums = [np.concatenate([[0.0], np.cumsum(np.concatenate(r))]) if r else np.zeros(1) for r in rewards_kept]
        got = np.array([sum(csums[a][snap[i, a]] for a in range(k)) for i in range(times.size)])
        regret = times * best - got
    else:
        regret = snap @ gaps
    summary = ledger_summary(ledger, delta=setup.delta, path="per-user", bits_per_user=curator.bits, protocol=f"{curator_kind} local curator")
    return RunRecord(
        run_index=run_index,
        times=times,
        regret=regret.astype(np.float64),
        pulls=counts.copy(),
        eliminations=[],
        ledger=summary,
        instance=inst.describe(),
        extra={"curator": curator_kind},
    )
