"""Drawing a black-box mechanism in reproducible chunks, locally or on an executor.

Reproducibility: part p (0 selection, 1 bound) of chunk k of side s (0 for D, 1 for D') of
pair i is drawn from ``SeedSequence(seed, spawn_key=(i, s, k, p))`` -- the same stream
``SeedSequence(seed).spawn`` would hand to that position -- and the chunk boundaries depend only on the sample sizes, never
on the number of workers. Histograms are summed (an order-free operation), so an audit gives
identical numbers serially, on a process pool and on a Dask cluster.

Reduction: a chunk of vector outputs that repeat (flags, answers) is reduced to its distinct rows
and their multiplicities first, and every view counts those with weights (each view is a function
of the row, and the score kernels make that exact: see :mod:`._score_kernels`); the learned views
of one fit are scored together, their features computed once per batch.

The mechanism is called as ``mechanism(data, rng, size)`` (three or more parameters) and must
return ``size`` outputs, or as ``mechanism(data, rng)`` (two parameters) returning a batch of
any length, called again until ``size`` outputs are collected. ``rng`` is a
``numpy.random.Generator`` (which numba kernels accept), or with ``seed_type="int"`` an integer
seed in [0, 2**32) derived from the chunk's SeedSequence (for kernels that call
``np.random.seed``). Each output row must be an independent run of the mechanism.
"""

from __future__ import annotations

import inspect
import math
import os
import pickle
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from accounting import AccountingError

from ._learned import LearnedView, shared_values
from ._views import Hist, distinct_rows, to_table

__all__ = ["ChunkTask", "call_mode", "chunk_plan", "draw", "run_chunk", "resolve_executor", "map_tasks"]

PILOT_STREAM = 2**31 - 1


def call_mode(mechanism: Callable[..., Any]) -> str:
    """``"sized"`` for mechanism(data, rng, size), ``"batch"`` for mechanism(data, rng)."""
    if not callable(mechanism):
        raise AccountingError("mechanism", mechanism, "a callable mechanism(data, rng, size) or mechanism(data, rng)")
    fn = getattr(mechanism, "py_func", mechanism)  # numba dispatchers
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return "sized"
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in params) or len(positional) >= 3:
        return "sized"
    if len(positional) == 2:
        return "batch"
    raise AccountingError("mechanism", mechanism, "a callable taking (data, rng, size) or (data, rng)")


def _seed_arg(seq: np.random.SeedSequence, seed_type: str) -> Any:
    if seed_type == "int":
        return int(seq.generate_state(1, np.uint32)[0])
    return np.random.default_rng(seq)


def draw(mechanism: Callable[..., Any], data: Any, seq: np.random.SeedSequence, size: int, mode: str, seed_type: str) -> np.ndarray:
    """``size`` outputs of the mechanism on ``data`` from the stream ``seq``, as a table."""
    if mode == "sized":
        table = to_table(mechanism(data, _seed_arg(seq, seed_type), size))
        if table.shape[0] != size:
            raise AccountingError("mechanism output", f"{table.shape[0]} outputs", f"{size} outputs (the size it was asked for)")
        return table
    parts = []
    total = 0
    rng = np.random.default_rng(seq) if seed_type == "generator" else None
    call = 0
    while total < size:
        if rng is not None:
            arg: Any = rng
        else:
            arg = _seed_arg(np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, call)), "int")
        table = to_table(mechanism(data, arg))
        if table.shape[0] == 0:
            raise AccountingError("mechanism output", "an empty batch", "at least one output per call")
        parts.append(table)
        total += table.shape[0]
        call += 1
    return np.concatenate(parts, axis=0)[:size]


@dataclass(frozen=True)
class ChunkTask:
    """One chunk: draw ``size`` outputs; the first ``selection`` go to the selection sample."""

    mechanism: Any
    data: Any
    entropy: int
    spawn_key: tuple[int, ...]
    size: int
    selection: int
    views: tuple[Any, ...]
    mode: str
    seed_type: str


def run_chunk(task: ChunkTask) -> list[tuple[Hist | None, Hist | None, Hist | None]]:
    """Draw one chunk and return, per view, the histograms of its three disjoint parts (None for an empty part).

    The first ``selection`` outputs form the selection sample, split in two halves: the
    *ranking* half (candidate events are built and ranked on it) and the *validation* half
    (the best-ranked candidates are re-scored on it, which removes most of the winner's curse
    of ranking many noisy events). The rest is the bound sample.
    """
    seq = np.random.SeedSequence(task.entropy, spawn_key=task.spawn_key)
    table = draw(task.mechanism, task.data, seq, task.size, task.mode, task.seed_type)
    half = task.selection // 2
    bounds = ((0, half), (half, task.selection), (task.selection, task.size))
    distinct = distinct_rows(table)
    if distinct is None:
        parts = [(table[a:b], None) for a, b in bounds]
    else:
        # vector outputs with few distinct rows (flags, answers): every view is a function of the
        # row, so each distinct row is scored once and counted with its multiplicity
        uniq, inverse, _ = distinct
        parts = []
        for a, b in bounds:
            weight = np.bincount(inverse[a:b], minlength=len(uniq))
            seen = np.flatnonzero(weight)
            parts.append((uniq[seen], weight[seen]))
    views = task.views
    # learned views fitted together share one feature map: score them together, features once
    groups: dict[int, list[int]] = {}
    for i, v in enumerate(views):
        if isinstance(v, LearnedView):
            groups.setdefault(id(v.features), []).append(i)
    per_part = []
    for rows, weights in parts:
        hists: list[Any] = [None] * len(views)
        if rows.shape[0] == 0:  # a part this chunk does not have (see _PairRun.tasks): no histogram
            per_part.append(hists)
            continue
        for members in groups.values():
            scores = shared_values([views[i] for i in members], rows)
            for i, values in zip(members, scores):
                hists[i] = views[i].count_values(values, weights)
        per_part.append([h if h is not None else v.count(rows, weights) for v, h in zip(views, hists)])
    return [tuple(part[i] for part in per_part) for i in range(len(views))]


def chunk_plan(targets: Sequence[int], chunk_size: int) -> list[tuple[int, int]]:
    """Chunks (start, stop) covering [0, targets[-1]) with a boundary at every target."""
    cuts = set(targets)
    last = targets[-1]
    cuts.update(range(chunk_size, last, chunk_size))
    cuts.add(0)
    points = sorted(c for c in cuts if 0 <= c <= last)
    out = []
    for a, b in zip(points, points[1:]):
        # re-cut long stretches so no chunk exceeds chunk_size
        n = math.ceil((b - a) / chunk_size)
        for j in range(n):
            out.append((a + (b - a) * j // n, a + (b - a) * (j + 1) // n))
    return out


def _picklable(obj: Any) -> bool:
    try:
        pickle.dumps(obj)
    except Exception:  # lambdas, closures, local functions
        return False
    return True


def resolve_executor(executor: Any, total_draws: int, payload: Any = None) -> tuple[Executor | None, bool]:
    """(executor or None for in-process, whether we own it and must shut it down).

    ``"auto"`` uses a local process pool for audits of at least 2e8 draws when there is more
    than one CPU and ``payload`` (the mechanism and its inputs) can be pickled; otherwise it runs
    in-process. The choice never changes the numbers.
    """
    if executor is None or executor == "serial":
        return None, False
    if executor == "auto":
        cpus = os.cpu_count() or 1
        if cpus > 1 and total_draws >= 2 * 10**8 and _picklable(payload):
            return ProcessPoolExecutor(max_workers=cpus), True
        return None, False
    if executor == "process":
        return ProcessPoolExecutor(max_workers=os.cpu_count() or 1), True
    if hasattr(executor, "get_executor") and not isinstance(executor, Executor):  # dask.distributed.Client
        return executor.get_executor(), False
    if isinstance(executor, Executor) or (hasattr(executor, "submit") and hasattr(executor, "map")):
        return executor, False
    raise AccountingError("executor", executor, 'a concurrent.futures.Executor, a dask.distributed.Client, "auto", "process" or "serial"')


def map_tasks(executor: Executor | None, tasks: list[ChunkTask]) -> list[list[tuple[Hist, Hist, Hist]]]:
    if executor is None:
        return [run_chunk(t) for t in tasks]
    futures = [executor.submit(run_chunk, t) for t in tasks]
    return [f.result() for f in futures]
