"""Tail verification: exact and Monte Carlo checks of the papers' concentration claims.

Public surface (to be re-exported by :mod:`dpverify` as the lead decides): :func:`run_tails`,
the claim catalogue, the certified laws, the instrumented runs and the exact-quantile radius.
"""

from ._claims import Claim, Grid, catalogue, evaluate, noise_constants, noise_law, planted_catalogue
from ._dpdpe import dpdpe_catalogue
from ._laws import (
    DiscreteGaussianSumLaw,
    DiscreteLaplaceLaw,
    DiscreteLaplaceSumLaw,
    NoiseLaw,
    SkellamLaw,
    TailBound,
    wrapped_tail,
)
from ._model import HOLDS, INCONCLUSIVE, VIOLATED, Evaluation, TailReport, TailResult
from ._montecarlo import cp_lower, cp_upper, monte_carlo_catalogue, planted_monte_carlo
from ._report import render_table, to_json, to_junit
from ._runner import all_claims, run_tails
from ._runs import RADII, InstrumentedRun, coverage_and_regret, exact_radius, instrumented_run, paper_radius

__all__ = [
    "HOLDS",
    "INCONCLUSIVE",
    "RADII",
    "VIOLATED",
    "Claim",
    "DiscreteGaussianSumLaw",
    "DiscreteLaplaceLaw",
    "DiscreteLaplaceSumLaw",
    "Evaluation",
    "Grid",
    "InstrumentedRun",
    "NoiseLaw",
    "SkellamLaw",
    "TailBound",
    "TailReport",
    "TailResult",
    "all_claims",
    "catalogue",
    "coverage_and_regret",
    "cp_lower",
    "cp_upper",
    "dpdpe_catalogue",
    "evaluate",
    "exact_radius",
    "instrumented_run",
    "monte_carlo_catalogue",
    "noise_constants",
    "noise_law",
    "paper_radius",
    "planted_catalogue",
    "planted_monte_carlo",
    "render_table",
    "run_tails",
    "to_json",
    "to_junit",
    "wrapped_tail",
]
