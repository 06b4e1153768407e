"""Re-scoring finished audit results at another error level, and the p-values the suite needs.

:func:`audit` states each bound at one level: the report's ``alpha`` split evenly over its
results. A suite of many claims wants more: Holm's step-down procedure tests claim j at the level
alpha / (m - j + 1), which depends on how many other claims were rejected first. Re-running the
audits at every level would cost a full re-draw; instead, every result carries (in ``details``)
the bound-sample counts of the event or partition it was witnessed by, and the bound is
recomputed from them here.

Why this is sound. The event (epsilon, delta) or the partition (Renyi) of a result was chosen on
the selection sample, which is independent of the bound sample; conditional on it, the bound
sample's counts are binomial, and

- epsilon: log CP_lower(a; n, w l/2) - log CP_upper(b; m, w l/2), w the share of the result's
  budget the audit gave the reported event (``event_share``; 1/K for K events split evenly);
- delta: CP_lower(a; n, w l/2) - e^eps CP_upper(b; m, w l/2);
- Renyi: the certified minimum of D_alpha over the simultaneous Clopper-Pearson box at l/(2B)

each exceed the true value with probability at most ``l`` (the union bound over the K events,
or over the 2B intervals, is the audit's own: rescoring only the reported event is a union over
fewer sets, and still gives it only its own share w).

A result's own share of a claim's level is :func:`result_share` (``details["result_share"]``: the
audit's weighted split over results; 1/R for an even split). The Clopper-Pearson intervals shrink as ``l`` grows, so the
confidence sets are nested: a rejection at some level ``l' <= l`` implies that the truth is
outside the level-``l`` set. Hence for *any* rule that reports a level at which the result
rejects, ``P[p <= l] <= l`` under a true claim: :func:`result_p_value` is a valid p-value even
where the Renyi certificate is not exactly monotone in ``l``.

An infinite bound (a declared-impossible output) is certain given the declared law: p = 0.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np

from ._estimators import _box, event_delta_bound, event_epsilon_bound, renyi_box_lower
from ._results import HOLDS, VIOLATED, AuditResult

__all__ = ["rescore", "result_p_value", "result_share", "rescorable"]


def result_share(result: AuditResult, results: int) -> float:
    """The fraction of its report's error budget ``result`` was given (1/``results`` if not recorded)."""
    return float(result.details.get("result_share", 1.0 / results))


def rescorable(result: AuditResult) -> bool:
    """Whether ``result`` carries what :func:`rescore` needs (every result of :func:`audit` does)."""
    if result.lower_bound == math.inf:
        return True
    d = result.details
    if result.estimator in ("epsilon", "delta"):
        return "counts" in d and "events_tested" in d
    if result.estimator == "one-run":  # a one-run canary audit (issue 33): its counts
        return {"canaries", "guesses", "correct", "delta"} <= set(d)
    if result.estimator == "renyi":
        return "bin_counts" in d and "orders" in d and "claimed" in d
    return False


def _event_bound(result: AuditResult, level: float) -> float:
    a, n, b, m = result.details["counts"]
    k = int(result.details["events_tested"])
    if k == 0 or n == 0 or m == 0:
        return 0.0
    share = float(result.details.get("event_share", 1.0 / k))  # results of before the weighted split: 1/K
    each = min(level * share / 2, 0.5)
    if result.estimator == "epsilon":
        value = event_epsilon_bound(a, n, b, m, each)
    else:
        value = event_delta_bound(a, n, b, m, each, math.exp(result.details["epsilon"]))
    return max(value, 0.0) if not math.isnan(value) else 0.0


def _renyi_bounds(result: AuditResult, level: float) -> list[float]:
    p_counts, q_counts = (np.asarray(c, dtype=np.float64) for c in result.details["bin_counts"])
    orders = result.details["orders"]
    if p_counts.size == 0:
        return [0.0 for _ in orders]
    n, m = float(p_counts.sum()), float(q_counts.sum())
    box = _box(p_counts, n, q_counts, m, min(level, 1.0))
    start = (p_counts + 0.5) / (q_counts + 0.5) * ((m + 1.0) / (n + 1.0))
    return [renyi_box_lower(order, *box, start=start)[0] for order in orders]


def rescore(result: AuditResult, level: float) -> AuditResult:
    """``result`` with its bound (and verdict, confidence) recomputed at error level ``level``.

    Infinite bounds are returned unchanged. For Renyi results the reported order is again the
    one with the largest lower bound minus claim.
    """
    if not 0 < level <= 1:
        raise ValueError(f"level={level!r} is invalid: expected a probability in (0, 1]")
    if result.lower_bound == math.inf:
        return result
    if not rescorable(result):
        raise ValueError(f"result of estimator {result.estimator!r} carries no counts to rescore")
    if result.estimator == "one-run":  # the one-run bound at this level, from the result's counts
        from ._one_run_bound import one_run_epsilon

        d = result.details
        if "fdp_epsilons" in d:  # a server-view audit: the f-DP test of the claim's curve decides (one test, one level)
            from accounting import TradeOffCurve

            from ._one_run_fdp import fdp_epsilon, fdp_rejects

            counts = (int(d["canaries"]), int(d["guesses"]), int(d["correct"]))
            curve = TradeOffCurve(tuple(d["fdp_epsilons"]), tuple(d["fdp_deltas"]))
            lower = fdp_epsilon(*counts, level=min(level, 0.999999), delta=float(d["delta"]))
            rejects = fdp_rejects(curve, *counts, level=min(level, 0.999999))
            return dataclasses.replace(result, lower_bound=lower, verdict=VIOLATED if rejects else HOLDS, confidence=1.0 - level)
        lower = one_run_epsilon(int(d["canaries"]), int(d["guesses"]), int(d["correct"]), level=min(level, 0.999999), delta=float(d["delta"]))
        return dataclasses.replace(result, lower_bound=lower, verdict=VIOLATED if lower > result.claimed else HOLDS, confidence=1.0 - level)
    if result.estimator in ("epsilon", "delta"):
        lower = _event_bound(result, level)
        verdict = VIOLATED if lower > result.claimed else HOLDS
        return dataclasses.replace(result, lower_bound=lower, verdict=verdict, confidence=1.0 - level)
    lowers = _renyi_bounds(result, level)
    claims = result.details["claimed"]
    margins = [lo - cl for lo, cl in zip(lowers, claims)]
    i = int(np.argmax(margins))
    details = dict(result.details)
    details["lower"] = lowers
    verdict = VIOLATED if margins[i] > 0 else HOLDS
    return dataclasses.replace(result, claimed=claims[i], lower_bound=lowers[i], estimate=details["estimate"][i],
                               verdict=verdict, confidence=1.0 - level, order=details["orders"][i], details=details)


def result_p_value(result: AuditResult, grid: Sequence[float]) -> float:
    """The smallest level in ``grid`` at which ``result`` rejects its claim (1.0 if none does).

    A valid p-value (module docstring): ``P[p <= l] <= l`` under a true claim. The grid is
    searched by bisection (the bounds are monotone in the level up to the Renyi certificate's
    optimisation error; any rejecting grid point is a valid answer). Returns 0.0 for an
    infinite bound.
    """
    if result.lower_bound == math.inf:
        return 0.0
    levels = sorted(float(x) for x in grid if 0 < x <= 1)
    if not levels:
        raise ValueError("grid must contain at least one level in (0, 1]")

    def rejects(level: float) -> bool:
        return rescore(result, level).violated

    if not rejects(levels[-1]):
        return 1.0
    lo, hi = -1, len(levels) - 1  # invariant: rejects at levels[hi]; lo is below the search range
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if rejects(levels[mid]):
            hi = mid
        else:
            lo = mid
    return levels[hi]
