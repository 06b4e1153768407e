"""The exact routes for whole classes of compositions, as functions of their own.

The planner (:mod:`accounting._routing._routes`) holds the routes; this module gives the two that are exact
for a whole class of compositions a function each, for callers that want one number from one
route (the ledger, :func:`accounting.optimal_composition_epsilon`):

- ``analytic-gaussian``: every step is an :class:`accounting.Gaussian`; the composition is
  mu-GDP with mu = sqrt(sum (Delta_i/sigma_i)^2) and its exact (eps, delta) profile is Balle &
  Wang's analytic formula (:mod:`accounting._mechanisms._analytic_gaussian`);
- optimal composition: every step is pure DP; the optimal composition theorem (Kairouz, Oh &
  Viswanath 2015; Murtagh & Vadhan 2016) gives the least delta valid for *every* mechanism with
  those epsilons (:mod:`accounting._routing._optimal_composition`): exact enumeration, the randomized
  responses' PLD or KOV's bound, whichever the planner affords and is tightest.

Cost does not grow with the number of repetitions for the analytic Gaussian (mu scales by
sqrt(k)) nor for KOV's bound; the planner prices the other two from their sizes.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

from .._core._guarantees import PureDP
from ._optimal_composition import _groups, kov_heterogeneous_bound
from .._core._planner import DEFAULT_TIME_BUDGET, NotApplicable, Query, run_plan
from .._core._result import Result
from ._routes import ANALYTIC_GAUSSIAN_DETAIL, _is_gaussian, _pure_groups, routes_for

__all__ = ["ANALYTIC_GAUSSIAN_DETAIL", "is_gaussian", "kov_heterogeneous_bound", "optimal_composition_epsilon", "tight_routes"]


def is_gaussian(subject: Any) -> bool:
    """True for an :class:`accounting.Gaussian` (the analytic route's class)."""
    return _is_gaussian(subject)


_OPTIMAL = ("optimal-composition", "optimal-composition-pld", "kov-heterogeneous-bound")


def _optimal_routes(query: Query) -> list:
    """The optimal-composition routes, taken from the planner's registry (the same objects
    ``epsilon_routes`` plans with: no route is rebuilt here)."""
    return [r for r in routes_for(query) if r.name in _OPTIMAL]


def optimal_composition_epsilon(
    epsilons: Sequence[tuple[float | int | Fraction, int]], delta: float | Fraction, *, time_budget: float = DEFAULT_TIME_BUDGET
) -> Result:
    """Certified eps(delta) of composing ``count`` copies of each ``eps0``-DP step ((eps0, count) pairs):
    the optimum over every mechanism with these pure-DP parameters.

    The smallest of the three routes the planner affords within ``time_budget`` seconds: the exact
    enumeration (exact), the randomized-response product's PLD (exact when there is one distinct
    epsilon: one lattice; connect-the-dots between groups otherwise) and KOV's Thm 3.5 bound. The
    result is the planner's winning record itself (``status`` "answer"): its ``route``, ``exact``,
    ``grid`` (the PLD's h, None on its lattice), ``outcomes`` (the exact enumeration's support
    points) and timing.
    """
    groups = _groups(epsilons)
    query = Query(tuple((PureDP(e), n) for e, n in groups), delta, time_budget, True, False, False)
    report = run_plan(_optimal_routes(query), query)
    assert report.answer is not None
    return report.answer


def tight_routes(parts: Sequence[tuple[Any, int]], delta: float) -> list[Result]:
    """Certified routes exact for Gaussian compositions and for pure-DP compositions.

    ``parts`` holds (subject, count) pairs: ``count`` releases of each subject, composed. The
    analytic Gaussian (when every subject is Gaussian) and the best optimal-composition route
    (when every subject is pure DP), as the planner runs them.
    """
    query = Query(tuple((s, int(n)) for s, n in parts), delta)
    if not all(_is_gaussian(s) for s, _ in query.parts) and isinstance(_pure_groups(query), NotApplicable):
        return []  # neither class applies; a failure of a route that does apply is raised, not hidden
    report = run_plan([r for r in routes_for(query) if r.name == "analytic-gaussian" or r.name in _OPTIMAL], query)
    out = [r for r in report.alternatives if r.status in ("run", "answer") and r.route == "analytic-gaussian"]  # type: ignore[attr-defined]
    optimal = [r for r in report.alternatives if r.status in ("run", "answer") and r.route != "analytic-gaussian"]  # type: ignore[attr-defined]
    if optimal:
        out.append(min(optimal, key=lambda r: r.epsilon))
    return out
