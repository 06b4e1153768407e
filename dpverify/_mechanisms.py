"""Mechanisms: a sampler bound to its parameters, sensitivity, guarantee and exact log-pmf.

A :class:`NoiseMechanism` releases ``value + noise`` (integer-valued for the discrete laws). It
takes its privacy claim from :mod:`accounting` — ``mechanism.law`` is the accountant's object,
and :attr:`NoiseMechanism.guarantee` is ``law.pure()`` or its exact RDP curve — never from a
hand-written epsilon, and it exposes the exact log-pmf of its output through the accountant's
neighbouring pair, so the auditor can test samples against the very object the ledger spends.

Samplers are the exact ones of :mod:`dpverify._samplers` (integer arithmetic for the discrete
Laplace and discrete Gaussian; numpy's float Poisson for Skellam; float baselines for the
continuous Laplace and Gaussian, labelled as such).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

import numpy as np

import accounting as acc
from accounting._certified import working_precision
from accounting._validation import AccountingError

from . import _samplers

__all__ = [
    "NoiseMechanism",
    "discrete_gaussian_mechanism",
    "discrete_laplace_mechanism",
    "gaussian_mechanism",
    "laplace_mechanism",
    "randomized_response_mechanism",
    "skellam_mechanism",
]


@dataclass(frozen=True)
class NoiseMechanism:
    """``release(value, rng, size)`` = value + noise, with the accountant's law of that noise."""

    name: str
    law: Any
    draw: Callable[[np.random.Generator, int | None], Any]
    discrete: bool
    baseline: bool = False
    #: how the released value combines the input and the noise draw (default: their sum)
    combine: Callable[[Any, Any], Any] | None = None

    @property
    def guarantee(self) -> Any:
        """The privacy claim: pure DP where the law is pure, else the exact RDP curve."""
        pure = self.law.pure()
        return pure if pure is not None else self.law.rdp()

    def release(self, value: Any, rng: np.random.Generator, size: int | None = None) -> Any:
        """``value`` plus fresh noise (``size`` independent releases, or one)."""
        if self.discrete:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise AccountingError("value", value, "an integer query answer (discrete mechanism)")
            value = int(value) if size is None else np.int64(value)
        else:
            value = float(value)
        noise = self.draw(rng, size)
        return value + noise if self.combine is None else self.combine(value, noise)

    def log_pmf(self, output: int, value: int = 0) -> float:
        """log P[release(value) = output] from the accountant's certified pmf (discrete laws only)."""
        if not self.discrete:
            raise AccountingError("mechanism", self.name, "a discrete mechanism (continuous laws have no pmf)")
        pair = self.law.output_pair()
        with working_precision(None):
            ball = pair.log_p(int(output) - int(value))
            return -math.inf if not ball.is_finite() and ball < 0 else float(ball.mid())

    def describe(self) -> str:
        suffix = " (float baseline)" if self.baseline else ""
        return f"{self.name}: {self.law.describe()}{suffix}"


def sigma_at_most(variance: Fraction) -> float:
    """The largest float sigma with sigma^2 <= variance.

    The accountant takes sigma, which is irrational for most rational variances; rounding it
    *down* assumes less noise than there is, so the computed guarantee can only be weaker.
    """
    sigma = math.sqrt(variance)
    while Fraction(sigma) ** 2 > variance:
        sigma = math.nextafter(sigma, 0.0)
    return sigma


def discrete_laplace_mechanism(scale: float | Fraction, sensitivity: int = 1) -> NoiseMechanism:
    """Integer query + Lap_Z(scale), exact sampler (Canonne-Kamath-Steinke Alg. 2)."""
    law = acc.DiscreteLaplace(scale=scale, sensitivity=sensitivity)
    return NoiseMechanism("discrete Laplace", law, lambda rng, size: _samplers.discrete_laplace(rng, scale, size), True)


def discrete_gaussian_mechanism(sigma2: float | Fraction, sensitivity: int = 1) -> NoiseMechanism:
    """Integer query + N_Z(0, sigma2) for a rational variance, exact sampler (CKS Alg. 3)."""
    variance = Fraction(sigma2)
    law = acc.DiscreteGaussian(sigma=sigma_at_most(variance), sensitivity=sensitivity)
    return NoiseMechanism("discrete Gaussian", law, lambda rng, size: _samplers.discrete_gaussian(rng, variance, size), True)


def skellam_mechanism(variance: float, sensitivity: int = 1) -> NoiseMechanism:
    """Integer query + Sk(0, variance) (difference of two Poisson(variance/2))."""
    law = acc.Skellam(variance=variance, l1_sensitivity=sensitivity)
    return NoiseMechanism("Skellam", law, lambda rng, size: _samplers.skellam(rng, variance, size), True)


def randomized_response_mechanism(epsilon: float) -> NoiseMechanism:
    """Binary randomized response: keep the bit with probability e^eps / (1 + e^eps).

    ``release(bit, ...)`` returns the reported bit; the law is the accountant's
    ``RandomizedResponse(epsilon)``.
    """
    law = acc.RandomizedResponse(epsilon=epsilon)
    # The flip probability 1/(1 + e^eps) as an exact rational of the float e^eps (drawn exactly).
    flip = Fraction(1) / (1 + Fraction(math.exp(epsilon)))

    def draw(rng: np.random.Generator, size: int | None) -> Any:
        return _samplers.bernoulli(rng, flip, size)

    def combine(bit: Any, flips: Any) -> Any:
        if not np.all((np.asarray(bit) == 0) | (np.asarray(bit) == 1)):
            raise AccountingError("value", bit, "a bit, 0 or 1")
        return (bit + flips) % 2

    return NoiseMechanism("randomized response", law, draw, True, combine=combine)


def laplace_mechanism(scale: float, sensitivity: float = 1.0) -> NoiseMechanism:
    """Real query + continuous Laplace(scale): the papers' float baseline (DP-SE)."""
    law = acc.Laplace(scale=scale, sensitivity=sensitivity)
    return NoiseMechanism("Laplace", law, lambda rng, size: _samplers.laplace(rng, scale, size), False, baseline=True)


def gaussian_mechanism(sigma: float, sensitivity: float = 1.0) -> NoiseMechanism:
    """Real query + continuous Gaussian(sigma): float baseline."""
    law = acc.Gaussian(sigma=sigma, sensitivity=sensitivity)
    return NoiseMechanism("Gaussian", law, lambda rng, size: _samplers.gaussian(rng, sigma, size), False, baseline=True)
