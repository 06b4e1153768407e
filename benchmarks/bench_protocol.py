"""Users per second through the per-user Dist-DP-SE protocol (ICLR 2023 Algorithm 1, Theorem 1).

Run from the repository root: ``python benchmarks/bench_protocol.py [--runs 5] [--write]``.
For n = 2**10 ... 2**22 users (rewards uniform in [0, 1], eps = 1, g = ceil(eps sqrt n),
tau = ceil((g/eps) log(2/p)), p = 0.1, m = n g + 2 tau + 1) it times ``server_views``: randomised
rounding, Polya(1/n, e^{-eps/g}) differences and the modular sum, every user drawn, about 2**23
users per timed call, median of ``--runs`` calls after a warm-up call (JIT excluded). The baseline
is the time the same Generator type takes to produce as many raw uniforms, measured in this run.
Also reported at n = 2**16: the Skellam and discrete-Gaussian per-user paths and the aggregate
path. ``--write`` replaces this script's section of benchmarks/samplers.md.
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
from dpverify._executed import _protocol_kernels as P  # noqa: E402

TARGET_USERS = 2**23
COMPILE_SNIPPET = (
    "from dpverify import _protocol_kernels as P\n"
    "P.server_views(np.random.default_rng(0), np.full(8, 0.5), 3, 43, 2, 'polya', eps=1.0)"
)


def params(n: int, eps: float, s: float = 1.0, p: float = 0.1):
    g = math.ceil(s * eps * math.sqrt(n))
    tau = math.ceil(g / eps * math.log(2 / p))
    return g, tau, n * g + 2 * tau + 1


def time_views(n: int, noise: str, runs: int, eps=1.0, s: float = 1.0, aggregate: bool = False):
    rng = np.random.default_rng(n)
    x = rng.random(n)
    g, tau, m = params(n, float(eps), s)
    reps = max(1, TARGET_USERS // n)
    if aggregate:
        def call():
            return P.aggregate_views(rng, x, g, m, reps, "discrete_laplace", scale=Fraction(g) / Fraction(eps))
    else:
        def call():
            return P.server_views(rng, x, g, m, reps, noise, eps=eps)
    call()  # warm-up: compile or load from cache
    wall, cpu = median_seconds(call, runs)
    users = n * reps
    uwall, ucpu = uniform_seconds(users, runs)
    return users / wall / 1e6, users / uwall / 1e6, wall / uwall, users / cpu / 1e6, cpu / ucpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="timed calls per case (median reported, >= 5)")
    parser.add_argument("--write", action="store_true", help="update benchmarks/samplers.md")
    args = parser.parse_args()
    if args.runs < 5:
        parser.error("--runs must be >= 5")

    rows = []
    for log_n in range(10, 23, 2):
        n = 2**log_n
        rows.append((f"Dist-DP-SE per user (Polya), n = 2^{log_n}", *time_views(n, "polya", args.runs)))
        print(rows[-1], file=sys.stderr)
    n = 2**16
    extra = [
        ("Dist-RDP-SE per user (Skellam, s = 10), n = 2^16", dict(noise="skellam", s=10.0)),
        ("Dist-CDP-SE per user (discrete Gaussian, s = 1), n = 2^16", dict(noise="discrete_gaussian", eps=Fraction(1))),
        ("Dist-DP-SE aggregate path (one Lap_Z(g/eps) per run), n = 2^16", dict(noise="polya", aggregate=True)),
    ]
    for label, kw in extra:
        rows.append((label, *time_views(n, runs=args.runs, **kw)))
        print(rows[-1], file=sys.stderr)

    cold, cached = compile_times(COMPILE_SNIPPET)
    lines = [
        "## Per-user protocol (`benchmarks/bench_protocol.py`)",
        "",
        f"Machine: {machine()}.",
        f"Command: `python benchmarks/bench_protocol.py --runs {args.runs} --write` (one core; median of "
        f"{args.runs} calls of ~2^23 users each). Users/s counts users through R (rounding + noise) and S "
        "(modular sum); ratio = protocol time / time of raw `Generator.random` for as many uniforms as users, "
        "same run (target: <= 5). CPU-time columns use `time.process_time` (robust to other jobs on a shared machine).",
        "",
        "| protocol path | users/s (wall) | raw uniforms/s (wall, same run) | ratio (wall) | users/s (CPU time) | ratio (CPU time) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, rate, urate, ratio, crate, cratio in rows:
        lines.append(f"| {label} | {rate:.1f} M | {urate:.0f} M | {ratio:.2f} | {crate:.1f} M | {cratio:.2f} |")
    lines += [
        "",
        f"JIT compile, excluded above: import + first `server_views` call in a fresh interpreter {cold:.2f} s "
        f"with an empty numba cache, {cached:.2f} s loading the cache.",
    ]
    body = "\n".join(lines)
    print(body)
    if args.write:
        write_section("bench_protocol", body)


if __name__ == "__main__":
    main()
