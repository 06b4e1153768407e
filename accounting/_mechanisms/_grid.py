"""Float-safe release of values in [0, 1]: clamp, randomised rounding to a grid, exact integer noise.

The mechanism as executed (the float-safe privatizers of ``dpverify``; ICLR 2023 App. H, Algorithms
2 and 4 without the modulus):

1. each value is clamped to [0, 1] (a NaN is refused, never clamped);
2. encoded on the grid of step 1/g by randomised rounding, xhat = floor(x g) + Bernoulli(x g -
   floor(x g)) in {0, ..., g}: an integer, unbiased (E[xhat] = x g), drawn exactly;
3. the integer xhat (or the sum of the users' xhat, in the central model) plus one exact
   Lap_Z(b) draw (Canonne, Kamath & Steinke 2020, Alg. 2) is released; a real-valued estimate is the
   integer divided by g, a post-processing of an integer (no float bit depends on anything else).

Sensitivity after clamping and rounding. Changing one user's value moves their xhat, hence the
released integer, by at most g, and only by a mixture of shifts in [-g, g]: for any two inputs x, x'
the output laws are mixtures over xhat, xhat' in {0..g} of Lap_Z(b) shifted by xhat, xhat', and each
pair of components has D_alpha <= that of shifts 0 and g (the shift family's divergence grows with
the shift). By joint quasi-convexity of the Renyi divergence (and of the max-divergence) the
mixture's divergence is at most the worst pair's, which is attained at x = 0, x' = 1 (point masses
at 0 and g). So the guarantee is *exactly* ``DiscreteLaplace(scale=b, sensitivity=g)``: pure g/b-DP
and its closed-form Renyi curve. :class:`GridDiscreteLaplace` returns those very objects, and names
the grid so the ledger's record says which implementation ran.

With b = g/eps the executed mechanism is eps-DP exactly; the float-safe privatizers pick b that way
(rounded *up* to a rational the exact sampler takes when g/eps is not one: more noise, and the
accountant charges the b that is drawn).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .._core._guarantees import RDP, PureDP
from .._core._validation import AccountingError
from .._core._mechanism_base import Mechanism, check_scale
from ._discrete_laplace import DiscreteLaplace, DiscreteLaplacePair

__all__ = ["GridDiscreteLaplace"]


@dataclass(frozen=True)
class GridDiscreteLaplace(Mechanism):
    """Values clamped to [0, 1], randomised rounding to the grid 1/``grid``, + Lap_Z(``scale``).

    The guarantee is that of ``DiscreteLaplace(scale, sensitivity=grid)`` (module docstring): pure
    ``grid/scale``-DP per user, whether one value is released (the local model) or the sum of many
    users' values (the central model).
    """

    grid: int
    scale: float | int | Fraction

    family = "grid-discrete-laplace"
    rdp_is_exact = True  # rdp() is the exact curve (route labels)

    def __post_init__(self) -> None:
        if isinstance(self.grid, bool) or not isinstance(self.grid, int) or not 1 <= self.grid <= 2**52:
            raise AccountingError("grid", self.grid, "an integer g in [1, 2^52] (the grid step is 1/g)")
        check_scale("scale", self.scale)
        self.law  # validates the scale against the sensitivity g

    @property
    def law(self) -> DiscreteLaplace:
        """The accountant's object for the executed mechanism: Lap_Z(scale) at integer sensitivity g."""
        return DiscreteLaplace(self.scale, self.grid)

    @property
    def epsilon(self) -> float:
        """g / b rounded up."""
        return self.law.epsilon

    def rdp(self) -> RDP:
        return self.law.rdp()

    def pure(self) -> PureDP:
        return self.law.pure()

    def zcdp(self) -> None:
        return None

    def closed_forms(self) -> dict:
        return self.law.closed_forms()

    def output_pair(self) -> DiscreteLaplacePair:
        return self.law.output_pair()

    def describe(self) -> str:
        return (
            f"float-safe: values clamped to [0, 1], randomised rounding to the grid 1/{self.grid}, exact "
            f"Lap_Z(b={self.scale}) on the integer (sensitivity {self.grid}): {self.epsilon:.6g}-DP"
        )
