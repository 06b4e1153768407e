"""The discrete Gaussian N_Z(0, sigma^2) (Canonne, Kamath, Steinke 2020): exact Rényi curve.

Derivation (checked numerically in the tests against direct high-precision summation).
P(k) = e^{-k^2/(2 sigma^2)} / Theta(0),  Q(k) = P(k - Delta),  Theta(c) = sum_k e^{-(k+c)^2/(2 sigma^2)}.
Completing the square,
    alpha k^2 + (1 - alpha)(k - Delta)^2 = (k + (alpha-1) Delta)^2 - alpha (alpha-1) Delta^2,
so the tilted sum is
    sum_k P(k)^alpha Q(k)^{1-alpha} = e^{alpha(alpha-1) Delta^2/(2 sigma^2)} Theta((alpha-1) Delta) / Theta(0)
and
    D_alpha = alpha Delta^2/(2 sigma^2) + log( Theta((alpha-1)Delta) / Theta(0) ) / (alpha - 1).
By Poisson summation Theta(c) = sqrt(2 pi) sigma sum_m e^{-2 pi^2 sigma^2 m^2} cos(2 pi m c), all
coefficients positive, so Theta(c) <= Theta(0), with equality iff c is an integer: D_alpha equals
the Gaussian value alpha Delta^2/(2 sigma^2) when (alpha - 1) Delta is an integer (in particular at
every integer alpha) and is strictly below it otherwise. The zCDP value Delta^2/(2 sigma^2) is
therefore tight (CKS 2020, Prop. 14).

Where the mass sits. The tilted measure is a discrete Gaussian centred at -(alpha-1) Delta, far
outside P's bulk at large alpha (a sum of P's terms cut at 40 sigma gives 38.2 instead of 128 at
alpha = 256, sigma = 1). Here there is no window to move: the whole sum is the theta function,
evaluated at the *exact* fractional part of (alpha - 1) Delta (alpha is an exact dyadic
rational) with the proven remainders of :mod:`accounting._mechanisms._theta`.

Pair: log P(k) = -k^2/(2 sigma^2) - log Theta(0). Tail: for t >= 1, consecutive terms of
sum_{k >= t} e^{-k^2/(2 sigma^2)} have ratio e^{-(2k+1)/(2 sigma^2)} <= e^{-(2t+1)/(2 sigma^2)}, so
P[X >= t] <= e^{-t^2/(2 sigma^2)} / ((1 - e^{-(2t+1)/(2 sigma^2)}) Theta(0)); by symmetry the same
bounds P[X <= -t].
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import arb

from .._core._certified import exact, upper_float, working_precision
from .._core._guarantees import RDP, ZCDP
from .._core._pairs import ShiftPair
from .._core._mechanism_base import (
    Mechanism,
    alpha_guard_bits,
    arb_to_fraction,
    check_noise_range,
    check_scale,
    check_sensitivity_int,
    guarded,
    nonneg_error,
)
from ._approx import safe_approx
from ._theta import log_theta, log_theta_ratio, log_theta_ratio_float

__all__ = ["DiscreteGaussian", "DiscreteGaussianPair", "discrete_gaussian_rdp_approx", "discrete_gaussian_rdp_ball"]


def _float_of(value) -> float:
    return float(Fraction(value)) if not isinstance(value, float) else value


def discrete_gaussian_rdp_ball(sigma, sensitivity: int, alpha: arb) -> arb:
    """Ball containing D_alpha(N_Z(0, sigma^2) || N_Z(Delta, sigma^2)) (module docstring)."""
    c = (arb_to_fraction(alpha) - 1) * sensitivity
    s = _float_of(sigma)
    with guarded(alpha_guard_bits(alpha)):
        sg = exact(sigma)
        s2 = sg * sg
        gauss = alpha * sensitivity * sensitivity / (2 * s2)
        ratio = log_theta_ratio(s2, s * s, c)
        result = gauss + ratio / (alpha - 1)
    return +result


def discrete_gaussian_rdp_approx(sigma: float, sensitivity: int, alphas: np.ndarray) -> np.ndarray:
    """Float form of :func:`discrete_gaussian_rdp_ball` (search only): the same theta formula."""
    am1 = alphas - 1.0
    s2 = sigma * sigma
    return alphas * sensitivity * sensitivity / (2 * s2) + log_theta_ratio_float(s2, am1 * sensitivity) / am1


def _gauss_upper_tail(s2: arb, t: int) -> arb:
    """Upper bound of sum_{k >= t} e^{-k^2/(2 s2)} for t >= 1 (geometric majorant)."""
    return (-(arb(t) * t) / (2 * s2)).exp() / (1 - (-(arb(2 * t + 1)) / (2 * s2)).exp())


@dataclass(frozen=True)
class DiscreteGaussianPair(ShiftPair):
    """P = N_Z(0, sigma^2), Q = N_Z(Delta, sigma^2), certified log-pmfs and tails."""

    sigma: float | int | Fraction
    sensitivity: int

    def __post_init__(self) -> None:
        check_scale("sigma", self.sigma)
        check_sensitivity_int("sensitivity", self.sensitivity)
        check_noise_range("sigma", self.sigma, self.sensitivity, 1e-12, 1e150)

    def _s2(self) -> arb:
        sg = exact(self.sigma)
        return sg * sg

    def _log_norm(self) -> arb:
        s = _float_of(self.sigma)
        return log_theta(self._s2(), s * s)

    def _log_pmf(self, x: int) -> arb:
        return -(arb(x) * x) / (2 * self._s2()) - self._log_norm()

    def _outside(self, lo: int, hi: int) -> arb:
        if lo > hi or hi + 1 < 1 or 1 - lo < 1:
            return arb(0).union(arb(1))
        s2 = self._s2()
        bound = (_gauss_upper_tail(s2, hi + 1) + _gauss_upper_tail(s2, 1 - lo)) / self._log_norm().exp()
        return nonneg_error(bound)


@dataclass(frozen=True)
class DiscreteGaussian(Mechanism):
    """Discrete Gaussian mechanism N_Z(0, sigma^2) on an integer query of sensitivity Delta.

    Exact Rényi curve via theta functions (module docstring); tight Delta^2/(2 sigma^2)-zCDP.
    """

    sigma: float | int | Fraction
    sensitivity: int = 1

    family = "discrete-gaussian"
    rdp_is_exact = True  # rdp() is the exact curve (route labels)

    def __post_init__(self) -> None:
        check_scale("sigma", self.sigma)
        check_sensitivity_int("sensitivity", self.sensitivity)
        check_noise_range("sigma", self.sigma, self.sensitivity, 1e-12, 1e150)

    @property
    def rho(self) -> float:
        with working_precision(None):
            sg = exact(self.sigma)
            return upper_float(arb(self.sensitivity) ** 2 / (2 * sg * sg))

    def rdp(self) -> RDP:
        sigma, delta = self.sigma, self.sensitivity
        sigma_f = _float_of(sigma)
        rho = delta * delta / (2 * sigma_f * sigma_f)
        return RDP.from_function(
            lambda alpha: discrete_gaussian_rdp_ball(sigma, delta, alpha),
            f"DiscreteGaussian(sigma={sigma}, Delta={delta}) exact",
            approx=safe_approx(lambda alphas: discrete_gaussian_rdp_approx(sigma_f, delta, alphas), lambda alphas: rho * alphas),
        )

    def zcdp(self) -> ZCDP:
        return ZCDP(self.rho)

    def closed_forms(self) -> dict:
        z = self.zcdp()
        return {"canonne_2020_zcdp": z, "gaussian_rdp_alpha_rho": z.to_rdp()}

    def output_pair(self) -> DiscreteGaussianPair:
        return DiscreteGaussianPair(self.sigma, self.sensitivity)

    def describe(self) -> str:
        return (
            f"discrete Gaussian N_Z(0, {self.sigma}^2) on an integer query of sensitivity "
            f"{self.sensitivity}: {self.rho:.6g}-zCDP (tight)"
        )
