"""The Binomial mechanism: integer query + Bin(N, p) noise.

P = Bin(N, p) on {0..N}, Q = P shifted by the sensitivity Delta on {Delta..N+Delta}. The supports
differ (P(0) > 0 = Q(0), Q(N + Delta) > 0 = P(N + Delta)), so D_alpha(P || Q) = +inf for every
alpha > 1 and the mechanism is *not* pure DP, RDP or zCDP: ``rdp()`` honestly returns the curve
+inf (no finite curve is invented). What it does give is (eps, delta)-DP with the exact
hockey-stick divergence
    delta(eps) = max over both directions of sum_k (P(k) - e^eps Q(k))_+,
computed here from the exact rational pmf (p is read exactly: floats are dyadic) and e^eps as an
Arb ball; each positive part is bounded above by the upper endpoint of its ball, so the sum is a
certified upper bound that is tight to the working precision.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import comb

import numpy as np
from flint import arb, fmpq

from .._core._certified import exact, upper_float, working_precision
from .._core._guarantees import RDP, ApproxDP
from .._core._pairs import FinitePair
from .._core._validation import AccountingError, check_nonnegative, check_positive_int, check_probability
from ._approx import safe_approx
from .._core._mechanism_base import Mechanism, check_sensitivity_int

__all__ = ["Binomial"]


@dataclass(frozen=True)
class Binomial(Mechanism):
    """Integer query + Bin(trials, p). Exact delta(eps); its Renyi curve is +inf (supports differ)."""

    trials: int
    p: float | Fraction
    sensitivity: int = 1

    family = "binomial"
    rdp_is_exact = True  # rdp() is the exact curve (route labels)

    def __post_init__(self) -> None:
        if isinstance(self.trials, bool):
            raise AccountingError("trials", self.trials, "an integer >= 1")
        check_positive_int("trials", self.trials)
        check_probability("p", self.p)
        check_sensitivity_int("sensitivity", self.sensitivity)

    def _masses(self) -> list[Fraction]:
        p = Fraction(self.p)
        N = self.trials
        return [comb(N, k) * p**k * (1 - p) ** (N - k) for k in range(N + 1)]

    def output_pair(self) -> FinitePair:
        masses = self._masses()
        d = self.sensitivity
        zeros = [Fraction(0)] * d
        return FinitePair(tuple(masses + zeros), tuple(zeros + masses), 0)

    def rdp(self) -> RDP:
        """+inf at every alpha: P and Q have different supports, so no finite Renyi bound exists."""
        return RDP.from_function(
            lambda alpha: arb.pos_inf(),
            f"Binomial(N={self.trials}, p={self.p}) exact: +inf (supports differ)",
            approx=safe_approx(lambda alphas: np.full(alphas.shape, np.inf), allow_inf=True),
        )

    def delta(self, epsilon, *, precision: int | None = None) -> float:
        """Exact hockey-stick delta(eps), the max over both directions, rounded up."""
        check_nonnegative("epsilon", epsilon)
        masses = self._masses()
        d = self.sensitivity
        P = masses + [Fraction(0)] * d
        Q = [Fraction(0)] * d + masses
        with working_precision(precision):
            e = exact(epsilon).exp()
            best = arb(0)
            for A, B in ((P, Q), (Q, P)):
                total = arb(0)
                for a, b in zip(A, B):
                    term = arb(fmpq(a.numerator, a.denominator)) - e * arb(fmpq(b.numerator, b.denominator))
                    if term.upper() > 0:
                        total += term.upper()
                if total.upper() > best.upper():
                    best = total.upper()
            return min(1.0, upper_float(best))

    def approx_dp(self, epsilon) -> ApproxDP:
        return ApproxDP(epsilon, self.delta(epsilon))

    def describe(self) -> str:
        return (
            f"Binomial mechanism Bin({self.trials}, {self.p}) on an integer query of sensitivity "
            f"{self.sensitivity}: (eps, delta(eps))-DP only (Renyi divergence is +inf)"
        )
