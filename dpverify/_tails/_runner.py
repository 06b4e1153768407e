"""Run the table: every claim of the catalogue, in parallel, with the Bonferroni split.

:func:`run_tails` evaluates the claims (exact rows and Monte Carlo rows) on a
``concurrent.futures`` executor (a local process pool by default; ``"serial"`` in-process) and
returns a :class:`TailReport`. Claims are addressed by their index in the catalogue, so workers
rebuild them (closures do not pickle); results do not depend on the number of workers (every
random stream is keyed by the claim and setting, never by the worker).

False alarms. The table's Monte Carlo settings share ``false_alarm`` (default 1e-3): each of the
M settings gets one-sided Clopper-Pearson limits at level false_alarm / (2 M), so with
probability >= 1 - false_alarm no true claim is reported violated and no violated claim is
reported to hold on account of sampling. Exact rows have no sampling error.
"""

from __future__ import annotations

import dataclasses
import os
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Callable

from .._executed._kinds import ProtocolKind
from ._claims import Claim, Grid, catalogue, evaluate, planted_catalogue
from ._dpdpe import dpdpe_catalogue
from ._model import TailReport, TailResult
from ._montecarlo import monte_carlo_catalogue, planted_monte_carlo

__all__ = ["all_claims", "run_tails"]


def all_claims(*, exact: bool = True, monte_carlo: bool = True, planted: bool = False) -> list[Claim]:
    claims: list[Claim] = []
    if exact:
        claims += catalogue() + dpdpe_catalogue()
    if monte_carlo:
        claims += monte_carlo_catalogue()
    if planted:
        claims += planted_catalogue() + dpdpe_catalogue(planted=True) + (planted_monte_carlo() if monte_carlo else [])
    return claims


def _work(index: int, flags: tuple[bool, bool, bool], grid: Grid) -> TailResult:
    exact, monte_carlo, planted = flags
    return evaluate(all_claims(exact=exact, monte_carlo=monte_carlo, planted=planted)[index], grid)


def run_tails(
    grid: Grid | None = None,
    *,
    exact: bool = True,
    monte_carlo: bool = True,
    planted: bool = False,
    only: Callable[[Claim], bool] | None = None,
    false_alarm: float = 1e-3,
    executor: Executor | str | None = "process",
    progress: Callable[[TailResult], None] | None = None,
) -> TailReport:
    """Evaluate the table (see the module docstring); ``only`` filters the claims."""
    if not 0 < false_alarm < 1:
        raise ValueError(f"false_alarm={false_alarm!r} is invalid: expected a probability in (0, 1)")
    grid = Grid() if grid is None else grid
    flags = (exact, monte_carlo, planted)
    claims = all_claims(exact=exact, monte_carlo=monte_carlo, planted=planted)
    chosen = [i for i, c in enumerate(claims) if only is None or only(c)]
    m = sum(claims[i].count(grid) for i in chosen if claims[i].count is not None)
    grid = dataclasses.replace(grid, mc_level=false_alarm / (2 * max(m, 1)))
    start = time.perf_counter()
    # longest first: the Skellam and discrete Gaussian rows and the runs
    order = sorted(chosen, key=lambda i: -_cost(claims[i]))
    results: dict[int, TailResult] = {}
    own = False
    if executor == "process":
        executor, own = ProcessPoolExecutor(max_workers=min(os.cpu_count() or 1, 8)), True
    try:
        if executor in (None, "serial"):
            for i in order:
                results[i] = _work(i, flags, grid)
                if progress:
                    progress(results[i])
        else:
            futures = {executor.submit(_work, i, flags, grid): i for i in order}
            for future, i in futures.items():
                results[i] = future.result()
                if progress:
                    progress(results[i])
    finally:
        if own:
            executor.shutdown()
    report = TailReport([results[i] for i in chosen], false_alarm, time.perf_counter() - start)
    report.meta = {
        "grid": {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(grid).items()},
        "monte_carlo_settings": m,
        "clopper_pearson_level": grid.mc_level,
    }
    return report


def _cost(claim: Claim) -> int:
    if claim.count is not None:
        return 3
    if isinstance(claim.protocol, ProtocolKind) and claim.protocol.scaled:  # Theorems 2 and 4: the costlier samplers
        return 2
    return 1
