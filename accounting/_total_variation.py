"""The (eps, delta) cost of running a sampler whose law is close to, not equal to, the analysed one.

Fact (the triangle inequality on events). If a mechanism M is (eps, delta)-DP and M' satisfies
TV(M'(x), M(x)) <= t for every input x, then for every event E and neighbours x, x'

    P[M'(x) in E] <= P[M(x) in E] + t <= e^eps P[M(x') in E] + delta + t
                  <= e^eps P[M'(x') in E] + delta + (1 + e^eps) t,

so M' is (eps, delta + (1 + e^eps) t)-DP. Total variations add under (adaptive) composition and
never grow under post-processing. There is no such additive slack for pure DP, zCDP or Renyi DP:
a truncated law (the exact samplers' int64 range) has a bounded support, so its privacy loss is
unbounded at the edge; the slack can only be paid in delta.

Both helpers compute the slack (1 + e^eps) t in Arb and round in the safe direction.
"""

from __future__ import annotations

from ._certified import exact, lower_float, upper_float, working_precision
from ._validation import AccountingError, check_nonnegative

__all__ = ["delta_after_total_variation", "delta_before_total_variation"]


def _checked(epsilon: float, delta: float, total_variation: float) -> None:
    check_nonnegative("epsilon", epsilon)
    check_nonnegative("delta", delta)
    check_nonnegative("total_variation", total_variation)


def delta_after_total_variation(epsilon: float, delta: float, total_variation: float) -> float:
    """delta + (1 + e^eps) t rounded up: the delta of a mechanism within total variation t of an
    (eps, delta)-DP one (module docstring)."""
    _checked(epsilon, delta, total_variation)
    with working_precision(None):
        return upper_float(exact(delta) + (1 + exact(epsilon).exp()) * exact(total_variation))


def delta_before_total_variation(epsilon: float, delta: float, total_variation: float) -> float:
    """delta - (1 + e^eps) t rounded down: the delta the analysed (ideal) mechanism may spend so that
    the executed one, within total variation t of it, is (eps', delta)-DP for every eps' <= eps.
    Refused (naming ``delta``) when the slack uses up all of delta."""
    _checked(epsilon, delta, total_variation)
    with working_precision(None):
        left = lower_float(exact(delta) - (1 + exact(epsilon).exp()) * exact(total_variation))
    if not left > 0:
        raise AccountingError(
            "delta", delta, f"a delta above the samplers' total-variation slack (1 + e^eps) t = (1 + e^{epsilon!r}) * {total_variation!r}",
        )
    return left
