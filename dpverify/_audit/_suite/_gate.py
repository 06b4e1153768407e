"""The gate: run every claim of a suite (in workers), p-values, Holm over the claims, the outcome.

Error control. Claim j is audited by :func:`dpverify.audit` at the Bonferroni level alpha/m (m
claims), its results re-scored from their bound-sample counts (:mod:`.._rescore`), and given the
p-value p_j = the smallest level on a grid (containing every Holm threshold alpha/k) at which any
of its R results rejects at level/R. Holm's step-down procedure over (p_1..p_m) then decides:
reject the claims with the smallest p-values while p_(i) <= alpha/(m - i + 1). The family-wise
error -- the probability that *any* true claim of the suite is reported violated -- is at most
alpha, whatever the dependence between claims (Holm 1979). Each claim's reported bound is its
bound at the level Holm tested it at, so "violated" is always "lower bound > claimed".

Reproducibility. Claim ``name`` draws from the seed ``SeedSequence([seed, crc32(name)])``: adding
a file does not change the numbers of the others, and results do not depend on the executor.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
import zlib
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .._rescore import rescore, result_p_value, result_share
from .._results import HOLDS, VIOLATED, AuditResult, _margin
from ._registry import build
from ._schema import _MIN_SAMPLES, ClaimSpec, SuiteError

__all__ = ["CAUGHT", "DEFAULT_ALPHA", "MISSED", "ClaimOutcome", "ClaimRun", "SuiteOutcome", "holm", "p_value_grid", "run_suite"]

CAUGHT = "caught"
MISSED = "missed"
DEFAULT_ALPHA = 1e-3


# ------------------------------------------------------------------------------------------------
# Running one claim (in a worker) and the suite
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimRun:
    """A claim's audit results and its p-value (picklable: it travels back from workers)."""

    name: str
    results: tuple[AuditResult, ...]
    p_value: float
    samples: int
    seconds: float
    claim_text: str
    error: str | None = None
    claimed_rho: float | None = None  # the claim's rho, for zCDP claims


def claim_seed(seed: int, name: str) -> int:
    """The audit seed of claim ``name``: independent of the other files of the suite."""
    words = np.random.SeedSequence([int(seed), zlib.crc32(name.encode())]).generate_state(2, np.uint32)
    return int(words[0]) << 32 | int(words[1])


def _scaled(samples: int, scale: float) -> int:
    return max(_MIN_SAMPLES, int(round(samples * scale)))


def run_claim(spec: ClaimSpec, seed: int, samples_scale: float, audit_alpha: float, grid: Sequence[float]) -> ClaimRun:
    """Audit one claim at ``audit_alpha`` and compute its claim-level p-value on ``grid``."""
    from .._audit import audit

    started = time.perf_counter()
    samples = _scaled(spec.samples, samples_scale)
    try:
        c = build(spec)
        kwargs: dict[str, Any] = {}
        if spec.orders is not None:
            kwargs["orders"] = spec.orders
        report = audit(c.mechanism, c.pairs, c.claim, samples=samples, alpha=audit_alpha, estimators=spec.estimators,
                       directions=spec.directions, log_pmf=c.log_pmf, executor="serial", seed=claim_seed(seed, spec.name),
                       float_bits=spec.float_bits, **kwargs, **c.audit_options)
        results = report.results
        if c.describe_event is not None:
            results = tuple(dataclasses.replace(res, event=c.describe_event(res.event)) for res in results)
        r = len(results)
        # the grid levels are claim-level; a result's level is the claim's times its share (1/R if even):
        # P[p <= l] <= sum over results of P[p_r <= share_r l] <= l
        p = min(1.0, min(result_p_value(res, [g * result_share(res, r) for g in grid]) / result_share(res, r)
                         for res in results))
        p = _snap(p, grid)
        rho = getattr(c.claim, "rho", None) if c.form == "zcdp" else None
        return ClaimRun(spec.name, results, p, samples, time.perf_counter() - started, c.text, claimed_rho=rho)
    except SuiteError as error:
        return ClaimRun(spec.name, (), 1.0, samples, time.perf_counter() - started, "", str(error))
    except Exception as error:  # a crash of the target is an error in the suite (exit 2)
        return ClaimRun(spec.name, (), 1.0, samples, time.perf_counter() - started, "",
                        f"{spec.file}: target {spec.target!r} raised {type(error).__name__}: {error}")


def _snap(p: float, grid: Sequence[float]) -> float:
    """Undo the float round trip level*share/share: the nearest grid point (p-values live on the grid)."""
    if p >= 1.0 or p == 0.0:
        return p
    best = min(grid, key=lambda g: abs(math.log(g) - math.log(p)))
    return best if abs(math.log(best) - math.log(p)) < 1e-9 else p


def p_value_grid(alpha: float, m: int, finer: int = 64) -> list[float]:
    """Claim-level levels at which p-values are resolved: every Holm threshold alpha/k (k = 1..m)
    and a geometric ladder below alpha/m down to alpha/m * 1e-16 (for reporting only)."""
    levels = {alpha / k for k in range(1, m + 1)}
    levels.update(alpha / m * 10 ** (-j / 4) for j in range(1, finer + 1))
    return sorted(levels)


def holm(p_values: Sequence[float], alpha: float) -> tuple[list[bool], list[float]]:
    """Holm's step-down procedure: (rejected, the level each hypothesis was tested at).

    Sort p ascending; reject the i-th smallest while p_(i) <= alpha / (m - i + 1). A rejected
    hypothesis's level is its step's threshold; every other one was (last) tested at the
    threshold of the step where the procedure stopped, alpha / (m - r), r = number rejected.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: (p_values[i], i))
    rejected = [False] * m
    levels = [0.0] * m
    r = 0
    for step, i in enumerate(order):
        threshold = alpha / (m - step)
        if p_values[i] <= threshold:
            rejected[i] = True
            levels[i] = threshold
            r += 1
        else:
            break
    for i in range(m):
        if not rejected[i]:
            levels[i] = alpha / (m - r)
    return rejected, levels


@dataclass(frozen=True)
class ClaimOutcome:
    """One row of the suite's report."""

    spec: ClaimSpec
    verdict: str  # holds / violated (ordinary claims); caught / missed (planted bugs expecting "violated")
    result: AuditResult | None  # the worst result at the claim's Holm level
    p_value: float
    level: float
    samples: int
    seconds: float
    claim_text: str
    error: str | None = None
    claimed_rho: float | None = None

    @property
    def violated(self) -> bool:
        return self.result is not None and self.result.violated

    @property
    def ok(self) -> bool:
        """Whether this row is what the suite expects (holds, or a planted bug caught)."""
        return self.error is None and self.verdict in (HOLDS, CAUGHT)

    def to_dict(self) -> dict[str, Any]:
        from ..._json import jsonable

        r = self.result
        out: dict[str, Any] = {
            "name": self.spec.name,
            "file": self.spec.file,
            "target": self.spec.target,
            "planted": self.spec.planted,
            "expect": self.spec.expect,
            "claim": self.claim_text,
            "claimed": r.claimed if r else None,
            "lower_bound": r.lower_bound if r else None,
            "estimate": r.estimate if r else None,
            "verdict": self.verdict,
            "p_value": self.p_value,
            "level": self.level,
            "samples": self.samples,
            "seconds": round(self.seconds, 3),
            "estimator": r.estimator if r else None,
            "order": r.order if r else None,
            "pair": r.pair if r else None,
            "direction": r.direction if r else None,
            "event": r.event if r else None,
            "method": r.method if r else None,
            # the other views of the same bound: delta at the claimed epsilon and epsilon at the
            # claimed delta (delta results), the implied zCDP rho (Renyi results)
            "delta_at_epsilon": r.delta_at_epsilon if r else None,
            "epsilon_at_delta": r.epsilon_at_delta if r else None,
            "rho": r.rho if r else None,
            "claimed_rho": self.claimed_rho,
        }
        if self.error:
            out["error"] = self.error
        return jsonable(out)


@dataclass(frozen=True)
class SuiteOutcome:
    rows: tuple[ClaimOutcome, ...]
    alpha: float
    seed: int
    samples_scale: float
    seconds: float

    @property
    def errors(self) -> tuple[ClaimOutcome, ...]:
        return tuple(r for r in self.rows if r.error is not None)

    @property
    def exit_code(self) -> int:
        """0: every claim holds and every planted bug is caught; 1: a violation or an escaped bug;
        2: an error in the suite itself."""
        if self.errors:
            return 2
        return 0 if all(r.ok for r in self.rows) else 1

    def to_dict(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for r in self.rows:
            counts[r.verdict] = counts.get(r.verdict, 0) + 1
        return {
            "alpha": self.alpha,
            "correction": "holm",
            "seed": self.seed,
            "samples_scale": self.samples_scale,
            "seconds": round(self.seconds, 3),
            "exit_code": self.exit_code,
            "counts": counts,
            "results": [r.to_dict() for r in self.rows],
        }


def _finalise(spec: ClaimSpec, run: ClaimRun, rejected: bool, level: float) -> ClaimOutcome:
    if run.error is not None:
        return ClaimOutcome(spec, "error", None, 1.0, level, run.samples, run.seconds, run.claim_text, run.error)
    r = len(run.results)
    rescored = []
    for res in run.results:
        share = result_share(res, r)
        at_level = rescore(res, level * share)
        if rejected and run.p_value <= level and not at_level.violated:
            # the certificate is not exactly monotone in the level: show the rejecting one
            alt = rescore(res, run.p_value * share) if run.p_value > 0 else res
            at_level = alt if _margin(alt) > _margin(at_level) else at_level
        rescored.append(at_level)
    worst = max(rescored, key=_margin)
    if rejected:
        verdict = CAUGHT if spec.expect == VIOLATED else VIOLATED
    else:
        verdict = MISSED if spec.expect == VIOLATED else HOLDS
    return ClaimOutcome(spec, verdict, worst, run.p_value, level, run.samples, run.seconds, run.claim_text,
                        claimed_rho=run.claimed_rho)


def _decide(specs: Sequence[ClaimSpec], runs: Sequence[ClaimRun], alpha: float) -> list[ClaimOutcome]:
    """Holm over the claims, then each claim's results at its Holm level (kept consistent:
    a claim Holm does not reject must show no violation at its level; if the Renyi certificate's
    small non-monotonicity makes one appear, that level is a valid p-value and Holm is re-run)."""
    p = [run.p_value for run in runs]
    while True:
        rejected, levels = holm(p, alpha)
        changed = False
        rows = []
        for i, (spec, run) in enumerate(zip(specs, runs)):
            row = _finalise(spec, run, rejected[i], levels[i])
            if not rejected[i] and row.violated and p[i] > levels[i]:
                p[i] = levels[i]
                changed = True
            rows.append(row)
        if not changed:
            return [dataclasses.replace(row, p_value=p_i) if row.error is None else row for row, p_i in zip(rows, p)]


def _local_pool(workers: int) -> Executor:
    import multiprocessing

    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


def resolve_suite_executor(executor: Any, workers: int | None) -> tuple[Any, bool]:
    """(executor object or None for serial, whether we own it). ``executor``: "local" (a process
    pool of ``workers``, default the CPU count), "serial", a Dask scheduler address
    ("tcp://host:8786"), "dask" (a new local Dask cluster), or any concurrent.futures.Executor /
    dask.distributed.Client."""
    if executor is None or executor == "serial":
        return None, False
    if isinstance(executor, str):
        if executor == "local":
            count = workers if workers is not None else (os.cpu_count() or 1)
            return (_local_pool(count), True) if count > 1 else (None, False)
        from dask.distributed import Client  # optional dependency: pip install 'dpverify[dask]'

        client = Client() if executor == "dask" else Client(executor)
        return client, True
    return executor, False


def run_suite(
    specs: Sequence[ClaimSpec],
    *,
    alpha: float = DEFAULT_ALPHA,
    seed: int = 0,
    samples_scale: float = 1.0,
    executor: Any = "local",
    workers: int | None = None,
    on_done: Callable[[ClaimRun], None] | None = None,
) -> SuiteOutcome:
    """Audit every claim, then decide with Holm at family-wise error ``alpha``."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha!r} is invalid: expected a probability in (0, 1)")
    if not samples_scale > 0:
        raise ValueError(f"samples_scale={samples_scale!r} is invalid: expected a number > 0")
    started = time.perf_counter()
    m = len(specs)
    grid = p_value_grid(alpha, m)
    audit_alpha = alpha / m
    order = sorted(range(m), key=lambda i: -specs[i].weight)
    runs: list[ClaimRun | None] = [None] * m
    pool, owned = resolve_suite_executor(executor, workers)
    try:
        if pool is None:
            for i in order:
                runs[i] = run_claim(specs[i], seed, samples_scale, audit_alpha, grid)
                if on_done:
                    on_done(runs[i])  # type: ignore[arg-type]
        else:
            futures = {pool.submit(run_claim, specs[i], seed, samples_scale, audit_alpha, grid): i for i in order}
            for fut in _as_completed(list(futures)):
                i = futures[fut]
                runs[i] = fut.result()
                if on_done:
                    on_done(runs[i])  # type: ignore[arg-type]
    finally:
        if owned and pool is not None:
            if isinstance(pool, Executor):
                pool.shutdown()
            else:
                pool.close()  # a dask Client we opened (close, never shutdown: that would stop a shared scheduler)
    rows = _decide(specs, runs, alpha)  # type: ignore[arg-type]
    return SuiteOutcome(tuple(rows), alpha, seed, samples_scale, time.perf_counter() - started)


def _as_completed(futures: list[Any]) -> Iterable[Any]:
    if not futures or isinstance(futures[0], Future):
        from concurrent.futures import as_completed

        return as_completed(futures)
    from dask.distributed import as_completed as dask_completed  # futures of a dask.distributed.Client

    return dask_completed(futures)

