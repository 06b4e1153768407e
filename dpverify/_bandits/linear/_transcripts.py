"""Transcripts of DP-DPE runs (Li, Zhou and Ji) on a reward table: the run audit's DPE family.

The data is a table of client reports: row u is client u's report for every action (in
[-B, B]; the runner's clients average their rewards, a table fixes the result). Phase l samples
the next n_l = ceil(2^(alpha l)) clients (first pass of the population, as ``_Clients.sample``),
each reports table[u, x] for the support actions x of the phase's design.

- **server view**: every phase's release y_tilde, one column per (phase, action); -1 for an
  action outside the phase's support (or a phase not reached);
- **public view**: the phase in which each action was eliminated (0: never).

Same code path: :class:`TableClients` stands in for the client population of ``run_linear``
(its ``clients`` hook), whose privatizer records every release (``VectorPrivatizer.record_to``);
:class:`DPEEngine` runs many runs in lockstep over phases: runs with the same active set share
the phase's design (``g_optimal_design``, computed once per active set), every run's release is
the protocol's own ``release`` with its stream, and the least-squares estimate, the width W_l and
the elimination rule are ``run_linear``'s, run for run. With the plain runner's streams it
reproduces the plain run bit for bit (tested).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from accounting import Ledger, AccountingError

from ..._executed._privatizer import private_stream
from .._transcripts import NOT_RELEASED, VIEWS, Placement, TranscriptEngine
from ._design import g_optimal_design
from ._dpe import _PRIVATE, DPEConfig, LinearRunResult, _clients_in_phase, linear_streams, run_linear
from ._instances import LinearInstance

__all__ = ["DPEEngine", "DPETranscript", "TableClients", "circle_instance"]


def circle_instance(arms: int, *, reward_bound: float = 1.0, sigma: float = 0.1) -> LinearInstance:
    """``arms`` actions evenly spaced on the unit circle (d = 2), theta* = (1, 0): a small public instance
    whose clients' reports a reward table gives."""
    angles = 2 * np.pi * np.arange(arms) / arms
    actions = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    return LinearInstance(f"circle-{arms}", actions, np.array([1.0, 0.0]), sigma=sigma, reward_bound=reward_bound)


class TableClients:
    """``run_linear``'s client population as a table: client u reports table[u, x] for action x."""

    def __init__(self, table: np.ndarray, actions: np.ndarray) -> None:
        self._table = table
        self._index = {row.tobytes(): i for i, row in enumerate(np.asarray(actions, dtype=np.float64))}
        self._next = 0
        self.sampled = 0
        self.returning = 0
        self.clipped = 0
        self.reported = 0

    def sample(self, n: int) -> range:
        if self._next + n > self._table.shape[0]:
            raise AccountingError("table", f"{self._table.shape[0]} clients", f"a row for every client sampled ({self._next + n} so far)")
        ids = range(self._next, self._next + n)
        self._next += n
        self.sampled += n
        return ids

    def reports(self, phase: int, ids: range, support_actions: np.ndarray, counts: np.ndarray) -> np.ndarray:
        columns = [self._index[np.asarray(a, dtype=np.float64).tobytes()] for a in support_actions]
        out = self._table[ids.start:ids.stop][:, columns].copy()
        self.reported += out.size
        return out


class DPETranscript:
    """A plain DPE run's releases (the privatizer's hook calls :meth:`observe_vector`) and its ledger."""

    def __init__(self) -> None:
        self.releases: list[tuple[str, np.ndarray]] = []
        self.ledger: Ledger | None = None

    def observe_vector(self, estimate: np.ndarray, n: int, label: str) -> None:
        self.releases.append((label, np.array(estimate, dtype=np.float64)))


@dataclass(frozen=True, eq=False)
class DPEEngine(TranscriptEngine):
    """A private DP-DPE variant (CDP-DPE: central Gaussian) in lockstep over many runs on one table."""

    name: str
    algorithm: str
    instance: LinearInstance
    config: DPEConfig
    unit: str = "phase"
    arms: int = field(init=False)
    horizon: int = field(init=False)
    rows: int = field(init=False)
    low: float = field(init=False)
    high: float = field(init=False)
    protocol: Any = field(init=False)
    phases: int = field(init=False)

    def __post_init__(self) -> None:
        if self.algorithm not in _PRIVATE or self.algorithm == "sdp-dpe":
            raise AccountingError("algorithm", self.algorithm, "'cdp-dpe' or 'ldp-dpe' (a private DPE with a vector privatizer)")
        cfg = self.config
        object.__setattr__(self, "arms", self.instance.k)
        object.__setattr__(self, "horizon", cfg.horizon)
        object.__setattr__(self, "low", -self.instance.reward_bound)
        object.__setattr__(self, "high", self.instance.reward_bound)
        object.__setattr__(self, "protocol", _PRIVATE[self.algorithm][cfg.noise](cfg.epsilon, cfg.delta, self.instance.reward_bound))
        # a phase has at least h_l = 2^l rounds (its counts ceil(h pi(x)) sum to >= h): phases before l need >= 2^(l+1) - 2
        phases = 0
        while 2 ** (phases + 2) - 2 < cfg.horizon:
            phases += 1
        object.__setattr__(self, "phases", phases)
        object.__setattr__(self, "rows", sum(_clients_in_phase(l, cfg.alpha) for l in range(1, phases + 1)))

    @classmethod
    def for_circle(cls, algorithm: str, *, arms: int, horizon: int, epsilon: float, delta: float = 1e-5, reward_bound: float = 1.0,
                   privacy_width: str = "exact", alpha: float = 0.8) -> "DPEEngine":
        config = DPEConfig(horizon=horizon, alpha=alpha, epsilon=epsilon, delta=delta, privacy_width=privacy_width)
        return cls(algorithm, algorithm, circle_instance(arms, reward_bound=reward_bound), config)

    def columns(self, view: str) -> list[str]:
        if view == "server":
            return [f"phase {l} action {x}" for l in range(1, self.phases + 1) for x in range(self.arms)]
        if view == "public":
            return [f"action {x}'s elimination phase (0: never)" for x in range(self.arms)]
        raise AccountingError("view", view, f"one of {VIEWS}")

    def streams(self, rng: np.random.Generator) -> list[np.random.Generator]:
        return [rng]

    def plain_streams(self, seed: int, run_index: int = 0) -> list[np.random.Generator]:
        return [private_stream(linear_streams(seed, run_index)["privatizer"])]

    def run(self, table: np.ndarray, rngs: Sequence[np.random.Generator], reps: int, *, ledger: Any = None) -> dict[str, np.ndarray]:
        inst, cfg = self.instance, self.config
        rng = rngs[0]
        if ledger is not None and reps != 1:
            raise AccountingError("reps", reps, "1 when a ledger is charged (the ledger of one run)")
        actions, d, k, T = inst.actions, inst.d, inst.k, cfg.horizon
        beta = cfg.beta if cfg.beta is not None else 1.0 / (k * T)
        log_term = math.sqrt(2.0 * math.log(1.0 / beta))
        server = np.full((reps, self.phases * k), float(NOT_RELEASED))
        public = np.zeros((reps, k), dtype=np.int64)
        active = np.ones((reps, k), dtype=bool)
        t = np.zeros(reps, dtype=np.int64)
        live = np.ones(reps, dtype=bool)
        designs: dict[bytes, Any] = {}
        h, start = 2.0, 0
        weights = np.int64(1) << np.arange(k, dtype=np.int64)
        for l in range(1, self.phases + 1):
            idx = np.flatnonzero(live)
            if idx.size == 0:
                break
            n = _clients_in_phase(l, cfg.alpha)
            ids = range(start, start + n)
            keys = np.stack([t[idx], active[idx].astype(np.int64) @ weights], axis=1)
            groups, inverse = np.unique(keys, axis=0, return_inverse=True)
            inverse = inverse.reshape(-1)
            for gi, (t0, mask) in enumerate(groups.tolist()):
                members = idx[inverse == gi]
                act = np.array([x for x in range(k) if mask >> x & 1], dtype=np.int64)
                key = act.tobytes()
                if key not in designs:
                    designs[key] = g_optimal_design(actions[act])
                design = designs[key]
                support = act[design.support]
                counts = np.ceil(h * design.weights).astype(np.int64)
                phase_length = int(counts.sum())
                if phase_length >= T - t0:  # the horizon ends inside this phase: no feedback
                    live[members] = False
                    continue
                s = int(support.size)
                support_actions = actions[support]
                reports = table[start:start + n][:, support].copy()  # C order, as TableClients hands them over
                if ledger is not None:
                    ledger.charge(self.protocol.guarantee(n, s), ids, label=f"phase {l}")
                weighted = support_actions * counts[:, None]
                gram = weighted.T @ support_actions
                gram_pinv = np.linalg.pinv(gram, hermitian=True)
                if cfg.privacy_width == "paper":
                    sigma_n = self.protocol.paper_width_sd(n, s, d)
                else:
                    influence = (actions[act] @ gram_pinv @ support_actions.T) * counts[None, :]
                    sigma_n = self.protocol.noise_sd(n, s) * float(np.sqrt(np.einsum("ij,ij->i", influence, influence)).max())
                width = (math.sqrt(2.0 * d / (n * h)) + inst.sigma / math.sqrt(n) + sigma_n) * log_term
                columns = (l - 1) * k + support
                for r in members:  # run_linear's release and estimate, run for run (the same float operations)
                    y_tilde = self.protocol.release(reports, rng, path=cfg.path)
                    server[r, columns] = y_tilde
                    theta_hat = gram_pinv @ (weighted.T @ y_tilde)
                    estimates = actions[act] @ theta_hat
                    keep = estimates.max() - estimates <= 2.0 * width
                    public[r, act[~keep]] = l
                    active[r, act[~keep]] = False
                t[members] = t0 + phase_length
            start += n
            h *= 2.0
        return {"server": server, "public": public}

    # ---- neighbours ------------------------------------------------------------------------------

    def placements(self) -> list[Placement]:
        out, start = [], 0
        for l in range(1, self.phases + 1):
            out.append(Placement(start, l, -1, f"client {start}: the first of phase {l}"))
            start += _clients_in_phase(l, self.config.alpha)
        return out

    def _all_active_statistic(self, table: np.ndarray, phase: int) -> float:
        """max over actions of (best estimate - estimate) - 2 W at ``phase`` of the all-active run,
        without privacy noise (the release's mean): the decision's distance from its threshold."""
        inst, cfg = self.instance, self.config
        design = g_optimal_design(inst.actions)
        support = design.support
        h = 2.0**phase
        counts = np.ceil(h * design.weights).astype(np.int64)
        start = sum(_clients_in_phase(j, cfg.alpha) for j in range(1, phase))
        n = _clients_in_phase(phase, cfg.alpha)
        support_actions = inst.actions[support]
        weighted = support_actions * counts[:, None]
        gram_pinv = np.linalg.pinv(weighted.T @ support_actions, hermitian=True)
        y = table[start:start + n][:, support].mean(axis=0)
        estimates = inst.actions @ (gram_pinv @ (weighted.T @ y))
        s = int(support.size)
        if cfg.privacy_width == "paper":
            sigma_n = self.protocol.paper_width_sd(n, s, inst.d)
        else:
            influence = (inst.actions @ gram_pinv @ support_actions.T) * counts[None, :]
            sigma_n = self.protocol.noise_sd(n, s) * float(np.sqrt(np.einsum("ij,ij->i", influence, influence)).max())
        beta = cfg.beta if cfg.beta is not None else 1.0 / (inst.k * cfg.horizon)
        width = (math.sqrt(2.0 * inst.d / (n * h)) + inst.sigma / math.sqrt(n) + sigma_n) * math.sqrt(2.0 * math.log(1.0 / beta))
        return float((estimates.max() - estimates).max() - 2.0 * width)

    def threshold_tables(self, placement: Placement, extremes: tuple[float, float]) -> list[tuple[np.ndarray, str]]:
        """Linear tables (client reports <theta, x> for every client) with theta along theta*'s
        direction, scaled so that the phase's noise-free decision statistic is halfway between its
        values with the placed client at either extreme: D and D' on the two sides of 2 W_l."""
        lo, hi = extremes
        direction = self.instance.theta / np.linalg.norm(self.instance.theta)

        def table(scale: float, value: float) -> np.ndarray:
            out = np.tile(self.instance.actions @ (scale * direction), (self.rows, 1))
            out[placement.row, :] = value
            return out

        f = lambda scale: 0.5 * (self._all_active_statistic(table(scale, lo), placement.batch) + self._all_active_statistic(table(scale, hi), placement.batch))  # noqa: E731
        a, b = 0.0, float(self.high)
        if not f(a) < 0.0 < f(b):
            return []
        for _ in range(60):  # bisection: the statistic grows with the scale
            mid = 0.5 * (a + b)
            a, b = (mid, b) if f(mid) < 0 else (a, mid)
        scale = 0.5 * (a + b)
        base = table(scale, lo)
        if np.abs(base).max() > self.high:
            return []
        return [(base, f"reports <theta, x> with theta = {scale:.4g} theta*: phase {placement.batch}'s decision at its threshold")]

    # ---- the plain runner ------------------------------------------------------------------------

    def plain_run(self, table: np.ndarray, seed: int, run_index: int = 0) -> tuple[LinearRunResult, DPETranscript]:
        transcript = DPETranscript()
        result = run_linear(self.algorithm, self.instance, seed, self.config, run_index=run_index,
                            clients=TableClients(table, self.instance.actions), transcript=transcript)
        return result, transcript

    def flatten(self, result: LinearRunResult, transcript: DPETranscript) -> dict[str, np.ndarray]:
        """A plain run's releases and eliminations in this engine's layout (the support of each phase
        is the design of the actions active at its start, as the runner computed it)."""
        k = self.arms
        server = np.full(self.phases * k, float(NOT_RELEASED))
        fed = [p for p in result.phases if p["clients"] > 0]
        ends = {p["start"] - 1 + p["length"]: p["phase"] for p in fed}
        eliminated_at = {action: ends[time] for action, time in result.eliminations}
        public = np.zeros(k, dtype=np.int64)
        for action, phase in eliminated_at.items():
            public[action] = phase
        for record, (_, estimate) in zip(fed, transcript.releases):
            l = record["phase"]
            act = np.array([x for x in range(k) if eliminated_at.get(x, l) >= l], dtype=np.int64)
            support = act[g_optimal_design(self.instance.actions[act]).support]
            server[(l - 1) * k + support] = estimate
        return {"server": server, "public": public}
