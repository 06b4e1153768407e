"""Privacy amplification by subsampling: RDP curves and PLDs of subsampled mechanisms, certified.

Poisson subsampling with probability q (each record kept independently; add/remove neighbours)
    RDP, Gaussian base (Mironov, Talwar & Zhang 2019, "Renyi differential privacy of the sampled
    Gaussian mechanism", Sec. 3.3): at integer alpha,
        A_alpha = sum_{k=0}^{alpha} C(alpha, k) (1-q)^{alpha-k} q^k exp((k^2 - k) / (2 s^2)),
        eps(alpha) = log(A_alpha) / (alpha - 1),       s = sigma / Delta,
    exact for the remove direction, which dominates the add direction (their Thm 5).
    RDP, any base with an RDP curve (Zhu & Wang 2019, "Poisson subsampled Renyi differential
    privacy", Thm 6, the general upper bound): at integer alpha >= 2,
        eps'(alpha) <= log( (1-q)^{alpha-1} (alpha q - q + 1) + C(alpha,2) q^2 (1-q)^{alpha-2} e^{eps(2)}
                            + 3 sum_{l=3}^{alpha} C(alpha,l) (1-q)^{alpha-l} q^l e^{(l-1) eps(l)} ) / (alpha - 1).
    PLD, base with a monotone privacy loss (Laplace, Gaussian): the pair
        remove: P = q mu_1 + (1-q) mu_0 vs Q = mu_0,   delta(t) = q delta_base(log((e^t - 1 + q)/q))
                (1 - e^t when e^t <= 1 - q);
        add:    P = mu_0 vs Q = q mu_1 + (1-q) mu_0,   delta(t) = c delta_base_rev(log(q e^t / c)),
                c = 1 - (1-q) e^t (0 when c <= 0);
    (the standard mixture identities, e.g. Zhu, Dong & Wang 2022, Prop. 30), discretised by
    connect-the-dots in :mod:`accounting._privacy_loss._pld_continuous`; both directions are kept.

Sampling without replacement (a fixed-size subset of m of n records; substitution neighbours)
    RDP (Wang, Balle & Kasiviswanathan 2019, "Subsampled Renyi differential privacy and analytical
    moments accountant", Thm 9), gamma = m/n, at integer alpha >= 2:
        eps'(alpha) <= log(1 + gamma^2 C(alpha,2) min{4(e^{eps(2)} - 1), e^{eps(2)} min{2, (e^{eps(inf)} - 1)^2}}
                           + sum_{j=3}^{alpha} gamma^j C(alpha,j) e^{(j-1) eps(j)} min{2, (e^{eps(inf)} - 1)^j}) / (alpha - 1),
    the base's curve taken for the substitution relation of the subset.

Real (non-integer) orders: (alpha - 1) D_alpha = log E_Q[(dP/dQ)^alpha] is convex in alpha
(Hölder; van Erven & Harremoës 2014, Thm 11), so it is at most the chord between the two
neighbouring integers: the curve is evaluated exactly at integers and by that certified chord in
between (MTZ 2019 give an exact series for real orders; the chord is an upper bound of it).
Above order ``MAX_ORDER`` the base's own curve is used: subsampling never increases a Renyi
divergence (quasi-convexity in the pair, van Erven & Harremoës Thm 13).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from flint import arb

from .._core._certified import exact, upper_float, working_precision
from .._core._guarantees import RDP, PureDP
from .._core._mechanism_base import Mechanism
from .._core._pairs import IntegerPair
from .._privacy_loss._pld_continuous import MonotoneLossPair, continuous_loss_pair
from .._core._validation import AccountingError, check_positive_int, check_probability

__all__ = [
    "PoissonMixturePair",
    "PoissonSampled",
    "PoissonSubsampledLoss",
    "SampledWithoutReplacement",
    "sampled_gaussian_log_moment",
]

#: Largest integer order evaluated by the subsampling formulas (O(alpha) terms each).
MAX_ORDER = 256


def _check_base(mechanism: Any) -> None:
    if not isinstance(mechanism, Mechanism):
        raise AccountingError("mechanism", mechanism, "an accounting Mechanism (with rdp())")


def _int_of(alpha: arb) -> int | None:
    """alpha as an int if the exact ball is an integer, else None."""
    if alpha.is_exact() and alpha.is_integer():
        return int(alpha.floor().unique_fmpz())
    return None


def sampled_gaussian_log_moment(q, sigma_over_delta, alpha: int) -> arb:
    """log A_alpha of MTZ 2019 (the Poisson-subsampled Gaussian) at an integer order, in Arb."""
    qq = exact(q)
    s = exact(sigma_over_delta)
    two_s2 = 2 * s * s
    terms = []
    log_q, log_1q = qq.log(), (1 - qq).log()
    for k in range(alpha + 1):
        log_binom = arb(math.comb(alpha, k)).log()
        terms.append(log_binom + (alpha - k) * log_1q + k * log_q + arb(k * k - k) / two_s2)
    return _logsumexp(terms)


def _logsumexp(values: list[arb]) -> arb:
    top = max(values, key=lambda v: float(v.mid()))
    shift = top.mid()
    total = arb(0)
    for v in values:
        total += (v - shift).exp()
    return shift + total.log()


def _chord_curve(log_moment, base_curve: RDP, name: str, approx_log_moment=None) -> RDP:
    """An RDP curve from (alpha - 1) eps(alpha) = log_moment(alpha) at integers, chord in between,
    and the base curve above MAX_ORDER (module docstring)."""

    @functools.lru_cache(maxsize=1024)
    def at_int(alpha: int, prec: int) -> arb:
        with working_precision(prec):
            return log_moment(alpha)

    def curve(alpha: arb) -> arb:
        from flint import ctx

        if bool(alpha > MAX_ORDER):
            return base_curve.ball(alpha)
        k = _int_of(alpha)
        prec = ctx.prec
        if k is not None:
            if k == 1:
                raise AccountingError("alpha", 1, "an order > 1")
            return at_int(k, prec) / (k - 1)
        lo = int(float(alpha.mid()) // 1)
        if not (bool(alpha > lo) and bool(alpha < lo + 1)):
            lo = int(alpha.floor().unique_fmpz()) if alpha.floor().is_exact() else lo
        theta = alpha - lo
        m_lo = arb(0) if lo == 1 else at_int(lo, prec)
        m_hi = at_int(lo + 1, prec)
        return ((1 - theta) * m_lo + theta * m_hi) / (alpha - 1)

    approx = None
    if approx_log_moment is not None:
        table = approx_log_moment(MAX_ORDER + 1)  # index a -> log moment at order a (float)

        def approx(alphas: np.ndarray) -> np.ndarray:
            a = np.asarray(alphas, dtype=float)
            out = np.empty_like(a)
            big = a > MAX_ORDER
            small = ~big
            lo = np.floor(a[small]).astype(int)
            lo = np.clip(lo, 1, MAX_ORDER - 1)
            theta = a[small] - lo
            out[small] = ((1 - theta) * table[lo] + theta * table[lo + 1]) / (a[small] - 1)
            if big.any():
                base = base_curve.approx(a[big])
                out[big] = base if base is not None else np.inf
            return out

    return RDP.from_function(curve, name, approx=approx)


def _float_sgm_table(q: float, s: float, top: int) -> np.ndarray:
    """Float log A_a of MTZ 2019 at a = 0..top (0 below 2): one masked log-sum-exp over the
    (a, k) table (search steering only; every reported number is the Arb sum)."""
    from scipy.special import gammaln

    a = np.arange(2, top + 1, dtype=float)[:, None]
    k = np.arange(top + 1, dtype=float)[None, :]
    inside = k <= a
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = gammaln(a + 1) - gammaln(k + 1) - gammaln(np.where(inside, a - k, 0) + 1) + (a - k) * math.log1p(-q) + k * math.log(q) + (k * k - k) / (2 * s * s)
    terms = np.where(inside, terms, -np.inf)
    top_term = terms.max(axis=1, keepdims=True)
    out = np.zeros(top + 1)
    out[2:] = top_term[:, 0] + np.log(np.exp(terms - top_term).sum(axis=1))
    return out


def _base_eps_at(base_curve: RDP, j: int) -> arb:
    return base_curve.ball(j).upper()


@dataclass(frozen=True)
class PoissonSampled(Mechanism):
    """``mechanism`` run on a Poisson subsample (each record kept with ``probability`` q).

    Neighbouring datasets differ by adding or removing one record. ``rdp()``: MTZ 2019's exact
    integer-order formula for a Gaussian base, Zhu & Wang 2019's general bound otherwise;
    ``pure()``: log(1 + q (e^eps - 1)) for a pure-DP base (Li, Qardaji & Su 2012);
    ``monotone_loss_pair()`` (continuous bases) / ``output_pair()`` (discrete bases): the
    subsampled pair for the PLD route.
    """

    #: the RDP curve is an upper bound (exact only at integer orders for the Gaussian): routes say so
    rdp_is_exact = False

    mechanism: Any
    probability: float | Fraction

    family = "poisson-sampled"

    def __post_init__(self) -> None:
        _check_base(self.mechanism)
        check_probability("probability", self.probability, open_high=False)

    def _is_gaussian(self) -> bool:
        from .._mechanisms import Gaussian

        return isinstance(self.mechanism, Gaussian)

    def rdp(self) -> RDP | None:
        q = self.probability
        base = self.mechanism.rdp()
        if q == 1 or base is None:  # None: the base has no curve (not available), nor has its subsample's
            return base
        if self._is_gaussian():
            s = Fraction(self.mechanism.sigma) / Fraction(self.mechanism.sensitivity)
            return _chord_curve(
                lambda a: sampled_gaussian_log_moment(q, s, a),
                base,
                f"Poisson(q={q}) x {self.mechanism.describe()}: MTZ 2019 exact at integer orders",
                lambda top: _float_sgm_table(float(q), float(s), top),
            )
        return _chord_curve(lambda a: _zhu_wang_log_moment(q, base, a), base, f"Poisson(q={q}) x {self.mechanism.describe()}: Zhu & Wang 2019 Thm 6")

    def pure(self) -> PureDP | None:
        base = self.mechanism.pure()
        if base is None:
            return None
        with working_precision(None):
            q = exact(self.probability)
            return PureDP(upper_float((1 + q * (exact(base.epsilon).exp() - 1)).log()))

    def monotone_loss_pair(self) -> MonotoneLossPair | None:
        base = continuous_loss_pair(self.mechanism)
        if base is None or self.probability == 1:
            return base
        return PoissonSubsampledLoss(base, self.probability)

    def output_pair(self):
        """For a discrete base with an integer output pair (P, Q) = (mu_1, mu_0): the remove pair
        (q mu_1 + (1-q) mu_0, mu_0) on the integers; the PLD builds both directions from it."""
        base = self.mechanism.output_pair()
        if base is None or self.probability == 1:
            return base
        return PoissonMixturePair(base, self.probability)

    def describe(self) -> str:
        return f"{self.mechanism.describe()}, Poisson-subsampled with probability {self.probability}"


class PoissonMixturePair(IntegerPair):
    """P = q mu_1 + (1-q) mu_0, Q = mu_0 for an integer pair (mu_1, mu_0): log-masses by a
    log-sum-exp of the base's balls, tails as the same mixture of the base's tail bounds."""

    def __init__(self, base: IntegerPair, probability) -> None:
        check_probability("probability", probability)
        self.base = base
        self.probability = probability

    def _mix(self, a: arb, b: arb) -> arb:
        q = exact(self.probability)
        if not a.is_finite() and bool(a < 0):
            return (1 - q).log() + b if b.is_finite() else b
        if not b.is_finite() and bool(b < 0):
            return q.log() + a
        return _logsumexp([q.log() + a, (1 - q).log() + b])

    def log_p(self, k: int) -> arb:
        return self._mix(self.base.log_p(k), self.base.log_q(k))

    def log_q(self, k: int) -> arb:
        return self.base.log_q(k)

    def tail_p(self, lo: int, hi: int) -> arb:
        q = exact(self.probability)
        return q * arb(self.base.tail_p(lo, hi).upper()) + (1 - q) * arb(self.base.tail_q(lo, hi).upper())

    def tail_q(self, lo: int, hi: int) -> arb:
        return self.base.tail_q(lo, hi)

    def support(self):
        return self.base.support()


def _zhu_wang_log_moment(q, base: RDP, alpha: int) -> arb:
    """log of Zhu & Wang 2019's Thm 6 bracket at an integer order."""
    qq = exact(q)
    one_q = 1 - qq
    total = one_q ** (alpha - 1) * (alpha * qq - qq + 1)
    if alpha >= 2:
        total += arb(math.comb(alpha, 2)) * qq**2 * one_q ** (alpha - 2) * _base_eps_at(base, 2).exp()
    for l in range(3, alpha + 1):
        total += 3 * arb(math.comb(alpha, l)) * one_q ** (alpha - l) * qq**l * ((l - 1) * _base_eps_at(base, l)).exp()
    return total.log()


@dataclass(frozen=True)
class SampledWithoutReplacement(Mechanism):
    """``mechanism`` run on a uniformly random subset of ``sample_size`` of ``source_size`` records.

    Neighbouring datasets differ by substituting one record; the base's curve must be for that
    relation. ``rdp()``: Wang, Balle & Kasiviswanathan 2019, Thm 9; ``pure()``: log(1 + gamma
    (e^eps - 1)) for a pure base (Balle, Barthe & Gaboardi 2018, Thm 9, substitution)."""

    #: the RDP curve is an upper bound (exact only at integer orders for the Gaussian): routes say so
    rdp_is_exact = False

    mechanism: Any
    sample_size: int
    source_size: int

    family = "sampled-without-replacement"

    def __post_init__(self) -> None:
        _check_base(self.mechanism)
        m = check_positive_int("sample_size", self.sample_size)
        n = check_positive_int("source_size", self.source_size)
        if m > n:
            raise AccountingError("sample_size", m, f"an integer in [1, source_size = {n}]")

    def rdp(self) -> RDP:
        base = self.mechanism.rdp()
        gamma = Fraction(self.sample_size, self.source_size)
        if gamma == 1 or base is None:
            return base
        pure = self.mechanism.pure()
        eps_inf = None if pure is None else pure.epsilon
        return _chord_curve(
            lambda a: _wbk_log_moment(gamma, base, eps_inf, a),
            base,
            f"{self.sample_size} of {self.source_size} without replacement x {self.mechanism.describe()}: WBK 2019 Thm 9",
        )

    def pure(self) -> PureDP | None:
        base = self.mechanism.pure()
        if base is None:
            return None
        with working_precision(None):
            g = exact(Fraction(self.sample_size, self.source_size))
            return PureDP(upper_float((1 + g * (exact(base.epsilon).exp() - 1)).log()))

    def describe(self) -> str:
        return f"{self.mechanism.describe()}, on {self.sample_size} of {self.source_size} records sampled without replacement"


def _wbk_log_moment(gamma: Fraction, base: RDP, eps_inf: float | None, alpha: int) -> arb:
    g = exact(gamma)
    e2 = _base_eps_at(base, 2).exp()
    if eps_inf is None:
        cap2 = arb(2)
    else:
        em1 = exact(eps_inf).expm1()
        cap2 = em1**2 if bool(em1**2 < 2) else arb(2)
    first = 4 * (e2 - 1)
    second = e2 * cap2
    term2 = first if bool(first < second) else second
    if not (bool(first < second) or bool(second <= first)):
        term2 = first.union(second).upper()  # undecided: the larger is still an upper bound
    total = 1 + g**2 * arb(math.comb(alpha, 2)) * term2
    for j in range(3, alpha + 1):
        if eps_inf is None:
            capj = arb(2)
        else:
            pj = exact(eps_inf).expm1() ** j
            capj = pj if bool(pj < 2) else arb(2)
        total += g**j * arb(math.comb(alpha, j)) * ((j - 1) * _base_eps_at(base, j)).exp() * capj
    return total.log()


# ----------------------------------------------------------------------------------------------
# the subsampled pair for the PLD route


def _log_ratio(c: arb, q: arb) -> arb:
    return (c / q).log()


class PoissonSubsampledLoss(MonotoneLossPair):
    """remove direction P = q mu_1 + (1-q) mu_0 vs Q = mu_0 of a monotone base pair (mu_1, mu_0);
    its ``reversed()`` is the add direction (module docstring)."""

    symmetric = False

    def __init__(self, base: MonotoneLossPair, probability) -> None:
        check_probability("probability", probability)
        self.base = base
        self.probability = probability

    def _q(self) -> arb:
        return exact(self.probability)

    def hockey_stick(self, t: arb) -> arb:
        q = self._q()
        c = t.exp() - (1 - q)
        if bool(c <= 0):
            return 1 - t.exp()
        if bool(c > 0):
            return q * self.base.hockey_stick(_log_ratio(c, q))
        return (1 - t.exp()).union(q)  # at the kink both branches meet (value q)

    def hockey_stick_reverse(self, t: arb) -> arb:
        q = self._q()
        c = 1 - (1 - q) * t.exp()
        if bool(c <= 0):
            return arb(0)
        if bool(c > 0):
            return c * self.base.hockey_stick_reverse((q * t.exp() / c).log())
        return arb(0).union(c.upper())

    def _mixture_survival(self, t: arb, weight_p: arb) -> arb:
        q = self._q()
        c = t.exp() - (1 - q)
        if bool(c <= 0):
            return arb(1)
        if not bool(c > 0):
            return arb(0).union(arb(1))
        g = _log_ratio(c, q)
        return weight_p * self.base.survival_p(g) + (1 - weight_p) * self.base.survival_q(g)

    def survival_p(self, t: arb) -> arb:
        return self._mixture_survival(t, self._q())

    def survival_q(self, t: arb) -> arb:
        return self._mixture_survival(t, arb(0))

    # many points: the base is evaluated once on all transformed points (fast for a Gaussian base)
    def _split_forward(self, ts: list[arb], q: arb, fallback) -> tuple[list[arb | None], list[int], list[arb]]:
        """Points whose forward transform log((e^t - (1 - q)) / q) exists (their indices and images),
        and every other point already evaluated by ``fallback``."""
        out: list[arb | None] = [None] * len(ts)
        index, inner = [], []
        for i, t in enumerate(ts):
            c = t.exp() - (1 - q)
            if bool(c > 0):
                index.append(i)
                inner.append(_log_ratio(c, q))
            else:
                out[i] = fallback(t)
        return out, index, inner

    def hockey_stick_many(self, ts: list[arb]) -> list[arb]:
        q = self._q()
        out, index, inner = self._split_forward(ts, q, self.hockey_stick)
        for i, value in zip(index, self.base.hockey_stick_many(inner)):
            out[i] = q * value
        return out  # type: ignore[return-value]

    def hockey_stick_reverse_many(self, ts: list[arb]) -> list[arb]:
        q = self._q()
        out: list[arb | None] = [None] * len(ts)
        index, inner, scale = [], [], []
        for i, t in enumerate(ts):
            e = t.exp()
            c = 1 - (1 - q) * e
            if bool(c > 0):
                index.append(i)
                inner.append((q * e / c).log())
                scale.append(c)
            else:
                out[i] = self.hockey_stick_reverse(t)
        for i, c, value in zip(index, scale, self.base.hockey_stick_reverse_many(inner)):
            out[i] = c * value
        return out  # type: ignore[return-value]

    def _mixture_survival_many(self, ts: list[arb], weight_p: arb) -> list[arb]:
        out, index, inner = self._split_forward(ts, self._q(), lambda t: self._mixture_survival(t, weight_p))
        sp = self.base.survival_p_many(inner)
        sq = self.base.survival_q_many(inner)
        for i, a, b in zip(index, sp, sq):
            out[i] = weight_p * a + (1 - weight_p) * b
        return out  # type: ignore[return-value]

    def survival_p_many(self, ts: list[arb]) -> list[arb]:
        return self._mixture_survival_many(ts, self._q())

    def survival_q_many(self, ts: list[arb]) -> list[arb]:
        return self._mixture_survival_many(ts, arb(0))

    # delta at an Arb power series argument (the fast connect-the-dots of
    # accounting._privacy_loss._pld_continuous): the mixture identities above, where the base takes a series
    def hockey_stick_series(self, t):
        return self._series(t, reverse=False)

    def has_series(self) -> bool:
        return self.base.symmetric and self.base.has_series()

    def point_cost(self) -> float | None:
        """The base's per-point cost (the mixture identities add a few Arb operations per point)."""
        return self.base.point_cost()

    def hockey_stick_reverse_series(self, t):
        return self._series(t, reverse=True)

    def survival_q_series(self, t):
        # Q = mu_0, under which the loss exceeds t iff the base loss exceeds (c / q).log()
        if not self.has_series() or not self._off_kink(t, reverse=False):
            return None
        return self.base.survival_q_series(((t.exp() - (1 - self._q())) / self._q()).log())

    def _off_kink(self, t, reverse: bool) -> bool:
        """Whether c = e^t - (1 - q) (reverse: 1 - (1 - q) e^t) is positive at the series t's
        expansion point (read from t, two coefficients, not from c): at or past the kink the
        loss transform has no series."""
        e0 = t.coeffs()[0].exp()
        q = self._q()
        return bool(((1 - (1 - q) * e0) if reverse else (e0 - (1 - q))) > 0)

    def _series(self, t, reverse: bool):
        if not self.has_series() or not self._off_kink(t, reverse):
            return None
        of = self.base.hockey_stick_series
        q = self._q()
        e = t.exp()
        c = (1 - (1 - q) * e) if reverse else (e - (1 - q))
        return c * of((q * e / c).log()) if reverse else q * of((c / q).log())

    def loss_window(self, tail: float) -> tuple[float, float]:
        lo0, hi0 = self.base.loss_window(tail)
        q = float(self.probability)

        def lift(x: float) -> float:
            return float(np.logaddexp(math.log1p(-q), math.log(q) + x))

        return lift(lo0), lift(hi0)

    def describe(self) -> str:
        return f"Poisson(q={self.probability}) x {self.base.describe()}"
