"""The gate: run every claim of a suite (in workers), p-values, Holm over the claims, the outcome.

Error control. Claim j is audited by :func:`dpverify.audit` at the Bonferroni level alpha/m (m
claims), its results re-scored from their bound-sample counts (:mod:`.._rescore`), and given the
p-value p_j = the smallest level on a grid (containing every Holm threshold alpha/k) at which any
of its R results rejects at level/R. Holm's step-down procedure over (p_1..p_m) then decides:
reject the claims with the smallest p-values while p_(i) <= alpha/(m - i + 1). The family-wise
error -- the probability that *any* true claim of the suite is reported violated -- is at most
alpha, whatever the dependence between claims (Holm 1979). Each claim's reported bound is its
bound at the level Holm tested it at, so "violated" is always "lower bound > claimed".

Which arithmetic. Every claim is audited as executed, with floating-point views (the p-value
p_j above, of hypothesis F_j: "the mechanism as executed satisfies the claim"); a claim about a
float mechanism whose p_j could reach a Holm threshold (p_j <= alpha) is also audited in real
arithmetic on the same pairs and draws (``float_bits=False``; p-value r_j of R_j: "no
real-arithmetic event violates the claim"). Each claim is a chain F_j -> R_j (R_j is F_j itself
when no view looked at a bit pattern), tested by the sequentially rejective graph procedure of
Bretz, Maurer, Brannath and Posch (2009) with weight 1/m on each F_j, all of F_j's weight passed
to R_j when F_j is rejected, and a chain's weight shared evenly among the unfinished chains once
both its hypotheses are rejected: :func:`chain_holm`. Every unfinished chain's current
hypothesis is tested at alpha / (number of unfinished chains); with chains of one hypothesis
this is Holm's procedure exactly. The family-wise error over *every* "violated" statement,
floating point and real arithmetic, is at most alpha (the procedure is a shortcut of a closed
test of weighted Bonferroni tests); the exit code follows the floating-point verdicts. The
``expect`` of a claim file says which outcome it wants (:data:`EXPECTATIONS`).

Reproducibility. Claim ``name`` draws from the seed ``SeedSequence([seed, crc32(name)])``: adding
a file does not change the numbers of the others, and results do not depend on the executor.
"""

from __future__ import annotations

import math
import os
import time
import zlib
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .._rescore import rescore, result_p_value, result_share
from .._results import BOTH, FINDINGS, FLOATING_POINT, HOLDS, NONE, VIOLATED, AuditResult, _margin
from ._build import build
from ._one_run_claims import ONE_RUN, one_run_result
from ._provenance import provenance
from .._risk import attack_risk, claim_curve
from ._registry import claim_weight
from ._spec import _MIN_SAMPLES, EXPECT_BOTH, EXPECT_FLOATING_POINT, ClaimSpec, SuiteError

__all__ = ["CAUGHT", "DEFAULT_ALPHA", "MISSED", "ClaimOutcome", "ClaimRun", "SuiteOutcome", "chain_holm", "holm",
           "p_value_grid", "run_suite"]

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
    #: some view looked at the floating-point representation (else the audit is its own real-arithmetic audit)
    floating_point_views: bool = False
    #: the real-arithmetic audit of the same pairs and draws and its p-value (None: not run, because
    #: no view looked at a bit pattern or the floating-point p-value exceeds every Holm threshold)
    real_results: tuple[AuditResult, ...] | None = None
    real_p_value: float | None = None


def claim_seed(seed: int, name: str) -> int:
    """The audit seed of claim ``name``: independent of the other files of the suite."""
    words = np.random.SeedSequence([int(seed), zlib.crc32(name.encode())]).generate_state(2, np.uint32)
    return int(words[0]) << 32 | int(words[1])


def _scaled(samples: int, scale: float) -> int:
    return max(_MIN_SAMPLES, int(round(samples * scale)))


def _claim_p_value(results: Sequence[AuditResult], grid: Sequence[float]) -> float:
    """The claim-level p-value of an audit's results on ``grid``."""
    r = len(results)
    # the grid levels are claim-level; a result's level is the claim's times its share (1/R if even):
    # P[p <= l] <= sum over results of P[p_r <= share_r l] <= l
    p = min(1.0, min(result_p_value(res, [g * result_share(res, r) for g in grid]) / result_share(res, r)
                     for res in results))
    return _snap(p, grid)


def run_claim(spec: ClaimSpec, seed: int, samples_scale: float, audit_alpha: float, grid: Sequence[float]) -> ClaimRun:
    """Audit one claim at ``audit_alpha`` and compute its claim-level p-value on ``grid``; audit it
    in real arithmetic too (the same pairs and draws) when the floating-point audit used a bit
    view and its p-value is at most the largest level Holm can test a claim at (``max(grid)``)."""
    from .._audit import audit

    started = time.perf_counter()
    samples = _scaled(spec.samples, samples_scale)
    if spec.mode == ONE_RUN:  # issue 33: one run with canaries; its result re-scores like any other
        try:
            result, text = one_run_result(spec, claim_seed(seed, spec.name), audit_alpha)
            return ClaimRun(spec.name, (result,), _claim_p_value((result,), grid), 1, time.perf_counter() - started, text)
        except SuiteError as error:
            return ClaimRun(spec.name, (), 1.0, 1, time.perf_counter() - started, "", str(error))
    try:
        c = build(spec)
        kwargs: dict[str, Any] = {}
        if spec.orders is not None:
            kwargs["orders"] = spec.orders

        def run(float_bits: bool) -> Any:
            return audit(c.mechanism, c.pairs, c.claim, samples=samples, alpha=audit_alpha, estimators=spec.estimators,
                         directions=spec.directions, log_pmf=c.log_pmf, executor="serial", seed=claim_seed(seed, spec.name),
                         float_bits=float_bits, **kwargs, **c.audit_options)

        # audited as executed whatever the file says: an idealised claim (float_bits = false) is judged
        # in real arithmetic, and its file expects the floating-point violation (see _schema)
        report = run(True)
        p = _claim_p_value(report.results, grid)
        real = report.real_arithmetic
        if real is None and report.floating_point_views and p <= max(grid):
            real = run(False)  # the same seed: the same draws, seen without bit views
        real_p = _claim_p_value(real.results, grid) if real is not None else None
        rho = getattr(c.claim, "rho", None) if c.form == "zcdp" else None
        results, real_results = report.results, real.results if real is not None else None
        if c.describe_event is not None:  # a run target names the view, batch and arm of the witness
            results = tuple(replace(res, event=c.describe_event(res.event)) for res in results)
            if real_results is not None:
                real_results = tuple(replace(res, event=c.describe_event(res.event)) for res in real_results)
        return ClaimRun(spec.name, results, p, samples, time.perf_counter() - started, c.text, claimed_rho=rho,
                        floating_point_views=report.floating_point_views, real_results=real_results, real_p_value=real_p)
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


def chain_holm(chains: Sequence[Sequence[float]], alpha: float) -> tuple[list[int], list[list[float | None]]]:
    """Holm's procedure over chains of hypotheses: (hypotheses rejected per chain, levels).

    Chain j holds p-values (p_j1, p_j2, ...) of hypotheses to be tested in that order. Every
    unfinished chain's current (first unrejected) hypothesis is tested at alpha / u, u the number
    of unfinished chains; one at a time, smallest p-value first, the current hypothesis is
    rejected while its p-value is at most that level, and the chain moves on to its next one.
    This is the sequentially rejective graph procedure of Bretz et al. (2009) for the graph that
    passes a rejected hypothesis's weight to the next of its chain, and a finished chain's weight
    evenly to the other chains: it controls the family-wise error at ``alpha`` under any
    dependence. ``levels[j][k]`` is the level hypothesis k of chain j was rejected at, or last
    tested at; ``None`` if it was never tested (an earlier one of its chain stands).
    """
    m = len(chains)
    position = [0] * m
    levels: list[list[float | None]] = [[None] * len(chain) for chain in chains]
    while True:
        unfinished = [j for j in range(m) if position[j] < len(chains[j])]
        if not unfinished:
            break
        level = alpha / len(unfinished)
        j = min(unfinished, key=lambda i: (chains[i][position[i]], i))
        if chains[j][position[j]] > level:
            for i in unfinished:
                levels[i][position[i]] = level  # tested at this level, not rejected
            break
        levels[j][position[j]] = level
        position[j] += 1
    return position, levels


def holm(p_values: Sequence[float], alpha: float) -> tuple[list[bool], list[float]]:
    """Holm's step-down procedure: (rejected, the level each hypothesis was tested at).

    Sort p ascending; reject the i-th smallest while p_(i) <= alpha / (m - i + 1). A rejected
    hypothesis's level is its step's threshold; every other one was (last) tested at the
    threshold of the step where the procedure stopped, alpha / (m - r), r = number rejected.
    (:func:`chain_holm` with chains of one hypothesis.)
    """
    rejected, levels = chain_holm([[p] for p in p_values], alpha)
    return [r == 1 for r in rejected], [float(lv[0]) for lv in levels]  # type: ignore[arg-type]


@dataclass(frozen=True)
class ClaimOutcome:
    """One row of the suite's report.

    ``verdict`` judges the outcome against the file's ``expect``: "holds" / "violated" (an
    ordinary claim), "caught" / "missed" (an expected violation found or not; "violated" when an
    expected floating-point-only violation is one in real arithmetic too). ``arithmetic`` says
    where a violation was established ("none", "floating point", "both"), ``real_result`` is the
    worst real-arithmetic result at its level in the claim's chain (see the module docstring).
    """

    spec: ClaimSpec
    verdict: str
    result: AuditResult | None  # the worst (floating-point) result at the claim's Holm level
    p_value: float
    level: float
    samples: int
    seconds: float
    claim_text: str
    error: str | None = None
    claimed_rho: float | None = None
    arithmetic: str | None = None  # None on an error
    real_arithmetic_verdict: str | None = None  # None: not audited in real arithmetic (not needed)
    real_result: AuditResult | None = None
    real_p_value: float | None = None
    real_level: float | None = None

    @property
    def violated(self) -> bool:
        return self.result is not None and self.result.violated

    @property
    def finding(self) -> str | None:
        """Both arithmetics' verdicts in words (e.g. "violated in floating point; holds in real
        arithmetic at these draws"); ``None`` on an error."""
        if self.arithmetic is None:
            return None
        if self.arithmetic == FLOATING_POINT and self.real_arithmetic_verdict is None:
            return "violated in floating point; real arithmetic not audited"
        return FINDINGS[self.arithmetic]

    @property
    def ok(self) -> bool:
        """Whether this row is what the suite expects (holds, or a planted bug caught)."""
        return self.error is None and self.verdict in (HOLDS, CAUGHT)

    def to_dict(self) -> dict[str, Any]:
        from ..._presentation._json import jsonable

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
            # which arithmetic: the audit as executed (floating point) governs; the real-arithmetic
            # audit of the same pairs and draws tells a floating-point artefact from a violation in both
            "float_bits": self.spec.float_bits,
            "arithmetic": self.arithmetic,
            "finding": self.finding,
            "real_arithmetic_verdict": self.real_arithmetic_verdict,
            "real_lower_bound": self.real_result.lower_bound if self.real_result else None,
            "real_estimate": self.real_result.estimate if self.real_result else None,
            "real_event": self.real_result.event if self.real_result else None,
            "real_p_value": self.real_p_value,
            "real_level": self.real_level,
            # issue 33: the attack the bound's witness is (TPR at an FPR, advantage, mu-GDP), at the bound's confidence,
            # and the claim's trade-off curve the HTML page draws it against
            "risk": attack_risk(r),
            "tradeoff_claim": claim_curve(self.claim_text, r),
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
            # issue 34 item 9: "holds" with a lower bound of 0 (no power at this budget), and what was audited
            "no_power": sum(1 for r in self.rows if r.verdict == HOLDS and r.result is not None and r.result.lower_bound == 0.0),
            **provenance([r.spec.file for r in self.rows]),
            "seed": self.seed,
            "samples_scale": self.samples_scale,
            "seconds": round(self.seconds, 3),
            "exit_code": self.exit_code,
            "counts": counts,
            "results": [r.to_dict() for r in self.rows],
        }


def _at_level(results: Sequence[AuditResult], p_value: float, rejected: bool, level: float) -> AuditResult:
    """The worst of ``results`` re-scored at ``level`` (the rejecting level's if that one shows no violation)."""
    r = len(results)
    rescored = []
    for res in results:
        share = result_share(res, r)
        at_level = rescore(res, level * share)
        if rejected and p_value <= level and not at_level.violated:
            # the certificate is not exactly monotone in the level: show the rejecting one
            alt = rescore(res, p_value * share) if p_value > 0 else res
            at_level = alt if _margin(alt) > _margin(at_level) else at_level
        rescored.append(at_level)
    return max(rescored, key=_margin)


def _chain(run: ClaimRun) -> list[float]:
    """The p-values of a claim's chain: floating point, then real arithmetic (1.0 if not audited:
    never rejected); one hypothesis when no view looked at a bit pattern (then they are one test)."""
    if not run.floating_point_views:
        return [run.p_value]
    return [run.p_value, run.real_p_value if run.real_p_value is not None else 1.0]


def _judge(expect: str, floating: bool, real: bool) -> str:
    """The row's verdict from the file's expectation and the two rejections."""
    if expect == HOLDS:
        return VIOLATED if floating else HOLDS
    if expect == EXPECT_FLOATING_POINT:
        if not floating:
            return MISSED
        return VIOLATED if real else CAUGHT  # violated in both: not the floating-point artefact expected
    if expect == EXPECT_BOTH:
        return CAUGHT if floating and real else MISSED
    return CAUGHT if floating else MISSED  # "violated": in either arithmetic


def _finalise(spec: ClaimSpec, run: ClaimRun, chain: list[float], rejected: int, levels: list[float | None]) -> ClaimOutcome:
    """A claim's row from its chain's p-values, how many of them were rejected and their levels."""
    level = levels[0]
    assert level is not None  # every chain's first hypothesis is tested
    if run.error is not None:
        return ClaimOutcome(spec, "error", None, 1.0, level, run.samples, run.seconds, run.claim_text, run.error)
    floating = rejected >= 1
    worst = _at_level(run.results, chain[0], floating, level)
    if not run.floating_point_views:  # no bit view: the floating-point audit is the real-arithmetic one
        real, real_level, real_result, real_p = floating, level, worst, chain[0]
        real_verdict: str | None = VIOLATED if real else HOLDS
    else:
        real, real_level = rejected >= 2, levels[1]
        tested = run.real_results is not None and real_level is not None
        real_p = chain[1] if run.real_results is not None else None
        real_result = _at_level(run.real_results, chain[1], real, real_level) if tested else None  # type: ignore[arg-type]
        real_verdict = (VIOLATED if real else HOLDS) if tested else None
    arithmetic = NONE if not floating else (BOTH if real else FLOATING_POINT)
    return ClaimOutcome(spec, _judge(spec.expect, floating, real), worst, chain[0], level, run.samples, run.seconds,
                        run.claim_text, claimed_rho=run.claimed_rho, arithmetic=arithmetic, real_arithmetic_verdict=real_verdict,
                        real_result=real_result, real_p_value=real_p, real_level=real_level)


def _decide(specs: Sequence[ClaimSpec], runs: Sequence[ClaimRun], alpha: float) -> list[ClaimOutcome]:
    """Holm over the claims' chains (:func:`chain_holm`), then each claim's results at its levels
    (kept consistent: a hypothesis not rejected must show no violation at its level; if the Renyi
    certificate's small non-monotonicity makes one appear, that level is a valid p-value and the
    procedure is re-run)."""
    chains = [_chain(run) for run in runs]
    while True:
        rejected, levels = chain_holm(chains, alpha)
        changed = False
        rows = []
        for i, (spec, run) in enumerate(zip(specs, runs)):
            row = _finalise(spec, run, chains[i], rejected[i], levels[i])
            for k, result in enumerate((row.result, row.real_result)[: len(chains[i])]):
                level = levels[i][k]
                if result is not None and level is not None and rejected[i] <= k and result.violated and chains[i][k] > level:
                    chains[i][k] = level
                    changed = True
            rows.append(row)
        if not changed:
            return rows


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
    order = sorted(range(m), key=lambda i: -claim_weight(specs[i]))
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

