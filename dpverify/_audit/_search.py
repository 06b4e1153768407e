"""Pair search: choose the neighbouring pairs to audit on a search sample that is never reused.

For mechanisms over query vectors the pairs that show a mechanism's privacy loss are not known in
advance. StatDP (Ding et al., CCS 2018) tries a fixed list of patterns; DP-Auditorium (Kong et
al., 2024) searches the input space on cheap pilot estimates. :func:`search_pairs` does both,
within a bound on the number of candidates:

1. candidates: the user's pairs; with ``"statdp"`` also StatDP's patterns around the first
   pair's length and sensitivity (its l_inf distance), and random sign patterns d' = d + s u,
   u in {-1, 0, 1}^n, around the first pair's d;
2. the candidates are scored by one small audit (plain views, a sample of ``search_samples``
   draws per input, the error budget split evenly so that scores compare) on its own seed
   stream; candidates that share an input (StatDP's patterns all start from d) share its draws;
3. hill climbing: the best candidate's difference vector is mutated one coordinate at a time
   (a step kept if its score improves) until the candidate budget is spent;
4. the ``keep`` best candidates are returned and audited at full size.

Validity: every draw of the search comes from a SeedSequence rooted at a different entropy than
the final audit's, so the chosen pairs are independent of the samples their bounds are computed
on: conditional on the choice, each final bound holds at its stated level, and the family-wise
error of the report is spent only on the pairs kept (no alpha is spent on the search). Its cost
is in samples, which the report counts.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from accounting import AccountingError

from ._neighbours import NeighbourPair, statdp_pairs

__all__ = ["SEARCH_MODES", "search_pairs"]

SEARCH_MODES = ("pilot", "statdp")


def _vector(x: Any) -> np.ndarray | None:
    arr = np.asarray(x)
    if arr.ndim == 1 and arr.size >= 1 and arr.dtype.kind in "biuf":
        return arr.astype(np.float64)
    return None


def _candidates(pairs: tuple[NeighbourPair, ...], mode: str, rng: np.random.Generator, randoms: int) -> list[NeighbourPair]:
    out = list(pairs)
    if mode != "statdp":
        return out
    d = _vector(pairs[0].d)
    dp = _vector(pairs[0].d_prime)
    if d is None or dp is None or d.shape != dp.shape:
        return out
    s = float(np.max(np.abs(d - dp)))
    if s <= 0:
        return out
    out.extend(statdp_pairs(d.size, s))
    for r in range(randoms):
        u = rng.integers(-1, 2, d.size)
        if not u.any():
            u[rng.integers(d.size)] = 1
        out.append(NeighbourPair(d.copy(), d + s * u, f"random sign pattern #{r}"))
    return out


def search_pairs(
    score: Callable[[list[NeighbourPair], int], list[tuple[float, float]]], pairs: tuple[NeighbourPair, ...], mode: str,
    budget: int, keep: int, seed: int,
) -> tuple[tuple[NeighbourPair, ...], dict[str, Any]]:
    """The ``keep`` best of at most ``budget`` candidate pairs by ``score(pairs, index)``.

    ``score`` runs one small audit of a list of candidates (``index`` numbers the call, so that
    each gets its own seed stream; candidates that share an input share its draws) and returns,
    per candidate, (margin, estimate margin): the largest lower bound minus the claim, and the
    largest point estimate minus the claim (the tie-break). The fixed candidates are scored in
    one call, each hill-climbing step in its own.
    """
    if mode not in SEARCH_MODES:
        raise AccountingError("pair_search", mode, f"None or one of {SEARCH_MODES}")
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2**31 - 3,)))
    pool = _candidates(pairs, mode, rng, randoms=max(0, min(4, budget // 4)))
    scored: list[tuple[tuple[float, float], int, NeighbourPair]] = []
    seen: set[bytes] = set()
    calls = 0

    def run(candidates: list[NeighbourPair]) -> None:
        nonlocal calls
        fresh = []
        for p in candidates:
            key = repr((np.asarray(p.d).tobytes(), np.asarray(p.d_prime).tobytes())).encode()
            if key in seen or len(scored) + len(fresh) >= budget:
                continue
            seen.add(key)
            fresh.append(p)
        if fresh:
            for p, sc in zip(fresh, score(fresh, calls)):
                scored.append((sc, len(scored), p))
            calls += 1

    run(pool)
    # hill climbing on the best vector candidate: move one coordinate of d' - d at a time
    if mode == "statdp" and scored:
        best = max(scored, key=lambda t: (t[0], -t[1]))
        d, dp = _vector(best[2].d), _vector(best[2].d_prime)
        if d is not None and dp is not None and d.shape == dp.shape and np.any(d != dp):
            s = float(np.max(np.abs(d - dp)))
            current = best
            while len(scored) < budget:
                j = int(rng.integers(d.size))
                step = dp.copy()
                choices = [v for v in (d[j] - s, d[j], d[j] + s) if v != dp[j]]
                step[j] = choices[int(rng.integers(len(choices)))]
                if np.array_equal(step, d):
                    continue
                before = len(scored)
                run([NeighbourPair(d.copy(), step, f"hill-climb #{len(scored)} from {current[2].label}")])
                if len(scored) == before:
                    continue
                if scored[-1][0] > current[0]:
                    current = scored[-1]
                    dp = step
    def order(t: tuple[tuple[float, float], int, NeighbourPair]) -> tuple[float, float, int]:
        margin, estimate = t[0]
        return (-margin if not math.isnan(margin) else math.inf, -estimate if not math.isnan(estimate) else math.inf, t[1])

    ranked = sorted(scored, key=order)
    chosen = tuple(p for _, _, p in ranked[:keep])
    info = {"candidates": len(scored), "scores": [(p.label, m[0], m[1]) for m, _, p in ranked]}
    return chosen, info
