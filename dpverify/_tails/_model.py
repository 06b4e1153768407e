"""Named results of the tail verifier: one :class:`Evaluation` per (claim, setting), one
:class:`TailResult` per claim row (its worst setting), one :class:`TailReport` per table.

Verdicts. Each evaluation carries ``lower <= P <= upper`` for the actual probability P of the
claim's bad event, either proven (Arb enclosures, ``method`` "exact" or "chernoff") or holding
with probability >= ``confidence`` over the verifier's own sampling (``method`` "monte-carlo",
one-sided Clopper-Pearson limits):

- ``holds``: upper <= claimed probability;
- ``violated``: lower > claimed probability (for Monte Carlo: wrong with probability at most
  1 - confidence, the row's Bonferroni share of the table's false-alarm budget);
- ``inconclusive``: neither (e.g. only a Chernoff upper bound, above the claim). The gate counts
  it as a failure: a claim that cannot be verified is not verified.

Slack: ``1 - r_min / r`` where r is the claim's radius and r_min the smallest radius whose certified
probability is still <= the claimed one; 0.4 means the radius could be 40% smaller. Negative
slack means the claimed radius is too small.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .._presentation._json import jsonable

__all__ = ["HOLDS", "INCONCLUSIVE", "VIOLATED", "Evaluation", "TailReport", "TailResult", "verdict_of"]

HOLDS = "holds"
VIOLATED = "violated"
INCONCLUSIVE = "inconclusive"
_ORDER = {HOLDS: 0, INCONCLUSIVE: 1, VIOLATED: 2}


def verdict_of(lower: float, upper: float, claimed: float) -> str:
    if upper <= claimed:
        return HOLDS
    if lower > claimed:
        return VIOLATED
    return INCONCLUSIVE




@dataclass(frozen=True)
class Evaluation:
    """The claim at one parameter setting."""

    setting: dict[str, Any]
    claimed_probability: float
    lower: float
    upper: float
    method: str
    radius: float | None = None
    radius_min: float | None = None
    confidence: float = 1.0
    note: str = ""

    @property
    def verdict(self) -> str:
        return verdict_of(self.lower, self.upper, self.claimed_probability)

    @property
    def slack(self) -> float | None:
        if self.radius is None or self.radius_min is None or self.radius <= 0:
            return None
        return 1.0 - self.radius_min / self.radius

    @property
    def ratio(self) -> float:
        """upper / claimed: the row's worst setting maximises it."""
        return self.upper / self.claimed_probability if self.claimed_probability > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        out = {
            "setting": {k: jsonable(v) for k, v in self.setting.items()},
            "claimed_probability": self.claimed_probability,
            "actual_lower": self.lower,
            "actual_upper": self.upper,
            "method": self.method,
            "confidence": self.confidence,
            "radius": jsonable(self.radius) if self.radius is not None else None,
            "radius_min": jsonable(self.radius_min) if self.radius_min is not None else None,
            "slack": jsonable(self.slack) if self.slack is not None else None,
            "verdict": self.verdict,
        }
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class TailResult:
    """One row of the table: a claim (for one protocol), over its grid of settings.

    ``verdict`` is the worst over the settings (violated > inconclusive > holds); the numbers
    shown are those of the worst setting (largest upper / claimed); ``slack`` is the smallest
    slack over the settings.
    """

    claim: str
    title: str
    source: str
    bound: str
    protocol: str
    evaluations: tuple[Evaluation, ...]
    planted: bool = False
    seconds: float = 0.0
    notes: str = ""
    #: a paper's claim as printed, known to fail: reported, not gated (see ``Claim.finding``)
    finding: bool = False

    @property
    def worst(self) -> Evaluation:
        return max(self.evaluations, key=lambda e: (_ORDER[e.verdict], e.ratio))

    @property
    def verdict(self) -> str:
        return max((e.verdict for e in self.evaluations), key=_ORDER.__getitem__)

    @property
    def slack(self) -> float | None:
        values = [e.slack for e in self.evaluations if e.slack is not None]
        return min(values) if values else None

    @property
    def violations(self) -> list[Evaluation]:
        return [e for e in self.evaluations if e.verdict == VIOLATED]

    def to_dict(self, *, settings: bool = True) -> dict[str, Any]:
        w = self.worst
        out = {
            "claim": self.claim,
            "title": self.title,
            "source": self.source,
            "bound": self.bound,
            "protocol": self.protocol,
            "claimed_probability": w.claimed_probability,
            "actual_lower": w.lower,
            "actual_upper": w.upper,
            "method": w.method,
            "confidence": min(e.confidence for e in self.evaluations),
            "slack": jsonable(self.slack) if self.slack is not None else None,
            "verdict": self.verdict,
            "worst_setting": {k: jsonable(v) for k, v in w.setting.items()},
            "settings_checked": len(self.evaluations),
            "settings_violated": len(self.violations),
            "planted": self.planted,
            "paper_finding": self.finding,
            "seconds": round(self.seconds, 3),
        }
        if self.notes:
            out["notes"] = self.notes
        if settings:
            out["settings"] = [e.to_dict() for e in self.evaluations]
        return out


@dataclass
class TailReport:
    """The table: every row, the false-alarm budget of its Monte Carlo rows, the gate."""

    results: list[TailResult]
    false_alarm: float
    seconds: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True iff every (non-planted) claim holds; planted rows must be *caught* (not hold).

        Paper findings (a paper's claim as printed, known to fail) are reported, not gated: the
        gate rests on the project's own version of the claim, which sits beside them.
        """
        for r in self.results:
            if r.finding:
                continue
            if r.planted:
                if r.verdict == HOLDS:
                    return False
            elif r.verdict != HOLDS:
                return False
        return True

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def to_dict(self, *, settings: bool = True) -> dict[str, Any]:
        return {
            "tool": "dpverify tails",
            "ok": self.ok,
            "false_alarm_budget": self.false_alarm,
            "seconds": round(self.seconds, 2),
            "meta": self.meta,
            "results": [r.to_dict(settings=settings) for r in self.results],
        }
