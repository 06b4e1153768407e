"""The noise choice of a privatizer: float-safe (the default) or idealised, and what the float-safe ones share.

Floating-point Laplace and Gaussian noise is not differentially private as executed: its low-order
bits depend on the input (Mironov 2012; ``audits/planted/float_laplace_bits.toml``). Every
continuous-noise privatizer of the papers therefore has two implementations:

- ``"float-safe"`` (the default): the value clamped to [0, 1], encoded on the grid of step 1/g by
  randomised rounding (the encoder of the ICLR 2023 protocols, ``_protocol_kernels``), plus exact
  discrete Laplace noise on that grid (CKS 2020, Alg. 2), as Appendix H of the ICLR paper does for
  the central and local models. Its guarantee is ``accounting.GridDiscreteLaplace``: the mechanism
  as executed, exactly eps-DP at b = g/eps.
- ``"idealised"``: the papers' float mechanism, kept to reproduce their figures bit for bit; every
  output that shows it carries :data:`IDEALISED_LABEL`.

The grid. One grid serves every privatizer: g = 2^16 (:data:`FLOAT_SAFE_GRID`). It changes a report's
variance by a negligible amount against the idealised mechanism's: randomised rounding adds at most
1/(4 g^2) = 5.8e-11 per report, and Lap_Z(g/eps)/g has variance 2q/((1 - q)^2 g^2) with q = e^{-eps/g},
which is 2/eps^2 - 1/(6 g^2) + O(eps^2/g^4): the float-safe report's variance is 2/eps^2 plus
between -1/(6 g^2) (rewards on the grid) and +1/(12 g^2) (fractional part 1/2), i.e. within
eps^2/(12 g^2) <= 1.9e-7 (relative, at eps = 100, the largest the runner takes) of the idealised
2/eps^2; at eps = 1 within 1.9e-11. A power of two keeps the encoding x g exact in floating point (x g - floor(x g) is the exact
fractional part the rounding draws on); rewards that are already on the grid (Bernoulli rewards,
all of Ren et al.'s and the ICLR paper's Bernoulli arms) are encoded exactly: their rounding's 8 coin
bits cannot move them (the coin is drawn anyway, branch-free, ``_protocol_kernels._round``). The
exact sampler's cost hardly depends on g (its tables do: ``dpverify._executed._inversion``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from numbers import Rational

from accounting import AccountingError

from ._kinds import NoiseKind, NoiseMode
from ._samplers import sampler_parameter_at_least

__all__ = [
    "DEFAULT_NOISE", "FLOAT_SAFE_GRID", "IDEALISED_LABEL", "NOISE_CHOICES", "NoiseMode", "check_noise", "decimal_epsilon", "grid_laplace_scale",
]

NOISE_CHOICES = NoiseMode.names()
DEFAULT_NOISE = NoiseMode.FLOAT_SAFE
#: what every output showing an idealised (float-noise) privatizer says
IDEALISED_LABEL = "idealised: not DP in floating point"
#: the grid of the float-safe privatizers: values are encoded in units of 1/FLOAT_SAFE_GRID
FLOAT_SAFE_GRID = 2**16


def check_noise(noise: object) -> NoiseMode:
    """The noise mode named ``noise`` (a :class:`~dpverify._executed._kinds.NoiseMode` or its name), parsed at the door."""
    if isinstance(noise, NoiseMode):
        return noise
    if not (isinstance(noise, str) and noise in NOISE_CHOICES):
        raise AccountingError("noise", noise, f"one of {NOISE_CHOICES} ('float-safe' is DP as executed; 'idealised' is the papers' float noise)")
    return NoiseMode(noise)


def decimal_epsilon(epsilon: object) -> Fraction:
    """eps as the decimal the user typed (0.1 -> 1/10, not the binary float's 2^55 denominator), or an
    exact rational as given: the noise scale g/eps then stays a small rational the sampler takes."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, Rational)):
        raise AccountingError("epsilon", epsilon, "a privacy level eps > 0")
    value = Fraction(repr(float(epsilon))) if isinstance(epsilon, float) else Fraction(epsilon)
    if not value > 0 or (isinstance(epsilon, float) and not math.isfinite(epsilon)):
        raise AccountingError("epsilon", epsilon, "a privacy level eps > 0")
    return value


def grid_laplace_scale(epsilon: object, grid: int = FLOAT_SAFE_GRID) -> Fraction:
    """The scale b of Lap_Z(b) on the grid 1/``grid`` for eps-DP: b = g/eps when the exact sampler
    takes it, else the least k/2^j >= g/eps it takes (``_samplers.sampler_parameter_at_least``): more
    noise, so the executed mechanism is (g/b <= eps)-DP, and the accountant charges that b."""
    eps = decimal_epsilon(epsilon)
    if isinstance(grid, bool) or not isinstance(grid, int) or grid < 1:
        raise AccountingError("grid", grid, "an integer g >= 1")
    return sampler_parameter_at_least("epsilon", epsilon, Fraction(grid) / eps, NoiseKind.DISCRETE_LAPLACE)
