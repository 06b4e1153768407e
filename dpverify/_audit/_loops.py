"""Your own bandit algorithm as a run-audit target: a loop written against the public pieces (issue 32).

A *loop* is a plain Python function ``loop(run, **parameters)``. It makes its pulls through
``run`` (a :class:`LoopRun`, the small documented protocol below), privatizes every release
through a :class:`~dpverify.Privatizer` that ``run`` hands out (bound to the run's ledger and
recording the server's view), and returns what it publishes (a number or a sequence of numbers:
the arm it recommends, the batch each arm was eliminated in, an estimate it reports)::

    def elimination(run, epsilon=1.0):
        private = run.privatizer(dpverify.central_laplace_protocol(epsilon))
        ...
        rewards, users = run.pull(arm, n)           # the next n users' rewards for `arm`
        release = private.release_sum(rewards, users, label=f"b={b} arm={arm}")
        ...
        return eliminated                            # the public view

    target = dpverify.run_target(elimination, "transcript", arms=2, horizon=256, parameters={"epsilon": 1.0})
    report = dpverify.audit_run(target)     # the claim: what run.ledger was charged, per user

What :class:`LoopRun` offers (and all a loop may touch of the data):

- ``run.arms``, ``run.horizon``, ``run.remaining`` (pulls left), ``run.pulls`` (pulls made);
- ``run.pull(arm, n) -> (rewards, users)``: the next ``n`` users in pull order (user t is row t
  of the reward table) report their reward for ``arm``; ``users`` is their ``range`` of ids, what
  a release's ledger charge names;
- ``run.privatizer(protocol, path="per-user")``: a ``Privatizer`` on ``run.ledger`` with its own
  stream; every ``release_sum`` it makes is recorded in the server view. Its ``label`` must read
  ``"b=<batch> arm=<arm>"`` (any ``<word>=<int> arm=<int>``): the slot of the release and how a
  witness names it;
- ``run.ledger``: the run's ``accounting.Ledger`` (no budget: the audit records what is charged;
  the claim is read from it, per user, like a built-in run's);
- ``run.rng``: a generator for the learner's own public randomness (tie-breaks); it never
  touches private data unless the loop makes it, which is what the audit is for.

The transcript. Server view: every privatized release (the protocol's server view as
:func:`~dpverify._bandits._transcripts.release_views` draws it: the SecAgg output, or the
released estimate of a central protocol), one slot per (batch, arm) in order, ``-1`` where the
run released nothing. Public view: the loop's return value, padded with ``-1``. The slots and
the public width are found by probe runs on the constant tables (every reward 0, 1/2 or 1, and
mixed 0/1 rows) when the engine is made; a run that later releases in a slot no probe saw is an
error naming the label (give ``slots=`` then). The probe run on the flat table also gives the
placements: the first user of each (batch, arm) release.

Throughput. A loop in plain Python makes one run at a time (``runs_per_second`` is measured on
the probes and shown by :meth:`LoopEngine.describe`); many runs per call come from worker
processes: ``audit_run(target, executor="process")`` draws the audit's chunks on a local pool
(the engine and the loop are pickled: define the loop at module level), and the suite gate
spreads claims over its workers. A loop may also offer a batched mode: an attribute
``loop.batched(table, rng, reps) -> {"server": ..., "public": ...}`` is then used instead of
``reps`` plain runs (the probe runs and the ledger run stay plain).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from accounting import AccountingError, Charge, Ledger, PureDP
from accounting.internal import check_positive_int
from accounting.internal import normalise_participants as _normalise_participants

from .._bandits._transcripts import NOT_RELEASED, VIEWS, Placement, TranscriptEngine, release_views
from .._executed._privatizer import Privatizer

__all__ = ["LoopEngine", "LoopRun", "loop_engine"]

_LABEL = re.compile(r"^\s*[A-Za-z_]+\s*=\s*(\d+)\s+arm\s*=\s*(\d+)")


class _RecordingLedger(Ledger):
    """The run's ledger: records every charge, refuses none (the audit reads what the loop charged)."""

    def __init__(self) -> None:
        super().__init__(PureDP(1.0), name="audited run")

    def charge(self, guarantee: Any, participants: Any = None, *, label: str = "") -> None:
        self._charges.append(Charge(guarantee, _normalise_participants(participants), label))

    def can_afford(self, guarantee: Any, participants: Any = None) -> bool:
        return True


class _Recorder:
    """The privatizers' transcript hook (``Privatizer.record_to``): draws each release as the
    protocol would (:func:`release_views`, reps = 1) and keeps its server view under its slot."""

    def __init__(self) -> None:
        self.releases: list[tuple[tuple[int, int], np.ndarray]] = []

    def observe(self, protocol: Any, rewards: np.ndarray, rng: np.random.Generator, path: str, label: str) -> float:
        found = _LABEL.match(label)
        if found is None:
            raise AccountingError("label", label, "'b=<batch> arm=<arm>' (a word=<integer> then arm=<integer>): the release's slot in the transcript")
        views, estimates = release_views(protocol, rewards, rng, 1, path)
        self.releases.append(((int(found.group(1)), int(found.group(2))), np.asarray(views[0]).reshape(-1)))
        return float(estimates[0])


class LoopRun:
    """What a user's loop is handed: its arms and horizon, the reward table in pull order, its
    privatizers and ledger, and a public generator (module docstring)."""

    __slots__ = ("arms", "horizon", "ledger", "_rng", "_table", "_next", "_recorder", "_seeds")

    def __init__(self, table: np.ndarray, arms: int, horizon: int, rng: np.random.Generator, recorder: _Recorder) -> None:
        self.arms = arms
        self.horizon = horizon
        self.ledger: Ledger = _RecordingLedger()
        self._seeds = np.random.SeedSequence(int(rng.integers(0, 2**63)))
        self._rng: np.random.Generator | None = None
        self._table = table
        self._next = 0
        self._recorder = recorder

    @property
    def rng(self) -> np.random.Generator:
        """The learner's own generator (public randomness), spawned from the run's seed on first use."""
        if self._rng is None:
            self._rng = np.random.Generator(np.random.PCG64(self._seeds.spawn(1)[0]))
        return self._rng

    @property
    def pulls(self) -> int:
        return self._next

    @property
    def remaining(self) -> int:
        return self.horizon - self._next

    def pull(self, arm: int, n: int) -> tuple[np.ndarray, range]:
        """The next ``n`` users' rewards for ``arm`` (a copy) and their user ids."""
        if isinstance(arm, bool) or not isinstance(arm, (int, np.integer)) or not 0 <= arm < self.arms:
            raise AccountingError("arm", arm, f"an arm in 0 .. {self.arms - 1}")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= self.remaining:
            raise AccountingError("n", n, f"1 .. {self.remaining} pulls (the horizon is {self.horizon}, {self._next} made)")
        start = self._next
        self._next += int(n)
        return self._table[start:start + int(n), int(arm)].copy(), range(start, start + int(n))

    def privatizer(self, protocol: Any, *, path: str = "per-user", seed: np.random.SeedSequence | None = None) -> Privatizer:
        """A ``Privatizer`` for ``protocol`` on this run's ledger, its releases recorded; its stream
        is spawned from the run's (``seed``: one of the loop's choosing, e.g. to replay a run)."""
        private = Privatizer(protocol, self.ledger, self._seeds.spawn(1)[0] if seed is None else seed, path=path, allow_idealised_charges=True)
        private.record_to(self._recorder)
        return private


def _public_row(value: Any) -> np.ndarray:
    row = np.asarray(value if value is not None else [], dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(row)):
        raise AccountingError("loop", f"returned {row.tolist()[:5]}", "finite numbers (the run's public outputs)")
    return row


@dataclass(frozen=True, eq=False)
class LoopEngine(TranscriptEngine):
    """A user's loop (module docstring) as a transcript engine: runs one at a time (or through
    ``loop.batched``), records the server view through the privatizer hook, returns the public view."""

    loop: Callable[..., Any]
    arms: int
    horizon: int
    parameters: Mapping[str, Any] = field(default_factory=dict)
    name: str = ""
    slots: tuple[tuple[int, int], ...] | None = None
    unit: str = "batch"
    rows: int = field(init=False)
    _layout: dict = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not callable(self.loop):
            raise AccountingError("loop", self.loop, "a callable loop(run, **parameters)")
        check_positive_int("arms", self.arms)
        check_positive_int("horizon", self.horizon)
        if self.arms < 2:
            raise AccountingError("arms", self.arms, "at least 2 arms")
        object.__setattr__(self, "rows", int(self.horizon))
        if not self.name:
            object.__setattr__(self, "name", getattr(self.loop, "__qualname__", repr(self.loop)))
        object.__setattr__(self, "_layout", {})
        self._probe()

    # ---- one run -----------------------------------------------------------------------------------

    def _one(self, table: np.ndarray, rng: np.random.Generator) -> tuple[_Recorder, np.ndarray, LoopRun]:
        recorder = _Recorder()
        run = LoopRun(table, self.arms, self.horizon, rng, recorder)
        public = _public_row(self.loop(run, **self.parameters))
        return recorder, public, run

    def _probe(self) -> None:
        """Slots, widths, dtype and placements from probe runs on the constant and mixed tables."""
        keys: dict[tuple[int, int], int] = {}
        public_width, integer = 0, True
        flat_charges: list[Charge] = []
        started, runs = time.perf_counter(), 0
        for t, table in enumerate(self._probe_tables()):
            if t == 1:  # the first table's runs include one-off costs (imports, compilation)
                started, runs = time.perf_counter(), 0
            for s in range(3):
                recorder, public, run = self._one(table, np.random.default_rng([t, s, 0x10095]))
                runs += 1
                for key, view in recorder.releases:
                    keys[key] = max(keys.get(key, 0), view.size)
                    integer = integer and np.issubdtype(view.dtype, np.integer)
                public_width = max(public_width, public.size)
                if t == 0 and s == 0:
                    flat_charges = list(run.ledger.charges)
        seconds = time.perf_counter() - started
        if self.slots is not None:
            for b, a in self.slots:
                keys.setdefault((int(b), int(a)), 1)
        if not keys:
            raise AccountingError("loop", self.name, "a loop that releases through run.privatizer(...) (the probe runs released nothing)")
        slots, labels, start = {}, [], 0
        for (b, a) in sorted(keys):
            width = keys[(b, a)]
            slots[(b, a)] = (start, start + width)
            labels.extend([f"{self.unit} {b} arm {a}"] if width == 1 else [f"{self.unit} {b} arm {a} message {j}" for j in range(width)])
            start += width
        placements = []
        for charge in flat_charges:
            found = _LABEL.match(charge.label)
            if found is None or charge.participants is None or len(charge.participants) == 0:
                continue
            b, a = int(found.group(1)), int(found.group(2))
            row = int(np.min(np.asarray(list(charge.participants))))
            placements.append(Placement(row, b, a, f"user {row}: the first of {self.unit} {b}, arm {a} (in the run on the flat table)"))
        self._layout.update(slots=slots, labels=labels, width=start, public=max(public_width, 1),
                            dtype=np.int64 if integer else np.float64, placements=placements,
                            runs_per_second=runs / seconds if seconds > 0 else float("inf"))

    def _probe_tables(self) -> list[np.ndarray]:
        shape = (self.rows, self.arms)
        mixed = np.tile((np.arange(self.rows) % 2).astype(np.float64)[:, None], (1, self.arms))
        return [np.full(shape, 0.5), np.zeros(shape), np.ones(shape), mixed]

    @property
    def runs_per_second(self) -> float:
        """Plain runs per second of one process, measured on the probe runs."""
        return float(self._layout["runs_per_second"])

    def describe(self) -> str:
        return f"user loop {self.name}, {self.arms} arms, horizon {self.horizon} ({self.runs_per_second:.0f} runs/s per process)"

    # ---- the engine interface -----------------------------------------------------------------------

    def run(self, table: np.ndarray, rngs: Sequence[np.random.Generator], reps: int, *, ledger: Any = None) -> dict[str, np.ndarray]:
        if ledger is not None and reps != 1:
            raise AccountingError("reps", reps, "1 when a ledger is charged (the ledger of one run)")
        batched = getattr(self.loop, "batched", None)
        if batched is not None and ledger is None:
            out = batched(table, rngs[0], int(reps))
            return {"server": np.asarray(out["server"]), "public": np.asarray(out["public"])}
        layout = self._layout
        server = np.full((reps, layout["width"]), NOT_RELEASED, dtype=layout["dtype"])
        public = np.full((reps, layout["public"]), NOT_RELEASED, dtype=np.float64)
        for i in range(reps):
            recorder, row, run = self._one(table, rngs[0])
            for key, view in recorder.releases:
                where = layout["slots"].get(key)
                if where is None or view.size > where[1] - where[0]:
                    raise AccountingError("label", f"b={key[0]} arm={key[1]} ({view.size} value(s))",
                                          f"a slot the probe runs saw ({sorted(layout['slots'])[:6]}...); pass slots=[(batch, arm), ...] to cover every release")
                server[i, where[0]:where[0] + view.size] = view
            if row.size > layout["public"]:
                raise AccountingError("loop", f"returned {row.size} values", f"at most {layout['public']} (the probe runs' widest output; return a fixed-length output)")
            public[i, :row.size] = row
            if ledger is not None:
                for c in run.ledger.charges:
                    if hasattr(ledger, "charges") and not isinstance(ledger, Ledger):
                        ledger.charges.append(c)
                    else:
                        ledger.charge(c.guarantee, c.participants, label=c.label)
        return {"server": server, "public": public}

    def columns(self, view: str) -> list[str]:
        if view == "server":
            return list(self._layout["labels"])
        if view == "public":
            return [f"output {j} of {self.name}" for j in range(self._layout["public"])]
        raise AccountingError("view", view, f"one of {VIEWS}")

    def placements(self) -> list[Placement]:
        return list(self._layout["placements"])

    def threshold_tables(self, placement: Placement, extremes: tuple[float, float]) -> list[tuple[np.ndarray, str]]:
        return []  # a user's decision rule is not known to the engine: the data bases stand in (run_pairs)

    def streams(self, rng: np.random.Generator) -> list[np.random.Generator]:
        return [rng]


def loop_engine(loop: Callable[..., Any], *, arms: int, horizon: int, slots: Sequence[tuple[int, int]] | None = None,
                name: str = "", **parameters: Any) -> LoopEngine:
    """The transcript engine of a user's ``loop(run, **parameters)`` on ``arms`` arms and ``horizon`` users."""
    return LoopEngine(loop, int(arms), int(horizon), dict(parameters), name, None if slots is None else tuple((int(b), int(a)) for b, a in slots))
