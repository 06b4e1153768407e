"""Time exact, certified RDP curves at 64 log-spaced orders alpha in [1.01, 1e4] (one core).

Each run starts cold (the pmf/residue caches are cleared), builds the mechanism's curve and
evaluates it at the 64 orders at the default working precision (96 bits). Reports the median of
``--repeat`` runs.

    python benchmarks/bench_rdp_curves.py --repeat 7
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

from accounting._mechanisms import DiscreteGaussian, DiscreteGaussianSum, DiscreteLaplace, Skellam
from accounting._mechanisms import _discrete_gaussian_sum, _skellam


def alphas(count: int = 64, lo: float = 1.01, hi: float = 1e4) -> list[float]:
    ratio = (hi / lo) ** (1 / (count - 1))
    return [lo * ratio**i for i in range(count)]


CASES = {
    "Skellam(mu=100, Delta=1)": lambda: Skellam(100),
    "Skellam(mu=1e4, Delta=1)": lambda: Skellam(10_000),
    "DiscreteGaussian(sigma=1, Delta=1)": lambda: DiscreteGaussian(1),
    "DiscreteGaussian(sigma=10, Delta=3)": lambda: DiscreteGaussian(10, 3),
    "DiscreteLaplace(b=10, Delta=3)": lambda: DiscreteLaplace(10, 3),
    "DiscreteGaussianSum(n=64, sigma=10, Delta=1)": lambda: DiscreteGaussianSum(64, 10),
}


def run_once(factory) -> float:
    _skellam._TABLES.clear()
    _discrete_gaussian_sum._TABLES.clear()
    start = time.perf_counter()
    curve = factory().rdp()
    curve.evaluate(alphas())
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, 64 alphas in [1.01, 1e4]")
    print("| curve | median s | min s | max s |")
    print("|---|---|---|---|")
    for name, factory in CASES.items():
        times = [run_once(factory) for _ in range(args.repeat)]
        print(f"| {name} | {statistics.median(times):.3f} | {min(times):.3f} | {max(times):.3f} |", flush=True)


if __name__ == "__main__":
    main()
