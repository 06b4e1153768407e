"""Soundness and cost of the audit suite (``audits/``), for ``benchmarks/audit_suite.md``.

1. False alarms: the correct suite (every claim that expects "holds": the ordinary claims and
   the must-not-flag planted variants) run ``--runs`` times at ``--samples-scale`` of its budgets,
   with distinct seeds, each run deciding with Holm at family-wise alpha (default 1e-3). A run
   with any "violated" verdict is a false alarm. With Holm's guarantee the expected number over
   200 runs is at most 0.2.
2. Power: the planted bugs that must be caught, run ``--power-runs`` times at their default
   budget with distinct seeds (inside the full suite's Holm family, as CI runs them).
3. Wall time: the whole suite at the CI budget (the files' budgets), on ``--workers`` processes.

    python benchmarks/audit_suite_soundness.py --runs 200 --samples-scale 0.1 --workers 2

Prints Markdown to stdout (progress to stderr) and writes the raw numbers to ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpverify._statistics._confidence import rate_interval  # noqa: E402
from dpverify._audit._suite import load_suite, run_suite  # noqa: E402


def _ratio(row) -> float:
    r = row.result
    if r is None:
        return math.nan
    if r.lower_bound == math.inf:
        return math.inf
    return r.lower_bound / r.claimed if r.claimed > 0 else math.nan


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default=str(ROOT / "audits"))
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--samples-scale", type=float, default=0.1)
    ap.add_argument("--alpha", type=float, default=1e-3)
    ap.add_argument("--first-seed", type=int, default=1000)
    ap.add_argument("--power-runs", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-timing", action="store_true")
    ap.add_argument("--out", default=None, help="write the raw numbers here (JSON)")
    args = ap.parse_args()

    specs = load_suite(args.suite)
    correct = [s for s in specs if s.expect == "holds"]
    pool = ProcessPoolExecutor(max_workers=args.workers, mp_context=multiprocessing.get_context("spawn"))
    raw: dict = {"alpha": args.alpha, "samples_scale": args.samples_scale, "runs": args.runs, "workers": args.workers}
    out = []
    try:
        # 0. warm the workers (imports, numba caches) so the timing below is the suite's
        run_suite(correct[:2], alpha=args.alpha, seed=0, samples_scale=0.01, executor=pool)

        # 3. wall time at the CI budget
        if not args.skip_timing:
            t0 = time.perf_counter()
            full = run_suite(specs, alpha=args.alpha, seed=0, executor=pool)
            wall = time.perf_counter() - t0
            raw["ci_budget"] = {"wall_seconds": wall, "exit_code": full.exit_code, "rows": [r.to_dict() for r in full.rows]}
            print(f"[timing] full suite at the CI budget: {wall:.1f} s wall, exit {full.exit_code}", file=sys.stderr)
            out.append(f"## The suite at the CI budget ({len(specs)} claims, {args.workers} worker processes, seed 0)\n")
            out.append(f"Wall time **{wall:.1f} s** (workers warm; add about 5 s for spawning them); exit code {full.exit_code}. "
                       "Per-claim seconds are the worker's time for that claim.\n")
            out.append("| claim | guarantee | estimator | claimed | lower bound | verdict | samples | seconds |")
            out.append("|---|---|---|---|---|---|---|---|")
            for row in full.rows:
                r = row.result
                est = (f"renyi (order {r.order:g})" if r.estimator == "renyi" else r.estimator) if r else "-"
                low = "inf" if r and r.lower_bound == math.inf else (f"{r.lower_bound:.4g}" if r else "-")
                out.append(f"| {row.spec.name} | {row.claim_text} | {est} | {r.claimed:.4g} | {low} | {row.verdict} | "
                           f"{row.samples:,} | {row.seconds:.1f} |")
            out.append("")

        # 1. false alarms of the correct suite
        alarms = 0
        alarm_runs = []
        worst: dict[str, float] = {s.name: -math.inf for s in correct}
        min_p: dict[str, float] = {s.name: 1.0 for s in correct}
        t0 = time.perf_counter()
        for i in range(args.runs):
            seed = args.first_seed + i
            res = run_suite(correct, alpha=args.alpha, seed=seed, samples_scale=args.samples_scale, executor=pool)
            if res.errors:
                raise SystemExit(f"suite error in run {i}: {res.errors[0].error}")
            bad = [r.spec.name for r in res.rows if r.verdict != "holds"]
            if bad:
                alarms += 1
                alarm_runs.append({"seed": seed, "claims": bad})
            for r in res.rows:
                worst[r.spec.name] = max(worst[r.spec.name], _ratio(r))
                min_p[r.spec.name] = min(min_p[r.spec.name], r.p_value)
            if (i + 1) % 10 == 0:
                print(f"[soundness] {i + 1}/{args.runs} runs, {alarms} false alarms, {time.perf_counter() - t0:.0f} s",
                      file=sys.stderr)
        sound_wall = time.perf_counter() - t0
        lo, hi = rate_interval(alarms, args.runs)
        raw["soundness"] = {"false_alarm_runs": alarms, "alarms": alarm_runs, "worst_ratio": worst, "min_p": min_p,
                            "wall_seconds": sound_wall}
        out.append(f"## False alarms of the correct suite ({len(correct)} claims expecting \"holds\", {args.runs} runs)\n")
        out.append(f"Budgets x{args.samples_scale:g} (at least 1000 draws per input), seeds {args.first_seed}.."
                   f"{args.first_seed + args.runs - 1}, Holm at family-wise alpha = {args.alpha:g}; {sound_wall / 60:.1f} min "
                   f"on {args.workers} workers.\n")
        out.append(f"**False alarms: {alarms} of {args.runs} runs** (rate {alarms / args.runs:.4f}, 95% CI "
                   f"[{lo:.4f}, {hi:.4f}]; Holm guarantees <= {args.alpha:g}).\n")
        out.append("Closest approach of each claim over the runs (largest lower bound / claimed, at its Holm level; "
                   "smallest p-value, 1 = never significant at any Holm threshold):\n")
        out.append("| claim | max lower / claimed | min p-value |")
        out.append("|---|---|---|")
        for s in correct:
            out.append(f"| {s.name} | {worst[s.name]:.4f} | {min_p[s.name]:.3g} |")
        out.append("")

        # 2. power at the default budget
        if args.power_runs > 0:
            caught: dict[str, int] = {}
            lowest: dict[str, float] = {}
            t0 = time.perf_counter()
            for i in range(args.power_runs):
                res = run_suite(specs, alpha=args.alpha, seed=args.first_seed + 10_000 + i, executor=pool)
                for r in res.rows:
                    if r.spec.expect.startswith("violated"):  # in either arithmetic, floating point only, or both
                        caught[r.spec.name] = caught.get(r.spec.name, 0) + (r.verdict == "caught")
                        lowest[r.spec.name] = min(lowest.get(r.spec.name, math.inf), _ratio(r))
                print(f"[power] {i + 1}/{args.power_runs}", file=sys.stderr)
            raw["power"] = {"caught": caught, "min_ratio": lowest, "wall_seconds": time.perf_counter() - t0}
            out.append(f"## Power: planted bugs at the default budget ({args.power_runs} full-suite runs, seeds "
                       f"{args.first_seed + 10_000}..)\n")
            out.append("| planted bug | caught | smallest lower / claimed |")
            out.append("|---|---|---|")
            for name in caught:
                ratio = lowest[name]
                out.append(f"| {name} | {caught[name]}/{args.power_runs} | {'inf' if ratio == math.inf else f'{ratio:.3f}'} |")
            out.append("")
    finally:
        pool.shutdown()
    print("\n".join(out))
    if args.out:
        Path(args.out).write_text(json.dumps(raw, indent=2, default=str))


if __name__ == "__main__":
    main()
