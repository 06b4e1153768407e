"""Per-run time of each float-safe privatizer against its idealised (float-noise) version, same run.

Run: ``nice python benchmarks/bench_float_safe.py [--repeat 5] [--horizon 1000000]``
(``benchmarks/float_safe.md`` holds the tables). For every algorithm with a float-noise privatizer
(LDP-UCB-L, LDP-UCB-LS: the CTL curator; DP-SE: the central Laplace) the script times whole runs
(``run_seed``: instance, privatizer, learner, ledger) of the float-safe default and of
``noise="idealised"``, alternating the two in each round so both see the same machine load, and
reports the median of ``--repeat`` rounds of each and their ratio. Every round uses a different seed
index (the same one for both versions): a round is one run of each, as a user would run them.

Excluded from the timed region, and reported: the warm-up (imports, numba cache load or JIT
compile of both versions' kernels, and the exact per-configuration accounting, memoised after the
first run). Also reported: the samplers alone (one call drawing 10^6 values; exact discrete
Laplace at the curator's scale against numpy's float Laplace), the same rounds' CPU time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))  # the checkout, not an installed copy

CASES = (
    ("ldp-ucb-l", "ren-bernoulli", 1.0),
    ("ldp-ucb-l", "ren-mixed", 1.0),
    ("ldp-ucb-ls", "ren-bernoulli", 1.0),
    ("dp-se", "easy", 0.5),
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--horizon", type=int, default=10**6)
    args = parser.parse_args()

    from dpverify._bandits import RunConfig, run_seed

    t0 = time.perf_counter()
    for algorithm, instance, eps in CASES:
        for noise in ("float-safe", "idealised"):
            run_seed(RunConfig(algorithm, instance, 10_000, epsilon=eps, noise=noise), 0)
            run_seed(RunConfig(algorithm, instance, args.horizon, epsilon=eps, noise=noise), 0)
    print(f"warm-up (imports, numba cache load or compile, first full-size run of each configuration): {time.perf_counter() - t0:.2f} s")

    from dpverify._executed import _inversion, _kernels

    lap_tables = _inversion.laplace_tables(1, 2**16)

    rng = np.random.default_rng(0)
    out = np.empty(10**6, dtype=np.int64)
    samplers = {
        "exact Lap_Z(65536), CKS Alg. 2 (_samplers.discrete_laplace)": lambda: _kernels._fill_discrete_laplace(rng, 1, 2**16, out),
        "exact Lap_Z(65536), exact inversion (_inversion, the curator's)": lambda: _kernels._fill_discrete_laplace_inv(rng, lap_tables, out),
        "numpy float Laplace(1)": lambda: rng.laplace(0.0, 1.0, size=10**6),
    }
    rows: dict[str, list[float]] = {name: [] for name in samplers}
    for draw in samplers.values():
        draw()
    for _ in range(args.repeat):
        for name, draw in samplers.items():
            t = time.perf_counter()
            draw()
            rows[name].append(time.perf_counter() - t)
    base = statistics.median(rows["numpy float Laplace(1)"])
    for name, times in rows.items():
        print(f"sampler {name}, 1e6 draws: median {statistics.median(times) * 1e3:.1f} ms ({statistics.median(times) / base:.2f}x numpy's)")

    print("\n| algorithm | instance | eps | T | float-safe (median s) | idealised (median s) | ratio | CPU ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for algorithm, instance, eps in CASES:
        wall: dict[str, list[float]] = {"float-safe": [], "idealised": []}
        cpu: dict[str, list[float]] = {"float-safe": [], "idealised": []}
        for r in range(args.repeat):
            for noise in ("float-safe", "idealised"):
                config = RunConfig(algorithm, instance, args.horizon, epsilon=eps, noise=noise)
                t, c = time.perf_counter(), time.process_time()
                run_seed(config, r + 1)
                wall[noise].append(time.perf_counter() - t)
                cpu[noise].append(time.process_time() - c)
        fs, ideal = statistics.median(wall["float-safe"]), statistics.median(wall["idealised"])
        cpu_ratio = statistics.median(cpu["float-safe"]) / statistics.median(cpu["idealised"])
        print(f"| {algorithm} | {instance} | {eps:g} | {args.horizon:.0e} | {fs:.3f} | {ideal:.3f} | {fs / ideal:.2f}x | {cpu_ratio:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
