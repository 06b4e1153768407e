"""Certified tail probabilities of the noise laws behind the papers' concentration claims.

Every evaluator returns a :class:`TailBound` ``(lower, upper, method)`` with
``lower <= P <= upper`` *proven*: Arb ball arithmetic (python-flint) at 128 bits, infinite sums cut
with a proven remainder, rounded outwards to floats. ``method`` says how:

- ``"exact"``: the probability itself, enclosed (closed forms, or a finite sum plus a remainder);
- ``"chernoff"``: only an upper bound, ``exp(-sup_l (l t - log E e^{lZ}))`` with the exact moment
  generating function (or a proven sub-Gaussian majorant of it); ``lower`` is then 0. Used where
  the exact sum would need more than :data:`MAX_TERMS` terms (huge variances), i.e. where the
  claims are far from tight anyway.

Laws (all of the *summed* noise Z of one batch, on the integers, symmetric about 0):

- :class:`DiscreteLaplaceLaw` Lap_Z(b): P[|Z| > t] = 2 e^{-(t+1)/b} / (1 + e^{-1/b}) for integer
  t >= 0 (sum of a geometric series; ICLR 2023 Fact 3 in the form "P[Z >= t+1]").
- :class:`SkellamLaw` Sk(0, mu): P(k) = e^{-mu} I_|k|(mu). The upper tail P[Z >= k0] is summed
  from k0 to N by the backward Bessel recurrence I_{k-1} = I_{k+1} + (2k/mu) I_k, seeded at N and
  N + 1 with Arb's scaled Bessel function (every step adds positive balls: no cancellation);
  the rest P[Z > N] is bounded by the Chernoff bound exp(-(K asinh(K/mu) - sqrt(K^2 + mu^2) + mu)),
  K = N + 1, from E e^{lZ} = exp(mu (cosh l - 1)).
- :class:`DiscreteGaussianSumLaw`: the sum of n iid N_Z(0, s2). Exact for small supports by an
  Arb polynomial power of the truncated per-user pmf (truncation mass delta per user, proven by a
  geometric majorant; total variation of the n-fold sum <= n delta, added to both ends);
  otherwise the sub-Gaussian bound P[|Z| >= u] <= 2 exp(-u^2 / (2 n s2)) (N_Z(0, s2) is
  s2-sub-Gaussian: Canonne, Kamath, Steinke 2020, Cor. 9).
- :class:`DiscreteLaplaceSumLaw`: the sum of n iid Lap_Z(b) (the local model). Exact by
  polynomial power for small supports; otherwise Chernoff with the exact mgf
  E e^{lX} = (1 - q)^2 / ((1 - q e^l)(1 - q e^{-l})), q = e^{-1/b}, |l| < 1/b.
- :func:`laplace_tail`: continuous Laplace(b), P[|L| > x] = e^{-x/b} exactly (DP-SE baseline).
- :func:`binomial_upper_tail`: P[Bin(n, q) >= k] = I_q(k, n - k + 1) (regularised incomplete beta,
  Arb), for the rounding error at fractional parts 1/2 and for Hoeffding on Bernoulli rewards.
- :func:`laplace_sum_upper_tail`: P[L_1 + ... + L_k > x] for iid continuous Laplace(1) (Ren et al.'s
  Lemma 3), by the finite formula proven in its docstring.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from flint import arb, arb_poly, ctx

from accounting.internal import exact, lower_float, upper_float

__all__ = [
    "MAX_TERMS",
    "DiscreteGaussianSumLaw",
    "DiscreteLaplaceLaw",
    "DiscreteLaplaceSumLaw",
    "NoiseLaw",
    "SkellamLaw",
    "TailBound",
    "binomial_two_sided",
    "binomial_upper_tail",
    "laplace_sum_upper_tail",
    "laplace_tail",
    "wrapped_tail",
]

#: Largest number of pmf terms (or polynomial degree) summed exactly; beyond it, Chernoff.
MAX_TERMS = 20_000
#: Longest window of the Skellam backward recurrence (cheap steps: about 1 microsecond each).
MAX_SKELLAM_TERMS = 20_000
PREC = 128


@dataclass(frozen=True)
class TailBound:
    """lower <= P <= upper, proven; ``method`` is "exact" or "chernoff" (then lower = 0)."""

    lower: float
    upper: float
    method: str

    @staticmethod
    def of_ball(ball: arb, method: str = "exact") -> "TailBound":
        lo = max(0.0, lower_float(ball))
        hi = min(1.0, upper_float(ball))
        return TailBound(lo, hi, method)

    @staticmethod
    def of_upper(ball: arb) -> "TailBound":
        return TailBound(0.0, min(1.0, upper_float(ball)), "chernoff")

    def __add__(self, other: "TailBound") -> "TailBound":
        method = self.method if self.method == other.method else "chernoff" if "chernoff" in (self.method, other.method) else self.method
        return TailBound(self.lower + other.lower, min(1.0, self.upper + other.upper), method)

    def scaled(self, factor: float) -> "TailBound":
        return TailBound(self.lower * factor, min(1.0, self.upper * factor), self.method)


def _ball(x) -> arb:
    return exact(Fraction(x) if not isinstance(x, (int, Fraction, arb)) else x)


class NoiseLaw(ABC):
    """A law of the summed integer noise Z, symmetric about 0."""

    name: str = "law"

    @abstractmethod
    def tail(self, t: int) -> TailBound:
        """P[|Z| > t] for an integer t (t < 0 gives 1)."""

    def approx_quantile(self, prob: float) -> float:  # pragma: no cover - overridden
        return 0.0

    def quantile(self, prob: float) -> int:
        """The smallest integer t >= 0 whose certified upper tail P[|Z| > t] is <= prob."""
        if not 0 < prob < 1:
            raise ValueError(f"prob={prob!r} is invalid: expected a probability in (0, 1)")
        hi = max(0, int(math.floor(self.approx_quantile(prob))))
        step = 1
        while self.tail(hi).upper > prob:  # up until certified (doubling steps)
            hi += step
            step *= 2
        step = 1
        lo = hi - step
        while lo >= 0 and self.tail(lo).upper <= prob:  # down until it fails (or t = 0 works)
            hi = lo
            step *= 2
            lo = hi - step
        lo = max(lo, -1)  # invariant: tail(hi) <= prob < tail(lo) (lo = -1: the tail is 1)
        while hi - lo > 1:
            mid = (hi + lo) // 2
            if self.tail(mid).upper <= prob:
                hi = mid
            else:
                lo = mid
        return hi


def wrapped_tail(law: NoiseLaw, r: int, tau: int, ng: int) -> TailBound:
    """sup over sum xhat in [0, n g] of P[|A(yhat) - sum xhat| > r] (error in g units).

    The analyzer returns the representative of W = sum xhat + Z modulo m = n g + 2 tau + 1 in the
    window [-tau, n g + tau]; the error e = z - X is the representative of Z in
    [-tau - X, n g + tau - X] (length m). So {|e| <= r} contains {Z in [-r, r] and Z in that window}
    and the probability of the complement is at most 1 - P[Z in [max(-r, -tau - X), min(r, n g + tau - X)]].
    For a symmetric unimodal law the mass of that interval is smallest at X = 0 or X = n g (mirror
    images), which gives, with T(a) = P[|Z| > a],

        sup_X P[|e| > r] <= T(min(r, tau + n g)) / 2 + T(min(r, tau)) / 2,

    equal to T(r) when r <= tau: inside the accuracy window the analyzer's correction is exact.
    (The bound drops the wrapped values Z in k m + [-r, r], k != 0, which only make |e| <= r more
    likely; their mass is below T(m - r - 1).) The lower end reported is the same expression at
    X = n g (a reward vector of all ones) minus T(m - r - 1): a lower bound of the supremum.
    """
    m = ng + 2 * tau + 1
    back = law.tail(m - r - 1).upper if m - r - 1 >= 0 else 1.0
    if r <= tau:
        t = law.tail(r)
        return TailBound(max(0.0, t.lower - back), t.upper, t.method)
    a = law.tail(min(r, tau + ng))
    b = law.tail(tau)
    upper = (a.upper + b.upper) / 2
    lower = max(0.0, (a.lower + b.lower) / 2 - back)
    method = "chernoff" if "chernoff" in (a.method, b.method) else "exact"
    return TailBound(lower, min(1.0, upper), method)


# ---- discrete Laplace ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiscreteLaplaceLaw(NoiseLaw):
    """Lap_Z(scale): P[Z = k] proportional to e^{-|k|/scale}."""

    scale: Fraction
    name: str = "discrete Laplace"

    def tail(self, t: int) -> TailBound:
        if t < 0:
            return TailBound(1.0, 1.0, "exact")
        return _dlap_tail(Fraction(self.scale), int(t))

    def approx_quantile(self, prob: float) -> float:
        b = float(self.scale)
        return b * math.log(2 / (prob * (1 + math.exp(-1 / b)))) - 1


@lru_cache(maxsize=100_000)
def _dlap_tail(scale: Fraction, t: int) -> TailBound:
    with ctx.workprec(PREC):
        s = 1 / exact(scale)
        ball = 2 * (-s * (t + 1)).exp() / (1 + (-s).exp())
        return TailBound.of_ball(ball)


# ---- Skellam -------------------------------------------------------------------------------------


def _chernoff_exponent_skellam(k: float, mu: float) -> float:
    return k * math.asinh(k / mu) - math.hypot(k, mu) + mu


def _skellam_chernoff_ball(mu: arb, k: int) -> arb:
    kk = arb(k)
    return (-(kk * (kk / mu).asinh() - (kk * kk + mu * mu).sqrt() + mu)).exp()


@dataclass(frozen=True)
class SkellamLaw(NoiseLaw):
    """Sk(0, mu) = Poisson(mu/2) - Poisson(mu/2), variance mu."""

    mu: Fraction
    name: str = "Skellam"

    def tail(self, t: int) -> TailBound:
        if t < 0:
            return TailBound(1.0, 1.0, "exact")
        return _skellam_tail(Fraction(self.mu), int(t))

    def approx_quantile(self, prob: float) -> float:
        """Normal approximation (a starting point only; the search certifies)."""
        from scipy.special import ndtri

        return math.sqrt(float(self.mu)) * float(-ndtri(prob / 2)) - 1


@lru_cache(maxsize=100_000)
def _skellam_tail(mu_q: Fraction, t: int) -> TailBound:
    """P[|Sk(0, mu)| > t] = 2 P[Z >= t + 1] (module docstring)."""
    k0 = t + 1
    mu_f = float(mu_q)
    target = _chernoff_exponent_skellam(k0, mu_f) + 40.0  # remainder < e^-40 of the Chernoff scale
    step = max(16, int(math.sqrt(mu_f)))
    n_end = k0 + step
    while _chernoff_exponent_skellam(n_end + 1, mu_f) < target:
        step *= 2
        n_end = k0 + step
        if step > 4 * MAX_SKELLAM_TERMS:
            break
    with ctx.workprec(PREC):
        mu = exact(mu_q)
        if n_end - k0 > MAX_SKELLAM_TERMS:
            return TailBound.of_upper(2 * _skellam_chernoff_ball(mu, k0))
        two_over_mu = 2 / mu
        hi = mu.bessel_i(n_end + 1, scaled=True)
        cur = mu.bessel_i(n_end, scaled=True)
        total = cur
        for k in range(n_end, k0, -1):  # produce P(k - 1) for k - 1 >= k0
            prev = hi + (two_over_mu * k) * cur
            total += prev
            hi, cur = cur, prev
        rem = _skellam_chernoff_ball(mu, n_end + 1)
        ball = 2 * (total + arb(0).union(rem))
        return TailBound.of_ball(ball)


# ---- sums by polynomial power ------------------------------------------------------------------------


class _PolySum:
    """The n-fold sum of a truncated symmetric law, by one Arb polynomial power; cached suffix sums.

    ``weights`` are the masses at -K..K (up to the common factor 1/total); ``trunc`` bounds the total
    variation between the truncated-normalised law and the true one, so the sum's TV is <= n trunc.
    """

    def __init__(self, weights: list[arb], total: arb, trunc: arb, n: int) -> None:
        K = (len(weights) - 1) // 2
        power = arb_poly([w / total for w in weights]) ** n
        coeffs = power.coeffs()
        self.centre = K * n
        suffix = [arb(0)] * (len(coeffs) + 1)
        acc = arb(0)
        for idx in range(len(coeffs) - 1, -1, -1):
            acc = acc + coeffs[idx]
            suffix[idx] = acc
        self.suffix = suffix
        self.slack = n * trunc

    def tail(self, t: int) -> TailBound:
        """P[|S| > t] = 2 P[S > t] by symmetry, widened by the truncation's total variation."""
        idx = self.centre + t + 1
        upper_part = self.suffix[idx] if idx < len(self.suffix) else arb(0)
        ball = 2 * upper_part + arb(0).union(self.slack) - arb(0).union(self.slack)
        return TailBound.of_ball(ball)


@dataclass(frozen=True)
class DiscreteGaussianSumLaw(NoiseLaw):
    """Sum of ``n`` iid discrete Gaussians N_Z(0, s2) (Theorem 4's total noise)."""

    n: int
    s2: Fraction
    name: str = "sum of discrete Gaussians"

    def _half_width(self) -> int:
        return int(math.ceil(math.sqrt(2 * float(self.s2) * 90))) + 2

    def exact_possible(self) -> bool:
        return self.n * (2 * self._half_width() + 1) <= MAX_TERMS

    def tail(self, t: int) -> TailBound:
        if t < 0:
            return TailBound(1.0, 1.0, "exact")
        return _dg_sum_tail(self.n, Fraction(self.s2), int(t), self.exact_possible(), self._half_width())

    def approx_quantile(self, prob: float) -> float:
        return math.sqrt(2 * self.n * float(self.s2) * math.log(2 / prob)) * 0.8 - 1


@lru_cache(maxsize=20_000)
def _dg_weights(s2: Fraction, K: int):
    with ctx.workprec(PREC):
        v = exact(s2)
        weights = [(-(arb(k) * k) / (2 * v)).exp() for k in range(-K, K + 1)]
        total = sum(weights, arb(0))
        # sum_{|k| > K} e^{-k^2/(2 v)} <= 2 e^{-(K+1)^2/(2v)} / (1 - e^{-(2K+3)/(2v)}): ratio of consecutive terms
        tail_w = 2 * (-(arb(K + 1) ** 2) / (2 * v)).exp() / (1 - (-(arb(2 * K + 3)) / (2 * v)).exp())
        # TV(truncated-normalised, true) <= 2 tail_w / (total + tail_w) <= 2 tail_w / total
        trunc = 2 * tail_w / total
        return weights, total, trunc


@lru_cache(maxsize=64)
def _dg_poly(n: int, s2: Fraction, K: int) -> _PolySum:
    with ctx.workprec(PREC):
        weights, total, trunc = _dg_weights(s2, K)
        return _PolySum(weights, total, trunc, n)


@lru_cache(maxsize=100_000)
def _dg_sum_tail(n: int, s2: Fraction, t: int, exact_ok: bool, K: int) -> TailBound:
    with ctx.workprec(PREC):
        if exact_ok:
            return _dg_poly(n, s2, K).tail(t)
        u = arb(t + 1)
        return TailBound.of_upper(2 * (-(u * u) / (2 * n * exact(s2))).exp())


@dataclass(frozen=True)
class DiscreteLaplaceSumLaw(NoiseLaw):
    """Sum of ``n`` iid Lap_Z(scale) (Theorem 6's total noise, local model)."""

    n: int
    scale: Fraction
    name: str = "sum of discrete Laplaces"

    def _half_width(self) -> int:
        return int(math.ceil(float(self.scale) * 95)) + 2

    def exact_possible(self) -> bool:
        return self.n * (2 * self._half_width() + 1) <= MAX_TERMS

    def tail(self, t: int) -> TailBound:
        if t < 0:
            return TailBound(1.0, 1.0, "exact")
        if self.n == 1:
            return _dlap_tail(Fraction(self.scale), int(t))
        return _dl_sum_tail(self.n, Fraction(self.scale), int(t), self.exact_possible(), self._half_width())

    def approx_quantile(self, prob: float) -> float:
        b = float(self.scale)
        q = math.exp(-1 / b)
        v = 2 * q / (1 - q) ** 2
        return 0.7 * math.sqrt(2 * self.n * v * math.log(2 / prob)) - 1


@lru_cache(maxsize=64)
def _dl_poly(n: int, scale: Fraction, K: int) -> _PolySum:
    with ctx.workprec(PREC):
        s = 1 / exact(scale)
        c = (s / 2).tanh()
        weights = [c * (-s * abs(k)).exp() for k in range(-K, K + 1)]
        total = sum(weights, arb(0))
        trunc = 2 * 2 * (-s * (K + 1)).exp() / (1 + (-s).exp())  # 2 x (mass outside [-K, K])
        return _PolySum(weights, total, trunc, n)


@lru_cache(maxsize=100_000)
def _dl_sum_tail(n: int, scale: Fraction, t: int, exact_ok: bool, K: int) -> TailBound:
    with ctx.workprec(PREC):
        s = 1 / exact(scale)
        if exact_ok:
            return _dl_poly(n, scale, K).tail(t)
        # Chernoff with the exact mgf at a float-optimised lambda (any lambda in (0, 1/b) is valid)
        b = float(scale)
        q = math.exp(-1 / b)
        u_f = float(t + 1)

        def exponent(lam: float) -> float:
            return -lam * u_f + n * (2 * math.log1p(-q) - math.log1p(-q * math.exp(lam)) - math.log1p(-q * math.exp(-lam)))

        lo, hi = 0.0, (1 / b) * (1 - 1e-12)
        for _ in range(200):  # ternary search on a convex function
            a1, a2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
            if exponent(a1) < exponent(a2):
                hi = a2
            else:
                lo = a1
        lam = exact((lo + hi) / 2)
        qb = (-s).exp()
        log_m = 2 * (1 - qb).log() - (1 - qb * lam.exp()).log() - (1 - qb * (-lam).exp()).log()
        return TailBound.of_upper(2 * (-lam * (t + 1) + n * log_m).exp())


# ---- continuous and binomial laws ------------------------------------------------------------------


def laplace_tail(scale, x) -> TailBound:
    """P[|Laplace(scale)| > x] = e^{-x/scale} (x >= 0), exactly."""
    with ctx.workprec(PREC):
        ball = (-_ball(x) / _ball(scale)).exp() if x >= 0 else arb(1)
        return TailBound.of_ball(ball)


@lru_cache(maxsize=100_000)
def binomial_upper_tail(n: int, q: Fraction, k: int) -> TailBound:
    """P[Bin(n, q) >= k] = I_q(k, n - k + 1), exactly (Arb regularised incomplete beta)."""
    if k <= 0:
        return TailBound(1.0, 1.0, "exact")
    if k > n:
        return TailBound(0.0, 0.0, "exact")
    with ctx.workprec(PREC):
        ball = exact(q).beta_lower(k, n - k + 1, regularized=True)
        return TailBound.of_ball(ball)


def binomial_two_sided(n: int, q: Fraction, radius) -> TailBound:
    """P[|Bin(n, q) - n q| > radius] for a real radius >= 0."""
    q = Fraction(q)
    centre = n * q
    r = Fraction(radius)
    # B > centre + r  <=>  B >= floor(centre + r) + 1 ; B < centre - r  <=>  B <= ceil(centre - r) - 1
    up = binomial_upper_tail(n, q, math.floor(centre + r) + 1)
    k_low = math.ceil(centre - r) - 1  # P[B <= k_low] = P[n - B >= n - k_low] with n - B ~ Bin(n, 1 - q)
    down = binomial_upper_tail(n, 1 - q, n - k_low) if k_low >= 0 else TailBound(0.0, 0.0, "exact")
    return up + down


@lru_cache(maxsize=10_000)
def laplace_sum_upper_tail(k: int, x: Fraction) -> TailBound:
    """P[L_1 + ... + L_k > x] for iid Laplace(1), x >= 0, exactly.

    Write L_i = E_i - E'_i (exponentials), so the sum is G - G' with G, G' iid Gamma(k, 1).
    P[G > y] = sum_{i<k} e^{-y} y^i / i!, and integrating against the density of G':

        P[G - G' > x] = e^{-x} sum_{j=0}^{k-1} C(j + k - 1, j) 2^{-(j+k)} sum_{l=0}^{k-1-j} x^l / l!,

    (expand (x + g)^i binomially, integrate g^{j+k-1} e^{-2g}, swap the sums). All terms are
    positive: the Arb sum is tight. k = 1 gives e^{-x}/2.
    """
    with ctx.workprec(PREC + 32):
        xb = exact(x)
        # partial exponential sums E_r = sum_{l<=r} x^l / l!, r = 0..k-1
        partial = []
        term = arb(1)
        acc = arb(0)
        for l in range(k):
            if l > 0:
                term = term * xb / l
            acc = acc + term
            partial.append(acc)
        coef = arb(1) / arb(2) ** k  # C(k-1, 0) 2^-k
        total = arb(0)
        for j in range(k):
            if j > 0:
                coef = coef * (j + k - 1) / (2 * j)
            total += coef * partial[k - 1 - j]
        ball = (-xb).exp() * total
        return TailBound.of_ball(ball)
