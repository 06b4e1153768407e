"""Soundness and power of the run-level audit claims (issue 24), for ``benchmarks/run_audit.md``.

1. False alarms: every run-level claim (``audits/runs/*.toml``: correct runners, claims that
   hold) audited with ``--seeds`` distinct seeds each, at ``--samples-scale`` of its budget, each
   audit deciding on its own at level ``--alpha`` (default 1e-3: twenty times the level the suite
   gives one claim, so a stricter test of false alarms than the suite's). A claim reported
   violated is a false alarm; the expected number is at most alpha times the number of audits.
2. Power: every planted run-level bug (``audits/planted/run_*.toml``) audited with
   ``--power-seeds`` distinct seeds at its suite budget; caught when its p-value is at most
   alpha/m, m the number of claims of the whole suite (``audits/``): the level at which Holm's
   first step rejects it inside the suite, whatever the other claims do.

Each audit is the gate's own (``run_claim``: the claim file's configuration, its pair search, its
seed stream ``SeedSequence([seed, crc32(name)])``), on a process pool of ``--workers``.

    nice python benchmarks/bench_run_audit_soundness.py --seeds 15 --power-seeds 20 --workers 2
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpverify._statistics._confidence import rate_interval  # noqa: E402
from dpverify._audit._suite import load_suite, p_value_grid, run_claim  # noqa: E402


def _audit(spec, seed: int, scale: float, alpha: float) -> tuple[str, int, float, float, float, str, float]:
    run = run_claim(spec, seed, scale, alpha, p_value_grid(alpha, 1))
    if run.error:
        raise RuntimeError(run.error)
    worst = max(run.results, key=lambda r: r.lower_bound - r.claimed)
    return spec.name, seed, run.p_value, worst.lower_bound, worst.claimed, worst.event, run.seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=15)
    ap.add_argument("--power-seeds", type=int, default=20)
    ap.add_argument("--samples-scale", type=float, default=1.0)
    ap.add_argument("--alpha", type=float, default=1e-3)
    ap.add_argument("--first-seed", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "run_audit_soundness.json"))
    ap.add_argument("--exclude", action="append", default=[], metavar="NAME",
                    help="leave a run-level claim out of the false-alarm part (repeatable; e.g. the slow DP-DPE claims)")
    args = ap.parse_args()

    everything = load_suite(ROOT / "audits")
    m = len(everything)
    holds = [s for s in everything if s.target.startswith("run:") and not s.planted and s.name not in args.exclude]
    planted = [s for s in everything if s.target.startswith("run:") and s.planted and s.expect == "violated"]
    tasks = [(s, args.first_seed + i, args.samples_scale, "holds") for s in holds for i in range(args.seeds)]
    tasks += [(s, args.first_seed + i, 1.0, "planted") for s in planted for i in range(args.power_seeds)]
    started = time.perf_counter()
    rows = []
    with ProcessPoolExecutor(max_workers=args.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(_audit, s, seed, scale, args.alpha): kind for s, seed, scale, kind in tasks}
        for done, fut in enumerate(as_completed(futures), start=1):
            name, seed, p, lower, claimed, event, seconds = fut.result()
            rows.append({"kind": futures[fut], "name": name, "seed": seed, "p_value": p, "lower_bound": lower, "claimed": claimed,
                         "event": event, "seconds": seconds})
            print(f"[{done}/{len(tasks)}] {name} seed {seed}: p {p:.3g}, lower {lower:.4g} / {claimed:.4g} ({seconds:.0f} s)", file=sys.stderr, flush=True)
    wall = time.perf_counter() - started

    false = [r for r in rows if r["kind"] == "holds" and r["p_value"] <= args.alpha]
    n = sum(r["kind"] == "holds" for r in rows)
    lo, hi = rate_interval(len(false), n)
    print(f"False alarms: {len(false)} of {n} audits of the {len(holds)} run-level claims ({args.seeds} seeds each, samples x "
          f"{args.samples_scale:g}, alpha {args.alpha:g} per audit): rate {len(false) / n:.4f}, 95% interval [{lo:.4f}, {hi:.4f}]; "
          f"{wall:.0f} s wall on {args.workers} workers")
    print()
    print("| claim | audits | false alarms | largest lower bound / claim | median CPU s |")
    print("|---|---|---|---|---|")
    for spec in holds:
        mine = [r for r in rows if r["name"] == spec.name]
        ratio = max(r["lower_bound"] / r["claimed"] for r in mine)
        print(f"| {spec.name} | {len(mine)} | {sum(r['p_value'] <= args.alpha for r in mine)} | {ratio:.3f} | "
              f"{statistics.median(r['seconds'] for r in mine):.0f} |")
    level = args.alpha / m
    print()
    print(f"Planted run-level bugs, {args.power_seeds} seeds each at their suite budgets; caught = p <= alpha/m = {level:.3g} (m = {m} claims):")
    print()
    print("| planted bug | caught | rate (95% interval) | median lower bound / claim | median CPU s |")
    print("|---|---|---|---|---|")
    for spec in planted:
        mine = [r for r in rows if r["name"] == spec.name]
        caught = sum(r["p_value"] <= level for r in mine)
        lo, hi = rate_interval(caught, len(mine))
        ratio = statistics.median(r["lower_bound"] / r["claimed"] if math.isfinite(r["lower_bound"]) else math.inf for r in mine)
        print(f"| {spec.name} | {caught}/{len(mine)} | {caught / len(mine):.2f} [{lo:.2f}, {hi:.2f}] | {ratio:.2f} | "
              f"{statistics.median(r['seconds'] for r in mine):.0f} |")
    Path(args.out).write_text(json.dumps({"alpha": args.alpha, "samples_scale": args.samples_scale, "m": m, "wall": wall, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
