"""Calibration: the least noise that meets a privacy budget, found by bisection on exact values.

Given a family of mechanisms indexed by a noise parameter (variance, sigma, scale) in which more
noise never means less privacy, :func:`calibrate` brackets the smallest parameter whose
certified epsilon (best route, after ``compose``-fold composition) is at most the target, and
returns the *upper* end of the final bracket: a parameter that has itself been certified to
meet the budget. The returned report carries that certified epsilon, so nothing rests on the
monotonicity assumption except optimality (a non-monotone family can only make the answer
noisier than needed, never under budget).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from ._conversions import EpsilonResult
from ._routes import epsilon_routes
from ._validation import AccountingError, check_positive, check_positive_int, check_probability

__all__ = ["Calibration", "calibrate"]


@dataclass(frozen=True)
class Calibration:
    """The calibrated noise parameter and the certified guarantee it achieves."""

    parameter: float
    achieved: EpsilonResult
    target_epsilon: float
    delta: float
    compose: int
    iterations: int

    def as_dict(self) -> dict:
        return {
            "parameter": self.parameter,
            "target_epsilon": self.target_epsilon,
            "delta": self.delta,
            "compose": self.compose,
            "achieved_epsilon": self.achieved.epsilon,
            "route": self.achieved.route,
            "iterations": self.iterations,
        }


def calibrate(
    family: Callable[[float], Any],
    target_epsilon: float,
    delta: float,
    *,
    compose: int = 1,
    lower: float,
    upper: float,
    relative_tolerance: float = 1e-3,
    include_pld: bool = False,
    max_iterations: int = 200,
) -> Calibration:
    """Smallest noise parameter in [lower, upper] meeting (target_epsilon, delta) after ``compose`` releases.

    ``family(parameter)`` builds the mechanism. The search is geometric bisection, stopping when
    upper/lower - 1 <= ``relative_tolerance``.
    """
    check_positive("target_epsilon", target_epsilon)
    check_probability("delta", delta)
    check_positive_int("compose", compose)
    check_positive("lower", lower)
    check_positive("upper", upper)
    if not upper > lower:
        raise AccountingError("upper", upper, f"a value > lower={lower}")
    check_positive("relative_tolerance", relative_tolerance)

    def epsilon_at(parameter: float) -> EpsilonResult:
        # only the certified answer and its route are read: the comparison routes are skipped
        return epsilon_routes(family(parameter), delta, compose=compose, include_pld=include_pld, comparisons=False)

    best = epsilon_at(upper)
    if best.epsilon > target_epsilon:
        raise AccountingError(
            "upper", upper, f"a noise parameter large enough to reach target_epsilon={target_epsilon!r} (it gives {best.epsilon:.6g})"
        )
    lo, hi = lower, upper
    at_lo = epsilon_at(lo)
    if at_lo.epsilon <= target_epsilon:
        return Calibration(lo, at_lo, target_epsilon, delta, compose, 0)
    iterations = 0
    while hi / lo - 1 > relative_tolerance and iterations < max_iterations:
        mid = math.sqrt(lo * hi)
        result = epsilon_at(mid)
        if result.epsilon <= target_epsilon:
            hi, best = mid, result
        else:
            lo = mid
        iterations += 1
    return Calibration(hi, best, target_epsilon, delta, compose, iterations)
