"""Time exact, certified RDP curves, their float approximations, and the CLI jobs that use them.

Three tables (one core; pin it with ``taskset -c 0``):

1. *Certified curves*: build the mechanism's curve and evaluate it at 64 log-spaced orders alpha
   in [1.01, 1e4] at the default working precision (96 bits), every value a certified upper
   bound. Each run starts cold (the Skellam pmf tables and float laws, and the
   discrete-Gaussian-sum residue tables, are cleared).
2. *Float approximations*: the search grid of :func:`accounting.rdp_to_epsilon` (2049 orders,
   alpha - 1 log-spaced in [1e-4, 1e6 - 1]) through ``curve.approx``, cold, and the largest
   relative difference from the certified value at 8 orders in [1.001, 1e5].
3. ``--cli``: the end-to-end jobs ``dpverify account returning`` (the default job:
   Dist-RDP-SE, eps = 0.5, s = 10, n = 1024, B = 1, 10, 100, delta = 1e-6) and
   ``dpverify account epsilon skellam --variance 100 --sensitivity 1 --delta 1e-5``, each in a
   fresh interpreter (imports included), wall and CPU (user + sys) seconds.

Medians of ``--repeat`` runs; CPU seconds are reported beside wall seconds because the wall
clock of a shared machine depends on its load.

    PYTHONPATH=. taskset -c 0 python benchmarks/bench_rdp_curves.py --repeat 7 --cli
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

from accounting._mechanisms import DiscreteGaussian, DiscreteGaussianSum, DiscreteLaplace, Skellam
from accounting._mechanisms import _discrete_gaussian_sum, _skellam


def alphas(count: int = 64, lo: float = 1.01, hi: float = 1e4) -> list[float]:
    ratio = (hi / lo) ** (1 / (count - 1))
    return [lo * ratio**i for i in range(count)]


SEARCH_GRID = 1 + np.exp(np.linspace(np.log(1.0001 - 1), np.log(1e6 - 1), 2049))
CHECK_ALPHAS = [1.001, 1.5, 2.0, 7.3, 64.0, 1000.5, 1e4, 1e5]

CASES = {
    "Skellam(mu=100, Delta=1)": lambda: Skellam(100),
    "Skellam(mu=1e4, Delta=1)": lambda: Skellam(10_000),
    "Skellam(mu=102400, Delta=160) (Dist-RDP-SE batch)": lambda: Skellam(102400, 160),
    "DiscreteGaussian(sigma=1, Delta=1)": lambda: DiscreteGaussian(1),
    "DiscreteGaussian(sigma=10, Delta=3)": lambda: DiscreteGaussian(10, 3),
    "DiscreteLaplace(b=10, Delta=3)": lambda: DiscreteLaplace(10, 3),
    "DiscreteGaussianSum(n=64, sigma=10, Delta=1)": lambda: DiscreteGaussianSum(64, 10),
}

CLI_JOBS = {
    "dpverify account returning": ["account", "returning"],
    "dpverify account epsilon skellam --variance 100 --sensitivity 1 --delta 1e-5": [
        "account", "epsilon", "skellam", "--variance", "100", "--sensitivity", "1", "--delta", "1e-5",
    ],
}


def clear_caches() -> None:
    for module, names in ((_skellam, ("_TABLES", "_SEGMENTS", "_FLOAT_LAWS")), (_discrete_gaussian_sum, ("_TABLES",))):
        for name in names:
            getattr(module, name, {}).clear()


def timed(fn) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def certified_once(factory) -> tuple[float, float]:
    clear_caches()
    return timed(lambda: factory().rdp().evaluate(alphas()))


def approx_once(factory) -> tuple[float, float] | None:
    clear_caches()
    curve = factory().rdp()
    if curve.approx(np.array([2.0])) is None:
        return None
    clear_caches()
    return timed(lambda: curve.approx(SEARCH_GRID))


def approx_error(factory) -> float:
    curve = factory().rdp()
    values = curve.approx(np.array(CHECK_ALPHAS))
    return max(abs(v - curve(a)) / curve(a) for a, v in zip(CHECK_ALPHAS, values))


def cli_once(args: list[str]) -> tuple[float, float]:
    exe = shutil.which("dpverify")
    command = [exe, *args] if exe else [sys.executable, "-m", "dpverify.cli", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=dict(os.environ, COLUMNS="120"))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def summary(runs: list[tuple[float, float]]) -> str:
    wall = [w for w, _ in runs]
    cpu = [c for _, c in runs]
    return f"{statistics.median(wall):.3f} | {statistics.median(cpu):.3f} | {min(cpu):.3f} | {max(cpu):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cli", action="store_true", help="also time the end-to-end CLI jobs")
    args = parser.parse_args()
    load = "load average %.2f %.2f %.2f" % os.getloadavg()
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, {load}")
    print("\n## Certified curves: 64 orders in [1.01, 1e4]\n")
    print("| curve | median wall s | median CPU s | min CPU s | max CPU s |")
    print("|---|---|---|---|---|")
    for name, factory in CASES.items():
        runs = [certified_once(factory) for _ in range(args.repeat)]
        print(f"| {name} | {summary(runs)} |", flush=True)
    print("\n## Float approximations: the search grid, 2049 orders in [1.0001, 1e6]\n")
    print("| curve | median wall s | median CPU s | min CPU s | max CPU s | max rel. error vs certified |")
    print("|---|---|---|---|---|---|")
    for name, factory in CASES.items():
        runs = [approx_once(factory) for _ in range(args.repeat)]
        if runs[0] is None:
            print(f"| {name} | n/a | n/a | n/a | n/a | n/a |", flush=True)
            continue
        print(f"| {name} | {summary(runs)} | {approx_error(factory):.1e} |", flush=True)
    if args.cli:
        print("\n## End-to-end jobs (fresh interpreter each run, imports included)\n")
        print("| command | median wall s | median CPU s | min CPU s | max CPU s |")
        print("|---|---|---|---|---|")
        for name, cli_args in CLI_JOBS.items():
            runs = [cli_once(cli_args) for _ in range(args.repeat)]
            print(f"| `{name}` | {summary(runs)} |", flush=True)


if __name__ == "__main__":
    main()
