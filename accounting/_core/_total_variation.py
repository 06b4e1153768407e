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

:class:`WithinTotalVariation` is a charge for a mechanism executed by such a sampler: the analysed
mechanism plus the total variation t, a labelled field. Its zCDP and Renyi views are the analysed
law's (what the auditor tests and a zCDP ledger composes; :meth:`accounting.Ledger.total_variation`
carries the summed t beside that spend), and every conversion to (eps, delta) adds (1 + e^eps) t:
:meth:`WithinTotalVariation.approx_dp`, ``accounting.epsilon_routes`` and an (eps, delta) ledger.
It has no pure-DP view (a truncated law is not pure DP), so a pure-DP ledger refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._certified import exact, lower_float, upper_float, working_precision
from ._guarantees import ApproxDP
from ._renamed import renamed_keywords
from ._mechanism_base import Mechanism
from ._validation import AccountingError, check_nonnegative, check_positive_int

__all__ = ["WithinTotalVariation", "delta_after_total_variation", "delta_before_total_variation", "times_total_variation", "total_variation_of"]


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


@dataclass(frozen=True)
class WithinTotalVariation(Mechanism):
    """A release whose law is within total variation ``total_variation`` of ``mechanism``'s, for every
    input (e.g. a sum of truncated exact discrete Gaussians against the untruncated sum).

    ``mechanism`` is the analysed mechanism (an ``accounting`` mechanism with a zCDP or Renyi curve);
    ``total_variation`` a certified upper bound t. (eps, delta) views add (1 + e^eps) t to delta;
    zCDP and Renyi views are the analysed mechanism's, with t carried beside them (module docstring).
    """

    mechanism: Any
    total_variation: float

    family = "within-total-variation"

    def __post_init__(self) -> None:
        check_nonnegative("total_variation", self.total_variation)
        if not isinstance(self.mechanism, Mechanism):
            raise AccountingError("mechanism", self.mechanism, "an accounting Mechanism (the analysed law)")
        if isinstance(self.mechanism, WithinTotalVariation):
            raise AccountingError("mechanism", self.mechanism, "an analysed mechanism (add the total variations instead of nesting)")
        object.__setattr__(self, "total_variation", float(self.total_variation))

    def pure(self) -> None:
        """None: a law within total variation t > 0 of a pure-DP one need not be pure DP."""
        return None

    def zcdp(self) -> Any:
        """The analysed mechanism's zCDP (the executed law is within ``total_variation`` of it)."""
        return self.mechanism.zcdp()

    def rdp(self) -> Any:
        """The analysed mechanism's Renyi curve (the executed law is within ``total_variation`` of it)."""
        return self.mechanism.rdp()

    @property
    def rdp_is_exact(self) -> bool:
        """Whether the analysed mechanism's curve is exact (the curve :meth:`rdp` returns)."""
        return self.mechanism.rdp_is_exact

    def approx_dp(self, epsilon: float) -> ApproxDP:
        """(eps, delta(eps) + (1 + e^eps) t)-DP: the analysed mechanism's certified delta plus the slack."""
        inner = self.mechanism.approx_dp(epsilon)
        if inner is None:
            raise AccountingError("mechanism", self.mechanism, "a mechanism with a certified approx_dp(epsilon) (or use epsilon_routes)")
        return ApproxDP(inner.epsilon, delta_after_total_variation(inner.epsilon, inner.delta, self.total_variation))

    def closed_forms(self) -> dict:
        return {}

    def output_pair(self) -> Any:
        return None

    def describe(self) -> str:
        return f"{self.mechanism.describe()}, executed within total variation {self.total_variation!r} of it"


def total_variation_of(guarantee: Any) -> float:
    """The total variation a charge carries (0 for every guarantee but :class:`WithinTotalVariation`)."""
    return guarantee.total_variation if isinstance(guarantee, WithinTotalVariation) else 0.0


@renamed_keywords(count="compose")
def times_total_variation(total_variation: float, compose: int) -> float:
    """compose * t rounded up (the t of ``compose`` releases, composed; ``count=``: former name, deprecated)."""
    check_positive_int("compose", compose)
    with working_precision(None):
        return upper_float(exact(total_variation) * compose)
