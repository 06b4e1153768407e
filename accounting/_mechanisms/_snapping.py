"""Mironov's snapping mechanism: a real-valued Laplace release that is DP in floating point.

Mironov, "On Significance of the Least Significant Bits for Differential Privacy" (CCS 2012),
Section 5.2 and Theorem 1. For a query f of sensitivity 1, a bound B and a noise scale lambda with
lambda < B < 2^46 lambda, the mechanism

    clamp_B( round_Lambda( clamp_B(f(D)) (+) S (x) lambda (x) ln(U*) ) ),

evaluated in IEEE-754 doubles ((+), (x) the rounded operations, ln correctly rounded, S a fair sign,
U* a double uniform in (0, 1) drawn with probability proportional to its share of the reals,
Lambda the smallest power of two >= lambda, round_Lambda to the nearest multiple of Lambda), is

    eps = (1 + 2^-49 B) / lambda

differentially private (Theorem 1; ``2^-49 B`` is the price of the floating-point arithmetic: the
real-arithmetic mechanism would be 1/lambda-DP). :class:`Snapping` carries that guarantee, rounded
up; ``dpverify._executed._noise_mechanisms.snapping_mechanism`` is the implementation it is about (ln correctly
rounded through Arb balls, U* exact). Both clamps matter to the proof; the input clamp is also what
bounds the sensitivity of a query whose values are not bounded by construction, which is the
planted bug ``bug.snapping-no-clamp`` of the audit suite.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._core._certified import exact, upper_float, working_precision
from .._core._guarantees import RDP, PureDP
from .._core._validation import AccountingError
from .._core._mechanism_base import Mechanism, check_scale

__all__ = ["Snapping"]


@dataclass(frozen=True)
class Snapping(Mechanism):
    """Mironov's snapping mechanism on a sensitivity-1 query clamped to [-bound, bound], noise scale ``scale``.

    Pure ((1 + 2^-49 bound)/scale)-DP as executed in doubles (Mironov 2012, Thm 1), for
    scale < bound < 2^46 scale.
    """

    scale: float
    bound: float

    family = "snapping"

    #: the curve is pure DP's (an upper bound of the mechanism's own): routes label it a bound
    rdp_is_exact = False

    def __post_init__(self) -> None:
        check_scale("scale", self.scale)
        check_scale("bound", self.bound)
        if not float(self.scale) < float(self.bound) < 2.0**46 * float(self.scale):
            raise AccountingError("bound", self.bound, f"B with lambda < B < 2^46 lambda (lambda = {self.scale!r}), where Mironov's Theorem 1 holds")

    @property
    def epsilon(self) -> float:
        """(1 + 2^-49 B) / lambda, rounded up."""
        with working_precision(None):
            return upper_float((1 + exact(self.bound) / exact(2**49)) / exact(self.scale))

    def pure(self) -> PureDP:
        return PureDP(self.epsilon)

    def rdp(self) -> RDP:
        """The tight RDP curve of a pure eps-DP mechanism (nothing finer is proven for snapping)."""
        return self.pure().to_rdp()

    def describe(self) -> str:
        return (f"snapping mechanism (Mironov 2012): clamp to [-{self.bound:g}, {self.bound:g}], Laplace scale {self.scale:g} "
                f"in doubles, rounded to multiples of a power of two: {self.epsilon:.6g}-DP as executed")
