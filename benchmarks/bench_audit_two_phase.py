"""Choose-then-bound auditing against the previous layout, same run (issue #11's time target).

Alternates ``bench_dpsniper.py --only M`` between a checkout of the previous auditor (``--base``,
a git worktree of commit fa02ec7: every view counted the whole chunk) and this tree (bound parts
counted only by the chosen events' views), ``--runs`` times each, and prints the median wall and
CPU seconds (process + its ``--workers`` workers) of each and their ratio. Each run is a fresh
process, so numba's cached kernels load in every run on both sides (about 1 s, inside the
timings). Writes nothing in either tree (rows go to a temporary file).

    git worktree add ../base fa02ec7
    nice python benchmarks/bench_audit_two_phase.py --base ../base --only SVT34Parallel --budget 4e6 --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_run(tree: Path, name: str, budget: float, workers: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        rows, out = Path(tmp) / "rows.jsonl", Path(tmp) / "out.md"
        env = {**os.environ, "PYTHONPATH": str(tree)}
        subprocess.run([sys.executable, str(tree / "benchmarks" / "bench_dpsniper.py"), "--only", name, "--budget", str(budget),
                        "--workers", str(workers), "--rows", str(rows), "--out", str(out)],
                       check=True, env=env, cwd=tree, stdout=subprocess.DEVNULL)
        return json.loads(rows.read_text().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", type=Path, required=True, help="a checkout of the previous auditor")
    ap.add_argument("--only", default="SVT34Parallel")
    ap.add_argument("--budget", type=float, default=4e6)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    for name in args.only.split(","):
        got: dict[str, list[dict]] = {"base": [], "new": []}
        for _ in range(args.runs):  # alternating, so load drifts hit both sides alike
            got["base"].append(one_run(args.base, name, args.budget, args.workers))
            got["new"].append(one_run(ROOT, name, args.budget, args.workers))
        med = {k: (statistics.median(r["seconds"] for r in v), statistics.median(r["cpu_seconds"] for r in v)) for k, v in got.items()}
        bounds = {k: sorted({round(r["ours"], 4) for r in v}) for k, v in got.items()}
        print(f"{name} budget {args.budget:.0e}, {args.runs} runs each, medians: base {med['base'][0]:.1f} s wall "
              f"{med['base'][1]:.1f} s CPU; new {med['new'][0]:.1f} s wall {med['new'][1]:.1f} s CPU; ratio base/new "
              f"{med['base'][0] / med['new'][0]:.2f} wall, {med['base'][1] / med['new'][1]:.2f} CPU; bounds base {bounds['base']} "
              f"new {bounds['new']}", flush=True)


if __name__ == "__main__":
    main()
