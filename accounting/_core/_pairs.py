"""Neighbouring output laws on the integers: the object the exact routes work on.

A discrete mechanism run on neighbouring inputs D and D' produces two laws P = M(D) and
Q = M(D') on the integers. Everything exact the accountant does with a discrete mechanism (its
Renyi divergence, its privacy-loss distribution, the hockey-stick divergence
delta(eps) = sum_k (P(k) - e^eps Q(k))_+ ) and what the auditor and the tail verifier need
(log-pmfs to detect impossible outputs, tail masses) is read from an :class:`IntegerPair`.

Contract, which every implementation must honour (and which the tests check):

- ``log_p(k)`` / ``log_q(k)`` return Arb balls *containing* log P(k) / log Q(k), evaluated at the
  caller's working precision; ``arb.neg_inf()`` where the mass is exactly 0.
- ``tail_p(lo, hi)`` / ``tail_q(lo, hi)`` return Arb balls whose *upper endpoint* bounds the mass
  of P / Q outside the integer window [lo, hi] (a proven bound, not an estimate).
- ``window(mass)`` returns a window [lo, hi] outside which both P and Q have at most ``mass``
  (certified through the tail bounds); it is a starting window for sums whose terms follow P
  or Q, not for tilted sums (Renyi sums at large alpha live far from P's bulk).
- ``support()`` returns (lo, hi) with ``None`` for an unbounded side.

Optional hooks (declared on :class:`IntegerPair`; ``None`` means not available, as for
:class:`accounting.Mechanism`): ``loss_atoms(forward)`` (the PLD in closed form: no output window,
no tail), ``loss_atom_count()`` (how many atoms it has), ``setup_cost()`` and ``output_cost()``
(the route planner's estimates, in seconds: before the first log-mass, per output).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

from flint import arb

from ._certified import exact
from ._validation import AccountingError, check_integer

__all__ = ["FinitePair", "IntegerPair", "ShiftPair"]

NEG_INF = arb.neg_inf()


class IntegerPair(ABC):
    """Two laws P = M(D), Q = M(D') on the integers (see the module docstring for the contract)."""

    @abstractmethod
    def log_p(self, k: int) -> arb: ...

    @abstractmethod
    def log_q(self, k: int) -> arb: ...

    @abstractmethod
    def tail_p(self, lo: int, hi: int) -> arb: ...

    @abstractmethod
    def tail_q(self, lo: int, hi: int) -> arb: ...

    @abstractmethod
    def support(self) -> tuple[int | None, int | None]: ...

    # ---- optional hooks: None = not available ---------------------------------------------------

    def loss_atoms(self, forward: bool = True) -> tuple[list[tuple[arb, arb]], arb, arb] | None:
        """The PLD of (P || Q) (``forward``) or (Q || P) in closed form: (losses with their masses,
        the mass where the other law is 0, a tail bound), or None (then the PLD reads the window)."""
        return None

    def loss_atom_count(self) -> int | None:
        """How many distinct losses :meth:`loss_atoms` returns (the planner's size), or None."""
        return None

    def setup_cost(self) -> float | None:
        """Estimated seconds before the first log-mass (a table built once), or None (nothing)."""
        return None

    def output_cost(self) -> float | None:
        """Estimated seconds per output of a PLD build, or None (the planner's default)."""
        return None

    def window(self, mass: float) -> tuple[int, int]:
        """A window [lo, hi] with P and Q mass outside it at most ``mass`` (doubling search)."""
        if not (0 < mass < 1):
            raise AccountingError("mass", mass, "a probability in (0, 1)")
        lo_s, hi_s = self.support()
        center = 0 if lo_s is None else lo_s
        if hi_s is not None and lo_s is not None:
            center = (lo_s + hi_s) // 2
        half = 4
        bound = arb(mass)
        while True:
            lo = center - half if lo_s is None else max(lo_s, center - half)
            hi = center + half if hi_s is None else min(hi_s, center + half)
            if self.tail_p(lo, hi).upper() <= bound and self.tail_q(lo, hi).upper() <= bound:
                return lo, hi
            half *= 2
            if half > 1 << 62:
                raise ArithmeticError("could not find a window holding all but the requested mass")



class ShiftPair(IntegerPair):
    """P = a law on all of Z (noise), Q = P shifted by ``sensitivity``: the additive-noise pairs.

    A subclass gives ``_log_pmf(x)`` (a ball containing log P(x)), ``_outside(lo, hi)`` (a ball
    whose upper endpoint bounds P's mass outside [lo, hi]) and a ``sensitivity`` attribute; Q's
    values are P's, shifted.
    """

    sensitivity: int

    @abstractmethod
    def _log_pmf(self, x: int) -> arb: ...

    @abstractmethod
    def _outside(self, lo: int, hi: int) -> arb: ...

    def log_p(self, k: int) -> arb:
        return self._log_pmf(int(k))

    def log_q(self, k: int) -> arb:
        return self._log_pmf(int(k) - self.sensitivity)

    def tail_p(self, lo: int, hi: int) -> arb:
        return self._outside(int(lo), int(hi))

    def tail_q(self, lo: int, hi: int) -> arb:
        return self._outside(int(lo) - self.sensitivity, int(hi) - self.sensitivity)

    def support(self) -> tuple[None, None]:
        return None, None


@dataclass(frozen=True)
class FinitePair(IntegerPair):
    """A pair with finite support given by exact probabilities (Fractions summing to 1).

    ``p[i]`` and ``q[i]`` are the masses at ``offset + i``.
    """

    p: tuple[Fraction, ...]
    q: tuple[Fraction, ...]
    offset: int = 0

    def __post_init__(self) -> None:
        check_integer("offset", self.offset)
        if len(self.p) != len(self.q) or len(self.p) == 0:
            raise AccountingError("q", self.q, f"a sequence as long as p ({len(self.p)} masses)")
        for name, masses in (("p", self.p), ("q", self.q)):
            values = tuple(Fraction(m) for m in masses)
            if any(m < 0 for m in values) or sum(values) != 1:
                raise AccountingError(name, masses, "non-negative exact masses (Fractions) summing to 1")
            object.__setattr__(self, name, values)

    @classmethod
    def from_masses(cls, p: Sequence[Fraction | int | str], q: Sequence[Fraction | int | str], offset: int = 0) -> "FinitePair":
        return cls(tuple(Fraction(x) for x in p), tuple(Fraction(x) for x in q), offset)

    def _mass(self, masses: tuple[Fraction, ...], k: int) -> arb:
        i = k - self.offset
        if i < 0 or i >= len(masses) or masses[i] == 0:
            return NEG_INF
        m = masses[i]
        return exact(m).log()

    def log_p(self, k: int) -> arb:
        return self._mass(self.p, k)

    def log_q(self, k: int) -> arb:
        return self._mass(self.q, k)

    def _tail(self, masses: tuple[Fraction, ...], lo: int, hi: int) -> arb:
        outside = sum(
            (m for i, m in enumerate(masses) if not (lo <= i + self.offset <= hi)),
            Fraction(0),
        )
        return exact(outside)

    def tail_p(self, lo: int, hi: int) -> arb:
        return self._tail(self.p, lo, hi)

    def tail_q(self, lo: int, hi: int) -> arb:
        return self._tail(self.q, lo, hi)

    def support(self) -> tuple[int, int]:
        return self.offset, self.offset + len(self.p) - 1

    def output_cost(self) -> float:
        """Estimated seconds per output of a PLD build (the route planner's cost model): the log
        of an exact Fraction costs about its bit length (1.6e-6 s per bit, measured on the
        Binomial(5000, 1/2) pair: 8 ms per output)."""
        bits = max((max(m.numerator.bit_length(), m.denominator.bit_length()) for m in self.p + self.q), default=1)
        return 1e-5 + 1.6e-6 * bits
