"""UCB1 and the LDP UCB family of Ren, Zhou, Liu & Shroff (FORMULAS.md B), with local curators.

Parties. The **curators** (:class:`LocalCurator`, trusted side, one per user) turn a reward into
a private response: CTL(eps) = r + Laplace(1/eps), CTB(eps) = Bernoulli((r e^eps + 1 - r)/(1 + e^eps)),
CTL-S / CTB-S apply the sigmoid s(r) = 1/(1 + e^-r) first; ``identity`` is UCB1's non-private
"curator". CTL's continuous Laplace has two implementations (``noise``, see ``dpverify._executed._noise``):
``"float-safe"`` (the default), DP as executed: the reward clamped to [0, 1], randomised rounding to
the grid 1/g, g = 2^16, plus an exact Lap_Z(g/eps), the response the integer over g (the local
randomizer of ICLR 2023 App. H.2, Algorithm 4, without the modulus; accountant:
``GridDiscreteLaplace(g, g/eps)``); and ``"idealised"``, Ren et al.'s float Laplace(1/eps)
(accountant: ``Laplace(1/eps, 1)``), which is not DP in floating point and is labelled so.

A :class:`LocalPrivatizer` binds a curator to the run's ledger: it admits a cohort of users (one
ledger charge: each user answers one query, so the cohort's per-user spend is the curator's
guarantee) and then answers only for admitted, unused users. The **learner** is a numba
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

import functools
import math
import warnings
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numba
import numpy as np

import accounting as acc
from accounting import BernoulliCurator, GridDiscreteLaplace, Laplace, AccountingError, BudgetExceeded
from accounting.internal import check_positive, check_positive_int

from .._executed import _noise, _privatizer, _samplers
from .._executed import _protocol_kernels as pk
from .._executed._kinds import CuratorKind
from ._environments import BanditInstance
from ._results import RunRecord, checkpoints, ledger_summary

__all__ = ["CURATORS", "LocalCurator", "LocalPrivatizer", "UCB_ALGORITHMS", "run_ucb"]

#: the curators' names (``CuratorKind``)
CURATORS = CuratorKind.names()
#: algorithm -> (curator, laplace-style index)
UCB_ALGORITHMS = {
    "ucb1": (CuratorKind.IDENTITY, False),
    "ldp-ucb-l": (CuratorKind.CTL, True),
    "ldp-ucb-b": (CuratorKind.CTB, False),
    "ldp-ucb-ls": (CuratorKind.CTL_S, True),
    "ldp-ucb-bs": (CuratorKind.CTB_S, False),
}


@dataclass(frozen=True)
class LocalCurator:
    """A local randomizer of Ren et al. and its guarantee from ``accounting``.

    ``noise`` ("float-safe" or "idealised") picks CTL's implementation (module docstring); the
    CTB curators and ``identity`` draw no continuous noise and ignore it. ``grid``: the float-safe
    CTL's g (default 2^16; the audits also run small grids, where rounding is visible).
    """

    kind: CuratorKind
    epsilon: float | None = None
    noise: _noise.NoiseMode = _noise.DEFAULT_NOISE
    grid: int = _noise.FLOAT_SAFE_GRID

    def __post_init__(self) -> None:
        # the kind and the noise mode parsed once, here (a name or the member)
        object.__setattr__(self, "kind", CuratorKind.parse(self.kind, "curator"))
        object.__setattr__(self, "noise", _noise.check_noise(self.noise))
        if self.kind.private:
            check_positive("epsilon", self.epsilon)
        if self.laplace:
            if self.float_safe:
                self.scale  # validates grid and epsilon: the sampler must take g/eps
            else:
                self.epsilon_f  # a float eps for numpy's Laplace

    @property
    def laplace(self) -> bool:
        """Whether the curator adds Laplace noise (CTL, CTL-S)."""
        return self.kind.laplace

    @property
    def float_safe(self) -> bool:
        """Whether the curator is DP as executed (everything but the idealised CTL)."""
        return not (self.laplace and self.noise.idealised)

    @property
    def epsilon_f(self) -> float:
        return float(self.epsilon)  # type: ignore[arg-type]

    @functools.cached_property
    def scale(self) -> Fraction:
        """The float-safe CTL's Lap_Z scale b on the integer grid (g/eps, or the next rational the sampler takes)."""
        return _noise.grid_laplace_scale(self.epsilon, self.grid)

    @property
    def noise_epsilon(self) -> float:
        """1/(scale of the response's Laplace noise, in reward units): eps for the idealised CTL,
        g/b for the float-safe one (eps itself unless b was rounded up). The LDP-UCB-L index uses it."""
        if self.laplace and self.float_safe:
            return float(Fraction(self.grid) / self.scale)
        return self.epsilon_f

    def mechanism(self) -> Any:
        """CTB(-S): BernoulliCurator(eps); CTL(-S): GridDiscreteLaplace(g, b) as executed (float-safe),
        or Laplace(1/eps, sensitivity 1), the real-arithmetic mechanism (idealised; inputs in [0, 1])."""
        if not self.kind.private:
            return None
        if self.kind.binary:
            return BernoulliCurator(self.epsilon)
        if self.float_safe:
            return GridDiscreteLaplace(self.grid, self.scale)
        return Laplace(scale=1 / self.epsilon_f, sensitivity=1)

    def guarantee(self) -> Any:
        """Deprecated name of :meth:`mechanism` (it returns a mechanism): warns and forwards."""
        warnings.warn(
            "LocalCurator.guarantee() is deprecated: use LocalCurator.mechanism() (it returns the curator's accounting mechanism)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.mechanism()

    def describe(self) -> str:
        """The implementation, as the run's ledger and reports name it."""
        kind = self.kind.upper()
        if not self.kind.private:
            return "identity (non-private UCB1)"
        if not self.laplace:
            return f"{kind}(eps={self.epsilon_f:g}): randomised response on Bernoulli(reward)"
        if self.float_safe:
            return (f"{kind}(eps={self.epsilon_f:g}) float-safe: reward clamped to [0, 1], randomised rounding to the grid "
                    f"1/{self.grid}, exact Lap_Z({self.scale}) (CKS Alg. 2), response = integer / {self.grid}")
        return f"{kind}(eps={self.epsilon_f:g}) {_noise.IDEALISED_LABEL}: reward + numpy float Laplace(1/eps)"

    @property
    def bits(self) -> int:
        return 1 if self.kind.binary else 64

    def respond(self, rewards: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        x = rewards
        if self.kind.squashed:
            x = 1.0 / (1.0 + np.exp(-x))
        if not self.kind.private:
            return x.copy()
        if self.laplace:
            if not self.float_safe:  # noise="idealised" only: Ren et al.'s float Laplace, labelled, not DP in floating point
                return x + _samplers.laplace(rng, 1.0 / self.epsilon_f, size=x.size)
            x = np.asarray(x, dtype=np.float64)
            if np.isnan(x).any():
                raise AccountingError("rewards", "an array containing NaN", "rewards (NaN has no clamped value)")
            # clamp (the sensitivity is that of the clamped value), encode on the grid 1/g by randomised
            # rounding and add Lap_Z(b): one numba pass, the local randomizer R without a modulus
            return pk.laplace_messages(rng, np.clip(x, 0.0, 1.0), self.grid, self.scale) / self.grid
        e = math.exp(self.epsilon)
        prob = (x * e + 1.0 - x) / (1.0 + e)
        return (rng.random(x.size) < prob).astype(np.float64)


class LocalPrivatizer:
    """A curator bound to a ledger: admit a cohort (charge first), then answer each admitted user once.

    An idealised curator (float noise, not DP as executed) is refused on a durable ledger unless
    ``allow_idealised_charges`` (``dpverify._executed._privatizer.check_idealised_charges``); its charges are
    labelled "idealised: not DP in floating point".
    """

    def __init__(self, curator: LocalCurator, ledger: acc.Ledger | None, seed: np.random.SeedSequence, *,
                 allow_idealised_charges: bool = False) -> None:
        if curator.kind.private and ledger is None:
            raise AccountingError("ledger", None, "an accounting.Ledger for a private curator")
        if ledger is not None:
            _privatizer.check_idealised_charges(curator, not curator.float_safe, ledger, allow_idealised_charges)
        self._curator = curator
        self._ledger = ledger
        self._rng = _privatizer.private_stream(seed)
        self._admitted_stop = 0
        self._next_user = 0
        self.transcript: list[np.ndarray] | None = None  # a run audit's recording of every response, or None

    def admit(self, users: int) -> None:
        """Charge the ledger for users [stop, stop + users), each to answer one query."""
        check_positive_int("users", users)
        cohort = range(self._admitted_stop, self._admitted_stop + users)
        if self._ledger is not None:
            label = f"{self._curator.kind} users {cohort.start}..{cohort.stop - 1}: {self._curator.describe()}"
            self._ledger.charge(self._curator.mechanism(), cohort, label=label)
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
    noise: str = _noise.DEFAULT_NOISE
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
    curator = LocalCurator(curator_kind, setup.epsilon if curator_kind.private else None, noise=setup.noise)
    ledger = None
    if curator_kind.private:
        ledger = acc.Ledger(curator.mechanism().pure(), name=setup.algorithm)  # the accountant's certified eps
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
    # the index's eps is that of the response's noise (the float-safe CTL's g/b: eps unless b was rounded up)
    eps = curator.noise_epsilon if curator.laplace else 1.0
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
    summary = ledger_summary(ledger, delta=setup.delta, path="per-user", bits_per_user=curator.bits, protocol=f"{curator_kind} local curator",
                             implementation=curator.describe(), idealised=not curator.float_safe)
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
