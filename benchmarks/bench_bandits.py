"""Speed of the bandit runners (benchmarks/bandits.md). Run: taskset -c 1 python benchmarks/bench_bandits.py

Warm timings: a first small run of every runner (JIT compile or numba-cache load, imports) is
excluded and reported on its own line; so is the first full-size run of each configuration in the
process, which computes the exact per-batch parameters and guarantees (memoised afterwards, as in a
sweep over seeds). Each number is the median of ``--repeat`` runs of seed 0. The same-run baseline
is numpy drawing T uniforms (the least any per-user simulation of T users must do); the ledger's
share is measured by timing ``Ledger.charge`` in one extra run.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _timed(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), min(times), max(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--horizon", type=int, default=10**7)
    args = parser.parse_args()
    T = args.horizon

    import accounting as acc
    from dpverify._bandits import RunConfig, run_seed
    from dpverify._bandits._ucb import UCB_ALGORITHMS

    t0 = time.perf_counter()
    for path in ("per-user", "aggregate"):
        run_seed(RunConfig("dist-dp-se", "easy", 10_000, epsilon=0.5, path=path), 0)
    run_seed(RunConfig("dist-rdp-se", "hard", 10_000, epsilon=0.1, path="aggregate"), 0)
    for alg in UCB_ALGORITHMS:
        run_seed(RunConfig(alg, "ren-bernoulli", 10_000, epsilon=2.0), 0)
    print(f"warm-up (imports, JIT compile or cache load): {time.perf_counter() - t0:.2f} s")

    rng = np.random.default_rng(0)
    base, _, _ = _timed(lambda: rng.random(T), args.repeat)
    print(f"baseline: numpy Generator.random({T:.0e}): median {base * 1e3:.1f} ms")

    spent = {"t": 0.0}
    original = acc.Ledger.charge

    def timed_charge(self, *a, **k):
        t = time.perf_counter()
        try:
            return original(self, *a, **k)
        finally:
            spent["t"] += time.perf_counter() - t

    cases = [
        ("dist-dp-se", "easy", 0.5, "per-user"),
        ("dist-dp-se", "easy", 0.5, "aggregate"),
        ("dist-rdp-se", "hard", 0.1, "aggregate"),
    ]
    for alg, inst, eps, path in cases:
        cfg = RunConfig(alg, inst, T, epsilon=eps, path=path)
        t = time.perf_counter()
        run_seed(cfg, 0)
        first = time.perf_counter() - t
        med, lo, hi = _timed(lambda: run_seed(cfg, 0), args.repeat)
        acc.Ledger.charge = timed_charge
        spent["t"] = 0.0
        run_seed(cfg, 0)
        acc.Ledger.charge = original
        print(
            f"{alg} {inst} eps={eps} K=10 T={T:.0e} {path:9s}: median {med * 1e3:.2f} ms (min {lo * 1e3:.2f}, max {hi * 1e3:.2f}; "
            f"{med / base:.2f}x baseline); first run in the process {first:.2f} s; Ledger.charge {spent['t'] * 1e3:.2f} ms of one run"
        )
    cfg = RunConfig("dist-dp-se", "easy", T, epsilon=0.5, path="aggregate")
    per_seed = []
    for r in range(1, 11):
        run_seed(cfg, r)
        per_seed.append(_timed(lambda: run_seed(cfg, r), 3)[0])
    print(f"dist-dp-se aggregate, seeds 1..10 (each warm, median of 3): {min(per_seed) * 1e3:.2f} .. {max(per_seed) * 1e3:.2f} ms, median {statistics.median(per_seed) * 1e3:.2f} ms")
    for alg in UCB_ALGORITHMS:
        cfg = RunConfig(alg, "ren-bernoulli", 10**6, epsilon=2.0)
        med, lo, hi = _timed(lambda: run_seed(cfg, 0), args.repeat)
        print(f"{alg:11s} K=20 T=1e6: median {med:.3f} s (min {lo:.3f}, max {hi:.3f})")


if __name__ == "__main__":
    main()
