"""The route planner: one place where an (eps, delta) query chooses, runs and reports its routes.

Every route (the analytic Gaussian, optimal composition, the RDP curve, the privacy-loss
distribution, the papers' closed forms, ...) is an object that, asked about a query, answers with
a :class:`Plan`: whether it applies, whether it is *exact* for this query (its value is the true
eps(delta), rounded up, so that no certified route can be tighter), and an estimated cost (seconds
on one core of the reference machine, and bytes) computed from the sizes involved (releases,
output windows, grid points), with the settings it chose to stay within the time left (a coarser
grid, a wider truncation). :func:`run_plan` then

1. runs the exact routes first, cheapest first, and stops at the first that answers: no remaining
   certified route can be tighter (``exhaustive=True`` runs them anyway);
2. runs every other certified route whose estimated cost fits what is left of the time budget,
   cheapest first, each re-planned for the time left (routes coarsen to fit rather than refuse);
3. runs the comparison routes (the papers' closed forms: never the answer) that fit;
4. reports every route: the value and the measured time of each route it ran, and for each route it
   did not run the reason, the estimated cost and the argument that would run it. Each route's
   record (an :class:`accounting.Result`) is built once, when its status is final; the report's
   ``answer`` is the winning record itself, which the layers above hand on rather than copy.

Estimates cover memory as well as time: a route estimated above the query's ``memory_budget``
(:data:`DEFAULT_MEMORY_BUDGET`) is re-planned (coarsened) or not run, with its reason and the
argument that would run it, and when nothing certified fits, the cheapest route runs anyway only
if estimated within :data:`OVERRUN_FACTOR` times the budget (or :data:`OVERRUN_FLOOR` seconds).
Which routes a query is given is a named policy (:data:`accounting._routing._routes.POLICIES`).

Decisions rest on the estimates only, never on the clock, so a query gets the same answer on a
busy machine as on an idle one (only the reported times differ). Every value is a certified upper
bound; the answer is the smallest certified value. A route that fails (an enclosure that lost all
precision, memory) is reported as failed and the others still answer; if every certified route
fails, the first failure is raised.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from ._guarantees import RDP
from ._mechanism_base import Mechanism
from ._result import Result
from ._validation import AccountingError, check_nonnegative, check_positive, check_positive_int, probability

__all__ = ["DEFAULT_MEMORY_BUDGET", "DEFAULT_TIME_BUDGET", "Cost", "NotApplicable", "Plan", "Query", "Route", "run_plan"]

#: The default time budget of one query: seconds on one core of the reference machine.
DEFAULT_TIME_BUDGET = 10.0
#: The default memory cap of one route (bytes, estimated peak): a route estimated above it is
#: coarsened or not run, whatever its time (issue 30: one query took 13.8 GB under a 10 s budget)
DEFAULT_MEMORY_BUDGET = 4 * 2**30
#: No route is started when its estimate exceeds the time budget by more than this factor (a
#: query answers or refuses within about twice its budget; the estimates are upper bounds)
OVERRUN_FACTOR = 2.0
#: ... except routes estimated below this many seconds (a 1e-4 s budget still gets an answer)
OVERRUN_FLOOR = 1.0
#: Certified routes estimated at most this cheap run even after an exact answer (a cross-check)
CROSS_CHECK_COST = 1e-3

_FAILURES = (ArithmeticError, MemoryError, RecursionError, ValueError)


@dataclass(frozen=True)
class Cost:
    """An estimated cost: seconds on one core of the reference machine, and peak bytes."""

    seconds: float
    bytes: float = 0.0

    def __add__(self, other: "Cost") -> "Cost":
        return Cost(self.seconds + other.seconds, max(self.bytes, other.bytes))

    def __str__(self) -> str:
        memory = f", {self.bytes / 2**20:,.0f} MiB" if self.bytes >= 2**20 else ""
        return f"~{_seconds(self.seconds)}{memory}"


def _bytes(value: float) -> str:
    return f"{value / 2**30:,.1f} GiB" if value >= 2**30 else f"{value / 2**20:,.0f} MiB"


def _seconds(value: float) -> str:
    if not math.isfinite(value):
        return "unbounded time"
    return f"{value:.2g} s" if value < 100 else f"{value:,.0f} s"


@dataclass(frozen=True)
class Query:
    """One (eps, delta) question: ``parts`` = ((release, count), ...) composed (equal releases
    merged), at a ``delta`` validated once, here, where the query is built: ``delta`` becomes a
    :class:`~accounting._core._validation.Probability`, which every conversion, PLD and closed form
    the routes reach accepts without checking it again.

    ``epsilon`` set: the question is the other way round, delta(epsilon) (``delta`` is then
    unused): routes answer with results whose ``delta`` is their certified value at that
    epsilon, and the planner minimises delta instead of epsilon, under the same cost guard."""

    parts: tuple[tuple[Any, int], ...]
    delta: float
    time_budget: float = DEFAULT_TIME_BUDGET
    include_pld: bool = True
    comparisons: bool = True
    exhaustive: bool = False
    epsilon: float | None = None
    #: the estimated peak bytes a route may take (DEFAULT_MEMORY_BUDGET)
    memory_budget: float = DEFAULT_MEMORY_BUDGET

    def __post_init__(self) -> None:
        if self.epsilon is None:
            object.__setattr__(self, "delta", probability("delta", self.delta))
        else:
            object.__setattr__(self, "epsilon", float(check_nonnegative("epsilon", self.epsilon)))
        object.__setattr__(self, "time_budget", float(check_positive("time_budget", self.time_budget, allow_inf=True)))
        object.__setattr__(self, "memory_budget", float(check_positive("memory_budget", self.memory_budget, allow_inf=True)))
        if not self.parts:
            raise AccountingError("parts", self.parts, "at least one (release, count) pair")
        for index, (_, count) in enumerate(self.parts):
            check_positive_int(f"parts[{index}] count", count)

    @property
    def asks_delta(self) -> bool:
        return self.epsilon is not None

    def value(self, result: Result) -> float:
        """What the planner minimises: the result's epsilon, or its delta for a delta query."""
        return result.delta if self.epsilon is not None else result.epsilon

    def blank(self, route: str, detail: str, **fields: Any) -> Result:
        """A result with no value (inf epsilon; delta 1 for a delta query)."""
        if self.epsilon is None:
            return Result(math.inf, self.delta, route, None, detail, **fields)
        return Result(self.epsilon, 1.0, route, None, detail, **fields)

    @property
    def releases(self) -> int:
        return sum(n for _, n in self.parts)

    @property
    def single(self) -> tuple[Any, int] | None:
        """(subject, k) when the query is k releases of one subject."""
        return self.parts[0] if len(self.parts) == 1 else None


@dataclass(frozen=True)
class Plan:
    """A route's answer to "what would you do for this query within ``budget`` seconds?".

    ``run(budget)`` computes the value (a :class:`~accounting._core._result.Result`, certified upper
    bound) and may re-plan inside that budget; it is handed whatever the route built while
    planning (``prepared``: a PLD route's release PLDs), directly, never through a module-level
    store. ``setting`` names what the plan chose (a grid, a window); ``how`` is the argument that
    runs a tighter or the skipped variant."""

    route: str
    run: Callable[[float], Result]
    cost: Cost
    exact: bool = False
    comparison: bool = False
    setting: str = ""
    how: str = ""
    #: why the route is switched off for this query (a caller's choice), or ""
    off: str = ""
    #: what the route built while planning and ``run`` uses (e.g. release PLDs), or ()
    prepared: tuple = ()


@dataclass(frozen=True)
class NotApplicable:
    """The route does not apply to the query, and why."""

    route: str
    reason: str
    comparison: bool = False


class Route(Protocol):
    """A route: ``plan(query, budget)`` returns a :class:`Plan` (fitting the budget if it can) or
    a :class:`NotApplicable`; planning is cheap (sizes, no computation of the answer)."""

    name: str

    def plan(self, query: Query, budget: float) -> Plan | NotApplicable: ...


@dataclass
class _Slot:
    """One route while the planner works on it; its record (a :class:`Result`) is built once,
    at the end, when its status is final (:meth:`record`)."""

    route: str
    source: Any  # the Route object (asked again with the time left)
    plan: Plan | NotApplicable
    order: int = 0
    planning: float = 0.0  # measured seconds of planning (part of the route's reported time)
    status: str = ""  # "run", "not run", "failed" ("" while pending; "not applicable" from the plan)
    value: Result | None = None  # what the route's run returned
    epsilon: float = math.inf  # the record's (eps, delta): the route's value at the query's delta or epsilon
    delta: float = 1.0
    exact: bool = False
    seconds: float | None = None
    reason: str = ""
    how: str = ""
    error: BaseException | None = None

    @property
    def ran(self) -> bool:
        return self.status == "run"

    def record(self, query: Query, answer: bool = False) -> Result:
        """The route's record, built once (``answer``: the winning one)."""
        plan = self.plan
        if isinstance(plan, NotApplicable):
            return query.blank(self.route, f"not applicable: {plan.reason}", status="not applicable", exact=False,
                               comparison=plan.comparison, reason=plan.reason)
        if self.status == "not run":
            return query.blank(plan.route, f"not run: {self.reason}", status="not run", estimated_seconds=plan.cost.seconds,
                               exact=plan.exact, comparison=plan.comparison, reason=self.reason, how=self.how, setting=plan.setting)
        if self.status == "failed":
            return query.blank(plan.route, f"failed: {self.reason}", status="failed", seconds=self.seconds, estimated_seconds=plan.cost.seconds,
                               exact=plan.exact, comparison=plan.comparison, reason=self.reason, setting=plan.setting)
        value = self.value
        assert value is not None and self.status == "run"
        return Result(self.epsilon, self.delta, value.route or plan.route, value.alpha, value.detail, status="answer" if answer else "run",
                      seconds=self.seconds, estimated_seconds=plan.cost.seconds, exact=self.exact, comparison=plan.comparison,
                      reason=self.reason, how=plan.how, setting=plan.setting, grid=value.grid, outcomes=value.outcomes)


def _not_run(slot: _Slot, reason: str, how: str) -> None:
    slot.status, slot.reason, slot.how = "not run", reason, how


def _timed(slot: _Slot, plan: Plan, budget: float, query: Query) -> None:
    start = time.perf_counter()
    value = plan.run(budget)
    slot.seconds = slot.planning + time.perf_counter() - start
    # a route may learn that it was exact only by running (a PLD whose losses sat on a lattice)
    if query.asks_delta:
        slot.epsilon, slot.delta = query.epsilon, value.delta  # type: ignore[assignment]
        informative = value.delta < 1
    else:
        slot.epsilon, slot.delta = value.epsilon, query.delta
        informative = math.isfinite(value.epsilon)
    slot.exact = (plan.exact if value.exact is None else value.exact) and informative
    slot.value, slot.status = value, "run"


def run_plan(routes: Sequence[Route], query: Query) -> Result:
    """Plan every route for ``query``, run them as the module docstring says, report all: a
    :class:`Result` whose ``alternatives`` are every route's record and whose ``answer`` is the
    winning record (that very object)."""
    budget = query.time_budget
    slots: list[_Slot] = []
    for index, route in enumerate(routes):
        start = time.perf_counter()
        try:
            plan = route.plan(query, budget)
        except _FAILURES as error:  # planning itself failed (pathological sizes): report it
            plan = NotApplicable(route.name, f"could not be planned ({type(error).__name__}: {error})")
        slots.append(_Slot(route.name, route, plan, order=index, planning=time.perf_counter() - start))
    plans = [s for s in slots if isinstance(s.plan, Plan)]
    exact = sorted((s for s in plans if s.plan.exact and not s.plan.comparison), key=lambda s: (s.plan.cost.seconds, s.order))
    others = sorted((s for s in plans if not s.plan.exact and not s.plan.comparison), key=lambda s: (s.plan.cost.seconds, s.order))
    comparisons = sorted((s for s in plans if s.plan.comparison), key=lambda s: (s.plan.cost.seconds, s.order))
    left = budget
    answered_by: str | None = None

    def value(slot: _Slot) -> float:
        return slot.delta if query.asks_delta else slot.epsilon

    def attempt(slot: _Slot) -> None:
        nonlocal left
        plan = slot.plan
        assert isinstance(plan, Plan)
        if plan.off:
            _not_run(slot, plan.off, plan.how)
            return
        if plan.cost.seconds > left or plan.cost.bytes > query.memory_budget:
            replanned = _replan(slot, query, left)
            if replanned is not None:
                plan = slot.plan = replanned
        if plan.cost.bytes > query.memory_budget:
            need = 2 ** math.ceil(math.log2(plan.cost.bytes * 1.2))
            _not_run(slot, f"estimated {plan.cost} exceeds the memory budget of {_bytes(query.memory_budget)}",
                     f"memory_budget={need} (a machine with that much memory)")
            return
        if plan.cost.seconds > left:
            if not math.isfinite(plan.cost.seconds):
                _not_run(slot, f"no setting fits the engine ({plan.setting})", "no argument runs it (the composed window exceeds what one FFT pass holds)")
                return
            need = math.ceil(max(plan.cost.seconds, 1.0) * 1.2 + (budget - left))
            _not_run(slot, f"estimated {plan.cost} exceeds the {_seconds(max(left, 0.0))} left of the time budget",
                     f"time_budget={need} (CLI: --time-budget {need})")
            return
        start = time.perf_counter()
        try:
            _timed(slot, plan, left, query)
        except _FAILURES as error:
            slot.error, slot.status = error, "failed"
            slot.reason = f"{type(error).__name__}: {error}"
            slot.seconds = slot.planning + time.perf_counter() - start
        left -= plan.cost.seconds

    def attempt_unless_answered(slot: _Slot) -> None:
        nonlocal answered_by
        if answered_by is not None and not query.exhaustive:
            _not_run(slot, f"the exact route {answered_by} answered: no certified route can be tighter", "exhaustive=True (CLI: --all-routes)")
            return
        attempt(slot)
        if slot.ran and slot.exact:
            answered_by = answered_by or slot.route

    for slot in exact:
        attempt_unless_answered(slot)
    # the cheapest certified routes (closed forms costing next to nothing) run even after an exact
    # answer, as a cross-check of its claim: one below it (beyond rounding) shows the exact route
    # lost its tightness (an extreme parameter), which is then not trusted to end the search
    if answered_by is not None and not query.exhaustive:
        answer = next(s for s in exact + others if s.route == answered_by)
        for slot in others:
            if slot.plan.cost.seconds <= CROSS_CHECK_COST and not slot.status:  # type: ignore[union-attr]
                attempt(slot)
                if slot.ran and value(slot) < value(answer) * (1 - 1e-9):
                    answer.exact = False
                    answer.reason = f"claimed exact, but {slot.route} is tighter: not trusted"
                    answered_by = None
                    for skipped in exact:  # the exact routes it had stopped now run
                        if skipped.status == "not run" and "answered" in skipped.reason:
                            skipped.status = ""
                            attempt(skipped)
                    break
    for slot in others:
        if not slot.status:
            attempt_unless_answered(slot)
    if not any(s.ran for s in exact + others):
        # nothing certified fitted the budget: the cheapest certified route runs anyway (an
        # answer over the budget rather than none), and says so
        # (never one estimated above OVERRUN_FACTOR times the budget or above the memory budget:
        # a query answers or refuses within about twice its budget)
        waiting = [s for s in exact + others if s.status == "not run" and math.isfinite(s.plan.cost.seconds)  # type: ignore[union-attr]
                   and not s.plan.off and s.plan.cost.seconds <= max(OVERRUN_FACTOR * budget, OVERRUN_FLOOR)  # type: ignore[union-attr]
                   and s.plan.cost.bytes <= query.memory_budget]  # type: ignore[union-attr]
        if waiting:
            slot = min(waiting, key=lambda s: (s.plan.cost.seconds, s.order))  # type: ignore[union-attr]
            left = max(left, slot.plan.cost.seconds)  # type: ignore[union-attr]
            attempt(slot)
            if slot.ran:
                slot.reason = "run over the time budget: no certified route fitted it"
    for slot in comparisons:
        attempt(slot)

    certified = [s for s in slots if s.ran and not s.plan.comparison]  # type: ignore[union-attr]
    if not certified or all(not math.isfinite(value(s)) for s in certified):
        failure = next((s.error for s in slots if s.error is not None and isinstance(s.error, ValueError)), None)
        failure = failure or next((s.error for s in slots if s.error is not None), None)
        if failure is not None and not certified:
            raise failure
        if not certified:
            reasons = "; ".join(f"{s.route}: {s.record(query).reason}" for s in slots if not s.plan.comparison)
            raise AccountingError("subject", _describe(query), "a subject with at least one certified route that runs", reasons)
    best_slot = min(certified, key=lambda s: (value(s), s.order))
    records = tuple(s.record(query, answer=s is best_slot) for s in slots)  # in route order (the slots are)
    best = records[slots.index(best_slot)]
    return Result(best.epsilon, best.delta, best.route, best.alpha, best.detail, alternatives=records, answer=best)


def _replan(slot: _Slot, query: Query, left: float) -> Plan | None:
    """The slot's route asked again with the time left (a coarser variant), if it has one."""
    try:
        plan = slot.source.plan(query, left)
    except _FAILURES:
        return None
    return plan if isinstance(plan, Plan) else None


def _describe(query: Query) -> str:
    parts = []
    for subject, n in query.parts:
        text = subject.describe() if isinstance(subject, (Mechanism, RDP)) else repr(subject)
        parts.append(text if n == 1 else f"{n} x ({text})")
    return " + ".join(parts)
