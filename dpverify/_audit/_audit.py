"""The black-box audit: sample a mechanism on neighbouring inputs, bound its privacy from below.

:func:`audit` is the one entry point; the suite and the CLI are thin layers over it. For each
neighbouring pair it

1. draws a small *pilot* sample per input, used only to learn the output type and to fit the
   views (partitions of the output space: exact histograms for discrete outputs, pilot-quantile
   bins of the output, of each coordinate and of a fitted Gaussian likelihood-ratio score for
   real and vector outputs, joint cells of a discrete and a real coordinate, and for floats the
   lowest set bit of each coordinate); for vector and float outputs a separate *training* sample
   fits learned-event views (classifier scores, see :mod:`._learned`); optionally a pair search
   on search samples that are never reused chooses the pairs (see :mod:`._search`);
2. draws the main sample in fixed chunks (seeded by position, see :mod:`._runner`), each chunk a
   *selection* part (``selection_fraction`` of it) and a *bound* part drawn from streams of their
   own, and reduces each part to histograms (on the executor, if any): first every selection
   part, counted by every view;
3. runs each estimator in each direction: events (or, for Renyi, partitions) chosen on the
   selection sample alone; then draws the bound parts, counted only by the views of the chosen
   events (by every view for Renyi and where a law is declared), and bounds each event by exact
   Clopper-Pearson on them (see :mod:`._estimators`). Choosing first is what lets the bound
   sample -- most of the draws -- skip the views no event was chosen from;
4. in sequential mode, repeats 2-3 on doubling sample sizes with the error budget of round j
   equal to alpha_j = alpha * 6 / (pi^2 j^2) (summing to alpha), stopping as soon as a
   violation is established or the budget of samples is spent; each reported bound is the best
   over rounds, valid simultaneously for all rounds;
5. where the exact law is declared (a ``log_pmf`` callable, or an ``IntegerPair`` on the pair),
   an output seen under D that the declared law of D' gives probability exactly 0 makes
   epsilon and every Renyi divergence infinite -- reported as ``math.inf``, not a large number.
   Without a declared law an output never seen under D' yields only a finite bound
   log(CP_lower P_D(E) / CP_upper P_D'(E)) (its point estimate is inf).

The family-wise error of a report is at most ``alpha``: it is split over all (pair, direction,
estimator) results of a round by a weighted Bonferroni rule (:func:`result_levels`): the result
whose selection sample predicts the largest margin over the claim gets ``focus`` of it (0.8 by
default), the others share the rest evenly, and each result splits its share over its events the
same way (:func:`._estimators.event_levels`). The weights are functions of the selection samples
alone, which are independent of the bound samples, so conditional on them every bound holds at
its own level and the levels sum to ``alpha``. Each result states its own confidence.

Which arithmetic. With ``float_bits=True`` (the default) float outputs are also seen through
their IEEE-754 representation (lowest-set-bit views, bit-pattern features of the classifiers):
what a floating-point implementation leaks beyond its real-arithmetic algorithm (Mironov 2012).
When that audit -- the one of the mechanism as executed, which governs the verdict -- finds a
violation and used such a view, the *real-arithmetic audit* follows: the same call with
``float_bits=False`` (no view that looks at a bit pattern; events are unions of intervals of the
outputs, whose probabilities under the float implementation and the real mechanism differ only
by the rounding of their endpoints), on the same pairs, the same seed and therefore the same
draws. The report then says "violated in floating point; holds in real arithmetic at these
draws" or "violated in both" (:attr:`AuditReport.arithmetic`).

Why the two verdicts need no split of ``alpha``. They test, in a fixed order, H_fp ("the
mechanism as executed satisfies the claim") and then H_real ("no real-arithmetic event violates
it"), and H_real is tested only after H_fp is rejected: a fixed-sequence procedure (Maurer,
Hothorn and Lehmacher 1995; Westfall and Krishen 2001). If H_fp is true, any false "violated"
needs H_fp falsely rejected first: probability <= ``alpha``. If H_fp is false and H_real true,
the only possible false statement is H_real's rejection: probability <= ``alpha``, since the
real-arithmetic audit is a complete audit at level ``alpha`` on its own. Each test is valid
whatever the other saw, so reusing the draws costs nothing in error rate (the dependence between
the two audits does not enter the argument), and it makes the second verdict a statement about
the very draws of the first. Both audits sample the executed mechanism, so "violated in real
arithmetic" implies "violated in floating point": the two verdicts can read "none", "floating
point" or "both", never "real arithmetic only". Without a violation in floating point the second
audit is not run (there is nothing to tell apart), and its cost is one more audit of the same
size, paid only by violated float claims.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

from accounting import RDP, ZCDP, ApproxDP, PureDP, AccountingError
from accounting.internal import check_positive_int, check_probability

from ._estimators import (
    DEFAULT_EVENTS,
    EVENT_FOCUS,
    Counts,
    EventChoice,
    align,
    bound_delta,
    bound_epsilon,
    choose_delta_events,
    choose_epsilon_events,
    event_levels,
    nominal_event_level,
    renyi_lower,
)
from ._learned import TRAIN_STREAM, LearnedView, ResidueView, fit_learned_views, sklearn_available
from ._neighbours import NeighbourPair, as_pairs
from ._search import search_pairs
from ._results import HOLDS, VIOLATED, AuditReport, AuditResult, _margin
from ._runner import PILOT_STREAM, ChunkTask, call_mode, chunk_plan, draw, map_tasks, resolve_executor
from .._statistics._confidence import sequential_level
from ._views import MAX_COLUMN_VIEWS, Hist, RowsView, _is_discrete, column_views, fit_views, merge_hists

__all__ = ["DEFAULT_ORDERS", "ESTIMATORS", "audit"]

#: Renyi orders audited by default (the bounds are simultaneous over the grid: no extra cost).
DEFAULT_ORDERS = (1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 64.0)
ESTIMATORS = ("epsilon", "delta", "renyi")
DIRECTIONS = ("D||D'", "D'||D")
#: Bytes of output per chunk by default (2**20 scalar draws, as before; 1,024 rows of 1,000 floats).
CHUNK_BYTES = 8 * 2**20
#: Bytes of output per input in the classifiers' training sample by default.
TRAIN_BYTES = 32 * 2**20
#: Lowest-set-bit views are built for at most this many float coordinates.
MAX_RESIDUE_VIEWS = 16
#: SeedSequence spawn-key root of the pair search's draws (never used by the final audit).
SEARCH_STREAM = 2**31 - 3
#: the largest sample budget per input per pair an audit takes
MAX_SAMPLES = 10**9


def default_chunk_size(first_target: int, row_bytes: int) -> int:
    """Draws per chunk: about CHUNK_BYTES of output, and at most half the first sample size."""
    by_bytes = max(256, CHUNK_BYTES // max(int(row_bytes), 1))
    return min(by_bytes, max(2**12, first_target // 2))


def default_train_size(row_bytes: int) -> int:
    """Training draws per input: about TRAIN_BYTES of output, between 2**11 and 2**15."""
    return int(min(2**15, max(2**11, TRAIN_BYTES // max(int(row_bytes), 1))))


def _default_estimators(claim: Any) -> tuple[str, ...]:
    if isinstance(claim, PureDP):
        return ("epsilon",)
    if isinstance(claim, ApproxDP):
        return ("delta",)
    if isinstance(claim, (ZCDP, RDP)):
        return ("renyi",)
    raise AccountingError("claim", claim, "an accounting guarantee: PureDP, ApproxDP, ZCDP or RDP")


def _renyi_curve(claim: Any) -> Callable[[float], float]:
    if isinstance(claim, (PureDP, ZCDP)):
        return claim.to_rdp()
    if isinstance(claim, RDP):
        return claim
    raise AccountingError("estimators", "renyi", "a claim with a Renyi curve (PureDP, ZCDP or RDP)", f"got {type(claim).__name__}")


@dataclass
class _Track:
    """The best bound so far of one (direction, estimator)."""

    result: AuditResult | None = None
    rounds: list[dict[str, Any]] = field(default_factory=list)

    def offer(self, result: AuditResult) -> None:
        if self.result is None or _margin(result) > _margin(self.result):
            self.result = result


def _verdict(lower: float, claimed: float) -> str:
    return VIOLATED if lower > claimed else HOLDS


def _declared_impossible(
    pair: NeighbourPair, direction: int, log_pmf: Callable[..., Any] | None, c: Counts
) -> Any:
    """A key seen under P, never under Q, that the declared law of Q gives probability 0."""
    if not c.view.exact_outputs:
        return None
    p_seen = (c.p_a + c.p_b + c.p_est) > 0
    q_seen = (c.q_a + c.q_b + c.q_est) > 0
    idx = np.flatnonzero(p_seen & ~q_seen)
    if idx.size == 0:
        return None
    keys = c.keys[idx]
    other = pair.d_prime if direction == 0 else pair.d
    if log_pmf is not None:
        values = np.asarray(log_pmf(other, keys), dtype=np.float64).reshape(-1)
        if values.shape[0] != idx.size:
            raise AccountingError("log_pmf", log_pmf, "a function returning one log-probability per output it is given")
        hit = np.flatnonzero(values == -math.inf)
        return keys[hit[0]] if hit.size else None
    law = pair.law
    if law is None or keys.ndim != 1 or keys.dtype.kind != "i":
        return None
    log_q = law.log_q if direction == 0 else law.log_p
    for k in keys:
        if float(log_q(int(k)).upper()) == -math.inf:
            return k
    return None


def audit(
    mechanism: Callable[..., Any],
    pairs: Any,
    claim: PureDP | ApproxDP | ZCDP | RDP,
    *,
    samples: int = 10**6,
    alpha: float = 0.05,
    sequential: bool = False,
    initial_samples: int | None = None,
    estimators: Sequence[str] | None = None,
    orders: Sequence[float] = DEFAULT_ORDERS,
    directions: str = "both",
    log_pmf: Callable[[Any, np.ndarray], np.ndarray] | None = None,
    executor: Any = "auto",
    seed: int = 0,
    selection_fraction: float = 0.2,
    max_events: int = DEFAULT_EVENTS,
    seed_type: str = "generator",
    chunk_size: int | None = None,
    learned: bool | str = "auto",
    train_samples: int | None = None,
    float_bits: bool = True,
    pair_search: str | None = None,
    search_budget: int = 16,
    search_samples: int | None = None,
    keep_pairs: int = 1,
    focus: float = EVENT_FOCUS,
) -> AuditReport:
    """Audit ``mechanism`` against ``claim`` on neighbouring ``pairs``; every bound is a lower bound.

    Args:
        mechanism: ``mechanism(data, rng, size)`` returning ``size`` outputs, or
            ``mechanism(data, rng)`` returning a batch (plain Python or numba). Outputs may be
            integers, booleans, floats, vectors (2-D arrays) or tuples (a tuple of per-field
            arrays). ``rng`` is a ``numpy.random.Generator`` (an int seed with ``seed_type="int"``).
        pairs: a :class:`NeighbourPair`, a ``(d, d_prime)`` tuple, or a list of either
            (see :func:`statdp_pairs`, :func:`scalar_pairs`, :func:`replace_one_pairs`).
        claim: the guarantee under audit (``PureDP``, ``ApproxDP``, ``ZCDP`` or ``RDP``).
        samples: draws per input per pair (the maximum, in sequential mode), besides a small pilot.
        alpha: family-wise error: the probability that any "violated" verdict in the report is
            false is at most ``alpha``.
        sequential: draw on doubling sizes from ``initial_samples`` and stop at the first
            established violation (anytime-valid; see the module docstring).
        estimators: any of ``"epsilon"`` (PureDP claims), ``"delta"`` (delta at the claimed
            epsilon; PureDP claims mean delta = 0), ``"renyi"`` (PureDP, ZCDP, RDP claims).
            Default: the one matching the claim.
        orders: Renyi orders for the ``"renyi"`` estimator.
        directions: ``"both"``, ``"forward"`` (D||D' only) or ``"backward"``.
        log_pmf: optional exact law: ``log_pmf(data, outputs) -> log-probabilities`` (exactly
            ``-inf`` where impossible), enabling exact infinite-epsilon detection. A pair's
            ``law`` (an ``accounting`` ``IntegerPair``) does the same for integer outputs.
        executor: ``"auto"`` (a local process pool for audits of >= 2e8 draws, else in-process),
            ``"serial"``, ``"process"``, a ``concurrent.futures.Executor`` or a
            ``dask.distributed.Client``. Results do not depend on it. An executor or client
            given here also draws the pair search's sub-audits.
        seed: the one integer that determines every draw.
        selection_fraction: share of each chunk used to choose events.
        max_events: events chosen per (pair, direction) for epsilon and delta (union bound).
        seed_type: ``"generator"`` or ``"int"`` (see above).
        chunk_size: draws per chunk (default: chunks of about :data:`CHUNK_BYTES` bytes of output,
            from the output size seen on the pilot and the sample sizes, never from the workers).
        learned: learned-event views (see :mod:`._learned`): ``"auto"`` (default) adds them
            wherever the output is a vector or a float and scikit-learn is installed (without it,
            a one-line notice and the pilot views only); ``True`` requires them; ``False`` never.
            The classifiers train on a sample drawn only for them.
        float_bits: look at the IEEE-754 representation of float outputs (default): exact views
            of each float coordinate's lowest-set-bit exponent (no scikit-learn needed) and bit
            pattern features for the classifiers. These find what a floating-point
            implementation leaks beyond its real-arithmetic algorithm (Mironov 2012: noise added
            to a shifted location changes the low-order bits), so a float mechanism that is
            private only in real arithmetic is reported violated, with a witness event naming
            the lowest set bit; such a violation is followed by the real-arithmetic audit of the
            same pairs and draws, so the report says which arithmetic it is about (see the
            module docstring). ``False`` audits the outputs as real numbers only (the
            idealised mechanism's claim).
        pair_search: ``None`` (audit every pair given), ``"pilot"`` (audit only the ``keep_pairs``
            most promising of the given pairs) or ``"statdp"`` (also StatDP's patterns, random
            sign patterns and hill climbing around the first pair, for query-vector inputs). The
            choice is made on search samples drawn from a separate seed stream and never reused,
            so alpha is spent only on the pairs kept; the search draws are counted in
            ``samples`` (see :mod:`._search`).
        search_budget: candidate pairs tried by the search (at most).
        search_samples: draws per input per candidate (default max(2,000, samples // 100)).
        keep_pairs: pairs audited at full size after the search.
        focus: share of the error budget put on the most promising result, and within each
            result on its first-ranked event (a weighted Bonferroni split, chosen on the
            selection sample only, so every bound keeps its stated level; see the module
            docstring). ``0`` splits evenly; values in (0, 1).
        train_samples: draws per input for the classifiers (default: about :data:`TRAIN_BYTES`
            bytes of output, between 2**11 and 2**15 draws); counted in ``samples_used``.

    Returns:
        An :class:`AuditReport` with one :class:`AuditResult` per (pair, direction, estimator);
        ``report.verdict`` (the audit as run: floating point by default) governs, and
        ``report.real_arithmetic_verdict`` / ``report.arithmetic`` (``"none"``,
        ``"floating point"``, ``"both"``) say whether a violation holds in real arithmetic too.
    """
    started = time.perf_counter()
    defaults = _default_estimators(claim)  # also validates the claim type
    chosen = tuple(estimators) if estimators is not None else defaults
    for name in chosen:
        if name not in ESTIMATORS:
            raise AccountingError("estimators", estimators, f"a subset of {ESTIMATORS}")
    if len(set(chosen)) != len(chosen):
        raise AccountingError("estimators", estimators, "distinct estimator names")
    if "epsilon" in chosen and not isinstance(claim, PureDP):
        raise AccountingError("estimators", estimators, "'epsilon' only for a PureDP claim", "use 'delta' or 'renyi'")
    if "delta" in chosen and not isinstance(claim, (PureDP, ApproxDP)):
        raise AccountingError("estimators", estimators, "'delta' only for a PureDP or ApproxDP claim")
    curve = _renyi_curve(claim) if "renyi" in chosen else None
    n_max = check_positive_int("samples", samples)
    if not 100 <= n_max <= MAX_SAMPLES:  # 10^9 draws of a cheap mechanism already take ~30 CPU s per pair
        raise AccountingError("samples", samples, f"an integer in [100, {MAX_SAMPLES:.0e}] (draws per input per pair)")
    # floats from here on: a Fraction alpha would reach scipy's ufuncs, which refuse it
    alpha = float(check_probability("alpha", alpha))
    selection_fraction = float(check_probability("selection_fraction", selection_fraction))
    check_positive_int("max_events", max_events)
    if isinstance(focus, bool) or not isinstance(focus, (int, float)) or not (0.0 <= float(focus) < 1.0):
        raise AccountingError("focus", focus, "a share in [0, 1) (0: the even Bonferroni split)")
    focus = float(focus)
    if seed_type not in ("generator", "int"):
        raise AccountingError("seed_type", seed_type, '"generator" or "int"')
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise AccountingError("seed", seed, "a non-negative integer")
    dirs = {"both": (0, 1), "forward": (0,), "backward": (1,)}.get(directions)
    if dirs is None:
        raise AccountingError("directions", directions, '"both", "forward" or "backward"')
    order_list = tuple(float(o) for o in orders)
    if "renyi" in chosen and (not order_list or any(not (1 < o < math.inf) for o in order_list)):
        raise AccountingError("orders", orders, "a non-empty sequence of Renyi orders > 1")
    claims_renyi = tuple(curve(o) for o in order_list) if curve is not None else ()
    pair_list = as_pairs(pairs)
    mode = call_mode(mechanism)
    if not isinstance(float_bits, bool):
        raise AccountingError("float_bits", float_bits, "True or False")
    if learned not in ("auto", True, False):
        raise AccountingError("learned", learned, '"auto", True or False')
    use_learned = (learned is True or learned == "auto") and sklearn_available()
    if learned is True and not use_learned:
        raise AccountingError("learned", learned, "True only with scikit-learn installed", "pip install 'dpverify[learn]'")
    if learned == "auto" and not use_learned:
        warnings.warn("dpverify.audit: scikit-learn is not installed; learned-event views are off "
                      "(pip install 'dpverify[learn]' for them)", RuntimeWarning, stacklevel=2)
    if train_samples is not None:
        check_positive_int("train_samples", train_samples)
        if train_samples < 64:
            raise AccountingError("train_samples", train_samples, "an integer >= 64")

    if sequential:
        n0 = min(n_max, initial_samples if initial_samples is not None else 10**4)
        check_positive_int("initial_samples", n0)
        targets = [n0]
        while targets[-1] < n_max:
            targets.append(min(n_max, 2 * targets[-1]))
    else:
        n0 = n_max
        targets = [n_max]
    if chunk_size is not None:
        check_positive_int("chunk_size", chunk_size)
    search_info: dict[str, Any] | None = None
    search_cost = 0
    if pair_search is not None:
        check_positive_int("search_budget", search_budget)
        check_positive_int("keep_pairs", keep_pairs)
        n_search = search_samples if search_samples is not None else max(2000, n_max // 100)
        check_positive_int("search_samples", n_search)
        if n_search < 100:
            raise AccountingError("search_samples", search_samples, "an integer >= 100")
        costs: list[int] = []
        # the sub-audits share an executor the caller gave (the numbers never depend on it); one
        # "auto"/"process" would make would cost a pool per candidate, so those run in-process
        search_executor = "serial" if executor is None or isinstance(executor, str) else executor

        # epsilon / delta candidates are ranked by the bound predicted from their selection sample
        # alone, so the search gives it almost all its draws; Renyi ranks by the small audit's bound
        search_fraction = 0.98 if set(chosen) <= {"epsilon", "delta"} else selection_fraction

        def score(candidates: list[NeighbourPair], index: int) -> list[tuple[float, float]]:
            sub_seed = int.from_bytes(np.random.SeedSequence(int(seed), spawn_key=(SEARCH_STREAM, index))
                                      .generate_state(2, np.uint32).tobytes(), "little")
            # a small audit of the candidates (no learned views, even split) whose epsilon / delta events
            # are chosen by the bound they would get at the full size, recorded as "predicted_margin"
            results, _ = _run_pairs(mechanism, tuple(candidates), claim, chosen, dirs, order_list, claims_renyi, alpha, False,
                                    [n_search], None, n_search, mode, seed_type, sub_seed, search_fraction, max_events, None,
                                    search_executor, False, None, float_bits, 0.0, predict_at=n_max)
            per = len(results) // len(candidates)  # results come pair by pair
            costs.append(max(r.samples for r in results))
            out = []
            for i in range(len(candidates)):
                group = results[i * per:(i + 1) * per]
                # rank by the best lower bound's margin; among equal margins (typically all zero bounds
                # on a small search sample) by the best point estimate over the claim
                predicted = [r.details.get("predicted_margin") for r in group]
                if all(p is not None for p in predicted):  # epsilon / delta: the bound predicted at the full size
                    first = max(predicted)
                else:  # Renyi: the bound at the search's size
                    first = max(_margin(r) for r in group)
                out.append((first, max((r.estimate - r.claimed for r in group if not math.isnan(r.estimate)), default=-math.inf)))
            return out

        pair_list, search_info = search_pairs(score, pair_list, pair_search, search_budget, keep_pairs, int(seed))
        search_cost = sum(costs)

    def run(bits: bool) -> AuditReport:
        begun = time.perf_counter()
        results, fp_views = _run_pairs(mechanism, pair_list, claim, chosen, dirs, order_list, claims_renyi, alpha, sequential,
                                       targets, chunk_size, n0, mode, seed_type, int(seed), selection_fraction, max_events,
                                       log_pmf, executor, use_learned, train_samples, bits, focus)
        if search_info is not None:
            note = (f"; pair chosen by a search over {search_info['candidates']} candidates on separate samples "
                    f"({search_cost} draws per input, counted in samples; no alpha spent)")
            results = [replace(r, samples=r.samples + search_cost, method=r.method + note,
                               details={**r.details, "pair_search": search_info}) for r in results]
        return AuditReport(tuple(results), claim, float(alpha), time.perf_counter() - begun, bits, fp_views)

    report = run(float_bits)
    if report.floating_point_views and report.verdict == VIOLATED:
        # second in a fixed sequence (see the module docstring): the same pairs, seed and draws, no
        # floating-point view, at the full alpha
        report = replace(report, real_arithmetic=run(False))
    return replace(report, seconds=time.perf_counter() - started)


def _run_pairs(
    mechanism: Any, pairs: tuple[NeighbourPair, ...], claim: Any, chosen: tuple[str, ...], dirs: tuple[int, ...],
    orders: tuple[float, ...], claims_renyi: tuple[float, ...], alpha: float, sequential: bool, targets: list[int],
    chunk_size: int | None, n0: int, mode: str, seed_type: str, seed: int, fraction: float, max_events: int, log_pmf: Any,
    executor: Any, use_learned: bool, train_samples: int | None, float_bits: bool, focus: float, *,
    predict_at: int | None = None,
) -> tuple[list[AuditResult], bool]:
    """The results of validated arguments (see :func:`audit`) on the executor they name, and
    whether any view looked at the floating-point representation of an output.

    ``predict_at`` (the pair search's sub-audits only): choose epsilon / delta events by the bound
    they would get with this many draws per input, and record that prediction in each result's
    details as ``predicted_margin``.
    """
    n_max = targets[-1]
    pilot_n = min(2**14, max(512, n_max // 64))
    n_results = len(pairs) * len(dirs) * len(chosen)
    pool, owned = resolve_executor(executor, 2 * n_max * len(pairs), (mechanism, pairs))
    try:
        return _audit_pairs(
            mechanism, pairs, claim, chosen, dirs, orders, claims_renyi, float(alpha), n_results, sequential,
            targets, chunk_size, n0, pilot_n, mode, seed_type, seed, fraction, max_events, log_pmf, pool,
            use_learned, train_samples, float_bits, focus, predict_at)
    finally:
        if owned and pool is not None:
            pool.shutdown()


class _PairRun:
    """One pair's draws: the pilot, the fitted views, the training sample, and the chunk
    histograms accumulated so far (:meth:`tasks` / :meth:`absorb` draw up to a target size)."""

    def __init__(self, mechanism: Any, pair: NeighbourPair, pi: int, streams: tuple[tuple[int, int], tuple[int, int]],
                 chunk_size: int | None, n0: int, targets: list[int], pilot_n: int, mode: str, seed_type: str, seed: int,
                 fraction: float, use_learned: bool, train_samples: int | None, float_bits: bool) -> None:
        started = time.perf_counter()
        self.mechanism, self.pair, self.pi, self.mode, self.seed_type, self.seed = mechanism, pair, pi, mode, seed_type, seed
        self.streams, self.fraction, self.pilot_n = streams, fraction, pilot_n
        inputs = (pair.d, pair.d_prime)
        pilots = [draw(mechanism, inputs[s], np.random.SeedSequence(seed, spawn_key=(*streams[s], PILOT_STREAM)), pilot_n, mode,
                       seed_type) for s in (0, 1)]
        views = fit_views(pilots[0], pilots[1], inputs)
        row_bytes = max(8, pilots[0].nbytes // max(len(pilots[0]), 1))
        self.plan = chunk_plan(targets, chunk_size if chunk_size is not None else default_chunk_size(n0, row_bytes))
        self.train_n = 0
        pooled = np.concatenate(pilots, axis=0)
        is_float = pooled.dtype.kind == "f"
        if is_float and float_bits:  # exact views of the lowest set bit of each float coordinate (no training needed)
            cols = [None] if pooled.ndim == 1 else [j for j in range(min(pooled.shape[1], MAX_RESIDUE_VIEWS))
                                                     if not _is_discrete(pooled[:, j])]
            views = views + tuple(ResidueView(j) for j in cols)
        # a view of whole outputs taking few values is already the finest partition: a classifier's
        # score is a function of the output, so its events are unions of those cells (no training)
        exact_rows = any(isinstance(v, RowsView) and v.columns is None for v in views)
        if use_learned and (is_float or pooled.ndim == 2) and not exact_rows:
            self.train_n = train_samples if train_samples is not None else default_train_size(row_bytes)
            trains = [draw(mechanism, inputs[s], np.random.SeedSequence(seed, spawn_key=(*streams[s], TRAIN_STREAM)),
                           self.train_n, mode, seed_type) for s in (0, 1)]
            learned_views, screened = fit_learned_views(
                trains[0], trains[1], float_bits=float_bits,
                seed=int(np.random.SeedSequence(seed, spawn_key=(pi, TRAIN_STREAM)).generate_state(1)[0]))
            views = views + learned_views + tuple(column_views(pooled, [j for j in screened if j >= MAX_COLUMN_VIEWS]))
        self.views = views
        # the views float_bits adds (without them this run is its own real-arithmetic audit)
        self.floating_point_views = any(isinstance(v, ResidueView) or (isinstance(v, LearnedView) and v.features.bit_columns)
                                        for v in views)
        self.acc: list[list[list[Hist | None]]] = [[[None, None, None] for _ in views] for _ in (0, 1)]  # [side][view][part]
        self.selected = 0  # draws per input whose selection parts are counted
        self.bounded = [0] * len(views)  # per view: draws per input whose bound parts it has counted
        self.done = 0
        self.seconds = time.perf_counter() - started

    def tasks(self, target: int, phase: str, views: set[int] | None = None) -> list[tuple[int, tuple[int, ...], ChunkTask]]:
        """(side, view indices, task) for the chunks below ``target`` draws per input not drawn yet.

        Each chunk's selection part and bound part are drawn from streams of their own, so the
        events can be chosen on every chunk's selection part before any bound part is drawn:
        ``"selection"`` draws the selection parts, counted by every view; ``"bound"`` the bound
        parts, counted only by ``views`` (the chosen events' views), each from where its bound
        counts stopped (a view first chosen in a later sequential round re-draws the earlier
        bound parts: chunks are seeded by position, so it sees the same draws).
        """
        inputs = (self.pair.d, self.pair.d_prime)
        out = []
        for k, (a, b) in enumerate(self.plan):
            if a >= target:
                break
            sel = int((b - a) * self.fraction)
            if phase == "selection":
                chosen = tuple(range(len(self.views))) if a >= self.selected else ()
                size, selection, part = sel, sel, 0
            else:
                chosen = tuple(vi for vi in sorted(views or ()) if self.bounded[vi] <= a)
                size, selection, part = b - a - sel, 0, 1
            if not chosen or size == 0:
                continue
            for s in (0, 1):
                out.append((s, chosen, ChunkTask(self.mechanism, inputs[s], self.seed, (*self.streams[s], k, part), size, selection,
                                                 tuple(self.views[vi] for vi in chosen), self.mode, self.seed_type)))
        return out

    def absorb(self, phase: str, target: int, views: set[int] | None,
               outputs: list[tuple[int, tuple[int, ...], list[tuple[Hist, Hist, Hist]]]]) -> None:
        """Merge the chunk histograms (side, view indices, per-view parts) of :meth:`tasks`."""
        parts = (0, 1) if phase == "selection" else (2,)
        pending: dict[tuple[int, int, int], list[Hist]] = {}
        for side, chosen, out in outputs:
            for vi, hists in zip(chosen, out):
                for part in parts:
                    if hists[part] is not None:
                        pending.setdefault((side, vi, part), []).append(hists[part])
        for (side, vi, part), hists in pending.items():  # one merge per histogram and round
            old = self.acc[side][vi][part]
            self.acc[side][vi][part] = merge_hists(hists if old is None else [old, *hists])
        if phase == "selection":
            self.selected = target
        else:
            for vi in views or ():
                self.bounded[vi] = target
            self.done = target

    def counts(self) -> list[Counts]:
        """The aligned counts of every view (bound parts not drawn for a view count as empty)."""
        out = []
        for vi, v in enumerate(self.views):
            hists = [self.acc[side][vi][part] for part in (0, 1, 2) for side in (0, 1)]
            known = next((h for h in hists if h is not None), None)
            empty = (np.zeros((0,), dtype=np.int64), np.zeros(0, dtype=np.int64)) if known is None else (known[0][:0], known[1][:0])
            out.append(align(v, [h if h is not None else empty for h in hists]))
        return out

    def bound_size(self, target: int) -> int:
        """Draws per input in the bound sample once ``target`` is reached."""
        return sum((b - a) - int((b - a) * self.fraction) for a, b in self.plan if a < target)

    @property
    def used(self) -> int:
        return self.pilot_n + self.train_n + self.done


@dataclass
class _Staged:
    """One (pair, direction, estimator) of a round, its events chosen, awaiting its error budget."""

    key: tuple[int, int, str]
    counts: list[Counts]
    impossible: Any
    witness: str
    choice: EventChoice | None
    margin: float | None  # predicted on the selection sample (None: no prediction, e.g. Renyi)


def result_levels(total: float, margins: Sequence[float | None], focus: float) -> list[float]:
    """Error budgets of the results of one round: ``focus`` of ``total`` on the one whose
    selection-sample prediction is best, the rest split evenly (even split if any result has no
    prediction). The predictions use the selection samples only, so the weights are fixed before
    any bound-sample statement is made: a weighted Bonferroni split."""
    if len(margins) <= 1 or focus <= 0.0 or any(m is None for m in margins):
        return [total / max(len(margins), 1)] * len(margins)
    best = max(range(len(margins)), key=lambda i: (margins[i], -i))
    shares = event_levels(total, len(margins), focus)
    return [shares[0] if i == best else shares[1] for i in range(len(margins))]


def _audit_pairs(
    mechanism: Any, pairs: tuple[NeighbourPair, ...], claim: Any, chosen: tuple[str, ...], dirs: tuple[int, ...],
    orders: tuple[float, ...], claims_renyi: tuple[float, ...], alpha: float, n_results: int, sequential: bool,
    targets: list[int], chunk_size: int | None, n0: int, pilot_n: int, mode: str, seed_type: str, seed: int,
    fraction: float, max_events: int, log_pmf: Any, pool: Any, use_learned: bool, train_samples: int | None,
    float_bits: bool, focus: float, predict_at: int | None = None,
) -> tuple[list[AuditResult], bool]:
    """Every pair's results, round by round: draw, choose events on the selection samples of all
    pairs, split the round's error budget over the results (:func:`result_levels`), bound."""
    streams = input_streams(pairs)
    runs = [_PairRun(mechanism, pair, pi, streams[pi], chunk_size, n0, targets, pilot_n, mode, seed_type, seed, fraction,
                     use_learned, train_samples, float_bits) for pi, pair in enumerate(pairs)]  # each times its own set-up
    tracks = {(pi, d, e): _Track() for pi in range(len(pairs)) for d in dirs for e in chosen}
    for rnd, target in enumerate(targets, start=1):
        round_alpha = sequential_level(alpha, rnd) if sequential else alpha
        nominal = nominal_event_level(round_alpha / n_results, max_events, focus)
        # 1. every view counts the selection parts; events are chosen on them alone
        _advance_all(runs, "selection", target, pool)
        choices: dict[tuple[int, int, str], tuple[EventChoice | None, float | None]] = {}
        for run in runs:
            counts = run.counts()
            scale = _scale(predict_at, counts, run.bound_size(target))
            for d in dirs:
                cd = counts if d == 0 else [c.swapped() for c in counts]
                for est in chosen:
                    if est == "epsilon":
                        choice = choose_epsilon_events(cd, nominal, max_events, scale)
                        choices[(run.pi, d, est)] = (choice, choice.predicted - claim.epsilon)
                    elif est == "delta":
                        choice = choose_delta_events(cd, claim.epsilon, nominal, max_events, scale)
                        choices[(run.pi, d, est)] = (choice, choice.predicted - (claim.delta if isinstance(claim, ApproxDP) else 0.0))
                    else:
                        choices[(run.pi, d, est)] = (None, None)
        # 2. the bound parts are counted by the chosen events' views only (by every view for Renyi,
        # which chooses its partition as it bounds, and where a declared law looks for impossible outputs)
        needs = []
        for run in runs:
            if "renyi" in chosen or log_pmf is not None or run.pair.law is not None:
                needs.append(set(range(len(run.views))))
            else:
                needs.append(set().union(*(c.views for (pi, _, _), (c, _) in choices.items() if pi == run.pi and c is not None)))
        _advance_all(runs, "bound", target, pool, needs)
        staged: list[_Staged] = []
        for run in runs:
            counts = run.counts()
            for d in dirs:
                cd = counts if d == 0 else [c.swapped() for c in counts]
                impossible, witness = None, ""
                if log_pmf is not None or run.pair.law is not None:
                    for c in cd:
                        impossible = _declared_impossible(run.pair, d, log_pmf, c)
                        if impossible is not None:
                            witness = c.view.describe(c.keys, np.all(c.keys == impossible, axis=-1) if c.keys.ndim == 2 else c.keys == impossible)
                            break
                for est in chosen:
                    choice, margin = choices[(run.pi, d, est)]
                    if impossible is not None:
                        choice, margin = None, -math.inf  # exact: needs no error budget
                    elif choice is not None:
                        choice = choice.on(cd)  # the chosen events, found among keys first seen in the bound parts too
                    staged.append(_Staged((run.pi, d, est), cd, impossible, witness, choice, margin))
        levels = result_levels(round_alpha, [st.margin for st in staged], focus)
        round_note = f"; sequential round {rnd}" if sequential else ""
        for st, lvl in zip(staged, levels):
            pi, d, est = st.key
            run = runs[pi]
            r = _estimate(est, claim, st.counts, lvl, orders, claims_renyi, st.choice, focus, st.impossible, st.witness,
                          run.used, run.seconds, round_note + _budget_note(lvl, round_alpha), run.pair.label, DIRECTIONS[d])
            r = replace(r, details={**r.details, "result_share": lvl / round_alpha,
                                    **({"predicted_margin": st.margin} if predict_at is not None else {})})
            tracks[st.key].offer(r)
            tracks[st.key].rounds.append({"round": rnd, "samples": run.used, "lower_bound": r.lower_bound})
        if sequential and any(t.result is not None and t.result.violated for t in tracks.values()):
            break
    out = []
    for (pi, _, _), t in tracks.items():
        r = t.result
        if r is None:  # pragma: no cover - every track gets a result in round 1
            continue
        details = dict(r.details)
        if sequential:
            details["rounds"] = t.rounds
        out.append(AuditResult(r.claimed, r.lower_bound, r.estimate, r.confidence, r.verdict, runs[pi].used,
                               runs[pi].seconds, r.event, r.method, r.estimator, r.pair, r.direction, r.order, details))
    return out, any(run.floating_point_views for run in runs)


def input_streams(pairs: Sequence[NeighbourPair]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The stream of each (pair, side): (i, s) of the first place its input appears.

    Pairs that share an input (StatDP's patterns all start from the same d) share its draws:
    a draw of d is one sample of M(d) whatever pair it is compared in, so the draws per input
    stay the sample size however many pairs use it. Bounds of different pairs then depend on
    each other, which the union bound over results does not mind; every selection sample is
    still disjoint from, and independent of, every bound sample.
    """
    first: dict[tuple[str, tuple[int, ...], bytes], tuple[int, int]] = {}
    out = []
    for pi, pair in enumerate(pairs):
        sides = []
        for s, x in enumerate((pair.d, pair.d_prime)):
            try:
                arr = np.asarray(x)
                key = (arr.dtype.str, arr.shape, arr.tobytes()) if arr.dtype != object else ("repr", (), repr(x).encode())
            except Exception:  # inputs numpy cannot hold: never shared
                key = ("id", (pi, s), b"")
            sides.append(first.setdefault(key, (pi, s)))
        out.append((sides[0], sides[1]))
    return out


def _advance_all(runs: list[_PairRun], phase: str, target: int, pool: Any, needs: list[set[int]] | None = None) -> None:
    """Every run's ``phase`` parts up to ``target`` (see :meth:`_PairRun.tasks`), each chunk shared
    by runs with a common input drawn once for all the views that need it."""
    started = time.perf_counter()
    jobs: dict[tuple[int, ...], ChunkTask] = {}
    owners: dict[tuple[int, ...], list[tuple[int, int, tuple[int, ...], int]]] = {}  # chunk -> (run, side, views, first)
    for ri, run in enumerate(runs):
        for side, chosen, task in run.tasks(target, phase, needs[ri] if needs is not None else None):
            key = (*task.spawn_key, task.size, task.selection)
            if key in jobs:
                offset = len(jobs[key].views)
                jobs[key] = replace(jobs[key], views=jobs[key].views + task.views)
            else:
                offset = 0
                jobs[key] = task
            owners.setdefault(key, []).append((ri, side, chosen, offset))
    keys = list(jobs)
    outputs = map_tasks(pool, [jobs[k] for k in keys])
    per_run: list[list[tuple[int, tuple[int, ...], list[tuple[Hist, Hist, Hist]]]]] = [[] for _ in runs]
    for key, out in zip(keys, outputs):
        for ri, side, chosen, offset in owners[key]:
            per_run[ri].append((side, chosen, out[offset: offset + len(chosen)]))
    share = (time.perf_counter() - started) / max(len(runs), 1)
    for ri, run in enumerate(runs):
        run.absorb(phase, target, needs[ri] if needs is not None else None, per_run[ri])
        run.seconds += share


def _scale(predict_at: int | None, counts: list[Counts], bound: int) -> float:
    """Factor from the validation sample's size to the bound sample of an audit of ``predict_at`` draws
    (``bound``: this audit's bound sample per input)."""
    if predict_at is None or not counts:
        return 1.0
    validation = max(counts[0].n_b_p, 1)
    bound = max(bound, 1)
    total = validation * 2 + bound  # ranking + validation + bound: the draws of this audit
    return max(1.0, predict_at * bound / total / validation)


def _budget_note(level: float, total: float) -> str:
    return f" (error budget {level:.3g} of {total:.3g}, allocated on the selection sample)"


def _estimate(
    est: str, claim: Any, counts: list[Counts], lvl: float, orders: tuple[float, ...], claims_renyi: tuple[float, ...],
    choice: EventChoice | None, focus: float, impossible: Any, witness: str, n_used: int, elapsed: float, note: str,
    label: str, direction: str,
) -> AuditResult:
    conf = 1.0 - lvl
    if est == "epsilon":
        claimed = claim.epsilon
        if impossible is not None:
            return AuditResult(claimed, math.inf, math.inf, conf, VIOLATED, n_used, elapsed,
                               f"{witness} (seen under the first input; probability 0 under the second by the declared law)",
                               "exact support: declared log-pmf" + note, est, label, direction)
        b = bound_epsilon(counts, choice, lvl, focus)
        method = (f"epsilon: {b.events_tested} events chosen and ranked on a disjoint selection sample, Clopper-Pearson "
                  f"on the bound sample, weighted Bonferroni over {2 * b.events_tested} one-sided bounds" + note)
        a, n, bq, m = b.counts
        return AuditResult(claimed, b.lower, b.estimate, conf, _verdict(b.lower, claimed), n_used, elapsed,
                           f"{b.event} [{b.family}; {a}/{n} vs {bq}/{m}]", method, est, label, direction,
                           details={"counts": b.counts, "events_tested": b.events_tested, "event_share": b.share})
    if est == "delta":
        eps = claim.epsilon
        claimed = claim.delta if isinstance(claim, ApproxDP) else 0.0
        b = bound_delta(counts, choice, eps, lvl, focus)
        method = (f"delta at epsilon={eps:.6g} (hockey-stick): {b.events_tested} events chosen and ranked on a disjoint "
                  f"sample, Clopper-Pearson, weighted Bonferroni over {2 * b.events_tested} one-sided bounds" + note)
        a, n, bq, m = b.counts
        return AuditResult(claimed, b.lower, b.estimate, conf, _verdict(b.lower, claimed), n_used, elapsed,
                           f"{b.event} [{b.family}; {a}/{n} vs {bq}/{m}]", method, est, label, direction,
                           details={"counts": b.counts, "epsilon": eps, "events_tested": b.events_tested, "event_share": b.share})
    # renyi
    if impossible is not None:
        i = int(np.argmin(claims_renyi))
        return AuditResult(claims_renyi[i], math.inf, math.inf, conf, VIOLATED, n_used, elapsed,
                           f"{witness} (probability 0 under the second input by the declared law: D_alpha = inf for all alpha > 1)",
                           "exact support: declared log-pmf" + note, est, label, direction, orders[i])
    b = renyi_lower(counts, orders, claims_renyi, lvl)
    margins = [lo - cl for lo, cl in zip(b.lower, claims_renyi)]
    i = int(np.argmax(margins))
    method = (f"renyi: data processing over {b.bins} bins chosen on a disjoint sample, simultaneous Clopper-Pearson box "
              f"(Bonferroni over {2 * b.bins} intervals), certified minimum over the box" + note)
    details = {"orders": list(orders), "lower": list(b.lower), "claimed": list(claims_renyi), "estimate": list(b.estimate),
               "bin_counts": [list(b.p_counts), list(b.q_counts)]}
    verdict = VIOLATED if any(m > 0 for m in margins) else HOLDS
    return AuditResult(claims_renyi[i], b.lower[i], b.estimate[i], conf, verdict, n_used, elapsed, b.partition,
                       method, est, label, direction, orders[i], details)
