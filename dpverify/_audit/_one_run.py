"""One-run audits of a deployed run: canary users, one execution, a lower bound on epsilon (issue 33).

Every other audit repeats a mechanism or a run many times on two neighbouring inputs. A one-run
audit (Steinke, Nasr & Jagielski 2023; the bound in :mod:`._one_run_bound`) runs the algorithm
*once*, through the plain runner -- the real code path, its privatizer, its ledger -- with m
canary users among the T users: each canary's reward is a fair coin S_i in {0, 1} on every arm
(her table row is all S_i). An attacker reads the view, scores every canary from her own message
and guesses her bit on the k most confident canaries (abstaining on the rest); the number of
correct guesses becomes a lower bound on epsilon at the stated confidence.

Views. **server** (the local model, LDP-UCB-L/-B/-LS/-BS and LDP-SE): the server sees every
user's message, and a canary's message depends on her bit alone, so the canaries do not interfere
(one run can be tight: with eps = 1 and messages whose likelihood ratio reaches e^eps, the most
extreme messages are guessed right with probability exactly e/(1 + e)). The run's randomness
apart from the canaries' bits (the other users' rewards, the learner's ties, the arms the canaries
pull) is independent of the bits, and the canaries' slots are fixed before the run (a random
subset of the draw indices, from a stream of their own), so every guess is post-processing of an
eps-DP-per-canary output: the theorem applies.

Where the canaries sit. The runners draw users' rewards arm by arm (``RewardStreams.draw``) and
pass them straight to the privatizer, which records each response (UCB: ``UCBTranscript``;
elimination: ``Transcript``); :class:`CanaryInstance` wraps the run's instance so that draw number
j (in the order the run draws) is a canary when j is in the canary set. A canary whose response
the learner never reads (UCB's buffers pre-draw up to a chunk per arm) is not observed: the
attacker abstains there (or guesses blindly when fewer than k are observed: right with
probability 1/2, still valid).

Choosing k. r = k must not depend on the run. k is chosen on a *pilot*: the same privatizer
(the same code: ``LocalCurator.respond`` / ``protocol.messages``) on independent canary bits from
a stream of its own; the k whose predicted bound is largest is used.

Speed: the plain runners are numba kernels (UCB) and one ``messages`` call per batch (LDP-SE); a
T = 10^6 run with 10^5 canaries takes about a second (``benchmarks/bench_one_run.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from accounting import AccountingError
from accounting.internal import check_positive_int

from .._bandits._builtin import run_budget, se_setup, ucb_setup
from .._bandits._elimination import run_batch_elimination
from .._bandits._environments import BanditInstance, bernoulli_instance
from .._bandits._runner import RunConfig, seed_streams
from .._bandits._transcripts import Transcript
from .._bandits._transcripts_ucb import UCBTranscript
from .._bandits._ucb import UCB_ALGORITHMS, LocalCurator, run_ucb
from .._executed._kinds import CuratorKind
from ._one_run_bound import one_run_epsilon, one_run_rhs_float

__all__ = ["ONE_RUN_ALGORITHMS", "CanaryInstance", "OneRunAudit", "one_run_audit"]

#: algorithms a one-run audit supports: the local model (every message seen in isolation)
ONE_RUN_ALGORITHMS = ("ldp-ucb-l", "ldp-ucb-b", "ldp-ucb-ls", "ldp-ucb-bs", "ldp-se")


# ---- canaries in the run's reward streams -----------------------------------------------------------


class CanaryStreams:
    """The run's reward streams with canaries: draw j (in the run's order) is canary c's bit when
    ``slots[c] == j``; records every draw (arm, first draw index, count) to locate responses."""

    __slots__ = ("_base", "_slots", "_bits", "_next", "draws")

    def __init__(self, base: Any, slots: np.ndarray, bits: np.ndarray) -> None:
        self._base, self._slots, self._bits = base, slots, bits
        self._next = 0
        self.draws: list[tuple[int, int, int]] = []

    def draw(self, arm: int, n: int) -> np.ndarray:
        rewards = np.array(self._base.draw(arm, n), dtype=np.float64, copy=True)
        lo, hi = np.searchsorted(self._slots, [self._next, self._next + n])
        rewards[self._slots[lo:hi] - self._next] = self._bits[lo:hi]
        self.draws.append((int(arm), self._next, int(n)))
        self._next += n
        return rewards

    def rounded_sum(self, arm: int, n: int, g: int) -> int:
        raise AccountingError("path", "aggregate", "'per-user' for a one-run audit (every canary's message is drawn)")

    @property
    def drawn(self) -> np.ndarray:
        return self._base.drawn


@dataclass(frozen=True, eq=False)
class CanaryInstance(BanditInstance):
    """``base``'s arms, with canary users at draw indices ``slots`` (sorted) whose rewards are ``bits``."""

    base: BanditInstance | None = None
    slots: np.ndarray | None = None
    bits: np.ndarray | None = None
    issued: list = field(default_factory=list, compare=False, repr=False)

    @classmethod
    def wrap(cls, base: BanditInstance, slots: np.ndarray, bits: np.ndarray) -> "CanaryInstance":
        return cls(f"{base.name} + {slots.size} canaries", base.arms, dict(base.options), base, slots, bits)

    def streams(self, seed: np.random.SeedSequence) -> CanaryStreams:  # type: ignore[override]
        stream = CanaryStreams(self.base.streams(seed), self.slots, self.bits)
        self.issued.append(stream)
        return stream


# ---- the result ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OneRunAudit:
    """One run's audit: the view, the canaries, the guesses and the bound at the stated confidence."""

    algorithm: str
    view: str
    users: int
    canaries: int
    observed: int
    guesses: int
    correct: int
    level: float
    delta: float
    epsilon_lower: float
    claim_epsilon: float
    seconds: float
    planted: str = ""

    @property
    def confidence(self) -> float:
        return 1.0 - self.level

    @property
    def verdict(self) -> str:
        """"violated" when the certified lower bound exceeds the claim; "no power" when it is 0."""
        if self.epsilon_lower > self.claim_epsilon:
            return "violated"
        return "holds" if self.epsilon_lower > 0 else "no power"

    @property
    def canaries_per_second(self) -> float:
        return self.canaries / self.seconds if self.seconds > 0 else float("inf")

    def as_dict(self) -> dict:
        return {
            "mode": "one-run", "algorithm": self.algorithm, "view": self.view, "users": self.users, "canaries": self.canaries,
            "observed": self.observed, "guesses": self.guesses, "correct": self.correct, "confidence": self.confidence,
            "delta": self.delta, "epsilon_lower": self.epsilon_lower, "claim_epsilon": self.claim_epsilon, "verdict": self.verdict,
            "seconds": self.seconds, "canaries_per_second": self.canaries_per_second, **({"planted": self.planted} if self.planted else {}),
        }

    def describe(self) -> str:
        return (f"{self.algorithm} one-run audit ({self.view} view): {self.users} users, {self.canaries} canaries "
                f"({self.observed} observed), {self.guesses} guesses, {self.correct} correct -> epsilon >= {self.epsilon_lower:.4f} "
                f"at {self.confidence:.0%} confidence (claim {self.claim_epsilon:.4g}): {self.verdict}")


# ---- guessing ----------------------------------------------------------------------------------------


def _guess(scores: np.ndarray, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the k most confident scores (|score - 1/2|, ties in random order) and their guessed bits."""
    order = np.lexsort((rng.random(scores.size), -np.abs(scores - 0.5)))[:k]
    return order, (scores[order] > 0.5).astype(np.int64)


def _choose_guesses(pilot_scores: np.ndarray, pilot_bits: np.ndarray, m: int, level: float, delta: float, rng: np.random.Generator) -> int:
    """The number of guesses r for m canaries whose predicted bound (pilot accuracy) is largest."""
    n = pilot_scores.size
    order, guessed = _guess(pilot_scores, n, rng)
    right = np.cumsum(guessed == pilot_bits[order])
    best_k, best_eps = m, -1.0
    for q in np.unique(np.concatenate([np.linspace(0.02, 1.0, 50), [1.0]])):
        top = max(1, int(q * n))
        k = max(1, int(q * m))
        accuracy = right[top - 1] / top
        accuracy -= np.sqrt(accuracy * (1.0 - accuracy) / top)  # one standard error down: small pilots do not win by luck
        v = int(round(accuracy * k))
        # float search of the bound at the predicted count (a prediction only: never reported)
        lo, hi = 0.0, 20.0
        if one_run_rhs_float(0.0, delta, m, k, v) > level:
            continue
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if one_run_rhs_float(mid, delta, m, k, v) <= level else (lo, mid)
        if lo > best_eps:
            best_k, best_eps = k, lo
    return best_k


# ---- the audit --------------------------------------------------------------------------------------


def _ucb_run(algorithm: str, instance: BanditInstance, horizon: int, epsilon: float, noise_epsilon: float, seeds: dict, chunk: int,
             ) -> tuple[np.ndarray, np.ndarray, Callable[[np.ndarray, np.random.Generator], np.ndarray], float]:
    """(responses in draw order, read mask in draw order, the pilot, the claim) of one plain UCB run."""
    config = RunConfig(algorithm, instance, horizon, epsilon=noise_epsilon).validate()
    transcript = UCBTranscript()
    setup = replace(ucb_setup(config, instance), transcript=transcript, **({"chunk": chunk} if chunk else {}))
    record = run_ucb(setup, seeds)
    responses = np.concatenate(transcript.responses)
    stream = instance.issued[-1]
    read = np.zeros(responses.size, dtype=bool)
    taken = np.zeros(instance.k, dtype=np.int64)
    for arm, start, n in stream.draws:  # arm a's responses are read in order, the first pulls[a] of them
        use = int(min(n, max(0, record.pulls[arm] - taken[arm])))
        read[start:start + use] = True
        taken[arm] += n
    curator = LocalCurator(UCB_ALGORITHMS[algorithm][0], noise_epsilon)
    claim = LocalCurator(UCB_ALGORITHMS[algorithm][0], epsilon).mechanism().pure().epsilon
    if curator.kind is CuratorKind.CTL_S:  # the response is s(reward) + noise: rescale so that a canary's 0 and 1 sit at 0 and 1
        lo, hi = 0.5, 1.0 / (1.0 + np.exp(-1.0))
        responses = (responses - lo) / (hi - lo)
        return responses, read, lambda bits, rng: (curator.respond(bits.astype(np.float64), rng) - lo) / (hi - lo), float(claim)
    return responses, read, lambda bits, rng: curator.respond(bits.astype(np.float64), rng), float(claim)


def _centred(views: np.ndarray, g: int, modulus: int) -> np.ndarray:
    """A local message (xhat + noise) mod m in reward units, centred: the representative in (-m/2, m/2]."""
    v = np.asarray(views, dtype=np.int64) % modulus
    v = np.where(v > modulus // 2, v - modulus, v)
    return v / g


def _se_run(algorithm: str, instance: BanditInstance, horizon: int, epsilon: float, noise_epsilon: float, seeds: dict, chunk: int,
            ) -> tuple[np.ndarray, np.ndarray, Callable[[np.ndarray, np.random.Generator], np.ndarray], float]:
    config = RunConfig(algorithm, instance, horizon, epsilon=noise_epsilon).validate()
    transcript = Transcript()
    setup, _ = se_setup(config, instance)
    setup = replace(setup, transcript=transcript)
    run_batch_elimination(setup, seeds)
    protocol = setup.protocol
    parts = []
    for rel in transcript.releases:
        params = protocol.parameters(rel.n)
        parts.append(_centred(rel.view, params.g, params.m))
    responses = np.concatenate(parts) if parts else np.zeros(0)
    read = np.ones(responses.size, dtype=bool)
    honest = RunConfig(algorithm, instance, horizon, epsilon=epsilon).validate()
    claim = run_budget(honest, instance.k).epsilon

    def pilot(bits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        params = protocol.parameters(bits.size)
        return _centred(protocol.messages(bits.astype(np.float64), rng), params.g, params.m)

    return responses, read, pilot, float(claim)


def one_run_audit(algorithm: str, *, epsilon: float, horizon: int, canaries: int, arms: int = 2, instance: BanditInstance | None = None,
                  level: float = 0.05, delta: float = 0.0, seed: int = 0, guesses: int | None = None, pilot: int = 100_000,
                  planted_scale: float = 1.0, chunk: int | None = None) -> OneRunAudit:
    """One run of ``algorithm`` at ``epsilon`` with ``canaries`` canary users among ``horizon``; the one-run bound.

    ``instance``: the other users' rewards (default Bernoulli arms 0.9, 0.8, ...). ``guesses``: r
    (default: chosen on a pilot, see the module docs). ``planted_scale``: a planted bug -- the
    privatizer draws its noise at ``planted_scale`` times the claimed epsilon (its noise scale
    divided by that factor) while the claim stays the honest one; 1 is the correct run. ``chunk``:
    the UCB runner's responses pre-drawn per arm (default the runner's, 4096; small runs use less,
    so that fewer canaries sit in unread buffers).
    """
    if algorithm not in ONE_RUN_ALGORITHMS:
        raise AccountingError("algorithm", algorithm, f"one of {ONE_RUN_ALGORITHMS} (the local model: every message seen in isolation)")
    check_positive_int("horizon", horizon)
    check_positive_int("canaries", canaries)
    if canaries > horizon:
        raise AccountingError("canaries", canaries, f"an integer in [1, horizon] = [1, {horizon}]")
    if not planted_scale > 0:
        raise AccountingError("planted_scale", planted_scale, "a positive factor (1: the correct run)")
    started = time.perf_counter()
    root = np.random.SeedSequence(seed, spawn_key=(33,))
    canary_seq, pilot_seq, tie_seq = root.spawn(3)
    canary_rng = np.random.default_rng(canary_seq)
    base = instance if instance is not None else bernoulli_instance([0.9 - 0.1 * a for a in range(arms)])
    span = horizon
    if algorithm == "ldp-se":
        # Algorithm 1 never releases its last, unfinished batch (at most l pulls, while the earlier
        # rounds released at least (l - 1)/(base - 1)): the first (T - 1) // base pulls are always
        # released, whatever the run does, so the canaries sit there and every one is observed
        span = (horizon - 1) // RunConfig("ldp-se", base, horizon, epsilon=float(epsilon)).batch_base
    if canaries > span:
        raise AccountingError("canaries", canaries, f"an integer in [1, {span}] (the pulls every {algorithm} run of horizon {horizon} releases)")
    slots = np.sort(canary_rng.choice(span, size=canaries, replace=False)).astype(np.int64)
    bits = canary_rng.integers(0, 2, size=canaries).astype(np.int64)
    wrapped = CanaryInstance.wrap(base, slots, bits.astype(np.float64))
    run = _se_run if algorithm == "ldp-se" else _ucb_run
    responses, read, pilot_fn, claim = run(algorithm, wrapped, horizon, float(epsilon), float(epsilon) * planted_scale, seed_streams(seed, 0), chunk or 0)
    inside = slots < responses.size
    observed = np.zeros(canaries, dtype=bool)
    observed[inside] = read[slots[inside]]
    scores = np.full(canaries, 0.5)
    scores[observed] = responses[slots[observed]]
    tie_rng = np.random.default_rng(tie_seq)
    if guesses is None:
        pilot_rng = np.random.default_rng(pilot_seq)
        pilot_bits = pilot_rng.integers(0, 2, size=min(pilot, canaries))
        guesses = _choose_guesses(pilot_fn(pilot_bits, pilot_rng), pilot_bits, canaries, level, delta, pilot_rng)
    k = int(guesses)
    if not 1 <= k <= canaries:
        raise AccountingError("guesses", guesses, f"an integer in [1, canaries] = [1, {canaries}]")
    seen = np.flatnonzero(observed)
    pick, guess = _guess(scores[seen], min(k, seen.size), tie_rng)
    correct = int(np.sum(guess == bits[seen[pick]]))
    if k > seen.size:  # blind guesses ("1") on canaries never observed: right with probability 1/2
        blind = np.flatnonzero(~observed)[: k - seen.size]
        correct += int(np.sum(bits[blind] == 1))
    bound = one_run_epsilon(canaries, k, correct, level=level, delta=delta)
    planted = "" if planted_scale == 1.0 else f"privatizer noise drawn at {planted_scale:g} x the claimed epsilon (scale / {planted_scale:g})"
    return OneRunAudit(algorithm, "server", int(horizon), int(canaries), int(observed.sum()), k, correct, float(level), float(delta),
                       bound, claim, time.perf_counter() - started, planted)
