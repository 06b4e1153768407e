"""The cost of verdicts that say which arithmetic (#20 item 4): this tree against a baseline tree.

A floating-point violation found through bit views is followed by the real-arithmetic audit of
the same draws, and the suite audits its idealised claims (``float_bits = false``) as executed
too. This measures, alternating baseline and this tree in the same run (medians of ``--runs``):

- ``dpverify audit audits/`` (each tree's own suite), ``--workers 2``;
- ``dpverify audit audits/planted/float_laplace_bits.toml`` (one claim, serial);

each as wall seconds and CPU seconds (user + system of the command and its worker processes:
on a machine shared with other jobs the CPU time is the steadier of the two).

The baseline is a checkout of an earlier commit (``git worktree add ../base <commit>`` or
``git archive <commit> | tar -x -C ../base``); each tree runs with its own sources first on
``PYTHONPATH`` and its own numba cache, warmed by one untimed run of each command.

    python benchmarks/bench_audit_arithmetic.py --baseline ../base --tree ../new --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
COMMAND = "import sys; from dpverify._cli._cmd_audit import audit_command; audit_command(sys.argv[1:])"


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # every waited-for descendant: the pool's workers too
    return usage.ru_utime + usage.ru_stime


def _run(tree: Path, args: list[str]) -> tuple[float, float, int]:
    env = dict(os.environ, PYTHONPATH=str(tree), NUMBA_CACHE_DIR=str(tree / ".numba-cache-bench"))
    started, cpu = time.perf_counter(), _cpu()
    proc = subprocess.run([sys.executable, "-c", COMMAND, *args], cwd=tree, env=env, capture_output=True, text=True)
    return time.perf_counter() - started, _cpu() - cpu, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout of the baseline commit")
    parser.add_argument("--tree", type=Path, default=HERE, help="the checkout measured against it (default: this one; "
                        "a snapshot keeps edits made meanwhile out of the numbers)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", choices=("suite", "planted", "both"), default="both")
    parser.add_argument("--warm", action="store_true", help="skip the warm-up runs (the numba caches are warm)")
    opts = parser.parse_args()
    trees = {"baseline": opts.baseline.resolve(), "this tree": opts.tree.resolve()}
    jobs = {"suite": ["audits", "--workers", "2"], "planted": ["audits/planted/float_laplace_bits.toml", "--executor", "serial"]}
    chosen = list(jobs) if opts.only == "both" else [opts.only]
    out: dict[str, dict[str, dict[str, list[float]]]] = {}
    for job in chosen:
        for name, tree in trees.items():  # warm-up: numba compilation and caches, outside the measured runs
            if not opts.warm:
                seconds, cpu, code = _run(tree, jobs[job])
                print(f"[warm-up] {job} {name}: {seconds:.1f} s wall, {cpu:.1f} s CPU, exit {code}", flush=True)
        out[job] = {name: {"wall": [], "cpu": []} for name in trees}
        for i in range(opts.runs):
            for name, tree in trees.items():  # alternating, so both see the same load
                seconds, cpu, code = _run(tree, jobs[job])
                out[job][name]["wall"].append(seconds)
                out[job][name]["cpu"].append(cpu)
                print(f"[{job} {i + 1}/{opts.runs}] {name}: {seconds:.1f} s wall, {cpu:.1f} s CPU, exit {code}", flush=True)
    for job, runs in out.items():
        for kind in ("wall", "cpu"):
            base, new = statistics.median(runs["baseline"][kind]), statistics.median(runs["this tree"][kind])
            print(f"{job} {kind}: baseline median {base:.1f} s, this tree median {new:.1f} s, ratio {new / base:.2f}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
