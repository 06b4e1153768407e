"""Throughput of the dpverify samplers against raw ``Generator.random`` in the same run.

Run from the repository root: ``python benchmarks/bench_samplers.py [--runs 7] [--write]``.
Each sampler is timed as the median of ``--runs`` calls drawing ``size`` values (JIT compile
excluded: every kernel is called once before timing); the raw-uniform baseline is the median time
of the same Generator type filling the same number of float64 uniforms, measured in this process.
Compile cost is reported separately: a fresh interpreter with an empty numba cache (first call,
JIT) and a second fresh interpreter loading that cache (first call, cached).
``--write`` replaces this script's section of benchmarks/samplers.md.
"""

from __future__ import annotations

import argparse
import math
import sys
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from _common import compile_times, machine, median_seconds, uniform_seconds, write_section  # noqa: E402
from dpverify._executed import _samplers as S  # noqa: E402

CASES = [
    ("bernoulli(p=1/3)", lambda r, k: S.bernoulli(r, Fraction(1, 3), k), 4_000_000),
    ("bernoulli_exp(gamma=1/3)", lambda r, k: S.bernoulli_exp(r, Fraction(1, 3), k), 4_000_000),
    ("geometric(scale=10/3)", lambda r, k: S.geometric(r, Fraction(10, 3), k), 2_000_000),
    ("discrete_laplace(scale=1)", lambda r, k: S.discrete_laplace(r, 1, k), 2_000_000),
    ("discrete_laplace(scale=1000)", lambda r, k: S.discrete_laplace(r, 1000, k), 2_000_000),
    ("discrete_gaussian(sigma=0.5)", lambda r, k: S.discrete_gaussian(r, Fraction(1, 4), k), 2_000_000),
    ("discrete_gaussian(sigma=3)", lambda r, k: S.discrete_gaussian(r, 9, k), 2_000_000),
    ("discrete_gaussian(sigma=1000)", lambda r, k: S.discrete_gaussian(r, 10**6, k), 2_000_000),
    ("polya(r=2^-20, beta=e^-1/1024)", lambda r, k: S.polya(r, 2.0**-20, math.exp(-1 / 1024), k), 8_000_000),
    ("polya_difference(r=2^-20, beta=e^-1/1024)", lambda r, k: S.polya_difference(r, 2.0**-20, math.exp(-1 / 1024), k), 8_000_000),
    ("polya(r=1/2, beta=1/2)", lambda r, k: S.polya(r, 0.5, 0.5, k), 4_000_000),
    ("skellam(mu=1e-6)", lambda r, k: S.skellam(r, 1e-6, k), 4_000_000),
    ("skellam(mu=3)", lambda r, k: S.skellam(r, 3.0, k), 2_000_000),
    ("skellam(mu=1e9)", lambda r, k: S.skellam(r, 1e9, k), 2_000_000),
    ("binomial(n=20, p=0.3)", lambda r, k: S.binomial(r, 20, 0.3, k), 2_000_000),
    ("laplace(scale=1) [float baseline]", lambda r, k: S.laplace(r, 1.0, k), 4_000_000),
    ("gaussian(sigma=1) [float baseline]", lambda r, k: S.gaussian(r, 1.0, k), 4_000_000),
]

COMPILE_SNIPPET = "from dpverify import _samplers as S\nS.discrete_gaussian(np.random.default_rng(0), 9, 10)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="timed calls per case (median reported, >= 5)")
    parser.add_argument("--write", action="store_true", help="update benchmarks/samplers.md")
    args = parser.parse_args()
    if args.runs < 5:
        parser.error("--runs must be >= 5")

    rows = []
    for name, call, size in CASES:
        rng = np.random.default_rng(1)
        call(rng, 10)  # compile (or load from cache) outside the timed region
        wall, cpu = median_seconds(lambda: call(rng, size), args.runs)
        uwall, ucpu = uniform_seconds(size, args.runs)
        rows.append((name, size / wall / 1e6, size / uwall / 1e6, wall / uwall, size / cpu / 1e6, cpu / ucpu))
        print(f"{name:45s} wall {size / wall / 1e6:9.2f} M/s (ratio {wall / uwall:6.1f})  cpu {size / cpu / 1e6:9.2f} M/s (ratio {cpu / ucpu:6.1f})", file=sys.stderr)

    cold, cached = compile_times(COMPILE_SNIPPET)
    lines = [
        "## Samplers (`benchmarks/bench_samplers.py`)",
        "",
        f"Machine: {machine()}.",
        f"Command: `python benchmarks/bench_samplers.py --runs {args.runs} --write` (one core; median of {args.runs} calls; "
        "JIT compile excluded). Ratio = sampler time / time of raw `Generator.random` for as many uniforms, same run. "
        "CPU-time columns use `time.process_time` (robust to other jobs on a shared machine).",
        "",
        "| sampler | draws/s (wall) | raw uniforms/s (wall, same run) | ratio (wall) | draws/s (CPU time) | ratio (CPU time) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, rate, urate, ratio, crate, cratio in rows:
        lines.append(f"| {name} | {rate:.2f} M | {urate:.0f} M | {ratio:.1f} | {crate:.2f} M | {cratio:.1f} |")
    lines += [
        "",
        f"JIT compile, excluded above: import + first `discrete_gaussian` call in a fresh interpreter "
        f"{cold:.2f} s with an empty numba cache, {cached:.2f} s loading the cache (`cache=True`).",
    ]
    body = "\n".join(lines)
    print(body)
    if args.write:
        write_section("bench_samplers", body)


if __name__ == "__main__":
    main()
