"""Privacy assertions for users' own test suites: :func:`assert_private`.

A thin layer over :func:`dpverify.audit` for pytest (or any test runner): it audits a mechanism
on the given neighbouring pairs and raises :class:`AssertionError` -- naming the witnessing event,
the lower confidence bound and the claim -- when the audit establishes a violation.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from ._audit._audit import audit
from ._audit._results import AuditReport

__all__ = ["assert_private"]


def _as_claim(claim: Any) -> Any:
    """A guarantee object, or the shorthands: a number is pure eps-DP, a pair (eps, delta) is
    (eps, delta)-DP."""
    from accounting import ApproxDP, PureDP, RDP, ZCDP, AccountingError

    if isinstance(claim, (PureDP, ApproxDP, ZCDP, RDP)):
        return claim
    if isinstance(claim, (int, float)) and not isinstance(claim, bool):
        return PureDP(claim)
    if isinstance(claim, tuple) and len(claim) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in claim):
        return ApproxDP(*claim)
    raise AccountingError("claim", claim, "a PureDP, ApproxDP, ZCDP or RDP guarantee, an epsilon, or an (epsilon, delta) tuple")


def assert_private(
    mechanism: Callable[..., Any],
    pairs: Any,
    claim: Any,
    *,
    samples: int = 200_000,
    alpha: float = 1e-3,
    seed: int = 0,
    **audit_options: Any,
) -> AuditReport:
    """Fail (``AssertionError``) if an audit finds ``mechanism`` less private than ``claim`` on ``pairs``.

    Args:
        mechanism: ``mechanism(data, rng, size)`` returning ``size`` outputs (see :func:`dpverify.audit`).
        pairs: a :class:`dpverify.NeighbourPair`, a ``(d, d_prime)`` tuple, or a list of either
            (e.g. :func:`dpverify.statdp_pairs`).
        claim: a guarantee (``accounting.PureDP``, ``ApproxDP``, ``ZCDP`` or ``RDP``), or a number
            (pure epsilon-DP) or an ``(epsilon, delta)`` tuple.
        samples: draws per input per pair.
        alpha: the false-alarm rate (below).
        seed: the one integer that determines every draw: the same call gives the same verdict.
        audit_options: passed on to :func:`dpverify.audit` (``estimators``, ``orders``, ...).

    Returns:
        The :class:`dpverify.AuditReport` when no violation is found.

    Which arithmetic. The assertion follows the audit of the mechanism as executed (floating
    point: ``float_bits=True`` by default), so a float mechanism private only in real arithmetic
    fails it; the message then says "violated in floating point; holds in real arithmetic at
    these draws" or "violated in both" (the real-arithmetic audit of the same draws, which
    costs no error budget: see :func:`dpverify.audit`). ``float_bits=False`` asserts the
    idealised, real-arithmetic claim instead.

    False alarms. A *correct* mechanism fails this assertion with probability at most ``alpha``
    (default 1e-3) over the draws: every bound in the report is a lower confidence bound, and
    the report's family-wise error over all its pairs, directions and estimators is at most
    ``alpha`` (Bonferroni). With a fixed ``seed`` the verdict is deterministic, so a test that
    passes once keeps passing; a failure is evidence, not noise to retry away (retrying until it
    passes voids the guarantee).

    Power. The audit tests only the pairs given and only events it can see in ``samples`` draws:
    it establishes a violation when some event E (chosen on a separate selection sample among
    the output's values, thresholds or bins) has log(P[M(D) in E] / P[M(D') in E]) above the
    claimed epsilon by more than the width of its Clopper-Pearson bounds, about
    10 / sqrt(samples * P[M(D') in E]) at the default alpha. Measured at the defaults (200,000
    draws, seed 1; ``tests/test_audit_user_targets.py``): a Laplace sum claimed 0.5-DP whose
    sensitivity 4 was forgotten (truly 2-DP) gets the lower bound 1.95; report-noisy-max over 3
    queries claimed 1-DP with its noise scale divided by 4 gets 3.64; their correct versions get
    0.47 and 0.81 (below the claims, as they must). Violations on pairs not given, on events
    rarer than about 10 / samples, or smaller than that width go undetected: passing is not a
    proof of privacy.
    """
    report = audit(mechanism, pairs, _as_claim(claim), samples=samples, alpha=alpha, seed=seed, **audit_options)
    if report.passed:
        return report
    worst = report.worst()
    bound = "inf" if math.isinf(worst.lower_bound) else f"{worst.lower_bound:.6g}"
    what = {"epsilon": "epsilon", "delta": f"delta at epsilon={worst.details.get('epsilon', float('nan')):.6g}",
            "renyi": f"Renyi divergence of order {worst.order:g}" if worst.order is not None else "Renyi divergence"}
    raise AssertionError(
        f"privacy claim {report.claim} {report.finding}: {what.get(worst.estimator, worst.estimator)} >= {bound} "
        f"(lower confidence bound, confidence {worst.confidence:.6g}; claimed {worst.claimed:.6g}) "
        f"on pair {worst.pair} {worst.direction}, witness event: {worst.event}; "
        f"{worst.samples} draws per input, seed {seed}, family-wise false-alarm rate <= {alpha:g}"
        + _real_arithmetic_note(report)
    )


def _real_arithmetic_note(report: AuditReport) -> str:
    """The real-arithmetic audit's best bound, when it ran (a float mechanism violated in floating point)."""
    real = report.real_arithmetic
    if real is None:
        return ""
    r = real.worst()
    bound = "inf" if math.isinf(r.lower_bound) else f"{r.lower_bound:.6g}"
    return (f"; real arithmetic (float_bits=False, the same pairs and draws): {real.verdict}, best lower bound {bound} "
            f"(claimed {r.claimed:.6g}) via {r.event}")
