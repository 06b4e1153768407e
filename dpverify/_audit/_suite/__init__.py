"""The declarative audit suite: TOML claim files, a registry of auditable targets, Holm over claims.

A suite is a directory of TOML files, one claim each (``audits/README.md`` documents the schema),
or a single file. Each file names a *target* -- a built-in of the registry, or a user's importable
callable ``"package.module:function"`` -- its parameters, the claim, the neighbouring inputs and a
sample budget. Files under a ``planted/`` directory are planted bugs: they state the verdict the
suite must reach (``expect = "violated"``: the bug must be caught; ``expect = "holds"``: a variant
that must *not* be flagged).

The package, one part per module:

- :mod:`._spec` -- what every other module shares: :class:`ClaimSpec`, :class:`SuiteError`,
  typed table access;
- :mod:`._registry` -- the target registry (how a module registers a target is documented there);
- :mod:`._build` -- :func:`build`: mechanism, pairs, claim from the target's ``accounting`` guarantee;
- :mod:`._schema` -- the claim files: validation into a :class:`ClaimSpec`, loading a suite;
- :mod:`._targets` -- the built-in targets (samplers, curators, protocols, privatizers);
- :mod:`._planted` -- the planted bugs; :mod:`._float_safe` -- those of the float-safe privatizers;
- :mod:`._user` -- users' own callables as targets (``target = "package.module:function"``);
- :mod:`._gate` -- running the claims (serial, a process pool or Dask), p-values, Holm, outcome.

Error control, reproducibility: see :mod:`._gate`.
"""

from __future__ import annotations

# the built-in targets register themselves on import
from . import _dpdpe, _float_safe, _planted, _planted_runs, _run_targets, _shuffle, _targets  # noqa: F401
from ._gate import (
    CAUGHT,
    DEFAULT_ALPHA,
    MISSED,
    ClaimOutcome,
    ClaimRun,
    chain_holm,
    SuiteOutcome,
    claim_seed,
    holm,
    p_value_grid,
    resolve_suite_executor,
    run_claim,
    run_suite,
)
from ._build import Claim, build
from ._registry import TARGETS, Built, Target
from ._schema import load_claim, load_suite
from ._spec import FORMS, ClaimSpec, SuiteError

__all__ = [
    "CAUGHT",
    "MISSED",
    "TARGETS",
    "Built",
    "ClaimOutcome",
    "ClaimSpec",
    "SuiteError",
    "SuiteOutcome",
    "build",
    "holm",
    "load_suite",
    "run_suite",
]
