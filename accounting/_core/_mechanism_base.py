"""Shared machinery for the mechanism guarantees: the mechanism protocol, exact reals, guard bits.

Certification conventions used by every module in this package
--------------------------------------------------------------
- A Renyi curve is an :class:`accounting.RDP` leaf whose function receives an *exact* Arb ball
  alpha (floats are dyadic rationals, so ``exact(1.37)`` is exactly the double 1.37) and returns
  a ball whose upper endpoint is >= the true D_alpha. Leaves evaluate at the caller's working
  precision plus a few guard bits (:func:`guarded`), which only narrows the returned ball.
- Infinite sums are split into a finite part summed in ball arithmetic and a remainder for which
  a *proven* bound is added (the proof sits in the docstring of the function that adds it).
- Rényi sums sum_k P(k)^alpha Q(k)^(1-alpha) live where the tilted measure lives, not where P
  lives; each module says how its truncation follows the tilt (or avoids truncation altogether).
- For shift families of a symmetric noise law (all 1-D mechanisms here except the Binomial), the
  two directions of the neighbouring pair give the same divergence: reflecting k -> Delta - k
  maps (P, Q) to (Q, P). The Binomial module takes the maximum over both directions explicitly.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from fractions import Fraction
from typing import Iterator, Sequence

from flint import arb, ctx

from ._certified import exact
from ._validation import AccountingError, check_integer, check_positive

__all__ = [
    "Mechanism",
    "alpha_guard_bits",
    "arb_to_fraction",
    "as_exact_real",
    "check_scale",
    "check_sensitivity_int",
    "guarded",
    "half_square_up",
    "logsumexp",
    "nonneg_error",
]


class Mechanism:
    """The contract between a mechanism and the accountant's routes (public: :class:`accounting.Mechanism`).

    Every question a route, the ledger, the codec or the auditor may ask of a mechanism is a hook
    declared here. **Convention: a hook that is not available returns ``None``** (``closed_forms``
    returns ``{}``, ``rdp_is_exact`` is ``False``). A hook may instead raise
    :class:`accounting.AccountingError` naming the argument when a question it does answer has no
    certified answer for that argument (``WithinTotalVariation.approx_dp`` of a mechanism without
    one: the curve's conversion would miss the samplers' slack). Nothing is looked up with
    ``getattr`` at run time (tests/test_mechanism_contract.py scans for it): a mechanism answers
    exactly what its class declares, and an object that is not a Mechanism is refused. A subclass
    overrides what it knows; every route that can use the answers applies (``epsilon_routes`` lists
    the others as not applicable, with the reason). Built-in mechanisms are frozen, validated
    dataclasses. (The RDP routes learn that a curve is missing before building one only from the
    base's derived ``rdp()``; a class that overrides ``rdp()`` and returns None makes them fail at
    run time with that reason, reported beside the answer.)

    Guarantees (certified: every number an upper bound of the true parameter):

    - ``pure() -> PureDP | None``: pure epsilon-DP.
    - ``zcdp() -> ZCDP | None``: rho-zCDP.
    - ``rdp() -> RDP | None``: the Renyi curve. Default: the curve implied by :meth:`zcdp`
      (alpha * rho), else by :meth:`pure` (the tight pure -> RDP curve), else ``None``.
    - ``approx_dp(epsilon) -> ApproxDP | None``: a certified (epsilon, delta(epsilon)).
    - ``closed_forms() -> dict[str, RDP | ZCDP | PureDP]``: printed bounds from the literature,
      by label (comparison routes only, never the answer).
    - ``rdp_bound() -> RDP | None``: a cheaper certified curve than :meth:`rdp`, for when the exact
      one does not fit a time budget (``None`` where it would be :meth:`rdp` itself).

    Privacy-loss distributions (the PLD and optimal-composition routes):

    - ``output_pair() -> IntegerPair | None``: the neighbouring output laws on the integers.
    - ``monotone_loss_pair() -> MonotoneLossPair | None``: a continuous pair given by its privacy
      loss (connect-the-dots PLD).

    Provenance and cost hints (labels and the planner's estimates; never a number's soundness):

    - ``rdp_is_exact: bool``: whether :meth:`rdp` is the exact curve of one pair of laws (route
      labels; a calibration may then rule parameters out by :func:`accounting.rdp_conversion_exceeds`).
    - ``rdp_provenance(alpha) -> str | None``: what the value of :meth:`rdp` at ``alpha`` is, when it
      depends on the order (else the label follows ``rdp_is_exact``).
    - ``rdp_cost() -> float | None``: estimated seconds of an RDP conversion of :meth:`rdp`
      (``None``: a closed form's cost).
    - ``family: str``: a short stable name (the CLI, the auditor and the ledger's trail key on it);
      ``describe() -> str``: a one-line human description (default: the ``repr``).

    The pairs carry hooks of their own (:class:`accounting.IntegerPair`:
    ``loss_atoms`` / ``loss_atom_count`` / ``setup_cost`` / ``output_cost``;
    :class:`accounting.MonotoneLossPair`: ``has_series`` / ``hockey_stick_series`` /
    ``survival_q_series``, which a Poisson-subsampled pair composes with its own transform, and
    ``point_cost``, seconds per grid point of a point-by-point build, which a mixture states by
    its number of components and a disjoint union as the sum of its parts'), declared there with
    the same convention.
    """

    family: str = "mechanism"

    #: whether :meth:`rdp` is the exact curve (not an upper bound): False unless a class says so
    rdp_is_exact: bool = False

    def describe(self) -> str:
        """A one-line human description."""
        return repr(self)

    def pure(self):
        """Pure DP (a :class:`~accounting.PureDP`), or None."""
        return None

    def zcdp(self):
        """zCDP (a :class:`~accounting.ZCDP`), or None."""
        return None

    def rdp(self):
        """The certified RDP curve (an :class:`~accounting.RDP`), or None. Default: the curve of
        :meth:`zcdp`, else of :meth:`pure` (both certified conversions), else None."""
        z = self.zcdp()
        if z is not None:
            return z.to_rdp()
        p = self.pure()
        return None if p is None else p.to_rdp()

    def approx_dp(self, epsilon):
        """A certified (epsilon, delta(epsilon)) (an :class:`~accounting.ApproxDP`), or None."""
        return None

    def closed_forms(self) -> dict:
        """Printed bounds by label (RDP, ZCDP or PureDP values); {} when there are none."""
        return {}

    def rdp_bound(self):
        """A cheaper certified RDP curve than :meth:`rdp`, or None."""
        return None

    def output_pair(self):
        """The neighbouring output laws on the integers (an :class:`~accounting.IntegerPair`), or None."""
        return None

    def monotone_loss_pair(self):
        """The continuous pair given by its privacy loss (a :class:`~accounting.MonotoneLossPair`), or None."""
        return None

    def rdp_provenance(self, alpha) -> str | None:
        """What :meth:`rdp`'s value at ``alpha`` is (a label), or None (then ``rdp_is_exact`` says)."""
        return None

    def rdp_cost(self) -> float | None:
        """Estimated seconds of the RDP route with :meth:`rdp`, or None (a closed form's cost)."""
        return None


def check_scale(name: str, value: object):
    """A positive finite real parameter (int, float or Fraction), kept exactly as given."""
    return check_positive(name, value)


#: Largest sensitivity accepted (beyond 2^53 integers are not floats' neighbours any more).
MAX_SENSITIVITY = 2**53


def check_noise_range(name: str, value: object, sensitivity: object, low: float, high: float, *, squared: bool = False,
                      sensitivity_name: str = "sensitivity") -> None:
    """The noise parameter relative to the sensitivity, inside the range in which the certified
    evaluation is known to answer (measured, issue 15's fuzz harness): outside it Arb loses all
    precision (tiny noise: losses of 1e300 nats), a float division overflows, or a table of pmf
    values outgrows memory (Skellam variance / sensitivity^2 = 1e-11: an 849 MiB array)."""
    if sensitivity > MAX_SENSITIVITY:  # type: ignore[operator]
        raise AccountingError(sensitivity_name, sensitivity, f"at most 2^53 = {MAX_SENSITIVITY}")
    what = f"{name} / {sensitivity_name}" + ("^2" if squared else "")
    ratio = float(value) / (float(sensitivity) ** 2 if squared else float(sensitivity))  # type: ignore[arg-type]
    if not low <= ratio <= high:
        raise AccountingError(name, value, f"{what} in the supported range [{low:g}, {high:g}] (got {ratio:.3g}; outside it the "
                              "certified evaluation is not reliable)")


def check_sensitivity_int(name: str, value: object) -> int:
    """A positive integer sensitivity; integral floats are refused (sensitivities are typed exactly)."""
    if isinstance(value, float):
        raise AccountingError(name, value, "an integer >= 1 (a discrete mechanism needs an int sensitivity)")
    return check_integer(name, value, minimum=1)


def as_exact_real(value) -> arb:
    """An exact ball for a validated int/float/Fraction parameter."""
    return exact(value)


def arb_to_fraction(ball: arb) -> Fraction:
    """The exact rational value of an exact (radius 0) ball."""
    if not ball.is_exact():
        raise AccountingError("alpha", ball, "an exact ball (radius 0)")
    mantissa, exponent = ball.man_exp()
    mantissa, exponent = int(mantissa), int(exponent)
    if exponent >= 0:
        return Fraction(mantissa * (1 << exponent))
    return Fraction(mantissa, 1 << (-exponent))


@contextmanager
def guarded(extra: int = 16) -> Iterator[int]:
    """Raise the Arb precision by ``extra`` guard bits for the block (restored afterwards)."""
    bits = ctx.prec + int(extra)
    with ctx.workprec(bits):
        yield bits


def alpha_guard_bits(alpha: arb) -> int:
    """Guard bits for a leaf at ``alpha``: the bits lost dividing by (alpha - 1) near 1, plus 16."""
    am1 = float((alpha - 1).mid())
    if not math.isfinite(am1) or am1 >= 1:
        return 16
    if am1 <= 0:
        return 64
    return 16 + max(0, -math.floor(math.log2(am1)))


def logsumexp(values: Sequence[arb]) -> arb:
    """log(sum_i exp(v_i)) in ball arithmetic, stable: factor out the largest midpoint."""
    if len(values) == 0:
        return arb.neg_inf()
    top = max(values, key=lambda v: float(v.mid()) if v.is_finite() else -math.inf)
    shift = top.mid()
    total = arb(0)
    for v in values:
        total += (v - shift).exp()
    return shift + total.log()


def nonneg_error(bound: arb) -> arb:
    """The ball [0, u] with u >= the upper endpoint of ``bound`` (a proven non-negative remainder)."""
    return arb(0).union(bound.upper())


def half_square_up(value) -> float:
    """value^2 / 2 rounded up to a float (for eps-DP => eps^2/2-zCDP)."""
    from ._certified import upper_float, working_precision

    with working_precision(None):
        e = exact(value)
        return upper_float(e * e / 2)
