"""Named results of an audit: one :class:`AuditResult` per (claim, pair, direction, estimator).

A result states a *lower confidence bound*: with probability at least ``confidence`` (over the
audit's own sampling) the true privacy parameter of the named direction is at least
``lower_bound``. ``verdict`` is ``"violated"`` exactly when ``lower_bound > claimed``, so a
"violated" verdict is wrong with probability at most ``1 - confidence``; "holds" means only that
no violation was found (an audit cannot prove a claim).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

from .._json import jsonable

__all__ = ["AuditReport", "AuditResult"]

HOLDS = "holds"
VIOLATED = "violated"


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

    @property
    def violated(self) -> bool:
        return self.verdict == VIOLATED

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (infinities become the strings "inf" / "-inf")."""
        out = asdict(self)
        return jsonable(out)

    def __str__(self) -> str:
        order = f" at alpha={self.order:g}" if self.order is not None else ""
        return (
            f"[{self.verdict}] {self.estimator}{order} {self.pair} {self.direction}: "
            f"lower={_fmt(self.lower_bound)} claimed={_fmt(self.claimed)} "
            f"(estimate {_fmt(self.estimate)}, {self.confidence:.4g} conf, n={self.samples}, "
            f"{self.seconds:.2f}s) via {self.event}"
        )


@dataclass(frozen=True)
class AuditReport:
    """All results of one :func:`audit` call; the family-wise error is at most ``alpha``.

    Attributes:
        results: the results, in (pair, direction, estimator) order.
        claim: the audited guarantee.
        alpha: family-wise error budget of the whole report (Bonferroni over ``results``).
        seconds: total wall time.
    """

    results: tuple[AuditResult, ...]
    claim: Any
    alpha: float
    seconds: float

    @property
    def verdict(self) -> str:
        return VIOLATED if any(r.violated for r in self.results) else HOLDS

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
            "seconds": self.seconds,
            "results": [r.to_dict() for r in self.results],
        }

    def __str__(self) -> str:
        head = f"audit of {self.claim}: {self.verdict} (family-wise error <= {self.alpha:g}, {self.seconds:.2f}s)"
        return "\n".join([head, *("  " + str(r) for r in self.results)])


def _margin(result: AuditResult) -> float:
    if math.isinf(result.lower_bound):
        return math.inf
    return result.lower_bound - result.claimed


def _fmt(x: float) -> str:
    return "inf" if x == math.inf else f"{x:.6g}"
