"""Privacy-loss distributions of continuous mechanisms: connect-the-dots, certified in Arb.

What is computed
----------------
A *monotone-loss pair* is a pair of laws (P, Q) on any output space whose privacy loss
L = log dP/dQ is known through its hockey-stick curve

    delta(t) = E_{L ~ P} (1 - e^{t - L})_+ = P(L > t) - e^t Q(L > t),      t real,

(and, for the optimistic twin, the survival function P(L > t)). Laplace and Gaussian noise, and
their Poisson-subsampled mixtures (:mod:`accounting._subsampling`), are such pairs; the
interface :class:`MonotoneLossPair` is open to others. Every value is an Arb ball.

Pessimistic PLD (the upper side): connect-the-dots
    Doroshenko, Ghazi, Kamath, Kumar & Manurangsi, "Connect the dots: tighter discrete
    approximations of privacy loss distributions", PoPETs 2022, Algorithm 1 with a fixed gap
    (their eq. for ``fixed_gap``). On the grid t_j = (n_lo + j) h, j = 0..N-1, with
    delta_j = delta(t_j), the PLD

        w_0     = (1 - delta_0) + (delta_1 - delta_0) / (e^h - 1)
        w_j     = ((delta_{j+1} - delta_j) - e^h (delta_j - delta_{j-1})) / (e^h - 1)   (0 < j < N-1)
        w_{N-1} = (delta_{N-1} - delta_{N-2}) / (e^{-h} - 1)
        w_inf   = delta_{N-1}

    has as hockey-stick curve, in the variable x = e^t, the piecewise-linear interpolation of
    delta(x) through the grid points (the chord from (0, 1) below t_0, the constant delta_{N-1}
    above t_{N-1}). delta is convex in x with delta(x = 0) = 1, so the chord lies above it for
    every real t: the discretised pair *dominates* the true one in the sense of Zhu, Dong & Wang
    (AISTATS 2022, Def. 7), and dominating pairs compose (their Thm 10). It is a genuine PLD
    (w >= 0 by convexity; its Q-mass sum_j w_j e^{-t_j} = (1 - delta_0) e^{-t_0} + ... is <= 1
    because 1 - delta(t) <= e^t), so composing it with the rounded-up PLDs of
    :mod:`accounting._pld` (stochastic domination) keeps the chain of inequalities.
    Certification: each delta_j is an Arb ball containing the true value; w_j is formed from the
    balls, so it contains the exact connect-the-dots mass; the upper endpoints (a pointwise
    larger measure; E f_eps grows with the measure since f_eps >= 0) are what is composed.

Optimistic PLD (the lower side): rounding down
    w^-_j = S(t_j) - S(t_{j+1}) for j < N-1 and w^-_{N-1} = S(t_{N-1}), S(t) = P(L > t), with
    lower endpoints: every loss in (t_j, t_{j+1}] is moved down to t_j and mass below t_0 is
    dropped, so the measure is stochastically dominated by the true PLD (and its compositions
    by the true compositions): a certified *lower* bound, printed beside the upper one.

Both directions: (P || Q) and (Q || P); a symmetric pair (Laplace, Gaussian: reflection
exchanges P and Q) is computed once.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import arb

from ._certified import exact
from ._pld_measure import DEFAULT_DISCRETISATION, DEFAULT_TAIL_MASS, _Direction, _floats_of_balls, _Side
from ._validation import AccountingError, check_positive

__all__ = [
    "GaussianLoss",
    "LaplaceLoss",
    "MonotoneLossPair",
    "continuous_loss_pair",
    "monotone_loss_directions",
]

#: Largest number of grid points one continuous release may take (memory guard).
_MAX_POINTS = 20_000_000


def _union(*balls: arb) -> arb:
    out = balls[0]
    for b in balls[1:]:
        out = out.union(b)
    return out


def _phi(x: arb) -> arb:
    """Standard normal CDF, Phi(x) = erfc(-x / sqrt 2) / 2, in Arb."""
    return (-x / arb(2).sqrt()).erfc() / 2


#: Taylor terms and radius of the anchored expansions of Phi (:func:`_phi_many`).
_TAYLOR_TERMS = 24
_TAYLOR_RADIUS = 0.125


def _phi_many(points: list[arb]) -> list[arb]:
    """Phi at many points, ~20x faster than one erfc each: about anchors a spaced 2r apart,
    Phi(a + x) = sum_{k<K} c_k(a) x^k + c_K(xi) x^K with xi between a and a + x (Lagrange), the
    Taylor coefficients c_k(a) from Arb's power series of erfc and c_K(xi) enclosed by the same
    series evaluated on the ball [a - r, a + r]; points with |x| <= r (certified) use the
    polynomial plus that remainder ball, any other point a direct erfc."""
    from flint import arb_poly, arb_series, ctx

    n = len(points)
    out: list[arb | None] = [None] * n
    order = sorted(range(n), key=lambda i: float(points[i].mid()))
    k_terms, r = _TAYLOR_TERMS, _TAYLOR_RADIUS
    s2 = 1 / arb(2).sqrt()
    r_ball = arb(r)
    saved = ctx.cap
    try:
        j = 0
        while j < n:
            first = points[order[j]]
            a_float = float(first.mid()) + r
            a = arb(a_float)
            ctx.cap = k_terms
            coeffs = arb_series([-a * s2, -s2]).erfc().coeffs()
            ctx.cap = k_terms + 1
            tail = arb_series([-arb(a_float, r) * s2, -s2]).erfc().coeffs()
            usable = len(coeffs) == k_terms and len(tail) == k_terms + 1 and tail[-1].is_finite()
            if usable:
                poly = arb_poly([c / 2 for c in coeffs])
                rem_up = (tail[-1].abs_upper() / 2) * r_ball**k_terms
                remainder = arb(0).union(rem_up).union(-rem_up)
            consumed = False
            while usable and j < n:
                x = points[order[j]] - a
                if not bool(x.abs_upper() <= r_ball):
                    break
                out[order[j]] = poly(x) + remainder
                j += 1
                consumed = True
            if not consumed:
                out[order[j]] = _phi(first)
                j += 1
    finally:
        ctx.cap = saved
    return out  # type: ignore[return-value]


class MonotoneLossPair(ABC):
    """Neighbouring laws (P, Q) described by their privacy loss L = log dP/dQ (see module doc).

    ``hockey_stick(t)`` / ``hockey_stick_reverse(t)``: balls containing delta_{P||Q}(t) and
    delta_{Q||P}(t) for an exact real ball t. ``survival_p(t)``: a ball containing some value in
    [P(L > t), P(L >= t)]; ``survival_q(t)`` likewise for Q (loss still log dP/dQ).
    ``loss_window(tail)``: floats [lo, hi] outside which L has P- and Q-mass at most about
    ``tail`` (used to place the grid only: it moves tightness, never soundness).
    ``symmetric``: True if (Q || P) has the same PLD as (P || Q).
    """

    symmetric: bool = False

    @abstractmethod
    def hockey_stick(self, t: arb) -> arb: ...

    @abstractmethod
    def survival_p(self, t: arb) -> arb: ...

    @abstractmethod
    def survival_q(self, t: arb) -> arb: ...

    @abstractmethod
    def loss_window(self, tail: float) -> tuple[float, float]: ...

    def hockey_stick_reverse(self, t: arb) -> arb:
        """The other direction's hockey-stick; equal to :meth:`hockey_stick` for a symmetric pair."""
        if not self.symmetric:  # an asymmetric pair states its reverse direction itself
            raise TypeError(f"{type(self).__name__} has symmetric = False and must override hockey_stick_reverse")
        return self.hockey_stick(t)

    # Many points at once (a pair may override these with a faster evaluation).
    def hockey_stick_many(self, ts: list[arb]) -> list[arb]:
        return [self.hockey_stick(t) for t in ts]

    def hockey_stick_reverse_many(self, ts: list[arb]) -> list[arb]:
        if self.symmetric:
            return self.hockey_stick_many(ts)
        return [self.hockey_stick_reverse(t) for t in ts]

    def survival_p_many(self, ts: list[arb]) -> list[arb]:
        return [self.survival_p(t) for t in ts]

    def survival_q_many(self, ts: list[arb]) -> list[arb]:
        return [self.survival_q(t) for t in ts]

    def reversed(self) -> "MonotoneLossPair":
        """The pair (Q, P): loss -L, with its own survival functions."""
        return _Reversed(self)

    def describe(self) -> str:
        return type(self).__name__


class _Reversed(MonotoneLossPair):
    """(Q, P) of a pair: loss -L; Q(-L > t) = 1 - Q(L >= -t), which keeps the [>, >=] bracket."""

    def __init__(self, base: MonotoneLossPair) -> None:
        self.base = base
        self.symmetric = base.symmetric

    def hockey_stick(self, t: arb) -> arb:
        return self.base.hockey_stick_reverse(t)

    def hockey_stick_reverse(self, t: arb) -> arb:
        return self.base.hockey_stick(t)

    def survival_p(self, t: arb) -> arb:
        return 1 - self.base.survival_q(-t)

    def survival_q(self, t: arb) -> arb:
        return 1 - self.base.survival_p(-t)

    def hockey_stick_many(self, ts: list[arb]) -> list[arb]:
        return self.base.hockey_stick_reverse_many(ts)

    def hockey_stick_reverse_many(self, ts: list[arb]) -> list[arb]:
        return self.base.hockey_stick_many(ts)

    def survival_p_many(self, ts: list[arb]) -> list[arb]:
        return [1 - v for v in self.base.survival_q_many([-t for t in ts])]

    def survival_q_many(self, ts: list[arb]) -> list[arb]:
        return [1 - v for v in self.base.survival_p_many([-t for t in ts])]

    def loss_window(self, tail: float) -> tuple[float, float]:
        lo, hi = self.base.loss_window(tail)
        return -hi, -lo

    def reversed(self) -> MonotoneLossPair:
        return self.base

    def describe(self) -> str:
        return f"reversed {self.base.describe()}"


@dataclass(frozen=True)
class LaplaceLoss(MonotoneLossPair):
    """P = Lap(0, b), Q = Lap(Delta, b); eps = Delta / b. L = eps on x <= 0, -eps on x >= Delta,
    linear between: atoms P(L = eps) = 1/2, P(L = -eps) = e^{-eps}/2, density e^{(l - eps)/2}/4
    on (-eps, eps). Hence delta(t) = 1 - e^{(t - eps)/2} on [-eps, eps] (0 above, 1 - e^t below),
    P(L > t) = 1 - e^{(t - eps)/2}/2 and Q(L > t) = e^{-(t + eps)/2}/2 on [-eps, eps)."""

    scale: float | int | Fraction
    sensitivity: float | int | Fraction = 1
    symmetric = True

    def __post_init__(self) -> None:
        check_positive("scale", self.scale)
        check_positive("sensitivity", self.sensitivity)

    def _eps(self) -> arb:
        return exact(self.sensitivity) / exact(self.scale)

    def _piecewise(self, t: arb, below, middle, above) -> arb:
        eps = self._eps()
        parts = []
        if not bool(t >= -eps):
            parts.append(below(t))
        # the middle formulas hold on the closed interval [-eps, eps]: at the atoms +-eps they give
        # values inside [P(L > t), P(L >= t)] (e.g. P(L >= eps) = 1/2), which the optimistic
        # side may use (module docstring); the above/below branches only strictly outside it
        if (not bool(t < -eps)) and (not bool(t > eps)):
            parts.append(middle(t, eps))
        if not bool(t <= eps):
            parts.append(above(t))
        return _union(*parts)

    def hockey_stick(self, t: arb) -> arb:
        return self._piecewise(t, lambda t: 1 - t.exp(), lambda t, e: 1 - ((t - e) / 2).exp(), lambda t: arb(0))

    def survival_p(self, t: arb) -> arb:
        return self._piecewise(t, lambda t: arb(1), lambda t, e: 1 - ((t - e) / 2).exp() / 2, lambda t: arb(0))

    def survival_q(self, t: arb) -> arb:
        return self._piecewise(t, lambda t: arb(1), lambda t, e: (-(t + e) / 2).exp() / 2, lambda t: arb(0))

    def loss_window(self, tail: float) -> tuple[float, float]:
        e = float(Fraction(self.sensitivity) / Fraction(self.scale))
        return -e, e

    def describe(self) -> str:
        return f"Laplace(b={self.scale}, Delta={self.sensitivity})"


@dataclass(frozen=True)
class GaussianLoss(MonotoneLossPair):
    """P = N(0, sigma^2), Q = N(Delta, sigma^2); with m = Delta / sigma, L ~ N(m^2/2, m^2) under P
    and N(-m^2/2, m^2) under Q, so delta(t) = Phi(m/2 - t/m) - e^t Phi(-m/2 - t/m)
    (Balle & Wang 2018, Thm 8)."""

    sigma: float | int | Fraction
    sensitivity: float | int | Fraction = 1
    symmetric = True

    def __post_init__(self) -> None:
        check_positive("sigma", self.sigma)
        check_positive("sensitivity", self.sensitivity)

    def _m(self) -> arb:
        return exact(self.sensitivity) / exact(self.sigma)

    def hockey_stick(self, t: arb) -> arb:
        m = self._m()
        value = _phi(m / 2 - t / m) - t.exp() * _phi(-m / 2 - t / m)
        return value

    def survival_p(self, t: arb) -> arb:
        m = self._m()
        return _phi(m / 2 - t / m)

    def survival_q(self, t: arb) -> arb:
        m = self._m()
        return _phi(-m / 2 - t / m)

    def hockey_stick_many(self, ts: list[arb]) -> list[arb]:
        m = self._m()
        us = [m / 2 - t / m for t in ts]
        phis = _phi_many(us + [u - m for u in us])
        n = len(ts)
        return [phis[i] - ts[i].exp() * phis[n + i] for i in range(n)]

    def survival_p_many(self, ts: list[arb]) -> list[arb]:
        m = self._m()
        return _phi_many([m / 2 - t / m for t in ts])

    def survival_q_many(self, ts: list[arb]) -> list[arb]:
        m = self._m()
        return _phi_many([-m / 2 - t / m for t in ts])

    def loss_window(self, tail: float) -> tuple[float, float]:
        m = float(Fraction(self.sensitivity) / Fraction(self.sigma))
        z = math.sqrt(2 * math.log(1 / tail)) + 0.5  # Phi(-z) <= e^{-z^2/2}/2 <= tail
        return m * m / 2 - z * m, m * m / 2 + z * m  # L under P (Q-mass below is irrelevant to delta)

    def describe(self) -> str:
        return f"Gaussian(sigma={self.sigma}, Delta={self.sensitivity})"


def continuous_loss_pair(subject: object) -> MonotoneLossPair | None:
    """The monotone-loss pair of a continuous mechanism, or None for anything else.

    Accepted: a :class:`MonotoneLossPair`; an object with a ``monotone_loss_pair()`` method (the
    open interface: :class:`~accounting.Laplace`, :class:`~accounting.Gaussian`, subsampled
    mechanisms, user-written ones).
    """
    if isinstance(subject, MonotoneLossPair):
        return subject
    maker = getattr(subject, "monotone_loss_pair", None)
    if callable(maker):
        pair = maker()
        if pair is not None and not isinstance(pair, MonotoneLossPair):
            raise AccountingError("monotone_loss_pair()", pair, "a MonotoneLossPair or None")
        return pair
    return None


# ----------------------------------------------------------------------------------------------
# discretisation

#: Grid points per direction the automatic step aims at (``default_discretisation``).
AUTO_POINTS = 200_000


def default_discretisation(pair: MonotoneLossPair, start: float = DEFAULT_DISCRETISATION) -> float:
    """The routes' grid step for a continuous pair: ``start`` (1e-4 by default), coarsened (by
    powers of 2) so that the loss window holds at most about ``AUTO_POINTS`` points (a Gaussian
    with sigma << Delta has a window of width ~ 2 z Delta / sigma). Connect-the-dots is sound on
    any grid; a coarser one only loosens the bound, by O(h^2) per release."""
    h = start
    widths = [pair.loss_window(DEFAULT_TAIL_MASS)]
    if not pair.symmetric:
        widths.append(pair.reversed().loss_window(DEFAULT_TAIL_MASS))
    width = max(hi - lo for lo, hi in widths)
    while width / h > AUTO_POINTS:
        h *= 2
    return h


def _grid(pair: MonotoneLossPair, h_float: float, tail: float) -> tuple[int, int]:
    lo, hi = pair.loss_window(tail)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
        raise ArithmeticError(f"loss window [{lo}, {hi}] of {pair.describe()} is not finite")
    n_lo = math.floor(lo / h_float)
    n_hi = math.ceil(hi / h_float)
    if n_hi - n_lo + 1 > _MAX_POINTS:
        raise AccountingError("discretisation", h_float, f"a grid step giving at most {_MAX_POINTS} points over the loss window [{lo:.4g}, {hi:.4g}]")
    return n_lo, n_hi


def _connect_the_dots(pair: MonotoneLossPair, h: arb, n_lo: int, n_hi: int) -> tuple[np.ndarray, arb]:
    """Upper endpoints of the connect-the-dots masses on (n_lo..n_hi) h, and the +inf atom ball."""
    deltas = pair.hockey_stick_many([n * h for n in range(n_lo, n_hi + 1)])
    for d in deltas:
        if not d.is_finite():
            raise ArithmeticError("a hockey-stick enclosure is not finite: raise the precision")
    count = len(deltas)
    inf_atom = deltas[-1]
    if count == 1:
        masses = [1 - deltas[0]]
    else:
        em1 = h.expm1()
        ep = h.exp()
        diffs = [deltas[j + 1] - deltas[j] for j in range(count - 1)]
        masses = [(1 - deltas[0]) + diffs[0] / em1]
        masses.extend((diffs[j] - ep * diffs[j - 1]) / em1 for j in range(1, count - 1))
        masses.append(diffs[-1] / (-h).expm1())
    vec = _floats_of_balls(masses, upper=True)
    return vec, inf_atom


def _round_down(pair: MonotoneLossPair, h: arb, n_lo: int, n_hi: int) -> np.ndarray:
    """Lower endpoints of the rounded-down masses on (n_lo..n_hi) h (module docstring)."""
    surv = pair.survival_p_many([n * h for n in range(n_lo, n_hi + 1)])
    masses = [surv[j] - surv[j + 1] for j in range(len(surv) - 1)] + [surv[-1]]
    return _floats_of_balls(masses, upper=False)


def monotone_loss_directions(pair: MonotoneLossPair, h_value, tail: float, lower_bound: bool) -> list[_Direction]:
    """The directions (P || Q and Q || P, or one for a symmetric pair) of a monotone-loss pair on
    the grid h Z: connect-the-dots upper sides and rounded-down lower sides (module docstring).
    Runs at the caller's working precision; :meth:`accounting.PrivacyLossDistribution.from_pair`
    wraps them."""
    h = exact(h_value)
    h_float = float(h.mid())
    directions = []
    named = [("P||Q = Q||P", pair)] if pair.symmetric else [("P||Q", pair), ("Q||P", pair.reversed())]
    for name, p in named:
        n_lo, n_hi = _grid(p, h_float, tail)
        vec, inf_atom = _connect_the_dots(p, h, n_lo, n_hi)
        inf_up = arb(0).union(inf_atom.upper())
        up = _Side(True, n_lo, None, vec, 0.0, inf_up, arb(0), arb(0), arb(inf_atom.upper()))
        low = None
        if lower_bound:
            low_vec = _round_down(p, h, n_lo, n_hi)
            low = _Side(False, n_lo, None, low_vec, 0.0, arb(0), arb(0), arb(0), arb(0))
        directions.append(_Direction(name, up, low))
    return directions
