"""Our auditor on the StatDP / DP-Sniper benchmark, beside DP-Sniper's published 90% bounds.

Every mechanism of :mod:`statdp_mechanisms` is audited against its pure-DP claim with default
settings (learned views on), 95% family-wise confidence (alpha = 0.05), at most ``--budget`` draws
per input in all. Scalar rows audit both StatDP scalar pairs; query-vector rows keep the three
pairs the pair search (StatDP patterns and random sign patterns) predicts best, on separate samples. The
table gives our lower bound on epsilon, DP-Sniper's published one (90% confidence, up to 2e8
draws, 1-35 minutes per mechanism on a many-core server), the verdict, the draws per input
(search + pilot + training + selection + bound), the wall time and the CPU time (this process and
its workers). ``--workers N`` draws the chunks of the audit and of the pair search's sub-audits on
a pool of N processes (one pool per mechanism, its CPU time counted); the numbers do not depend on
N (chunks are seeded by position). Writes ``benchmarks/dpsniper.md``.

    nice python benchmarks/bench_dpsniper.py [--budget 1e7] [--workers 2] [--only SVT3,Rappor]
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

from accounting._core._guarantees import PureDP  # noqa: E402
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


#: Draws per input the search spends on its candidates (query-vector rows): one shared audit of
#: all fixed candidates, predicting each candidate's bound at the full size.
SEARCH_SAMPLES = 500_000
#: Pilot and training draws the audit adds per input (at most 2**14 pilot, 2**15 training) and the
#: search's pilot: reserved so that the total never exceeds the budget.
OVERHEAD = 2**14 + 2**15 + 2**14


def main_samples(budget: int, mode: str | None) -> int:
    """Main draws per input so that main + search + pilot + training <= ``budget``."""
    return budget - OVERHEAD - (SEARCH_SAMPLES if mode == "statdp" else 0)


def run(entry: Entry, budget: int, seed: int, workers: int = 1) -> dict:
    pairs, mode = pairs_for(entry)
    samples = main_samples(budget, mode)
    t0 = time.perf_counter()
    c0 = cpu_seconds()
    pool = ProcessPoolExecutor(max_workers=workers) if workers > 1 else None
    try:
        # scalar rows: both pairs audited at full size (they share the input 1, so its draws are
        # shared; the error budget is focused on the more promising on the selection sample);
        # query vectors: the search keeps the three most promising candidates
        search = {} if mode == "pilot" else {"pair_search": mode, "search_budget": 10, "search_samples": SEARCH_SAMPLES,
                                             "keep_pairs": 3}
        rep = audit(entry.mechanism, pairs, PureDP(entry.epsilon), samples=samples, alpha=ALPHA, seed=seed,
                    float_bits=entry.float_bits, executor=pool if pool is not None else "serial", **search)
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
    ap.add_argument("--budget", type=float, default=1e7, help="draws per input in all (main + search + pilot + training)")
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
        budget = int(args.budget)
        row = run(entry, budget, args.seed, args.workers)
        row["draws_main"] = main_samples(budget, pairs_for(entry)[1])
        if row["samples"] > budget:
            raise SystemExit(f"{entry.name}: {row['samples']} draws per input exceed the budget {budget}")
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
    text = ("# Auditor vs DP-Sniper's published bounds\n\n`nice python benchmarks/bench_dpsniper.py --budget B "
            "--seed 1 [--workers W]` (one run per mechanism, alpha = 0.05 family-wise; at most B draws per input in all: "
            "main, search, pilot and training draws, the draws/input column; seconds are wall time on a machine that may be "
            "shared, CPU seconds those of the process and its W workers). Scalar rows audit both StatDP pairs at full size; "
            "query-vector rows keep the 3 best of 10 candidate pairs (StatDP's patterns and random sign patterns), chosen "
            "by one shared audit of 500,000 draws per input.\n\n" + "\n".join(lines) + "\n")
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
