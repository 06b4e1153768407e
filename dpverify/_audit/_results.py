"""Named results of an audit: one :class:`AuditResult` per (claim, pair, direction, estimator).

A result states a *lower confidence bound*: with probability at least ``confidence`` (over the
audit's own sampling) the true privacy parameter of the named direction is at least
``lower_bound``. ``verdict`` is ``"violated"`` exactly when ``lower_bound > claimed``, so a
"violated" verdict is wrong with probability at most ``1 - confidence``; "holds" means only that
no violation was found (an audit cannot prove a claim).

A report also says which arithmetic a violation is about (:attr:`AuditReport.arithmetic`): an
audit with floating-point views (``float_bits=True``, the default) that finds a violation of a
float mechanism is followed by the real-arithmetic audit (``float_bits=False``) of the same pairs
on the same draws, so a violation seen only through the floating-point representation (bit
patterns, lowest set bits) reads "violated in floating point; holds in real arithmetic at these
draws", and one seen in both reads "violated in both". :func:`dpverify.audit` explains why the
two verdicts together keep the report's family-wise error at ``alpha``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

from .._presentation._json import jsonable
from .._statistics._confidence import cp_lower, cp_upper

__all__ = ["AuditReport", "AuditResult"]

HOLDS = "holds"
VIOLATED = "violated"

#: :attr:`AuditReport.arithmetic`: where a violation was established
NONE = "none"
FLOATING_POINT = "floating point"
BOTH = "both"
#: :attr:`AuditReport.finding`: the verdicts of both arithmetics in words
FINDINGS = {
    NONE: "holds",
    FLOATING_POINT: "violated in floating point; holds in real arithmetic at these draws",
    BOTH: "violated in both floating point and real arithmetic",
}


@dataclass(frozen=True)
class AuditResult:
    """One lower confidence bound and its verdict.

    Attributes:
        claimed: the claimed value of the audited parameter (epsilon, delta at the claimed
            epsilon, or the Renyi divergence bound eps(order) at the reported order).
        lower_bound: a lower confidence bound on the true value (``math.inf`` when an output
            seen under one input is impossible under the other by the declared law).
        estimate: a point estimate of the same quantity for the witnessing event (may be inf).
        confidence: 1 - (the error budget this single bound was given).
        verdict: ``"violated"`` iff ``lower_bound > claimed``, else ``"holds"``.
        samples: draws of the mechanism per input behind this result (pilot + selection + bound).
        seconds: wall time spent on the pair this result belongs to.
        event: human description of the witnessing event (or partition).
        method: how the bound was computed.
        estimator: ``"epsilon"``, ``"delta"`` or ``"renyi"``.
        pair: label of the neighbouring pair.
        direction: ``"D||D'"`` (P = M(D) against Q = M(D')) or ``"D'||D"``.
        order: the Renyi order the result is reported at (``None`` for epsilon and delta).
        details: estimator-specific extras (per-order table, counts, rounds).
        delta_at_epsilon: (``"delta"`` results) the lower bound on delta at the claimed epsilon,
            ``lower_bound`` under its own name; ``None`` for the other estimators.
        epsilon_at_delta: (``"delta"`` results) a lower bound on epsilon at the claimed delta,
            log((CP_lower P(E) - delta) / CP_upper Q(E)) on the same witnessing event and the
            same bound-sample counts (0 when CP_lower P(E) <= delta). It holds simultaneously with
            ``lower_bound`` (both are functions of the same simultaneous Clopper-Pearson bounds),
            at no extra error; the event was chosen for delta, so it may be loose. ``None`` for
            the other estimators.
        rho: (``"renyi"`` results) a lower bound on the zCDP parameter, max over the audited
            orders of D_alpha-lower / alpha (rho-zCDP means D_alpha <= rho alpha for all alpha;
            the per-order bounds are simultaneous); compare with the claimed rho of a zCDP
            claim. ``None`` for the other estimators.

    The last three are derived from the other fields (recomputed by :func:`dataclasses.replace`,
    so a re-scored result carries its own).
    """

    claimed: float
    lower_bound: float
    estimate: float
    confidence: float
    verdict: str
    samples: int
    seconds: float
    event: str
    method: str
    estimator: str = ""
    pair: str = ""
    direction: str = ""
    order: float | None = None
    details: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    delta_at_epsilon: float | None = field(default=None, init=False, compare=False)
    epsilon_at_delta: float | None = field(default=None, init=False, compare=False)
    rho: float | None = field(default=None, init=False, compare=False)

    def __post_init__(self) -> None:
        if self.estimator == "delta":
            object.__setattr__(self, "delta_at_epsilon", self.lower_bound)
            object.__setattr__(self, "epsilon_at_delta", _epsilon_at_delta(self))
        elif self.estimator == "renyi":
            object.__setattr__(self, "rho", _rho(self))

    @property
    def violated(self) -> bool:
        return self.verdict == VIOLATED

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (infinities become the strings "inf" / "-inf")."""
        out = asdict(self)
        return jsonable(out)

    def __str__(self) -> str:
        order = f" at alpha={self.order:g}" if self.order is not None else ""
        also = ""
        if self.epsilon_at_delta is not None:
            also = f" (epsilon >= {_fmt(self.epsilon_at_delta)} at delta={self.claimed:.3g})"
        elif self.rho is not None:
            also = f" (rho >= {_fmt(self.rho)})"
        return (
            f"[{self.verdict}] {self.estimator}{order} {self.pair} {self.direction}: "
            f"lower={_fmt(self.lower_bound)} claimed={_fmt(self.claimed)}{also} "
            f"(estimate {_fmt(self.estimate)}, {self.confidence:.4g} conf, n={self.samples}, "
            f"{self.seconds:.2f}s) via {self.event}"
        )


@dataclass(frozen=True)
class AuditReport:
    """All results of one :func:`audit` call; the family-wise error is at most ``alpha``.

    Attributes:
        results: the results, in (pair, direction, estimator) order.
        claim: the audited guarantee.
        alpha: family-wise error budget of the whole report (Bonferroni over ``results``, and
            over both arithmetics: see :func:`dpverify.audit`).
        seconds: total wall time (the real-arithmetic audit included).
        float_bits: whether the audit looked at the floating-point representation of float outputs.
        floating_point_views: whether some view actually did (a float output with
            ``float_bits=True``: lowest-set-bit views, bit-pattern features). Without such a
            view the audit saw real-arithmetic events only and is its own real-arithmetic audit.
        real_arithmetic: the real-arithmetic audit (``float_bits=False``) of the same pairs on
            the same draws, run when this audit used floating-point views and found a
            violation; ``None`` otherwise.

    ``verdict`` is the verdict of the audit as run (floating point, unless ``float_bits=False``):
    it governs ``passed``, :func:`dpverify.assert_private` and the suite's exit code (what runs
    is what counts). ``real_arithmetic_verdict`` and ``arithmetic`` say whether a violation is
    also one of the mechanism in real arithmetic.
    """

    results: tuple[AuditResult, ...]
    claim: Any
    alpha: float
    seconds: float
    float_bits: bool = True
    floating_point_views: bool = False
    real_arithmetic: AuditReport | None = field(default=None, repr=False)

    @property
    def verdict(self) -> str:
        """The verdict of the audit as run (``"holds"`` or ``"violated"``); it governs."""
        return VIOLATED if any(r.violated for r in self.results) else HOLDS

    @property
    def real_arithmetic_verdict(self) -> str | None:
        """The verdict in real arithmetic: this report's own when it used no floating-point view,
        else the real-arithmetic audit's; ``None`` when that did not run (no violation in
        floating point, so there was nothing to tell apart)."""
        if not self.floating_point_views:
            return self.verdict
        return self.real_arithmetic.verdict if self.real_arithmetic is not None else None

    @property
    def arithmetic(self) -> str:
        """Where a violation was established: ``"none"``, ``"floating point"`` (only there: the
        real-arithmetic audit of the same draws found none) or ``"both"``. A violation in real
        arithmetic is one of the float mechanism too: its events are events of the outputs as
        executed."""
        if self.verdict != VIOLATED:
            return NONE
        return BOTH if self.real_arithmetic_verdict == VIOLATED else FLOATING_POINT

    @property
    def finding(self) -> str:
        """Both verdicts in words, e.g. "violated in floating point; holds in real arithmetic at
        these draws"."""
        arithmetic = self.arithmetic
        if arithmetic == FLOATING_POINT and self.real_arithmetic_verdict is None:  # only for a report built by hand
            return "violated in floating point; real arithmetic not audited"
        if arithmetic == NONE and not self.float_bits:
            return "holds (real arithmetic only: float_bits=False)"
        return FINDINGS[arithmetic]

    @property
    def violations(self) -> tuple[AuditResult, ...]:
        return tuple(r for r in self.results if r.violated)

    @property
    def passed(self) -> bool:
        return self.verdict == HOLDS

    def worst(self, estimator: str | None = None) -> AuditResult:
        """The result with the largest lower_bound - claimed (optionally for one estimator)."""
        pool = [r for r in self.results if estimator is None or r.estimator == estimator]
        if not pool:
            raise KeyError(f"no results for estimator {estimator!r}")
        return max(pool, key=lambda r: _margin(r))

    def __iter__(self) -> Iterator[AuditResult]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim": str(self.claim),
            "alpha": self.alpha,
            "verdict": self.verdict,
            "real_arithmetic_verdict": self.real_arithmetic_verdict,
            "arithmetic": self.arithmetic,
            "finding": self.finding,
            "float_bits": self.float_bits,
            "floating_point_views": self.floating_point_views,
            "seconds": self.seconds,
            "results": [r.to_dict() for r in self.results],
            "real_arithmetic": self.real_arithmetic.to_dict() if self.real_arithmetic is not None else None,
        }

    def __str__(self) -> str:
        head = f"audit of {self.claim}: {self.finding} (family-wise error <= {self.alpha:g}, {self.seconds:.2f}s)"
        lines = [head, *("  " + str(r) for r in self.results)]
        if self.real_arithmetic is not None:
            lines.append(f"  real arithmetic (float_bits=False, the same pairs and draws): {self.real_arithmetic.verdict}")
            lines.extend("    " + str(r) for r in self.real_arithmetic.results)
        return "\n".join(lines)


def _epsilon_at_delta(result: AuditResult) -> float | None:
    """log((CP_lower(a; n, each) - delta) / CP_upper(b; m, each)) on the result's event, at the
    result's own level: the epsilon an (epsilon, delta) claim with this delta would need."""
    d = result.details
    if "counts" not in d or "events_tested" not in d:
        return None
    a, n, b, m = d["counts"]
    k = int(d["events_tested"])
    # 1 - confidence is the result's level up to one rounding of 1 - level; a level smaller by
    # 2^-52 can only widen the intervals, so the bound stays valid at the stated confidence
    level = (1.0 - result.confidence) - 2.0**-52
    if k == 0 or n == 0 or m == 0 or level <= 0:
        return 0.0
    each = min(level / (2 * k), 0.5)
    excess = float(cp_lower(a, n, each)) - result.claimed
    if excess <= 0:
        return 0.0
    upper = float(cp_upper(b, m, each))
    return math.inf if upper <= 0 else max(0.0, math.log(excess) - math.log(upper))


def _rho(result: AuditResult) -> float | None:
    """max over the audited orders of (lower bound on D_alpha) / alpha."""
    if result.lower_bound == math.inf:
        return math.inf
    d = result.details
    if "lower" in d and "orders" in d and d["orders"]:
        return max(max(lo / a for lo, a in zip(d["lower"], d["orders"])), 0.0)
    if result.order is not None:
        return max(result.lower_bound / result.order, 0.0)
    return None


def _margin(result: AuditResult) -> float:
    if math.isinf(result.lower_bound):
        return math.inf
    return result.lower_bound - result.claimed


def _fmt(x: float) -> str:
    return "inf" if x == math.inf else f"{x:.6g}"
