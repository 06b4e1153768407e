"""Amplification by shuffling: certified (eps, delta) for n users whose eps0-LDP reports are shuffled.

Guarantees (small immutable value objects, accepted by :func:`accounting.epsilon_routes` and the
:class:`accounting.Ledger`):

- :class:`ShuffledLDP` ``(epsilon0, n)``: each of n users applies an eps0-DP local randomizer and a
  trusted shuffler permutes the n reports;
- :class:`ShuffledRandomizedResponse` ``(epsilon0, n)``: the same with binary randomized response,
  whose shuffled output is the count of 1s.

Routes (each an upper bound of the true eps(delta); a route's label says which paper it is)
-----------------------------------------------------------------------------------------
1. ``fmt21-clone`` — Feldman, McMillan & Talwar, "Hiding among the clones" (FOCS 2021,
   arXiv 2012.12803), Thm 3.2: for neighbouring data sets differing in user 1 the shuffled output
   is a post-processing of the pair
       P = (A + D, C - A + 1 - D),   Q = (A + 1 - D, C - A + D),
       C ~ Bin(n - 1, p),  A | C ~ Bin(C, 1/2),  D ~ Bern(e^eps0 / (e^eps0 + 1)),
   with clone probability p = e^{-eps0}. Their numerical procedure (App. E; the authors' reference
   code groups the c values in steps and takes the worst end of each group, then bisects on eps in
   floats) is an upper bound of the hockey-stick divergence of this pair. Here the divergence of the
   pair is evaluated *exactly* (no grouping), in Arb, so the value is at most theirs:
   C is revealed by the output (a + b = c + 1), hence
       delta(eps) = sum_c Bin(n-1, p)(c) * delta_c(eps),
   and given C = c the loss log(P/Q)(a) = log((q a + r (c+1-a)) / (r a + q (c+1-a))) (q = e^eps0 /
   (e^eps0+1), r = 1 - q) is increasing in a, so
       delta_c(eps) = max_a V_c(a),  V_c(a) = (q - e^eps r) B_c(a-1) - (e^eps - 1) T_c(a),
   with B_c the Bin(c, 1/2) pmf and T_c(a) = P[Bin(c, 1/2) >= a]. B_c and T_c are exact rationals
   (integer binomial sums over 2^c), walked along c and a with Pascal's rule in exact integers.
   The reflection a -> c + 1 - a swaps P and Q, so both directions agree. The c values outside a
   window carry a mass bounded by 1 - (the window's mass) in Arb and are charged delta_c <= 1.
2. ``fmt23-stronger-clone`` — Feldman, McMillan & Talwar, "Stronger privacy amplification by
   shuffling for Renyi and approximate differential privacy" (SODA 2023, arXiv 2208.04591): the same
   pair with the larger clone probability p = 2 / (e^eps0 + 1). By the paper's erratum this holds for
   local randomizers admitting their decomposition (each report is, with probability
   2/(e^eps0+1), an even mixture of the two reports the differing user could send: as we read the
   erratum, R(x) >= (R(x_1^0) + R(x_1^1)) / (e^eps0 + 1) pointwise for every x), not for every
   eps0-LDP randomizer; :class:`ShuffledLDP` uses it only when ``stronger_clone=True`` is declared,
   and the caller answers for the condition.
   Binary randomized response satisfies it (the "privacy blanket": RR(x) keeps x w.p. 1 - 2r and
   outputs a fair bit w.p. 2r, r = 1/(e^eps0+1); revealing who drew a fair bit, and the others'
   bits, is the pair above), so :class:`ShuffledRandomizedResponse` always has this route.
3. ``exact-count`` (binary RR only) — the analyzer sees the count of 1s. If m of the other n - 1
   users hold 1, the count is S_m + Bern(q) against S_m + Bern(r), S_m = Bin(n-1-m, r) + Bin(m, q),
   and the hockey-stick divergence of that pair (Poisson-binomial, so its loss is monotone in the
   count and the same V(a) formula applies with f = the pmf of S_m) is evaluated in Arb. The worst
   m is not always 0 (for n = 10, eps0 = 1 it is m = 1); it is located by a float scan over m
   (every m for n <= ``_FULL_SCAN``, otherwise m < 64 and a grid), re-run at the candidate eps, and
   each candidate the scan cannot rule out is certified. The scan is the route's one
   non-certified step (it chooses *which* pair is certified): the route is certified only after a
   full scan (n <= ``_FULL_SCAN``, one round); otherwise it is listed as a comparison.
4. Closed forms (labelled comparisons): FMT21 Thm 3.1, in the form of the authors' reference code
   (which reproduces the value their README prints), valid for eps0 <= log(n / (16 log(2/delta)));
   FMT23's closed form log(1 + (e^eps0 - 1)(4 sqrt(2 log(4/delta)) / sqrt((e^eps0+1) n) + 4/n)) for
   eps0 <= log(n / (8 log(2/delta))) (only where the stronger clone applies).
5. Composition of k shuffled rounds: the privacy-loss distribution of the dominating pair
   (``pld``, through :mod:`accounting._privacy_loss._pld`). For the clone pairs, c is rounded *down* to a grid of
   group floors: the pair at c + 1 is a post-processing of the pair at c (add one more fair coin to
   A or to C - A), so a smaller c is a dominating pair and the grouped mixture (c revealed)
   dominates the true one; composition preserves domination. For binary RR the count pair itself
   (at the candidate worst m's, k rounds on one data set) is composed. Beside it, ``advanced``:
   each single-round bound at delta/(2k) composed by Dwork-Rothblum-Vadhan with slack delta/2
   (certified for the certified rounds; a comparison for the closed forms). The PLD grid is
   h = min(1e-4, 0.02/k), losses rounded up (pessimistic), so the k-fold value carries a bias of
   about k h / 2 in eps on top of the grouping's (benchmarks/shuffle_accounting.md).
   Every route is a planner route (:mod:`accounting._core._planner`, issue 30): it has a cost estimate
   (time and memory; the PLD's composed window from the single round's loss spread, which grows
   like sqrt(k)) and runs when it fits ``time_budget`` and ``memory_budget``, reported with why
   when not; there is no size threshold (the PLD routes used to be skipped above 2,048 rounds).
Every shuffled mechanism is also eps0-DP (the reports are eps0-DP and shuffling is post-processing),
which gives the ``pure`` route and the RDP curve the ledger composes with other charges.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import arb, fmpz

from .._core._certified import exact, upper_float, working_precision
from .._core._guarantees import RDP, ApproxDP, PureDP, ZCDP
from .._core._mechanism_base import Mechanism
from .._core._pairs import IntegerPair
from .._core._result import Result
from .._core._validation import AccountingError, check_integer, check_nonnegative, check_positive, check_positive_int, check_probability

__all__ = [
    "ShuffledLDP",
    "ShuffledRandomizedResponse",
    "clone_delta",
    "clone_epsilon",
    "fmt21_closed_form",
    "fmt23_closed_form",
    "shuffle_report",
    "shuffle_routes",
    "shuffled_rr_delta",
    "shuffled_rr_epsilon",
]

#: Arb precision (bits) of the shuffle routes: the weights W(c) are walked along c by a recurrence.
_PRECISION = 128
#: Standard deviations of C ~ Bin(n-1, p) kept in the window (the rest is charged delta_c = 1).
_C_SIGMAS = 11.0
#: Standard deviations of A ~ Bin(c, 1/2) tabulated for the PLD (the rest goes to the +inf atom:
#: about 1e-14 of mass per round, far below any delta of interest).
_A_SIGMAS = 8.0
_VARIANTS = ("fmt21", "fmt23")
#: Binary RR: every configuration m of the others' bits is scanned up to this n.
_FULL_SCAN = 4096


# ----------------------------------------------------------------------------------------------
# guarantees


def _binom():
    """scipy.stats.binom, imported on first use (scipy.stats costs ~1 s of import time)."""
    from scipy.stats import binom

    return binom


#: Largest number of shuffled users: the exact routes walk c-bit integers (c ~ n e^-eps0) for
#: about sqrt(c) steps, ~20 s at n = 10^6; at n = 10^17 GMP aborts the process trying to allocate
#: the integers (issue 15's fuzz harness), so larger n is refused with this range.
_MAX_USERS = 10**7


def _check_n(n: object) -> int:
    if isinstance(n, bool):
        raise AccountingError("n", n, "an integer number of users >= 2")
    n = check_integer("n", n, minimum=2)
    if n > _MAX_USERS:
        raise AccountingError("n", n, "an integer number of users in [2, 10^7] (the exact routes' cost grows as n^1.5)")
    return n


def _check_eps0(value: object) -> float:
    check_positive("epsilon0", value)
    if not 1e-9 <= float(value) <= 50:  # type: ignore[arg-type]
        # below 1e-9 the randomizer's two laws agree to the float search's resolution (e^eps0 - 1 ~ eps0 vanishes in q - r)
        raise AccountingError("epsilon0", value, "a real number in [1e-9, 50]", "amplification is nil far before eps0 = 50")
    return value  # type: ignore[return-value]


@dataclass(frozen=True)
class ShuffledLDP(Mechanism):
    """n users each apply an ``epsilon0``-DP local randomizer; their reports are shuffled.

    ``stronger_clone=True`` declares that the randomizer admits FMT23's decomposition (see the
    module docstring), which unlocks the tighter ``fmt23-stronger-clone`` route.
    """

    epsilon0: float
    n: int
    stronger_clone: bool = False

    family = "shuffled-ldp"

    def __post_init__(self) -> None:
        _check_eps0(self.epsilon0)
        _check_n(self.n)
        if not isinstance(self.stronger_clone, bool):
            raise AccountingError("stronger_clone", self.stronger_clone, "True or False")

    def pure(self) -> PureDP:
        """eps0-DP: the local reports are eps0-DP and shuffling is post-processing."""
        return PureDP(self.epsilon0)

    def zcdp(self) -> ZCDP:
        return self.pure().to_zcdp()

    def rdp(self) -> RDP:
        """The tight RDP curve of eps0-DP (valid, not amplified: used when composed with other charges)."""
        return RDP.pure(self.epsilon0)

    def closed_forms(self) -> dict:
        return {}

    def clone_variants(self) -> tuple[str, ...]:
        return ("fmt21", "fmt23") if self.stronger_clone else ("fmt21",)

    def describe(self) -> str:
        extra = ", FMT23 decomposition declared" if self.stronger_clone else ""
        return f"{self.n} shuffled {self.epsilon0:g}-LDP reports{extra}"

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class ShuffledRandomizedResponse(Mechanism):
    """n users each send binary randomized response RR(``epsilon0``); the analyzer sees the count of 1s."""

    epsilon0: float
    n: int

    family = "shuffled-randomized-response"

    def __post_init__(self) -> None:
        _check_eps0(self.epsilon0)
        _check_n(self.n)

    def pure(self) -> PureDP:
        return PureDP(self.epsilon0)

    def zcdp(self) -> ZCDP:
        return self.pure().to_zcdp()

    def rdp(self) -> RDP:
        return RDP.pure(self.epsilon0)

    def closed_forms(self) -> dict:
        return {}

    def clone_variants(self) -> tuple[str, ...]:
        return ("fmt21", "fmt23")

    def describe(self) -> str:
        return f"shuffled count of {self.n} binary randomized responses, eps0 = {self.epsilon0:g}"

    def __str__(self) -> str:
        return self.describe()


Shuffled = (ShuffledLDP, ShuffledRandomizedResponse)


# ----------------------------------------------------------------------------------------------
# closed forms (comparison routes)


def fmt21_closed_form(epsilon0: float, n: int, delta: float) -> float | None:
    """FMT21 Thm 3.1 as the authors' reference code evaluates it, rounded up; None outside its range.

    eps <= log(1 + (1 - e^{-eps0}) / (1 + e^{-eps0 - e1}) (a + c)),  a = 8 sqrt(e^eps0 log(4/delta) / n),
    c = 8 e^eps0 / n, e1 = log(1 + a + c); valid for eps0 <= log(n / (16 log(2/delta))).
    """
    _check_eps0(epsilon0)
    n = _check_n(n)
    check_probability("delta", delta)
    with working_precision(_PRECISION):
        e0, d = exact(epsilon0), exact(delta)
        if not bool(e0 <= (arb(n) / (16 * (2 / d).log())).log()):
            return None
        a = 8 * (e0.exp() * (4 / d).log() / n).sqrt()
        c = 8 * e0.exp() / n
        e1 = (1 + a + c).log()
        b = -((-e0).expm1())
        den = 1 + (-e0 - e1).exp()
        return upper_float((b / den * (a + c)).log1p())


def fmt23_closed_form(epsilon0: float, n: int, delta: float) -> float | None:
    """FMT23's closed form log(1 + (e^eps0 - 1)(4 sqrt(2 log(4/delta)/((e^eps0+1) n)) + 4/n)), rounded up;
    None outside eps0 <= log(n / (8 log(2/delta)))."""
    _check_eps0(epsilon0)
    n = _check_n(n)
    check_probability("delta", delta)
    with working_precision(_PRECISION):
        e0, d = exact(epsilon0), exact(delta)
        if not bool(e0 <= (arb(n) / (8 * (2 / d).log())).log()):
            return None
        a = 4 * (2 * (4 / d).log() / ((e0.exp() + 1) * n)).sqrt()
        return upper_float((e0.expm1() * (a + arb(4) / n)).log1p())


# ----------------------------------------------------------------------------------------------
# exact integer tails of Bin(c, 1/2), walked along c and the cut


class _HalfBinomialTail:
    """S = sum_{i >= J} C(c, i) and b = C(c, J) as exact integers, moved one step at a time."""

    __slots__ = ("c", "J", "S", "b")

    def __init__(self, c: int, J: int) -> None:
        J = min(max(J, 0), c)
        # start at the upper half M = floor(c/2) + 1, whose tail symmetry gives exactly:
        # S_c(M) = 2^(c-1) (c odd) or (2^c - C(c, c/2)) / 2 (c even); then walk to J (|J - M| is
        # of order sqrt(c) where the routes look, so the c-bit walk stays short)
        M = c // 2 + 1
        if M > c:  # c = 0
            self.c, self.J, self.b, self.S = c, 0, 1, 1
        else:
            middle = int(fmpz.bin_uiui(c, c // 2)) if c % 2 == 0 else 0
            self.c, self.J = c, M
            self.b = int(fmpz.bin_uiui(c, M))
            self.S = (1 << (c - 1)) if c % 2 == 1 else ((1 << c) - middle) // 2
        self.move_to(J)

    def up(self) -> None:  # J -> J + 1 (J < c)
        self.S -= self.b
        self.b = self.b * (self.c - self.J) // (self.J + 1)
        self.J += 1

    def down(self) -> None:  # J -> J - 1 (J >= 1)
        self.b = self.b * self.J // (self.c - self.J + 1)
        self.J -= 1
        self.S += self.b

    def next_c(self) -> None:  # c -> c + 1 at the same J (Pascal's rule)
        prev = self.b * self.J // (self.c - self.J + 1) if self.J >= 1 else 0  # C(c, J - 1)
        self.S = 2 * self.S + prev
        self.b = self.b + prev
        self.c += 1

    def move_to(self, J: int) -> None:
        J = min(max(J, 0), self.c)
        while self.J < J:
            self.up()
        while self.J > J:
            self.down()


def _dyadic(x: int, c: int) -> arb:
    """A ball containing x / 2^c (x >= 0) from the top 256 bits of x: converting every bit of the
    c-bit integers costs more than the rest of the walk at n = 1e6."""
    extra = x.bit_length() - 256
    if extra <= 0:
        return arb(fmpz(x)) * arb(2) ** (-c)
    top = x >> extra  # top <= x / 2^extra < top + 1
    return (arb(fmpz(top)) + arb(0.5, 0.5)) * arb(2) ** (extra - c)


# ----------------------------------------------------------------------------------------------
# the clone pair


def _clone_p(epsilon0: float, variant: str) -> arb:
    e0 = exact(epsilon0)
    if variant == "fmt21":
        return (-e0).exp()
    if variant == "fmt23":
        return 2 / (e0.exp() + 1)
    raise AccountingError("variant", variant, "'fmt21' or 'fmt23'")


def _c_window(n: int, p: float, sigmas: float = _C_SIGMAS) -> tuple[int, int]:
    mean = (n - 1) * p
    sd = math.sqrt(max((n - 1) * p * (1 - p), 1.0))
    lo = max(0, int(math.floor(mean - sigmas * sd - 10)))
    hi = min(n - 1, int(math.ceil(mean + sigmas * sd + 10)))
    return lo, hi


class _Clone:
    """The clone pair of (n, eps0, variant): certified delta(eps), float estimates, eps(delta)."""

    def __init__(self, epsilon0: float, n: int, variant: str) -> None:
        self.epsilon0, self.n, self.variant = epsilon0, n, variant
        with working_precision(_PRECISION):
            self.p = _clone_p(epsilon0, variant)
            e0 = exact(epsilon0)
            self.q = 1 / (1 + (-e0).exp())  # e^eps0 / (e^eps0 + 1)
            self.r = 1 - self.q
            p_f = float(self.p.mid())
            self.c_lo, self.c_hi = _c_window(n, p_f)
            # W(c) = Bin(n-1, p)(c), walked by W(c+1) = W(c) (n-1-c)/(c+1) p/(1-p) in Arb
            w = arb(fmpz.bin_uiui(n - 1, self.c_lo)) * self.p**self.c_lo * (1 - self.p) ** (n - 1 - self.c_lo)
            ratio = self.p / (1 - self.p)
            weights = []
            total = arb(0)
            for c in range(self.c_lo, self.c_hi + 1):
                weights.append(w)
                total += w
                w = w * (n - 1 - c) / (c + 1) * ratio
            self.weights = weights
            self.outside = (1 - total).upper()  # mass of C outside the window (charged delta_c <= 1)
            if self.outside < 0:
                self.outside = arb(0)
        cs = np.arange(self.c_lo, self.c_hi + 1)
        self._cs = cs
        self._w_f = _binom().pmf(cs, n - 1, p_f)
        self._q_f = float(self.q.mid())
        self._r_f = 1.0 - self._q_f

    # ---- float estimate (search only) ---------------------------------------------------------

    def _beta_f(self, eps: float) -> float:
        E, q, r = math.exp(eps), self._q_f, self._r_f
        return (E * q - r) / ((q - r) * (1 + E))

    def estimate(self, eps: float) -> float:
        E, q, r = math.exp(eps), self._q_f, self._r_f
        cs = self._cs
        a0 = np.floor((cs + 1) * self._beta_f(eps)).astype(np.int64) + 1
        best = np.zeros(cs.size)
        for shift in (-1, 0, 1):
            a = a0 + shift
            v = (q - E * r) * _binom().pmf(a - 1, cs, 0.5) - (E - 1) * _binom().sf(a - 1, cs, 0.5)
            best = np.maximum(best, v)
        return float(np.dot(self._w_f, best)) + float(self.outside.mid())

    # ---- certified ----------------------------------------------------------------------------

    def delta(self, eps: float) -> float:
        """Certified upper bound of delta(eps) of the pair (both directions agree)."""
        with working_precision(_PRECISION):
            E = exact(eps).exp()
            q, r = self.q, self.r
            coef = q - E * r
            em1 = E - 1
            beta = self._beta_f(eps)
            total = arb(self.outside)
            tail: _HalfBinomialTail | None = None
            for index, c in enumerate(range(self.c_lo, self.c_hi + 1)):
                a0 = int(math.floor((c + 1) * beta)) + 1
                lo, hi = max(1, a0 - 1), min(c + 1, a0 + 1)

                def sign_le(a: int) -> bool:  # certified: loss at a <= eps (t(a) <= 0)
                    return bool((q * a + r * (c + 1 - a) - E * (r * a + q * (c + 1 - a))).upper() <= 0)

                def sign_ge(a: int) -> bool:  # certified: loss at a >= eps (t(a) >= 0)
                    return bool((q * a + r * (c + 1 - a) - E * (r * a + q * (c + 1 - a))).lower() >= 0)

                while lo > 1 and not sign_le(lo - 1):
                    lo -= 1
                while hi < c + 1 and not sign_ge(hi):
                    hi += 1
                if tail is None:
                    tail = _HalfBinomialTail(c, lo - 1)
                else:
                    tail.next_c()
                tail.move_to(lo - 1)
                best = arb(0)
                for a in range(lo, hi + 1):  # state at J = a - 1: b = C(c, a-1), S = S_c(a-1)
                    tail.move_to(a - 1)
                    b = _dyadic(tail.b, c)
                    t_a = _dyadic(tail.S - tail.b, c)  # P[Bin(c,1/2) >= a]
                    v = (coef * b - em1 * t_a).upper()
                    if v > best:
                        best = v
                total += self.weights[index] * best
            return min(1.0, upper_float(total))

    def epsilon(self, delta: float) -> float:
        """The smallest float eps (to ~1e-9 relative) whose certified delta(eps) <= delta; eps0 if none."""
        return _certified_epsilon(self, delta)


@functools.lru_cache(maxsize=64)
def _clone(epsilon0: float, n: int, variant: str) -> _Clone:
    return _Clone(epsilon0, n, variant)


def clone_delta(epsilon0: float, n: int, epsilon: float, variant: str = "fmt21") -> float:
    """Certified delta(eps) of the FMT clone pair (``variant`` 'fmt21': p = e^-eps0; 'fmt23': 2/(e^eps0+1))."""
    _check_eps0(epsilon0)
    check_nonnegative("epsilon", epsilon)
    if variant not in _VARIANTS:
        raise AccountingError("variant", variant, "'fmt21' or 'fmt23'")
    return _clone(epsilon0, _check_n(n), variant).delta(float(epsilon))


def clone_epsilon(epsilon0: float, n: int, delta: float, variant: str = "fmt21") -> float:
    """Certified eps(delta) of one shuffled round by the FMT clone pair (see the module docstring)."""
    _check_eps0(epsilon0)
    check_probability("delta", delta)
    if variant not in _VARIANTS:
        raise AccountingError("variant", variant, "'fmt21' or 'fmt23'")
    return _clone(epsilon0, _check_n(n), variant).epsilon(float(delta))


# ----------------------------------------------------------------------------------------------
# binary randomized response: the exact shuffled count


def _binomial_window(N: int, x: float, sigmas: float) -> tuple[int, int]:
    if N == 0:
        return 0, 0
    sd = math.sqrt(max(N * x * (1 - x), 1.0))
    return max(0, int(math.floor(N * x - sigmas * sd - 10))), min(N, int(math.ceil(N * x + sigmas * sd + 10)))


def _binomial_pmf_balls(N: int, x: arb, lo: int, hi: int) -> list[arb]:
    """Bin(N, x)(k) for k in [lo, hi] as Arb balls (exact integer binomial, then a ratio walk)."""
    w = arb(fmpz.bin_uiui(N, lo)) * x**lo * (1 - x) ** (N - lo)
    ratio = x / (1 - x)
    out = []
    for k in range(lo, hi + 1):
        out.append(w)
        if k < N:
            w = w * (N - k) / (k + 1) * ratio
    return out


class _Count:
    """The count pair of shuffled binary RR when m of the other n - 1 users hold 1 (P: the
    differing user holds 1, Q: she holds 0): S_m + Bern(q) against S_m + Bern(r)."""

    def __init__(self, epsilon0: float, n: int, m: int) -> None:
        self.epsilon0, self.n, self.m = epsilon0, n, m
        with working_precision(_PRECISION):
            e0 = exact(epsilon0)
            self.q = 1 / (1 + (-e0).exp())
            self.r = 1 - self.q
            q_f = float(self.q.mid())
            n0 = n - 1 - m  # others holding 0 report 1 w.p. r; the m holding 1 report 1 w.p. q
            lo0, hi0 = _binomial_window(n0, 1 - q_f, _C_SIGMAS)
            lo1, hi1 = _binomial_window(m, q_f, _C_SIGMAS)
            pmf0 = _binomial_pmf_balls(n0, self.r, lo0, hi0)
            pmf1 = _binomial_pmf_balls(m, self.q, lo1, hi1)
            miss = arb(0)
            for part in (pmf0, pmf1):
                s = arb(0)
                for v in part:
                    s += v
                miss += (1 - s).upper()
            from flint import arb_poly

            product = arb_poly(pmf0) * arb_poly(pmf1)
            self.t_lo = lo0 + lo1
            self.f = [product[i] for i in range(product.degree() + 1)]
            # f(t) as computed is the truncated convolution: true f(t) lies in [f, f + miss]
            self.miss = arb(0).union(miss.upper()) if bool(miss.upper() > 0) else arb(0)
            self.t_hi = self.t_lo + len(self.f) - 1
            suffix = [arb(0)] * (len(self.f) + 1)
            for i in range(len(self.f) - 1, -1, -1):
                suffix[i] = suffix[i + 1] + self.f[i]
            self.suffix = suffix  # suffix[i] = sum_{t >= t_lo + i} f(t) over the window (a lower bound)
        self._f_float = np.array([float(v.mid()) for v in self.f])
        self._suffix_float = np.array([float(v.mid()) for v in self.suffix])
        self._q_f = q_f

    def estimate(self, eps: float) -> float:
        E, q = math.exp(eps), self._q_f
        r = 1 - q
        # V(a) = (q - E r) f(a-1) - (E - 1) T(a) for a = t_lo + 1 .. t_hi + 1
        v = (q - E * r) * self._f_float - (E - 1) * self._suffix_float[1:]
        return max(0.0, float(v.max()))

    def delta(self, eps: float) -> float:
        """Certified hs(P || Q)(eps): max over every cut a of an upper bound of V(a) (module docstring)."""
        with working_precision(_PRECISION):
            E = exact(eps).exp()
            coef = self.q - E * self.r
            em1 = E - 1
            coef_up = coef.upper()
            miss_up = self.miss.upper()
            best = arb(0)
            # cuts below the window: f(a-1) <= miss, T(a) >= the whole window's mass
            if coef_up > 0:
                outside = (coef_up * miss_up - em1 * self.suffix[0]).upper()
                best = outside if outside > best else best
                outside = (coef_up * miss_up).upper()  # cuts above the window
                best = outside if outside > best else best
            for i, f in enumerate(self.f):
                f_up = (f + self.miss).upper() if coef_up > 0 else f.lower()
                v = (coef * f_up - em1 * self.suffix[i + 1]).upper()
                if v > best:
                    best = v
            return min(1.0, upper_float(best))


def _float_count_delta(epsilon0: float, n: int, m: int, eps: float) -> float:
    """Float hs(P_m || Q_m)(eps) (scan only: locates the worst configuration m)."""
    q = 1 / (1 + math.exp(-epsilon0))
    r = 1 - q
    n0 = n - 1 - m
    lo0, hi0 = _binomial_window(n0, r, 12.0)
    lo1, hi1 = _binomial_window(m, q, 12.0)
    a = _binom().pmf(np.arange(lo0, hi0 + 1), n0, r)
    b = _binom().pmf(np.arange(lo1, hi1 + 1), m, q)
    f = np.convolve(a, b) if min(a.size, b.size) < 64 else np.maximum(_fftconvolve(a, b), 0.0)
    suffix = np.concatenate((np.cumsum(f[::-1])[::-1], [0.0]))
    E = math.exp(eps)
    v = (q - E * r) * f - (E - 1) * suffix[1:]
    return max(0.0, float(v.max()))


def _fftconvolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    from scipy.signal import fftconvolve

    return fftconvolve(a, b)


def _scan_configurations(n: int) -> list[int]:
    if n <= _FULL_SCAN:
        return list(range(n))
    grid = set(range(64)) | set(range(n - 64, n)) | {int(round(x)) for x in np.linspace(0, n - 1, 257)}
    return sorted(grid)


@functools.lru_cache(maxsize=256)
def _count(epsilon0: float, n: int, m: int) -> _Count:
    return _Count(epsilon0, n, m)


def _count_epsilon(count: _Count, delta: float) -> float:
    return _certified_epsilon(count, delta)


def _certified_epsilon(law: Any, delta: float) -> float:
    """The smallest float eps (to ~1e-9 relative) whose *certified* ``law.delta(eps)`` is <= delta,
    or eps0 (rounded up) if none is below it. ``law`` has ``epsilon0``, a float ``estimate(eps)``
    that only steers the bisection, and the certified ``delta(eps)`` that decides."""
    eps0 = float(law.epsilon0)
    if law.estimate(eps0) > delta and law.delta(eps0) > delta:
        return upper_float(exact(law.epsilon0))
    lo, hi = 0.0, eps0
    if law.estimate(0.0) <= delta:
        hi = 0.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if law.estimate(mid) <= delta:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-12 * max(hi, 1e-300):
            break
    candidate = hi * (1 + 1e-9) + 1e-12
    for _ in range(60):
        if candidate >= eps0:
            return upper_float(exact(law.epsilon0))
        if law.delta(candidate) <= delta:
            return candidate
        candidate = candidate * (1 + 1e-6) + 1e-9
    return upper_float(exact(law.epsilon0))


@functools.lru_cache(maxsize=64)
def _rr_worst(epsilon0: float, n: int, delta: float) -> tuple[float, tuple[int, ...], bool]:
    """(certified eps at the candidate worst configurations, those m's, whether the scan was full)."""
    candidates: list[int] = [0]
    eps = _count_epsilon(_count(epsilon0, n, 0), delta)
    configurations = _scan_configurations(n)
    for _ in range(32):
        scanned = [(_float_count_delta(epsilon0, n, m, eps), m) for m in configurations]
        # every configuration the float scan cannot rule out (within 1e-6 relative: the float
        # cancellation in V is ~1e-12 relative) is certified, and the scan repeated at the new eps
        suspects = [m for value, m in sorted(scanned, reverse=True) if value > delta * (1 - 1e-6) and m not in candidates][:4]
        if not suspects:
            return eps, tuple(candidates), n <= _FULL_SCAN
        candidates.extend(suspects)
        eps = max([eps] + [_count_epsilon(_count(epsilon0, n, m), delta) for m in suspects])
    raise ArithmeticError("the scan for the worst configuration did not settle in 32 rounds")


def shuffled_rr_epsilon(epsilon0: float, n: int, delta: float) -> float:
    """Exact eps(delta) of the shuffled RR count at its worst configuration (see the module docstring)."""
    _check_eps0(epsilon0)
    check_probability("delta", delta)
    return _rr_worst(epsilon0, _check_n(n), float(delta))[0]


def shuffled_rr_delta(epsilon0: float, n: int, epsilon: float, m: int | None = None) -> float:
    """Certified delta(eps) of the shuffled RR count with m of the others holding 1 (the max over
    the scanned worst configurations when m is None)."""
    _check_eps0(epsilon0)
    n = _check_n(n)
    if m is not None:
        check_integer("m", m, minimum=0)
        if m > n - 1:
            raise AccountingError("m", m, f"an integer in [0, {n - 1}]")
        return _count(epsilon0, n, m).delta(float(epsilon))
    values = [(_float_count_delta(epsilon0, n, mm, float(epsilon)), mm) for mm in _scan_configurations(n)]
    top = [mm for _, mm in sorted(values, reverse=True)[:3]]
    return max(_count(epsilon0, n, mm).delta(float(epsilon)) for mm in set(top) | {0})


# ----------------------------------------------------------------------------------------------
# the dominating pairs as IntegerPairs (for the PLD route)


class _TabulatedPair(IntegerPair):
    """A pair on {0, ..., K-1} given by Arb balls of log P(k), log Q(k) (each ball containing the
    true value) and a certified bound of the P- and Q-mass outside the table."""

    def __init__(self, log_p: list[arb], log_q: list[arb], outside_p: arb, outside_q: arb) -> None:
        self._lp, self._lq = log_p, log_q
        self._out_p, self._out_q = arb(outside_p.upper()), arb(outside_q.upper())
        with working_precision(_PRECISION):
            self._mass_p = [v.exp().lower() for v in log_p]
            self._mass_q = [v.exp().lower() for v in log_q]

    def log_p(self, k: int) -> arb:
        return self._lp[k] if 0 <= k < len(self._lp) else arb.neg_inf()

    def log_q(self, k: int) -> arb:
        return self._lq[k] if 0 <= k < len(self._lq) else arb.neg_inf()

    def _tail(self, masses: list[arb], outside: arb, lo: int, hi: int) -> arb:
        # the table's masses are lower bounds, so the table's complement is bounded by outside
        # (certified at build time) plus every tabulated mass outside [lo, hi] taken at its upper end
        total = arb(outside)
        for k in range(0, max(0, lo)):
            total += masses[k] if k < len(masses) else 0
        for k in range(max(hi + 1, 0), len(masses)):
            total += masses[k]
        return total  # a ball: its upper endpoint is the bound

    def tail_p(self, lo: int, hi: int) -> arb:
        return self._tail(self._mass_p, self._out_p, lo, hi)

    def tail_q(self, lo: int, hi: int) -> arb:
        return self._tail(self._mass_q, self._out_q, lo, hi)

    def support(self) -> tuple[int, int]:
        return 0, len(self._lp) - 1

    def window(self, mass: float) -> tuple[int, int]:
        if not (bool(self._out_p <= arb(mass)) and bool(self._out_q <= arb(mass))):
            raise AccountingError("tail_mass", mass, f"at least the tabulated pair's outside mass {upper_float(self._out_p):.3g}")
        return 0, len(self._lp) - 1


def _outside(masses: list[arb]) -> arb:
    total = arb(0)
    for v in masses:
        total += v.lower()
    out = (1 - total).upper()
    return out if bool(out > 0) else arb(0)


def _count_pair(count: _Count) -> _TabulatedPair:
    """The count pair S_m + Bern(q) || S_m + Bern(r) on t in [t_lo, t_hi + 1] (index t - t_lo)."""
    with working_precision(_PRECISION):
        q, r = count.q, count.r
        miss_up = count.miss.upper()
        # tabulate only counts whose computed mass dwarfs the truncation slack (the rest of the
        # mass, at most 1 - the tabulated lower masses, goes to the +inf atom)
        keep = [i for i, v in enumerate(count.f) if bool(v.lower() > 1e6 * miss_up)]
        lo, hi = (keep[0], keep[-1]) if keep else (0, len(count.f) - 1)
        f = [arb(0)] + list(count.f[lo : hi + 1]) + [arb(0)]
        # true f(t) lies in [f_comp(t), f_comp(t) + miss] (truncated convolution)
        wide = [v.union(v + miss_up) if bool(miss_up > 0) else v for v in f]
        lp, lq, mp, mq = [], [], [], []
        for i in range(1, len(f)):
            P = q * wide[i - 1] + r * wide[i]
            Q = r * wide[i - 1] + q * wide[i]
            mp.append(q * f[i - 1] + r * f[i])
            mq.append(r * f[i - 1] + q * f[i])
            lp.append(P.log() if bool(P > 0) else _log_of_nonneg(P))
            lq.append(Q.log() if bool(Q > 0) else _log_of_nonneg(Q))
        return _TabulatedPair(lp, lq, _outside(mp), _outside(mq))


def _log_of_nonneg(ball: arb) -> arb:
    """A ball containing log x for every x > 0 in ``ball`` (x may be 0: the lower end is -inf)."""
    upper = ball.upper()
    if not bool(upper > 0):
        return arb.neg_inf()
    return arb.neg_inf().union(upper.log())


def _clone_pair(clone: _Clone, group: int) -> _TabulatedPair:
    """The clone pair with c rounded down to group floors c_lo, c_lo + group, ... (a dominating pair:
    module docstring, item 5), atoms (a, group) for a in a window of Bin(c_g, 1/2) + {0, 1}."""
    with working_precision(_PRECISION):
        q, r = clone.q, clone.r
        lp: list[arb] = []
        lq: list[arb] = []
        mp: list[arb] = []
        mq: list[arb] = []
        for start in range(clone.c_lo, clone.c_hi + 1, group):
            weight = arb(0)
            for c in range(start, min(start + group, clone.c_hi + 1)):
                weight += clone.weights[c - clone.c_lo]
            c = start
            lo, hi = _binomial_window(c, 0.5, _A_SIGMAS)
            scale = arb(2) ** (-c)
            b = {a: arb(fmpz.bin_uiui(c, a)) * scale for a in range(lo, hi + 1)}
            log_w = weight.log()
            for a in range(lo, hi + 2):
                b_prev = b.get(a - 1, arb(0))
                b_here = b.get(a, arb(0))
                P = q * b_prev + r * b_here
                Q = r * b_prev + q * b_here
                mp.append(weight * P)
                mq.append(weight * Q)
                lp.append(log_w + P.log())
                lq.append(log_w + Q.log())
        return _TabulatedPair(lp, lq, _outside(mp), _outside(mq))


def _group_width(clone: _Clone) -> int:
    # about 3 groups per standard deviation of C: c is rounded down by < sd/3, a relative change
    # of order sd / (3 E[C]) ~ 1 / (3 sqrt(E[C])), which costs about half that in eps
    sd = math.sqrt(max((clone.n - 1) * float(clone.p.mid()) * (1 - float(clone.p.mid())), 1.0))
    return max(1, int(sd / 3))


@functools.lru_cache(maxsize=16)
def _clone_pld(epsilon0: float, n: int, variant: str, h: float):
    from .._privacy_loss._pld import PrivacyLossDistribution

    clone = _clone(epsilon0, n, variant)
    return PrivacyLossDistribution.from_pair(_clone_pair(clone, _group_width(clone)), discretisation=h, lower_bound=False, tail_mass=1e-12)


@functools.lru_cache(maxsize=64)
def _count_pld(epsilon0: float, n: int, m: int, h: float):
    from .._privacy_loss._pld import PrivacyLossDistribution

    return PrivacyLossDistribution.from_pair(_count_pair(_count(epsilon0, n, m)), discretisation=h, lower_bound=False, tail_mass=1e-12)


def _pld_h(k: int) -> float:
    return min(1e-4, 0.02 / k)


# ----------------------------------------------------------------------------------------------
# every route


_VARIANT_LABEL = {
    "fmt21": ("fmt21-clone", "FMT21 (FOCS 2021) clone pair, C ~ Bin(n-1, e^-eps0), hockey-stick evaluated exactly in Arb"),
    "fmt23": ("fmt23-stronger-clone", "FMT23 (SODA 2023) stronger clone pair, C ~ Bin(n-1, 2/(e^eps0+1)), evaluated exactly in Arb"),
}


# ----------------------------------------------------------------------------------------------
# the routes as planner routes (accounting._core._planner): each plans with a cost estimate; no size
# threshold inside a route (issue 30: the PLD routes used to be skipped above 2,048 rounds)

#: estimated seconds: fixed, and per unit of n p (the clone pair's c window walked in Arb)
COST_CLONE_FIXED = 0.05
COST_CLONE_UNIT = 1.0e-5
#: ... of the worst-configuration scan of binary RR: per configuration x n (floats), plus fixed
COST_SCAN_UNIT = 1.0e-7
COST_SCAN_FIXED = 0.3
#: ... of a clone pair's PLD: per (n p)^1.5 (tabulating the grouped pair in Arb: measured 0.25 to
#: 14.4 s from n p = 3,700 to 54,000, eps0 = 1, n = 10^4 and 10^5), per grid point of the single
#: round (measured n = 1,000, eps0 = 1: 0.55 s at h = 2e-5), and per composed point x log2(points)
#: of the one-pass composition (measured 6e-9 to 1.8e-8 at 1.2M to 8.3M points)
COST_PAIR_UNIT = 1.2e-6
COST_PAIR_POINT = 5e-6
COST_COMPOSE_POINT = 2.5e-8
#: bytes per composed point (float spectra and tilted passes; 0.9 GB measured at 8.3M points)
BYTES_COMPOSE_POINT = 120
#: standard deviations of the k-fold loss kept by the one-pass window (measured ~9.8 for 1e-20)
_WINDOW_SIGMAS = 10.0


def _clone_loss_std(epsilon0: float, n: int, variant: str) -> float:
    """Float estimate of the standard deviation of the clone pair's privacy loss under P (a size
    for the cost estimate only: the composed window grows like sqrt(k) times it)."""
    from scipy.stats import binom

    p = math.exp(-epsilon0) if variant == "fmt21" else 2 / (math.exp(epsilon0) + 1)
    q = math.exp(epsilon0) / (math.exp(epsilon0) + 1)
    r = 1 - q
    lo, hi = _c_window(n, p)
    cs = np.arange(lo, hi + 1)
    weights = binom.pmf(cs, n - 1, p)
    sd = math.sqrt(max((n - 1) * p * (1 - p), 1.0))
    step = max(1, int(sd / 3))
    m1 = m2 = total = 0.0
    for start in range(lo, hi + 1, step):
        w = float(weights[start - lo : start - lo + step].sum())
        a_lo, a_hi = _binomial_window(start, 0.5, _A_SIGMAS)
        a = np.arange(a_lo, a_hi + 2)
        b_prev = binom.pmf(a - 1, start, 0.5)
        b_here = binom.pmf(a, start, 0.5)
        P = q * b_prev + r * b_here
        Q = r * b_prev + q * b_here
        keep = (P > 0) & (Q > 0)
        loss = np.log(P[keep] / Q[keep])
        mass = w * P[keep]
        total += float(mass.sum())
        m1 += float((mass * loss).sum())
        m2 += float((mass * loss * loss).sum())
    if total <= 0:
        return float(epsilon0)
    mean = m1 / total
    return math.sqrt(max(m2 / total - mean * mean, 0.0))


def _clone_cost(epsilon0: float, n: int, variant: str) -> float:
    p = math.exp(-epsilon0) if variant == "fmt21" else 2 / (math.exp(epsilon0) + 1)
    return COST_CLONE_FIXED + COST_CLONE_UNIT * n * p


def _scan_cost(n: int) -> float:
    return COST_SCAN_FIXED + COST_SCAN_UNIT * len(_scan_configurations(n)) * n if n <= _FULL_SCAN else \
        COST_SCAN_FIXED + COST_SCAN_UNIT * (128 + 257) * n


def _pld_cost(epsilon0: float, n: int, variant: str, k: int):
    """(Cost, composed points) of the k-fold PLD of the clone pair on h = _pld_h(k)."""
    from .._privacy_loss._pld_fft_power import MAX_WINDOW
    from .._core._planner import Cost

    h = _pld_h(k)
    p = math.exp(-epsilon0) if variant == "fmt21" else 2 / (math.exp(epsilon0) + 1)
    single = 2 * epsilon0 / h + 1
    width = 2 * _WINDOW_SIGMAS * math.sqrt(k) * _clone_loss_std(epsilon0, n, variant) + 2 * epsilon0
    points = max(int(width / h) + 1, int(single))
    build = COST_CLONE_FIXED + COST_PAIR_UNIT * (n * p) ** 1.5 + COST_PAIR_POINT * single
    if points > MAX_WINDOW:  # beyond one FFT pass: binary powering, whose window grows like k
        return Cost(math.inf, BYTES_COMPOSE_POINT * points), points
    return Cost(build + COST_COMPOSE_POINT * points * math.log2(points), BYTES_COMPOSE_POINT * points), points


class _ShuffleRoute:
    """One route of a shuffled subject: ``kind`` is "pure", "clone", "count", "closed",
    "pld", "pld-count" or "advanced" (the module docstring's items); ``run(query)`` computes it."""

    def __init__(self, name: str, kind: str, plan_fn) -> None:
        self.name, self.kind, self._plan = name, kind, plan_fn

    def plan(self, query, budget: float):
        return self._plan(query, budget)


def _subject_rounds(query) -> tuple[Any, int]:
    subject, k = query.parts[0]
    return subject, k


class _WithinBudget:
    """A shuffled route run only when its own estimate fits the time and memory budgets (each
    route on its own: the shuffled routes have always all run, and a query that asked for a
    small ``time_budget`` keeps the values it had; a route estimated above the budget, such as a
    PLD of 10^5 rounds, is not run and says why)."""

    def __init__(self, route, time_budget: float, memory_budget: float) -> None:
        self.route, self.name, self.kind = route, route.name, route.kind
        self.time_budget, self.memory_budget = time_budget, memory_budget

    def plan(self, query, budget: float):
        from .._core._planner import Plan, _bytes, _seconds

        plan = self.route.plan(query, budget)
        if not isinstance(plan, Plan) or plan.off:
            return plan
        if plan.cost.seconds > self.time_budget:
            need = math.ceil(plan.cost.seconds * 1.2) + 1 if math.isfinite(plan.cost.seconds) else None
            reason = f"estimated {plan.cost} exceeds the time budget of {_seconds(self.time_budget)}"
            how = f"time_budget={need} (CLI: --time-budget {need})" if need else "no argument runs it (the composed window exceeds one FFT pass)"
            return dataclasses.replace(plan, off=reason, how=how)
        if plan.cost.bytes > self.memory_budget:
            return dataclasses.replace(plan, off=f"estimated {plan.cost} exceeds the memory budget of {_bytes(self.memory_budget)}",
                                       how=f"memory_budget={2 ** math.ceil(math.log2(plan.cost.bytes * 1.2))}")
        return plan


def shuffle_route_objects(subject, *, include_pld: bool = True, comparisons: bool = True, time_budget: float = math.inf,
                          memory_budget: float = math.inf) -> list:
    """The planner routes of a lone shuffled subject (module docstring), in the order they are
    listed (ties between equal values go to the first), each run when its own estimate fits
    ``time_budget`` and ``memory_budget`` (:class:`_WithinBudget`; the planner is then given no
    overall budget)."""
    routes = _shuffle_routes(subject, include_pld=include_pld, comparisons=comparisons)
    return [_WithinBudget(r, time_budget, memory_budget) for r in routes]


def _shuffle_routes(subject, *, include_pld: bool = True, comparisons: bool = True) -> list:
    from .._core._planner import Cost, NotApplicable, Plan

    eps0, n = float(subject.epsilon0), subject.n
    variants = subject.clone_variants()
    rr = isinstance(subject, ShuffledRandomizedResponse)
    routes: list = []

    def pure(query, budget):
        k = query.parts[0][1]
        return Plan("pure", lambda left: Result(subject.pure().times(k).epsilon, query.delta, "pure", None,
                                                       "eps0-LDP reports, basic composition (no amplification)"), Cost(2e-4))

    routes.append(_ShuffleRoute("pure", "pure", pure))

    def single_round(variant):
        route, detail = _VARIANT_LABEL[variant]

        def plan(query, budget):
            if query.parts[0][1] != 1:
                return NotApplicable(route, "one round (k rounds: the PLD and advanced routes)")
            return Plan(route, lambda left: Result(clone_epsilon(eps0, n, query.delta, variant), query.delta, route, None, detail),
                        Cost(_clone_cost(eps0, n, variant)))

        return _ShuffleRoute(route, "clone", plan)

    routes += [single_round(v) for v in variants]
    full = n <= _FULL_SCAN
    scan = "every configuration scanned" if full else "NOT certified: only m < 64, > n-65 and a 257-point grid scanned"
    if rr:
        def count(query, budget):
            if query.parts[0][1] != 1:
                return NotApplicable("exact-count", "one round", comparison=not full)
            if not full and not comparisons:
                return NotApplicable("exact-count", "comparisons=False (a partial scan is a comparison)", comparison=True)

            def run(left):
                eps, ms, _ = _rr_worst(eps0, n, float(query.delta))
                return Result(eps, query.delta, "exact-count", None,
                                     f"exact hockey-stick of the shuffled count (Arb), worst of m = {sorted(set(ms))} others holding 1; {scan} in floats")

            return Plan("exact-count", run, Cost(_scan_cost(n)), comparison=not full)

        routes.append(_ShuffleRoute("exact-count", "count", count))

    def closed(label, form, needs):
        def plan(query, budget):
            if query.parts[0][1] != 1 or not comparisons:
                return NotApplicable(label, "one round, comparisons=True", comparison=True)
            value = form(eps0, n, query.delta)
            if value is None:
                return NotApplicable(label, "outside the closed form's range of eps0", comparison=True)
            return Plan(label, lambda left: Result(value, query.delta, label, None, needs), Cost(2e-4), comparison=True)

        return _ShuffleRoute(label, "closed", plan)

    routes.append(closed("closed-form:fmt21-thm3.1", fmt21_closed_form, "FMT21 Thm 3.1 (authors' reference-code form)"))
    if "fmt23" in variants:
        routes.append(closed("closed-form:fmt23", fmt23_closed_form, "FMT23 closed form (stronger clone)"))

    def pld(variant):
        route, _ = _VARIANT_LABEL[variant]
        name = f"pld:{route}"

        def plan(query, budget):
            k = query.parts[0][1]
            if k == 1:
                return NotApplicable(name, "k rounds (one round: the clone routes themselves)")
            h = _pld_h(k)
            cost, points = _pld_cost(eps0, n, variant, k)

            def run(left):
                value = _clone_pld(eps0, n, variant, h).self_compose(k).epsilon(query.delta).epsilon
                return Result(value, query.delta, name, None, f"PLD of the {route} pair (c rounded down to groups), h = {h:.3g}, losses rounded up")

            off = "" if include_pld else "switched off (include_pld=False; CLI: --no-pld)"
            return Plan(name, run, cost, setting=f"grid h = {h:.3g}; composed window ~{points:,} points", how="include_pld=True" if off else "", off=off)

        return _ShuffleRoute(name, "pld", plan)

    routes += [pld(v) for v in variants]
    if rr:
        def pld_count(query, budget):
            k = query.parts[0][1]
            if k == 1 or not comparisons or not include_pld:
                return NotApplicable("pld:exact-count", "k rounds, comparisons=True, include_pld=True", comparison=True)
            h = _pld_h(k)
            cost, points = _pld_cost(eps0, n, "fmt23", k)

            def run(left):
                # the configurations m come from the one-round scan: the k-fold worst m is not
                # searched, so this is a comparison (an estimate of the exact value), not a bound
                _, ms, _ = _rr_worst(eps0, n, query.delta)
                worst = max(_count_pld(eps0, n, m, h).self_compose(k).epsilon(query.delta).epsilon for m in sorted(set(ms)))
                return Result(worst, query.delta, "pld:exact-count", None,
                                     f"PLD of the shuffled count, k rounds on one data set, worst of the one-round candidates m = {sorted(set(ms))} (NOT certified: the k-round worst m is not searched); h = {h:.3g}")

            return Plan("pld:exact-count", run, Cost(cost.seconds + _scan_cost(n), cost.bytes), comparison=True)

        routes.append(_ShuffleRoute("pld:exact-count", "pld-count", pld_count))

    # one round at delta/(2k), composed by Dwork-Rothblum-Vadhan with slack delta/2: certified
    # when the round's value is (the closed forms stay comparisons). Listed when comparisons are
    # asked for or the PLD routes are off (as before issue 30: a ledger's spend did not use it)
    def advanced(inner):
        name = f"advanced:{inner.name}"

        def plan(query, budget):
            k = query.parts[0][1]
            if k == 1:
                return NotApplicable(name, "k rounds", comparison=inner.kind == "closed")
            if not (comparisons or not include_pld):
                return NotApplicable(name, "comparisons=False with the PLD routes on", comparison=inner.kind == "closed")
            single = Query(((subject, 1),), query.delta / (2 * k), query.time_budget, include_pld, comparisons, False, memory_budget=query.memory_budget)
            one = inner.plan(single, budget)
            if not isinstance(one, Plan):
                return NotApplicable(name, one.reason, comparison=one.comparison)

            def run(left):
                from .._core._composition import advanced_composition

                result = one.run(left)
                composed = advanced_composition(ApproxDP(result.epsilon, query.delta / (2 * k)), k, query.delta / 2)
                return Result(composed.epsilon, query.delta, name, None, f"{result.route} at delta/(2k), Dwork-Rothblum-Vadhan advanced composition")

            return Plan(name, run, one.cost, comparison=one.comparison)

        return _ShuffleRoute(name, "advanced", plan)

    from .._core._planner import Query

    routes += [advanced(r) for r in routes if r.kind in ("clone", "count", "closed")]
    return routes


def shuffle_routes(subject, delta: float, *, compose: int = 1, include_pld: bool = True, comparisons: bool = True,
                   time_budget: float | None = None, exhaustive: bool = False, memory_budget: float | None = None) -> Result:
    """The smallest certified eps at ``delta`` after ``compose`` shuffled rounds, with every route
    (the ``alternatives`` of the result); see the module docstring for each route. The routes go
    through the planner (:mod:`accounting._core._planner`): each has a cost estimate, runs when it fits
    ``time_budget`` (default 10 s) and ``memory_budget``, and is reported with why when not."""
    from .._core._planner import DEFAULT_MEMORY_BUDGET, DEFAULT_TIME_BUDGET, Query, run_plan

    if not isinstance(subject, Shuffled):
        raise AccountingError("subject", subject, "a ShuffledLDP or ShuffledRandomizedResponse")
    k = check_positive_int("compose", compose)
    time_budget = DEFAULT_TIME_BUDGET if time_budget is None else time_budget
    memory_budget = DEFAULT_MEMORY_BUDGET if memory_budget is None else memory_budget
    check_positive("time_budget", time_budget, allow_inf=True)
    check_positive("memory_budget", memory_budget, allow_inf=True)
    query = Query(((subject, k),), delta, math.inf, include_pld, comparisons, exhaustive, memory_budget=math.inf)  # (delta validated here, once)
    routes = shuffle_route_objects(subject, include_pld=include_pld, comparisons=comparisons, time_budget=float(time_budget), memory_budget=float(memory_budget))
    return shuffle_report(run_plan(routes, query))


def shuffle_report(result: Result) -> Result:
    """The planner's answer for a shuffled subject in this module's report: ``alternatives`` are
    rows (value, route, detail; no planner fields) of the certified routes that ran (in route
    order), each certified route the budgets kept from running (eps = inf, its reason and the
    argument that runs it in ``detail``), then the comparisons that ran; routes that do not apply,
    or that the caller switched off, are left out (the report every shuffled query has given since
    the routes were written). ``answer`` is the planner's winning record itself, handed on."""
    certified: list[Result] = []
    comparison: list[Result] = []
    for r in result.alternatives:
        if r.status in ("run", "answer"):
            if r.comparison:
                # a comparison says so in its own field (callers read "certified" from it; issue 34
                # item 5): never "upper bound", whatever its detail says
                comparison.append(Result(r.epsilon, r.delta, r.route, r.alpha, r.detail, direction="comparison (not certified)"))
            else:
                certified.append(Result(r.epsilon, r.delta, r.route, r.alpha, r.detail))
        elif r.status in ("not run", "failed") and not r.comparison and "switched off" not in r.reason:
            how = f" ({r.how})" if r.how else ""
            certified.append(Result(math.inf, r.delta, r.route, None, f"{r.status}: {r.reason}{how}"))
    return Result(result.epsilon, result.delta, result.route, result.alpha, result.detail, alternatives=tuple(certified + comparison),
                  answer=result.answer)
