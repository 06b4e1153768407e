"""Continuous Laplace and Gaussian mechanisms (closed forms, evaluated in Arb).

Laplace(b) on a query of sensitivity Delta (Mironov 2017, Prop. 6), with eps = Delta/b:

    D_alpha = log( alpha/(2alpha-1) e^{(alpha-1) eps} + (alpha-1)/(2alpha-1) e^{-alpha eps} ) / (alpha-1)
            = eps + log( alpha/(2alpha-1) + (alpha-1)/(2alpha-1) e^{-(2alpha-1) eps} ) / (alpha-1),

the second form (used here) keeps every quantity O(1) so the ball stays tight at large alpha.
Both directions agree (the Laplace density is symmetric). It is the baseline of the papers
(DP-SE, CTL), kept as such: continuous noise cannot be sampled exactly on a computer.

Gaussian N(0, sigma^2): D_alpha = alpha Delta^2 / (2 sigma^2) exactly, i.e. Delta^2/(2sigma^2)-zCDP.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .._core._certified import exact, upper_float, working_precision
from .._core._guarantees import RDP, ZCDP, PureDP
from .._privacy_loss._pld_continuous import GaussianLoss, LaplaceLoss
from ._approx import safe_approx
from .._core._mechanism_base import Mechanism, alpha_guard_bits, check_noise_range, check_scale, guarded

__all__ = ["Gaussian", "Laplace", "laplace_rdp_approx"]


def laplace_rdp_ball(scale, sensitivity, alpha):
    with guarded(alpha_guard_bits(alpha)):
        eps = exact(sensitivity) / exact(scale)
        a = alpha
        inner = (a + (a - 1) * (-(2 * a - 1) * eps).exp()) / (2 * a - 1)
        result = eps + inner.log() / (a - 1)
    return +result


def laplace_rdp_approx(epsilon: float, alphas: np.ndarray) -> np.ndarray:
    """Float form of :func:`laplace_rdp_ball` (search only), with eps = Delta/b. Since
    alpha + (alpha-1) e^{-x} = (2alpha-1) + (alpha-1) expm1(-x), the log term is a log1p that keeps
    its relative accuracy as alpha -> 1."""
    am1 = alphas - 1.0
    x = (2 * alphas - 1) * epsilon
    return epsilon + np.log1p(am1 * np.expm1(-x) / (2 * alphas - 1)) / am1


@dataclass(frozen=True)
class Laplace(Mechanism):
    """Continuous Laplace mechanism: query + Laplace(scale); pure (sensitivity/scale)-DP.

    The papers' baseline (DP-SE, CTL); the exact Rényi curve is Mironov's closed form.
    """

    scale: float | int | Fraction
    sensitivity: float | int | Fraction = 1

    family = "laplace"
    rdp_is_exact = True  # rdp() is the exact curve (route labels)

    def __post_init__(self) -> None:
        check_scale("scale", self.scale)
        check_scale("sensitivity", self.sensitivity)
        check_noise_range("scale", self.scale, self.sensitivity, 1e-10, 1e300)

    @property
    def epsilon(self) -> float:
        with working_precision(None):
            return upper_float(exact(self.sensitivity) / exact(self.scale))

    def rdp(self) -> RDP:
        b, d = self.scale, self.sensitivity
        eps = float(Fraction(d) / Fraction(b))
        return RDP.from_function(
            lambda alpha: laplace_rdp_ball(b, d, alpha),
            f"Laplace(b={b}, Delta={d}) exact",
            approx=safe_approx(lambda alphas: laplace_rdp_approx(eps, alphas), lambda alphas: np.full(alphas.shape, eps)),
        )

    def pure(self) -> PureDP:
        return PureDP(self.epsilon)

    def closed_forms(self) -> dict:
        pure = self.pure()
        return {
            "mironov_2017": self.rdp(),
            "pure_eps": pure,
            "pure_to_rdp_tight": pure.to_rdp(),
            "pure_to_zcdp_tanh": pure.to_zcdp(),
        }

    def monotone_loss_pair(self):
        """The privacy-loss pair of the PLD route (connect-the-dots, :mod:`accounting._privacy_loss._pld_continuous`)."""
        return LaplaceLoss(self.scale, self.sensitivity)

    def describe(self) -> str:
        return f"continuous Laplace(b={self.scale}) on a query of sensitivity {self.sensitivity} (baseline): {self.epsilon:.6g}-DP"


@dataclass(frozen=True)
class Gaussian(Mechanism):
    """Continuous Gaussian mechanism N(0, sigma^2): alpha Delta^2/(2 sigma^2)-RDP, exact."""

    sigma: float | int | Fraction
    sensitivity: float | int | Fraction = 1

    family = "gaussian"
    rdp_is_exact = True  # rdp() is the exact curve (route labels)

    def __post_init__(self) -> None:
        check_scale("sigma", self.sigma)
        check_scale("sensitivity", self.sensitivity)
        check_noise_range("sigma", self.sigma, self.sensitivity, 1e-10, 1e150)

    def _rho_ball(self):
        d = exact(self.sensitivity)
        s = exact(self.sigma)
        return d * d / (2 * s * s)

    @property
    def rho(self) -> float:
        with working_precision(None):
            return upper_float(self._rho_ball())

    def rdp(self) -> RDP:
        sigma, d = self.sigma, self.sensitivity

        def curve(alpha):
            ds, ss = exact(d), exact(sigma)
            return alpha * ds * ds / (2 * ss * ss)

        rho = float(Fraction(d) ** 2 / (2 * Fraction(sigma) ** 2))
        return RDP.from_function(curve, f"Gaussian(sigma={sigma}, Delta={d}) exact", approx=safe_approx(lambda alphas: rho * alphas))

    def zcdp(self) -> ZCDP:
        return ZCDP(self.rho)

    def closed_forms(self) -> dict:
        return {"mironov_2017": self.rdp(), "bun_steinke_2016_zcdp": self.zcdp()}

    def monotone_loss_pair(self):
        """The privacy-loss pair of the PLD route (connect-the-dots, :mod:`accounting._privacy_loss._pld_continuous`)."""
        return GaussianLoss(self.sigma, self.sensitivity)

    def describe(self) -> str:
        return f"Gaussian N(0, {self.sigma}^2) on a query of sensitivity {self.sensitivity}: {self.rho:.6g}-zCDP"
