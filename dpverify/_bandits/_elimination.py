"""Batch successive elimination: Algorithm 1 of Chowdhury & Zhou (ICLR 2023) and DP-SE.

The run is split in two parties, as in deployment:

- the **trusted side** (:class:`BatchFeedback`): the environment's reward streams, the pool of
  users, and one :class:`dpverify._executed._privatizer.Privatizer` per arm (all sharing the run's ledger).
  It draws the rewards of a batch of new users and returns *only* the privatizer's release;
- the **learner** (:class:`EliminationLearner`): the active set, the confidence radius and the
  elimination rule. It receives estimates of batch sums and nothing else: no rewards, no noise,
  no random generator that touches private data.

Algorithm 1 (FORMULAS.md A). For b = 1, 2, ...: l(b) = base^b (base 2 in the paper); each active
arm is pulled by l(b) new users, their batch is privatised, mu_hat_a(b) = R_a(b) / l(b) uses this
batch only (forgetting); arm a stays iff mu_hat_a + beta(b) >= max_a' (mu_hat_a' - beta(b)). The
run stops as soon as T pulls are made (line 9: the unfinished batch is never released).
beta(b) is Lemma 2's radius with the protocol's explicit (sigma, h) from ``assumption1``:

    beta(b) = sqrt(log(4|Phi| b^2/p) / (2 l)) + sigma sqrt(log(2|Phi| b^2/p)) / l + h log(2|Phi| b^2/p) / l.

Both run through one batch loop, :func:`eliminate_in_batches`, whose hooks (batch schedule,
radius, ``on_batch``) are what the tail verifier instruments.

DP-SE (Sajed & Sheffet 2019), the central Laplace baseline: epochs e = 1, 2, ... with
Delta_e = 2^-e, R_e = 1 + max(32 ln(8|S|e^2/p)/Delta_e^2, 8 ln(4|S|e^2/p)/(eps Delta_e)) pulls per
active arm, one independent Laplace(1/eps) on each arm's epoch sum, radius
w_e = sqrt(ln(8|S|e^2/p)/(2 R_e)) + ln(4|S|e^2/p)/(eps R_e), the same elimination rule. With the
float-safe privatizer (the default: rewards rounded to the grid 1/g, exact Lap_Z(g/eps) on the sum)
the schedule R_e is the same; the radius's first term covers the rounded rewards xhat/g as it does
the rewards (they are independent, in [0, 1], with the same mean), and its Laplace term becomes
(ln(4|S|e^2/p) + ln c)/(eps' R_e), c = 2/(1 + e^{-eps'/g}) <= 1 + eps'/(2g), eps' = g/b: the discrete
Laplace's tail is at most c times the continuous one's (``CentralGridLaplaceProtocol``).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np

import accounting as acc
from accounting import AccountingError
from accounting.internal import check_positive_int, check_probability

from .._executed._kinds import ProtocolKind
from .._executed._privatizer import BatchProtocol, Privatizer
from ._environments import BanditInstance, RewardStreams, children
from ._results import RunRecord, checkpoints, ledger_summary

__all__ = ["BatchChannel", "BatchFeedback", "EliminationLearner", "UserPool", "eliminate_in_batches", "lemma2_radius", "protocol_radius", "run_batch_elimination", "run_dp_se"]


# ---- users ----------------------------------------------------------------------------------------


class UserPool:
    """Hands out the users of each batch.

    ``population=None``: unique users (every pull is a new user, ids 0, 1, 2, ...).
    ``population=N``: returning users drawn round-robin from N users; a user comes back after the
    N - 1 others, so in a run of T pulls she takes part in at most ceil(T / N) batches and never
    twice in one batch as long as N >= the number of pulls in any batch.
    ``ledger``: a durable ledger (``accounting.Ledger.open``) whose stored position continues the
    round-robin across runs and processes, so the runs sharing it spend one population's budget.
    """

    def __init__(self, population: int | None = None, ledger: Any = None) -> None:
        if population is not None:
            check_positive_int("population", population)
        if ledger is not None and population is None:
            raise AccountingError("population", None, "a finite population with a durable ledger")
        self._population = population
        self._ledger = ledger
        self._next = 0

    def take(self, n: int) -> range | np.ndarray:
        if self._ledger is not None:
            start = self._ledger.advance_cursor(n, self._population)
        else:
            start = self._next
            self._next += n
        if self._population is None:
            return range(start, start + n)
        if n > self._population:
            raise AccountingError("population", self._population, f"at least the batch size {n} (a user joins a batch once)")
        lo, hi = start % self._population, (start + n) % self._population
        if lo < hi or hi == 0:
            return range(lo, lo + n)
        # wrapped around: users lo..N-1 and 0..hi-1, in increasing order (the ledger's fast path)
        return np.concatenate([np.arange(0, hi), np.arange(lo, self._population)])


# ---- the two parties ----------------------------------------------------------------------------


class BatchFeedback:
    """The trusted side: rewards, users and privatizers. The learner only calls :meth:`release`."""

    def __init__(self, streams: RewardStreams, privatizers: list[Privatizer] | None, users: UserPool, recorder: "Recorder") -> None:
        self._streams = streams
        self._privatizers = privatizers
        self._users = users
        self._recorder = recorder
        self._taken: dict[int, range | np.ndarray] = {}  # users of arms whose round was prepaid
        self.pulls = 0

    def prepare_round(self, arms: list[int], n: int, labels: list[str]) -> None:
        """Before a round's releases: with a durable ledger, take the users of every arm that will
        be released and charge all of them in one transaction (``Ledger.prepay``: one disk sync per
        round instead of one per arm; each release still finds its charge recorded before it).
        Refused (BudgetExceeded) before any of the round is released. In memory: nothing to do."""
        if not self._privatizers or not arms:
            return
        ledger = self._privatizers[arms[0]].ledger
        if not hasattr(ledger, "prepay"):
            return
        items = []
        for arm, label in zip(arms, labels):
            self._taken[arm] = self._users.take(n)
            privatizer = self._privatizers[arm]
            items.append((privatizer.protocol.mechanism(n), self._taken[arm], label + privatizer.label_suffix))
        ledger.prepay(items)

    def release(self, arm: int, n: int, label: str) -> float:
        """Pull ``arm`` with ``n`` new users and return the private estimate of their reward sum.

        On the aggregate path, with a protocol that offers it, the users' rewards are not drawn one
        by one: their rounded sum is drawn from its law (:meth:`RewardStreams.rounded_sum`), O(g)
        instead of O(n); pseudo-regret needs no individual reward."""
        participants = self._taken.pop(arm) if arm in self._taken else self._users.take(n)
        privatizer = self._privatizers[arm] if self._privatizers is not None else None
        g = privatizer.protocol.aggregate_resolution(n) if privatizer is not None and privatizer.path == "aggregate" else None
        if g is not None and not self._recorder.realised:
            xhat_sum = self._streams.rounded_sum(arm, n, g)
            estimate = privatizer.release_rounded_sum(xhat_sum, n, participants, label=label).estimate
            self._recorder.segment(arm, n, None)
        else:
            rewards = self._streams.draw(arm, n)
            if privatizer is None:  # the non-private baseline: no privatizer, no ledger
                estimate = float(rewards.sum())
            else:
                estimate = privatizer.release_sum(rewards, participants, label=label).estimate
            self._recorder.segment(arm, n, rewards)
        self.pulls += n
        return estimate

    def pull_unreleased(self, arm: int, n: int) -> None:
        """The last, unfinished batch (Algorithm 1 line 9): pulled, never aggregated nor released."""
        rewards = self._streams.draw(arm, n) if self._recorder.realised else None  # pseudo-regret needs no reward
        self._users.take(n)
        self._recorder.segment(arm, n, rewards)
        self.pulls += n


class EliminationLearner:
    """Active set and elimination rule; sees estimates of batch sums only."""

    def __init__(self, k: int) -> None:
        self.active = list(range(k))
        self.eliminated: list[tuple[int, int]] = []

    def update(self, means: dict[int, float], radius: float, time: int) -> list[int]:
        best_lcb = max(means[a] - radius for a in self.active)
        keep = [a for a in self.active if means[a] + radius >= best_lcb]
        removed = [a for a in self.active if a not in keep]
        self.eliminated.extend((a, time) for a in removed)
        self.active = keep
        return removed


class Recorder:
    """Regret at the checkpoints, from the segments (arm, n) pulled in order (trusted bookkeeping)."""

    def __init__(self, gaps: np.ndarray, best_mean: float, times: np.ndarray, realised: bool) -> None:
        self._gaps = gaps.tolist()  # Python floats: one segment per release, scalar work only
        self._best = best_mean
        self.times = times
        self._times = times.tolist()
        self.values = np.zeros(times.size)
        self.realised = realised
        self._t = 0
        self._regret = 0.0  # pseudo-regret, or t mu* - sum of rewards if realised
        self._next = 0
        self.pulls = np.zeros(len(self._gaps), dtype=np.int64)

    def segment(self, arm: int, n: int, rewards: np.ndarray | None) -> None:
        """Record n pulls of ``arm``; ``rewards`` (the n rewards) are needed for realised regret only."""
        end = self._t + n
        lo = self._next
        hi = bisect.bisect_right(self._times, end, lo)
        if hi > lo:
            offsets = self.times[lo:hi] - self._t  # pulls into this segment, 1..n
            if self.realised:
                csum = np.cumsum(rewards)
                self.values[lo:hi] = self._regret + offsets * self._best - csum[offsets - 1]
            else:
                self.values[lo:hi] = self._regret + offsets * self._gaps[arm]
            self._next = hi
        self._regret += n * self._best - float(rewards.sum()) if self.realised else n * self._gaps[arm]
        self._t = end
        self.pulls[arm] += n


# ---- radius ---------------------------------------------------------------------------------------


def lemma2_tau_p(p: float, arms: int, horizon: int, base: int = 2) -> float:
    """The confidence tau must be computed at for Lemma 2's radius to be valid: p/(K B^2).

    Lemma 2 applies Assumption 1 at p' = p/(|Phi(b)| b^2) >= p/(K B^2), B the last possible batch
    index (the least B with base^B >= T, found with integers: a float log rounds the wrong way at
    T = 2^29). With tau at that confidence, P[|Z| > tau] <= p/(K B^2) <= p', so the exact noise
    quantile at 2p' never exceeds tau and the analyzer never wraps inside the radius. tau does not
    enter the privacy guarantee (only m, i.e. the message length, grows).
    """
    last, reach = 1, base
    while reach < horizon:
        last, reach = last + 1, reach * base
    return p / (arms * last * last)


def lemma2_radius(n: int, batch: int, active: int, p: float, sigma: float, h: float) -> float:
    """beta(b) of Lemma 2 (the square root over the first term only; FORMULAS.md A)."""
    log4 = math.log(4 * active * batch * batch / p)
    log2 = math.log(2 * active * batch * batch / p)
    return math.sqrt(log4 / (2 * n)) + sigma * math.sqrt(log2) / n + h * log2 / n


# ---- runners --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EliminationSetup:
    """Everything one run needs; built by the registry from the CLI/sweep options."""

    instance: BanditInstance
    horizon: int
    protocol: BatchProtocol | None  # None: non-private SE
    budget: Any  # an accounting budget for the run's ledger (None for non-private)
    p: float = 0.1
    batch_base: int = 2
    path: str = "per-user"
    realised: bool = False
    population: int | None = None
    ledger: str | None = None  # a durable ledger URL (returning users across runs), or None: in memory
    delta: float = 1e-6
    checkpoint_count: int = 60
    protocol_label: str = ""
    radius: str = "lemma2"  # or "authors": the released code's constants (authors_constants)
    allow_idealised_charges: bool = False  # record an idealised protocol's charges in a durable ledger
    transcript: Any = None  # a dpverify._bandits._transcripts.Transcript recording every release, or None


def _build(setup: EliminationSetup, seeds: dict[str, np.random.SeedSequence]):
    inst = setup.instance
    times = checkpoints(setup.horizon, setup.checkpoint_count)
    recorder = Recorder(inst.gaps, float(inst.means.max()), times, setup.realised)
    streams = inst.streams(seeds["environment"])
    if setup.protocol is None:
        ledger, privatizers = None, None
    else:
        if setup.ledger is None:
            ledger = acc.Ledger(setup.budget, name=setup.protocol_label)
        else:
            ledger = acc.Ledger.open(setup.ledger, setup.budget, name=setup.protocol_label)
        privatizers = [
            Privatizer(setup.protocol, ledger, s, path=setup.path, allow_idealised_charges=setup.allow_idealised_charges)
            for s in children(seeds["privatizer"], inst.k)
        ]
        if setup.transcript is not None:  # a run audit's recording (dpverify._bandits._transcripts)
            setup.transcript.ledger = ledger
            for privatizer in privatizers:
                privatizer.record_to(setup.transcript)
    durable = ledger if setup.ledger is not None else None
    feedback = BatchFeedback(streams, privatizers, UserPool(setup.population, durable), recorder)
    return recorder, feedback, ledger


def describe_protocol(protocol: Any) -> str:
    try:
        return protocol.describe()
    except (TypeError, ValueError):  # a describe() that cannot format a Fraction eps
        return f"{protocol.name} protocol, eps={float(getattr(protocol, 'epsilon', float('nan'))):g}"


def _finish(setup, recorder, learner, ledger, run_index, bits, extra) -> RunRecord:
    summary = ledger_summary(
        ledger,
        delta=setup.delta,
        path=setup.path if setup.protocol is not None else "none",
        bits_per_user=bits,
        protocol=describe_protocol(setup.protocol) if setup.protocol is not None else "none",
        idealised=bool(getattr(setup.protocol, "idealised", False)),
    )
    if setup.ledger is not None:  # the summary covers every run that charged the durable ledger
        summary["ledger_url"] = ledger.url  # without any password
        ledger.close()
    return RunRecord(
        run_index=run_index,
        times=recorder.times,
        regret=recorder.values,
        pulls=recorder.pulls,
        eliminations=[[int(a), int(t)] for a, t in learner.eliminated],
        ledger=summary,
        instance=setup.instance.describe(),
        extra=extra,
    )


class BatchChannel(Protocol):
    """What the batch loop needs from the trusted side (:class:`BatchFeedback`, or an instrumented harness)."""

    pulls: int

    def release(self, arm: int, n: int, label: str) -> float: ...

    def pull_unreleased(self, arm: int, n: int) -> None: ...


def eliminate_in_batches(
    channel: BatchChannel,
    k: int,
    horizon: int,
    schedule: Callable[[int, int], int],
    radius: Callable[[int, int, int], float],
    *,
    on_batch: Callable[[int, int, dict[int, float], float], None] | None = None,
    label: str = "b",
) -> tuple[EliminationLearner, int]:
    """The batch loop shared by Algorithm 1 and DP-SE; returns the learner and the last batch index.

    Batch b: n = ``schedule(b, |active|)`` pulls per active arm, each arm's batch released through
    ``channel`` (mu_hat = release / n, this batch only); the run stops as soon as ``horizon`` pulls
    are made (the unfinished batch is pulled, never released: Algorithm 1 line 9); then
    beta = ``radius(n, b, |active|)``, ``on_batch(b, n, mu_hat, beta)`` (instrumentation), and the
    elimination rule.
    """
    learner = EliminationLearner(k)
    prepare = getattr(channel, "prepare_round", None)  # optional (BatchFeedback: durable ledgers)
    b = 0
    while channel.pulls < horizon:
        b += 1
        n = schedule(b, len(learner.active))
        if prepare is not None:
            # the arms this round will release: arm i goes out iff T - (pulls + i n) > n
            released = [arm for i, arm in enumerate(learner.active) if horizon - (channel.pulls + i * n) > n]
            prepare(released, n, [f"{label}={b} arm={arm}" for arm in released])
        means: dict[int, float] = {}
        for arm in list(learner.active):
            left = horizon - channel.pulls
            if left <= n:
                channel.pull_unreleased(arm, left)
                break
            means[arm] = channel.release(arm, n, label=f"{label}={b} arm={arm}") / n
        if channel.pulls >= horizon:
            break
        beta = radius(n, b, len(learner.active))
        if on_batch is not None:
            on_batch(b, n, means, beta)
        learner.update(means, beta, channel.pulls)
    return learner, b


def _check_setup(setup: EliminationSetup) -> None:
    check_positive_int("horizon", setup.horizon)
    check_probability("p", setup.p)
    if isinstance(setup.batch_base, bool) or not isinstance(setup.batch_base, int) or setup.batch_base < 2:
        raise AccountingError("batch_base", setup.batch_base, "an integer >= 2 (l(b) = base^b)")


def protocol_radius(protocol: Any, p: float) -> Callable[[int, int, int], float]:
    """Lemma 2's beta(b) with the protocol's Assumption 1 constants (sigma = h = 0 without a protocol)."""

    def radius(n: int, b: int, active: int) -> float:
        sigma, h = (0.0, 0.0) if protocol is None else protocol.assumption1(n, p)
        return lemma2_radius(n, b, active, p, sigma, h)

    return radius


#: the elimination radii: Lemma 2 with each protocol's Assumption 1 constants (the paper), or the
#: constants of the authors' released code (``authors_constants``)
RADII = ("lemma2", "authors")


def authors_constants(kind: ProtocolKind | str, epsilon: float, s: float = 1.0) -> tuple[float, float]:
    """(sigma, h) of the ICLR 2023 authors' released simulation code, in Lemma 2's radius.

    The released ``confidence_interval`` of ``BatchSEDistDP`` uses sigma = sqrt(2)/eps, h = 1/eps;
    that of ``BatchSEDistRDP`` sigma = 2/eps + sqrt(2)/(s eps), h = 1/(s eps); both in the same
    formula as Lemma 2, sqrt(log(4 K b^2/p)/(2n)) + sigma sqrt(log(2 K b^2/p))/n + h log(2 K b^2/p)/n,
    with constants that do not depend on the batch size n (Lemma 2's per-protocol constants,
    ``protocol.assumption1(n, p)``, do). Only those two protocols have released constants.
    """
    kind = ProtocolKind.parse(kind, "kind")
    eps = float(epsilon)
    if kind is ProtocolKind.DIST_DP:
        return math.sqrt(2.0) / eps, 1.0 / eps
    if kind is ProtocolKind.DIST_RDP:
        return 2.0 / eps + math.sqrt(2.0) / (float(s) * eps), 1.0 / (float(s) * eps)
    raise AccountingError("radius", "authors", f"'lemma2' for the {kind!r} protocol (the released code has constants for dist-dp and dist-rdp only)")


def authors_radius(protocol: Any, p: float) -> Callable[[int, int, int], float]:
    """Lemma 2's beta(b) with :func:`authors_constants` in place of the protocol's Assumption 1 constants."""
    sigma, h = authors_constants(protocol.kind, protocol.epsilon, getattr(protocol, "s", 1.0))

    def radius(n: int, b: int, active: int) -> float:
        return lemma2_radius(n, b, active, p, sigma, h)

    return radius


def algorithm1_rules(setup: EliminationSetup) -> tuple[Callable[[int, int], int], Callable[[int, int, int], float]]:
    """Algorithm 1's batch schedule l(b) = base^b and its radius beta(n, b, |active|) (Lemma 2, or the
    released code's constants): the rules :func:`run_batch_elimination` runs, and the transcript
    engine tabulates (``dpverify._bandits._transcripts``)."""
    rule = authors_radius(setup.protocol, setup.p) if setup.radius == "authors" else protocol_radius(setup.protocol, setup.p)
    return (lambda b, active: setup.batch_base**b), rule


def dp_se_rules(setup: EliminationSetup, epsilon: float) -> tuple[Callable[[int, int], int], Callable[[int, int, int], float]]:
    """DP-SE's epoch schedule R_e and width w_e (:func:`dp_se_epoch`), as :func:`algorithm1_rules`; the
    width's Laplace term uses the executed noise (the float-safe protocol's ``noise_epsilon`` and
    ``laplace_tail_factor``)."""
    protocol = setup.protocol
    noise_eps = float(getattr(protocol, "noise_epsilon", epsilon))
    tail = protocol.laplace_tail_factor(1) if hasattr(protocol, "laplace_tail_factor") else 1.0
    return ((lambda e, active: dp_se_epoch(e, active, setup.p, epsilon)[0]),
            (lambda r_e, e, active: dp_se_epoch(e, active, setup.p, epsilon, noise_epsilon=noise_eps, tail_factor=tail)[1]))


def run_batch_elimination(setup: EliminationSetup, seeds: dict[str, np.random.SeedSequence], run_index: int = 0) -> RunRecord:
    """Algorithm 1 with the setup's protocol (or non-private if ``protocol`` is None)."""
    _check_setup(setup)
    if setup.radius not in RADII:
        raise AccountingError("radius", setup.radius, f"one of {RADII}")
    if setup.radius == "authors" and setup.protocol is None:
        raise AccountingError("radius", "authors", "'lemma2' for non-private SE (the released constants are for dist-dp-se and dist-rdp-se)")
    schedule, rule = algorithm1_rules(setup)
    recorder, feedback, ledger = _build(setup, seeds)
    radii: list[float] = []
    try:
        learner, b = eliminate_in_batches(
            feedback,
            setup.instance.k,
            setup.horizon,
            schedule,
            rule,
            on_batch=lambda b, n, means, beta: radii.append(beta),
        )
    except BaseException:
        if setup.ledger is not None:  # a refused batch stops the run: release the connection
            ledger.close()
        raise
    extra = {"batches": b, "final_active": learner.active, "radius_last": radii[-1] if radii else None,
             "radius": "authors' released code (sigma, h independent of n)" if setup.radius == "authors" else "Lemma 2 (per-protocol constants)"}
    bits = None
    params = getattr(setup.protocol, "parameters", None)
    if params is not None:
        # m = n g + 2 tau + 1 grows with n: the largest released batch sends the longest message
        bits = params(setup.batch_base ** len(radii)).bits_per_user if radii else 0
    return _finish(setup, recorder, learner, ledger, run_index, bits, extra)


def dp_se_epoch(e: int, active: int, p: float, epsilon: float, *, noise_epsilon: float | None = None, tail_factor: float = 1.0) -> tuple[int, float]:
    """(R_e, w_e) of DP-SE's epoch e with |S| = active arms (Sajed & Sheffet 2019).

    R_e uses ``epsilon``; the radius's Laplace term uses the executed noise: ``noise_epsilon``
    (default ``epsilon``) and ``tail_factor``, the most by which its tail exceeds e^{-eps x}
    (1 for the continuous Laplace; the float-safe privatizer's ``laplace_tail_factor``)."""
    delta_e = 2.0**-e
    l8 = math.log(8 * active * e * e / p)
    l4 = math.log(4 * active * e * e / p)
    r_e = 1 + math.ceil(max(32 * l8 / delta_e**2, 8 * l4 / (epsilon * delta_e)))
    eps_noise = epsilon if noise_epsilon is None else noise_epsilon
    width = math.sqrt(l8 / (2 * r_e)) + (l4 + math.log(tail_factor)) / (eps_noise * r_e)
    return r_e, width


def run_dp_se(setup: EliminationSetup, epsilon: float, seeds: dict[str, np.random.SeedSequence], run_index: int = 0) -> RunRecord:
    """DP-SE: epochs of R_e pulls per active arm, one Laplace(1/eps) per arm's epoch sum (float-safe:
    the grid's exact discrete Laplace, module docstring)."""
    _check_setup(setup)
    if setup.protocol is None:
        raise AccountingError("protocol", None, "central_laplace_protocol(eps) for DP-SE")
    recorder, feedback, ledger = _build(setup, seeds)
    schedule, width = dp_se_rules(setup, epsilon)
    learner, e = eliminate_in_batches(feedback, setup.instance.k, setup.horizon, schedule, width, label="e")
    return _finish(setup, recorder, learner, ledger, run_index, 64, {"epochs": e, "final_active": learner.active})
