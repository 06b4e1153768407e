"""Speed of run transcripts (issue 24), for ``benchmarks/run_audit.md``.

Rates and times are CPU seconds of this single-threaded process (``time.process_time``), so a
shared machine's load does not inflate them; wall time is printed beside the pair's.

1. Transcripts per second per runner family: the plain runner recording its own transcript (one
   run per call: ``run_batch_elimination`` / ``run_dp_se`` / ``run_ucb`` with chunk 1 /
   ``run_linear`` on a reward table) against the lockstep engine drawing ``--reps`` runs in one
   call, alternating in the same process, median of ``--repeat``; the configurations are the
   run-level suite's (``audits/runs/``), on a base table of its search (a decision at its threshold).
2. One audit pair at scale: ``--pair-runs`` runs of Dist-DP-SE on each table of a pair (D, D'),
   drawn in the auditor's chunks of 50,000, on one core: seconds per pair.

Warm-up (imports, JIT compile or cache load, the protocols' exact parameters) is one small call
of every runner and engine before anything is timed, reported on its own line.

    nice python benchmarks/bench_run_audit.py --repeat 5 --pair-runs 1000000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpverify._audit._runs import run_engine, run_pairs  # noqa: E402
from dpverify._bandits._builtin import dp_se_setup, se_setup, ucb_setup  # noqa: E402
from dpverify._bandits._runner import RunConfig, seed_streams  # noqa: E402
from dpverify._bandits._transcripts import TableInstance  # noqa: E402

#: (algorithm, arms, horizon, epsilon, plain runs per timing, engine runs per call): the suite's configurations
FAMILIES = (
    ("dist-dp-se", 2, 1024, 1.0, 20, 20_000),
    ("dist-rdp-se", 2, 512, 1.0, 10, 2_000),
    ("dist-cdp-se", 2, 512, 1.0, 10, 2_000),
    ("cdp-se", 2, 1024, 1.0, 20, 20_000),
    ("ldp-se", 2, 128, 1.0, 20, 5_000),
    ("dp-se", 2, 8000, 1.0, 20, 5_000),
    ("ldp-ucb-b", 2, 256, 1.0, 10, 5_000),
    ("cdp-dpe", 3, 1100, 1.0, 5, 2_000),
)


def _plain(algorithm: str, engine, table: np.ndarray, arms: int, horizon: int, epsilon: float):
    """A function running the plain runner once (run r) on ``table``, recording its transcript."""
    if algorithm == "cdp-dpe":
        return lambda r: engine.plain_run(table, 0, r)
    instance = TableInstance.from_table(table)
    config = RunConfig(algorithm, instance, horizon, epsilon=epsilon)
    if algorithm.startswith("ldp-ucb"):
        setup = ucb_setup(config, instance)
        return lambda r: engine.plain_run(setup, table, seed_streams(0, r))
    if algorithm == "dp-se":
        setup = dp_se_setup(config, instance)
        return lambda r: engine.plain_run(setup, table, seed_streams(0, r), epsilon)
    setup, _ = se_setup(config, instance)
    return lambda r: engine.plain_run(setup, table, seed_streams(0, r))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--pair-runs", type=int, default=10**6)
    ap.add_argument("--only", default=None, help="comma-separated algorithms")
    args = ap.parse_args()
    families = [f for f in FAMILIES if args.only is None or f[0] in args.only.split(",")]

    started = time.perf_counter()
    prepared = []
    for algorithm, arms, horizon, eps, plain_runs, reps in families:
        engine = run_engine(algorithm, arms=arms, horizon=horizon, epsilon=eps)
        table = run_pairs(engine, "public")[0].d
        plain = _plain(algorithm, engine, table, arms, horizon, eps)
        plain(0)
        engine.sample(table, np.random.default_rng(0), 50, "server")
        prepared.append((algorithm, arms, horizon, engine, table, plain, plain_runs, reps))
    print(f"warm-up (imports, JIT compile or cache load, exact parameters): {time.perf_counter() - started:.1f} s", file=sys.stderr)

    rows = []
    for algorithm, arms, horizon, engine, table, plain, plain_runs, reps in prepared:
        plain_rates, engine_rates = [], []
        for i in range(args.repeat):  # alternating, so both see the same machine load; CPU time of this process
            t = time.process_time()
            for r in range(plain_runs):
                plain(1 + i * plain_runs + r)
            plain_rates.append(plain_runs / (time.process_time() - t))
            t = time.process_time()
            engine.sample(table, np.random.default_rng(i), reps, "server")
            engine_rates.append(reps / (time.process_time() - t))
        p, e = statistics.median(plain_rates), statistics.median(engine_rates)
        rows.append((algorithm, arms, horizon, p, e, e / p))
        print(f"| {algorithm} | {arms} | {horizon} | {p:,.0f} | {e:,.0f} | {e / p:,.0f}x |", flush=True)

    pair = None
    if args.pair_runs:
        lines = []
        for horizon in (1024, 512):
            engine = run_engine("dist-dp-se", arms=2, horizon=horizon, epsilon=1.0)
            candidate = run_pairs(engine, "server")[0]
            chunk = 50_000
            t, c = time.perf_counter(), time.process_time()
            for side, table in enumerate((candidate.d, candidate.d_prime)):
                done = 0
                while done < args.pair_runs:
                    size = min(chunk, args.pair_runs - done)
                    engine.sample(table, np.random.default_rng([side, done]), size, "server")
                    done += size
            seconds, cpu = time.perf_counter() - t, time.process_time() - c
            lines.append((horizon, seconds, cpu))
            print(f"dist-dp-se T={horizon}: {args.pair_runs:,} runs on each table of a pair in {cpu:.1f} CPU s ({seconds:.1f} s wall)", flush=True)
        pair = lines

    print()
    print("| family | arms | T | plain runner (transcripts/s) | engine (transcripts/s) | ratio |")
    print("|---|---|---|---|---|---|")
    for algorithm, arms, horizon, p, e, ratio in rows:
        print(f"| {algorithm} | {arms} | {horizon} | {p:,.0f} | {e:,.0f} | {ratio:,.0f}x |")
    if pair:
        for horizon, seconds, cpu in pair:
            print(f"\nDist-DP-SE, 2 arms, T = {horizon}: {args.pair_runs:,} runs per table, one pair: {cpu:.1f} CPU s on one core ({seconds:.1f} s wall)")


if __name__ == "__main__":
    main()
