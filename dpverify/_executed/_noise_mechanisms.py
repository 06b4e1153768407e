"""Mechanisms: a sampler bound to its parameters, sensitivity, guarantee and exact log-pmf.

A :class:`NoiseMechanism` releases ``value + noise`` (integer-valued for the discrete laws). It
takes its privacy claim from :mod:`accounting` — ``mechanism.law`` is the accountant's object,
and :attr:`NoiseMechanism.guarantee` is ``law.pure()`` or its exact RDP curve — never from a
hand-written epsilon, and it exposes the exact log-pmf of its output through the accountant's
neighbouring pair, so the auditor can test samples against the very object the ledger spends.

Samplers are the exact ones of :mod:`dpverify._executed._samplers` (integer arithmetic for the discrete
Laplace and discrete Gaussian; numpy's float Poisson for Skellam; float baselines for the
continuous Laplace and Gaussian, labelled as such: idealised, not DP in floating point). Where a
real-valued Laplace release is wanted, :func:`snapping_mechanism` is Mironov's snapping mechanism,
DP as executed (``accounting.Snapping``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

import numpy as np

import accounting as acc
from accounting import working_precision, AccountingError

from . import _samplers

__all__ = [
    "NoiseMechanism",
    "discrete_gaussian_mechanism",
    "discrete_laplace_mechanism",
    "gaussian_mechanism",
    "laplace_mechanism",
    "randomized_response_mechanism",
    "skellam_mechanism",
    "snapping_mechanism",
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
        suffix = " (float baseline; idealised: not DP in floating point)" if self.baseline else ""
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
    """Integer query + N_Z(0, sigma2) for a rational variance, exact sampler (CKS Alg. 3).

    ``law`` (and so ``guarantee``, an RDP curve) is the analysed N_Z(0, sigma2); the sampler draws it
    conditioned on |X| <= ymax, within total variation ``_samplers.DG_TRUNCATION_TV`` = 2^-100 of it,
    which no RDP curve absorbs: a ledger charge for a release of this mechanism is
    ``accounting._core._total_variation.WithinTotalVariation(law, 2**-100)`` (as Dist-CDP-SE's is)."""
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


def _mironov_uniform(rng: np.random.Generator, size: int) -> np.ndarray:
    """Mironov's U*: a uniform real in (0, 1) rounded down to a double, drawn exactly: the binade
    [2^-e, 2^-e+1) with probability 2^-e (e >= 1: the position of the first 1 in fair bits), the 52
    mantissa bits uniform. (A binade beyond 2^-62 is drawn with probability < 2^-62: then the next
    62 bits decide, and so on; subnormals, at 2^-1022, are never reached in practice and are refused.)"""
    e = np.ones(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        words = rng.integers(0, 1 << 62, size=todo.size, dtype=np.int64)
        zero = words == 0
        nz = ~zero
        # trailing zeros of a nonzero word: log2 of its lowest set bit (a power of two: exact in a double)
        low = words[nz] & -words[nz]
        e[todo[nz]] += np.frexp(low.astype(np.float64))[1] - 1
        e[todo[zero]] += 62
        todo = todo[zero]
        if todo.size and e[todo].max() > 1000:
            raise AccountingError("rng", rng, "a generator whose bits are not all zero")
    mantissa = rng.integers(0, 1 << 52, size=size, dtype=np.int64)
    return np.ldexp(1.0 + mantissa.astype(np.float64) * 2.0**-52, -e)


def _ln_rounded(u: float) -> float:
    """ln(u) correctly rounded to the nearest double (Mironov's hypothesis). The libm value y is
    returned when an Arb ball for ln(u) (128 bits) lies strictly between the midpoints from y to its
    neighbours, i.e. when y is provably the nearest double; otherwise (libm off by an ulp, or a
    near-tie) the ball's endpoints, at doubling precision, are rounded exactly until they agree."""
    from flint import arb, ctx

    y = math.log(u)
    with ctx.workprec(128):
        ball = arb(u).log()
        below = (arb(y) + arb(math.nextafter(y, -math.inf))) / 2  # exact: doubles' midpoints fit in 128 bits
        above = (arb(y) + arb(math.nextafter(y, math.inf))) / 2
        if ball > below and ball < above:
            return y
    prec = 128
    while True:
        with ctx.workprec(prec):
            ball = arb(u).log()
            ends = []
            for end in (ball.lower(), ball.upper()):
                m, x = (int(v) for v in end.man_exp())
                ends.append(float(Fraction(m) * Fraction(2) ** x))
        if ends[0] == ends[1]:
            return ends[0]
        prec *= 2


def snapping_mechanism(scale: float, bound: float, *, clamp_input: bool = True) -> NoiseMechanism:
    """Mironov's snapping mechanism (2012, Thm 1): clamp_B(round_Lambda(clamp_B(x) + S lambda ln U*)),
    in doubles, ln correctly rounded; ((1 + 2^-49 B)/lambda)-DP as executed (``accounting.Snapping``).

    A real-valued release that is DP in floating point (the float-safe privatizers release grid
    values instead). ``clamp_input=False`` exists for the audit suite's planted bug only: without the
    input clamp a query whose values are not bounded by construction has unbounded sensitivity."""
    law = acc.Snapping(scale=float(scale), bound=float(bound))
    lam, b = float(scale), float(bound)
    mantissa, exponent = math.frexp(lam)  # exact, where math.log2 rounds lambda = 2^k (1 + 2^-52) down to k
    grid = math.ldexp(1.0, exponent - 1 if mantissa == 0.5 else exponent)  # Lambda: the smallest power of two >= lambda

    def draw(rng: np.random.Generator, size: int | None) -> Any:
        n = 1 if size is None else int(size)
        sign = np.where(rng.integers(0, 2, size=n) == 1, -1.0, 1.0)
        logs = np.array([_ln_rounded(float(u)) for u in _mironov_uniform(rng, n)])
        noise = sign * (lam * logs)  # each product a rounded double operation, as in the theorem
        return noise[0] if size is None else noise

    def combine(value: Any, noise: Any) -> Any:
        x = float(value)
        if clamp_input:
            x = min(b, max(-b, x))
        y = x + noise  # (+): the rounded double addition
        return np.clip(np.round(y / grid) * grid, -b, b)  # y / Lambda is exact (a power of two)

    return NoiseMechanism("snapping", law, draw, False, combine=combine)


def laplace_mechanism(scale: float, sensitivity: float = 1.0) -> NoiseMechanism:
    """Real query + continuous Laplace(scale): the papers' float baseline (DP-SE); idealised, not DP
    in floating point (:func:`snapping_mechanism` is)."""
    law = acc.Laplace(scale=scale, sensitivity=sensitivity)
    return NoiseMechanism("Laplace", law, lambda rng, size: _samplers.laplace(rng, scale, size), False, baseline=True)


def gaussian_mechanism(sigma: float, sensitivity: float = 1.0) -> NoiseMechanism:
    """Real query + continuous Gaussian(sigma): float baseline."""
    law = acc.Gaussian(sigma=sigma, sensitivity=sensitivity)
    return NoiseMechanism("Gaussian", law, lambda rng, size: _samplers.gaussian(rng, sigma, size), False, baseline=True)
