"""Server-view one-run audits of the central and distributed algorithms (issue 33).

The local model's one-run audit (:mod:`._one_run`) reads each canary's own message. Here the
server sees one *aggregate* per release: the SecAgg output yhat = (sum_i xhat_i + Z) mod m
(Dist-DP-SE, Pólya noise; Dist-RDP-SE, Skellam; Dist-CDP-SE, discrete Gaussian), the analyzer's
noisy sum (CDP-SE) or the released estimate (DP-SE, central discrete Laplace on the grid 1/g).

**Threat model** (the standard audit assumption): the auditor knows every other user's data --
here the other users' rewards, Bernoulli, so their roundings xhat_i = g r_i are exact -- and not
the noise. **Canaries**: the first user of every release is a canary whose reward is a fair coin
S (on every arm: her table row is all S), at most one per release, so the canaries do not
interfere: release j's view depends on one canary bit, the known rewards and the noise. **Score**:
the release minus the known users' contribution, in reward units, (yhat - g sum_known) mod m
centred, / g (= S + Z/g when the noise does not wrap), or estimate - sum_known (DP-SE); the guess
is S = 1 when the score is above 1/2, the confidence |score - 1/2| (the likelihood ratio of S = 1
against S = 0 is monotone in the score for the three noises, and constant beyond [0, 1] for the
discrete Laplace: the extreme releases are right with probability exactly e^eps / (1 + e^eps)).

Why the theorem applies. Canary j's bit enters release j only; later releases depend on it
through the learner (post-processing of release j), so the whole run is as private in S_j as
release j: the protocol's per-user guarantee at that batch size (the run's claim, its ledger's
budget, bounds all of them). The canary set is fixed before the run: release slot j of run s,
j < K x (number of batch sizes), a bound on the releases any run makes; a slot whose release never
happens (the arm was eliminated, the run ended) is a canary nobody observes (guessed blindly if
the guesses need it, right with probability 1/2: still valid).

**Seeds pooled.** A run of Algorithm 1 makes about K log2(T) releases, so one run has only that many
canaries: ``seeds`` independent runs (seed, seed+1, ...) are pooled, m = seeds x slots per run.
Pooling is one mechanism on m canaries (each canary in one run), so the bound is one bound on the
pooled count; the result says how many seeds were pooled. (A deployment audits its own run: the
pooled runs here are the same code on the same instance, as a deployment's repeated campaigns.)

**Guesses.** k = q x (the releases of the all-active schedule) is fixed before the run: q chosen on
a pilot of the claimed protocol (its own vectorised ``server_views`` / ``estimate_sums`` on independent
canary bits, a stream of its own, as :mod:`._one_run` does) to maximise the predicted pure-eps bound,
or for a claim that is not pure (Dist-RDP-SE, Dist-CDP-SE) the f-DP form's mu-GDP bound; so k does
not depend on the run.

**Bounds.** The pure-eps and (eps, delta) bounds of Steinke, Nasr & Jagielski
(:func:`~._one_run_bound.one_run_epsilon`) and the f-DP form (:mod:`._one_run_fdp`): the test of the
claim's own certified trade-off curve (the verdict: one test at the level), the f-DP form's epsilon
at the claim's delta and its mu-GDP lower bound.

The run is the plain runner (``run_batch_elimination`` / ``run_dp_se``) with its privatizers, its
ledger and a :class:`~dpverify._bandits._transcripts.Transcript` recording what the server saw; no
engine of its own. (The lockstep engine shares each release's users across runs, and canary runs
differ in their canaries' bits, so it does not apply; a run of T = 20,480 users is ~10 ms.)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

import accounting as acc
from accounting import AccountingError, TradeOffCurve
from accounting.internal import check_positive_int

from .._bandits._builtin import batch_sizes, dp_se_setup, run_budget, se_setup
from .._bandits._elimination import run_batch_elimination, run_dp_se
from .._bandits._environments import BanditInstance, bernoulli_instance
from .._bandits._runner import RunConfig, seed_streams
from .._bandits._transcripts import Transcript
from .._executed._protocols import DistributedProtocol
from ._one_run import _guess
from ._one_run_bound import one_run_epsilon
from ._one_run_fdp import fdp_epsilon, fdp_mu, fdp_rejects

__all__ = ["SERVER_ALGORITHMS", "ServerOneRunAudit", "claim_curve_of", "server_one_run_audit"]

#: the central and distributed algorithms a server-view one-run audit supports
SERVER_ALGORITHMS = ("dist-dp-se", "dist-rdp-se", "dist-cdp-se", "cdp-se", "dp-se")


class _ReleaseCanaryStreams:
    """The run's reward streams; the first user of the j-th draw (= the j-th release) is canary j."""

    __slots__ = ("_base", "_bits", "calls", "known")

    def __init__(self, base: Any, bits: np.ndarray) -> None:
        self._base, self._bits = base, bits
        self.known: list[float] = []  # the other users' reward sum of every release (the auditor knows it)
        self.calls = 0

    def draw(self, arm: int, n: int) -> np.ndarray:
        rewards = np.array(self._base.draw(arm, n), dtype=np.float64, copy=True)
        j = self.calls
        if j >= self._bits.size:
            raise AccountingError("canaries", self._bits.size, f"at least one slot per release (release {j} has none)")
        rewards[0] = self._bits[j]
        self.known.append(float(rewards[1:].sum()))
        self.calls += 1
        return rewards

    def rounded_sum(self, arm: int, n: int, g: int) -> int:
        raise AccountingError("path", "aggregate", "'per-user' for a one-run audit (the canary's reward is drawn)")

    @property
    def drawn(self) -> np.ndarray:
        return self._base.drawn


@dataclass(frozen=True, eq=False)
class _ReleaseCanaryInstance(BanditInstance):
    base: BanditInstance | None = None
    bits: np.ndarray | None = None
    issued: list = field(default_factory=list, compare=False, repr=False)

    def streams(self, seed: np.random.SeedSequence) -> _ReleaseCanaryStreams:  # type: ignore[override]
        stream = _ReleaseCanaryStreams(self.base.streams(seed), self.bits)
        self.issued.append(stream)
        return stream


@dataclass(frozen=True)
class ServerOneRunAudit:
    """Pooled server-view one-run audit: the view, the canaries, the guesses, and the bounds."""

    algorithm: str
    seeds_pooled: int
    users_per_run: int
    canaries: int
    observed: int
    guesses: int
    correct: int
    level: float
    claim: str
    claim_epsilon: float
    claim_delta: float
    epsilon_pure: float  # SNJ, delta = 0
    epsilon_approx: float  # SNJ at the claim's delta
    epsilon_fdp: float  # the f-DP form at the claim's delta
    fdp_rejects_claim: bool  # the f-DP test of the claim's certified trade-off curve
    curve: TradeOffCurve
    mu_lower: float  # the f-DP form's mu-GDP lower bound (meaningful for the Gaussian-like protocols)
    seconds: float
    planted: str = ""
    view: str = "server (one aggregate per release)"

    @property
    def verdict(self) -> str:
        """One test at the level: the f-DP test of the claim's curve (for a pure claim, eps-DP's curve). The
        eps bounds are reported beside it, not OR-ed into it (that would spend the level twice)."""
        return "violated" if self.fdp_rejects_claim else "holds"

    @property
    def canaries_per_second(self) -> float:
        return self.canaries / self.seconds if self.seconds > 0 else math.inf

    def as_dict(self) -> dict:
        return {
            "mode": "one-run", "view": self.view, "algorithm": self.algorithm, "seeds_pooled": self.seeds_pooled,
            "users_per_run": self.users_per_run, "canaries": self.canaries, "observed": self.observed, "guesses": self.guesses,
            "correct": self.correct, "confidence": 1 - self.level, "claim": self.claim, "claim_epsilon": self.claim_epsilon,
            "claim_delta": self.claim_delta, "epsilon_lower_pure": self.epsilon_pure, "epsilon_lower_approx": self.epsilon_approx,
            "epsilon_lower_fdp": self.epsilon_fdp, "mu_gdp_lower_fdp": self.mu_lower, "fdp_rejects_claim_curve": self.fdp_rejects_claim, "verdict": self.verdict,
            "seconds": self.seconds, "canaries_per_second": self.canaries_per_second, **({"planted": self.planted} if self.planted else {}),
        }

    def describe(self) -> str:
        return (f"{self.algorithm} one-run audit, server view, {self.seeds_pooled} seeds pooled: {self.canaries} canaries "
                f"({self.observed} observed), {self.guesses} guesses, {self.correct} correct -> eps >= {self.epsilon_pure:.4f} (pure), "
                f">= {self.epsilon_approx:.4f} (delta {self.claim_delta:.3g}), f-DP form {self.epsilon_fdp:.4f}, mu-GDP >= {self.mu_lower:.4f}; claim {self.claim}: "
                f"f-DP test {'rejects' if self.fdp_rejects_claim else 'holds'} at {1 - self.level:.0%}: {self.verdict}")


# ---- the claim and its curve ---------------------------------------------------------------------


def _config(algorithm: str, instance: BanditInstance, horizon: int, epsilon: float, delta: float) -> RunConfig:
    return RunConfig(algorithm, instance, horizon, epsilon=float(epsilon), delta=float(delta)).validate()


def _mechanisms(protocol: Any, horizon: int, base: int) -> list[Any]:
    if isinstance(protocol, DistributedProtocol):
        return [protocol.mechanism(n) for n in batch_sizes(horizon, base)]
    return [protocol.mechanism(1)]


def _delta_upper(mechanism: Any, epsilon: float) -> float:
    """A certified upper bound on the mechanism's delta(eps) (its PLD; the truncation's TV paid as the ledger pays it)."""
    tv = 0.0
    if isinstance(mechanism, acc.WithinTotalVariation):
        mechanism, tv = mechanism.mechanism, float(mechanism.total_variation)
    d = float(acc.pld_delta(mechanism, 1, float(epsilon)).delta)
    return min(1.0, d + (1.0 + math.exp(epsilon)) * tv * (1 + 1e-12))


def claim_curve_of(algorithm: str, mechanisms: list[Any], budget: Any) -> TradeOffCurve:
    """The claim's certified trade-off curve: pure eps for the pure protocols; for the others the envelope of
    the (eps, delta(eps)) guarantees of every batch size's mechanism on a grid of eps (certified PLD upper
    bounds, max over batch sizes: a curve below each canary's true f, so the test is conservative)."""
    if isinstance(budget, acc.PureDP):
        return TradeOffCurve.from_approx_dp(float(budget.epsilon), 0.0)
    grid = tuple(float(e) for e in np.linspace(0.0, 6.0, 25))
    deltas = []
    for e in grid:
        worst = 0.0
        for mech in mechanisms:
            try:
                worst = max(worst, _delta_upper(mech, e))
            except AccountingError:  # a batch size the PLD cannot take (a large Dist-CDP-SE sum): the zCDP claim's own bound
                worst = max(worst, float(acc.rdp_to_delta(budget.to_rdp(), max(e, 1e-9)).delta) if isinstance(budget, acc.ZCDP) else 1.0)
        deltas.append(min(worst, 1.0 - 1e-15))
    return TradeOffCurve(grid, tuple(deltas), source=f"{algorithm}: certified delta(eps) of its batch mechanisms, eps grid 0..6")


def _claim(algorithm: str, config: RunConfig, instance: BanditInstance, delta: float) -> tuple[Any, float, float, str, list[Any]]:
    if algorithm == "dp-se":
        setup = dp_se_setup(config, instance)
        budget = setup.budget
        mechanisms = [setup.protocol.mechanism(1)]
    else:
        budget = run_budget(config, instance.k)
        setup, _ = se_setup(config, instance)
        mechanisms = _mechanisms(setup.protocol, config.horizon, config.batch_base)
    if isinstance(budget, acc.PureDP):
        return budget, float(budget.epsilon), 0.0, f"{float(budget.epsilon):.6g}-DP per user", mechanisms
    if isinstance(budget, acc.ApproxDP):
        return budget, float(budget.epsilon), float(budget.delta), f"({float(budget.epsilon):.6g}, {float(budget.delta):.3g})-DP per user", mechanisms
    eps = float(acc.zcdp_to_epsilon(budget, delta).epsilon)
    return budget, eps, float(delta), f"{float(budget.rho):.6g}-zCDP per user (eps {eps:.4g} at delta {delta:.3g})", mechanisms


def _dp_se_epochs(horizon: int, arms: int, config: RunConfig) -> int:
    """The epochs e whose R_e (at most ``arms`` active) fits in ``horizon``: a bound on DP-SE's releases per arm."""
    from .._bandits._elimination import dp_se_epoch

    e = 0
    while dp_se_epoch(e + 1, 1, config.confidence, float(config.epsilon))[0] < horizon:
        e += 1
    return max(e, 1)


def _all_active_releases(algorithm: str, config: RunConfig, arms: int) -> int:
    """The releases of a run in which no arm is ever eliminated (the schedule alone decides them)."""
    from .._bandits._elimination import dp_se_epoch

    pulls, releases, b = 0, 0, 0
    while True:
        b += 1
        n = dp_se_epoch(b, arms, config.confidence, float(config.epsilon))[0] if algorithm == "dp-se" else config.batch_base**b
        for _ in range(arms):
            if config.horizon - pulls <= n:
                return releases
            pulls += n
            releases += 1


# ---- scores ------------------------------------------------------------------------------------


def _centred(view: int, modulus: int) -> int:
    v = int(view) % modulus
    return v - modulus if v > modulus // 2 else v


def _scores(protocol: Any, releases: list, known: list[float]) -> np.ndarray:
    """Each release's score in reward units: the release minus the known users' contribution."""
    out = np.empty(len(releases))
    for j, (rel, k) in enumerate(zip(releases, known)):
        if isinstance(protocol, DistributedProtocol):
            params = protocol.parameters(rel.n)
            out[j] = _centred(int(np.asarray(rel.view).reshape(-1)[0]) - params.g * int(round(k)), params.m) / params.g
        else:  # a central release of the estimate itself
            out[j] = float(np.asarray(rel.view).reshape(-1)[0]) - k
    return out


def _pilot_scores(protocol: Any, bits: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Scores of independent pilot releases of ``n`` users (the canary first, the others' rewards 0, known),
    drawn by the protocol's own vectorised release (``server_views`` / ``estimate_sums``)."""
    out = np.empty(bits.size)
    for s in (0, 1):
        where = np.flatnonzero(bits == s)
        if where.size == 0:
            continue
        rewards = np.zeros(n)
        rewards[0] = s
        if isinstance(protocol, DistributedProtocol):
            params = protocol.parameters(n)
            views = np.asarray(protocol.server_views(rewards, rng, int(where.size)), dtype=np.int64) % params.m
            out[where] = np.where(views > params.m // 2, views - params.m, views) / params.g
        else:
            out[where] = protocol.estimate_sums(rewards, rng, int(where.size))
    return out


def _choose_fraction(scores: np.ndarray, bits: np.ndarray, m: int, level: float, rng: np.random.Generator, gaussian: bool = False) -> float:
    """The guessed fraction q of m canaries whose predicted bound (the pilot's accuracy at that fraction, one
    standard error down) is largest: the pure-eps bound, or for a Gaussian-like claim (``gaussian``) the f-DP
    form's mu-GDP bound -- the scale on which a Gaussian mechanism with the wrong noise departs from its claim."""
    n = scores.size
    order, guessed = _guess(scores, n, rng)
    right = np.cumsum(guessed == bits[order])
    best_q, best = 1.0, -1.0
    for q in np.linspace(0.05, 1.0, 20):
        top = max(1, int(q * n))
        accuracy = right[top - 1] / top
        accuracy -= math.sqrt(max(accuracy * (1 - accuracy), 1e-12) / top)
        k = max(1, int(q * m))
        v = min(k, max(0, int(round(accuracy * k))))
        value = fdp_mu(max(m, k), k, v, level=level, certify=False) if gaussian else one_run_epsilon(m, k, v, level=level)
        if value > best:
            best_q, best = float(q), value
    return best_q


#: the claims' curves by (algorithm, eps, horizon, arms, delta): the PLD profiles cost seconds, the audits reuse them
_CURVES: dict = {}


# ---- the audit ---------------------------------------------------------------------------------


def server_one_run_audit(algorithm: str, *, epsilon: float, horizon: int = 20_480, arms: int = 10, seeds: int = 10, seed: int = 0,
                         level: float = 0.05, delta: float = 1e-6, guesses: int | None = None, planted_scale: float = 1.0,
                         pilot: int = 20_000) -> ServerOneRunAudit:
    """``seeds`` runs of ``algorithm`` (seed, seed + 1, ...) with a canary in every release, pooled; the bounds.

    The other users: ``arms`` Bernoulli(1/2) arms (equal means, so that few arms are eliminated and
    most canary slots are observed). ``guesses``: k (default: the pilot's fraction of m).
    ``planted_scale``: a planted server-side bug -- the protocol's noise drawn at ``planted_scale`` x
    eps (its noise scale divided by that factor) while the claim stays the honest one; 1 is correct.
    ``delta``: the delta of the (eps, delta) bounds (and the run's, for Dist-RDP-SE's budget).
    """
    if algorithm not in SERVER_ALGORITHMS:
        raise AccountingError("algorithm", algorithm, f"one of {SERVER_ALGORITHMS} (a central or distributed protocol: one aggregate per release)")
    check_positive_int("horizon", horizon)
    check_positive_int("arms", arms)
    check_positive_int("seeds", seeds)
    check_positive_int("pilot", pilot)
    if not planted_scale > 0:
        raise AccountingError("planted_scale", planted_scale, "a positive factor (1: the correct run)")
    if not 0 < level < 1:
        raise AccountingError("level", level, "a probability in (0, 1)")
    started = time.perf_counter()
    base = bernoulli_instance([0.5] * arms, name=f"{arms} Bernoulli(1/2) arms")
    honest = _config(algorithm, base, horizon, epsilon, delta)
    budget, claim_eps, claim_delta, claim_text, mechanisms = _claim(algorithm, honest, base, delta)
    key = (algorithm, float(epsilon), int(horizon), int(arms), float(delta))
    curve = _CURVES.get(key)
    if curve is None:
        curve = _CURVES[key] = claim_curve_of(algorithm, mechanisms, budget)
    slots = arms * (_dp_se_epochs(horizon, arms, honest) if algorithm == "dp-se" else len(batch_sizes(horizon, honest.batch_base)))
    m = seeds * slots
    root = np.random.SeedSequence(seed, spawn_key=(33, 1))
    canary_seq, pilot_seq, tie_seq = root.spawn(3)
    bits = np.random.default_rng(canary_seq).integers(0, 2, size=(seeds, slots))
    scores = np.full((seeds, slots), 0.5)
    observed = np.zeros((seeds, slots), dtype=bool)
    protocol = None
    for s in range(seeds):
        wrapped = _ReleaseCanaryInstance(f"{base.name} + canaries", base.arms, dict(base.options), base, bits[s].astype(np.float64))
        config = _config(algorithm, wrapped, horizon, float(epsilon) * planted_scale, delta)
        transcript = Transcript()
        if algorithm == "dp-se":
            setup = replace(dp_se_setup(config, wrapped), transcript=transcript)
            run_dp_se(setup, float(epsilon) * planted_scale, seed_streams(seed + s, 0))
        else:
            setup, _ = se_setup(config, wrapped)
            setup = replace(setup, transcript=transcript)
            run_batch_elimination(setup, seed_streams(seed + s, 0))
        protocol = setup.protocol
        stream = wrapped.issued[-1]
        if len(transcript.releases) != stream.calls:
            raise AccountingError("transcript", len(transcript.releases), f"one release per draw ({stream.calls})")
        j = len(transcript.releases)
        scores[s, :j] = _scores(protocol, transcript.releases, stream.known)
        observed[s, :j] = True
    scores, observed, bits = scores.ravel(), observed.ravel(), bits.ravel()
    tie_rng = np.random.default_rng(tie_seq)
    if guesses is None:
        prng = np.random.default_rng(pilot_seq)
        pbits = prng.integers(0, 2, size=pilot)
        n_pilot = honest.batch_base ** 4
        # the pilot runs the *claimed* protocol (the honest one): k must not depend on the run audited
        honest_protocol = dp_se_setup(honest, base).protocol if algorithm == "dp-se" else se_setup(honest, base)[0].protocol
        pscores = _pilot_scores(honest_protocol, pbits, n_pilot, prng)
        # k = q x the releases of the all-active schedule (fixed before the run; a shortfall is filled by blind guesses)
        typical = seeds * _all_active_releases(algorithm, honest, arms)
        gaussian = not isinstance(budget, acc.PureDP)
        guesses = max(1, min(m, int(_choose_fraction(pscores, pbits, typical, level, prng, gaussian) * typical)))
    k = int(guesses)
    if not 1 <= k <= m:
        raise AccountingError("guesses", guesses, f"an integer in [1, canaries] = [1, {m}]")
    seen = np.flatnonzero(observed)
    pick, guess = _guess(scores[seen], min(k, seen.size), tie_rng)
    correct = int(np.sum(guess == bits[seen[pick]]))
    if k > seen.size:  # blind guesses on slots never released: right with probability 1/2
        blind = np.flatnonzero(~observed)[: k - seen.size]
        correct += int(np.sum(bits[blind] == 1))
    pure = one_run_epsilon(m, k, correct, level=level)
    approx = one_run_epsilon(m, k, correct, level=level, delta=claim_delta) if claim_delta > 0 else pure
    f_eps = fdp_epsilon(m, k, correct, level=level, delta=claim_delta)
    rejects = fdp_rejects(curve, m, k, correct, level=level)
    mu = fdp_mu(m, k, correct, level=level)
    planted = "" if planted_scale == 1.0 else f"aggregator noise drawn at {planted_scale:g} x the claimed epsilon (scale / {planted_scale:g})"
    return ServerOneRunAudit(algorithm, int(seeds), int(horizon), int(m), int(observed.sum()), k, correct, float(level), claim_text,
                             claim_eps, claim_delta, pure, approx, f_eps, bool(rejects), curve, mu, time.perf_counter() - started, planted)
