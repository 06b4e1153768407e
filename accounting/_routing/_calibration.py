"""Calibration: the least noise that meets a privacy budget, searched through the route planner.

Given a family of mechanisms indexed by a noise parameter (variance, sigma, scale) in which more
noise never means less privacy, :func:`calibrate` brackets the smallest parameter whose certified
epsilon (the planner's answer, :func:`accounting.epsilon_routes`, after ``compose``-fold
composition) is at most the target, and returns the *upper* end of the final bracket: a
parameter that has itself been certified to meet the budget, with the route that certified it.
Nothing rests on the monotonicity assumption except optimality (a non-monotone family can only
make the answer noisier than needed, never over budget).

The search spends a time budget (estimated seconds on one core, as the planner counts them) in two
phases: a geometric bisection in which each evaluation may use a small share of the budget (the
cheap certified routes: closed forms, RDP curves, small PLDs), then, with what is left, further
bisection below that answer with the full routes (a PLD that the first phase could not afford,
or could afford only on a coarser grid, may certify a smaller parameter). Where the second phase
starts depends on what the first phase ran: if the evaluation of its answer left no route out
(every applicable route ran, the PLD perhaps on a coarser grid), the full routes are the same
routes refined, so the second phase re-checks the first phase's uncertified parameters with the
full routes, largest first, down to the first one still not certified, then narrows that bracket
by steps interpolated between its two ends' epsilons (log epsilon against log parameter; a
bisection whenever two such steps did not halve it, and always with ``ruled_out``); otherwise (a route the first phase could not afford, or an exact answer
that stopped the others) it starts from ``lower``, halving the answer while each halving is
certified, then bisecting. Either way the answer is a parameter certified by an evaluation the
search ran, and the final bracket's lower end is one the evaluations did not certify. An
evaluation that fails
(an enclosure that lost all precision at an extreme noise level, a parameter the mechanism
refuses) does not fail the query: the parameter counts as not certified and the bracket narrows
above it; the failures are counted in the result.

A caller that can prove cheaply that a parameter cannot meet the target (``ruled_out``: e.g.
:func:`accounting.rdp_conversion_exceeds` on one batch's exact curve inside a maximum over batch
sizes) saves those evaluations: such a parameter takes the branch a failed evaluation would take,
so the bracket moves exactly as it would have; the time budget the skipped evaluation would have
spent stays available, which can only let the second phase go further (a smaller certified
parameter), never less far. The skips are counted in the result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from .._core._result import Result
from .._core._planner import DEFAULT_TIME_BUDGET
from ._routes import epsilon_routes
from .._core._validation import AccountingError, check_positive, check_positive_int, check_probability

__all__ = ["Calibration", "calibrate"]

#: the share of the time budget one evaluation of the first phase may use
_FIRST_PHASE_SHARE = 1 / 40


@dataclass(frozen=True)
class Calibration:
    """The calibrated noise parameter and the certified guarantee it achieves."""

    parameter: float
    achieved: Result
    target_epsilon: float
    delta: float
    compose: int
    iterations: int
    #: evaluations that failed (not certified, the bracket narrowed above them)
    failures: int = 0
    #: parameters ``ruled_out`` proved unable to meet the target (not evaluated)
    ruled_out: int = 0

    def as_dict(self) -> dict:
        return {
            "parameter": self.parameter,
            "target_epsilon": self.target_epsilon,
            "delta": self.delta,
            "compose": self.compose,
            "achieved_epsilon": self.achieved.epsilon,
            "route": self.achieved.route,
            "route_detail": self.achieved.detail,
            "iterations": self.iterations,
            "failed_evaluations": self.failures,
            "ruled_out_evaluations": self.ruled_out,
        }


def _spent(result: Result) -> float:
    """The estimated seconds the planner spent on one evaluation (the routes it ran)."""
    return sum((r.estimated_seconds or 0.0) for r in result.alternatives if getattr(r, "status", "") in ("run", "answer"))


def _complete(result: Result | None) -> bool:
    """True if ``result`` (the first phase's answer) ran every route that applied: nothing left
    out for its budget, stopped by an exact answer or failed. The full routes are then the same
    routes, at most on finer settings (the PLD's grid)."""
    if result is None or not result.alternatives:
        return False
    return all(getattr(r, "status", "") in ("answer", "run", "not applicable") for r in result.alternatives)


def _interpolated(lo: float, at_lo: Result | None, hi: float, at_hi: Result, target: float, tolerance: float) -> float | None:
    """The next parameter inside (lo, hi): where log epsilon, linear in log parameter between the
    two evaluations, crosses the target, moved up by a quarter of the tolerance (so that it is
    likely certified and the step after it likely closes the bracket), and kept half a tolerance
    inside each end; hi / (1 + tolerance) where that crossing is already within the tolerance
    below hi (likely not certified: the bracket closes); None where the epsilons do not allow it
    (then the caller bisects)."""
    if at_lo is None or not (math.isfinite(at_lo.epsilon) and at_lo.epsilon > target >= at_hi.epsilon > 0):
        return None
    x_lo, x_hi = math.log(lo), math.log(hi)
    f_lo, f_hi = math.log(at_lo.epsilon / target), math.log(at_hi.epsilon / target)
    step = math.log1p(tolerance)
    root = x_hi - f_hi * (x_hi - x_lo) / (f_hi - f_lo)
    if not math.isfinite(root) or x_hi - x_lo <= step:
        return None
    if root >= x_hi - step:  # the crossing is within the tolerance below hi: try to close the bracket
        aim = x_hi - step
    else:
        aim = min(max(root + step / 4, x_lo + step / 2), x_hi - step / 2)
    return math.exp(aim) if lo < math.exp(aim) < hi else None


def calibrate(
    family: Callable[[float], Any],
    target_epsilon: float,
    delta: float,
    *,
    compose: int = 1,
    lower: float,
    upper: float,
    relative_tolerance: float = 1e-3,
    include_pld: bool = True,
    max_iterations: int = 200,
    time_budget: float = DEFAULT_TIME_BUDGET,
    ruled_out: Callable[[float], bool] | None = None,
) -> Calibration:
    """Smallest noise parameter in [lower, upper] meeting (target_epsilon, delta) after ``compose`` releases.

    ``family(parameter)`` builds the mechanism. The search is geometric bisection, stopping when
    upper/lower - 1 <= ``relative_tolerance``, within ``time_budget`` estimated seconds (module
    docstring); ``include_pld=False`` leaves out the PLD routes. ``ruled_out(parameter)``, optional,
    returns True only if it has *proved* that no certified evaluation at ``parameter`` meets the
    target; those parameters are not evaluated (module docstring).
    """
    check_positive("target_epsilon", target_epsilon)
    delta = float(check_probability("delta", delta))
    compose = check_positive_int("compose", compose)
    check_positive("lower", lower)
    check_positive("upper", upper)
    if not upper > lower:
        raise AccountingError("upper", upper, f"a value > lower={lower}")
    check_positive("relative_tolerance", relative_tolerance)
    check_positive("time_budget", time_budget, allow_inf=True)
    left = float(time_budget)
    failures = 0
    skipped = 0
    first_error: BaseException | None = None

    def evaluate(parameter: float, budget: float) -> Result | None:
        """The certified answer at ``parameter``, or None if every route failed there."""
        nonlocal left, failures, first_error
        try:
            result = epsilon_routes(family(parameter), delta, compose=compose, include_pld=include_pld, comparisons=False,
                                    time_budget=max(budget, 1e-6))
        except (ValueError, ArithmeticError, MemoryError, OverflowError) as error:
            failures += 1
            first_error = first_error or error
            return None
        left -= _spent(result)
        return result if math.isfinite(result.epsilon) else None

    proved: dict[float, bool] = {}  # ruled_out's answers (the second phase may ask again)

    def evaluate_unless_ruled_out(parameter: float, budget: float) -> Result | None:
        """As ``evaluate``, or None (not meeting, as a failed evaluation) when ``ruled_out`` proves
        that the evaluation could not meet the target."""
        nonlocal skipped
        if ruled_out is not None:
            if parameter not in proved:
                proved[parameter] = bool(ruled_out(parameter))
            if proved[parameter]:
                skipped += 1
                return None
        return evaluate(parameter, budget)

    def meets(result: Result | None) -> bool:
        return result is not None and result.epsilon <= target_epsilon

    share = float(time_budget) * _FIRST_PHASE_SHARE
    best = evaluate(upper, share)
    if not meets(best):
        best = evaluate(upper, max(left, share))
    if not meets(best):
        if best is None and first_error is not None:
            raise AccountingError("upper", upper, f"a noise parameter at which the certified evaluation answers ({type(first_error).__name__}: {first_error})")
        raise AccountingError(
            "upper", upper, f"a noise parameter large enough to reach target_epsilon={target_epsilon!r} (it gives {best.epsilon:.6g})"  # type: ignore[union-attr]
        )
    lo, hi = lower, upper
    at_lo = evaluate_unless_ruled_out(lo, share)
    if meets(at_lo):
        return Calibration(lo, at_lo, target_epsilon, delta, compose, 0, failures, skipped)  # type: ignore[arg-type]
    iterations = 0
    #: the first phase's parameters not certified, with their evaluations (None: failed or ruled out)
    not_certified: list[tuple[float, Result | None]] = [(lo, at_lo)]
    # phase 1: the cheap routes
    while hi / lo - 1 > relative_tolerance and iterations < max_iterations:
        mid = math.sqrt(lo * hi)
        result = evaluate_unless_ruled_out(mid, share)
        if meets(result):
            hi, best = mid, result
        else:
            lo = mid
            not_certified.append((mid, result))
        iterations += 1
    # phase 2: what is left of the budget, the full routes, below the phase-1 answer (the cheap
    # routes may be loose). Where the first phase ran every applicable route, re-check its
    # uncertified parameters with the full routes, largest first, down to the first still not
    # certified; otherwise halve the answer while each halving is certified; then bisect
    probe_lo = lower
    galloping = True
    at_probe_lo: Result | None = None
    #: the re-checks found the bracket: its ends are both full evaluations, whose epsilons locate
    #: the crossing (interpolated steps, each safeguarded by bisection)
    rechecked = False
    for point, _ in sorted(not_certified, key=lambda pair: -pair[0]) if _complete(best) else ():
        if left <= 0 or iterations >= max_iterations:
            break
        result = evaluate_unless_ruled_out(point, left)  # a parameter ruled out stays ruled out
        iterations += 1
        if meets(result):
            hi, best = point, result
        else:
            probe_lo, galloping, at_probe_lo, rechecked = point, False, result, True
            break
    last_width, slow = math.inf, 0
    while left > 0 and iterations < max_iterations and hi / probe_lo - 1 > relative_tolerance:
        mid = max(hi / 2, probe_lo) if galloping else math.sqrt(probe_lo * hi)
        if mid <= probe_lo:
            galloping = False
            mid = math.sqrt(probe_lo * hi)
        width = math.log(hi / probe_lo)
        slow = slow + 1 if width > last_width / 2 else 0
        last_width = width
        # (not with ``ruled_out``: a parameter it skips has no epsilon, and the bracket must move as
        # it would without the skips)
        if rechecked and ruled_out is None and slow < 2:  # after two interpolated steps that did not halve the bracket: bisect
            mid = _interpolated(probe_lo, at_probe_lo, hi, best, target_epsilon, relative_tolerance) or mid
        else:
            slow = 0
        result = evaluate_unless_ruled_out(mid, left)
        if meets(result):
            hi, best = mid, result
        else:
            probe_lo, galloping, at_probe_lo = mid, False, result
        iterations += 1
    return Calibration(hi, best, target_epsilon, delta, compose, iterations, failures, skipped)  # type: ignore[arg-type]
