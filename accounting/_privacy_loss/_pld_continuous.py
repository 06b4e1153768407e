"""Privacy-loss distributions of continuous mechanisms: connect-the-dots, certified in Arb.

What is computed
----------------
A *monotone-loss pair* is a pair of laws (P, Q) on any output space whose privacy loss
L = log dP/dQ is known through its hockey-stick curve

    delta(t) = E_{L ~ P} (1 - e^{t - L})_+ = P(L > t) - e^t Q(L > t),      t real,

(and, for the optimistic twin, the survival function P(L > t)). Laplace and Gaussian noise, and
their Poisson-subsampled mixtures (:mod:`accounting._amplification._subsampling`), are such pairs; the
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
    :mod:`accounting._privacy_loss._pld` (stochastic domination) keeps the chain of inequalities.
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

from .._core._certified import exact
from ._pld_measure import DEFAULT_DISCRETISATION, DEFAULT_TAIL_MASS, _Direction, _floats_of_balls, _Side
from .._core._validation import AccountingError, check_positive

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


#: seconds per grid point and direction of a point-by-point connect-the-dots build, for a pair
#: that states no :meth:`MonotoneLossPair.point_cost` (Arb hockey-stick values; ~2.0 s for the
#: 110,000 points of the subsampled Gaussian at h = 1e-4; the route planner's default)
POINT_COST = 2.0e-5


def point_cost(pair: "MonotoneLossPair") -> float:
    """The pair's :meth:`~MonotoneLossPair.point_cost`, or the default :data:`POINT_COST`."""
    hint = pair.point_cost()
    return POINT_COST if hint is None else float(hint)


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

    # ---- optional hooks (None = not available, as for accounting.Mechanism) --------------------
    # delta at an Arb power series argument (the fast masses of :func:`_connect_the_dots`): a
    # pair may evaluate its formula on a series; None where it cannot (a kink inside). A pair
    # that does says so in has_series(); a Poisson-subsampled pair then builds its own series
    # from its base's hockey_stick_series / survival_q_series (accounting._amplification._subsampling).
    def hockey_stick_series(self, t):
        return None

    def has_series(self) -> bool:
        """Whether :meth:`hockey_stick_series` is available (a cost estimate's question)."""
        return False

    def point_cost(self) -> float | None:
        """Estimated seconds per grid point of a point-by-point connect-the-dots build of one
        direction (:meth:`hockey_stick_many` on the grid), or None: the planner's default
        (:data:`POINT_COST`). A cost hint for the route planner, never a number's soundness;
        :func:`point_cost` reads it with the default filled in."""
        return None

    def hockey_stick_reverse_series(self, t):
        return self.hockey_stick_series(t) if self.symmetric else None

    def survival_q_series(self, t):
        """Q(L > t) at an Arb power series argument, or None. Where L has a density,
        delta'(t) = -e^t Q(L > t) (differentiate delta = P(L > t) - e^t Q(L > t) with
        dP = e^l dQ), so a pair giving this series gives delta's series from one special function
        instead of two, and without delta's cancellation between its two terms, which on a ball
        argument makes the remainder bounds of :func:`_masses_by_blocks` ~100x tighter."""
        return None

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

    def hockey_stick_series(self, t):
        return self.base.hockey_stick_reverse_series(t)

    def has_series(self) -> bool:
        return self.base.has_series()

    def hockey_stick_reverse_series(self, t):
        return self.base.hockey_stick_series(t)

    def point_cost(self) -> float | None:
        return self.base.point_cost()

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

    def _phi_of(self, t, offset: arb):
        """Phi(offset - t/m) = erfc((t/m - offset)/sqrt 2)/2 for an Arb ball or power series t."""
        return ((t * (1 / self._m()) - offset) * (1 / arb(2).sqrt())).erfc() * arb(0.5)

    def survival_q_of(self, t):
        """Q(L > t) for an Arb ball or an Arb power series t (the same formula)."""
        return self._phi_of(t, -self._m() / 2)

    def hockey_stick_of(self, t):
        """delta(t) for an Arb ball or an Arb power series t (the same formula)."""
        return self._phi_of(t, self._m() / 2) - t.exp() * self.survival_q_of(t)

    def hockey_stick_series(self, t):
        return self.hockey_stick_of(t)

    def survival_q_series(self, t):
        return self.survival_q_of(t)

    def has_series(self) -> bool:
        return True

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

    Accepted: a :class:`MonotoneLossPair`; a :class:`accounting.Mechanism` whose
    ``monotone_loss_pair()`` returns one (:class:`~accounting.Laplace`, :class:`~accounting.Gaussian`,
    subsampled mechanisms, user-written ones).
    """
    from .._core._mechanism_base import Mechanism  # here: the mechanisms import this module

    if isinstance(subject, MonotoneLossPair):
        return subject
    if not isinstance(subject, Mechanism):
        return None
    pair = subject.monotone_loss_pair()
    if pair is not None and not isinstance(pair, MonotoneLossPair):
        raise AccountingError("monotone_loss_pair()", pair, "a MonotoneLossPair or None")
    return pair


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


#: Taylor terms, starting block radius (loss units) and smallest block (grid points) of the
#: blockwise masses (:func:`_masses_by_blocks`); the relative error each mass may carry
_SERIES_TERMS = 40
_BLOCK_RADIUS = 0.1
_MIN_BLOCK = 8
_MASS_REL_ERROR = 5e-14
_U = 2.0**-53


def _horner_bounds(mids: np.ndarray, coefficient_error: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(value, error), row by row: floats with |p_r(x) - value| <= error for polynomials p_r whose
    exact coefficients are the floats ``mids[r]`` (lowest degree first) up to a total of
    ``coefficient_error[r]`` (:func:`_float_coefficients`), |x| <= 1 (x exact floats), from IEEE
    basic operations only; all blocks in one numpy pass, since per-block calls cost more in numpy
    overhead than in arithmetic.

    Running error bound (Higham, Accuracy and Stability, Alg. 5.1, made rigorous): the step
    y_i = fl(fl(x y_{i+1}) + a_i) is x y_{i+1} + a_i + pi_i with |pi_i| <= u' (|fl(x y_{i+1})| +
    |y_i|), u' = u / (1 - u), so |p(x) - y_0| <= u' mu, mu = sum_i |x|^i (|fl(x y_{i+1})| + |y_i|),
    itself accumulated by Horner over non-negative terms (3 roundings a step, each at most a factor
    1 - u low: the factor 1 + 1e-6 covers them for any degree below 10^8). For Taylor blocks, whose
    terms decay, mu is about 2 |p(x)|, against the a-priori gamma_2K sum |c_i| |x|^i, ~80 times
    larger. The coefficients' errors add at most their total (|x| <= 1)."""
    k = mids.shape[1]
    y = np.repeat(mids[:, -1:], x.shape[1], axis=1)
    ax = np.abs(x)
    mu = np.zeros_like(x)
    for i in range(k - 2, -1, -1):
        xy = x * y
        y = xy + mids[:, i : i + 1]
        mu = mu * ax + (np.abs(xy) + np.abs(y))
    # subnormal products are off by up to 2^-1075 each, absolutely: the 1e-300 covers them
    return y, (mu * (_U * (1 + 1e-6)) + coefficient_error[:, None]) * (1 + 4 * _U) + 1e-300


def _float_coefficients(balls: list[arb]) -> tuple[np.ndarray, float]:
    """(mids, error): floats, and a float >= sum_i |c_i - mids_i| over every c_i in the balls.

    float(ball) is its midpoint as a double (whatever the rounding direction, within 2u of it,
    or 2^-1074 when subnormal); the radii are summed by Arb itself: the ball of the sum
    sum_i c_i (the polynomial at 1) contains every such sum, so its radius is at least the sum of
    the radii (one C call instead of a conversion per coefficient)."""
    from flint import arb_poly

    mids = np.array([float(c) for c in balls])
    radius = float(arb_poly(balls)(arb(1)).rad())
    return mids, (radius + float(np.sum(np.abs(mids))) * 2 * _U + len(balls) * 5e-324) * (1 + 4 * len(balls) * _U)


def _mass_matrix(h: arb, terms: int):
    """The connect-the-dots mass map w(t) = (phi(t + h) - (1 + e^h) phi(t) + e^h phi(t - h)) /
    (e^h - 1) on Taylor coefficients, as an Arb matrix (one C product per block, where composing
    the polynomial with t +- h costs ~20x more): w_i = sum_{k > i} C(k, i) A_{k-i} c_k with
    A_j = h^j (1 + (-1)^j e^h) / (e^h - 1) (the diagonal cancels exactly)."""
    from flint import arb_mat

    ep, em1 = h.exp(), h.expm1()
    a = [arb(0)] + [h**j * (1 + ep if j % 2 == 0 else 1 - ep) / em1 for j in range(1, terms)]
    entries = [math.comb(k, i) * a[k - i] if k > i else 0 for i in range(terms) for k in range(terms)]
    return arb_mat(terms, terms, entries)


class _Series:
    """Taylor coefficients of the hockey sticks of one pair's two directions, shared by both
    directions' blocks: the forward block at t and the reverse block at -t need the same series
    (the second through the identity in :meth:`coefficients`), so each is computed once."""

    def __init__(self, pair: MonotoneLossPair) -> None:
        self.pair = pair
        self.directions = (pair, pair.reversed())
        self.memo: dict = {}

    def raw(self, reverse: bool, t0: arb, terms: int, constant: bool = True) -> list[arb] | None:
        """Coefficients of delta_{P||Q}(t0 + s) (reverse: delta_{Q||P}), or None; without the
        ``constant`` term (0 in its place: delta(t0 + s) - delta(t0)) when the caller reads none."""
        from flint import arb_poly, arb_series, ctx

        key = (reverse, t0.mid().str(40), t0.rad().str(10), terms, ctx.prec, constant)
        if key in self.memo:
            return self.memo[key]
        saved = ctx.cap
        try:
            ctx.cap = terms - 1
            arg = arb_series([t0, 1])
            pair = self.directions[reverse]
            slope = pair.survival_q_series(arg)
            if slope is not None:  # delta = delta(t0) + the integral of -e^t Q(L > t)
                # on a ball only the top coefficient is read (a remainder): delta in [0, 1] there
                value = arb(0) if not constant else pair.hockey_stick(t0) if t0.rad() == 0 else arb(0.5, 0.5)
                coeffs = [value] + arb_poly((-(arg.exp() * slope)).coeffs()).integral().coeffs()[1:]
            else:
                ctx.cap = terms
                value = pair.hockey_stick_series(arb_series([t0, 1]))
                coeffs = None if value is None else value.coeffs()
                if coeffs and not constant:
                    coeffs[0] = arb(0)
        except (ArithmeticError, ValueError, ZeroDivisionError):
            coeffs = None
        finally:
            ctx.cap = saved
        if coeffs is not None and not (len(coeffs) == terms and all(c.is_finite() for c in coeffs)):
            coeffs = None
        self.memo[key] = coeffs
        return coeffs

    def coefficients(self, reverse: bool, t0: arb, terms: int) -> list[arb] | None:
        """Taylor coefficients (Arb balls) of a function phi with the same connect-the-dots masses
        as delta (of direction ``reverse``) on a block around t0 (exact, or a ball for the
        remainder), or None.

        Both phi = delta and phi = delta - (1 - e^t) have the same masses, since the mass map kills
        1 and e^t. The second is e^t delta'(-t), delta' the other direction's hockey stick
        (delta_{Q||P}(t) = 1 - e^t + e^t delta_{P||Q}(-t): integrate (q - e^t p) = (q - e^t p)_+ -
        (e^t p - q)_+). Below t = 0, where delta is about 1 - e^t and the masses are its tiny
        remainder, that form carries no cancellation; above 0, delta itself less the constant
        delta(t0) (no masses either; one Arb evaluation fewer)."""
        from flint import arb_series, ctx

        if not bool(t0 < 0):
            return self.raw(reverse, t0, terms, constant=False)
        other = self.raw(not reverse, -t0, terms)  # delta'(-t0 + s'), s' = -s: odd terms change sign
        if other is None:
            return None
        saved = ctx.cap
        try:
            ctx.cap = terms
            reflected = arb_series([c if i % 2 == 0 else -c for i, c in enumerate(other)])
            coeffs = (arb_series([t0, 1]).exp() * reflected).coeffs()
        finally:
            ctx.cap = saved
        return coeffs if len(coeffs) == terms and all(c.is_finite() for c in coeffs) else None


def _block_span(a: int, b: int) -> int:
    """The power of 2 at least the half-width of block a..b: its points j sit at x = j / span, exact
    floats in [-1, 1] (a rounded x, as j / half-width would be, evaluates the polynomial a relative
    u away from the grid point, outside every bound)."""
    c = (a + b) // 2
    return 1 << (max(c - a, b - c, 1) - 1).bit_length()


def _block_polynomial(series: _Series, reverse: bool, h: arb, mass_map, n_lo: int, a: int, b: int):
    """(scaled mass coefficients, remainder float) of the block a..b (module-level doc of
    :func:`_masses_by_blocks`), or None where no series is available on it."""
    from flint import arb_mat, arb_poly

    c = (a + b) // 2
    half = max(c - a, b - c)
    t_c = (n_lo + c) * h
    r = (half + 1) * h
    ball = t_c + arb(0, r.upper())
    coeffs = series.coefficients(reverse, t_c, _SERIES_TERMS)
    top = series.coefficients(reverse, ball, _SERIES_TERMS + 1) if coeffs is not None else None
    if top is None or bool(t_c < 0) != bool(ball.upper() < 0):
        return None
    rho = top[-1].abs_upper() * r**_SERIES_TERMS
    w = (mass_map * arb_mat(_SERIES_TERMS, 1, coeffs)).entries()
    scaled = arb_poly(w)(arb_poly([0, _block_span(a, b) * h])).coeffs() or [arb(0)]
    two = (2 + 2 * h.exp()) / h.expm1()
    return scaled, float((two * rho).upper().mid()) * (1 + 1e-12) + 5e-324


def _masses_by_blocks(series: _Series, reverse: bool, h: arb, n_lo: int, count: int) -> np.ndarray | None:
    """Upper floats of the interior connect-the-dots masses w_1 .. w_{count-2}, or None when the
    pair gives no Taylor series (then every delta is evaluated in Arb, point by point).

    Blocks of grid points around a centre t_c: phi(t_c + s) = P(s) + R(s) with P the degree
    K - 1 Taylor polynomial (Arb series) of a function phi with delta's masses
    (:meth:`_Series.coefficients`) and |R(s)| <= rho = |c_K| r^K on |s| <= r, c_K the K-th
    Taylor coefficient enclosed on the whole ball [t_c - r, t_c + r] (Lagrange's remainder). The
    masses are the linear map w(t) = (phi(t + h) - (1 + e^h) phi(t) + e^h phi(t - h)) /
    (e^h - 1), so on the block w = W + L[R] with W = L[P] formed exactly in Arb (the second
    difference's cancellation happens there, in balls: :func:`_mass_matrix`) and
    |L[R]| <= (2 + 2e^h) rho / (e^h - 1). W is evaluated at every point of the block by Horner in
    floats with the bound of :func:`_horner_bounds` (all blocks of a round in one pass). A block
    whose error exceeds ``_MASS_REL_ERROR`` of its masses (or an absolute 1e-30 per release) is
    halved; below ``_MIN_BLOCK`` points (near a kink of delta, e.g. the subsampled loss's lower
    end) its deltas are evaluated point by point. The result is an upper float of every exact
    mass: the same measure as the pointwise route, computed ~10-20x faster."""
    probe = (n_lo + count // 2) * h
    if series.coefficients(reverse, probe, 2) is None and series.coefficients(reverse, -probe, 2) is None:
        return None
    pair = series.directions[reverse]
    out = np.zeros(count)
    h_float = float(h.mid())
    width = max(_MIN_BLOCK, int(_BLOCK_RADIUS / h_float))
    # blocks centred on absolute grid indices that are multiples of 2 width + 1: the reverse
    # direction's blocks are then the mirror images of the forward one's (shared series)
    period = 2 * width + 1
    first = ((n_lo + 1 + width) // period) * period - width  # an absolute block start <= n_lo + 1
    todo = []
    for start in range(first, n_lo + count - 1, period):
        a, b = max(start - n_lo, 1), min(start + period - 1 - n_lo, count - 2)
        if a <= b:
            todo.append((a, b))
    mass_map = _mass_matrix(h, _SERIES_TERMS)
    pointwise: list[tuple[int, int]] = []
    while todo:
        blocks, polys, errors = [], [], []
        for a, b in todo:
            block = _block_polynomial(series, reverse, h, mass_map, n_lo, a, b) if b - a + 1 >= _MIN_BLOCK else None
            if block is None:
                # e.g. its ball reaches a kink: halving costs more series than it saves points
                pointwise.append((a, b))
            else:
                mids_ab, coefficient_error = _float_coefficients(block[0])
                blocks.append((a, b))
                polys.append(mids_ab)
                errors.append(coefficient_error + block[1])  # both bounds are added: rounding-safe below
        todo = []
        if not blocks:
            break
        # one padded Horner pass: x = 0 beyond a block's end (values there are ignored)
        size = max(b - a + 1 for a, b in blocks)
        mids, x = np.zeros((len(blocks), max(len(m) for m in polys))), np.zeros((len(blocks), size))
        for row, ((a, b), m) in enumerate(zip(blocks, polys)):
            c = (a + b) // 2
            mids[row, : len(m)] = m
            x[row, : b - a + 1] = np.arange(a - c, b - c + 1, dtype=np.float64) / _block_span(a, b)
        value, error = _horner_bounds(mids, np.array(errors) * (1 + 2 * _U), x)
        for row, (a, b) in enumerate(blocks):
            v, e = value[row, : b - a + 1], error[row, : b - a + 1]
            if np.all(e <= _MASS_REL_ERROR * v + 1e-30 / count) and np.all(np.isfinite(v)):
                out[a : b + 1] = (v + e) * (1 + 4 * _U)
            elif b - a + 1 >= 2 * _MIN_BLOCK:
                c = (a + b) // 2
                todo += [(a, c), (c + 1, b)]
            else:
                pointwise.append((a, b))
    ep, em1 = h.exp(), h.expm1()
    for a, b in pointwise:
        deltas = pair.hockey_stick_many([(n_lo + j) * h for j in range(a - 1, b + 2)])
        masses_ab = [((deltas[i + 1] - deltas[i]) - ep * (deltas[i] - deltas[i - 1])) / em1 for i in range(1, len(deltas) - 1)]
        out[a : b + 1] = _floats_of_balls(masses_ab, upper=True)
    return out


def _mirrored_masses(mirror: np.ndarray, h: arb, n_lo: int) -> np.ndarray | None:
    """Upper floats of one direction's interior masses on (n_lo..n_lo + len - 1) h from ``mirror``,
    upper floats of the other direction's masses on the mirror grid, or None (e^t overflows).

    delta_{Q||P}(t) = 1 - e^t + e^t delta_{P||Q}(-t) (:meth:`_Series.coefficients`) and the mass
    map kills 1 and e^t, so w_{Q||P}(t) = e^t w_{P||Q}(-t) exactly: the second direction costs
    one product per point instead of a build. e^{t_j} = e^{t_top} e^{-h (top - j)}, bounded above
    by certified powers of e^{-h} (no overflow below t_top); each float product is rounded up by
    the factor 1 + 4u (exact as a float) and 1e-300 covers an underflow."""
    from .._core._certified import upper_float
    from ._pld_measure import _certified_powers

    count = len(mirror)
    e_top = upper_float(((n_lo + count - 1) * h).exp())
    if not math.isfinite(e_top):
        return None
    _, powers = _certified_powers((-h).exp(), count)
    with np.errstate(under="ignore"):
        e_t = (e_top * powers[::-1]) * (1 + 4 * _U)
        return (e_t * mirror[::-1]) * (1 + 4 * _U) + 1e-300


def _connect_the_dots(pair: MonotoneLossPair, h: arb, n_lo: int, n_hi: int, series: _Series | None = None,
                      reverse: bool = False, mirror: np.ndarray | None = None) -> tuple[np.ndarray, arb]:
    """Upper endpoints of the connect-the-dots masses on (n_lo..n_hi) h, and the +inf atom ball
    (the interior masses from ``mirror``, the other direction's upper masses on the mirror grid
    (:func:`_mirrored_masses`), when given, else blockwise from Taylor series when the pair gives
    them; ``series`` holds them for both directions of the pair ``pair`` is, or is the reverse
    of)."""
    count = n_hi - n_lo + 1
    if series is None:
        series, reverse = _Series(pair), False
    interior = _mirrored_masses(mirror, h, n_lo) if mirror is not None and len(mirror) == count >= 3 else None
    if interior is None and count >= 4 * _MIN_BLOCK:
        interior = _masses_by_blocks(series, reverse, h, n_lo, count)
    if interior is not None:
        ends = pair.hockey_stick_many([n_lo * h, (n_lo + 1) * h, (n_hi - 1) * h, n_hi * h])
        for d in ends:
            if not d.is_finite():
                raise ArithmeticError("a hockey-stick enclosure is not finite: raise the precision")
        em1 = h.expm1()
        first = (1 - ends[0]) + (ends[1] - ends[0]) / em1
        last = (ends[3] - ends[2]) / (-h).expm1()
        interior[0], interior[-1] = _floats_of_balls([first, last], upper=True)
        return interior, ends[3]
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
    named = [("P||Q = Q||P", pair, False)] if pair.symmetric else [("P||Q", pair, False), ("Q||P", pair.reversed(), True)]
    series = _Series(pair)
    mirror, mirror_grid = None, None
    for name, p, reverse in named:
        n_lo, n_hi = _grid(p, h_float, tail)
        vec, inf_atom = _connect_the_dots(p, h, n_lo, n_hi, series, reverse, mirror if mirror_grid == (-n_hi, -n_lo) else None)
        mirror, mirror_grid = vec, (n_lo, n_hi)
        # the hockey-stick value at the grid's top: the mass beyond the window, put at +inf as a
        # truncation (counted in delta; a pair's genuine infinite losses are not told apart here)
        up = _Side(True, n_lo, None, vec, 0.0, arb(0), arb(0), arb(0), arb(0).union(inf_atom.upper()))
        low = None
        if lower_bound:
            low_vec = _round_down(p, h, n_lo, n_hi)
            low = _Side(False, n_lo, None, low_vec, 0.0, arb(0), arb(0), arb(0), arb(0))
        directions.append(_Direction(name, up, low))
    return directions
