"""Server-view one-run audits (issue 33): speed, bounds, planted server-side bugs, soundness, f-DP vs eps/delta.

1. Speed and bounds: ``server_one_run_audit`` of each central / distributed algorithm at eps = 1,
   ``--seeds`` runs of T = 20,480 users (10 Bernoulli(1/2) arms) pooled, ``--repeat`` audits (seeds
   0, 1000, 2000, ...): median wall and CPU seconds, canaries per second, the three bounds and the
   f-DP test of the claim's curve. Baseline in the same run, alternating: the same pooled runs with
   the plain runner (no canaries, no transcript), so the ratio is the audit's overhead.
2. Planted server-side bug: the aggregator's noise drawn at 2 eps while the ledger charges eps,
   ``--planted`` seeds, caught = the f-DP test of the claim's curve rejects at 95%.
3. Soundness: ``--soundness`` audits of correct runs (disjoint seeds): how often the f-DP test
   rejects the claim and how often the SNJ eps bound exceeds the claimed eps, with two-sided 95%
   Clopper-Pearson intervals.
4. Where the f-DP form is tighter than the (eps, delta) form (pure arithmetic, no runs).

    nice python benchmarks/bench_one_run_server.py --repeat 5 --planted 20 --soundness 200
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import machine
from dpverify._audit._one_run_bound import one_run_epsilon
from dpverify._audit._one_run_fdp import fdp_epsilon
from dpverify._audit._one_run_server import SERVER_ALGORITHMS, server_one_run_audit
from dpverify._bandits._builtin import dp_se_setup, se_setup
from dpverify._bandits._elimination import run_batch_elimination, run_dp_se
from dpverify._bandits._environments import bernoulli_instance
from dpverify._bandits._runner import RunConfig, seed_streams
from dpverify._statistics._confidence import rate_interval

HORIZON = {"dp-se": 9_000}


def plain_runs(algorithm: str, seeds: int, seed: int) -> None:
    instance = bernoulli_instance([0.5] * 10)
    config = RunConfig(algorithm, instance, HORIZON.get(algorithm, 20_480), epsilon=1.0).validate()
    for s in range(seeds):
        if algorithm == "dp-se":
            run_dp_se(dp_se_setup(config, instance), 1.0, seed_streams(seed + s, 0))
        else:
            run_batch_elimination(se_setup(config, instance)[0], seed_streams(seed + s, 0))


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40, help="runs pooled per audit")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--planted", type=int, default=20)
    parser.add_argument("--soundness", type=int, default=200)
    parser.add_argument("--algorithms", default=",".join(SERVER_ALGORITHMS))
    args = parser.parse_args()
    algorithms = args.algorithms.split(",")
    print(f"# server-view one-run audits ({machine()})")
    t0 = time.perf_counter()
    for algorithm in algorithms:  # warm-up: numba caches, the claims' certified curves (cached per configuration)
        server_one_run_audit(algorithm, epsilon=1.0, seeds=2, horizon=HORIZON.get(algorithm, 20_480))
        plain_runs(algorithm, 1, 0)
    print(f"warm-up (incl. the claims' certified trade-off curves): {time.perf_counter() - t0:.2f} s")

    print(f"\n## speed and bounds (eps = 1, 95% confidence, {args.seeds} runs pooled per audit, 10 arms)\n")
    print("| algorithm | T | canary slots (observed) | guesses | correct (median) | eps pure (min / median) | eps at claim's delta, SNJ | "
          "f-DP form | mu-GDP, f-DP form | f-DP test of the claim's curve | audit wall | audit CPU | canaries/s (wall) | plain runs, same run | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for algorithm in algorithms:
        walls, cpus, pure, approx, fdp, plains, audits = [], [], [], [], [], [], []
        for r in range(args.repeat):
            seed = 1000 * r
            audit, wall, cpu = timed(lambda: server_one_run_audit(algorithm, epsilon=1.0, seeds=args.seeds, seed=seed,
                                                                  horizon=HORIZON.get(algorithm, 20_480)))
            _, plain, _ = timed(lambda: plain_runs(algorithm, args.seeds, seed))
            walls.append(wall), cpus.append(cpu), pure.append(audit.epsilon_pure), approx.append(audit.epsilon_approx)
            fdp.append(audit.epsilon_fdp), plains.append(plain), audits.append(audit)
            print(f"  {audit.describe()} [{wall:.2f} s]", file=sys.stderr)
        a = audits[0]
        w, p = statistics.median(walls), statistics.median(plains)
        rejected = sum(x.fdp_rejects_claim for x in audits)
        print(f"| {algorithm} | {a.users_per_run:,} | {a.canaries:,} ({int(statistics.median(x.observed for x in audits)):,}) | {a.guesses:,} "
              f"| {int(statistics.median(x.correct for x in audits)):,} | {min(pure):.3f} / {statistics.median(pure):.3f} "
              f"| {statistics.median(approx):.3f} (claim {a.claim}) | {statistics.median(fdp):.3f} | {statistics.median(x.mu_lower for x in audits):.3f} | rejects {rejected} / {args.repeat} "
              f"| {w:.2f} s | {statistics.median(cpus):.2f} s | {a.canaries / w:,.0f} | {p:.2f} s | {w / p:.2f}x |")

    print(f"\n## planted server-side bug: aggregator noise at 2 eps, claim eps = 1 ({args.planted} seeds, {args.seeds} runs pooled each)\n")
    print("| algorithm | caught (f-DP test of the claim's curve, 95%) | eps pure > claimed eps | median eps pure | median f-DP form |")
    print("|---|---|---|---|---|")
    for algorithm in algorithms:
        caught = over = 0
        pure, fdp = [], []
        for s in range(args.planted):
            audit = server_one_run_audit(algorithm, epsilon=1.0, seeds=args.seeds, seed=100_000 + 1000 * s, planted_scale=2.0,
                                         horizon=HORIZON.get(algorithm, 20_480))
            caught += audit.verdict == "violated"
            over += audit.epsilon_approx > audit.claim_epsilon
            pure.append(audit.epsilon_pure), fdp.append(audit.epsilon_fdp)
        print(f"| {algorithm} | {caught} / {args.planted} | {over} / {args.planted} | {statistics.median(pure):.3f} | {statistics.median(fdp):.3f} |")

    print(f"\n## soundness: {args.soundness} audits of correct runs per algorithm (disjoint seeds, 95% confidence)\n")
    print("| algorithm | audits | f-DP test rejects the claim | rate, 95% CP | SNJ eps > claimed eps | rate, 95% CP | median eps pure | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for algorithm in algorithms:
        rejects = over = 0
        pure = []
        t0 = time.perf_counter()
        for s in range(args.soundness):
            audit = server_one_run_audit(algorithm, epsilon=1.0, seeds=args.seeds, seed=10_000_000 + 1000 * s, horizon=HORIZON.get(algorithm, 20_480))
            rejects += audit.fdp_rejects_claim
            over += audit.epsilon_approx > audit.claim_epsilon
            pure.append(audit.epsilon_pure)
        lo, hi = rate_interval(rejects, args.soundness)
        lo2, hi2 = rate_interval(over, args.soundness)
        print(f"| {algorithm} | {args.soundness} | {rejects} | {rejects / args.soundness:.3f} [{lo:.3f}, {hi:.3f}] | {over} "
              f"| {over / args.soundness:.3f} [{lo2:.3f}, {hi2:.3f}] | {statistics.median(pure):.3f} | {time.perf_counter() - t0:.0f} |")

    print("\n## the f-DP form against the (eps, delta) form (95%, arithmetic only)\n")
    print("| m | guesses | correct | delta | SNJ eps | f-DP form eps | tighter |")
    print("|---|---|---|---|---|---|---|")
    for m, c, v, delta in ((1000, 600, 457, 0.0), (100_000, 60_000, 43_800, 0.0), (1000, 600, 457, 1e-5), (10_000, 6_000, 4_500, 1e-4),
                           (100_000, 60_000, 43_800, 1e-5), (100_000, 60_000, 43_800, 1e-4), (5_600, 3_000, 2_200, 1e-3)):
        a, b = one_run_epsilon(m, c, v, delta=delta), fdp_epsilon(m, c, v, delta=delta)
        print(f"| {m:,} | {c:,} | {v:,} | {delta:g} | {a:.4f} | {b:.4f} | {'f-DP' if b > a else 'SNJ'} |")


if __name__ == "__main__":
    main()
