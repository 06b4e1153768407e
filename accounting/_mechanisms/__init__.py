"""Mechanism guarantees: exact, certified Rényi curves, pure/zCDP values, closed forms, pairs.

Each mechanism is a frozen, validated value object, a subclass of :class:`accounting._core._mechanism_base.Mechanism`
(public as ``accounting.Mechanism``), which declares every hook a route may ask for (``rdp()``,
``pure()``, ``zcdp()``, ``closed_forms()``, ``output_pair()``, ... ; ``None`` where not
available) and documents the contract. The certification
method of each family is documented in its module. Every ``rdp()`` curve (and every closed-form
RDP curve) also carries a vectorised float64 approximation that only steers the searches over
alpha (:mod:`._approx`); reported numbers always come from the certified evaluation.
"""

from ._binomial import Binomial
from ._binary import BernoulliCurator, BinaryPair, RandomizedResponse
from ._continuous import Gaussian, Laplace
from ._discrete_gaussian import DiscreteGaussian, DiscreteGaussianPair
from ._discrete_gaussian_sum import MAX_EXACT_N, DiscreteGaussianSum, DiscreteGaussianSumPair
from ._discrete_gaussian_vector import DiscreteGaussianVector
from ._discrete_laplace import DiscreteLaplace, DiscreteLaplacePair, PolyaDifferenceSum
from ._grid import GridDiscreteLaplace
from ._skellam import Skellam, SkellamPair
from ._snapping import Snapping

__all__ = [
    "BernoulliCurator",
    "Binomial",
    "BinaryPair",
    "DiscreteGaussian",
    "DiscreteGaussianPair",
    "DiscreteGaussianSum",
    "DiscreteGaussianSumPair",
    "DiscreteGaussianVector",
    "MAX_EXACT_N",
    "Gaussian",
    "GridDiscreteLaplace",
    "Laplace",
    "RandomizedResponse",
    "Skellam",
    "Snapping",
    "SkellamPair",
    "DiscreteLaplace",
    "DiscreteLaplacePair",
    "PolyaDifferenceSum",
]
