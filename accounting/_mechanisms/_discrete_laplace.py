"""Discrete Laplace noise Lap_Z(b) on an integer query of sensitivity Delta, and its Pólya split.

Law: P[X = x] = c e^{-|x|/b} with c = (e^{1/b} - 1)/(e^{1/b} + 1) = tanh(1/(2b)).

Exact Rényi divergence (closed form, no truncation)
----------------------------------------------------
With t = 1/b, P = Lap_Z(b), Q = P shifted by Delta, the tilted sum
S(alpha) = sum_k P(k)^alpha Q(k)^(1-alpha) = c sum_k e^{-t(alpha|k| + (1-alpha)|k - Delta|)}
splits over three regions, each a geometric series:

- k <= 0:          alpha|k| + (1-alpha)|k-Delta| = (1-alpha)Delta - k
                   -> c e^{(alpha-1)Delta t} / (1 - e^{-t}) = e^{(alpha-1)Delta t} / (1 + e^{-t});
- k >= Delta:      = k + (alpha-1)Delta  -> e^{-alpha Delta t} / (1 + e^{-t});
- 0 < k < Delta:   = (2alpha-1)k + (1-alpha)Delta
                   -> c e^{(alpha-1)Delta t} sum_{k=1}^{Delta-1} r^k,  r = e^{-(2alpha-1)t}.

Hence D_alpha = Delta t + log(I)/(alpha - 1) with
I = (1 + e^{-(2alpha-1)Delta t})/(1 + e^{-t}) + c r (1 - r^{Delta-1})/(1 - r)
(the last term absent for Delta = 1), every piece a positive quantity evaluated in Arb (1 - r by
``expm1``), so the enclosure is tight for every real alpha > 1. Since P is symmetric, reflecting
k -> Delta - k swaps P and Q: both directions give the same divergence. I <= 1 shows
D_alpha <= Delta/b, the pure guarantee, which is its limit as alpha -> infinity.

Pólya split (ICLR 2023 Theorem 1; Goryczka & Xiong)
----------------------------------------------------
Polya(r, beta) has generating function ((1 - beta)/(1 - beta z))^r, so the sum of n iid
Polya(1/n, beta) is Polya(1, beta) = Geometric: P[G = x] = (1 - beta) beta^x. The difference of
two iid geometrics has P[X = x] proportional to beta^{|x|}: with beta = e^{-1/b} it is exactly
Lap_Z(b). :class:`PolyaDifferenceSum` therefore carries *the same* guarantee objects as
:class:`DiscreteLaplace` (not a bound derived separately).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import arb

from .._core._certified import exact, upper_float, working_precision
from .._core._guarantees import RDP, ZCDP, PureDP
from .._core._pairs import ShiftPair
from .._core._validation import AccountingError, check_positive_int
from ._approx import safe_approx
from .._core._mechanism_base import (
    Mechanism,
    alpha_guard_bits,
    check_noise_range,
    check_scale,
    check_sensitivity_int,
    guarded,
    half_square_up,
)

__all__ = ["DiscreteLaplace", "DiscreteLaplacePair", "PolyaDifferenceSum", "discrete_laplace_rdp_approx"]


def _upper_tail(t: arb, k: int) -> arb:
    """P[X >= k] for X ~ Lap_Z(1/t), exactly (as a ball)."""
    if k >= 1:
        return (-t * k).exp() / (1 + (-t).exp())
    # k <= 0: P[X >= k] = 1 - P[X <= k - 1] = 1 - P[X >= 1 - k]
    return 1 - (-t * (1 - k)).exp() / (1 + (-t).exp())


@dataclass(frozen=True)
class DiscreteLaplacePair(ShiftPair):
    """P = Lap_Z(scale), Q = Lap_Z(scale) + sensitivity: the worst-case neighbouring outputs.

    log-pmfs are exact closed forms evaluated in Arb; tails are exact (geometric series), so the
    tail balls *contain* the true mass outside the window.
    """

    scale: float | int | Fraction
    sensitivity: int

    def __post_init__(self) -> None:
        check_scale("scale", self.scale)
        check_sensitivity_int("sensitivity", self.sensitivity)
        check_noise_range("scale", self.scale, self.sensitivity, 1e-12, 1e300)

    def _t(self) -> arb:
        return 1 / exact(self.scale)

    def _log_pmf(self, x: int) -> arb:
        t = self._t()
        return (t / 2).tanh().log() - t * abs(int(x))

    def _outside(self, lo: int, hi: int) -> arb:
        if lo > hi:
            return arb(1)
        t = self._t()
        return _upper_tail(t, hi + 1) + _upper_tail(t, 1 - lo)

    def loss_atom_count(self) -> int:
        """How many distinct privacy losses :meth:`loss_atoms` returns (Delta + 1)."""
        return self.sensitivity + 1

    def loss_atoms(self, forward: bool = True) -> tuple[list[tuple[arb, arb]], arb, arb]:
        """The privacy-loss distribution in closed form, whatever the scale: (losses with their
        P-masses, the mass where Q = 0, a tail bound), the form :mod:`accounting._privacy_loss._pld` reads.

        L(x) = (|x - Delta| - |x|)/b is Delta/b for x <= 0, -Delta/b for x >= Delta and
        (Delta - 2x)/b in between, so with t = 1/b the PLD has Delta + 1 atoms: Delta t with mass
        P(X <= 0) = 1/(1 + e^{-t}), (Delta - 2x) t with mass tanh(t/2) e^{-t x} (0 < x < Delta) and
        -Delta t with mass P(X >= Delta) = e^{-t Delta}/(1 + e^{-t}) (the geometric tails of
        :func:`_upper_tail`). Reflecting x -> Delta - x swaps P and Q, so both directions have this
        law. Nothing is truncated: no output window, no tail mass."""
        t = self._t()
        d = self.sensitivity
        one = 1 + (-t).exp()
        c = (t / 2).tanh()
        atoms = [(d * t, 1 / one)]
        atoms += [((d - 2 * x) * t, c * (-t * x).exp()) for x in range(1, d)]
        atoms.append((-d * t, (-t * d).exp() / one))
        return atoms, arb(0), arb(0)


def discrete_laplace_rdp_ball(scale, sensitivity: int, alpha: arb) -> arb:
    """Ball containing D_alpha(Lap_Z(scale) || Lap_Z(scale) + sensitivity) (module docstring)."""
    with guarded(alpha_guard_bits(alpha)):
        a = alpha
        t = 1 / exact(scale)
        delta = sensitivity
        inner = (1 + (-(2 * a - 1) * delta * t).exp()) / (1 + (-t).exp())
        if delta > 1:
            c = (t / 2).tanh()
            r_log = -(2 * a - 1) * t
            r = r_log.exp()
            geometric = r * (-(r_log * (delta - 1)).expm1()) / (-(r_log.expm1()))
            inner = inner + c * geometric
        result = delta * t + inner.log() / (a - 1)
    return +result


def discrete_laplace_rdp_approx(scale: float, sensitivity: int, alphas: np.ndarray) -> np.ndarray:
    """Float form of :func:`discrete_laplace_rdp_ball` (search only).

    I = 1 at alpha = 1, so log I is formed as log1p(I - 1) with, for x = alpha - 1,
    I - 1 = e^{-Delta t} expm1(-2x Delta t)/(1 + e^{-t}) + c sum_{j=1}^{Delta-1} e^{-tj} expm1(-2xtj)
    (each term of the geometric part minus its value at alpha = 1), which keeps the relative
    accuracy as alpha -> 1. For Delta > 4096 the geometric part is taken in closed form.
    """
    t = 1.0 / scale
    x = alphas - 1.0
    d = int(sensitivity)
    excess = np.exp(-d * t) * np.expm1(-2 * x * d * t) / (1 + np.exp(-t))
    if d > 1:
        c = np.tanh(t / 2)
        if d <= 4096:
            j = np.arange(1, d, dtype=np.float64)
            for start in range(0, x.size, 256):
                xs = x[start : start + 256, None]
                excess[start : start + 256] += c * np.sum(np.exp(-t * j) * np.expm1(-2 * xs * t * j), axis=-1)
        else:
            def geometric(r):
                return r * (-np.expm1(np.log(r) * (d - 1))) / (-np.expm1(np.log(r)))

            excess += c * (geometric(np.exp(-(2 * alphas - 1) * t)) - geometric(np.exp(-t)))
    return d * t + np.log1p(excess) / x


@dataclass(frozen=True)
class DiscreteLaplace(Mechanism):
    """Discrete Laplace mechanism: integer query + Lap_Z(scale), P[X = x] ∝ e^{-|x|/scale}.

    Pure ``sensitivity/scale``-DP; exact Rényi curve in closed form (module docstring).
    """

    scale: float | int | Fraction
    sensitivity: int = 1

    family = "discrete-laplace"
    rdp_is_exact = True  # rdp() is the exact curve (route labels)

    def __post_init__(self) -> None:
        check_scale("scale", self.scale)
        check_sensitivity_int("sensitivity", self.sensitivity)
        check_noise_range("scale", self.scale, self.sensitivity, 1e-12, 1e300)

    @property
    def epsilon(self) -> float:
        """Delta / b rounded up."""
        with working_precision(None):
            return upper_float(exact(self.sensitivity) / exact(self.scale))

    def rdp(self) -> RDP:
        scale, delta = self.scale, self.sensitivity
        scale_f = float(Fraction(scale))
        eps = delta / scale_f
        return RDP.from_function(
            lambda alpha: discrete_laplace_rdp_ball(scale, delta, alpha),
            f"DiscreteLaplace(b={scale}, Delta={delta}) exact",
            approx=safe_approx(
                lambda alphas: discrete_laplace_rdp_approx(scale_f, delta, alphas), lambda alphas: np.full(alphas.shape, eps)
            ),
        )

    def pure(self) -> PureDP:
        return PureDP(self.epsilon)

    def zcdp(self) -> None:
        """No tight zCDP value is claimed (see ``closed_forms`` for the pure -> zCDP bounds)."""
        return None

    def closed_forms(self) -> dict:
        eps = self.epsilon
        pure = PureDP(eps)
        return {
            "pure_eps": pure,
            "pure_to_rdp_tight": pure.to_rdp(),
            "pure_to_zcdp_tanh": pure.to_zcdp(),
            "bun_steinke_2016_eps2_over_2": ZCDP(half_square_up(eps)),
        }

    def output_pair(self) -> DiscreteLaplacePair:
        return DiscreteLaplacePair(self.scale, self.sensitivity)

    def describe(self) -> str:
        return (
            f"discrete Laplace Lap_Z(b={self.scale}) on an integer query of sensitivity "
            f"{self.sensitivity}: {self.epsilon:.6g}-DP"
        )


@dataclass(frozen=True)
class PolyaDifferenceSum(Mechanism):
    """The sum of ``n`` per-user noises Polya(1/n, e^{-1/b}) - Polya(1/n, e^{-1/b}).

    Exactly Lap_Z(b) (module docstring), so every guarantee is that of
    ``DiscreteLaplace(scale, sensitivity)``: the objects returned are the very same ones.
    In Dist-DP-SE (ICLR 2023 Thm 1) b = g/eps, sensitivity = g.
    """

    n: int
    scale: float | int | Fraction
    sensitivity: int = 1

    family = "polya-difference-sum"
    rdp_is_exact = True  # rdp() is the exact curve (route labels)

    def __post_init__(self) -> None:
        check_positive_int("n", self.n)
        if isinstance(self.n, bool):
            raise AccountingError("n", self.n, "an integer >= 1")
        check_scale("scale", self.scale)
        check_sensitivity_int("sensitivity", self.sensitivity)

    @property
    def law(self) -> DiscreteLaplace:
        """The law of the summed noise: Lap_Z(scale) (infinite divisibility, proven above)."""
        return DiscreteLaplace(self.scale, self.sensitivity)

    @property
    def polya_r(self) -> Fraction:
        """Per-user Pólya shape r = 1/n."""
        return Fraction(1, self.n)

    def polya_beta(self) -> arb:
        """Per-user Pólya parameter beta = e^{-1/b} as a certified ball."""
        return (-1 / exact(self.scale)).exp()

    def rdp(self) -> RDP:
        return self.law.rdp()

    def pure(self) -> PureDP:
        return self.law.pure()

    def closed_forms(self) -> dict:
        return self.law.closed_forms()

    def output_pair(self) -> DiscreteLaplacePair:
        return self.law.output_pair()

    def describe(self) -> str:
        return (
            f"sum of {self.n} per-user Polya(1/{self.n}, e^(-1/{self.scale})) differences "
            f"= Lap_Z({self.scale}) exactly: {self.law.epsilon:.6g}-DP"
        )
