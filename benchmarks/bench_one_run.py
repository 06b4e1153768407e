"""One-run audits (issue 33): time, bound and canaries per second at T = 10^6, soundness, planted bug.

1. Speed and power: ``one_run_audit`` on LDP-UCB-L and LDP-SE at eps = 1, T = ``--horizon`` users of
   which ``--canaries`` are canaries (default 10^6 and 10^5), seeds 0..``--repeat``-1: median wall and
   CPU seconds (one core), the bound (min / median) at 95% confidence, canaries per second. Baseline in
   the same run, alternating: the plain run with no canaries and no recording (``run_ucb`` /
   ``run_batch_elimination``), so the ratio is the audit's overhead over the run itself.
2. Soundness: ``--soundness`` seeded audits of correct runs per algorithm (T = 10^5, 10^4 canaries):
   how many bounds exceed the claim, with a two-sided 95% Clopper-Pearson interval on the rate.
3. Planted per-user bug: the privatizer's noise drawn at 2 eps (its scale halved) while the ledger
   charges eps, 20 seeds at full size: how many one-run audits catch it.

Warm-up (imports, numba cache load, protocol parameters) is one small audit of each algorithm,
reported on its own line.

    nice python benchmarks/bench_one_run.py --repeat 5 --soundness 500
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import machine  # noqa: E402
from dpverify._audit._one_run import one_run_audit  # noqa: E402
from dpverify._bandits._builtin import se_setup, ucb_setup  # noqa: E402
from dpverify._bandits._elimination import run_batch_elimination  # noqa: E402
from dpverify._bandits._environments import bernoulli_instance  # noqa: E402
from dpverify._bandits._runner import RunConfig, seed_streams  # noqa: E402
from dpverify._bandits._ucb import run_ucb  # noqa: E402
from dpverify._statistics._confidence import rate_interval  # noqa: E402

ALGORITHMS = ("ldp-ucb-l", "ldp-se")


def plain_run(algorithm: str, horizon: int, seed: int) -> None:
    instance = bernoulli_instance([0.9, 0.8])
    config = RunConfig(algorithm, instance, horizon, epsilon=1.0).validate()
    if algorithm == "ldp-se":
        setup, _ = se_setup(config, instance)
        run_batch_elimination(setup, seed_streams(seed, 0))
    else:
        run_ucb(ucb_setup(config, instance), seed_streams(seed, 0))


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=1_000_000)
    parser.add_argument("--canaries", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--soundness", type=int, default=500)
    parser.add_argument("--planted", type=int, default=20)
    args = parser.parse_args()
    print(f"# one-run audits ({machine()})")
    t0 = time.perf_counter()
    for algorithm in ALGORITHMS:
        one_run_audit(algorithm, epsilon=1.0, horizon=20_000, canaries=2_000)
        plain_run(algorithm, 20_000, 0)
    print(f"warm-up: {time.perf_counter() - t0:.2f} s")

    print("\n## speed and power (eps = 1, 95% confidence)\n")
    print("| algorithm | T | canaries | guesses (median) | bound min / median | audit wall (median) | audit CPU | canaries/s (wall) | plain run, same run | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for algorithm in ALGORITHMS:
        walls, cpus, bounds, guesses, plains = [], [], [], [], []
        for seed in range(args.repeat):
            audit, wall, cpu = timed(lambda: one_run_audit(algorithm, epsilon=1.0, horizon=args.horizon, canaries=args.canaries, seed=seed))
            _, plain, _ = timed(lambda: plain_run(algorithm, args.horizon, seed))
            walls.append(wall), cpus.append(cpu), bounds.append(audit.epsilon_lower), guesses.append(audit.guesses), plains.append(plain)
            print(f"  {algorithm} seed {seed}: {audit.describe()} [{wall:.2f} s]", file=sys.stderr)
        w, p = statistics.median(walls), statistics.median(plains)
        print(f"| {algorithm} | {args.horizon:,} | {args.canaries:,} | {int(statistics.median(guesses)):,} | {min(bounds):.4f} / {statistics.median(bounds):.4f} "
              f"| {w:.3f} s | {statistics.median(cpus):.3f} s | {args.canaries / w:,.0f} | {p:.3f} s | {w / p:.2f}x |")

    print(f"\n## soundness: {args.soundness} seeded audits of correct runs per algorithm (T = 100,000, 10,000 canaries, 95% confidence)\n")
    print("| algorithm | audits | bound > claim | rate, 95% CP interval | median bound | seconds |")
    print("|---|---|---|---|---|---|")
    for algorithm in ALGORITHMS:
        over, bounds = 0, []
        t0 = time.perf_counter()
        for seed in range(1000, 1000 + args.soundness):
            audit = one_run_audit(algorithm, epsilon=1.0, horizon=100_000, canaries=10_000, seed=seed)
            over += audit.epsilon_lower > audit.claim_epsilon
            bounds.append(audit.epsilon_lower)
        lo, hi = rate_interval(over, args.soundness)
        print(f"| {algorithm} | {args.soundness} | {over} | {over / args.soundness:.3f} [{lo:.3f}, {hi:.3f}] | {statistics.median(bounds):.4f} | {time.perf_counter() - t0:.1f} |")

    print(f"\n## planted per-user bug: noise at 2 eps, claim eps = 1 ({args.planted} seeds, T = {args.horizon:,}, {args.canaries:,} canaries)\n")
    print("| algorithm | caught | median bound |")
    print("|---|---|---|")
    for algorithm in ALGORITHMS:
        caught, bounds = 0, []
        for seed in range(args.planted):
            audit = one_run_audit(algorithm, epsilon=1.0, horizon=args.horizon, canaries=args.canaries, seed=seed, planted_scale=2.0)
            caught += audit.verdict == "violated"
            bounds.append(audit.epsilon_lower)
        print(f"| {algorithm} | {caught} / {args.planted} | {statistics.median(bounds):.4f} |")


if __name__ == "__main__":
    main()
