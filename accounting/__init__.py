"""accounting: exact, certified privacy accounting (pure DP, RDP, zCDP, (eps, delta), PLD).

Every number returned is an upper bound of the true privacy parameter, computed in Arb ball
arithmetic (python-flint) and rounded up to a float. See the module docstrings for the method
behind each route:

- :mod:`accounting._guarantees` — value types and the RDP curve algebra (composition, parallel,
  returning users);
- :mod:`accounting._conversions` — RDP/zCDP -> (eps, delta), optimised over real alpha;
- :mod:`accounting._routes` — every route for a mechanism, the smallest certified one reported;
- :mod:`accounting._composition` — advanced composition and the ICLR paper's App. I recipe;
- :mod:`accounting._ledger` — budgets, per-user charges, refusal to overspend, JSON trail;
- :mod:`accounting._pairs` — neighbouring output laws on the integers (the exact routes' input);
- :mod:`accounting._shuffle` — amplification by shuffling (FMT21/FMT23 clone pairs, shuffled RR).
"""

from ._calibration import Calibration, calibrate
from ._certified import DEFAULT_PRECISION, working_precision
from ._composition import advanced_composition, appendix_i_per_batch
from ._conversions import (
    DeltaResult,
    EpsilonResult,
    rdp_to_delta,
    rdp_to_epsilon,
    zcdp_epsilon_closed_form,
    zcdp_to_epsilon,
)
from ._guarantees import RDP, ZCDP, ApproxDP, PureDP
from ._ledger import Charge, Ledger
from ._mechanisms import (
    BernoulliCurator,
    Binomial,
    DiscreteGaussian,
    DiscreteGaussianSum,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    PolyaDifferenceSum,
    RandomizedResponse,
    Skellam,
)
from ._pairs import FinitePair, IntegerPair
from ._pld import PLDResult, PrivacyLossDistribution, pld_delta, pld_epsilon
from ._paper_params import (
    DistributedParameters,
    theorem1_parameters,
    theorem2_claimed_rdp,
    theorem2_corrected_rdp,
    theorem2_parameters,
    theorem4_parameters,
)
from ._reports import dist_rdp_se_returning
from ._routes import epsilon_routes
from ._shuffle import (
    ShuffledLDP,
    ShuffledRandomizedResponse,
    clone_delta,
    clone_epsilon,
    fmt21_closed_form,
    fmt23_closed_form,
    shuffle_routes,
    shuffled_rr_delta,
    shuffled_rr_epsilon,
)
from ._validation import AccountingError, BudgetExceeded

__all__ = [
    "BernoulliCurator",
    "Binomial",
    "DiscreteGaussianSum",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "Gaussian",
    "Laplace",
    "PolyaDifferenceSum",
    "RandomizedResponse",
    "Skellam",
    "DEFAULT_PRECISION",
    "AccountingError",
    "ApproxDP",
    "BudgetExceeded",
    "Calibration",
    "Charge",
    "DeltaResult",
    "DistributedParameters",
    "EpsilonResult",
    "FinitePair",
    "IntegerPair",
    "Ledger",
    "PLDResult",
    "PrivacyLossDistribution",
    "PureDP",
    "RDP",
    "ZCDP",
    "advanced_composition",
    "appendix_i_per_batch",
    "calibrate",
    "dist_rdp_se_returning",
    "epsilon_routes",
    "pld_delta",
    "pld_epsilon",
    "rdp_to_delta",
    "rdp_to_epsilon",
    "theorem1_parameters",
    "theorem2_claimed_rdp",
    "theorem2_corrected_rdp",
    "theorem2_parameters",
    "theorem4_parameters",
    "working_precision",
    "zcdp_epsilon_closed_form",
    "zcdp_to_epsilon",
    "ShuffledLDP",
    "ShuffledRandomizedResponse",
    "clone_delta",
    "clone_epsilon",
    "fmt21_closed_form",
    "fmt23_closed_form",
    "shuffle_routes",
    "shuffled_rr_delta",
    "shuffled_rr_epsilon",
]
