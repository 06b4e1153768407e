"""Transcripts of bandit runs: the adversary's views of a whole run on a reward table (issue 24).

The data of a run is a *reward table*: row u holds user u's reward for every arm. Two tables are
neighbours when they differ in one user's row (ICLR 2023, Section 2: "they only differ in one
user's reward preference"). Users are the pulls in order, as the runner's ``UserPool`` hands them
out: the t-th pull is made by user t (unique users), or by user t mod N (a population of N
returning users, round-robin), who reports her reward for the arm she is recommended.

Two views of a run, the outputs a run audit tests (``dpverify._audit._runs``):

- the **server view**: every privatized release, in order, one slot per (batch, arm): the SecAgg
  output yhat (Dist-DP-SE, Dist-RDP-SE, Dist-CDP-SE), the analyzer's noisy view (CDP-SE), every
  user's message (LDP-SE: the local model's server sees each report), the noisy sum (DP-SE);
  ``-1`` in a slot where nothing was released (the arm was eliminated, the run ended);
- the **public view**: the batch in which each arm was eliminated (0: never). The arm
  recommended to every user is a function of it (the schedule is public), and vice versa;
- the **transcript**: both side by side (a witness event then says which one it reads).

Same code path as the run (``shared/DESIGN.md``, "Transcripts"). The plain runner records its own
transcript: :class:`Transcript` is attached to the run's privatizers (``Privatizer.record_to``)
and draws each release with the privatizer's stream through :func:`release_views`, which makes
exactly the draws of ``protocol.estimate_sum`` and returns its estimate (tested), so a recorded
run is the run. :class:`EliminationEngine` runs many runs at once, in lockstep over batches: runs
in the same state (pulls made, active arms) share their users, so each (state, arm) is one call
of :func:`release_views` with ``reps`` = the runs in that state -- the protocol's own vectorised
draw (``server_views``: its numba kernel draws every user of every run in one call) where it has
one; the per-run bookkeeping (groups, elimination rule) is numpy over the runs. The batch schedule and the radius are the runner's own
callables (``algorithm1_rules`` / ``dp_se_rules``), tabulated. With the plain runner's per-arm
streams and one run per call it reproduces the plain runner's transcript exactly (same seeds,
identical views and eliminations: ``tests/test_run_audit.py``); with many runs per call the draws
are the same law from a shared stream (a law test there too).

Transcripts go through the runners' privatizer interfaces (``BatchProtocol.estimate_sum`` /
``server_views`` / ``messages`` / ``analyze``), never a sampler of their own, so whatever
privatizer a runner is given is what gets audited.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

from accounting import Ledger, AccountingError
from accounting.internal import check_positive_int

from .._executed import _protocol_kernels as pk
from .._executed._privatizer import private_stream
from .._executed._protocols import DistributedProtocol
from ._elimination import EliminationSetup, UserPool, algorithm1_rules, dp_se_rules, run_batch_elimination, run_dp_se
from ._environments import ArmLaw, BanditInstance, children
from ._results import RunRecord

__all__ = [
    "NOT_RELEASED",
    "EliminationEngine",
    "Placement",
    "RecordedRelease",
    "TableInstance",
    "TableStreams",
    "Transcript",
    "TranscriptEngine",
    "VIEWS",
    "check_table",
    "release_views",
    "user_rows",
]

#: the views of a run: the server's, the public's, and both side by side (the adversary's whole view)
VIEWS = ("server", "public", "transcript")
#: the value of a server-view slot where nothing was released
NOT_RELEASED = -1


# ---- one release: the server's view and the analyzer's estimate -----------------------------------


def release_views(protocol: Any, rewards: Any, rng: np.random.Generator, reps: int, path: str = "per-user") -> tuple[np.ndarray, np.ndarray]:
    """``reps`` independent releases of ``protocol`` on one batch: (the server's views, the analyzer's estimates).

    Views: ``DistributedProtocol``: the SecAgg output yhat (its ``server_views``), for the local
    model every user's message (``messages``: an (reps, n) array); any other ``BatchProtocol``:
    the released estimate itself (a central release: the server holds what the analyzer outputs).
    A protocol may define its own ``release_views(rewards, rng, reps, path=...)``.

    With ``reps = 1`` the draws are exactly those of ``protocol.estimate_sum(rewards, rng, path=path)``
    and the estimate is its return value (tested for every protocol of the runners), which is why
    a recorded run is the run itself.
    """
    x = np.asarray(rewards, dtype=np.float64)
    own = getattr(protocol, "release_views", None)
    if own is not None:
        return own(x, rng, reps, path=path)
    if isinstance(protocol, DistributedProtocol):
        n = x.size
        if protocol.kind.reveals_messages:
            if path != "per-user":
                raise AccountingError("path", path, "'per-user' for ldp (every user's message is drawn)")
            m = protocol.parameters(n).m
            if reps == 1:  # estimate_sum's own sequence: the messages, then their SecAgg sum
                views = protocol.messages(x, rng).reshape(1, n)
                sums = np.array([pk.secure_aggregate(views[0], m)], dtype=np.int64)
            else:  # many runs: every message of every run in one draw (the same law; tested)
                views = protocol.messages(x, rng, reps=reps)
                sums = views.sum(axis=1) % m if n * m < 2**62 else np.array([pk.secure_aggregate(v, m) for v in views], dtype=np.int64)
            return views, np.asarray(protocol.analyze(sums, n), dtype=np.float64).reshape(reps)
        views = protocol.server_views(x, rng, reps, path=path)
        return views, np.asarray(protocol.analyze(views, n), dtype=np.float64).reshape(reps)
    estimates = np.array([protocol.estimate_sum(x, rng, path=path) for _ in range(reps)], dtype=np.float64)
    return estimates, estimates


# ---- reward tables ----------------------------------------------------------------------------------


def check_table(table: Any, arms: int, rows: int, low: float = 0.0, high: float = 1.0) -> np.ndarray:
    """A reward table as a float64 (users, arms) array with entries in [low, high] and at least ``rows`` users."""
    array = np.asarray(table, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != arms or array.shape[0] < rows:
        raise AccountingError("table", f"array of shape {array.shape}", f"a ({rows} users, {arms} arms) reward table (one row per user)")
    if not np.all((array >= low) & (array <= high)):
        raise AccountingError("table", "entries outside the reward range", f"rewards in [{low:g}, {high:g}] (no NaN)")
    return array


def user_rows(start: int, n: int, population: int | None) -> np.ndarray:
    """The table rows of pulls start .. start + n - 1, in pull order: user t, or t mod N for a population of N."""
    users = np.arange(start, start + n, dtype=np.int64)
    return users if population is None else users % population


class TableStreams:
    """A reward table as the runner's reward source (``RewardStreams``' interface): the t-th draw of
    the run, whatever the arm, is row t (mod N) of the table, in the order the pulls are made.

    ``BatchFeedback`` draws a batch's rewards when it releases it, in pull order (unique users:
    ``UserPool`` hands out user t to the t-th pull; returning users: t mod N), so row t is the
    reward of the user who makes the t-th pull. Only the per-user path is supported."""

    __slots__ = ("_rewards", "_population", "_next", "_drawn", "arms_drawn")

    def __init__(self, rewards: np.ndarray, population: int | None = None) -> None:
        self._rewards = rewards
        self._population = population
        self._next = 0
        self._drawn = np.zeros(rewards.shape[1], dtype=np.int64)
        self.arms_drawn: list[int] = []  # the arm of every draw, in order (the UCB runner's public view)

    def draw(self, arm: int, n: int) -> np.ndarray:
        rows = user_rows(self._next, n, self._population)
        if rows.size and rows.max() >= self._rewards.shape[0]:
            raise AccountingError("table", f"{self._rewards.shape[0]} users", f"a row for every pull (pull {int(rows.max())} was asked)")
        self._next += n
        self._drawn[arm] += n
        self.arms_drawn.extend([arm] * n)
        return self._rewards[rows, arm].copy()

    def rounded_sum(self, arm: int, n: int, g: int) -> int:
        raise AccountingError("path", "aggregate", "'per-user' for a run on a reward table (every user's reward is the table's)")

    @property
    def drawn(self) -> np.ndarray:
        return self._drawn.copy()


@dataclass(frozen=True, eq=False)
class TableInstance(BanditInstance):
    """A bandit instance whose rewards are a fixed table (a run audit's data); arm a's law is the
    empirical law of column a (for the regret recorder only), its streams the table in pull order."""

    rewards: np.ndarray | None = None
    population: int | None = None
    #: the streams handed out so far (a recorded run reads the arm of every draw from them)
    issued: list = field(default_factory=list, compare=False, repr=False)

    @classmethod
    def from_table(cls, table: Any, population: int | None = None, name: str = "reward table") -> "TableInstance":
        array = np.asarray(table, dtype=np.float64)
        if array.ndim != 2 or array.shape[1] < 2:
            raise AccountingError("table", f"array of shape {array.shape}", "a (users, arms) reward table with at least 2 arms")
        arms = []
        for column in array.T:
            values, counts = np.unique(column, return_counts=True)
            arms.append(ArmLaw("categorical", tuple(values.tolist()) + tuple((counts / counts.sum()).tolist())))
        return cls(name, tuple(arms), {"users": int(array.shape[0]), "population": population}, array, population)

    def streams(self, seed: np.random.SeedSequence) -> TableStreams:  # type: ignore[override]
        stream = TableStreams(self.rewards, self.population)
        self.issued.append(stream)
        return stream


# ---- the plain runner's own transcript ---------------------------------------------------------------

_LABEL = re.compile(r"^[a-z]+=(\d+) arm=(\d+)$")


@dataclass
class RecordedRelease:
    batch: int
    arm: int
    n: int
    view: np.ndarray


class Transcript:
    """What the server saw in one plain run: attach to a setup (``EliminationSetup(transcript=...)``);
    every privatizer of the run then draws its releases through :meth:`observe`."""

    def __init__(self) -> None:
        self.releases: list[RecordedRelease] = []
        self.ledger: Ledger | None = None  # the run's ledger (set by the runner that records)

    def observe(self, protocol: Any, rewards: np.ndarray, rng: np.random.Generator, path: str, label: str) -> float:
        """One release, drawn as the privatizer would (:func:`release_views` with reps = 1): keep the view, return the estimate."""
        views, estimates = release_views(protocol, rewards, rng, 1, path)
        found = _LABEL.match(label)
        if found is None:
            raise AccountingError("label", label, "the batch loop's 'b=<batch> arm=<arm>' (or 'e=...' for DP-SE)")
        self.releases.append(RecordedRelease(int(found.group(1)), int(found.group(2)), int(rewards.size), views[0]))
        return float(estimates[0])


# ---- engines ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """Where a user sits in the run every arm stays active in: her row, batch (or phase, or round) and arm."""

    row: int
    batch: int
    arm: int
    text: str


class TranscriptEngine(ABC):
    """Many runs of one algorithm on one reward table at once; the outputs of a run audit.

    Subclasses set ``name``, ``arms``, ``horizon``, ``rows`` (users a table needs), ``low`` and
    ``high`` (the reward range) and implement :meth:`run`, :meth:`columns`, :meth:`placements` and
    :meth:`threshold_tables`. Engines are picklable (plain arrays and protocol objects), so an
    audit can draw them on a process pool or a Dask cluster.
    """

    name: str
    arms: int
    horizon: int
    rows: int
    low: float = 0.0
    high: float = 1.0
    #: "batch" or "epoch" (DP-SE), "phase" (DPE), "round" (UCB): how reports name a decision point
    unit: str = "batch"

    @abstractmethod
    def run(self, table: np.ndarray, rngs: Sequence[np.random.Generator], reps: int, *, ledger: Ledger | None = None) -> dict[str, np.ndarray]:
        """``reps`` runs on ``table``: {"server": (reps, columns), "public": (reps, columns)}.
        ``rngs``: the privatizers' streams (one per arm for the multi-armed runners) and, last, the
        learner's where it has one. ``ledger`` (reps = 1 only): charged as the runner charges it."""

    @abstractmethod
    def columns(self, view: str) -> list[str]:
        """A label for every column of ``view`` (what a witness event's coordinate is)."""

    @abstractmethod
    def placements(self) -> list[Placement]:
        """The users worth changing: one per (decision point, arm) of the all-active run."""

    @abstractmethod
    def threshold_tables(self, placement: Placement, extremes: tuple[float, float]) -> list[tuple[np.ndarray, str]]:
        """Base tables on which the decision at ``placement`` sits at its threshold (see module docs)."""

    @abstractmethod
    def streams(self, rng: np.random.Generator) -> list[np.random.Generator]:
        """The per-run streams :meth:`run` takes, drawn from one generator (an audit's chunk stream)."""

    def sample(self, table: Any, rng: np.random.Generator, size: int, view: str) -> np.ndarray:
        """``size`` independent runs' ``view``: the run audit's mechanism (data = the table)."""
        if view not in VIEWS:
            raise AccountingError("view", view, f"one of {VIEWS}")
        array = check_table(table, self.arms_in_table, self.rows, self.low, self.high)
        out = self.run(array, self.streams(rng), int(size))
        if view == "transcript":
            return np.concatenate([out["server"], out["public"].astype(out["server"].dtype)], axis=1)
        return out[view]

    def labels(self, view: str) -> list[str]:
        """:meth:`columns` of a view, the transcript's prefixed by the view each column belongs to."""
        if view == "transcript":
            return [f"server view: {c}" for c in self.columns("server")] + [f"public view: {c}" for c in self.columns("public")]
        return [f"{view} view: {c}" for c in self.columns(view)]

    @property
    def arms_in_table(self) -> int:
        """Columns of the reward table (the arms; DPE: the actions)."""
        return self.arms

    def describe(self) -> str:
        return f"{self.name}, {self.arms} arms, horizon {self.horizon}"


@dataclass(frozen=True, eq=False)
class EliminationEngine(TranscriptEngine):
    """Algorithm 1 (and DP-SE) in lockstep over many runs on one reward table.

    ``schedule[b, a]`` is the batch size l(b) with a active arms and ``radius[b, a]`` the radius
    beta at batch b (the runner's own callables, tabulated by :meth:`from_rules`), b = 1..B where
    B is the last batch any run can release. One loop over b runs every run: runs in the same
    state (pulls made, active arms) form a group, whose active arms are released in order to
    consecutive users (the i-th active arm gets pulls p + i l .. p + (i+1) l - 1) until fewer than
    l + 1 pulls are left (the unfinished batch is pulled, not released: Algorithm 1 line 9); a
    complete round is followed by the elimination rule mu_a + beta >= max_a' (mu_a' - beta).

    The steps a planted variant changes are methods: :meth:`release_round` (the releases of one
    round), :meth:`decision_means` (what the elimination rule reads), :meth:`participants` (who the
    ledger charges).
    """

    name: str
    protocol: Any
    arms: int
    horizon: int
    schedule: np.ndarray  # (B + 1, K + 1) int64; row 0 and column 0 unused
    radius: np.ndarray  # (B + 1, K + 1) float64
    population: int | None = None
    path: str = "per-user"
    unit: str = "batch"
    rows: int = field(init=False)
    _slots: dict = field(init=False, repr=False)

    def __post_init__(self) -> None:
        batches = self.schedule.shape[0] - 1
        messages = isinstance(self.protocol, DistributedProtocol) and self.protocol.kind.reveals_messages
        slots, labels = {}, []
        start = 0
        for b in range(1, batches + 1):
            width = int(self.schedule[b, 1:].max()) if messages else 1
            for arm in range(self.arms):
                slots[(b, arm)] = (start, start + width)
                if messages:
                    labels.extend(f"{self.unit} {b} arm {arm} message {j}" for j in range(width))
                else:
                    labels.append(f"{self.unit} {b} arm {arm}")
                start += width
        object.__setattr__(self, "_slots", {"slots": slots, "labels": labels, "width": start, "messages": messages})
        object.__setattr__(self, "rows", self.population if self.population is not None else self.horizon)

    # ---- construction from a runner's setup ----------------------------------------------------

    @classmethod
    def from_rules(cls, name: str, protocol: Any, arms: int, horizon: int, schedule: Callable[[int, int], int],
                   radius: Callable[[int, int, int], float], *, population: int | None = None, unit: str = "batch") -> "EliminationEngine":
        """Tabulate a runner's schedule and radius over every batch a run can release."""
        check_positive_int("arms", arms)
        check_positive_int("horizon", horizon)
        sizes: list[list[int]] = [[0] * (arms + 1)]
        radii: list[list[float]] = [[0.0] * (arms + 1)]
        least = 0  # the fewest pulls any run has made before batch b
        b = 0
        while True:
            b += 1
            row = [0] + [int(schedule(b, a)) for a in range(1, arms + 1)]
            if horizon - least <= min(row[1:]):  # no run can release batch b
                break
            sizes.append(row)
            radii.append([0.0] + [float(radius(row[a], b, a)) for a in range(1, arms + 1)])
            least += arms * row[arms] if b == 1 else min(a * row[a] for a in range(1, arms + 1))
        return cls(name, protocol, arms, horizon, np.array(sizes, dtype=np.int64), np.array(radii, dtype=np.float64), population, "per-user", unit)

    @classmethod
    def from_setup(cls, setup: EliminationSetup, *, dp_se_epsilon: float | None = None, name: str = "") -> "EliminationEngine":
        """The engine of ``run_batch_elimination(setup)`` (or of ``run_dp_se(setup, eps)`` with ``dp_se_epsilon``)."""
        if setup.path != "per-user":
            raise AccountingError("path", setup.path, "'per-user' (a transcript holds every user's report)")
        if setup.protocol is None:
            raise AccountingError("protocol", None, "a private protocol (a run audit tests a private run)")
        if dp_se_epsilon is None:
            schedule, radius = algorithm1_rules(setup)
            unit = "batch"
        else:
            schedule, radius = dp_se_rules(setup, dp_se_epsilon)
            unit = "epoch"
        return cls.from_rules(name or setup.protocol_label or setup.protocol.name, setup.protocol, setup.instance.k, setup.horizon,
                              schedule, radius, population=setup.population, unit=unit)

    # ---- layout ---------------------------------------------------------------------------------

    @property
    def batches(self) -> int:
        return self.schedule.shape[0] - 1

    def columns(self, view: str) -> list[str]:
        if view == "server":
            return list(self._slots["labels"])
        if view == "public":
            return [f"arm {a}'s elimination {self.unit} (0: never)" for a in range(self.arms)]
        raise AccountingError("view", view, f"one of {VIEWS}")

    def slot(self, batch: int, arm: int) -> tuple[int, int]:
        return self._slots["slots"][(batch, arm)]

    def streams(self, rng: np.random.Generator) -> list[np.random.Generator]:
        return list(rng.spawn(self.arms))

    def plain_streams(self, seeds: dict[str, np.random.SeedSequence]) -> list[np.random.Generator]:
        """The plain runner's privatizer streams for these seeds (one per arm, as ``_build`` makes them)."""
        return [private_stream(s) for s in children(seeds["privatizer"], self.arms)]

    # ---- the steps a planted variant may change --------------------------------------------------

    def release_round(self, arms: list[int], rewards: list[np.ndarray], rngs: Sequence[np.random.Generator], reps: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """The releases of one round, arm by arm, each with its arm's privatizer stream."""
        return [release_views(self.protocol, x, rngs[arm], reps, self.path) for arm, x in zip(arms, rewards)]

    def decision_means(self, estimates: np.ndarray, rewards: list[np.ndarray], n: int) -> np.ndarray:
        """What the elimination rule reads: the private estimates / n (mu_hat of this batch only)."""
        return estimates / n

    def participants(self, pool: UserPool, start: int, n: int) -> range | np.ndarray:
        """Who the ledger is charged for, for the batch of pulls start .. start + n - 1 (the runner's UserPool)."""
        return pool.take(n)

    # ---- the runs --------------------------------------------------------------------------------

    def run(self, table: np.ndarray, rngs: Sequence[np.random.Generator], reps: int, *, ledger: Ledger | None = None) -> dict[str, np.ndarray]:
        K, T = self.arms, self.horizon
        if ledger is not None and reps != 1:
            raise AccountingError("reps", reps, "1 when a ledger is charged (the ledger of one run)")
        messages = self._slots["messages"]
        dtype = np.int64 if isinstance(self.protocol, DistributedProtocol) else np.float64
        server = np.full((reps, self._slots["width"]), NOT_RELEASED, dtype=dtype)
        public = np.zeros((reps, K), dtype=np.int64)
        active = np.ones((reps, K), dtype=bool)
        pulls = np.zeros(reps, dtype=np.int64)
        live = np.ones(reps, dtype=bool)
        pool = UserPool(self.population) if ledger is not None else None
        weights = np.int64(1) << np.arange(K, dtype=np.int64)
        for b in range(1, self.batches + 1):
            idx = np.flatnonzero(live)
            if idx.size == 0:
                break
            keys = pulls[idx] * (np.int64(1) << K) + active[idx].astype(np.int64) @ weights
            groups, inverse = np.unique(keys, return_inverse=True)
            inverse = inverse.reshape(-1)
            for gi, key in enumerate(groups.tolist()):
                members = idx[inverse == gi]
                start0, mask = key >> K, key & ((1 << K) - 1)
                arms = [a for a in range(K) if mask >> a & 1]
                n = int(self.schedule[b, len(arms)])
                released = [a for i, a in enumerate(arms) if T - (start0 + i * n) > n]
                rewards = [table[user_rows(start0 + i * n, n, self.population), a] for i, a in enumerate(released)]
                if ledger is not None:
                    for i, a in enumerate(released):
                        ledger.charge(self.protocol.mechanism(n), self.participants(pool, start0 + i * n, n), label=f"{self.unit[0]}={b} arm={a}")
                    if len(released) < len(arms):
                        pool.take(T - (start0 + len(released) * n))  # the unfinished batch (never charged)
                outs = self.release_round(released, rewards, rngs, members.size)
                for a, (views, _) in zip(released, outs):
                    lo, _ = self.slot(b, a)
                    if messages:
                        server[members, lo:lo + views.shape[1]] = views
                    else:
                        server[members, lo] = views
                if len(released) < len(arms):  # the horizon ends inside this batch: no update
                    live[members] = False
                    continue
                pulls[members] = start0 + len(arms) * n
                beta = float(self.radius[b, len(arms)])
                means = self.decision_means(np.stack([est for _, est in outs], axis=1), rewards, n)
                best_lcb = (means - beta).max(axis=1)
                keep = means + beta >= best_lcb[:, None]
                for j, a in enumerate(arms):
                    out = members[~keep[:, j]]
                    active[out, a] = False
                    public[out, a] = b
        return {"server": server, "public": public}

    # ---- neighbours ------------------------------------------------------------------------------

    def placements(self) -> list[Placement]:
        out = []
        start = 0
        for b in range(1, self.batches + 1):
            n = int(self.schedule[b, self.arms])
            if self.horizon - (start + (self.arms - 1) * n) <= n:
                break
            for arm in range(self.arms):
                row = start + arm * n
                row = row if self.population is None else row % self.population
                out.append(Placement(row, b, arm, f"user {row}: the first of {self.unit} {b}, arm {arm} (while every arm is active)"))
            start += self.arms * n
        return out

    def threshold_tables(self, placement: Placement, extremes: tuple[float, float]) -> list[tuple[np.ndarray, str]]:
        """Constant-row tables (every user has reward mu_a on arm a) whose elimination decision at the
        placement's batch sits at its threshold 2 beta(b): in D (the changed user's row at
        ``extremes[0]``) the gap between the best arm's batch mean and the others' is
        2 beta - 1/(2 l(b)) when the changed user is on the best arm (her change to ``extremes[1]``
        widens it by (high - low)/l, across the threshold) and 2 beta + 1/(2 l) when she is on a
        worse one (her change narrows it). Both sit within the noise of the threshold."""
        b, arm, K = placement.batch, placement.arm, self.arms
        n = int(self.schedule[b, K])
        beta = float(self.radius[b, K])
        low = extremes[0]
        out = []
        if n < 2:
            return out
        for changed_best, offsets in ((True, (-0.5,)), (False, (0.5,))):
            for c in offsets:
                gap = 2 * beta + c / n  # best batch mean minus the others', in D
                if changed_best:
                    worse = 0.5 - gap / 2
                    means = np.full(K, worse)
                    means[arm] = (n * (worse + gap) - low) / (n - 1)  # ((n - 1) mu + low) / n = worse + gap
                else:
                    best = 0.5 + gap / 2
                    means = np.full(K, best - gap)
                    means[(arm + 1) % K] = best
                    means[arm] = (n * (best - gap) - low) / (n - 1)
                if not np.all((means >= self.low) & (means <= self.high)):
                    continue
                table = np.tile(means, (self.rows, 1))
                where = "the best arm" if changed_best else "a worse arm"
                out.append((table, f"means {np.round(means, 4).tolist()}: {self.unit} {b} gap 2 beta {c:+g}/{n} in D, the changed user on {where}"))
        return out

    # ---- the plain runner, for comparison --------------------------------------------------------

    def plain_run(self, setup: EliminationSetup, table: np.ndarray, seeds: dict[str, np.random.SeedSequence],
                  dp_se_epsilon: float | None = None) -> tuple[RunRecord, Transcript]:
        """The plain runner on ``table`` with these seeds, recording its transcript."""
        transcript = Transcript()
        instance = TableInstance.from_table(table, self.population)
        plain = replace(setup, instance=instance, transcript=transcript, population=self.population)
        record = run_dp_se(plain, dp_se_epsilon, seeds) if dp_se_epsilon is not None else run_batch_elimination(plain, seeds)
        return record, transcript

    def flatten(self, record: RunRecord, transcript: Transcript) -> dict[str, np.ndarray]:
        """A plain run's transcript in this engine's layout (one row of each view)."""
        messages = self._slots["messages"]
        server = np.full(self._slots["width"], NOT_RELEASED, dtype=np.int64 if isinstance(self.protocol, DistributedProtocol) else np.float64)
        ends: dict[int, int] = {}
        pulls = 0
        for rel in transcript.releases:
            lo, hi = self.slot(rel.batch, rel.arm)
            if messages:
                server[lo:lo + rel.view.size] = rel.view
            else:
                server[lo] = rel.view
            pulls += rel.n
            ends[pulls] = rel.batch
        public = np.zeros(self.arms, dtype=np.int64)
        for arm, time in record.eliminations:
            public[arm] = ends[time]
        return {"server": server, "public": public}

