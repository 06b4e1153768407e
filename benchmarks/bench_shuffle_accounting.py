"""Benchmark of amplification by shuffling (accounting._amplification._shuffling).

Run:  python benchmarks/bench_shuffle_accounting.py [--runs 5]     (prints a markdown table)

Cases (each timed cold: the module's memo caches are cleared before every run; median of
``--runs`` runs, wall and CPU):
- one round, n = 1e4, eps0 = 1, delta = 1e-6: the certified FMT21 clone route, against a float
  re-implementation (written here from the paper's App. E description) of FMT's numerical
  procedure (c grouped in steps of 100, the worse end of each group, 10 bisection steps), same run;
- 1,000 rounds of the same randomizer: every route; the same-run baseline is the 1,000-fold
  Skellam (mu = 100) PLD route of the same engine (benchmarks/pld.md), so the ratio factors out
  the machine's load;
- the same for binary randomized response (exact shuffled count).
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from scipy import stats

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import accounting as acc  # noqa: E402
from accounting._amplification import _shuffling as _shuffle  # noqa: E402
from accounting._mechanisms._skellam import SkellamPair  # noqa: E402
from accounting._privacy_loss._pld import PrivacyLossDistribution  # noqa: E402
from benchmarks._common import machine, median_seconds  # noqa: E402

EPS0, N, DELTA, K = 1.0, 10_000, 1e-6, 1000


def _clear() -> None:
    for fn in (_shuffle._clone, _shuffle._count, _shuffle._rr_worst, _shuffle._clone_pld, _shuffle._count_pld):
        fn.cache_clear()


def fmt_float_procedure(n: int, eps0: float, delta: float, p: float, step: int = 100, iterations: int = 10) -> float:
    """FMT's numerical upper bound in floats: delta(eps) <= sum over groups of c (width ``step``) of
    the group's Bin(n-1, p) mass times delta_c at the group's worse end; bisection on eps."""
    q = math.exp(eps0) / (math.exp(eps0) + 1)
    r = 1 - q

    def delta_c(c: int, eps: float) -> float:
        E = math.exp(eps)
        beta = (E * q - r) / ((q - r) * (1 + E))
        best = 0.0
        for a in range(int((c + 1) * beta), int((c + 1) * beta) + 3):
            best = max(best, (q - E * r) * stats.binom.pmf(a - 1, c, 0.5) - (E - 1) * stats.binom.sf(a - 1, c, 0.5))
        return best

    def delta_of(eps: float) -> float:
        total = 0.0
        for lo in range(0, n, step):
            hi = min(lo + step - 1, n - 1)
            mass = stats.binom.cdf(hi, n - 1, p) - stats.binom.cdf(lo - 1, n - 1, p)
            if mass < 1e-300:
                continue
            total += mass * max(delta_c(lo, eps), delta_c(hi, eps))
        return total

    closed = acc.fmt21_closed_form(eps0, n, delta)
    lo, hi = 0.0, closed if closed is not None else eps0
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if delta_of(mid) < delta:
            hi = mid
        else:
            lo = mid
    return hi


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    runs = args.runs
    print(f"machine: {machine()}\n")

    out = {}

    def one_round():
        _clear()
        out["one"] = acc.clone_epsilon(EPS0, N, DELTA, "fmt21")

    def reference():
        out["ref"] = fmt_float_procedure(N, EPS0, DELTA, math.exp(-EPS0))

    def thousand_ldp():
        _clear()
        out["ldp"] = acc.epsilon_routes(acc.ShuffledLDP(EPS0, N), DELTA, compose=K)

    def thousand_ldp_declared():
        _clear()
        out["ldp23"] = acc.epsilon_routes(acc.ShuffledLDP(EPS0, N, stronger_clone=True), DELTA, compose=K)

    def thousand_rr():
        _clear()
        out["rr"] = acc.epsilon_routes(acc.ShuffledRandomizedResponse(EPS0, N), DELTA, compose=K)

    def skellam():
        pld = PrivacyLossDistribution.from_pair(SkellamPair(100, 1), discretisation=2e-5, lower_bound=False)
        out["skellam"] = pld.self_compose(K).epsilon(1e-5).epsilon

    rows = []
    for name, fn in (
        ("one round, certified FMT21 clone (ours)", one_round),
        ("one round, FMT numerical procedure in floats (step 100, 10 bisections)", reference),
        (f"{K} rounds, ShuffledLDP, every route (ours)", thousand_ldp),
        (f"{K} rounds, ShuffledLDP with FMT23 declared, every route (ours)", thousand_ldp_declared),
        (f"{K} rounds, ShuffledRandomizedResponse, every route (ours)", thousand_rr),
        (f"baseline: {K}-fold Skellam(mu=100) PLD, h = 2e-5", skellam),
    ):
        fn()  # warm imports, numba/scipy first calls
        wall, cpu = median_seconds(fn, runs)
        rows.append((name, wall, cpu))
    base = rows[-1][1]
    print(f"n = {N}, eps0 = {EPS0}, delta = {DELTA}; median of {runs} runs, cold caches\n")
    print("| case | wall (s) | CPU (s) | / baseline wall |")
    print("|---|---|---|---|")
    for name, wall, cpu in rows:
        print(f"| {name} | {wall:.3f} | {cpu:.3f} | {wall / base:.2f} |")
    print()
    print(f"one round: ours {out['one']:.6f} (certified), FMT float procedure {out['ref']:.6f}")
    for key in ("ldp", "ldp23", "rr"):
        report = out[key]
        print(f"\n{K} rounds, {key}: smallest certified {report.epsilon:.6f} via {report.route}")
        for r in sorted(report.alternatives, key=lambda r: r.epsilon):
            print(f"- {r.route}: {r.epsilon:.6f}")
    print(f"\nbaseline Skellam eps(1e-5) = {out['skellam']:.6f}")


if __name__ == "__main__":
    main()
