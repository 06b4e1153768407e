"""Mechanism guarantees: exact, certified Rényi curves, pure/zCDP values, closed forms, pairs.

Each mechanism is a frozen, validated value object exposing ``rdp()``, ``closed_forms()``,
``pure()``, ``zcdp()``, ``output_pair()``, ``describe()`` and ``family``. The certification
method of each family is documented in its module.
"""

from ._binomial import Binomial
from ._binary import BernoulliCurator, BinaryPair, RandomizedResponse
from ._continuous import Gaussian, Laplace
from ._discrete_gaussian import DiscreteGaussian, DiscreteGaussianPair
from ._discrete_gaussian_sum import MAX_EXACT_N, DiscreteGaussianSum, DiscreteGaussianSumPair
from ._discrete_laplace import DiscreteLaplace, DiscreteLaplacePair, PolyaDifferenceSum
from ._skellam import Skellam, SkellamPair, Theorem2Parameters, iclr2023_theorem2

__all__ = [
    "BernoulliCurator",
    "Binomial",
    "BinaryPair",
    "DiscreteGaussian",
    "DiscreteGaussianPair",
    "DiscreteGaussianSum",
    "DiscreteGaussianSumPair",
    "MAX_EXACT_N",
    "Gaussian",
    "Laplace",
    "RandomizedResponse",
    "Skellam",
    "SkellamPair",
    "Theorem2Parameters",
    "iclr2023_theorem2",
    "DiscreteLaplace",
    "DiscreteLaplacePair",
    "PolyaDifferenceSum",
]
