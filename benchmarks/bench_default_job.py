"""Fresh-process timings of the default job and of trillion-fold compositions (issues 12 and 15).

Run:  python benchmarks/bench_default_job.py [--runs 5]

Each command runs in a new Python process (as a user would run it after install), ``--runs``
times; the table gives the median wall time and the median CPU time (user + sys of the child),
beside the same-run baseline: a process that only imports the packages the command imports. On
a shared machine the wall time is inflated by the load (printed); CPU time and the ratio to the
baseline are the numbers to compare.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CLI = "import sys; sys.argv[0] = 'dpverify'; from dpverify.cli import main; sys.exit(main())"
BASELINE = "import accounting, accounting._privacy_loss._pld, dpverify.cli, rich.table"

COMMANDS = [
    ("baseline: import only", [sys.executable, "-c", BASELINE]),
    ("`dpverify` (default job)", [sys.executable, "-c", CLI]),
]
for family, options in [
    ("discrete-laplace", ["--scale", "1", "--sensitivity", "1"]),
    ("gaussian", ["--sigma", "1", "--sensitivity", "1"]),
    ("skellam", ["--variance", "100", "--sensitivity", "1"]),
    ("discrete-gaussian", ["--sigma", "1", "--sensitivity", "1"]),
]:
    COMMANDS.append(
        (
            f"`account epsilon {family} --compose 1e12`",
            [sys.executable, "-c", CLI, "account", "epsilon", family, *options, "--delta", "1e-5", "--compose", "1000000000000", "--json"],
        )
    )


def run(argv: list[str]) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": ROOT}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; median of {args.runs} fresh processes\n")
    print("| command | wall s | CPU s | CPU / baseline CPU |")
    print("|---|---|---|---|")
    base_cpu = None
    for label, argv in COMMANDS:
        walls, cpus = zip(*(run(argv) for _ in range(args.runs)))
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        base_cpu = cpu if base_cpu is None else base_cpu
        print(f"| {label} | {wall:.2f} | {cpu:.2f} | {cpu / base_cpu:.2f} |", flush=True)
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
