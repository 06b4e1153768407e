"""Our auditor on the StatDP / DP-Sniper benchmark, beside DP-Sniper's published 90% bounds.

Every mechanism of :mod:`statdp_mechanisms` is audited against its pure-DP claim with default
settings (learned views on), 95% family-wise confidence (alpha = 0.05), the pair chosen by the
pair search (StatDP patterns, random sign patterns and hill climbing for query vectors; the two
StatDP scalar pairs otherwise) on separate samples, and a fixed budget of draws per input. The
table gives our lower bound on epsilon, DP-Sniper's published one (90% confidence, up to 2e8
draws, 1-35 minutes per mechanism on a many-core server), the verdict, the draws per input
(search + pilot + training + selection + bound), the wall time and the CPU time (this process and
its workers). ``--workers N`` draws the chunks of the audit and of the pair search's sub-audits on
a pool of N processes (one pool per mechanism, its CPU time counted); the numbers do not depend on
N (chunks are seeded by position). Writes ``benchmarks/dpsniper.md``.

    nice python benchmarks/bench_dpsniper.py [--samples 4000000] [--workers 2] [--only SVT3,Rappor]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from accounting._guarantees import PureDP  # noqa: E402
from dpverify._audit import NeighbourPair, audit, statdp_pairs  # noqa: E402
from statdp_mechanisms import BENCHMARK, Entry  # noqa: E402

ALPHA = 0.05


def pairs_for(entry: Entry) -> tuple[list[NeighbourPair], str | None]:
    """StatDP's pairs for the mechanism's input type, and the search mode."""
    if entry.pairs == "scalar":
        return [NeighbourPair(np.array([1.0]), np.array([0.0]), "1 ~ 0"), NeighbourPair(np.array([1.0]), np.array([2.0]), "1 ~ 2")], "pilot"
    if entry.pairs in ("scalar-int", "rappor"):
        return [NeighbourPair(np.array([1]), np.array([0]), "1 ~ 0"), NeighbourPair(np.array([1]), np.array([2]), "1 ~ 2")], "pilot"
    if entry.pairs == "histogram":  # one record added or removed: one bin differs by one
        base = np.ones(5)
        return [NeighbourPair(base, np.r_[0.0, np.ones(4)], "one bin -1"), NeighbourPair(base, np.r_[2.0, np.ones(4)], "one bin +1")], "pilot"
    n = 5 if entry.pairs == "queries5" else 10
    return list(statdp_pairs(n)), "statdp"


def cpu_seconds() -> float:
    """User + system time of this process and of its finished children (the pool's workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run(entry: Entry, samples: int, seed: int, workers: int = 1) -> dict:
    pairs, mode = pairs_for(entry)
    t0 = time.perf_counter()
    c0 = cpu_seconds()
    pool = ProcessPoolExecutor(max_workers=workers) if workers > 1 else None
    try:
        rep = audit(entry.mechanism, pairs, PureDP(entry.epsilon), samples=samples, alpha=ALPHA, seed=seed,
                    pair_search=mode, search_budget=10, search_samples=max(20_000, samples // 10),
                    float_bits=entry.float_bits, executor=pool if pool is not None else "serial")
    finally:
        if pool is not None:
            pool.shutdown()  # its workers' CPU time is counted once they have exited
    seconds = time.perf_counter() - t0
    cpu = cpu_seconds() - c0
    best = max(rep.results, key=lambda r: r.lower_bound)
    return {"name": entry.name, "claim": entry.epsilon, "correct": entry.correct, "ours": best.lower_bound,
            "published": entry.published, "verdict": rep.verdict, "samples": best.samples, "seconds": seconds,
            "cpu_seconds": cpu, "workers": workers, "pair": best.pair, "event": best.event}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=4_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="")
    ap.add_argument("--workers", type=int, default=1, help="processes drawing the chunks (the numbers do not depend on it)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "dpsniper.md"))
    ap.add_argument("--rows", default=str(ROOT / "benchmarks" / "dpsniper_rows.jsonl"),
                    help="one JSON line per mechanism run (the table is rendered from the last row of each)")
    ap.add_argument("--render", action="store_true", help="only render the table from the rows file")
    args = ap.parse_args()
    only = {s for s in args.only.split(",") if s}
    for entry in BENCHMARK:
        if args.render or (only and entry.name not in only):
            continue
        row = run(entry, args.samples, args.seed, args.workers)
        row["draws_main"] = args.samples
        with open(args.rows, "a") as fh:
            fh.write(json.dumps({k: (str(v) if k == "ours" and v == float("inf") else v) for k, v in row.items()}) + "\n")
        ok = (row["verdict"] == "violated") != row["correct"]
        beat = row["published"] is None or row["ours"] >= row["published"]
        print(f"{row['name']:20s} claim {row['claim']:.4f} ours {row['ours']:.4f} published {row['published']} "
              f"{row['verdict']:8s} {'ok' if ok else 'WRONG'} {'>=' if beat else '<'} samples {row['samples']} "
              f"{row['seconds']:.1f}s wall {row['cpu_seconds']:.1f}s CPU  [{row['pair']}] {row['event'][:90]}", flush=True)
    latest = {}
    for line in Path(args.rows).read_text().splitlines():
        r = json.loads(line)
        r["ours"] = float(r["ours"])
        latest[r["name"]] = r
    rows = [latest[e.name] for e in BENCHMARK if e.name in latest]
    lines = ["| mechanism | claim eps | correct | ours (95% FW) | DP-Sniper (90%) | ours >= | verdict | draws/input | seconds | CPU seconds |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ours = "inf" if r["ours"] == float("inf") else f"{r['ours']:.4f}"
        beat = "yes" if r["published"] is None or r["ours"] >= r["published"] else "**no**"
        lines.append(f"| {r['name']} | {r['claim']:.4f} | {'yes' if r['correct'] else 'no'} | {ours} | {r['published']} | {beat} | "
                     f"{r['verdict']} | {r['samples']:,} | {r['seconds']:.1f} | "
                     + (f"{r['cpu_seconds']:.1f} ({r['workers']} workers) |" if "cpu_seconds" in r else "- |"))
    text = ("# Auditor vs DP-Sniper's published bounds\n\n`nice python benchmarks/bench_dpsniper.py --samples N "
            "--seed 1 [--workers W]` (one run per mechanism, alpha = 0.05 family-wise; N main draws per input, plus search, "
            "pilot and training draws: the draws/input column is the total; seconds are wall time on a machine that may be "
            "shared, CPU seconds those of the process and its W workers).\n\n" + "\n".join(lines) + "\n")
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
