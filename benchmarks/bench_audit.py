"""Speed and tightness of the auditor (run as a script; numbers go to benchmarks/audit.md).

- Speed: a 10^7-sample-per-input audit of a discrete 1-D mechanism (Lap_Z(1), both directions)
  on one core (``executor="serial"``), warm.
- Tightness: the epsilon lower bound as a fraction of the true epsilon at 10^5 .. 10^7 samples
  per input for randomized response (eps = 1), Lap_Z(1) (eps = 1) and the distributed Polya
  protocol of Theorem 1 (Dist-DP-SE, eps = 1, n = 16 users, the server's view of SecAgg; true
  eps = 1 as the summed noise is exactly Lap_Z(g/eps) with sensitivity g), when available.

    python benchmarks/bench_audit.py [--max 10000000]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from accounting._core._guarantees import PureDP  # noqa: E402
from dpverify._audit import audit, replace_one_pairs  # noqa: E402


def rr(bit, rng, size):
    keep = math.e / (1 + math.e)
    return np.where(rng.random(size) < keep, bit, 1 - bit)


def dlap(x, rng, size):
    p = 1 - math.exp(-1.0)
    return x + rng.geometric(p, size) - rng.geometric(p, size)


def mechanisms():
    out = [("randomized response (eps = 1)", rr, (0, 1), PureDP(1.0))]
    try:
        import accounting as acc

        claim = acc.DiscreteLaplace(scale=1, sensitivity=1).pure()
    except Exception:  # the accounting mechanism is optional here
        claim = PureDP(1.0)
    out.append(("discrete Laplace Lap_Z(1) (eps = 1)", dlap, (0, 1), claim))
    try:
        from dpverify._executed._protocols import dist_dp_protocol

        proto = dist_dp_protocol(1.0, 0.1)
        n = 16
        claim = proto.mechanism(n).pure()
        out.append((f"Dist-DP-SE Polya protocol, n = {n} users (eps = 1)", proto.server_views,
                    replace_one_pairs(np.zeros(n), [1.0]), claim))
    except ImportError:
        pass
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max", type=int, default=10**7)
    args = parser.parse_args()
    # speed (warm: one small audit first)
    audit(dlap, (0, 1), PureDP(1.0), samples=10_000, executor="serial")
    t = time.perf_counter()
    rep = audit(dlap, (0, 1), PureDP(1.0), samples=10**7, executor="serial", seed=1)
    speed = time.perf_counter() - t
    print(f"speed: 10^7 samples per input, Lap_Z(1), both directions, one core: {speed:.2f} s")
    t = time.perf_counter()
    audit(dlap, (0, 1), PureDP(1.0), samples=10**7, executor="serial", seed=1, estimators=["epsilon", "delta", "renyi"])
    print(f"speed: same with epsilon + delta + renyi: {time.perf_counter() - t:.2f} s")
    # the report's bound is the larger of the two directions' (with the focused split the direction
    # the selection sample prefers gets 0.8 of alpha, the other 0.2: its bound is the smaller)
    print("| mechanism | samples per input | lower bound (the report's: max of 2 directions) | / true eps | other direction | seconds |")
    print("|---|---|---|---|---|---|")
    sizes = [n for n in (10**5, 10**6, 10**7) if n <= args.max]
    for label, mech, pairs, claim in mechanisms():
        for n in sizes:
            t = time.perf_counter()
            rep = audit(mech, pairs, claim, samples=n, executor="serial", seed=2)
            high = max(r.lower_bound for r in rep)
            low = min(r.lower_bound for r in rep)
            print(f"| {label} | {n:.0e} | {high:.4f} | {high / claim.epsilon:.3f} | {low:.4f} | {time.perf_counter() - t:.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()
