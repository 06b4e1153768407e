"""The Binomial mechanism's output pair evaluated lazily in Arb: for counts with many trials.

``Binomial.output_pair()`` lists every mass of Bin(N, p) as an exact Fraction, which costs
O(N^2) bits and is impractical beyond a few thousand trials. The shuffle model's count views
(SDP-DPE: the number of 1-bits among n (k + 1) messages) have N = n k fair coins with n in the
thousands, so the privacy-loss-distribution route needs the pair on a window only:

- ``log_p(x)`` = lgamma(N + 1) - lgamma(x + 1) - lgamma(N - x + 1) + x log p + (N - x) log(1 - p),
  an Arb ball (python-flint's ``lgamma`` is certified) containing the exact log-mass;
  ``log_q(x) = log_p(x - Delta)``; ``-inf`` off the support, exactly;
- ``tail_p(lo, hi)`` bounds the mass outside [lo, hi] by Hoeffding's inequality
  P[X <= a] <= exp(-2 (N p - a)^2 / N) for a <= N p (and the mirror for the upper tail), a proven
  bound, so the PLD's truncated mass is certified.

:func:`binomial_composition_epsilon` gives the certified eps(delta) of the k-fold composition of
this pair (the s coordinates of a shuffled count vector) through :func:`accounting._privacy_loss._pld.pld_epsilon`.
It agrees with ``epsilon_routes(Binomial(N, p, Delta), delta, compose=k)`` where both run (tested).
"""

from __future__ import annotations

import functools
from fractions import Fraction

from flint import arb

from .._core._certified import exact
from .._core._pairs import NEG_INF, IntegerPair
from .._core._validation import AccountingError, check_positive_int, check_probability

__all__ = ["BinomialPair", "binomial_composition_epsilon"]


class BinomialPair(IntegerPair):
    """P = Bin(N, p) on {0..N}, Q = P shifted by ``sensitivity``; log-masses in Arb, Hoeffding tails."""

    def __init__(self, trials: int, p: float | Fraction, sensitivity: int = 1) -> None:
        if isinstance(trials, bool):
            raise AccountingError("trials", trials, "an integer >= 1")
        self.trials = check_positive_int("trials", trials)
        check_probability("p", p)
        self.p = Fraction(p)
        if not 0 < self.p < 1:
            raise AccountingError("p", p, "a probability strictly between 0 and 1")
        self.sensitivity = check_positive_int("sensitivity", sensitivity)

    def _log_mass(self, x: int) -> arb:
        n = self.trials
        if x < 0 or x > n:
            return NEG_INF
        p = exact(self.p)
        log_binom = arb(n + 1).lgamma() - arb(x + 1).lgamma() - arb(n - x + 1).lgamma()
        return log_binom + x * p.log() + (n - x) * (1 - p).log()

    def log_p(self, k: int) -> arb:
        return self._log_mass(int(k))

    def log_q(self, k: int) -> arb:
        return self._log_mass(int(k) - self.sensitivity)

    def _outside(self, lo: int, hi: int) -> arb:
        """Hoeffding bound on Bin(N, p)'s mass outside [lo, hi] (upper endpoint certified)."""
        n = self.trials
        mean = exact(self.p) * n
        total = arb(0)
        if lo > 0:  # mass at x <= lo - 1
            gap = mean - (lo - 1)
            total += (-2 * gap * gap / n).exp() if gap.lower() > 0 else arb(1)
        if hi < n:  # mass at x >= hi + 1
            gap = (hi + 1) - mean
            total += (-2 * gap * gap / n).exp() if gap.lower() > 0 else arb(1)
        return total if total.upper() < 1 else arb(1)  # a ball whose upper endpoint is the bound

    def tail_p(self, lo: int, hi: int) -> arb:
        return self._outside(int(lo), int(hi))

    def tail_q(self, lo: int, hi: int) -> arb:
        return self._outside(int(lo) - self.sensitivity, int(hi) - self.sensitivity)

    def support(self) -> tuple[int, int]:
        return 0, self.trials + self.sensitivity


@functools.lru_cache(maxsize=4096)
def binomial_composition_epsilon(trials: int, p: float | Fraction, sensitivity: int, compose: int, delta: float) -> float:
    """Certified eps(delta) of the ``compose``-fold composition of Bin(trials, p) + a shift by ``sensitivity``."""
    from .._privacy_loss._pld import pld_epsilon

    check_positive_int("compose", compose)
    check_probability("delta", delta)
    return float(pld_epsilon(BinomialPair(trials, p, sensitivity), compose, delta, lower_bound=False).epsilon)
