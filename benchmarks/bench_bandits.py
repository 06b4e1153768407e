"""Speed of the bandit runners (benchmarks/bandits.md). Run: python benchmarks/bench_bandits.py

Warm timings (JIT compiled and caches loaded by a first, small run, whose time is reported
separately). One core: the process pins nothing, run it on an idle machine. Each number is the
median of ``--repeat`` runs. The ledger's share is measured by timing ``Ledger.charge``.
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
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--horizon", type=int, default=10**7)
    args = parser.parse_args()

    import accounting as acc
    from dpverify._bandits import RunConfig, run_seed
    from dpverify._bandits._ucb import UCB_ALGORITHMS

    t0 = time.perf_counter()
    run_seed(RunConfig("dist-dp-se", "easy", 10_000, epsilon=0.5), 0)
    run_seed(RunConfig("dist-dp-se", "easy", 10_000, epsilon=0.5, path="aggregate"), 0)
    for alg in UCB_ALGORITHMS:
        run_seed(RunConfig(alg, "ren-bernoulli", 10_000, epsilon=2.0), 0)
    print(f"warm-up (JIT compile or cache load, imports): {time.perf_counter() - t0:.2f} s")

    # share of Ledger.charge
    spent = {"t": 0.0}
    original = acc.Ledger.charge

    def timed_charge(self, *a, **k):
        t = time.perf_counter()
        try:
            return original(self, *a, **k)
        finally:
            spent["t"] += time.perf_counter() - t

    for path in ("per-user", "aggregate"):
        cfg = RunConfig("dist-dp-se", "easy", args.horizon, epsilon=0.5, path=path)
        total = _timed(lambda: run_seed(cfg, 0), args.repeat)
        acc.Ledger.charge = timed_charge
        spent["t"] = 0.0
        run_seed(cfg, 0)
        acc.Ledger.charge = original
        print(f"dist-dp-se K=10 T={args.horizon:.0e} {path:9s}: {total:.3f} s (Ledger.charge {spent['t']:.3f} s of one run)")
    for alg in UCB_ALGORITHMS:
        cfg = RunConfig(alg, "ren-bernoulli", 10**6, epsilon=2.0)
        print(f"{alg:11s} K=20 T=1e6: {_timed(lambda: run_seed(cfg, 0), args.repeat):.3f} s")


if __name__ == "__main__":
    main()
