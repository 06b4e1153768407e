"""A 1,000-bit output that leaks one user's bit, audited at default settings (issue #11).

1,000 fair bits; the bit of the differing user is revealed with probability 0.85 (eps =
log(0.925 / 0.075) = 2.51) against the claim PureDP(1.0). Prints, for user 0 and user 500, the
verdict, wall seconds, the lower bound, the draws per input and the witness event.

    nice python benchmarks/bench_wide_leak.py [--samples 20000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from accounting._core._guarantees import PureDP  # noqa: E402
from dpverify._audit import audit  # noqa: E402


def leaky_bits(user: int):
    def mechanism(d, rng, size):
        bits = rng.integers(0, 2, (size, 1000), dtype=np.int8)
        reveal = rng.random(size) < 0.85
        bits[reveal, user] = d
        return bits

    return mechanism


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=20_000)
    args = ap.parse_args()
    for user in (0, 500):
        t0 = time.perf_counter()
        rep = audit(leaky_bits(user), (0, 1), PureDP(1.0), samples=args.samples, seed=11)
        worst = rep.worst()
        print(f"user {user}: {rep.verdict} in {time.perf_counter() - t0:.1f} s, lower bound {worst.lower_bound:.3f}, "
              f"{worst.samples} draws per input, via {worst.event[:100]}", flush=True)


if __name__ == "__main__":
    main()
