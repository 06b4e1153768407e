"""accounting: exact, certified privacy accounting (pure DP, RDP, zCDP, (eps, delta), PLD).

Every number returned is an upper bound of the true privacy parameter, computed in Arb ball
arithmetic (python-flint) and rounded up to a float. See the module docstrings for the method
behind each route:

- :mod:`accounting._core._guarantees` — value types and the RDP curve algebra (composition, parallel,
  returning users);
- :mod:`accounting._core._conversions` — RDP/zCDP -> (eps, delta), optimised over real alpha;
- :mod:`accounting._routing._routes` — every route for a mechanism, the smallest certified one reported;
- :class:`accounting.Result` (:mod:`accounting._core._result`) — the one result type: value, route,
  grid, provenance and timing (a report, a route's record, a PLD's evaluation);
- :mod:`accounting._mechanisms._analytic_gaussian`, :mod:`accounting._routing._optimal_composition` — the exact
  Gaussian (mu-GDP) and optimal pure-DP composition routes (:mod:`accounting._routing._tight_routes`);
- :mod:`accounting._core._composition` — advanced composition and the ICLR paper's App. I recipe;
- :mod:`accounting._ledgers._ledger` — budgets, per-user charges, refusal to overspend, JSON trail;
- :mod:`accounting._ledgers._durable` — the ledger kept in SQLite or PostgreSQL (``Ledger.open(url)``), with
  :mod:`accounting._ledgers._ledger_store` (URLs, timeouts, errors), :mod:`accounting._ledgers._ledger_chain` (hash chain,
  key, witness) and :mod:`accounting._ledgers._ledger_codec` (guarantees as JSON) below it;
- :class:`accounting.Mechanism` — the contract every mechanism (built-in or yours) answers: every
  hook a route may ask for, ``None`` where not available (README: "Your own mechanism");
- :mod:`accounting._core._pairs` — neighbouring output laws on the integers (the exact routes' input);
- :mod:`accounting._privacy_loss._pld_continuous` — connect-the-dots PLDs of continuous (monotone-loss) pairs;
- :mod:`accounting._amplification._subsampling` — Poisson and without-replacement subsampling (RDP and PLD);
- :mod:`accounting._events._dp_event` — dp_accounting's DpEvent trees as accounting mechanisms;
- :mod:`accounting._interop._opacus_compat` — Opacus's accountant interface and ``get_noise_multiplier``, certified;
- :mod:`accounting._amplification._shuffling` — amplification by shuffling (FMT21/FMT23 clone pairs, shuffled RR).
- :mod:`accounting._routing._tradeoff` — risk as people read it: the certified trade-off curve (f-DP), TPR at
  an FPR and the attack advantage, read off the certified PLD (``tradeoff_curve``).

Layers above (``dpverify``) import this package's public API and :mod:`accounting.internal` (the one
documented interface to the validators, directed rounding and ledger internals), nothing private.
"""

from ._mechanisms._analytic_gaussian import gdp_delta, gdp_epsilon, gdp_mu, gdp_mu_for
from ._routing._calibration import Calibration, calibrate
from ._core._certified import DEFAULT_PRECISION, working_precision
from ._core._composition import advanced_composition, appendix_i_per_batch
from ._core._conversions import (
    rdp_conversion_exceeds,
    rdp_to_delta,
    rdp_to_epsilon,
    zcdp_epsilon_closed_form,
    zcdp_to_epsilon,
)
from ._core._guarantees import RDP, ZCDP, ApproxDP, PureDP
from ._ledgers._ledger import Charge, Ledger
from ._ledgers._durable import DurableLedger, VerifyReport

from ._core._mechanism_base import Mechanism
from ._mechanisms import (
    BernoulliCurator,
    Binomial,
    DiscreteGaussian,
    DiscreteGaussianSum,
    DiscreteGaussianVector,
    DiscreteLaplace,
    GridDiscreteLaplace,
    Gaussian,
    Laplace,
    PolyaDifferenceSum,
    RandomizedResponse,
    Skellam,
    Snapping,
)
from ._core._pairs import FinitePair, IntegerPair
from ._privacy_loss._pld import PrivacyLossDistribution, pld_delta, pld_epsilon
from ._core._result import Result
from ._privacy_loss._pld_continuous import GaussianLoss, LaplaceLoss, MonotoneLossPair
from ._amplification._subsampling import PoissonSampled, SampledWithoutReplacement
from ._events._dp_event import from_dp_event
from ._interop._opacus_compat import CertifiedOpacusAccountant, get_noise_multiplier
from ._papers._paper_params import (
    DistributedParameters,
    theorem1_parameters,
    theorem2_claimed_rdp,
    theorem2_corrected_rdp,
    theorem2_parameters,
    theorem4_parameters,
)
from ._papers._reports import dist_rdp_se_returning
from ._routing._routes import epsilon_routes
from ._routing._routes import on_routes_changed, register_route, unregister_route  # the planner's route registry (issue 30)
from ._routing._tight_routes import optimal_composition_epsilon
from ._amplification._shuffling import (
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
from ._core._total_variation import WithinTotalVariation
from ._routing._tradeoff import TradeOffCurve, TradeOffPoint, tradeoff_curve
from ._core._validation import AccountingError, BudgetExceeded

__all__ = [
    "Result",
    "Mechanism",
    "on_routes_changed",
    "register_route",
    "unregister_route",
    "CertifiedOpacusAccountant",
    "get_noise_multiplier",
    "WithinTotalVariation",
    "GaussianLoss",
    "LaplaceLoss",
    "MonotoneLossPair",
    "PoissonSampled",
    "SampledWithoutReplacement",
    "from_dp_event",
    "BernoulliCurator",
    "Binomial",
    "DiscreteGaussianSum",
    "DiscreteGaussianVector",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "GridDiscreteLaplace",
    "Gaussian",
    "Laplace",
    "PolyaDifferenceSum",
    "RandomizedResponse",
    "Skellam",
    "Snapping",
    "DEFAULT_PRECISION",
    "AccountingError",
    "ApproxDP",
    "BudgetExceeded",
    "Calibration",
    "Charge",
    "DistributedParameters",
    "FinitePair",
    "IntegerPair",
    "Ledger",
    "DurableLedger",
    "VerifyReport",
    "PrivacyLossDistribution",
    "PureDP",
    "RDP",
    "ZCDP",
    "advanced_composition",
    "appendix_i_per_batch",
    "calibrate",
    "dist_rdp_se_returning",
    "epsilon_routes",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "gdp_mu_for",
    "optimal_composition_epsilon",
    "pld_delta",
    "pld_epsilon",
    "rdp_to_delta",
    "rdp_conversion_exceeds",
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
    "TradeOffCurve",
    "TradeOffPoint",
    "tradeoff_curve",
]


#: the result types before issue 30 (item 3): one type, :class:`Result`, replaced them all
_DEPRECATED_RESULTS = ("EpsilonResult", "DeltaResult", "PLDResult", "OptimalComposition")


def __getattr__(name: str):
    """``CertifiedAccountant``: dp_accounting's PrivacyAccountant answered by the certified route
    planner (:mod:`accounting._interop._dp_accounting_compat`), built on first use so that dp_accounting
    stays optional (a missing package is an ImportError naming the extra that installs it).
    ``EpsilonResult``, ``DeltaResult``, ``PLDResult``, ``OptimalComposition``: deprecated aliases
    of :class:`Result` (a DeprecationWarning names the new one)."""
    if name in _DEPRECATED_RESULTS:
        import warnings

        warnings.warn(f"accounting.{name} is deprecated: every answer is an accounting.Result (issue 30)", DeprecationWarning, stacklevel=2)
        return Result
    if name == "CertifiedAccountant":
        from ._interop._dp_accounting_compat import certified_accountant_class

        return certified_accountant_class()
    if name == "CertifiedRdpAccountant":
        from ._interop._dp_accounting_compat import certified_rdp_accountant_class

        return certified_rdp_accountant_class()
    raise AttributeError(f"module 'accounting' has no attribute {name!r}")
