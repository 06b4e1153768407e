"""The ICLR 2023 paper's parameter choices for its distributed protocols, computed exactly.

For a batch of n users, privacy eps, scale s and confidence p (FORMULAS.md section A):

- Theorem 1 (Dist-DP-SE, pure DP): g = ceil(eps sqrt(n)), tau = ceil((g/eps) log(2/p)),
  per-user noise Polya(1/n, e^{-eps/g}) differences, total noise Lap_Z(g/eps).
- Theorem 2 (Dist-RDP-SE): g = ceil(s eps sqrt(n)), tau = ceil((2g/eps) sqrt(log(2/p)) + sqrt(2) log(2/p)),
  per-user Skellam variance g^2/(n eps^2), total Skellam variance mu = g^2/eps^2.
- Theorem 4 (Dist-CDP-SE): g = ceil(s eps sqrt(n)), tau = ceil((g/eps) sqrt(2 log(2/p))),
  per-user discrete Gaussian variance g^2/(n eps^2).
In every case the modulus is m = n g + 2 tau + 1 and the sensitivity of sum xhat is g.

Ceilings are exact: g from integer square roots of exact rationals, tau from an Arb enclosure
whose ceiling is unambiguous (precision is raised until it is), because a float ceiling is off by
one exactly at the boundaries (e.g. s eps sqrt(n) an integer).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from flint import arb

from .._core._certified import exact, working_precision
from .._core._validation import AccountingError, check_positive, check_positive_int, check_probability

if TYPE_CHECKING:  # annotations only
    from .._core._guarantees import RDP

__all__ = [
    "DistributedParameters",
    "theorem1_parameters",
    "theorem2_claimed_rdp",
    "theorem2_corrected_rdp",
    "theorem2_parameters",
    "theorem4_parameters",
]


#: the noise field each theorem sets (the others are None)
_NOISE_FIELD = {"theorem-1": "laplace_scale", "theorem-2": "total_variance", "theorem-4": "per_user_variance"}


@dataclass(frozen=True)
class DistributedParameters:
    """Parameters of one batch of the distributed protocol P = (R, S, A).

    ``scale`` is the paper's scale s (1 for Theorem 1). The noise the theorem prescribes is one of
    three quantities, each an exact positive rational under its own name; the theorem's is set,
    the other two are None:

    - ``laplace_scale``: the scale g/eps of the summed discrete-Laplace noise (Theorem 1);
    - ``total_variance``: the variance mu = g^2/eps^2 of the summed Skellam noise (Theorem 2);
    - ``per_user_variance``: the variance g^2/(n eps^2) of each user's discrete Gaussian (Theorem 4).

    ``noise`` (deprecated) is whichever of the three is set.
    """

    theorem: str
    n: int
    epsilon: float
    scale: float
    p: float
    g: int
    tau: int
    m: int
    laplace_scale: Fraction | None = None
    total_variance: Fraction | None = None
    per_user_variance: Fraction | None = None

    def _noises(self) -> dict[str, Fraction | None]:
        return {"laplace_scale": self.laplace_scale, "total_variance": self.total_variance, "per_user_variance": self.per_user_variance}

    def __post_init__(self) -> None:
        if self.theorem not in _NOISE_FIELD:
            raise AccountingError("theorem", self.theorem, f"one of {tuple(_NOISE_FIELD)}")
        name = _NOISE_FIELD[self.theorem]
        for other, value in self._noises().items():
            if other == name and (not isinstance(value, Fraction) or value <= 0):
                raise AccountingError(name, value, f"an exact rational (Fraction) > 0: the noise of {self.theorem}")
            if other != name and value is not None:
                raise AccountingError(other, value, f"None: {self.theorem} sets {name}")

    @property
    def noise(self) -> Fraction:
        """Deprecated: whichever of ``laplace_scale``, ``total_variance``, ``per_user_variance`` is set."""
        warnings.warn(
            "DistributedParameters.noise is deprecated: use .laplace_scale (Theorem 1), .total_variance (Theorem 2) "
            "or .per_user_variance (Theorem 4)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self._noises()[_NOISE_FIELD[self.theorem]]  # type: ignore[return-value]

    @property
    def sensitivity(self) -> int:
        """Sensitivity of sum xhat to one user's reward: g (a reward moves by at most g units)."""
        return self.g


def _ceil_sqrt_fraction(value: Fraction) -> int:
    """ceil(sqrt(value)) for a non-negative rational, exactly."""
    numerator, denominator = value.numerator, value.denominator
    # g >= sqrt(a/b)  <=>  g^2 b >= a
    g = math.isqrt(numerator // denominator)
    while g * g * denominator < numerator:
        g += 1
    while g > 0 and (g - 1) * (g - 1) * denominator >= numerator:
        g -= 1
    return g


def _ceil_ball(compute) -> int:
    """The ceiling of a real given by ``compute()`` (an Arb ball), exact: raise precision until unambiguous."""
    for bits in (128, 256, 1024, 4096):
        with working_precision(bits):
            ball = compute()
            lo, hi = ball.lower(), ball.upper()
            c_lo = int(lo.ceil().unique_fmpz())
            c_hi = int(hi.ceil().unique_fmpz())
            if c_lo == c_hi:
                return c_lo
    raise ArithmeticError("could not resolve a ceiling: the value is an integer to 4096 bits")


def _g(epsilon: float, n: int, s: float) -> int:
    x = Fraction(s) * Fraction(epsilon)
    return max(_ceil_sqrt_fraction(x * x * n), 1)


def _check(epsilon: float, n: int, p: float, s: float) -> None:
    check_positive("epsilon", epsilon)
    check_positive_int("n", n)
    check_probability("p", p)
    check_positive("s", s)
    if s < 1:
        raise AccountingError("s", s, "a scale s >= 1")
    if float(s) * float(epsilon) > 3e4:  # the noise variance / g^2 = 1 / (s eps)^2 would fall below 1e-9 (issue 15)
        raise AccountingError("epsilon", epsilon, f"s * epsilon <= 3e4 (got s={s}); the noise would be below the supported range")
    if float(s) * float(epsilon) * math.sqrt(n) > 2**53:  # g = ceil(s eps sqrt(n)) must stay an exact sensitivity (issue 15)
        raise AccountingError("epsilon", epsilon, f"s * epsilon * sqrt(n) <= 2^53, the largest granularity g (got s={s}, n={n})")


def theorem1_parameters(epsilon: float, n: int, p: float) -> DistributedParameters:
    """Theorem 1 (pure DP via SecAgg with Polya-difference noise)."""
    _check(epsilon, n, p, 1.0)
    g = _g(epsilon, n, 1.0)
    tau = _ceil_ball(lambda: arb(g) / exact(epsilon) * (2 / exact(p)).log())
    return DistributedParameters("theorem-1", n, epsilon, 1.0, p, g, tau, n * g + 2 * tau + 1,
                                 laplace_scale=Fraction(g) / Fraction(epsilon))


def theorem2_parameters(epsilon: float, s: float, n: int, p: float) -> DistributedParameters:
    """Theorem 2 (RDP via SecAgg with Skellam noise, scale s)."""
    _check(epsilon, n, p, s)
    g = _g(epsilon, n, s)

    def tau_ball():
        log_term = (2 / exact(p)).log()
        return 2 * arb(g) / exact(epsilon) * log_term.sqrt() + arb(2).sqrt() * log_term

    tau = _ceil_ball(tau_ball)
    mu = Fraction(g) ** 2 / Fraction(epsilon) ** 2
    return DistributedParameters("theorem-2", n, epsilon, s, p, g, tau, n * g + 2 * tau + 1, total_variance=mu)


def theorem4_parameters(epsilon: float, s: float, n: int, p: float) -> DistributedParameters:
    """Theorem 4 (zCDP via SecAgg with discrete Gaussian noise, scale s)."""
    _check(epsilon, n, p, s)
    g = _g(epsilon, n, s)
    tau = _ceil_ball(lambda: arb(g) / exact(epsilon) * (2 * (2 / exact(p)).log()).sqrt())
    per_user = Fraction(g) ** 2 / (n * Fraction(epsilon) ** 2)
    return DistributedParameters("theorem-4", n, epsilon, s, p, g, tau, n * g + 2 * tau + 1, per_user_variance=per_user)


def theorem2_claimed_rdp(epsilon: float, s: float) -> "RDP":
    """The RDP curve Theorem 2 prints for Dist-RDP-SE, read at real alpha:

    eps_hat(alpha) = alpha eps^2/2 + min{ (2 alpha - 1) eps^2/(4 s^2) + 3 eps/(2 s^3), 3 eps^2/(2 s) }.

    Kept as printed, for comparison: the exact accountant is the reference (FORMULAS.md notes
    the last term should read 3 eps^2/(2g) <= 3 eps/(2 s sqrt(n)), which is smaller).
    """
    from .._core._guarantees import RDP

    check_positive("epsilon", epsilon)
    check_positive("s", s)
    e, scale = exact(epsilon), exact(s)

    def curve(alpha: arb) -> arb:
        first = (2 * alpha - 1) * e * e / (4 * scale * scale) + 3 * e / (2 * scale**3)
        second = 3 * e * e / (2 * scale)
        return alpha * e * e / 2 + first.min(second)

    e_f, s_f = float(epsilon), float(s)

    def approx(alphas):
        import numpy as np

        first = (2 * alphas - 1) * e_f * e_f / (4 * s_f * s_f) + 3 * e_f / (2 * s_f**3)
        return alphas * e_f * e_f / 2 + np.minimum(first, 3 * e_f * e_f / (2 * s_f))

    return RDP.from_function(curve, f"ICLR Thm 2 as printed (eps={epsilon:g}, s={s:g})", approx=approx)


def theorem2_corrected_rdp(epsilon: float, s: float, n: int) -> "RDP":
    """Theorem 2's curve with the erratum corrected, for batches of n users: Agarwal, Kairouz &
    Liu (2021, Thm 3.5) for the total noise Sk(0, mu), mu = g^2/eps^2, g = ceil(s eps sqrt(n))
    (exact, as in :func:`theorem2_parameters`), l1 = l2 sensitivity g:

    eps_hat(alpha) = alpha eps^2/2 + min{ ((2 alpha - 1) g^2 + 6 g)/(4 mu^2), 3 g/(2 mu) }
                   = alpha eps^2/2 + min{ (2 alpha - 1) eps^4/(4 g^2) + 3 eps^4/(2 g^3), 3 eps^2/(2 g) },

    whose last term is the 3 eps^2/(2g) (<= 3 eps/(2 s sqrt(n))) that the printed curve gives as
    3 eps^2/(2s). A closed-form upper bound, for comparison: the exact accountant
    (``Skellam(mu, g).rdp()``) is the reference, and this equals that mechanism's
    ``closed_forms()["agarwal_2021_thm3.5"]``.
    """
    from .._core._guarantees import RDP

    check_positive("epsilon", epsilon)
    check_positive("s", s)
    if s < 1:
        raise AccountingError("s", s, "a scale s >= 1")
    if float(s) * float(epsilon) * math.sqrt(n) > 2**53:  # g = ceil(s eps sqrt(n)) must stay an exact sensitivity (issue 15)
        raise AccountingError("epsilon", epsilon, f"s * epsilon * sqrt(n) <= 2^53, the largest granularity g (got s={s}, n={n})")
    check_positive_int("n", n)
    g = _g(epsilon, n, s)
    mu = Fraction(g) ** 2 / Fraction(epsilon) ** 2

    # With D1 = D2 = g and mu = g^2/eps^2 the corrected form *is* Agarwal et al.'s bound.
    from .._mechanisms._skellam import agarwal_bound_approx, agarwal_bound_ball

    def curve(alpha: arb) -> arb:
        return agarwal_bound_ball(mu, g, g, alpha)

    approx = agarwal_bound_approx(mu, g, g)

    return RDP.from_function(curve, f"ICLR Thm 2 corrected (eps={epsilon:g}, s={s:g}, n={n}, g={g})", approx=approx)
