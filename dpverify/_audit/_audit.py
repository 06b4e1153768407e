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
2. draws the main sample in fixed chunks (seeded by position, see :mod:`._runner`), the first
   ``selection_fraction`` of each chunk forming the *selection* sample and the rest the *bound*
   sample, and reduces each chunk to histograms (on the executor, if any);
3. runs each estimator in each direction: events or partitions chosen on the selection sample,
   exact Clopper-Pearson bounds on the bound sample (see :mod:`._estimators`);
4. in sequential mode, repeats 2-3 on doubling sample sizes with the error budget of round j
   equal to alpha_j = alpha * 6 / (pi^2 j^2) (summing to alpha), stopping as soon as a
   violation is established or the budget of samples is spent; each reported bound is the best
   over rounds, valid simultaneously for all rounds;
5. where the exact law is declared (a ``log_pmf`` callable, or an ``IntegerPair`` on the pair),
   an output seen under D that the declared law of D' gives probability exactly 0 makes
   epsilon and every Renyi divergence infinite -- reported as ``math.inf``, not a large number.
   Without a declared law an output never seen under D' yields only a finite bound
   log(CP_lower P_D(E) / CP_upper P_D'(E)) (its point estimate is inf).

The family-wise error of a report is at most ``alpha``: it is split evenly (Bonferroni) over all
(pair, direction, estimator) results, and each result states its own confidence.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

from accounting._guarantees import RDP, ZCDP, ApproxDP, PureDP
from accounting._validation import AccountingError, check_positive_int, check_probability

from ._estimators import (
    DEFAULT_EVENTS,
    Counts,
    align,
    delta_lower,
    epsilon_lower,
    renyi_lower,
)
from ._learned import TRAIN_STREAM, ResidueView, fit_learned_views, sklearn_available
from ._neighbours import NeighbourPair, as_pairs
from ._search import search_pairs
from ._results import HOLDS, VIOLATED, AuditReport, AuditResult, _margin
from ._runner import PILOT_STREAM, ChunkTask, call_mode, chunk_plan, draw, map_tasks, resolve_executor
from ._stats import sequential_level
from ._views import MAX_COLUMN_VIEWS, Hist, _is_discrete, column_views, fit_views, merge_hist

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
            ``dask.distributed.Client``. Results do not depend on it.
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
            the lowest set bit. ``False`` audits the outputs as real numbers only.
        pair_search: ``None`` (audit every pair given), ``"pilot"`` (audit only the ``keep_pairs``
            most promising of the given pairs) or ``"statdp"`` (also StatDP's patterns, random
            sign patterns and hill climbing around the first pair, for query-vector inputs). The
            choice is made on search samples drawn from a separate seed stream and never reused,
            so alpha is spent only on the pairs kept; the search draws are counted in
            ``samples`` (see :mod:`._search`).
        search_budget: candidate pairs tried by the search (at most).
        search_samples: draws per input per candidate (default max(2,000, samples // 100)).
        keep_pairs: pairs audited at full size after the search.
        train_samples: draws per input for the classifiers (default: about :data:`TRAIN_BYTES`
            bytes of output, between 2**11 and 2**15 draws); counted in ``samples_used``.

    Returns:
        An :class:`AuditReport` with one :class:`AuditResult` per (pair, direction, estimator).
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
    if n_max < 100:
        raise AccountingError("samples", samples, "an integer >= 100")
    # floats from here on: a Fraction alpha would reach scipy's ufuncs, which refuse it
    alpha = float(check_probability("alpha", alpha))
    selection_fraction = float(check_probability("selection_fraction", selection_fraction))
    check_positive_int("max_events", max_events)
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

        def score(candidate: NeighbourPair, index: int) -> float:
            sub_seed = int.from_bytes(np.random.SeedSequence(int(seed), spawn_key=(SEARCH_STREAM, index))
                                      .generate_state(2, np.uint32).tobytes(), "little")
            rep = audit(mechanism, candidate, claim, samples=n_search, alpha=alpha, estimators=chosen, orders=order_list,
                        directions=directions, executor="serial", seed=sub_seed, selection_fraction=selection_fraction,
                        max_events=max_events, seed_type=seed_type, learned=False, float_bits=float_bits)
            costs.append(max(r.samples for r in rep.results))
            # rank by the best lower bound's margin; among equal margins (typically all zero bounds
            # on a small search sample) by the best point estimate over the claim
            return (max(_margin(r) for r in rep.results),
                    max((r.estimate - r.claimed for r in rep.results if not math.isnan(r.estimate)), default=-math.inf))

        pair_list, search_info = search_pairs(score, pair_list, pair_search, search_budget, keep_pairs, int(seed))
        search_cost = sum(costs)
    pilot_n = min(2**14, max(512, n_max // 64))

    n_results = len(pair_list) * len(dirs) * len(chosen)
    level = alpha / n_results
    pool, owned = resolve_executor(executor, 2 * n_max * len(pair_list), (mechanism, pair_list))
    results: list[AuditResult] = []
    try:
        for pi, pair in enumerate(pair_list):
            results.extend(
                _audit_pair(mechanism, pair, pi, claim, chosen, dirs, order_list, claims_renyi, level,
                            sequential, targets, chunk_size, n0, pilot_n, mode, seed_type, int(seed),
                            selection_fraction, max_events, log_pmf, pool, use_learned, train_samples, float_bits)
            )
    finally:
        if owned and pool is not None:
            pool.shutdown()
    if search_info is not None:
        note = (f"; pair chosen by a search over {search_info['candidates']} candidates on separate samples "
                f"({search_cost} draws per input, counted in samples; no alpha spent)")
        results = [replace(r, samples=r.samples + search_cost, method=r.method + note,
                           details={**r.details, "pair_search": search_info}) for r in results]
    return AuditReport(tuple(results), claim, float(alpha), time.perf_counter() - started)


def _audit_pair(
    mechanism: Any, pair: NeighbourPair, pi: int, claim: Any, chosen: tuple[str, ...], dirs: tuple[int, ...],
    orders: tuple[float, ...], claims_renyi: tuple[float, ...], level: float, sequential: bool,
    targets: list[int], chunk_size: int | None, n0: int, pilot_n: int, mode: str, seed_type: str, seed: int,
    fraction: float, max_events: int, log_pmf: Any, pool: Any, use_learned: bool, train_samples: int | None,
    float_bits: bool,
) -> list[AuditResult]:
    started = time.perf_counter()
    inputs = (pair.d, pair.d_prime)
    pilots = [draw(mechanism, inputs[s], np.random.SeedSequence(seed, spawn_key=(pi, s, PILOT_STREAM)), pilot_n, mode, seed_type)
              for s in (0, 1)]
    views = fit_views(pilots[0], pilots[1])
    row_bytes = max(8, pilots[0].nbytes // max(len(pilots[0]), 1))
    plan = chunk_plan(targets, chunk_size if chunk_size is not None else default_chunk_size(n0, row_bytes))
    train_n = 0
    pooled = np.concatenate(pilots, axis=0)
    is_float = pooled.dtype.kind == "f"
    if is_float and float_bits:  # exact views of the lowest set bit of each float coordinate (no training needed)
        cols = [None] if pooled.ndim == 1 else [j for j in range(min(pooled.shape[1], MAX_RESIDUE_VIEWS))
                                                 if not _is_discrete(pooled[:, j])]
        views = views + tuple(ResidueView(j) for j in cols)
    if use_learned and (is_float or pooled.ndim == 2):
        train_n = train_samples if train_samples is not None else default_train_size(row_bytes)
        trains = [draw(mechanism, inputs[s], np.random.SeedSequence(seed, spawn_key=(pi, s, TRAIN_STREAM)), train_n, mode,
                       seed_type) for s in (0, 1)]
        learned_views, screened = fit_learned_views(
            trains[0], trains[1], float_bits=float_bits, seed=int(np.random.SeedSequence(seed, spawn_key=(pi, TRAIN_STREAM)).generate_state(1)[0]))
        views = views + learned_views + tuple(column_views(pooled, [j for j in screened if j >= MAX_COLUMN_VIEWS]))
    acc: list[list[list[Hist | None]]] = [[[None, None, None] for _ in views] for _ in (0, 1)]  # [side][view][part]
    tracks = {(d, e): _Track() for d in dirs for e in chosen}
    done = 0
    stop = False
    for rnd, target in enumerate(targets, start=1):
        chunks = [(k, a, b) for k, (a, b) in enumerate(plan) if done <= a < target]
        tasks = [
            ChunkTask(mechanism, inputs[s], seed, (pi, s, k), b - a, int((b - a) * fraction), views, mode, seed_type)
            for s in (0, 1) for (k, a, b) in chunks
        ]
        outputs = map_tasks(pool, tasks)
        for task, out in zip(tasks, outputs):
            side = task.spawn_key[1]
            for vi, parts in enumerate(out):
                for part, h in enumerate(parts):
                    acc[side][vi][part] = merge_hist(acc[side][vi][part], h)
        done = target
        counts = [align(v, [acc[side][vi][part] for part in (0, 1, 2) for side in (0, 1)]) for vi, v in enumerate(views)]
        lvl = sequential_level(level, rnd) if sequential else level
        n_used = pilot_n + train_n + target
        elapsed = time.perf_counter() - started
        round_note = f"; sequential round {rnd} (error budget {lvl:.3g})" if sequential else ""
        for d in dirs:
            cd = counts if d == 0 else [c.swapped() for c in counts]
            impossible = None
            if log_pmf is not None or pair.law is not None:
                for c in cd:
                    impossible = _declared_impossible(pair, d, log_pmf, c)
                    if impossible is not None:
                        witness = c.view.describe(c.keys, np.all(c.keys == impossible, axis=-1) if c.keys.ndim == 2 else c.keys == impossible)
                        break
            for est in chosen:
                r = _estimate(est, claim, cd, lvl, orders, claims_renyi, max_events, impossible,
                              witness if impossible is not None else "", n_used, elapsed, round_note, pair.label, DIRECTIONS[d])
                tracks[(d, est)].offer(r)
                tracks[(d, est)].rounds.append({"round": rnd, "samples": n_used, "lower_bound": r.lower_bound})
        if sequential and any(t.result is not None and t.result.violated for t in tracks.values()):
            stop = True
        if stop:
            break
    elapsed = time.perf_counter() - started
    out = []
    for key, t in tracks.items():
        r = t.result
        if r is None:  # pragma: no cover - every track gets a result in round 1
            continue
        details = dict(r.details)
        if sequential:
            details["rounds"] = t.rounds
        out.append(AuditResult(r.claimed, r.lower_bound, r.estimate, r.confidence, r.verdict, pilot_n + train_n + done,
                               elapsed, r.event, r.method, r.estimator, r.pair, r.direction, r.order, details))
    return out


def _estimate(
    est: str, claim: Any, counts: list[Counts], lvl: float, orders: tuple[float, ...], claims_renyi: tuple[float, ...],
    max_events: int, impossible: Any, witness: str, n_used: int, elapsed: float, note: str, label: str, direction: str,
) -> AuditResult:
    conf = 1.0 - lvl
    if est == "epsilon":
        claimed = claim.epsilon
        if impossible is not None:
            return AuditResult(claimed, math.inf, math.inf, conf, VIOLATED, n_used, elapsed,
                               f"{witness} (seen under the first input; probability 0 under the second by the declared law)",
                               "exact support: declared log-pmf" + note, est, label, direction)
        b = epsilon_lower(counts, lvl, max_events)
        method = (f"epsilon: {b.events_tested} events chosen on a disjoint selection sample, Clopper-Pearson on the "
                  f"bound sample, Bonferroni over {2 * b.events_tested} one-sided bounds" + note)
        a, n, bq, m = b.counts
        return AuditResult(claimed, b.lower, b.estimate, conf, _verdict(b.lower, claimed), n_used, elapsed,
                           f"{b.event} [{b.family}; {a}/{n} vs {bq}/{m}]", method, est, label, direction,
                           details={"counts": b.counts, "events_tested": b.events_tested})
    if est == "delta":
        eps = claim.epsilon
        claimed = claim.delta if isinstance(claim, ApproxDP) else 0.0
        b = delta_lower(counts, eps, lvl, max_events)
        method = (f"delta at epsilon={eps:.6g} (hockey-stick): {b.events_tested} events chosen on a disjoint sample, "
                  f"Clopper-Pearson, Bonferroni over {2 * b.events_tested} one-sided bounds" + note)
        a, n, bq, m = b.counts
        return AuditResult(claimed, b.lower, b.estimate, conf, _verdict(b.lower, claimed), n_used, elapsed,
                           f"{b.event} [{b.family}; {a}/{n} vs {bq}/{m}]", method, est, label, direction,
                           details={"counts": b.counts, "epsilon": eps, "events_tested": b.events_tested})
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
