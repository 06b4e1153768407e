"""Messages per second through SDP-DPE's per-user shuffle simulation (Li et al. eq. (6)).

Run from the repository root: ``python benchmarks/bench_shuffle.py [--runs 5] [--write]``.
For n = 2**8, 2**10, 2**12 clients and s = 43 coordinates (the support size of the synthetic
instance's first design) it times ``ShuffleBits.release(..., path="per-user")`` at the default
precision g = ceil(sqrt(n)): every client's g unary rounding bits and k fair coins per coordinate
are materialised as messages, each coordinate's n (g + k) messages are permuted uniformly, and
the analyzer counts 1-bits per coordinate. k is forced to 1 and to 51 (the calibrated value at
eps = 10, delta = 1e-6 for n = 4096; the accountant's calibration is not timed). Median of
``--runs`` calls after a warm-up call. The baseline is the time the same Generator type takes to
fill as many raw uniforms as there are messages, measured in this run; the aggregate path (data
bits plus popcounts of N fair coins) is timed beside. ``--write`` replaces this script's section
of benchmarks/samplers.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from _common import machine, median_seconds, uniform_seconds, write_section  # noqa: E402
from dpverify._bandits.linear._shuffle import ShuffleBits  # noqa: E402

S = 43


class _FixedK(ShuffleBits):
    """The protocol with k forced (the calibration's accountant calls are not what is timed)."""

    def __init__(self, k: int) -> None:
        super().__init__(10.0, 1e-6, 1.0)
        self._k = k

    def noise_bits(self, n: int, s: int) -> int:
        return self._k


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    rows = []
    for k in (1, 51):
        proto = _FixedK(k)
        for n in (2**8, 2**10, 2**12):
            rng = np.random.default_rng(n + k)
            reports = rng.uniform(-1.0, 1.0, size=(n, S))
            messages = n * S * (proto.g(n) + k)
            proto.release(reports, rng, path="per-user")  # warm-up
            wall, cpu = median_seconds(lambda: proto.release(reports, rng, path="per-user"), args.runs)
            agg_wall, _ = median_seconds(lambda: proto.release(reports, rng, path="aggregate"), args.runs)
            base_wall, base_cpu = uniform_seconds(messages, args.runs)
            rows.append((k, n, messages, wall, cpu, messages / cpu, base_wall, base_cpu, cpu / base_cpu, agg_wall))
    lines = [
        "## SDP-DPE shuffle simulation (`benchmarks/bench_shuffle.py`)",
        "",
        f"Machine: {machine()}. Median of {args.runs} calls after a warm-up; s = {S} coordinates.",
        "",
        "Wall time on a shared machine is inflated by other jobs; the rate and the ratio use CPU time (this process).",
        "",
        "| k (coins/coord.) | n clients | messages / release | per-user CPU (wall) | messages/s (CPU) | raw uniforms, same count: CPU (wall) | ratio (CPU) | aggregate path (wall) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for k, n, messages, wall, cpu, rate, base, base_cpu, ratio, agg in rows:
        lines.append(f"| {k} | {n} | {messages:,} | {cpu * 1e3:.2f} ms ({wall * 1e3:.2f} ms) | {rate:,.0f} | {base_cpu * 1e3:.3f} ms ({base * 1e3:.3f} ms) | {ratio:.1f}x | {agg * 1e3:.3f} ms |")
    body = "\n".join(lines)
    print(body)
    if args.write:
        write_section("bench_shuffle", body)


if __name__ == "__main__":
    main()
